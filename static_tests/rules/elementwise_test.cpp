#include <ctspmd/rules/elementwise.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::elementwise;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr process_mesh mesh3({2, 2, 2});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::on_mesh spec3{mesh3};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

// ==== forward ===================================================================================
// ---- same shapes: the shardings of the two inputs are merged -----------------------------------
constexpr auto same = elementwise::infer_forward({spec({4, 8}, {0, -1}), spec({4, 8}, {-1, 1})});
static_assert(same.inputs.size() == 2 && same.outputs.size() == 1);
static_assert(same.inputs[0].dims_mapping() == dims_mapping{0, 1});
static_assert(same.inputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(same.outputs[0].dims_mapping() == dims_mapping{0, 1});
static_assert(!same.outputs[0].is_partial() && same.outputs[0].process_mesh() == mesh);

// ---- rank 2 against rank 4: the lower rank is right-aligned ("cd" in "abcd") --------------------
constexpr auto r4r2 = elementwise::infer_forward({spec({2, 3, 4, 8}, {0, -1, -1, 1}), spec({4, 8}, {-1, -1})});
static_assert(r4r2.inputs[0].dims_mapping() == dims_mapping{0, -1, -1, 1});
static_assert(r4r2.inputs[1].dims_mapping() == dims_mapping{-1, 1});
static_assert(r4r2.outputs[0].dims_mapping() == dims_mapping{0, -1, -1, 1});
constexpr auto r2r4 = elementwise::infer_forward({spec({4, 8}, {1, -1}), spec({2, 3, 4, 8}, {0, -1, -1, -1})});
static_assert(r2r4.inputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(r2r4.inputs[1].dims_mapping() == dims_mapping{0, -1, 1, -1});  // the rank-4 input is resharded
static_assert(r2r4.outputs[0].dims_mapping() == dims_mapping{0, -1, 1, -1});

// ---- size-1 dims on either side are broadcast ('1'): never sharded -------------------------------
constexpr auto ones = elementwise::infer_forward({spec({4, 1}, {0, 1}), spec({1, 8}, {-1, -1})});
static_assert(ones.inputs[0].dims_mapping() == dims_mapping{0, -1});  // its size-1 dim's shard is dropped
static_assert(ones.inputs[1].dims_mapping() == dims_mapping{-1, -1});
static_assert(ones.outputs[0].dims_mapping() == dims_mapping{0, -1});
constexpr auto ones2 = elementwise::infer_forward({spec({4, 1}, {0, -1}), spec({1, 8}, {-1, 1})});
static_assert(ones2.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(ones2.inputs[1].dims_mapping() == dims_mapping{-1, 1});
static_assert(ones2.outputs[0].dims_mapping() == dims_mapping{0, 1});
// An output dim where every input is broadcast (missing or size 1) is '1': replicated.
constexpr auto all_broadcast = elementwise::infer_forward({spec({8}, {0}), spec({1, 8}, {1, -1})});
static_assert(all_broadcast.inputs[0].dims_mapping() == dims_mapping{0});
static_assert(all_broadcast.inputs[1].dims_mapping() == dims_mapping{-1, 0});
static_assert(all_broadcast.outputs[0].dims_mapping() == dims_mapping{-1, 0});
// An unknown size (-1) is not a broadcast dim.
constexpr auto unknown = elementwise::infer_forward({spec({-1, 8}, {0, -1}), spec({4, 8}, {-1, 1})});
static_assert(unknown.outputs[0].dims_mapping() == dims_mapping{0, 1});
static_assert(unknown.inputs[0].dims_mapping() == dims_mapping{0, 1});

// ---- three inputs -----------------------------------------------------------------------------
constexpr auto three = elementwise::infer_forward(
    {spec3({2, 4, 8}, {0, -1, -1}), spec3({4, 8}, {-1, 1}), spec3({1, 4, 1}, {1, 2, -1})});
static_assert(three.inputs.size() == 3);
static_assert(three.inputs[0].dims_mapping() == dims_mapping{0, 2, 1});
static_assert(three.inputs[1].dims_mapping() == dims_mapping{2, 1});
static_assert(three.inputs[2].dims_mapping() == dims_mapping{-1, 2, -1});
static_assert(three.outputs[0].dims_mapping() == dims_mapping{0, 2, 1});

// ---- conflicts: a mesh dim on two axes keeps the first claimant (merge_conflicts = true) ---------
constexpr auto first_wins = elementwise::infer_forward({spec({4, 8}, {0, -1}), spec({4, 8}, {-1, 0})});
static_assert(first_wins.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(first_wins.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(first_wins.outputs[0].dims_mapping() == dims_mapping{0, -1});
// Across ranks: with the rank-2 input first its 'c' claims mesh dim 0 before the rank-4 input's 'a'.
constexpr auto x4 = spec({2, 3, 4, 8}, {0, -1, -1, -1});
constexpr auto y2 = spec({4, 8}, {0, -1});
static_assert(elementwise::infer_forward({x4, y2}).outputs[0].dims_mapping() == dims_mapping{0, -1, -1, -1});
static_assert(elementwise::infer_forward({x4, y2}).inputs[1].dims_mapping() == dims_mapping{-1, -1});
static_assert(elementwise::infer_forward({y2, x4}).outputs[0].dims_mapping() == dims_mapping{-1, -1, 0, -1});
static_assert(elementwise::infer_forward({y2, x4}).inputs[0].dims_mapping() == dims_mapping{0, -1});
// An axis on two mesh dims is unimplemented.
constexpr auto two_dims = elementwise::try_infer_forward({spec({4, 8}, {0, -1}), spec({4, 8}, {1, -1})});
static_assert(two_dims.kind() == error_kind::unimplemented && two_dims.error().op == "elementwise");
static_assert(two_dims.error().values == std::array<std::int64_t, 4>{'a', 1, 0, 0});
static_assert(elementwise::try_infer_forward({x4, spec({4, 8}, {-1, 1}), spec({8}, {0})}).kind() ==
              error_kind::unimplemented);  // 'd': 1 from the second input, 0 from the third

// ---- unary: no broadcast, size-1 dims keep their letter and their shard --------------------------
constexpr auto unary = elementwise::infer_forward({spec({4, 1, 8}, {0, 1, -1})});
static_assert(unary.inputs.size() == 1 && unary.inputs[0].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(unary.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});
constexpr auto scalar = elementwise::infer_forward({dist_tensor_spec({}, {mesh, {}})});
static_assert(scalar.outputs[0].dims_mapping() == dims_mapping{});
constexpr auto scalars = elementwise::infer_forward({dist_tensor_spec({}, {mesh, {}}), spec({4}, {1})});
static_assert(scalars.outputs[0].dims_mapping() == dims_mapping{1});
static_assert(scalars.inputs[0].dims_mapping() == dims_mapping{});

// ---- partial inputs are not propagated (as Paddle): inputs and output come back not partial ------
constexpr auto partial = elementwise::infer_forward({partial_spec({4, 8}, {0, -1}, 1), spec({4, 8}, {-1, -1})});
static_assert(!partial.inputs[0].is_partial() && partial.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(!partial.outputs[0].is_partial() && partial.outputs[0].dims_mapping() == dims_mapping{0, -1});

// ---- bad operands ----------------------------------------------------------------------------------
constexpr auto none = elementwise::try_infer_forward(std::span<const dist_tensor_spec>{});
static_assert(none.kind() == error_kind::invalid_argument && none.error().values[0] == 0);
constexpr auto mismatch = elementwise::try_infer_forward({spec({4, 8}, {-1, -1}), spec({4, 6}, {-1, -1})});
static_assert(mismatch.kind() == error_kind::invalid_argument);
static_assert(mismatch.error().values == std::array<std::int64_t, 4>{1, 6, 1, 8});  // input, size, dim, other size
static_assert(!elementwise::try_infer_forward({spec({3, 8}, {-1, -1}), spec({2, 3, 4, 8}, dims_mapping(4, -1))}));
static_assert(!elementwise::try_infer_forward({spec({4}, {-1}), dist_tensor_spec({4}, process_mesh({6}))}));
static_assert(!constant_evaluates<[] {
  return elementwise::infer_forward({spec({4, 8}, {0, -1}), spec({4, 8}, {1, -1})});
}>);
static_assert(constant_evaluates<[] { return elementwise::infer_forward({spec({4, 8}, {0, -1})}); }>);

// ==== backward ==================================================================================
constexpr auto back = elementwise::infer_backward({spec({2, 3, 4, 8}, dims_mapping(4, -1)), spec({4, 8}, {1, 0})},
                                                  {spec({2, 3, 4, 8}, {0, -1, -1, 1})});
static_assert(back.inputs.size() == 2 && back.outputs.size() == 1);
static_assert(back.inputs[0].dims_mapping() == dims_mapping{0, -1, -1, 1});
static_assert(back.inputs[1].dims_mapping() == dims_mapping{-1, 1});  // the inputs' own mappings do not count
static_assert(back.outputs[0].dims_mapping() == dims_mapping{0, -1, -1, 1});

// Size-1 input dims are replicated; an output dim where all inputs broadcast is replicated.
constexpr auto back_ones = elementwise::infer_backward({spec({4, 1}, {-1, -1}), spec({1, 8}, {-1, -1})},
                                                       {spec({4, 8}, {0, 1})});
static_assert(back_ones.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(back_ones.inputs[1].dims_mapping() == dims_mapping{-1, 1});
constexpr auto back_all = elementwise::infer_backward({spec({8}, {-1}), spec({1, 8}, {-1, -1})},
                                                      {spec({1, 8}, {0, 1})});
static_assert(back_all.inputs[0].dims_mapping() == dims_mapping{1});
static_assert(back_all.inputs[1].dims_mapping() == dims_mapping{-1, 1});
static_assert(back_all.outputs[0].dims_mapping() == dims_mapping{-1, 1});  // as the inferred inputs produce it

// Three inputs, and the fixpoint: forward of the inferred inputs gives the returned output.
constexpr auto back3 = elementwise::infer_backward(
    {spec3({2, 4, 8}, {-1, -1, -1}), spec3({4, 8}, {-1, -1}), spec3({1, 4, 1}, {-1, -1, -1})},
    {spec3({2, 4, 8}, {1, 0, 2})});
static_assert(back3.inputs[0].dims_mapping() == dims_mapping{1, 0, 2});
static_assert(back3.inputs[1].dims_mapping() == dims_mapping{0, 2});
static_assert(back3.inputs[2].dims_mapping() == dims_mapping{-1, 0, -1});
static_assert(elementwise::infer_forward({dist_tensor_spec({2, 4, 8}, back3.inputs[0]),
                                          dist_tensor_spec({4, 8}, back3.inputs[1]),
                                          dist_tensor_spec({1, 4, 1}, back3.inputs[2])})
                  .outputs[0] == back3.outputs[0]);

// Unary: a size-1 dim keeps its shard backward too.
constexpr auto back_unary = elementwise::infer_backward({spec({4, 1}, {-1, -1})}, {spec({4, 1}, {1, 0})});
static_assert(back_unary.inputs[0].dims_mapping() == dims_mapping{1, 0});

// A partial output: the inputs are not partial, nor is the output as they produce it.
constexpr auto back_partial = elementwise::infer_backward({spec({4, 8}, {-1, -1}), spec({8}, {-1})},
                                                          {partial_spec({4, 8}, {-1, 0}, 1)});
static_assert(back_partial.inputs[0].dims_mapping() == dims_mapping{-1, 0} && !back_partial.inputs[0].is_partial());
static_assert(back_partial.inputs[1].dims_mapping() == dims_mapping{0} && !back_partial.inputs[1].is_partial());
static_assert(back_partial.outputs[0].dims_mapping() == dims_mapping{-1, 0} && !back_partial.outputs[0].is_partial());

// Forward then backward agree.
constexpr auto fwd_x4y2 = elementwise::infer_forward({x4, y2});
constexpr auto back_x4y2 = elementwise::infer_backward({x4, y2}, {dist_tensor_spec({2, 3, 4, 8}, fwd_x4y2.outputs[0])});
static_assert(back_x4y2.inputs[0] == fwd_x4y2.inputs[0] && back_x4y2.inputs[1] == fwd_x4y2.inputs[1]);
static_assert(back_x4y2.outputs[0] == fwd_x4y2.outputs[0]);

// ---- bad operands ----------------------------------------------------------------------------------
constexpr auto back_rank = elementwise::try_infer_backward({spec({4, 8}, {-1, -1})}, {spec({4}, {-1})});
static_assert(back_rank.kind() == error_kind::invalid_argument && back_rank.error().values[0] == 1 &&
              back_rank.error().values[1] == 2);
constexpr auto back_size = elementwise::try_infer_backward({spec({4, 8}, {-1, -1}), spec({1, 8}, {-1, -1})},
                                                           {spec({4, 6}, {-1, -1})});
static_assert(back_size.kind() == error_kind::invalid_argument);
static_assert(back_size.error().values == std::array<std::int64_t, 4>{6, 1, 8, 0});  // size, dim, broadcast size
static_assert(elementwise::try_infer_backward({spec({4, 8}, {-1, -1})}, {spec({-1, 8}, {0, -1})}));  // unknown: ok
static_assert(!elementwise::try_infer_backward({spec({4, 8}, {-1, -1})}, {}));
static_assert(
    !elementwise::try_infer_backward({spec({4, 8}, {-1, -1})}, {spec({4, 8}, {-1, -1}), spec({4, 8}, {-1, -1})}));
static_assert(elementwise::try_infer_backward(std::span<const dist_tensor_spec>{},
                                              std::span<const dist_tensor_spec>{})
                  .kind() == error_kind::invalid_argument);
static_assert(
    !elementwise::try_infer_backward({spec({4, 8}, {-1, -1}), spec({4, 6}, {-1, -1})}, {spec({4, 8}, {-1, -1})}));
static_assert(!constant_evaluates<[] {
  return elementwise::infer_backward({spec({4, 8}, {-1, -1})}, {spec({4}, {-1})});
}>);

// ==== phi: the element-wise merge follows one input ==================================================
namespace phi_cases {
using ctspmd::rules::cast;
using ctspmd::rules::full_like;
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
constexpr process_mesh m22({2, 2});
constexpr process_mesh m24({2, 4});
// the co-sharded input is followed; the other adds no mesh dim already used
constexpr auto follow = elementwise::infer_forward({co(m22, {64, 64}, {{0}, {1}}), co(m22, {64, 64}, {{0, 1}, {}})}, {}, phi);
static_assert(is(follow.inputs[0], {{0, 1}, {}}) && is(follow.inputs[1], {{0, 1}, {}}) && is(follow.outputs[0], {{0, 1}, {}}));
// mesh dims nobody uses are added
constexpr auto fill = elementwise::infer_forward({co(m22, {64, 64}, {{0}, {}}), co(m22, {64, 64}, {{}, {1}})}, {}, phi);
static_assert(is(fill.outputs[0], {{0}, {1}}) && is(fill.inputs[0], {{0}, {1}}));
// broadcasting: right-aligned, a size-1 dim never sharded
constexpr auto bcast = elementwise::infer_forward({co(m24, {8, 16}, {{0}, {}}), co(m24, {16}, {{1}})}, {}, phi);
static_assert(is(bcast.outputs[0], {{0}, {1}}) && is(bcast.inputs[1], {{1}}));
constexpr auto ones = elementwise::infer_forward({co(m24, {8, 16}, {{0}, {}}), co(m24, {1, 16}, {{}, {1}})}, {}, phi);
static_assert(is(ones.outputs[0], {{0}, {1}}) && is(ones.inputs[1], {{}, {1}}));
// Paddle's test_elementwise_rule (flat) under phi: a follows x, the later claim on mesh dim 0 loses
static_assert(is(elementwise::infer_forward({co(m24, {64, 36}, {{0}, {}}), co(m24, {64, 36}, {{}, {0}})}, {}, phi).outputs[0],
                 {{0}, {}}));
// one input keeps its layout, even an uneven one (phi's element-wise rules never drop a given shard)
static_assert(is(elementwise::infer_forward({co(m24, {6, 8}, {{1}, {}})}, {}, phi).outputs[0], {{1}, {}}));
static_assert(is(elementwise::infer_forward({co(m24, {8, 8}, {{1, 0}, {}})}, {}, phi).outputs[0], {{1, 0}, {}}));
// backward: the output alone
constexpr auto back = elementwise::infer_backward({co(m22, {64, 64}, {{}, {}}), co(m22, {64}, {{}})},
                                                  {co(m22, {64, 64}, {{0, 1}, {}})}, {}, phi);
static_assert(is(back.inputs[0], {{0, 1}, {}}) && is(back.inputs[1], {{}}));

// ==== cast: partial status kept (both semantics); full_like: x as it is ===============================
constexpr auto cast_p = cast::infer_forward({partial_spec({4, 6}, {0, -1}, 1)});
static_assert(cast_p.inputs[0].partial_dims() == mesh_dims{1} && cast_p.outputs[0].partial_dims() == mesh_dims{1} &&
              cast_p.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(cast::infer_forward({partial_spec({4, 6}, {0, -1}, 1)}, {}, phi).outputs[0].partial_dims() == mesh_dims{1});
constexpr auto cast_back = cast::infer_backward({spec({4, 6}, {-1, -1})}, {partial_spec({4, 6}, {0, -1}, 1)});
static_assert(cast_back.inputs[0].partial_dims() == mesh_dims{1} && cast_back.inputs[0].dims_mapping() == dims_mapping{0, -1});
constexpr auto fl = full_like::infer_forward({partial_spec({4, 6}, {0, -1}, 1)}, {.value = 1.0});
static_assert(fl.inputs[0] == partial_spec({4, 6}, {0, -1}, 1).dist_attr() && !fl.outputs[0].is_partial() &&
              fl.outputs[0].dims_mapping() == dims_mapping{0, -1});
constexpr auto fl_back = full_like::infer_backward({spec({4, 6}, {-1, -1})}, {spec({4, 6}, {-1, 1})});
static_assert(fl_back.inputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(!full_like::try_infer_backward({spec({4, 6}, {-1, -1})}, {spec({24}, {-1})}));
}  // namespace phi_cases
