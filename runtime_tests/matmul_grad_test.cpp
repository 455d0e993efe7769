// The matmul_grad rule at run time: Paddle's co-shard grad cases, fluid cases, the by-name
// call, and every error as a thrown spmd_error.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace matmul_grad_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::matmul_grad;

const process_mesh m3({2, 2, 2});
const process_mesh m2({2, 4});
dist_tensor_spec co(const process_mesh& m, tensor_shape s, multi_dims_mapping dm) { return {s, {m, dm}}; }
const ctspmd_test::on_mesh spec{m2};

TEST_CASE("matmul_grad: Paddle's co-shard cases under phi") {
  // matmul_co_shard_spmd_rule_test, MatmulGradInferSpmd case 1
  const auto a = matmul_grad::infer_forward(
      {co(m3, {64, 32}, {{0, 1}, {}}), co(m3, {32, 48}, {{}, {2}}), co(m3, {64, 48}, {{0, 1}, {2}})}, {}, semantics::phi);
  CHECK(a.outputs[0].multi_dims_mapping() == multi_dims_mapping{{0, 1}, {}});
  CHECK(a.outputs[0].partial_dims() == mesh_dims{2});
  CHECK(a.outputs[1].multi_dims_mapping() == multi_dims_mapping{{}, {2}});
  CHECK(a.outputs[1].partial_dims() == mesh_dims{0, 1});
  // case 4 (trans_x)
  const auto b = matmul_grad::infer_forward({co(m3, {1024, 512, 32, 64}, {{}, {0}, {1, 2}, {}}),
                                             co(m3, {1, 32, 48}, {{}, {}, {2}}),
                                             co(m3, {1024, 512, 64, 48}, {{}, {0}, {}, {2}})},
                                            {true, false}, semantics::phi);
  CHECK(b.inputs[0].multi_dims_mapping() == multi_dims_mapping{{}, {0}, {1}, {}});
  CHECK(b.inputs[1].multi_dims_mapping() == multi_dims_mapping{{}, {1}, {2}});
  CHECK(b.outputs[1].partial_dims() == mesh_dims{0});
}

TEST_CASE("matmul_grad: fluid, by name") {
  const std::vector<dist_tensor_spec> in{spec({4, 8, 16}, {0, -1, 1}), spec({16, 12}, {-1, -1}), spec({4, 8, 12}, {-1, -1, -1})};
  const auto r = runtime::infer_forward("matmul_grad", in, {{"trans_x", false}, {"trans_y", false}});
  CHECK(r.inputs[1].dims_mapping() == dims_mapping{1, -1});
  CHECK(r.inputs[2].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(r.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(!r.outputs[0].is_partial());
  // y lacks the batch dim sharded by mesh dim 0: its gradient sums over it
  CHECK(r.outputs[1].dims_mapping() == dims_mapping{1, -1});
  CHECK(r.outputs[1].partial_dims() == mesh_dims{0});
  CHECK(runtime::infer_forward("matmul_grad", in, {}, semantics::phi) == r);
}

TEST_CASE("matmul_grad: errors") {
  const auto x = spec({8, 16}, {-1, -1}), y = spec({16, 12}, {-1, -1}), g = spec({8, 12}, {-1, -1});
  check_error([&] { (void)matmul_grad::infer_forward({x, spec({15, 12}, {-1, -1}), g}); }, error_kind::invalid_argument,
              "matmul_grad: the contracted dim of x (dim 1, size 16) and of y (dim 0, size 15) differ");
  check_error([&] { (void)matmul_grad::infer_forward({x, y, spec({8, 13}, {-1, -1})}); }, error_kind::invalid_argument,
              "out_grad's dim 1 has size 13, but the output of x and y has size 12 there");
  check_error([&] { (void)matmul_grad::infer_forward({x, y, spec({8}, {-1})}); }, error_kind::invalid_argument,
              "out_grad has rank 1, but the output of x (rank 2) and y (rank 2) has rank 2");
  check_error([&] { (void)matmul_grad::infer_forward({spec({2, 8, 16}, {-1, -1, -1}), spec({3, 16, 12}, {-1, -1, -1}), spec({2, 8, 12}, {-1, -1, -1})}); },
              error_kind::invalid_argument, "batch dim 0 of x (size 2) and dim 0 of y (size 3) do not broadcast");
  check_error([&] { (void)matmul_grad::infer_forward({spec({16}, {-1}), y, spec({12}, {-1})}, {true, false}); },
              error_kind::invalid_argument, "trans_x needs x of rank >= 2, but x has rank 1");
  check_error([&] { (void)matmul_grad::infer_backward({x, y, g}, {x, y}); }, error_kind::unimplemented,
              "a grad rule has no reverse inference");
}

}  // namespace matmul_grad_test
