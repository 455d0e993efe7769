#include <ctspmd/rules/fused_linear_param_grad_add.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::fused_linear_param_grad_add;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m2({2, 4});
constexpr process_mesh m3({2, 2, 2});
constexpr dist_tensor_spec none2({}, {m2, dims_mapping{}});

// ==== data parallel: the batch sharded, the weight gradient partial on it =========================
constexpr dist_tensor_spec x({8, 128, 1024}, {m2, {0, -1, -1}});
constexpr dist_tensor_spec dout({8, 128, 4096}, {m2, {0, -1, 1}});
constexpr auto f = fused_linear_param_grad_add::infer_forward({x, dout, none2, none2});
static_assert(f.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && f.inputs[1].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(f.inputs[2].dims_mapping() == dims_mapping{} && f.inputs[3].dims_mapping() == dims_mapping{});
static_assert(f.outputs[0].dims_mapping() == dims_mapping{-1, 1} && f.outputs[0].partial_dims() == mesh_dims{0});
static_assert(f.outputs[1].dims_mapping() == dims_mapping{1} && f.outputs[1].partial_dims() == mesh_dims{0});
static_assert(fused_linear_param_grad_add::infer_forward({x, dout, none2, none2}, {}, semantics::phi) == f);
// a given accumulator is required in the new gradient's layout (partial included)
constexpr auto acc = fused_linear_param_grad_add::infer_forward(
    {x, dout, dist_tensor_spec({1024, 4096}, {m2, {-1, -1}}), dist_tensor_spec({4096}, {m2, {-1}})});
static_assert(acc.inputs[2] == acc.outputs[0] && acc.inputs[3] == acc.outputs[1] && acc.inputs[2].partial_dims() == mesh_dims{0});
// without has_bias: dbias_out absent
constexpr auto nb = fused_linear_param_grad_add::infer_forward({x, dout}, {.multi_precision = true, .has_bias = false});
static_assert(nb.outputs[1].rank() == 0 && !nb.outputs[1].is_partial());
// the sequence sharded too (sequence parallel), x's features on another mesh dim: both partial dims
constexpr auto sp = fused_linear_param_grad_add::infer_forward(
    {co(m3, {8, 128, 1024}, {{0}, {1}, {2}}), co(m3, {8, 128, 4096}, {{0}, {1}, {}})});
static_assert(is(sp.outputs[0], {{2}, {}}) && sp.outputs[0].partial_dims() == mesh_dims{0, 1});
// phi: x and dout shard the batch by different mesh dims: a co-shard, partial on both
constexpr auto cs = fused_linear_param_grad_add::infer_forward(
    {co(m3, {8, 128, 1024}, {{0}, {}, {}}), co(m3, {8, 128, 4096}, {{1}, {}, {}})}, {}, semantics::phi);
static_assert(is(cs.inputs[0], {{0, 1}, {}, {}}) && cs.outputs[0].partial_dims() == mesh_dims{0, 1});
// 2-D x
constexpr auto two = fused_linear_param_grad_add::infer_forward({{{16, 32}, {m2, {0, 1}}}, {{16, 8}, {m2, {-1, -1}}}});
static_assert(two.outputs[0].dims_mapping() == dims_mapping{1, -1} && two.outputs[0].partial_dims() == mesh_dims{0});

// ==== errors =======================================================================================
static_assert(fused_linear_param_grad_add::try_infer_forward({dist_tensor_spec({1024}, m2), dist_tensor_spec({4096}, m2)}).kind() ==
              error_kind::invalid_argument);
static_assert(fused_linear_param_grad_add::try_infer_forward({x, dist_tensor_spec({8, 64, 4096}, m2)}).error().values[2] == 64);
static_assert(fused_linear_param_grad_add::try_infer_forward({x, dout, dist_tensor_spec({1024, 4095}, m2)}).kind() ==
              error_kind::invalid_argument);
static_assert(fused_linear_param_grad_add::try_infer_forward({x, dout, none2, dist_tensor_spec({1024}, m2)}).error().values[0] == 4096);
static_assert(fused_linear_param_grad_add::try_infer_backward({x, dout}, {x, dout}).kind() == error_kind::unimplemented);
