// The layer_norm rule at run time: the static cases again, every error as a thrown spmd_error,
// and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>
#include <ctspmd/rules/layer_norm.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace layer_norm_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::layer_norm;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::partial_on_mesh partial_spec{mesh};
const dist_tensor_spec x = spec({4, 8, 16}, {0, 1, -1});
const dist_tensor_spec scale = spec({16}, {1});
const dist_tensor_spec bias = spec({16}, {-1});
const dist_tensor_spec x_rep = spec({4, 8, 16}, {-1, -1, -1});
const dist_tensor_spec out3 = spec({4, 8, 16}, {-1, -1, -1});
const dist_tensor_spec stat = spec({4}, {-1});

std::vector<dims_mapping> mappings(const dist_attrs& attrs) {
  std::vector<dims_mapping> out;
  for (const auto& a : attrs) out.push_back(a.dims_mapping());
  return out;
}

TEST_CASE("layer_norm forward") {
  const auto f1 = layer_norm::infer_forward({x, spec({128}, {-1}), spec({128}, {0})});
  CHECK(mappings(f1.inputs) == std::vector<dims_mapping>{{0, -1, -1}, {-1}, {-1}});
  CHECK(mappings(f1.outputs) == std::vector<dims_mapping>{{0, -1, -1}, {0}, {0}});
  for (const auto& a : f1.outputs) CHECK_FALSE(a.is_partial());

  const auto f2 = layer_norm::infer_forward({x, scale, bias}, {.begin_norm_axis = 2, .epsilon = 1e-6});
  CHECK(mappings(f2.inputs) == std::vector<dims_mapping>{{0, 1, -1}, {-1}, {-1}});
  CHECK(mappings(f2.outputs) == std::vector<dims_mapping>{{0, 1, -1}, {0, 1}, {0, 1}});
  CHECK(layer_norm::infer_forward({x, scale, bias}, {.begin_norm_axis = -1}) == f2);

  const auto f3 = layer_norm::infer_forward({spec({4, 8, 16}, {-1, 0, 1}), scale, bias}, {.begin_norm_axis = 2});
  CHECK(mappings(f3.inputs)[0] == dims_mapping{-1, 0, -1});
  CHECK(mappings(f3.outputs)[1] == dims_mapping{-1, 0});

  const auto fp = layer_norm::infer_forward({partial_spec({4, 16}, {-1, 0}, 1), partial_spec({16}, {-1}, 0), bias});
  CHECK(to_string(fp.inputs[0]) == "dims_mapping [-1, -1]");
  CHECK(to_string(fp.inputs[1]) == "dims_mapping [-1]");
  CHECK(to_string(fp.outputs[0]) == "dims_mapping [-1, -1]");
}

TEST_CASE("layer_norm forward errors") {
  check_error(
      [] {
        (void)layer_norm::infer_forward({x, scale, bias}, {.begin_norm_axis = 0});
      },
      error_kind::invalid_argument,
      "layer_norm: begin_norm_axis 0 is outside [1, 3) for x of rank 3 (negative values count from the end)");
  check_error(
      [] {
        (void)layer_norm::infer_forward({x, scale, bias}, {.begin_norm_axis = 3});
      },
      error_kind::invalid_argument, "begin_norm_axis 3 is outside [1, 3)");
  check_error(
      [] {
        (void)layer_norm::infer_forward({x, scale, bias}, {.begin_norm_axis = -3});
      },
      error_kind::invalid_argument, "begin_norm_axis -3 is outside [1, 3)");
  check_error(
      [] {
        (void)layer_norm::infer_forward({spec({16}, {0}), scale, bias});
      },
      error_kind::invalid_argument, "begin_norm_axis 1 is outside [1, 1) for x of rank 1");
  check_error(
      [] {
        (void)layer_norm::infer_forward({x, spec({8, 16}, {-1, -1}), bias});
      },
      error_kind::invalid_argument, "scale must be 1-D, but has rank 2");
  check_error(
      [] {
        (void)layer_norm::infer_forward({x, scale, spec({}, {})});
      },
      error_kind::invalid_argument, "bias must be 1-D, but has rank 0");
  check_error(
      [] {
        (void)layer_norm::infer_forward({x, scale});
      },
      error_kind::invalid_argument, "expects 3 inputs, got 2");
  check_error(
      [] {
        (void)layer_norm::infer_forward({x, scale, bias, bias});
      },
      error_kind::invalid_argument, "expects 3 inputs, got 4");
}

