#include <ctspmd/rules/concat.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::concat;
using ctspmd_test::constant_evaluates;
using vals = std::array<std::int64_t, 4>;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

// ==== forward ===================================================================================
// ---- the inputs are merged, the concat axis replicated -------------------------------------------
constexpr auto two = concat::infer_forward({spec({4, 6}, {0, -1}), spec({4, 2}, {-1, 1})}, {.axis = 1});
static_assert(two.inputs.size() == 2 && two.outputs.size() == 1);
static_assert(two.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(two.inputs[1].dims_mapping() == dims_mapping{0, -1});  // its shard on the concat axis is dropped
static_assert(two.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(!two.outputs[0].is_partial() && two.outputs[0].process_mesh() == mesh);

// ---- a sharded concat axis, negative axis -----------------------------------------------------------
constexpr auto on_axis = concat::infer_forward({spec({4, 6}, {-1, 0}), spec({4, 6}, {-1, 0})}, {.axis = -1});
static_assert(on_axis.inputs[0].dims_mapping() == dims_mapping{-1, -1});
static_assert(on_axis.inputs[1].dims_mapping() == dims_mapping{-1, -1});
static_assert(on_axis.outputs[0].dims_mapping() == dims_mapping{-1, -1});

// ---- three inputs, each contributing a dim ------------------------------------------------------------
constexpr auto three =
    concat::infer_forward({spec({2, 4, 8}, {-1, 0, -1}), spec({3, 4, 8}, {-1, -1, 1}), spec({1, 4, 8}, {0, -1, -1})});
static_assert(three.inputs.size() == 3);
static_assert(three.inputs[0].dims_mapping() == dims_mapping{-1, 0, 1});
static_assert(three.inputs[1].dims_mapping() == dims_mapping{-1, 0, 1});
static_assert(three.inputs[2].dims_mapping() == dims_mapping{-1, 0, 1});
static_assert(three.outputs[0].dims_mapping() == dims_mapping{-1, 0, 1});

// ---- one input ------------------------------------------------------------------------------------------
constexpr auto one = concat::infer_forward({spec({4, 6}, {1, 0})});
static_assert(one.inputs[0].dims_mapping() == dims_mapping{-1, 0});
static_assert(one.outputs[0].dims_mapping() == dims_mapping{-1, 0});

// ---- sizes unknown until run time are not compared ------------------------------------------------------
static_assert(concat::infer_forward({spec({-1, 6}, {0, -1}), spec({4, 6}, {-1, -1})}, {.axis = 1}).outputs.size() == 1);
static_assert(concat::infer_forward({spec({4, -1}, {0, -1}), spec({4, 6}, {-1, -1})}).outputs.size() == 1);

// ---- conflicts: one mesh dim on two axes keeps the first claimant (merge_conflicts = true) -------------
constexpr auto a_first =
    concat::infer_forward({spec({4, 6, 8}, {0, -1, -1}), spec({4, 6, 8}, {-1, 0, -1})}, {.axis = 2});
static_assert(a_first.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(a_first.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(a_first.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
constexpr auto b_first =
    concat::infer_forward({spec({4, 6, 8}, {-1, 0, -1}), spec({4, 6, 8}, {0, -1, -1})}, {.axis = 2});
static_assert(b_first.inputs[1].dims_mapping() == dims_mapping{-1, 0, -1});
static_assert(b_first.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
// ... and one axis on two mesh dims is unimplemented.
constexpr auto two_dims = concat::try_infer_forward({spec({4, 6}, {0, -1}), spec({4, 6}, {1, -1})}, {.axis = 1});
static_assert(two_dims.kind() == error_kind::unimplemented && two_dims.error().op == "concat");
static_assert(two_dims.error().values == vals{'a', 1, 0, 0});

// ---- partial inputs ---------------------------------------------------------------------------------------
// The same partial status everywhere is kept: the output is partial alike.
constexpr auto all_partial =
    concat::infer_forward({partial_spec({4, 6}, {-1, 1}, {0}), partial_spec({4, 2}, {1, -1}, {0})}, {.axis = 1});
static_assert(all_partial.inputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(all_partial.inputs[1].dims_mapping() == dims_mapping{1, -1});
static_assert(all_partial.inputs[0].partial_dims() == mesh_dims{0});
static_assert(all_partial.inputs[1].partial_dims() == mesh_dims{0});
static_assert(all_partial.outputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(all_partial.outputs[0].partial_dims() == mesh_dims{0});
static_assert(all_partial.outputs[0].partial_reduce_type(0) == reduce_type::sum);
constexpr auto all_max = concat::infer_forward(
    {partial_spec({4, 6}, {-1, -1}, {0}, reduce_type::max), partial_spec({4, 6}, {-1, -1}, {0}, reduce_type::max)});
static_assert(all_max.outputs[0].partial_reduce_type(0) == reduce_type::max);
// Only the mesh dims every input is partial on, with the same reduce type, stay partial.
constexpr auto common =
    concat::infer_forward({partial_spec({4, 6}, {-1, -1}, {0, 1}), partial_spec({4, 6}, {-1, -1}, {1})}, {.axis = 1});
static_assert(common.inputs[0].partial_dims() == mesh_dims{1} && common.inputs[1].partial_dims() == mesh_dims{1});
static_assert(common.outputs[0].partial_dims() == mesh_dims{1});
constexpr auto mixed_types = concat::infer_forward(
    {partial_spec({4, 6}, {-1, -1}, {0}, reduce_type::sum), partial_spec({4, 6}, {-1, -1}, {0}, reduce_type::max)});
static_assert(!mixed_types.inputs[0].is_partial() && !mixed_types.inputs[1].is_partial());
static_assert(!mixed_types.outputs[0].is_partial());
constexpr auto one_partial =
    concat::infer_forward({partial_spec({4, 6}, {-1, -1}, {0}), spec({4, 6}, {0, -1})}, {.axis = 1});
static_assert(!one_partial.inputs[0].is_partial() && !one_partial.outputs[0].is_partial());
static_assert(one_partial.inputs[0].dims_mapping() == dims_mapping{0, -1});  // sharded where it was partial
static_assert(one_partial.outputs[0].dims_mapping() == dims_mapping{0, -1});

// ---- errors -------------------------------------------------------------------------------------------------
constexpr auto none = concat::try_infer_forward(std::initializer_list<dist_tensor_spec>{});
static_assert(none.kind() == error_kind::invalid_argument && none.error().op == "concat");
constexpr auto ranks = concat::try_infer_forward({spec({4, 6}, {-1, -1}), spec({4, 6, 1}, {-1, -1, -1})});
static_assert(ranks.kind() == error_kind::invalid_argument && ranks.error().values == vals{1, 3, 2, 0});
constexpr auto axis_high = concat::try_infer_forward({spec({4, 6}, {-1, -1})}, {.axis = 2});
static_assert(axis_high.kind() == error_kind::invalid_argument && axis_high.error().values == vals{2, 2, 0, 0});
constexpr auto axis_low = concat::try_infer_forward({spec({4, 6}, {-1, -1})}, {.axis = -3});
static_assert(axis_low.kind() == error_kind::invalid_argument && axis_low.error().values == vals{-3, 2, 0, 0});
static_assert(concat::try_infer_forward({spec({}, {})}).error().values == vals{0, 0, 0, 0});  // rank 0
constexpr auto sizes =
    concat::try_infer_forward({spec({4, 6}, {-1, -1}), spec({4, 2}, {-1, -1}), spec({5, 2}, {-1, -1})}, {.axis = 1});
static_assert(sizes.kind() == error_kind::invalid_argument && sizes.error().values == vals{2, 5, 0, 4});
static_assert(concat::try_infer_forward({spec({4, 6}, {-1, -1}), spec({4, 6}, {-1, -1})}, {.axis = 0}).ok());
static_assert(!concat::try_infer_forward({spec({4, 6}, {-1, -1}), spec({4, 7}, {-1, -1})}, {.axis = 0}));
static_assert(!concat::try_infer_forward({spec({4}, {-1}), dist_tensor_spec({4}, process_mesh({6}))}));
static_assert(!constant_evaluates<[] {
  return concat::infer_forward({spec({4, 6}, {0, -1}), spec({5, 6}, {0, -1})}, {.axis = 1});
}>);
static_assert(constant_evaluates<[] { return concat::infer_forward({spec({4, 6}, {0, -1}), spec({5, 6}, {0, -1})}); }>);

// ==== backward ==================================================================================
constexpr dist_tensor_spec x0 = spec({4, 6}, {-1, -1});
constexpr dist_tensor_spec x1 = spec({4, 2}, {1, 0});

// ---- the output's mapping, concat axis replicated, goes to every input ------------------------------------
constexpr auto back = concat::infer_backward({x0, x1}, {spec({4, 8}, {0, 1})}, {.axis = 1});
static_assert(back.inputs.size() == 2 && back.outputs.size() == 1);
static_assert(back.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(back.inputs[1].dims_mapping() == dims_mapping{0, -1});  // its own mapping does not count
static_assert(back.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(!back.inputs[0].is_partial());

constexpr auto back_neg = concat::infer_backward({spec({2, 4, 8}, {-1, -1, -1}), spec({3, 4, 8}, {-1, -1, -1})},
                                                 {spec({5, 4, 8}, {1, -1, 0})}, {.axis = -3});
static_assert(back_neg.inputs[0].dims_mapping() == dims_mapping{-1, -1, 0});
static_assert(back_neg.inputs[1].dims_mapping() == dims_mapping{-1, -1, 0});
static_assert(back_neg.outputs[0].dims_mapping() == dims_mapping{-1, -1, 0});

// ---- a partial output comes back as merged, without partial status; the inputs are not partial ------------
constexpr auto back_partial = concat::infer_backward({x0, x1}, {partial_spec({4, 8}, {1, -1}, {0})}, {.axis = 1});
static_assert(back_partial.outputs[0].dims_mapping() == dims_mapping{1, -1} && !back_partial.outputs[0].is_partial());
static_assert(back_partial.inputs[1].dims_mapping() == dims_mapping{1, -1} && !back_partial.inputs[1].is_partial());

// ---- forward then backward gives forward's inputs ------------------------------------------------------------
constexpr auto fwd = concat::infer_forward({spec({4, 6}, {1, 0}), spec({4, 6}, {-1, -1})});
constexpr auto fwd_back =
    concat::infer_backward({spec({4, 6}, {1, 0}), spec({4, 6}, {-1, -1})}, {dist_tensor_spec({8, 6}, fwd.outputs[0])});
static_assert(fwd_back.inputs[0] == fwd.inputs[0] && fwd_back.inputs[1] == fwd.inputs[1]);
static_assert(fwd.inputs[1].dims_mapping() == dims_mapping{-1, 0});

// ---- errors -------------------------------------------------------------------------------------------------
constexpr auto no_output = concat::try_infer_backward({x0, x1}, {}, {.axis = 1});
static_assert(no_output.kind() == error_kind::invalid_argument && no_output.error().values == vals{1, 0, 0, 0});
static_assert(!concat::try_infer_backward({x0, x1}, {spec({4, 8}, {-1, -1}), spec({4, 8}, {-1, -1})}, {.axis = 1}));
constexpr auto out_rank = concat::try_infer_backward({x0, x1}, {spec({32}, {-1})}, {.axis = 1});
static_assert(out_rank.kind() == error_kind::invalid_argument && out_rank.error().values == vals{1, 2, 0, 0});
static_assert(concat::try_infer_backward({x0, x1}, {spec({4, 8}, {-1, -1})}).error().values == vals{1, 2, 1, 6});
static_assert(!concat::try_infer_backward({}, {spec({4, 8}, {-1, -1})}));
static_assert(!concat::try_infer_backward({x0, x1}, {spec({4, 8}, {-1, -1})}, {.axis = 2}));
static_assert(!constant_evaluates<[] { return concat::infer_backward({x0, x1}, {}, {.axis = 1}); }>);

// ==== phi: inputs aligned by cost (AlignDimsSharding) =================================================
namespace phi_cases {
using ctspmd::rules::stack;
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
constexpr process_mesh m22({2, 2});
constexpr process_mesh m24({2, 4});
// Paddle's test_concat_rule: both mesh dims disputed; each goes to the cheapest axis
constexpr auto disputed = concat::infer_forward(
    {co(m22, {16, 16, 16}, {{}, {0}, {1}}), co(m22, {4, 16, 16}, {{}, {1}, {0}}), co(m22, {2, 16, 16}, {{}, {}, {0}})}, {},
    phi);
static_assert(is(disputed.inputs[0], {{}, {1}, {0}}) && is(disputed.inputs[1], {{}, {1}, {0}}) &&
              is(disputed.inputs[2], {{}, {1}, {0}}) && is(disputed.outputs[0], {{}, {1}, {0}}));
constexpr auto disputed_back = concat::infer_backward(
    {co(m22, {16, 16, 16}, {{}, {0}, {1}}), co(m22, {4, 16, 16}, {{}, {1}, {0}}), co(m22, {2, 16, 16}, {{}, {}, {0}})},
    {co(m22, {22, 16, 16}, {{}, {1}, {0}})}, {}, phi);
static_assert(is(disputed_back.inputs[2], {{}, {1}, {0}}) && is(disputed_back.outputs[0], {{}, {1}, {0}}));
// a sharded concat axis is replicated backward (phi returns the output unchanged)
static_assert(is(concat::infer_backward({co(m22, {4, 8}, {{}, {}})}, {co(m22, {4, 8}, {{0}, {1}})}, {}, phi).outputs[0],
                 {{}, {1}}));
// partial: kept, on the output too, when every input is partial with sum or avg; any other type
// is dropped under phi (fluid keeps any type all inputs share)
constexpr auto sums = concat::infer_forward({partial_spec({4, 6}, {-1, 0}, {1}), partial_spec({2, 6}, {-1, 0}, {1})}, {}, phi);
static_assert(sums.outputs[0].partial_dims() == mesh_dims{1} && sums.inputs[1].partial_dims() == mesh_dims{1});
constexpr auto maxes = concat::infer_forward(
    {partial_spec({4, 6}, {-1, 0}, {1}, reduce_type::max), partial_spec({2, 6}, {-1, 0}, {1}, reduce_type::max)}, {}, phi);
static_assert(!maxes.outputs[0].is_partial() && !maxes.inputs[0].is_partial());
static_assert(concat::infer_forward(
                  {partial_spec({4, 6}, {-1, 0}, {1}, reduce_type::max), partial_spec({2, 6}, {-1, 0}, {1}, reduce_type::max)})
                  .outputs[0]
                  .partial_dims() == mesh_dims{1});

// ==== stack ===========================================================================================
// Paddle's test_stack_rule
constexpr auto st = stack::infer_forward({co(m24, {2, 4}, {{0}, {}}), co(m24, {2, 4}, {{0}, {}})}, {.axis = -1}, phi);
static_assert(is(st.outputs[0], {{0}, {}, {}}) && is(st.inputs[1], {{0}, {}}));
constexpr auto st_back = stack::infer_backward({co(m24, {2, 4}, {{}, {}}), co(m24, {2, 4}, {{}, {}})},
                                               {co(m24, {2, 4, 2}, {{0}, {}, {}})}, {.axis = -1}, phi);
static_assert(is(st_back.inputs[0], {{0}, {}}) && is(st_back.inputs[1], {{0}, {}}));
// fluid: first-wins; the new dim is never sharded, at any position
constexpr auto st_fluid = stack::infer_forward({spec({6, 4}, {0, -1}), spec({6, 4}, {-1, 1})}, {.axis = 1});
static_assert(st_fluid.outputs[0].dims_mapping() == dims_mapping{0, -1, 1} &&
              st_fluid.inputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(stack::infer_forward({spec({6, 4}, {0, -1})}, {.axis = 0}).outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
static_assert(stack::try_infer_forward({spec({6, 4}, {-1, -1}), spec({6, 5}, {-1, -1})}).kind() == error_kind::invalid_argument);
static_assert(!stack::try_infer_forward({spec({6, 4}, {-1, -1})}, {.axis = 3}));
static_assert(!stack::try_infer_backward({spec({6, 4}, {-1, -1})}, {spec({6, 4}, {-1, -1})}));
}  // namespace phi_cases
