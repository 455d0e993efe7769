// The bmm_grad rule at run time: Paddle's co-shard case, fluid and phi cases by type and by
// name, and every error as a thrown spmd_error with its message. (A grad rule has no reverse
// inference, so there is no round trip.)
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace bmm_grad_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::bmm_grad;

const process_mesh m3({2, 2, 2});
const process_mesh m2({2, 4});
dist_tensor_spec co(const process_mesh& m, tensor_shape s, multi_dims_mapping dm) { return {s, {m, dm}}; }
const ctspmd_test::on_mesh spec{m2};

TEST_CASE("bmm_grad: Paddle's co-shard case (BmmGradInferSpmd) under phi") {
  const std::vector<dist_tensor_spec> in{co(m3, {4, 16, 8}, {{0, 1}, {2}, {}}), co(m3, {4, 8, 32}, {{0, 1}, {}, {}}),
                                         co(m3, {4, 16, 32}, {{0, 1}, {2}, {}})};
  const auto r = bmm_grad::infer_forward(in, {}, semantics::phi);
  CHECK(r.inputs[0].multi_dims_mapping() == multi_dims_mapping{{0, 1}, {2}, {}});
  CHECK(r.inputs[2].multi_dims_mapping() == multi_dims_mapping{{0, 1}, {2}, {}});
  CHECK(r.outputs[0].multi_dims_mapping() == multi_dims_mapping{{0, 1}, {2}, {}});
  CHECK(!r.outputs[0].is_partial());
  CHECK(r.outputs[1].multi_dims_mapping() == multi_dims_mapping{{0, 1}, {}, {}});
  CHECK(r.outputs[1].partial_dims() == mesh_dims{2});
  CHECK(runtime::infer_forward("bmm_grad", in, {}, semantics::phi) == r);
  // bmm_grad is matmul_grad without transposes
  CHECK(runtime::infer_forward("matmul_grad", in, {}, semantics::phi) == r);
}

TEST_CASE("bmm_grad: fluid, by name") {
  const std::vector<dist_tensor_spec> in{spec({4, 8, 16}, {0, -1, -1}), spec({4, 16, 12}, {-1, -1, 1}),
                                         spec({4, 8, 12}, {-1, -1, -1})};
  const auto r = runtime::infer_forward("bmm_grad", in);
  CHECK(r.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(r.inputs[1].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(r.inputs[2].dims_mapping() == dims_mapping{0, -1, 1});
  // x_grad sums over n (mesh dim 1); y_grad over m (unsharded): whole
  CHECK(r.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(r.outputs[0].partial_dims() == mesh_dims{1});
  CHECK(r.outputs[1].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(!r.outputs[1].is_partial());
  CHECK(runtime::infer_forward("bmm_grad", in, {}, semantics::phi) == r);
}

TEST_CASE("bmm_grad: errors") {
  const auto x = spec({4, 8, 16}, {-1, -1, -1}), y = spec({4, 16, 12}, {-1, -1, -1}), g = spec({4, 8, 12}, {-1, -1, -1});
  const auto inv = error_kind::invalid_argument;
  check_error([&] { (void)bmm_grad::infer_forward({spec({8, 16}, {-1, -1}), y, g}); }, inv,
              "bmm_grad: x, y and out_grad must be 3-D, but have ranks 2, 3 and 3");
  check_error([&] { (void)bmm_grad::infer_forward({x, y, spec({2, 8, 12}, {-1, -1, -1})}); }, inv,
              "the batch sizes of x (4), y (4) and out_grad (2) differ");
  check_error([&] { (void)bmm_grad::infer_forward({x, spec({4, 15, 12}, {-1, -1, -1}), g}); }, inv,
              "x's dim 2 (16) differs from y's dim 1 (15)");
  check_error([&] { (void)bmm_grad::infer_forward({x, y, spec({4, 9, 12}, {-1, -1, -1})}); }, inv,
              "out_grad's dim 1 (9) differs from x's dim 1 (8)");
  check_error([&] { (void)bmm_grad::infer_forward({x, y, spec({4, 8, 13}, {-1, -1, -1})}); }, inv,
              "out_grad's dim 2 (13) differs from y's dim 2 (12)");
  check_error([&] { (void)runtime::infer_forward("bmm_grad", std::vector<dist_tensor_spec>{x, y}); }, inv,
              "bmm_grad: expects 3 inputs, got 2");
  check_error([&] { (void)bmm_grad::infer_backward({x, y, g}, {x, y}); }, error_kind::unimplemented,
              "a grad rule has no reverse inference");
  check_error([&] { (void)runtime::infer_forward("bmm_grad", std::vector<dist_tensor_spec>{x, y, g}, {{"trans_x", true}}); },
              inv, "trans_x");
}

}  // namespace bmm_grad_test
