// The elementwise rule at run time: the static cases again, every error as a thrown
// spmd_error, and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/rules/elementwise.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <span>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace elementwise_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::elementwise;

const process_mesh mesh({2, 3});
const process_mesh mesh3({2, 2, 2});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::on_mesh spec3{mesh3};
const ctspmd_test::partial_on_mesh partial_spec{mesh};

TEST_CASE("elementwise forward: broadcasting") {
  const auto same = elementwise::infer_forward({spec({4, 8}, {0, -1}), spec({4, 8}, {-1, 1})});
  CHECK(same.inputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(same.inputs[1].dims_mapping() == dims_mapping{0, 1});
  CHECK(same.outputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK_FALSE(same.outputs[0].is_partial());

  const auto r2r4 = elementwise::infer_forward({spec({4, 8}, {1, -1}), spec({2, 3, 4, 8}, {0, -1, -1, -1})});
  CHECK(r2r4.inputs[0].dims_mapping() == dims_mapping{1, -1});
  CHECK(r2r4.inputs[1].dims_mapping() == dims_mapping{0, -1, 1, -1});
  CHECK(r2r4.outputs[0].dims_mapping() == dims_mapping{0, -1, 1, -1});

  const auto ones = elementwise::infer_forward({spec({4, 1}, {0, 1}), spec({1, 8}, {-1, -1})});
  CHECK(ones.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(ones.outputs[0].dims_mapping() == dims_mapping{0, -1});
  const auto ones2 = elementwise::infer_forward({spec({4, 1}, {0, -1}), spec({1, 8}, {-1, 1})});
  CHECK(ones2.outputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(ones2.inputs[1].dims_mapping() == dims_mapping{-1, 1});

  const auto all_broadcast = elementwise::infer_forward({spec({8}, {0}), spec({1, 8}, {1, -1})});
  CHECK(all_broadcast.inputs[1].dims_mapping() == dims_mapping{-1, 0});
  CHECK(all_broadcast.outputs[0].dims_mapping() == dims_mapping{-1, 0});

  const auto three = elementwise::infer_forward(
      {spec3({2, 4, 8}, {0, -1, -1}), spec3({4, 8}, {-1, 1}), spec3({1, 4, 1}, {1, 2, -1})});
  CHECK(three.inputs[0].dims_mapping() == dims_mapping{0, 2, 1});
  CHECK(three.inputs[1].dims_mapping() == dims_mapping{2, 1});
  CHECK(three.inputs[2].dims_mapping() == dims_mapping{-1, 2, -1});
  CHECK(three.outputs[0].dims_mapping() == dims_mapping{0, 2, 1});

  // The typed API over a span gives the same answer as over a braced list.
  const std::vector<dist_tensor_spec> inputs{spec({4, 8}, {0, -1}), spec({4, 8}, {-1, 1})};
  CHECK(elementwise::infer_forward(std::span<const dist_tensor_spec>(inputs)) == same);
}

TEST_CASE("elementwise forward: conflicts, unary, partial") {
  const auto x4 = spec({2, 3, 4, 8}, {0, -1, -1, -1});
  const auto y2 = spec({4, 8}, {0, -1});
  CHECK(elementwise::infer_forward({x4, y2}).outputs[0].dims_mapping() == dims_mapping{0, -1, -1, -1});
  CHECK(elementwise::infer_forward({x4, y2}).inputs[1].dims_mapping() == dims_mapping{-1, -1});
  CHECK(elementwise::infer_forward({y2, x4}).outputs[0].dims_mapping() == dims_mapping{-1, -1, 0, -1});
  CHECK(elementwise::infer_forward({spec({4, 8}, {0, -1}), spec({4, 8}, {-1, 0})}).inputs[1].dims_mapping() ==
        dims_mapping{0, -1});

  const auto unary = elementwise::infer_forward({spec({4, 1, 8}, {0, 1, -1})});
  CHECK(unary.inputs[0].dims_mapping() == dims_mapping{0, 1, -1});
  CHECK(unary.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});

  const auto partial = elementwise::infer_forward({partial_spec({4, 8}, {0, -1}, 1), spec({4, 8}, {-1, -1})});
  CHECK_FALSE(partial.inputs[0].is_partial());
  CHECK_FALSE(partial.outputs[0].is_partial());
  CHECK(partial.outputs[0].dims_mapping() == dims_mapping{0, -1});
}

TEST_CASE("elementwise forward errors") {
  check_error([] { (void)elementwise::infer_forward({spec({4, 8}, {0, -1}), spec({4, 8}, {1, -1})}); },
              error_kind::unimplemented, "elementwise: tensor axis 'a' is sharded by two different mesh dims, 1 and 0");
  check_error([] { (void)elementwise::infer_forward(std::span<const dist_tensor_spec>{}); },
              error_kind::invalid_argument, "elementwise: expects at least 1 input, got 0");
  check_error([] { (void)elementwise::infer_forward({spec({4, 8}, {-1, -1}), spec({4, 6}, {-1, -1})}); },
              error_kind::invalid_argument, "input 1 cannot be broadcast: size 6 at broadcast dim 1 against size 8");
  check_error([] { (void)elementwise::infer_forward({spec({4}, {-1}), dist_tensor_spec({4}, process_mesh({6}))}); },
              error_kind::invalid_argument, "input 1 is on another process mesh");
}

TEST_CASE("elementwise backward") {
  const auto back = elementwise::infer_backward({spec({2, 3, 4, 8}, dims_mapping(4, -1)), spec({4, 8}, {1, 0})},
                                                {spec({2, 3, 4, 8}, {0, -1, -1, 1})});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1, -1, 1});
  CHECK(back.inputs[1].dims_mapping() == dims_mapping{-1, 1});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{0, -1, -1, 1});

  const auto back_all = elementwise::infer_backward({spec({8}, {-1}), spec({1, 8}, {-1, -1})}, {spec({1, 8}, {0, 1})});
  CHECK(back_all.inputs[0].dims_mapping() == dims_mapping{1});
  CHECK(back_all.inputs[1].dims_mapping() == dims_mapping{-1, 1});
  CHECK(back_all.outputs[0].dims_mapping() == dims_mapping{-1, 1});

  CHECK(elementwise::infer_backward({spec({4, 1}, {-1, -1})}, {spec({4, 1}, {1, 0})}).inputs[0].dims_mapping() ==
        dims_mapping{1, 0});

  const auto back_partial =
      elementwise::infer_backward({spec({4, 8}, {-1, -1}), spec({8}, {-1})}, {partial_spec({4, 8}, {-1, 0}, 1)});
  CHECK(back_partial.inputs[1].dims_mapping() == dims_mapping{0});
  CHECK_FALSE(back_partial.inputs[0].is_partial());
  CHECK_FALSE(back_partial.outputs[0].is_partial());

  check_error([] { (void)elementwise::infer_backward({spec({4, 8}, {-1, -1})}, {spec({4}, {-1})}); },
              error_kind::invalid_argument, "the output has rank 1, but the inputs broadcast to rank 2");
  check_error(
      [] {
        (void)elementwise::infer_backward({spec({4, 8}, {-1, -1}), spec({1, 8}, {-1, -1})}, {spec({4, 6}, {-1, -1})});
      },
      error_kind::invalid_argument, "the output has size 6 at dim 1, but the inputs broadcast to size 8");
  check_error([] { (void)elementwise::infer_backward({spec({4, 8}, {-1, -1})}, {}); }, error_kind::invalid_argument,
              "expects 1 output, got 0");
  check_error(
      [] {
        (void)elementwise::infer_backward(std::span<const dist_tensor_spec>{}, std::span<const dist_tensor_spec>{});
      },
      error_kind::invalid_argument, "expects at least 1 input, got 0");
}

