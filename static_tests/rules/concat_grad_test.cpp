#include <ctspmd/rules/concat_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::concat_grad;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m22({2, 2});
constexpr process_mesh m24({2, 4});

constexpr tensor_dist_attr partial_on(tensor_dist_attr a, std::int64_t m, reduce_type r = reduce_type::sum) {
  a.set_partial_status({m}, r);
  return a;
}

// ==== Paddle's spmd_rule_test.cc (ConcatGradInferSpmdDynamic), under phi ===========================
// mesh [2, 2]; x [16|4|2, 16, 16] [-1,0,1], [-1,1,0], [-1,-1,0]; out_grad [22, 16, 16] [-1,1,0]; axis 0
constexpr auto g1 = concat_grad::infer_forward({{{16, 16, 16}, {m22, {-1, 0, 1}}},
                                                {{4, 16, 16}, {m22, {-1, 1, 0}}},
                                                {{2, 16, 16}, {m22, {-1, -1, 0}}},
                                                {{22, 16, 16}, {m22, {-1, 1, 0}}}},
                                               {.axis = 0}, semantics::phi);
static_assert(g1.inputs.size() == 4 && g1.outputs.size() == 3);
static_assert(g1.inputs[0].dims_mapping() == dims_mapping{-1, 1, 0} && g1.inputs[2].dims_mapping() == dims_mapping{-1, 1, 0});
static_assert(g1.inputs[3].dims_mapping() == dims_mapping{-1, 1, 0});
static_assert(g1.outputs[0].dims_mapping() == dims_mapping{-1, 1, 0} && g1.outputs[2].dims_mapping() == dims_mapping{-1, 1, 0});
static_assert(!g1.outputs[0].is_partial());

// ==== fluid: first-wins with out_grad first ========================================================
constexpr auto f1 = concat_grad::infer_forward({{{16, 16}, {m24, {-1, -1}}}, {{4, 16}, {m24, {-1, 1}}}, {{20, 16}, {m24, {0, -1}}}},
                                               {.axis = 0});
// out_grad's concat axis is replicated; x2's mesh dim 1 on dim 1 is kept
static_assert(f1.inputs[2].dims_mapping() == dims_mapping{-1, 1} && f1.outputs[0].dims_mapping() == dims_mapping{-1, 1} &&
              f1.outputs[1].dims_mapping() == dims_mapping{-1, 1});
// two mesh dims on one axis: an error under fluid, aligned under phi
constexpr dist_tensor_spec a0({16, 16}, {m24, {-1, 0}}), a1({4, 16}, {m24, {-1, 1}}), ag({20, 16}, {m24, {-1, 1}});
static_assert(concat_grad::try_infer_forward({a0, a1, ag}, {.axis = 0}).kind() == error_kind::unimplemented);
constexpr auto p0 = concat_grad::infer_forward({a0, a1, ag}, {.axis = -2}, semantics::phi);
// mesh dim 0 disagrees (x1 shards dim 1 with it, the others do not): dim 1 is taken by mesh dim 1, so mesh dim 0
// goes nowhere; mesh dim 1 disagrees too and is assigned first to the cheapest free axis, dim 1
static_assert(p0.outputs[0].dims_mapping() == dims_mapping{-1, 0} || p0.outputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(p0.outputs[0] == p0.outputs[1] && p0.inputs[2].dims_mapping() == p0.outputs[0].dims_mapping());

// ==== partial out_grad kept on every gradient; x's partial status ignored ==========================
constexpr auto q1 = concat_grad::infer_forward(
    {{{16, 16}, partial_on({m24, {-1, -1}}, 0)}, {{4, 16}, {m24, {-1, 1}}}, {{20, 16}, partial_on({m24, {-1, 1}}, 0, reduce_type::max)}},
    {.axis = 0}, semantics::phi);
static_assert(!q1.inputs[0].is_partial() && q1.inputs[2].partial_dims() == mesh_dims{0});
static_assert(q1.outputs[0].partial_dims() == mesh_dims{0} && q1.outputs[0].partial_reduce_type(0) == reduce_type::max);
static_assert(q1.outputs[1].partial_dims() == mesh_dims{0} && q1.outputs[1].dims_mapping() == dims_mapping{-1, 1});
// a co-shard under fluid merges as a unit
constexpr process_mesh m3({2, 2, 2});
constexpr auto c1 = concat_grad::infer_forward({co(m3, {8, 4}, {{}, {}}), co(m3, {8, 4}, {{}, {}}), co(m3, {16, 4}, {{}, {0, 1}})},
                                               {.axis = 0});
static_assert(is(c1.outputs[0], {{}, {0, 1}}) && is(c1.outputs[1], {{}, {0, 1}}));

// ==== errors =======================================================================================
constexpr dist_tensor_spec x0({16, 16}, m24), x1({4, 16}, m24), g({20, 16}, m24);
static_assert(concat_grad::try_infer_forward({x0, x1, dist_tensor_spec({21, 16}, m24)}).error().values[2] == 20);
static_assert(concat_grad::try_infer_forward({x0, x1, dist_tensor_spec({-1, 16}, m24)}));
static_assert(concat_grad::try_infer_forward({x0, dist_tensor_spec({4, 8}, m24), g}).error().values[1] == 8);
static_assert(concat_grad::try_infer_forward({x0, x1, dist_tensor_spec({20, 8}, m24)}).error().values[1] == 8);
static_assert(concat_grad::try_infer_forward({x0, x1, dist_tensor_spec({20}, m24)}).error().values[1] == 1);
static_assert(concat_grad::try_infer_forward({x0, dist_tensor_spec({4}, m24), g}).error().values[0] == 2);
static_assert(concat_grad::try_infer_forward({x0, x1, g}, {.axis = 2}).kind() == error_kind::invalid_argument);
static_assert(concat_grad::try_infer_forward({x0, dist_tensor_spec({0x7fffffffffffffff, 16}, m24), g}).kind() ==
              error_kind::invalid_argument);
static_assert(concat_grad::try_infer_forward({g}).kind() == error_kind::invalid_argument);
static_assert(concat_grad::try_infer_backward({x0, x1, g}, {x0, x1}).kind() == error_kind::unimplemented);
