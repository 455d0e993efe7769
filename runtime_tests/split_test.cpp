// The split rule at run time: the static cases again, every error as a thrown spmd_error, and
// the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/rules/split.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <span>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace split_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::split;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};

TEST_CASE("split forward") {
  const auto by_num = split::infer_forward({spec({6, 8}, {0, 1})}, {.num = 2, .axis = 1});
  REQUIRE(by_num.outputs.size() == 2);
  CHECK(by_num.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(by_num.outputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(by_num.outputs[1].dims_mapping() == dims_mapping{0, -1});
  CHECK_FALSE(by_num.outputs[1].is_partial());

  const auto by_sections = split::infer_forward({spec({4, 6, 8}, {-1, 0, 1})}, {.sections = {2, -1, 3}, .axis = -1});
  REQUIRE(by_sections.outputs.size() == 3);
  CHECK(by_sections.inputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
  CHECK(by_sections.outputs[2].dims_mapping() == dims_mapping{-1, 0, -1});

  const auto unsharded = split::infer_forward({spec({6, 9}, {1, -1})}, {.num = 3, .axis = -1});
  CHECK(unsharded.outputs.size() == 3);
  CHECK(unsharded.outputs[2].dims_mapping() == dims_mapping{1, -1});

  CHECK(split::infer_forward({spec({-1, 8}, {0, -1})}, {.num = 4}).outputs.size() == 4);
  CHECK(split::infer_forward({spec({-1, 8}, {0, -1})}, {.sections = {7, 1}}).outputs.size() == 2);
  CHECK(split::infer_forward({spec({5, 8}, {-1, -1})}, {.sections = {5, -1}}).outputs.size() == 2);
  CHECK(split::infer_forward({spec({32, 8}, {-1, -1})}, {.num = 16}).outputs.size() == 16);

  tensor_dist_attr partial(mesh, {-1, 1});
  partial.set_partial_status({0}, reduce_type::max);
  const auto from_partial = split::infer_forward({dist_tensor_spec({6, 8}, partial)}, {.num = 2, .axis = 1});
  CHECK(from_partial.inputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK(from_partial.inputs[0].partial_dims() == mesh_dims{0});
  CHECK(from_partial.outputs[0].partial_dims() == mesh_dims{0});
  CHECK(from_partial.outputs[1].partial_reduce_type(0) == reduce_type::max);

  // The typed API over a span gives the same answer as over a braced list.
  const std::vector<dist_tensor_spec> inputs{spec({6, 8}, {0, 1})};
  CHECK(split::infer_forward(std::span<const dist_tensor_spec>(inputs), {.num = 2, .axis = 1}) == by_num);
}

TEST_CASE("split forward errors") {
  const auto x = spec({6, 8}, {-1, -1});
  const auto inv = error_kind::invalid_argument;
  check_error([&] { (void)split::infer_forward({x}); }, inv,
              "split: exactly one of num (> 0) and sections (non-empty) gives the number of outputs, but num = 0 and "
              "sections has 0 entries");
  check_error(
      [&] {
        (void)split::infer_forward({x}, {.num = 2, .sections = {3, 3}});
      },
      inv, "but num = 2 and sections has 2 entries");
  check_error([&] { (void)split::infer_forward({x}, {.num = -2}); }, inv, "but num = -2 and sections has 0 entries");
  check_error(
      [&] {
        (void)split::infer_forward({spec({-1, 8}, {-1, -1})}, {.num = 17});
      },
      inv, "num = 17 outputs exceed max_operands = 16");
  check_error([&] { (void)split::infer_forward({x}, {.num = 4}); }, inv,
              "num = 4 does not divide the size 6 of the split axis 0");
  check_error(
      [&] {
        (void)split::infer_forward({x}, {.sections = {5, 4}, .axis = -1});
      },
      inv, "the sections add up to 9, but the split axis 1 has size 8");
  check_error(
      [&] {
        (void)split::infer_forward({x}, {.sections = {-1, 2, -1}});
      },
      inv, "sections 0 and 2 are both -1; at most one is inferred");
  check_error(
      [&] {
        (void)split::infer_forward({x}, {.sections = {2, -3}});
      },
      inv, "section 1 has size -3; a section is >= 0, or -1 to be inferred");
  check_error(
      [&] {
        (void)split::infer_forward({x}, {.sections = {4, 5, -1}});
      },
      inv, "the sections other than the inferred one add up to 9, above the size 6 of the split axis 0");
  check_error([&] { (void)split::infer_forward({x}, {.num = 2, .axis = 2}); }, inv,
              "axis 2 is out of range for x of rank 2");
  check_error([&] { (void)split::infer_forward({x}, {.num = 2, .axis = -3}); }, inv,
              "axis -3 is out of range for x of rank 2");
  check_error([&] { (void)split::infer_forward({spec({}, {})}, {.num = 1}); }, inv,
              "axis 0 is out of range for x of rank 0");
  check_error([&] { (void)split::infer_forward({x, x}, {.num = 2}); }, inv, "split: expects 1 input, got 2");
  check_error([&] { (void)split::infer_forward(std::initializer_list<dist_tensor_spec>{}, {.num = 2}); }, inv,
              "expects 1 input, got 0");
}

TEST_CASE("split backward") {
  const auto x = spec({6, 8}, {-1, -1});
  const split::attributes halves{.num = 2, .axis = 1};
  const auto back = split::infer_backward({x}, {spec({6, 4}, {0, -1}), spec({6, 4}, {-1, 1})}, halves);
  REQUIRE(back.outputs.size() == 2);
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(back.outputs[1].dims_mapping() == dims_mapping{0, -1});

  CHECK(split::infer_backward({spec({6, 8}, {1, 0})}, {spec({6, 4}, {-1, -1}), spec({6, 4}, {-1, -1})}, halves)
            .inputs[0]
            .dims_mapping() == dims_mapping{-1, -1});

  // The split axis takes part in the merge as 'k'.
  const auto k_first = split::infer_backward({x}, {spec({3, 8}, {0, -1}), spec({3, 8}, {-1, 0})}, {.num = 2});
  CHECK(k_first.inputs[0].dims_mapping() == dims_mapping{-1, -1});
  const auto b_first = split::infer_backward({x}, {spec({3, 8}, {-1, 0}), spec({3, 8}, {0, -1})}, {.num = 2});
  CHECK(b_first.inputs[0].dims_mapping() == dims_mapping{-1, 0});
  CHECK(b_first.outputs[1].dims_mapping() == dims_mapping{-1, 0});

  tensor_dist_attr partial(mesh, {-1, -1});
  partial.set_partial_status({0});
  const auto back_partial =
      split::infer_backward({x}, {dist_tensor_spec({6, 4}, partial), spec({6, 4}, {0, -1})}, halves);
  CHECK(back_partial.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK_FALSE(back_partial.inputs[0].is_partial());
  CHECK_FALSE(back_partial.outputs[0].is_partial());

  const auto back_sections =
      split::infer_backward({spec({4, 6, 8}, {-1, -1, -1})},
                            {spec({4, 6, 2}, {1, -1, 0}), spec({4, 6, 3}, {-1, -1, -1}), spec({4, 6, 3}, {-1, 0, -1})},
                            {.sections = {2, 3, 3}, .axis = -1});
  CHECK(back_sections.inputs[0].dims_mapping() == dims_mapping{1, -1, -1});

  const auto inv = error_kind::invalid_argument;
  check_error(
      [&] {
        (void)split::infer_backward({x}, {spec({6, 4}, {0, -1}), spec({6, 4}, {1, -1})}, halves);
      },
      error_kind::unimplemented, "split: tensor axis 'a' is sharded by two different mesh dims, 1 and 0");
  check_error(
      [&] {
        (void)split::infer_backward({x}, {spec({6, 4}, {-1, -1})}, halves);
      },
      inv, "expects 2 outputs, got 1");
  check_error(
      [&] {
        (void)split::infer_backward({x}, {spec({6, 4}, {-1, -1}), spec({24}, {-1})}, halves);
      },
      inv, "output 1 has rank 1, but x has rank 2");
  check_error([&] { (void)split::infer_backward({x}, {spec({6, 4}, {-1, -1})}); }, inv, "but num = 0 and sections");
  check_error(
      [&] {
        (void)split::infer_backward({}, {spec({6, 4}, {-1, -1})}, halves);
      },
      inv, "expects 1 input, got 0");
}

TEST_CASE("split forward -> backward round trip") {
  ctspmd_test::rng r(11);
  int checked = 0;
  int cases = 0;
  for (int n = 0; n < 600; ++n, ++cases) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = r.uniform(1, 4);
    tensor_shape shape;
    for (std::int64_t d = 0; d < rank; ++d) shape.push_back(r.uniform(1, 3) * 4);
    const std::int64_t axis = r.uniform(-rank, rank - 1);
    const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
    split::attributes attrs{.axis = axis};
    std::vector<std::int64_t> sizes;  // the outputs' sizes on the split axis
    if (r.coin()) {
      attrs.num = r.coin() ? 2 : 4;
      sizes.assign(static_cast<std::size_t>(attrs.num), shape[a] / attrs.num);
    } else {
      // Cut the axis at random into 1-4 sections; maybe one of them -1.
      std::int64_t rest = shape[a];
      while (rest > 0 && sizes.size() < 4) {
        const auto s = sizes.size() == 3 ? rest : r.uniform(1, rest);
        sizes.push_back(s);
        rest -= s;
      }
      if (rest > 0) sizes.back() += rest;
      for (auto s : sizes) attrs.sections.push_back(s);
      if (r.coin())
        attrs.sections[static_cast<std::size_t>(r.uniform(0, static_cast<std::int64_t>(sizes.size()) - 1))] = -1;
    }
    const std::vector<dist_tensor_spec> in{{shape, {m, ctspmd_test::random_dims_mapping(r, shape.size(), m.ndim())}}};
    std::vector<tensor_shape> out;
    for (auto s : sizes) {
      tensor_shape o = shape;
      o[a] = s;
      out.push_back(o);
    }
    if (ctspmd_test::check_roundtrip<split>(in, out, attrs)) ++checked;
  }
  MESSAGE("split round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked > 500);
}

}  // namespace split_test