TEST_CASE("elementwise forward -> backward round trip") {
  ctspmd_test::rng r(11);
  int checked = 0;
  constexpr int cases = 600;
  for (int n = 0; n < cases; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = static_cast<std::size_t>(r.uniform(1, 4));
    tensor_shape full;
    for (std::size_t d = 0; d < rank; ++d) full.push_back(2 * r.uniform(2, 4));
    const auto count = static_cast<std::size_t>(r.uniform(1, 3));
    std::vector<dist_tensor_spec> in;
    tensor_shape out_shape(rank, 1);
    for (std::size_t i = 0; i < count; ++i) {
      const auto x_rank = i == 0 ? rank : static_cast<std::size_t>(r.uniform(0, static_cast<std::int64_t>(rank)));
      tensor_shape shape;
      for (std::size_t d = rank - x_rank; d < rank; ++d) shape.push_back(r.uniform(0, 3) == 0 ? 1 : full[d]);
      for (std::size_t d = 0; d < x_rank; ++d)
        if (shape[d] != 1) out_shape[rank - x_rank + d] = shape[d];
      tensor_dist_attr a(m, ctspmd_test::random_dims_mapping(r, x_rank, m.ndim()));
      // Now and then a partial input, on a mesh dim its mapping leaves free.
      const auto p = r.uniform(0, 3 * m.ndim());
      if (p < m.ndim()) {
        bool used = false;
        for (auto d : a.dims_mapping()) used = used || d == p;
        if (!used) a.set_partial_status({p});
      }
      in.emplace_back(shape, a);
    }
    const std::vector<tensor_shape> out{out_shape};
    if (!ctspmd_test::check_roundtrip<elementwise>(in, out)) continue;
    ++checked;
    // Stronger than the shared property: backward of forward's output gives forward's answer
    // (under each semantics whose forward accepts the inputs: fluid may refuse a conflict).
    for (const auto s : {semantics::fluid, semantics::phi}) {
      const auto fwd = elementwise::try_infer_forward(in, {}, s);
      if (fwd) CHECK(elementwise::infer_backward(in, ctspmd_test::with_attrs(out, fwd->outputs), {}, s) == *fwd);
    }
  }
  MESSAGE("elementwise round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked > 300);
}

}  // namespace elementwise_test