TEST_CASE("layer_norm backward") {
  const auto b1 = layer_norm::infer_backward(
      {x_rep, scale, bias}, {spec({4, 8, 16}, {-1, -1, 1}), spec({4, 8}, {0, -1}), spec({4, 8}, {-1, -1})},
      {.begin_norm_axis = 2});
  CHECK(mappings(b1.inputs) == std::vector<dims_mapping>{{0, -1, -1}, {-1}, {-1}});
  CHECK(mappings(b1.outputs) == std::vector<dims_mapping>{{0, -1, -1}, {0, -1}, {0, -1}});

  const auto b2 = layer_norm::infer_backward(
      {x, scale, bias}, {spec({4, 8, 16}, {-1, 1, -1}), spec({4, 8}, {-1, -1}), spec({4, 8}, {0, -1})},
      {.begin_norm_axis = -1});
  CHECK(mappings(b2.inputs)[0] == dims_mapping{0, 1, -1});
  CHECK(mappings(b2.outputs) == std::vector<dims_mapping>{{0, 1, -1}, {0, 1}, {0, 1}});

  // A mesh dim claimed by two axes stays with out's; one axis on two mesh dims is unimplemented.
  const auto first_wins = layer_norm::infer_backward(
      {x_rep, scale, bias}, {spec({4, 8, 16}, {0, -1, -1}), spec({4, 8}, {-1, 0}), spec({4, 8}, {-1, -1})},
      {.begin_norm_axis = 2});
  CHECK(mappings(first_wins.outputs) == std::vector<dims_mapping>{{0, -1, -1}, {0, -1}, {0, -1}});
  check_error(
      [] {
        (void)layer_norm::infer_backward({x_rep, scale, bias}, {spec({4, 8, 16}, {0, -1, -1}), spec({4}, {1}), stat});
      },
      error_kind::unimplemented, "layer_norm: tensor axis 'a' is sharded by two different mesh dims, 1 and 0");

  const auto bp = layer_norm::infer_backward(
      {x_rep, scale, bias}, {partial_spec({4, 8, 16}, {-1, -1, -1}, 0), spec({4}, {0}), partial_spec({4}, {-1}, 1)});
  CHECK(to_string(bp.outputs[0]) == "dims_mapping [0, -1, -1]");
  CHECK(to_string(bp.outputs[2]) == "dims_mapping [0]");
  CHECK(to_string(bp.inputs[0]) == "dims_mapping [0, -1, -1]");
}

TEST_CASE("layer_norm backward errors") {
  check_error(
      [] {
        (void)layer_norm::infer_backward({x, scale, bias}, {spec({4, 8}, {-1, -1}), stat, stat});
      },
      error_kind::invalid_argument, "out must have x's rank 3, but has rank 2");
  check_error(
      [] {
        (void)layer_norm::infer_backward({x, scale, bias}, {out3, spec({4, 8}, {-1, -1}), stat});
      },
      error_kind::invalid_argument, "mean must have rank begin_norm_axis = 1, but has rank 2");
  check_error(
      [] {
        (void)layer_norm::infer_backward({x, scale, bias}, {out3, stat, spec({}, {})});
      },
      error_kind::invalid_argument, "variance must have rank begin_norm_axis = 1, but has rank 0");
  check_error(
      [] {
        (void)layer_norm::infer_backward({x, scale, bias}, {out3, stat, stat}, {.begin_norm_axis = 4});
      },
      error_kind::invalid_argument, "begin_norm_axis 4 is outside [1, 3)");
  check_error(
      [] {
        (void)layer_norm::infer_backward({x, scale, bias}, {out3, stat});
      },
      error_kind::invalid_argument, "expects 3 outputs, got 2");
  check_error(
      [] {
        (void)layer_norm::infer_backward({x, scale}, {out3, stat, stat});
      },
      error_kind::invalid_argument, "expects 3 inputs, got 2");
  check_error(
      [] {
        (void)layer_norm::infer_backward({x, spec({4, 4}, {-1, -1}), bias}, {out3, stat, stat});
      },
      error_kind::invalid_argument, "scale must be 1-D");
}

