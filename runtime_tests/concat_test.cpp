// The concat rule at run time: the static cases again, every error as a thrown spmd_error, and
// the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/rules/concat.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <span>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace concat_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::concat;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::partial_on_mesh partial_spec{mesh};

TEST_CASE("concat forward") {
  const auto two = concat::infer_forward({spec({4, 6}, {0, -1}), spec({4, 2}, {-1, 1})}, {.axis = 1});
  REQUIRE(two.inputs.size() == 2);
  REQUIRE(two.outputs.size() == 1);
  CHECK(two.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(two.inputs[1].dims_mapping() == dims_mapping{0, -1});
  CHECK(two.outputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK_FALSE(two.outputs[0].is_partial());

  const auto on_axis = concat::infer_forward({spec({4, 6}, {-1, 0}), spec({4, 6}, {-1, 0})}, {.axis = -1});
  CHECK(on_axis.inputs[1].dims_mapping() == dims_mapping{-1, -1});
  CHECK(on_axis.outputs[0].dims_mapping() == dims_mapping{-1, -1});

  const auto three =
      concat::infer_forward({spec({2, 4, 8}, {-1, 0, -1}), spec({3, 4, 8}, {-1, -1, 1}), spec({1, 4, 8}, {0, -1, -1})});
  REQUIRE(three.inputs.size() == 3);
  CHECK(three.inputs[2].dims_mapping() == dims_mapping{-1, 0, 1});
  CHECK(three.outputs[0].dims_mapping() == dims_mapping{-1, 0, 1});

  CHECK(concat::infer_forward({spec({4, 6}, {1, 0})}).outputs[0].dims_mapping() == dims_mapping{-1, 0});
  CHECK(concat::infer_forward({spec({-1, 6}, {0, -1}), spec({4, 6}, {-1, -1})}, {.axis = 1}).outputs.size() == 1);

  // Conflicts: the first claimant keeps a mesh dim.
  const auto a_first = concat::infer_forward({spec({4, 6, 8}, {0, -1, -1}), spec({4, 6, 8}, {-1, 0, -1})}, {.axis = 2});
  CHECK(a_first.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(a_first.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  const auto b_first = concat::infer_forward({spec({4, 6, 8}, {-1, 0, -1}), spec({4, 6, 8}, {0, -1, -1})}, {.axis = 2});
  CHECK(b_first.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});

  // The typed API over a span gives the same answer as over a braced list.
  const std::vector<dist_tensor_spec> inputs{spec({4, 6}, {0, -1}), spec({4, 2}, {-1, 1})};
  CHECK(concat::infer_forward(std::span<const dist_tensor_spec>(inputs), {.axis = 1}) == two);
}

TEST_CASE("concat forward with partial inputs") {
  const auto all_partial =
      concat::infer_forward({partial_spec({4, 6}, {-1, 1}, {0}), partial_spec({4, 2}, {1, -1}, {0})}, {.axis = 1});
  CHECK(all_partial.inputs[0].dims_mapping() == dims_mapping{1, -1});
  CHECK(all_partial.inputs[0].partial_dims() == mesh_dims{0});
  CHECK(all_partial.outputs[0].partial_dims() == mesh_dims{0});
  CHECK(all_partial.outputs[0].partial_reduce_type(0) == reduce_type::sum);

  const auto all_max = concat::infer_forward(
      {partial_spec({4, 6}, {-1, -1}, {0}, reduce_type::max), partial_spec({4, 6}, {-1, -1}, {0}, reduce_type::max)});
  CHECK(all_max.outputs[0].partial_reduce_type(0) == reduce_type::max);

  const auto common =
      concat::infer_forward({partial_spec({4, 6}, {-1, -1}, {0, 1}), partial_spec({4, 6}, {-1, -1}, {1})}, {.axis = 1});
  CHECK(common.inputs[0].partial_dims() == mesh_dims{1});
  CHECK(common.outputs[0].partial_dims() == mesh_dims{1});

  const auto mixed = concat::infer_forward(
      {partial_spec({4, 6}, {-1, -1}, {0}, reduce_type::sum), partial_spec({4, 6}, {-1, -1}, {0}, reduce_type::max)});
  CHECK_FALSE(mixed.inputs[0].is_partial());
  CHECK_FALSE(mixed.inputs[1].is_partial());
  CHECK_FALSE(mixed.outputs[0].is_partial());

  const auto one_partial =
      concat::infer_forward({partial_spec({4, 6}, {-1, -1}, {0}), spec({4, 6}, {0, -1})}, {.axis = 1});
  CHECK_FALSE(one_partial.inputs[0].is_partial());
  CHECK(one_partial.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(one_partial.outputs[0].dims_mapping() == dims_mapping{0, -1});
}

TEST_CASE("concat forward errors") {
  const auto inv = error_kind::invalid_argument;
  check_error(
      [] {
        (void)concat::infer_forward({spec({4, 6}, {0, -1}), spec({4, 6}, {1, -1})}, {.axis = 1});
      },
      error_kind::unimplemented, "concat: tensor axis 'a' is sharded by two different mesh dims, 1 and 0");
  check_error([] { (void)concat::infer_forward(std::initializer_list<dist_tensor_spec>{}); }, inv,
              "concat: expects at least 1 input, got 0");
  check_error(
      [] {
        (void)concat::infer_forward({spec({4, 6}, {-1, -1}), spec({4, 6, 1}, {-1, -1, -1})});
      },
      inv, "input 1 has rank 3, but input 0 has rank 2");
  check_error(
      [] {
        (void)concat::infer_forward({spec({4, 6}, {-1, -1})}, {.axis = 2});
      },
      inv, "axis 2 is out of range for inputs of rank 2");
  check_error(
      [] {
        (void)concat::infer_forward({spec({4, 6}, {-1, -1})}, {.axis = -3});
      },
      inv, "axis -3 is out of range for inputs of rank 2");
  check_error([] { (void)concat::infer_forward({spec({}, {})}); }, inv, "axis 0 is out of range for inputs of rank 0");
  check_error(
      [] {
        (void)concat::infer_forward({spec({4, 6}, {-1, -1}), spec({4, 2}, {-1, -1}), spec({5, 2}, {-1, -1})},
                                    {.axis = 1});
      },
      inv, "input 2 has size 5 at dim 0, but input 0 has size 4 (only the concat axis may differ)");
  check_error(
      [] {
        (void)concat::infer_forward({spec({4}, {-1}), dist_tensor_spec({4}, process_mesh({6}))});
      },
      inv, "input 1 is on another process mesh");
}

TEST_CASE("concat backward") {
  const auto x0 = spec({4, 6}, {-1, -1});
  const auto x1 = spec({4, 2}, {1, 0});
  const auto back = concat::infer_backward({x0, x1}, {spec({4, 8}, {0, 1})}, {.axis = 1});
  REQUIRE(back.inputs.size() == 2);
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(back.inputs[1].dims_mapping() == dims_mapping{0, -1});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{0, -1});

  const auto back_neg = concat::infer_backward({spec({2, 4, 8}, {-1, -1, -1}), spec({3, 4, 8}, {-1, -1, -1})},
                                               {spec({5, 4, 8}, {1, -1, 0})}, {.axis = -3});
  CHECK(back_neg.inputs[1].dims_mapping() == dims_mapping{-1, -1, 0});
  CHECK(back_neg.outputs[0].dims_mapping() == dims_mapping{-1, -1, 0});

  const auto back_partial = concat::infer_backward({x0, x1}, {partial_spec({4, 8}, {1, -1}, {0})}, {.axis = 1});
  CHECK(back_partial.outputs[0].dims_mapping() == dims_mapping{1, -1});
  CHECK_FALSE(back_partial.outputs[0].is_partial());
  CHECK_FALSE(back_partial.inputs[0].is_partial());

  const auto inv = error_kind::invalid_argument;
  check_error(
      [&] {
        (void)concat::infer_backward({x0, x1}, {}, {.axis = 1});
      },
      inv, "concat: expects 1 output, got 0");
  check_error(
      [&] {
        (void)concat::infer_backward({x0, x1}, {spec({32}, {-1})}, {.axis = 1});
      },
      inv, "the output has rank 1, but the inputs have rank 2");
  check_error(
      [&] {
        (void)concat::infer_backward({x0, x1}, {spec({4, 8}, {-1, -1})});
      },
      inv, "input 1 has size 2 at dim 1, but input 0 has size 6");
  check_error([&] { (void)concat::infer_backward({}, {spec({4, 8}, {-1, -1})}); }, inv, "expects at least 1 input");
}

TEST_CASE("concat forward -> backward round trip") {
  ctspmd_test::rng r(5);
  int checked = 0;
  int cases = 0;
  for (int n = 0; n < 600; ++n, ++cases) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = r.uniform(1, 4);
    tensor_shape shape;
    for (std::int64_t d = 0; d < rank; ++d) shape.push_back(r.uniform(1, 3) * 2);
    const std::int64_t axis = r.uniform(-rank, rank - 1);
    const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
    const auto count = r.uniform(1, 4);
    std::vector<dist_tensor_spec> in;
    tensor_shape out_shape = shape;
    out_shape[a] = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      tensor_shape s = shape;
      s[a] = r.uniform(1, 5);
      // Now and then a size that does not match: forward rejects the case.
      if (r.uniform(0, 19) == 0) s[(a + 1) % s.size()] += 1;
      out_shape[a] += s[a];
      in.emplace_back(s, tensor_dist_attr(m, ctspmd_test::random_dims_mapping(r, s.size(), m.ndim())));
    }
    const std::vector<tensor_shape> out{out_shape};
    if (ctspmd_test::check_roundtrip<concat>(in, out, {.axis = axis})) ++checked;
  }
  MESSAGE("concat round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked > 400);
}

}  // namespace concat_test
