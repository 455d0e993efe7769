#include <ctspmd/rules/bmm_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::bmm_grad;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m3({2, 2, 2});
constexpr process_mesh m2({2, 4});

// ==== Paddle's matmul_co_shard_spmd_rule_test (BmmGradInferSpmd, CoShard), under phi ===============
constexpr auto p1 = bmm_grad::infer_forward({co(m3, {4, 16, 8}, {{0, 1}, {2}, {}}), co(m3, {4, 8, 32}, {{0, 1}, {}, {}}),
                                             co(m3, {4, 16, 32}, {{0, 1}, {2}, {}})},
                                            {}, semantics::phi);
static_assert(is(p1.inputs[0], {{0, 1}, {2}, {}}) && !p1.inputs[0].is_partial());
static_assert(is(p1.inputs[1], {{0, 1}, {}, {}}) && !p1.inputs[1].is_partial());
static_assert(is(p1.inputs[2], {{0, 1}, {2}, {}}) && !p1.inputs[2].is_partial());
// x_grad: x's mapping, whole (n is not sharded); y_grad: y's, partial on m's mesh dim 2
static_assert(is(p1.outputs[0], {{0, 1}, {2}, {}}) && !p1.outputs[0].is_partial());
static_assert(is(p1.outputs[1], {{0, 1}, {}, {}}) && p1.outputs[1].partial_dims() == mesh_dims{2});
// the same case under fluid (the co-shard lists merge as units): the same answer
constexpr auto f1 = bmm_grad::infer_forward({co(m3, {4, 16, 8}, {{0, 1}, {2}, {}}), co(m3, {4, 8, 32}, {{0, 1}, {}, {}}),
                                             co(m3, {4, 16, 32}, {{0, 1}, {2}, {}})});
static_assert(is(f1.outputs[0], {{0, 1}, {2}, {}}) && is(f1.outputs[1], {{0, 1}, {}, {}}) &&
              f1.outputs[1].partial_dims() == mesh_dims{2});

// ==== merging: k sharded in x, n in out_grad ======================================================
constexpr auto k = bmm_grad::infer_forward(
    {{{4, 8, 16}, {m2, {0, -1, 1}}}, {{4, 16, 12}, {m2, {-1, -1, -1}}}, {{4, 8, 12}, {m2, {-1, -1, -1}}}});
// y follows x's batch and k; x_grad keeps k (no sum over it), y_grad sums over m (unsharded): whole
static_assert(k.inputs[1].dims_mapping() == dims_mapping{0, 1, -1} && k.inputs[2].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(k.outputs[0].dims_mapping() == dims_mapping{0, -1, 1} && !k.outputs[0].is_partial());
static_assert(k.outputs[1].dims_mapping() == dims_mapping{0, 1, -1} && !k.outputs[1].is_partial());
constexpr auto nn = bmm_grad::infer_forward(
    {{{4, 8, 16}, {m2, {-1, -1, -1}}}, {{4, 16, 12}, {m2, {-1, -1, -1}}}, {{4, 8, 12}, {m2, {-1, 0, 1}}}});
// x_grad sums over n (mesh dim 1), y_grad over m (mesh dim 0)
static_assert(nn.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1} && nn.outputs[0].partial_dims() == mesh_dims{1});
static_assert(nn.outputs[1].dims_mapping() == dims_mapping{-1, -1, 1} && nn.outputs[1].partial_dims() == mesh_dims{0});
// partial out_grad is required whole
constexpr auto pg = [] {
  tensor_dist_attr g(m2, {-1, -1, -1});
  g.set_partial_status({1});
  return bmm_grad::infer_forward({{{4, 8, 16}, {m2, {0, -1, -1}}}, {{4, 16, 12}, {m2, {-1, -1, -1}}}, {{4, 8, 12}, g}},
                                 {}, semantics::phi);
}();
static_assert(!pg.inputs[2].is_partial() && !pg.outputs[0].is_partial() && !pg.outputs[1].is_partial());
// fluid: a batch dim sharded by two different mesh dims conflicts; phi co-shards it
static_assert(bmm_grad::try_infer_forward({{{4, 8, 16}, {m2, {0, -1, -1}}}, {{4, 16, 12}, {m2, {1, -1, -1}}},
                                           {{4, 8, 12}, {m2, {-1, -1, -1}}}})
                  .kind() == error_kind::unimplemented);
static_assert(is(bmm_grad::infer_forward({{{8, 8, 16}, {m2, {0, -1, -1}}}, {{8, 16, 12}, {m2, {1, -1, -1}}},
                                          {{8, 8, 12}, {m2, {-1, -1, -1}}}},
                                         {}, semantics::phi)
                     .outputs[0],
                 {{1, 0}, {}, {}}));  // the larger shard count first

// ==== errors: 3-D operands, one batch size, matching m, k, n ========================================
constexpr dist_tensor_spec x({4, 8, 16}, m2), y({4, 16, 12}, m2), g({4, 8, 12}, m2);
static_assert(bmm_grad::try_infer_forward({dist_tensor_spec({8, 16}, m2), y, g}).kind() == error_kind::invalid_argument);
static_assert(bmm_grad::try_infer_forward({x, y, dist_tensor_spec({4, 8, 12, 1}, m2)}).error().values[2] == 4);
static_assert(bmm_grad::try_infer_forward({x, y, dist_tensor_spec({1, 8, 12}, m2)}).error().values[2] == 1);
static_assert(bmm_grad::try_infer_forward({x, dist_tensor_spec({4, 15, 12}, m2), g}).error().values[1] == 15);
static_assert(bmm_grad::try_infer_forward({x, y, dist_tensor_spec({4, 9, 12}, m2)}).error().values[0] == 9);
static_assert(bmm_grad::try_infer_forward({x, y, dist_tensor_spec({4, 8, 13}, m2)}).error().values[0] == 13);
static_assert(bmm_grad::try_infer_forward({dist_tensor_spec({-1, 8, -1}, m2), y, dist_tensor_spec({4, -1, 12}, m2)}));
static_assert(bmm_grad::try_infer_forward({x, y}).kind() == error_kind::invalid_argument);
static_assert(bmm_grad::try_infer_backward({x, y, g}, {x, y}).kind() == error_kind::unimplemented);