TEST_CASE("layer_norm forward -> backward round trip") {
  ctspmd_test::rng r(5);
  int checked = 0;
  int rejected = 0;
  constexpr int total = 600;
  for (int n = 0; n < total; ++n) {
    const auto mesh_ndim = r.uniform(1, 3);
    const process_mesh m(tensor_shape(static_cast<std::size_t>(mesh_ndim), 2));
    const auto rank = r.uniform(1, 4);
    // Mostly a valid begin_norm_axis (half the time negative); now and then anything in [-rank, rank].
    std::int64_t begin = r.uniform(1, rank > 1 ? rank - 1 : 1);
    if (r.coin()) begin -= rank;
    if (r.uniform(0, 5) == 0) begin = r.uniform(-rank, rank);
    const layer_norm::attributes attrs{.begin_norm_axis = begin};
    const std::int64_t bna = attrs.begin_norm_axis < 0 ? attrs.begin_norm_axis + rank : attrs.begin_norm_axis;
    const bool valid = bna >= 1 && bna < rank;

    tensor_shape x_shape;
    std::int64_t normalised = 1;
    for (std::int64_t d = 0; d < rank; ++d) {
      x_shape.push_back(2 + d);
      if (d >= bna) normalised *= 2 + d;
    }
    tensor_dist_attr xa(m, ctspmd_test::random_dims_mapping(r, static_cast<std::size_t>(rank), mesh_ndim));
    if (r.uniform(0, 4) == 0) {  // now and then a partial x, on a mesh dim that does not shard it
      bool used = false;
      for (auto d : xa.dims_mapping()) used = used || d == 0;
      if (!used) xa.set_partial_status({0});
    }
    const std::vector<dist_tensor_spec> in{{x_shape, xa},
                                           {{normalised}, {m, ctspmd_test::random_dims_mapping(r, 1, mesh_ndim)}},
                                           {{normalised}, {m, ctspmd_test::random_dims_mapping(r, 1, mesh_ndim)}}};
    tensor_shape stat_shape;
    for (std::int64_t d = 0; d < bna && d < rank; ++d) stat_shape.push_back(x_shape[static_cast<std::size_t>(d)]);
    const std::vector<tensor_shape> out{x_shape, stat_shape, stat_shape};

    const bool accepted = ctspmd_test::check_roundtrip<layer_norm>(in, out, attrs);
    CHECK(accepted == valid);
    if (accepted) {
      ++checked;
      // Stronger than the generic property: backward gives back exactly forward's inputs.
      const auto fwd = layer_norm::infer_forward(in, attrs);
      const auto bwd = layer_norm::infer_backward(in, ctspmd_test::with_attrs(out, fwd.outputs), attrs);
      CHECK(bwd.inputs == fwd.inputs);
      CHECK(bwd.outputs == fwd.outputs);
    } else {
      ++rejected;
    }
  }
  MESSAGE("layer_norm round trip: ", checked, " accepted cases of ", total, " (", rejected, " bad begin_norm_axis)");
  CHECK(checked > 350);
}

}  // namespace layer_norm_test
