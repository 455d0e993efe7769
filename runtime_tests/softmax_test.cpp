// The softmax rule at run time: the static cases again, every error as a thrown
// spmd_error, and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/rules/softmax.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <span>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace softmax_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::softmax;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::partial_on_mesh partial_spec{mesh};

TEST_CASE("softmax forward") {
  const auto keep = softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})});
  CHECK(keep.inputs[0].dims_mapping() == dims_mapping{0, 1, -1});
  CHECK(keep.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});
  const auto last = softmax::infer_forward({spec({4, 16, 32}, {0, -1, 1})});
  CHECK(last.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(last.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  const auto mid = softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = 1});
  CHECK(mid.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = -2}) == mid);
  CHECK(softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = -3}).outputs[0].dims_mapping() ==
        dims_mapping{-1, 1, -1});
  CHECK(softmax::infer_forward({spec({}, {})}).outputs[0].dims_mapping() == dims_mapping{});
  CHECK(softmax::infer_forward({spec({}, {})}, {.axis = 0}).outputs[0].dims_mapping() == dims_mapping{});

  const auto partial = softmax::infer_forward({partial_spec({4, 32}, {0, -1}, 1)});
  CHECK_FALSE(partial.inputs[0].is_partial());
  CHECK_FALSE(partial.outputs[0].is_partial());
  CHECK(partial.outputs[0].dims_mapping() == dims_mapping{0, -1});

  check_error([] { (void)softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = 3}); },
              error_kind::invalid_argument, "softmax: axis 3 is outside [-3, 3) for x of rank 3");
  check_error([] { (void)softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = -4}); },
              error_kind::invalid_argument, "axis -4 is outside [-3, 3) for x of rank 3");
  check_error([] { (void)softmax::infer_forward({spec({}, {})}, {.axis = 1}); }, error_kind::invalid_argument,
              "axis 1 is outside [-1, 1) for x of rank 0");
  check_error([] { (void)softmax::infer_forward({spec({4}, {-1}), spec({4}, {-1})}); }, error_kind::invalid_argument,
              "expects 1 input, got 2");
}

TEST_CASE("softmax backward") {
  const auto x = spec({4, 16, 32}, {-1, -1, -1});
  const auto back = softmax::infer_backward({spec({4, 16, 32}, {1, -1, 0})}, {spec({4, 16, 32}, {0, 1, -1})},
                                            {.axis = 1});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  const auto back_last = softmax::infer_backward({x}, {spec({4, 16, 32}, {-1, 0, 1})});
  CHECK(back_last.inputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
  const auto back_partial = softmax::infer_backward({x}, {partial_spec({4, 16, 32}, {0, -1, -1}, 1)});
  CHECK(back_partial.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK_FALSE(back_partial.inputs[0].is_partial());
  CHECK_FALSE(back_partial.outputs[0].is_partial());

  check_error([&] { (void)softmax::infer_backward({x}, {spec({4, 16}, {-1, -1})}); }, error_kind::invalid_argument,
              "the output has rank 2, but x has rank 3");
  check_error([&] { (void)softmax::infer_backward({x}, {spec({4, 16, 30}, {-1, -1, -1})}); },
              error_kind::invalid_argument, "output dim 2 has size 30, but x has size 32");
  check_error([&] { (void)softmax::infer_backward({x}, {x}, {.axis = 5}); }, error_kind::invalid_argument,
              "axis 5 is outside [-3, 3) for x of rank 3");
  check_error([&] { (void)softmax::infer_backward({x}, {}); }, error_kind::invalid_argument,
              "expects 1 output, got 0");
}

TEST_CASE("softmax forward -> backward round trip") {
  ctspmd_test::rng r(3);
  int checked = 0;
  constexpr int cases = 400;
  for (int n = 0; n < cases; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = r.uniform(1, 4);
    const rules::softmax_attributes attrs{.axis = r.uniform(-rank, rank - 1)};
    const tensor_shape shape(static_cast<std::size_t>(rank), 8);
    const std::vector<dist_tensor_spec> in{
        {shape, {m, ctspmd_test::random_dims_mapping(r, static_cast<std::size_t>(rank), m.ndim())}}};
    const std::vector<tensor_shape> out{shape};
    if (!ctspmd_test::check_roundtrip<softmax>(in, out, attrs)) continue;
    ++checked;
    const auto fwd = softmax::infer_forward(in, attrs);
    CHECK(softmax::infer_backward(in, ctspmd_test::with_attrs(out, fwd.outputs), attrs) == fwd);
    const auto axis = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis);
    CHECK(fwd.outputs[0].dims_mapping()[axis] == -1);  // the softmax axis is never sharded
  }
  MESSAGE("softmax round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked == cases);  // every valid axis is accepted
}

}  // namespace softmax_test
