// The fused_linear_param_grad_add rule at run time: by name, accumulators, errors.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace fused_linear_param_grad_add_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::fused_linear_param_grad_add;

const process_mesh mesh({2, 4});
const ctspmd_test::on_mesh spec{mesh};
dist_tensor_spec absent() { return {{}, {mesh, dims_mapping{}}}; }

TEST_CASE("fused_linear_param_grad_add: by name") {
  const std::vector<dist_tensor_spec> in{spec({8, 128, 1024}, {0, 1, -1}), spec({8, 128, 4096}, {0, -1, -1}),
                                         spec({1024, 4096}, {-1, -1}), absent()};
  const auto r = runtime::infer_forward("fused_linear_param_grad_add", in, {{"multi_precision", true}, {"has_bias", true}});
  CHECK(r.inputs[1].dims_mapping() == dims_mapping{0, 1, -1});
  CHECK(r.outputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK(r.outputs[0].partial_dims() == mesh_dims{0, 1});
  CHECK(r.inputs[2] == r.outputs[0]);
  CHECK(r.inputs[3].rank() == 0);
  CHECK(r.outputs[1].dims_mapping() == dims_mapping{-1});
  CHECK(r.outputs[1].partial_dims() == mesh_dims{0, 1});
  const auto nb = runtime::infer_forward("fused_linear_param_grad_add", in, {{"has_bias", false}}, semantics::phi);
  CHECK(nb.outputs[1].rank() == 0);
}

TEST_CASE("fused_linear_param_grad_add: errors") {
  const auto x = spec({8, 128, 1024}, {-1, -1, -1}), d = spec({8, 128, 4096}, {-1, -1, -1});
  check_error([&] { (void)fused_linear_param_grad_add::infer_forward({x, spec({8, 4096}, {-1, -1})}); }, error_kind::invalid_argument,
              "fused_linear_param_grad_add: x and dout must have one rank >= 2, but have ranks 3 and 2");
  check_error([&] { (void)fused_linear_param_grad_add::infer_forward({x, spec({8, 64, 4096}, {-1, -1, -1})}); },
              error_kind::invalid_argument, "x's dim 1 has size 128, but dout's has size 64");
  check_error([&] { (void)fused_linear_param_grad_add::infer_forward({x, d, spec({1024, 4095}, {-1, -1})}); },
              error_kind::invalid_argument, "dweight must be [1024, 4096] (x's and dout's last dims), but has rank 2");
  check_error([&] { (void)fused_linear_param_grad_add::infer_forward({x, d, absent(), spec({1024}, {-1})}); },
              error_kind::invalid_argument, "dbias must be [4096] (dout's last dim), but has rank 1");
  check_error([&] { (void)fused_linear_param_grad_add::infer_backward({x, d}, {x, d}); }, error_kind::unimplemented,
              "no reverse inference");
}

}  // namespace fused_linear_param_grad_add_test
