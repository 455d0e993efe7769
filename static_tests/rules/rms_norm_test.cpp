// rms_norm / fused_rms_norm and rms_norm_grad (phi-semantics.md section 2: "x letters ijk... for
// dims 0..n-2, last dim '1'; x's last dim is forced to -1; invvar = first n-1 letters; scale forced
// [-1]. Reverse: merges out and invvar; x = out. Grad: AlignDimsSharding(x, invvar, out_grad) on the
// first n-1 axes (no partial); scale and scale_grad replicated, scale_grad Partial(sum) on every mesh
// dim that shards x's first n-1 dims; x_grad = aligned out_grad.").
#include <ctspmd/registry/rules_by_name.hpp>
#include <ctspmd/rules/rms_norm.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 2, 2});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};
constexpr dist_tensor_spec sc = spec({16}, {2});

static_assert(std::is_same_v<rule_for<"rms_norm">, rms_norm> && std::is_same_v<rule_for<"fused_rms_norm">, rms_norm>);
static_assert(std::is_same_v<rule_for<"rms_norm_grad">, rms_norm_grad>);
static_assert(rms_norm::attributes{}.epsilon == 1e-5);

// ==== forward =======================================================================================
constexpr auto f1 = rms_norm::infer_forward({spec({8, 4, 16}, {0, 1, 2}), sc});
static_assert(f1.inputs.size() == 2 && f1.outputs.size() == 2);
static_assert(f1.inputs[0].dims_mapping() == dims_mapping{0, 1, -1} && f1.inputs[1].dims_mapping() == dims_mapping{-1});
static_assert(f1.outputs[0].dims_mapping() == dims_mapping{0, 1, -1} && f1.outputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(!f1.outputs[0].is_partial() && !f1.outputs[1].is_partial());
static_assert(rms_norm::infer_forward({spec({8, 4, 16}, {0, 1, 2}), sc}, {}, semantics::phi) == f1);
// 1-D x: invvar is 0-D
constexpr auto f2 = rms_norm::infer_forward({spec({16}, {0}), sc});
static_assert(f2.inputs[0].dims_mapping() == dims_mapping{-1} && f2.outputs[1].rank() == 0);
// partial x is reduced first
constexpr auto f3 = rms_norm::infer_forward({partial_spec({8, 16}, {0, -1}, 1), sc});
static_assert(!f3.inputs[0].is_partial() && !f3.outputs[0].is_partial() && f3.outputs[1].dims_mapping() == dims_mapping{0});
// co-shard leading dim kept under both semantics; the last dim's co-shard dropped
static_assert(is(rms_norm::infer_forward({co(mesh, {8, 16}, {{1, 0}, {2}}), sc}).outputs[0], {{1, 0}, {}}));
static_assert(is(rms_norm::infer_forward({co(mesh, {8, 16}, {{1, 0}, {2}}), sc}, {}, semantics::phi).outputs[1], {{1, 0}}));

// ==== backward ======================================================================================
constexpr auto b1 = rms_norm::infer_backward({spec({8, 4, 16}, {-1, -1, -1}), sc},
                                             {spec({8, 4, 16}, {0, -1, 2}), spec({8, 4}, {-1, 1})});
static_assert(b1.inputs[0].dims_mapping() == dims_mapping{0, 1, -1} && b1.inputs[1].dims_mapping() == dims_mapping{-1});
static_assert(b1.outputs[0].dims_mapping() == dims_mapping{0, 1, -1} && b1.outputs[1].dims_mapping() == dims_mapping{0, 1});
// out and invvar disagree on one axis: fluid conflict, phi co-shard
constexpr dist_tensor_spec x2 = spec({8, 16}, {-1, -1});
static_assert(rms_norm::try_infer_backward({x2, sc}, {spec({8, 16}, {0, -1}), spec({8}, {1})}).kind() ==
              error_kind::unimplemented);
static_assert(is(rms_norm::infer_backward({x2, sc}, {spec({8, 16}, {0, -1}), spec({8}, {1})}, {}, semantics::phi).inputs[0],
                 {{0, 1}, {}}));

// ==== errors ========================================================================================
constexpr auto e1 = rms_norm::try_infer_forward({spec({8, 16}, {-1, -1}), spec({8}, {-1})});
static_assert(e1.kind() == error_kind::invalid_argument && e1.error().values[0] == 8 && e1.error().values[1] == 16);
constexpr auto e2 = rms_norm::try_infer_forward({spec({8, 16}, {-1, -1}), spec({8, 16}, {-1, -1})});
static_assert(e2.kind() == error_kind::invalid_argument && e2.error().values[0] == 2);
static_assert(rms_norm::try_infer_forward({spec({}, {}), spec({1}, {-1})}).kind() == error_kind::invalid_argument);
constexpr auto e3 = rms_norm::try_infer_backward({x2, sc}, {spec({8, 16}, {-1, -1}), spec({8, 1}, {-1, -1})});
static_assert(e3.kind() == error_kind::invalid_argument && e3.error().values[0] == 2 && e3.error().values[1] == 1);
static_assert(rms_norm::try_infer_backward({x2, sc}, {spec({4, 16}, {-1, -1}), spec({8}, {-1})}).error().values[0] == 4);
static_assert(!constant_evaluates<[] { return rms_norm::infer_forward({spec({8, 16}, {-1, -1}), spec({4}, {-1})}); }>);

// ==== grad ==========================================================================================
// the three agree: kept; scale_grad partial on the mesh dims of the leading dims
constexpr auto g1 = rms_norm_grad::infer_forward(
    {spec({8, 4, 16}, {0, 1, -1}), sc, spec({8, 4}, {0, 1}), partial_spec({8, 4, 16}, {0, 1, -1}, 2)});
static_assert(g1.inputs.size() == 4 && g1.outputs.size() == 2);
static_assert(g1.inputs[0].dims_mapping() == dims_mapping{0, 1, -1} && g1.inputs[1].dims_mapping() == dims_mapping{-1});
static_assert(g1.inputs[2].dims_mapping() == dims_mapping{0, 1} && g1.inputs[3].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(!g1.inputs[3].is_partial());
static_assert(g1.outputs[0].dims_mapping() == dims_mapping{0, 1, -1} && !g1.outputs[0].is_partial());
static_assert(g1.outputs[1].dims_mapping() == dims_mapping{-1} && g1.outputs[1].partial_dims() == mesh_dims{0, 1});
static_assert(rms_norm_grad::infer_forward({spec({8, 4, 16}, {0, 1, -1}), sc, spec({8, 4}, {0, 1}),
                                            partial_spec({8, 4, 16}, {0, 1, -1}, 2)},
                                           {}, semantics::phi) == g1);
// they disagree: phi aligns by cost (mesh dim 0 stays on a, mesh dim 1 goes to the free axis b),
// fluid merges first-wins (the same here)
constexpr auto g2 = rms_norm_grad::infer_forward(
    {spec({8, 4, 16}, {0, -1, 2}), sc, spec({8, 4}, {-1, 1}), spec({8, 4, 16}, {-1, -1, -1})}, {}, semantics::phi);
static_assert(g2.inputs[0].dims_mapping() == dims_mapping{0, 1, -1} && g2.inputs[3].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(g2.outputs[1].partial_dims() == mesh_dims{0, 1});
static_assert(rms_norm_grad::infer_forward(
                  {spec({8, 4, 16}, {0, -1, 2}), sc, spec({8, 4}, {-1, 1}), spec({8, 4, 16}, {-1, -1, -1})})
                  .inputs[2]
                  .dims_mapping() == dims_mapping{0, 1});
// nothing sharded: scale_grad not partial
static_assert(!rms_norm_grad::infer_forward({spec({8, 16}, {-1, 0}), sc, spec({8}, {-1}), spec({8, 16}, {-1, 0})})
                   .outputs[1]
                   .is_partial());
// errors
constexpr auto ge1 = rms_norm_grad::try_infer_forward({spec({8, 16}, {-1, -1}), sc, spec({8, 1}, {-1, -1}), spec({8, 16}, {-1, -1})});
static_assert(ge1.kind() == error_kind::invalid_argument && ge1.error().values[0] == 2 && ge1.error().values[1] == 1);
constexpr auto ge2 = rms_norm_grad::try_infer_forward({spec({8, 16}, {-1, -1}), sc, spec({8}, {-1}), spec({8, 8}, {-1, -1})});
static_assert(ge2.kind() == error_kind::invalid_argument && ge2.error().values[0] == 8 && ge2.error().values[1] == 1);
static_assert(rms_norm_grad::try_infer_backward({x2, sc, spec({8}, {-1}), x2}, {x2, sc}).kind() == error_kind::unimplemented);
