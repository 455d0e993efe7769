#include <ctspmd/rules/split.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::split;
using ctspmd_test::constant_evaluates;
using vals = std::array<std::int64_t, 4>;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};

// ==== forward ===================================================================================
// ---- num: the split axis is replicated, the other dims unchanged ----------------------------------
constexpr auto by_num = split::infer_forward({spec({6, 8}, {0, 1})}, {.num = 2, .axis = 1});
static_assert(by_num.inputs.size() == 1 && by_num.outputs.size() == 2);
static_assert(by_num.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(by_num.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(by_num.outputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(!by_num.inputs[0].is_partial() && !by_num.outputs[0].is_partial());
static_assert(by_num.outputs[1].process_mesh() == mesh);

// ---- sections with one inferred entry, negative axis ----------------------------------------------
constexpr auto by_sections = split::infer_forward({spec({4, 6, 8}, {-1, 0, 1})}, {.sections = {2, -1, 3}, .axis = -1});
static_assert(by_sections.outputs.size() == 3);
static_assert(by_sections.inputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
static_assert(by_sections.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
static_assert(by_sections.outputs[2].dims_mapping() == dims_mapping{-1, 0, -1});

// ---- an unsharded split axis changes nothing ------------------------------------------------------
constexpr auto unsharded = split::infer_forward({spec({6, 9}, {1, -1})}, {.num = 3, .axis = -1});
static_assert(unsharded.outputs.size() == 3 && unsharded.inputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(unsharded.outputs[2].dims_mapping() == dims_mapping{1, -1});

// ---- sizes unknown until run time are not checked; an inferred section may be 0 --------------------
static_assert(split::infer_forward({spec({-1, 8}, {0, -1})}, {.num = 4}).outputs.size() == 4);
static_assert(split::infer_forward({spec({-1, 8}, {0, -1})}, {.sections = {7, 1}}).outputs.size() == 2);
static_assert(split::infer_forward({spec({5, 8}, {-1, -1})}, {.sections = {5, -1}}).outputs.size() == 2);
static_assert(split::infer_forward({spec({0, 8}, {-1, -1})}, {.num = 3}).outputs.size() == 3);
static_assert(split::infer_forward({spec({32, 8}, {-1, -1})}, {.num = 16}).outputs.size() == max_operands);

// ---- a partial x stays partial, and so are the outputs (split commutes with the reduction) ---------
constexpr dist_tensor_spec partial_x = [] {
  tensor_dist_attr a(mesh, {-1, 1});
  a.set_partial_status({0}, reduce_type::max);
  return dist_tensor_spec({6, 8}, a);
}();
constexpr auto from_partial = split::infer_forward({partial_x}, {.num = 2, .axis = 1});
static_assert(from_partial.inputs[0].dims_mapping() == dims_mapping{-1, -1});
static_assert(from_partial.inputs[0].partial_dims() == mesh_dims{0});
static_assert(from_partial.inputs[0].partial_reduce_type(0) == reduce_type::max);
static_assert(from_partial.outputs[1].dims_mapping() == dims_mapping{-1, -1});
static_assert(from_partial.outputs[1].partial_dims() == mesh_dims{0});
static_assert(from_partial.outputs[1].partial_reduce_type(0) == reduce_type::max);

// ---- errors: the outputs' count ---------------------------------------------------------------------
constexpr auto neither = split::try_infer_forward({spec({6, 8}, {-1, -1})});
static_assert(neither.kind() == error_kind::invalid_argument && neither.error().op == "split");
static_assert(neither.error().values == vals{0, 0, 0, 0});
constexpr auto both = split::try_infer_forward({spec({6, 8}, {-1, -1})}, {.num = 2, .sections = {3, 3}});
static_assert(both.kind() == error_kind::invalid_argument && both.error().values == vals{2, 2, 0, 0});
constexpr auto negative_num = split::try_infer_forward({spec({6, 8}, {-1, -1})}, {.num = -2});
static_assert(negative_num.kind() == error_kind::invalid_argument && negative_num.error().values == vals{-2, 0, 0, 0});
constexpr auto too_many = split::try_infer_forward({spec({-1, 8}, {-1, -1})}, {.num = 17});
static_assert(too_many.kind() == error_kind::invalid_argument && too_many.error().values == vals{17, 16, 0, 0});

// ---- errors: sizes ----------------------------------------------------------------------------------
constexpr auto not_divisible = split::try_infer_forward({spec({6, 8}, {-1, -1})}, {.num = 4});
static_assert(not_divisible.kind() == error_kind::invalid_argument);
static_assert(not_divisible.error().values == vals{4, 6, 0, 0});  // num, size, axis
constexpr auto bad_sum = split::try_infer_forward({spec({6, 8}, {-1, -1})}, {.sections = {5, 4}, .axis = -1});
static_assert(bad_sum.kind() == error_kind::invalid_argument && bad_sum.error().values == vals{9, 1, 8, 0});
constexpr auto two_inferred = split::try_infer_forward({spec({6, 8}, {-1, -1})}, {.sections = {-1, 2, -1}});
static_assert(two_inferred.kind() == error_kind::invalid_argument && two_inferred.error().values == vals{0, 2, 0, 0});
constexpr auto bad_section = split::try_infer_forward({spec({6, 8}, {-1, -1})}, {.sections = {2, -3}});
static_assert(bad_section.kind() == error_kind::invalid_argument && bad_section.error().values == vals{1, -3, 0, 0});
constexpr auto over = split::try_infer_forward({spec({6, 8}, {-1, -1})}, {.sections = {4, 5, -1}});
static_assert(over.kind() == error_kind::invalid_argument && over.error().values == vals{9, 6, 0, 0});
static_assert(!split::try_infer_forward({spec({-1, 8}, {-1, -1})}, {.sections = {-1, -1}}));  // even if unknown

// ---- errors: axis and operands ----------------------------------------------------------------------
constexpr auto axis_high = split::try_infer_forward({spec({6, 8}, {-1, -1})}, {.num = 2, .axis = 2});
static_assert(axis_high.kind() == error_kind::invalid_argument && axis_high.error().values == vals{2, 2, 0, 0});
constexpr auto axis_low = split::try_infer_forward({spec({6, 8}, {-1, -1})}, {.num = 2, .axis = -3});
static_assert(axis_low.kind() == error_kind::invalid_argument && axis_low.error().values == vals{-3, 2, 0, 0});
static_assert(split::try_infer_forward({spec({}, {})}, {.num = 1}).error().values == vals{0, 0, 0, 0});  // rank 0
constexpr auto no_input = split::try_infer_forward(std::initializer_list<dist_tensor_spec>{}, {.num = 2});
static_assert(no_input.kind() == error_kind::invalid_argument && no_input.error().values == vals{1, 0, 0, 0});
static_assert(!split::try_infer_forward({spec({6}, {-1}), spec({6}, {-1})}, {.num = 2}));
static_assert(!constant_evaluates<[] { return split::infer_forward({spec({6, 8}, {0, -1})}, {.num = 4}); }>);
static_assert(constant_evaluates<[] { return split::infer_forward({spec({6, 8}, {0, -1})}, {.num = 3}); }>);

// ==== backward ==================================================================================
constexpr dist_tensor_spec x = spec({6, 8}, {-1, -1});
constexpr split::attributes halves{.num = 2, .axis = 1};

// ---- the outputs are merged; the split axis is replicated in x and in the outputs -----------------
constexpr auto back = split::infer_backward({x}, {spec({6, 4}, {0, -1}), spec({6, 4}, {-1, 1})}, halves);
static_assert(back.inputs.size() == 1 && back.outputs.size() == 2);
static_assert(back.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(back.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(back.outputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(!back.inputs[0].is_partial());

// x's own mapping does not count backward.
static_assert(split::infer_backward({spec({6, 8}, {1, 0})}, {spec({6, 4}, {-1, -1}), spec({6, 4}, {-1, -1})}, halves)
                  .inputs[0]
                  .dims_mapping() == dims_mapping{-1, -1});

// ---- conflicts: the split axis takes part in the merge as 'k' (Paddle's behaviour) ------------------
// 'k' (output 0, split axis 0) claims mesh dim 0 first, so 'b' loses it although 'k' is replicated.
constexpr auto k_first = split::infer_backward({x}, {spec({3, 8}, {0, -1}), spec({3, 8}, {-1, 0})}, {.num = 2});
static_assert(k_first.inputs[0].dims_mapping() == dims_mapping{-1, -1});
static_assert(k_first.outputs[1].dims_mapping() == dims_mapping{-1, -1});
// 'b' first: it keeps mesh dim 0.
constexpr auto b_first = split::infer_backward({x}, {spec({3, 8}, {-1, 0}), spec({3, 8}, {0, -1})}, {.num = 2});
static_assert(b_first.inputs[0].dims_mapping() == dims_mapping{-1, 0});
static_assert(b_first.outputs[0].dims_mapping() == dims_mapping{-1, 0});
static_assert(b_first.outputs[1].dims_mapping() == dims_mapping{-1, 0});
// One axis on two mesh dims is unimplemented.
constexpr auto two_dims = split::try_infer_backward({x}, {spec({6, 4}, {0, -1}), spec({6, 4}, {1, -1})}, halves);
static_assert(two_dims.kind() == error_kind::unimplemented && two_dims.error().op == "split");
static_assert(two_dims.error().values == vals{'a', 1, 0, 0});

// ---- a partial output: nothing partial is inferred, the outputs come back as merged -----------------
constexpr dist_tensor_spec partial_out = [] {
  tensor_dist_attr a(mesh, {-1, -1});
  a.set_partial_status({0});
  return dist_tensor_spec({6, 4}, a);
}();
constexpr auto back_partial = split::infer_backward({x}, {partial_out, spec({6, 4}, {0, -1})}, halves);
static_assert(back_partial.inputs[0].dims_mapping() == dims_mapping{0, -1} && !back_partial.inputs[0].is_partial());
static_assert(back_partial.outputs[0].dims_mapping() == dims_mapping{0, -1} && !back_partial.outputs[0].is_partial());

// ---- sections, negative axis ------------------------------------------------------------------------
constexpr auto back_sections =
    split::infer_backward({spec({4, 6, 8}, {-1, -1, -1})},
                          {spec({4, 6, 2}, {1, -1, 0}), spec({4, 6, 3}, {-1, -1, -1}), spec({4, 6, 3}, {-1, 0, -1})},
                          {.sections = {2, 3, 3}, .axis = -1});
static_assert(back_sections.inputs[0].dims_mapping() == dims_mapping{1, -1, -1});  // 'k' took mesh dim 0 first
static_assert(back_sections.outputs[2].dims_mapping() == dims_mapping{1, -1, -1});

// ---- forward then backward gives forward's x --------------------------------------------------------
static_assert(split::infer_backward({x},
                                    {dist_tensor_spec({6, 4}, by_num.outputs[0]),
                                     dist_tensor_spec({6, 4}, by_num.outputs[1])},
                                    halves)
                  .inputs[0] == by_num.inputs[0]);

// ---- errors -----------------------------------------------------------------------------------------
constexpr auto wrong_count = split::try_infer_backward({x}, {spec({6, 4}, {-1, -1})}, halves);
static_assert(wrong_count.kind() == error_kind::invalid_argument && wrong_count.error().values == vals{2, 1, 0, 0});
constexpr auto wrong_rank = split::try_infer_backward({x}, {spec({6, 4}, {-1, -1}), spec({24}, {-1})}, halves);
static_assert(wrong_rank.kind() == error_kind::invalid_argument && wrong_rank.error().values == vals{1, 1, 2, 0});
static_assert(split::try_infer_backward({x}, {spec({6, 4}, {-1, -1})}).error().values == vals{0, 0, 0, 0});
static_assert(!split::try_infer_backward({}, {spec({6, 4}, {-1, -1}), spec({6, 4}, {-1, -1})}, halves));
static_assert(!split::try_infer_backward({x}, {spec({6, 4}, {-1, -1}), spec({6, 4}, {-1, -1})}, {.num = 2, .axis = 5}));
static_assert(!constant_evaluates<[] { return split::infer_backward({x}, {spec({6, 4}, {-1, -1})}, halves); }>);

// ==== phi and co-shard ===============================================================================
namespace phi_cases {
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
constexpr process_mesh m22({2, 2});
constexpr auto co_split = split::infer_forward({co(m22, {8, 16}, {{0, 1}, {}})}, {.num = 2, .axis = 1}, phi);
static_assert(co_split.outputs.size() == 2 && is(co_split.outputs[1], {{0, 1}, {}}) && is(co_split.inputs[0], {{0, 1}, {}}));
static_assert(is(split::infer_forward({co(m22, {8, 16}, {{}, {0, 1}})}, {.num = 2, .axis = 1}, phi).inputs[0], {{}, {}}));
// split only selects elements: partial status stays (phi drops it on the outputs; we keep it, as under fluid)
static_assert(split::infer_forward({partial_x}, {.num = 2, .axis = 0}, phi).outputs[1].is_partial());
constexpr auto back = split::infer_backward({co(m22, {8, 16}, {{}, {}})}, {co(m22, {8, 8}, {{1}, {}}), co(m22, {8, 8}, {{}, {0}})},
                                            {.num = 2, .axis = 1}, phi);
static_assert(is(back.inputs[0], {{1}, {}}) && is(back.outputs[0], {{1}, {}}));
}  // namespace phi_cases
