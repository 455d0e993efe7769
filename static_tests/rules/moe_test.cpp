#include <ctspmd/rules/moe.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr auto phi = semantics::phi;
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

static_assert(moe_gate_dispatch_attributes{}.k == 2 && moe_gate_dispatch_attributes{}.use_pad);

// ==== moe_gate_dispatch ==========================================================================
// Paddle's test_moe_gate_dispatch_rule: tokens sharded (x [S,H] [0,-1]) give y [E,C,H] with C
// sharded the same way (each device fills its own slots); the experts' logits stay whole.
constexpr auto gd = moe_gate_dispatch::infer_forward({spec({16, 32}, {0, 1}), spec({16, 8}, {0, -1})}, {.k = 2, .capacity = 4});
static_assert(gd.inputs.size() == 2 && gd.outputs.size() == 5);
static_assert(gd.inputs[0].dims_mapping() == dims_mapping{0, 1} && gd.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(gd.outputs[0].dims_mapping() == dims_mapping{-1, 0, 1});
static_assert(gd.outputs[1].dims_mapping() == dims_mapping{0, -1} && gd.outputs[2].dims_mapping() == dims_mapping{-1, 0});
static_assert(gd.outputs[3].dims_mapping() == dims_mapping{-1} && gd.outputs[4].dims_mapping() == dims_mapping{0, -1});
// expert_offset: each block's running count; the count over every token is their sum
static_assert(gd.outputs[3].partial_dims() == mesh_dims{0} && !gd.outputs[0].is_partial() && !gd.outputs[1].is_partial());
// the gate's tokens shard x too; its expert dim is gathered (a token's top-k reads every expert)
constexpr auto gd_e = moe_gate_dispatch::infer_forward({spec({16, 32}, {-1, -1}), spec({16, 8}, {1, 0})});
static_assert(gd_e.inputs[0].dims_mapping() == dims_mapping{1, -1} && gd_e.inputs[1].dims_mapping() == dims_mapping{1, -1});
static_assert(gd_e.outputs[0].dims_mapping() == dims_mapping{-1, 1, -1} && gd_e.outputs[3].partial_dims() == mesh_dims{1});
static_assert(!moe_gate_dispatch::infer_forward({partial_spec({16, 32}, {-1, 0}, 1), spec({16, 8}, {-1, -1})}).inputs[0].is_partial());
static_assert(is(moe_gate_dispatch::infer_forward({co(mesh, {16, 32}, {{1, 0}, {}}), spec({16, 8}, {-1, -1})}, {.capacity = 8}, phi)
                     .outputs[0],
                 {{}, {1, 0}, {}}));
static_assert(is(moe_gate_dispatch::infer_forward({co(mesh, {16, 6}, {{}, {1}}), spec({16, 8}, {-1, -1})}, {}, phi).outputs[0],
                 {{}, {}, {}}));  // 4 does not divide 6: dropped under phi
// expert_offset, the decision of issue 38 (moe.hpp): partial (sum) exactly on the mesh dims that
// split the tokens, under both semantics (Paddle: never partial); never sharded.
constexpr bool offset_partial_on(const spmd_info& r, const mesh_dims& want) {
  const auto& o = r.outputs[3];
  if (o.dims_mapping() != dims_mapping{-1} || o.partial_dims() != want || o.is_partial() == want.empty()) return false;
  for (const auto d : want)
    if (o.partial_reduce_type(d) != reduce_type::sum) return false;
  return true;
}
static_assert(offset_partial_on(moe_gate_dispatch::infer_forward({spec({16, 32}, {0, 1}), spec({16, 8}, {0, -1})},
                                                                 {.k = 2, .capacity = 4}, phi),
                                mesh_dims{0}));
// tokens whole (h split): every device counts every token, not partial
static_assert(offset_partial_on(moe_gate_dispatch::infer_forward({spec({16, 32}, {-1, 1}), spec({16, 8}, {-1, -1})}), {}));
static_assert(offset_partial_on(moe_gate_dispatch::infer_forward({spec({16, 32}, {-1, 1}), spec({16, 8}, {-1, -1})}, {}, phi), {}));
// phi: tokens co-sharded over both mesh dims: partial over both
static_assert(offset_partial_on(
    moe_gate_dispatch::infer_forward({co(mesh, {16, 32}, {{1, 0}, {}}), spec({16, 8}, {-1, -1})}, {.capacity = 8}, phi),
    mesh_dims{0, 1}));
// phi: 8 blocks do not divide 12 tokens, the last mesh dim is dropped: partial over the kept one
constexpr auto gd_drop =
    moe_gate_dispatch::infer_forward({co(mesh, {12, 32}, {{1, 0}, {}}), spec({12, 8}, {-1, -1})}, {.capacity = 4}, phi);
static_assert(is(gd_drop.inputs[0], {{1}, {}}) && offset_partial_on(gd_drop, mesh_dims{1}));
// the reverse: y's capacity dim over mesh dim 0 gives the tokens' blocks, so partial on it
static_assert(offset_partial_on(
    moe_gate_dispatch::infer_backward(
        {spec({16, 32}, {-1, -1}), spec({16, 8}, {-1, -1})},
        {spec({8, 4, 32}, {-1, 0, 1}), spec({16, 2}, {-1, -1}), spec({2, 16}, {-1, -1}), spec({8}, {-1}), spec({16, 2}, {-1, -1})},
        {.capacity = 4}, phi),
    mesh_dims{0}));
// reverse: y's capacity dim and h to x's tokens and h
constexpr auto gdb = moe_gate_dispatch::infer_backward(
    {spec({16, 32}, {-1, -1}), spec({16, 8}, {-1, -1})},
    {spec({8, 4, 32}, {-1, 0, 1}), spec({16, 2}, {-1, -1}), spec({2, 16}, {-1, -1}), spec({8}, {-1}), spec({16, 2}, {-1, -1})},
    {.capacity = 4});
static_assert(gdb.inputs[0].dims_mapping() == dims_mapping{0, 1} && gdb.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(gdb.outputs[0].dims_mapping() == dims_mapping{-1, 0, 1} && gdb.outputs[2].dims_mapping() == dims_mapping{-1, 0});
// an expert-sharded y is not what dispatch writes: its e is dropped
constexpr auto gdb_e = moe_gate_dispatch::infer_backward(
    {spec({16, 32}, {-1, -1}), spec({16, 8}, {-1, -1})},
    {spec({8, 4, 32}, {1, -1, -1}), spec({16, 2}, {-1, -1}), spec({2, 16}, {-1, -1}), spec({8}, {-1}), spec({16, 2}, {-1, -1})});
static_assert(gdb_e.inputs[0].dims_mapping() == dims_mapping{-1, -1} && gdb_e.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
// errors
constexpr auto gd_rank = moe_gate_dispatch::try_infer_forward({spec({16, 32, 2}, {-1, -1, -1}), spec({16, 8}, {-1, -1})});
static_assert(gd_rank.kind() == error_kind::invalid_argument && gd_rank.error().op == "moe_gate_dispatch");
static_assert(gd_rank.error().values == std::array<std::int64_t, 4>{0, 3, 2, 0});
constexpr auto gd_s = moe_gate_dispatch::try_infer_forward({spec({16, 32}, {-1, -1}), spec({12, 8}, {-1, -1})});
static_assert(gd_s.error().values == std::array<std::int64_t, 4>{0, 16, 0, 1});
constexpr auto gd_k = moe_gate_dispatch::try_infer_forward({spec({16, 32}, {-1, -1}), spec({16, 8}, {-1, -1})}, {.k = 9});
static_assert(gd_k.kind() == error_kind::invalid_argument && gd_k.error().values == std::array<std::int64_t, 4>{9, 8, 8, 0});
static_assert(!moe_gate_dispatch::try_infer_forward({spec({16, 32}, {-1, -1}), spec({16, 8}, {-1, -1})}, {.k = 0}));
// a capacity the token blocks cannot share evenly
constexpr auto gd_c = moe_gate_dispatch::try_infer_forward({spec({16, 32}, {1, -1}), spec({16, 8}, {-1, -1})}, {.capacity = 6});
static_assert(gd_c.kind() == error_kind::invalid_argument && gd_c.error().values == std::array<std::int64_t, 4>{6, 4, 0, 0});
static_assert(moe_gate_dispatch::try_infer_forward({spec({16, 32}, {-1, -1}), spec({16, 8}, {-1, -1})}, {.capacity = 6}));
static_assert(!moe_gate_dispatch::try_infer_backward({spec({16, 32}, {-1, -1}), spec({16, 8}, {-1, -1})},
                                                     {spec({8, 32}, {0, 1}), spec({16, 2}, {-1, -1}), spec({2, 16}, {-1, -1}),
                                                      spec({8}, {-1}), spec({16, 2}, {-1, -1})}));

// ==== moe_gate_dispatch_grad =====================================================================
// combine_weights [S,K], scatter_index [K,S], expert_id [S,K], grad_y [E,C,H], grad_combine_weights [S,K]
constexpr auto gdg = moe_gate_dispatch_grad::infer_forward(
    {spec({16, 2}, {0, 1}), spec({2, 16}, {-1, 0}), spec({16, 2}, {-1, -1}), spec({8, 4, 32}, {-1, 0, 1}),
     spec({16, 2}, {-1, -1})});
static_assert(gdg.inputs.size() == 5 && gdg.outputs.size() == 2);
static_assert(gdg.inputs[0].dims_mapping() == dims_mapping{0, -1} && gdg.inputs[1].dims_mapping() == dims_mapping{-1, 0});
// grad_y's capacity dim follows the tokens: each block reads its own slots' gradients
static_assert(gdg.inputs[3].dims_mapping() == dims_mapping{-1, 0, 1} && gdg.inputs[4].dims_mapping() == dims_mapping{0, -1});
static_assert(gdg.outputs[0].dims_mapping() == dims_mapping{0, 1} && gdg.outputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(!gdg.outputs[0].is_partial() && !gdg.outputs[1].is_partial());
static_assert(moe_gate_dispatch_grad::try_infer_backward({}, {}).kind() == error_kind::unimplemented ||
              !moe_gate_dispatch_grad::try_infer_backward({}, {}));
constexpr auto gdg_bad = moe_gate_dispatch_grad::try_infer_forward(
    {spec({16, 2}, {0, 1}), spec({2, 16}, {-1, 0}), spec({16, 2}, {-1, -1}), spec({8, 32}, {-1, 1}),
     spec({16, 2}, {-1, -1})});
static_assert(gdg_bad.error().values == std::array<std::int64_t, 4>{3, 2, 3, 0});
constexpr auto gdg_s = moe_gate_dispatch_grad::try_infer_forward(
    {spec({16, 2}, {0, 1}), spec({2, 12}, {-1, 0}), spec({16, 2}, {-1, -1}), spec({8, 4, 32}, {-1, 1, -1}),
     spec({16, 2}, {-1, -1})});
static_assert(gdg_s.error().values == std::array<std::int64_t, 4>{1, 12, 1, 0});
// a capacity the token blocks cannot share evenly
constexpr auto gdg_c = moe_gate_dispatch_grad::try_infer_forward(
    {spec({16, 2}, {1, -1}), spec({2, 16}, {-1, -1}), spec({16, 2}, {-1, -1}), spec({8, 6, 32}, {-1, -1, -1}),
     spec({16, 2}, {-1, -1})});
static_assert(gdg_c.kind() == error_kind::invalid_argument && gdg_c.error().values == std::array<std::int64_t, 4>{3, 6, 1, 4});
// (phi drops the tokens' mesh dim instead)
static_assert(moe_gate_dispatch_grad::infer_forward({spec({16, 2}, {1, -1}), spec({2, 16}, {-1, -1}), spec({16, 2}, {-1, -1}),
                                                     spec({8, 6, 32}, {-1, -1, -1}), spec({16, 2}, {-1, -1})},
                                                    {}, phi)
                  .outputs[0]
                  .dims_mapping() == dims_mapping{-1, -1});
static_assert(is(moe_gate_dispatch_grad::infer_forward({co(mesh, {16, 2}, {{1, 0}, {}}), spec({2, 16}, {-1, -1}),
                                                        spec({16, 2}, {-1, -1}), spec({8, 4, 32}, {-1, -1, -1}),
                                                        spec({16, 2}, {-1, -1})},
                                                       {}, phi)
                     .outputs[0],
                 {{1}, {}}));  // 8 blocks do not divide 4 slots; 4 do

// ==== moe_combine ================================================================================
// x [R,H], combine_weights [S,K], scatter_index [S,K]
// x's rows are each token block's own: bound to the tokens (Paddle's `sh`)
constexpr auto mc = moe_combine::infer_forward({spec({32, 16}, {-1, -1}), spec({16, 2}, {-1, -1}), spec({16, 2}, {1, -1})});
static_assert(mc.inputs[0].dims_mapping() == dims_mapping{1, -1} && mc.inputs[1].dims_mapping() == dims_mapping{1, -1});
static_assert(mc.outputs[0].dims_mapping() == dims_mapping{1, -1} && !mc.outputs[0].is_partial());
constexpr auto mc_x = moe_combine::infer_forward({spec({32, 16}, {0, -1}), spec({16, 2}, {-1, -1}), spec({16, 2}, {-1, -1})});
static_assert(mc_x.inputs[2].dims_mapping() == dims_mapping{0, -1} && mc_x.outputs[0].dims_mapping() == dims_mapping{0, -1});
// rows the token blocks cannot share evenly
constexpr auto mc_r = moe_combine::try_infer_forward({spec({30, 16}, {-1, -1}), spec({16, 2}, {1, -1}), spec({16, 2}, {-1, -1})});
static_assert(mc_r.kind() == error_kind::invalid_argument && mc_r.error().values == std::array<std::int64_t, 4>{0, 30, 0, 4});
// (phi drops the tokens' mesh dim instead)
static_assert(moe_combine::infer_forward({spec({30, 16}, {-1, -1}), spec({16, 2}, {1, -1}), spec({16, 2}, {-1, -1})}, {}, phi)
                  .outputs[0]
                  .dims_mapping() == dims_mapping{-1, -1});
// a sharded k: y partial on k's mesh dim (phi: always mesh dim 1), h stays sharded
constexpr auto mck = moe_combine::infer_forward({spec({32, 16}, {-1, 1}), spec({16, 2}, {-1, 0}), spec({16, 2}, {-1, -1})});
static_assert(mck.inputs[2].dims_mapping() == dims_mapping{-1, 0} && mck.outputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(mck.outputs[0].partial_dims() == mesh_dims{0});
static_assert(is(moe_combine::infer_forward({spec({32, 16}, {-1, -1}), spec({16, 2}, {0, -1}), spec({16, 2}, {1, -1})}, {}, phi)
                     .outputs[0],
                 {{1, 0}, {}}));
static_assert(moe_combine::try_infer_forward({spec({32, 16}, {-1, -1}), spec({16, 2}, {0, -1}), spec({16, 2}, {1, -1})})
                  .kind() == error_kind::unimplemented);
constexpr auto mcb = moe_combine::infer_backward({spec({32, 16}, {-1, -1}), spec({16, 2}, {-1, -1}), spec({16, 2}, {-1, -1})},
                                                 {spec({16, 16}, {0, 1})});
static_assert(mcb.inputs[0].dims_mapping() == dims_mapping{0, 1} && mcb.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(mcb.outputs[0].dims_mapping() == dims_mapping{0, 1});
constexpr auto mc_bad = moe_combine::try_infer_forward({spec({32, 16}, {-1, -1}), spec({16, 2}, {-1, -1}), spec({16, 3}, {-1, -1})});
static_assert(mc_bad.kind() == error_kind::invalid_argument && mc_bad.error().values == std::array<std::int64_t, 4>{2, 3, 1, 1});
static_assert(!moe_combine::try_infer_forward({spec({32}, {-1}), spec({16, 2}, {-1, -1}), spec({16, 2}, {-1, -1})}));
static_assert(!constant_evaluates<[] {
  return moe_combine::infer_forward({spec({32}, {-1}), spec({16, 2}, {-1, -1}), spec({16, 2}, {-1, -1})});
}>);

// ==== moe_combine_grad ===========================================================================
constexpr auto mcg = moe_combine_grad::infer_forward(
    {spec({32, 16}, {-1, -1}), spec({16, 2}, {0, -1}), spec({16, 2}, {-1, -1}), spec({16, 16}, {-1, 1})});
static_assert(mcg.inputs[0].dims_mapping() == dims_mapping{0, 1} && mcg.inputs[3].dims_mapping() == dims_mapping{0, 1});
static_assert(mcg.outputs.size() == 3);
// x_grad: each token block scatters into its own rows
static_assert(mcg.outputs[0].dims_mapping() == dims_mapping{0, 1} && !mcg.outputs[0].is_partial());
static_assert(mcg.outputs[1].dims_mapping() == dims_mapping{0, -1} && mcg.outputs[1].partial_dims() == mesh_dims{1});
// a sharded k: each device scatters its slots' share
constexpr auto mcg_k = moe_combine_grad::infer_forward(
    {spec({32, 16}, {-1, -1}), spec({16, 2}, {-1, 0}), spec({16, 2}, {-1, -1}), spec({16, 16}, {-1, 1})});
static_assert(mcg_k.outputs[0].dims_mapping() == dims_mapping{-1, 1} && mcg_k.outputs[0].partial_dims() == mesh_dims{0});
static_assert(mcg_k.outputs[1].dims_mapping() == dims_mapping{-1, 0} && mcg_k.outputs[1].partial_dims() == mesh_dims{1});
static_assert(mcg.outputs[2].dims_mapping() == dims_mapping{0, -1} && !mcg.outputs[2].is_partial());
constexpr auto mcg_bad = moe_combine_grad::try_infer_forward(
    {spec({32, 16}, {-1, -1}), spec({16, 2}, {0, -1}), spec({16, 2}, {-1, -1}), spec({16, 8}, {-1, 1})});
static_assert(mcg_bad.error().values == std::array<std::int64_t, 4>{3, 8, 1, 0});
static_assert(moe_combine_grad::try_infer_backward({}, {}).error().kind == error_kind::invalid_argument ||
              !moe_combine_grad::try_infer_backward({}, {}));
