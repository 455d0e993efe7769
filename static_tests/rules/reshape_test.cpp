#include <ctspmd/rules/reshape.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::reshape;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr process_mesh mesh234({2, 3, 4});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::on_mesh spec234{mesh234};
using error_values = std::array<std::int64_t, 4>;

// ==== target shape ==============================================================================
static_assert(reshape::infer_target_shape({2, 3, 4}, {6, 4}) == tensor_shape{6, 4});
static_assert(reshape::infer_target_shape({2, 3, 4}, {0, -1}) == tensor_shape{2, 12});
static_assert(reshape::infer_target_shape({2, 3, 4}, {-1, 0, 2}) == tensor_shape{4, 3, 2});
static_assert(reshape::infer_target_shape({2, 3, 4}, {-1}) == tensor_shape{24});
static_assert(reshape::infer_target_shape({1, 1}, {}) == tensor_shape{});
static_assert(reshape::infer_target_shape({}, {1, -1}) == tensor_shape{1, 1});
static_assert(reshape::infer_target_shape({0, 4}, {0, 2, 2}) == tensor_shape{0, 2, 2});
// dynamic source dims: copied by 0, they cancel and the count is checked
static_assert(reshape::infer_target_shape({-1, 4, 8}, {0, -1}) == tensor_shape{-1, 32});
static_assert(reshape::infer_target_shape({-1, -1, 4}, {0, 0, 2, 2}) == tensor_shape{-1, -1, 2, 2});
// not copied: the count is unknown and an inferred -1 is dynamic
static_assert(reshape::infer_target_shape({-1, 4, 8}, {-1, 32}) == tensor_shape{-1, 32});
static_assert(reshape::infer_target_shape({-1, 4, 8}, {-1, 2}) == tensor_shape{-1, 2});
static_assert(reshape::infer_target_shape({-1, 3}, {2, 5}) == tensor_shape{2, 5});  // not checkable
// which target dims are known to be the size of a source dim
static_assert(reshape::resolve_target({-1, 4, 8}, {0, -1})->same_size == static_vector<std::int64_t, max_rank>{0, -1});
static_assert(reshape::resolve_target({-1, 4, 8}, {-1, 32})->same_size == static_vector<std::int64_t, max_rank>{0, -1});
static_assert(reshape::resolve_target({-1, 4, 8}, {-1, 16})->same_size ==
              static_vector<std::int64_t, max_rank>{-1, -1});
static_assert(reshape::resolve_target({-1, -1, 8}, {-1, 8})->same_size ==
              static_vector<std::int64_t, max_rank>{-1, -1});  // two unknowns in one -1

// ==== forward ===================================================================================
// ---- flatten [2, 3, 4] -> [6, 4]: the first input of the flatten keeps its mesh dim ------------------
constexpr auto flat0 = reshape::infer_forward({spec({2, 3, 4}, {0, -1, -1})}, {.shape = {6, 4}});
static_assert(flat0.inputs.size() == 1 && flat0.outputs.size() == 1);
static_assert(flat0.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(flat0.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(flat0.outputs[0].process_mesh() == mesh && !flat0.outputs[0].is_partial());
constexpr auto flat1 = reshape::infer_forward({spec({2, 3, 4}, {-1, 1, 0})}, {.shape = {6, 4}});
static_assert(flat1.inputs[0].dims_mapping() == dims_mapping{-1, -1, 0});  // dim 1 resharded
static_assert(flat1.outputs[0].dims_mapping() == dims_mapping{-1, 0});
constexpr auto flat01 = reshape::infer_forward({spec({2, 3, 4}, {0, 1, -1})}, {.shape = {6, 4}});
static_assert(flat01.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(flat01.outputs[0].dims_mapping() == dims_mapping{0, -1});

// ---- split [6, 4] -> [2, 3, 4]: kept when the first piece divides by the mesh dim --------------------
constexpr auto split2 = reshape::infer_forward({spec234({6, 4}, {0, -1})}, {.shape = {2, 3, 4}});
static_assert(split2.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(split2.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
constexpr auto split3 = reshape::infer_forward({spec234({6, 4}, {1, -1})}, {.shape = {2, 3, 4}});
static_assert(split3.inputs[0].dims_mapping() == dims_mapping{-1, -1});  // 2 % 3 != 0
static_assert(split3.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
constexpr auto split4 = reshape::infer_forward({spec234({6, 4}, {2, -1})}, {.shape = {2, 3, 4}});
static_assert(split4.inputs[0].dims_mapping() == dims_mapping{-1, -1});  // 2 % 4 != 0
static_assert(split4.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
constexpr auto split3b = reshape::infer_forward({spec234({6, 4}, {1, 2})}, {.shape = {3, 2, 4}});
static_assert(split3b.inputs[0].dims_mapping() == dims_mapping{1, 2});  // 3 % 3 == 0
static_assert(split3b.outputs[0].dims_mapping() == dims_mapping{1, -1, 2});
constexpr auto split2b = reshape::infer_forward({spec234({6, 4}, {0, -1})}, {.shape = {3, 2, 4}});
static_assert(split2b.inputs[0].dims_mapping() == dims_mapping{-1, -1});  // 3 % 2 != 0
// many-to-many [6, 4] -> [3, 8]: only the first source dim can keep its mesh dim
constexpr auto m2m = reshape::infer_forward({spec({6, 4}, {1, 0})}, {.shape = {3, 8}});
static_assert(m2m.inputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(m2m.outputs[0].dims_mapping() == dims_mapping{1, -1});

// ---- singletons ----------------------------------------------------------------------------------
constexpr auto drop1 = reshape::infer_forward({spec({4, 1, 8}, {1, -1, 0})}, {.shape = {4, 8}});
static_assert(drop1.inputs[0].dims_mapping() == dims_mapping{1, -1, 0});
static_assert(drop1.outputs[0].dims_mapping() == dims_mapping{1, 0});
constexpr auto drop1_sharded = reshape::infer_forward({spec({4, 1, 8}, {-1, 0, -1})}, {.shape = {4, 8}});
static_assert(drop1_sharded.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
static_assert(drop1_sharded.outputs[0].dims_mapping() == dims_mapping{-1, -1});
constexpr auto add1 = reshape::infer_forward({spec({4, 8}, {0, 1})}, {.shape = {1, 4, 8}});
static_assert(add1.inputs[0].dims_mapping() == dims_mapping{0, 1});
static_assert(add1.outputs[0].dims_mapping() == dims_mapping{-1, 0, 1});

// ---- 0 and -1 in the target shape -------------------------------------------------------------------
constexpr auto zero_minus = reshape::infer_forward({spec({2, 3, 4}, {0, -1, 1})}, {.shape = {0, -1}});
static_assert(zero_minus.outputs[0].dims_mapping() == dims_mapping{0, -1});  // [2, 12]: dim 2 not first
static_assert(zero_minus.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
constexpr auto minus_zero = reshape::infer_forward({spec({6, 3, 4}, {0, 1, -1})}, {.shape = {-1, 0, 2, 2}});
static_assert(minus_zero.outputs[0].dims_mapping() == dims_mapping{0, 1, -1, -1});  // [6, 3, 2, 2]

// ---- dynamic source dims --------------------------------------------------------------------------------
constexpr auto dyn_copy = reshape::infer_forward({spec({-1, 4, 8}, {0, 1, -1})}, {.shape = {0, -1}});
static_assert(dyn_copy.inputs[0].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(dyn_copy.outputs[0].dims_mapping() == dims_mapping{0, 1});
constexpr auto dyn_infer = reshape::infer_forward({spec({-1, 4, 8}, {1, -1, 0})}, {.shape = {-1, 32}});
static_assert(dyn_infer.outputs[0].dims_mapping() == dims_mapping{1, -1});  // batch passes, 8 not first
static_assert(dyn_infer.inputs[0].dims_mapping() == dims_mapping{1, -1, -1});
constexpr auto dyn_split = reshape::infer_forward({spec({-1, 6}, {1, 0})}, {.shape = {0, 2, 3}});
static_assert(dyn_split.outputs[0].dims_mapping() == dims_mapping{1, 0, -1});
// not known to be the same size: one coarse group, whose first target size decides
constexpr auto dyn_coarse = reshape::infer_forward({spec({-1, 4, 8}, {0, -1, -1})}, {.shape = {-1, 16}});
static_assert(dyn_coarse.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1});  // first size unknown
static_assert(dyn_coarse.outputs[0].dims_mapping() == dims_mapping{-1, -1});
constexpr auto dyn_coarse2 = reshape::infer_forward({spec({-1, 6}, {0, -1})}, {.shape = {2, -1}});
static_assert(dyn_coarse2.inputs[0].dims_mapping() == dims_mapping{0, -1});  // first size 2
static_assert(dyn_coarse2.outputs[0].dims_mapping() == dims_mapping{0, -1});

// ---- partial input: passes through ------------------------------------------------------------------------
constexpr dist_tensor_spec partial_x = [] {
  tensor_dist_attr a(mesh, {-1, 1, -1});
  a.set_partial_status({0}, reduce_type::max);
  return dist_tensor_spec({2, 3, 4}, a);
}();
constexpr auto partial_fwd = reshape::infer_forward({partial_x}, {.shape = {2, 12}});
static_assert(partial_fwd.outputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(partial_fwd.outputs[0].partial_dims() == mesh_dims{0});
static_assert(partial_fwd.outputs[0].partial_reduce_type(0) == reduce_type::max);
static_assert(partial_fwd.inputs[0].partial_dims() == mesh_dims{0});

// ==== backward ==================================================================================
// a forward flatten is a backward split, and vice versa
constexpr auto back_flat =
    reshape::infer_backward({spec({2, 3, 4}, {-1, -1, -1})}, {spec({6, 4}, {0, 1})}, {.shape = {6, 4}});
static_assert(back_flat.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});  // 2 % 2 == 0
static_assert(back_flat.outputs[0].dims_mapping() == dims_mapping{0, 1});
constexpr auto back_flat3 =
    reshape::infer_backward({spec({2, 3, 4}, {-1, -1, -1})}, {spec({6, 4}, {1, 0})}, {.shape = {6, 4}});
static_assert(back_flat3.inputs[0].dims_mapping() == dims_mapping{-1, -1, 0});  // 2 % 3 != 0
static_assert(back_flat3.outputs[0].dims_mapping() == dims_mapping{-1, 0});     // output resharded
constexpr auto back_split =
    reshape::infer_backward({spec({6, 4}, {-1, -1})}, {spec({2, 3, 4}, {-1, 1, 0})}, {.shape = {2, 3, 4}});
static_assert(back_split.inputs[0].dims_mapping() == dims_mapping{-1, 0});
static_assert(back_split.outputs[0].dims_mapping() == dims_mapping{-1, -1, 0});
constexpr auto back_split0 =
    reshape::infer_backward({spec({6, 4}, {1, 0})}, {spec({2, 3, 4}, {0, -1, -1})}, {.shape = {2, 3, 4}});
static_assert(back_split0.inputs[0].dims_mapping() == dims_mapping{0, -1});  // x's own mapping ignored
static_assert(back_split0.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
constexpr auto back_ones =
    reshape::infer_backward({spec({4, 1, 8}, {-1, -1, -1})}, {spec({4, 8}, {1, 0})}, {.shape = {4, 8}});
static_assert(back_ones.inputs[0].dims_mapping() == dims_mapping{1, -1, 0});
constexpr auto back_dyn =
    reshape::infer_backward({spec({-1, 4, 8}, {-1, -1, -1})}, {spec({-1, 32}, {1, 0})}, {.shape = {0, -1}});
static_assert(back_dyn.inputs[0].dims_mapping() == dims_mapping{1, 0, -1});
static_assert(back_dyn.outputs[0].dims_mapping() == dims_mapping{1, 0});
constexpr auto back_dyn_infer =
    reshape::infer_backward({spec({-1, 4, 8}, {-1, -1, -1})}, {spec({-1, 32}, {1, 0})}, {.shape = {-1, 32}});
static_assert(back_dyn_infer.inputs[0].dims_mapping() == dims_mapping{1, 0, -1});
// an output with a size where the target shape has a dynamic one is accepted, and still matched
constexpr auto back_sized =
    reshape::infer_backward({spec({-1, 4, 8}, {-1, -1, -1})}, {spec({5, 32}, {1, -1})}, {.shape = {0, -1}});
static_assert(back_sized.inputs[0].dims_mapping() == dims_mapping{1, -1, -1});
// an output with -1 where the target shape knows the size: the known size is used
constexpr auto back_unknown =
    reshape::infer_backward({spec({2, 3, 4}, {-1, -1, -1})}, {spec({-1, 4}, {0, -1})}, {.shape = {6, 4}});
static_assert(back_unknown.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
// the output's partial status is kept; none is inferred for x
constexpr dist_tensor_spec partial_out = [] {
  tensor_dist_attr a(mesh, {-1, 1});
  a.set_partial_status({0});
  return dist_tensor_spec({6, 4}, a);
}();
constexpr auto back_partial =
    reshape::infer_backward({spec({2, 3, 4}, {-1, -1, -1})}, {partial_out}, {.shape = {6, 4}});
static_assert(back_partial.outputs[0] == partial_out.dist_attr());
static_assert(back_partial.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1} && !back_partial.inputs[0].is_partial());
// forward then backward agree
static_assert(reshape::infer_backward({spec({2, 3, 4}, {-1, -1, -1})}, {dist_tensor_spec({6, 4}, flat0.outputs[0])},
                                      {.shape = {6, 4}})
                  .inputs[0] == flat0.inputs[0]);

// ==== errors ====================================================================================
constexpr dist_tensor_spec x = spec({2, 3, 4}, {-1, -1, -1});
// two -1s
constexpr auto two_minus = reshape::try_infer_forward({x}, {.shape = {-1, 2, -1}});
static_assert(two_minus.kind() == error_kind::invalid_argument && two_minus.error().op == "reshape");
static_assert(two_minus.error().values == error_values{0, 2, 0, 0});
// a negative entry other than -1
constexpr auto negative = reshape::try_infer_forward({x}, {.shape = {6, -4}});
static_assert(negative.kind() == error_kind::invalid_argument && negative.error().values == error_values{1, -4, 0, 0});
// a 0 beyond the source rank
constexpr auto zero_beyond = reshape::try_infer_forward({x}, {.shape = {24, 1, 1, 0}});
static_assert(zero_beyond.kind() == error_kind::invalid_argument &&
              zero_beyond.error().values == error_values{3, 3, 3, 0});
// an inferred size that is not an integer
constexpr auto not_integer = reshape::try_infer_forward({x}, {.shape = {5, -1}});
static_assert(not_integer.kind() == error_kind::invalid_argument &&
              not_integer.error().values == error_values{1, 24, 5, 0});
constexpr auto zero_rest = reshape::try_infer_forward({spec({0, 4}, {-1, -1})}, {.shape = {0, -1}});
static_assert(zero_rest.kind() == error_kind::invalid_argument && zero_rest.error().values == error_values{1, 0, 0, 0});
// element counts that differ
constexpr auto count = reshape::try_infer_forward({x}, {.shape = {5, 5}});
static_assert(count.kind() == error_kind::invalid_argument && count.error().values == error_values{24, 25, 0, 0});
constexpr auto count_dyn = reshape::try_infer_forward({spec({-1, 4}, {-1, -1})}, {.shape = {0, 5}});
static_assert(count_dyn.kind() == error_kind::invalid_argument && count_dyn.error().values == error_values{4, 5, 0, 0});
static_assert(!reshape::try_infer_target_shape({2, 3, 4}, {}));  // scalar target of 24 elements
// element counts that overflow
static_assert(!reshape::try_infer_forward({spec({1LL << 40, 1LL << 40}, {-1, -1})}, {.shape = {-1}}));
static_assert(!reshape::try_infer_forward({x}, {.shape = {1LL << 40, 1LL << 40, -1}}));
// operand counts
static_assert(reshape::try_infer_forward({x, x}, {.shape = {24}}).error().values == error_values{1, 2, 0, 0});
static_assert(!reshape::try_infer_forward({}, {.shape = {24}}));
static_assert(!constant_evaluates<[] { return reshape::infer_forward({x}, {.shape = {5, 5}}); }>);
static_assert(!constant_evaluates<[] { return reshape::infer_target_shape({2, 3}, {-1, -1}); }>);

// ---- backward errors ---------------------------------------------------------------------------------------
constexpr auto back_rank = reshape::try_infer_backward({x}, {spec({24}, {-1})}, {.shape = {6, 4}});
static_assert(back_rank.kind() == error_kind::invalid_argument && back_rank.error().values == error_values{1, 2, 0, 0});
constexpr auto back_size = reshape::try_infer_backward({x}, {spec({4, 6}, {-1, -1})}, {.shape = {6, 4}});
static_assert(back_size.kind() == error_kind::invalid_argument && back_size.error().values == error_values{0, 4, 6, 0});
static_assert(reshape::try_infer_backward({x}, {spec({6, 4}, {-1, -1})}, {.shape = {5, 5}}).error().values ==
              error_values{24, 25, 0, 0});  // the attribute is checked backward too
static_assert(!reshape::try_infer_backward({x}, {}, {.shape = {24}}));
static_assert(!reshape::try_infer_backward({}, {spec({24}, {-1})}, {.shape = {24}}));
static_assert(!reshape::try_infer_backward({x}, {spec({24}, {-1}), spec({24}, {-1})}, {.shape = {24}}));

// ==== phi: the co-shard dim transformation (Paddle's reshape_co_shard_spmd_rule_test, mesh [2, 2]) ==
namespace phi_cases {
using ctspmd::rules::flatten;
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
constexpr process_mesh m22({2, 2});
/// True if reshaping x (mapping `from`) to `shape` under phi requires x as `x_needs` and gives `out`.
constexpr bool reshapes(tensor_shape x_shape, multi_dims_mapping from, static_vector<std::int64_t, max_rank> shape,
                        multi_dims_mapping x_needs, multi_dims_mapping out) {
  const auto r = reshape::infer_forward({co(m22, x_shape, from)}, {.shape = shape}, phi);
  return is(r.inputs[0], x_needs) && is(r.outputs[0], out);
}
static_assert(reshapes({4, 6, 8}, {{0}, {1}, {}}, {192}, {{0, 1}, {}, {}}, {{0, 1}}));
static_assert(reshapes({4, 6, 8}, {{}, {0}, {1}}, {192}, {{}, {}, {}}, {{}}));
static_assert(reshapes({4, 6, 8}, {{0, 1}, {}, {}}, {192}, {{0, 1}, {}, {}}, {{0, 1}}));
static_assert(reshapes({2, 12, 8}, {{0}, {1}, {}}, {192}, {{0}, {}, {}}, {{0}}));
static_assert(reshapes({192}, {{0, 1}}, {4, 6, 8}, {{0, 1}}, {{0, 1}, {}, {}}));
static_assert(reshapes({192}, {{0, 1}}, {6, 4, 8}, {{}}, {{}, {}, {}}));
static_assert(reshapes({4, 6, 8}, {{0}, {1}, {}}, {2, 12, 8}, {{0}, {}, {}}, {{0}, {}, {}}));
static_assert(reshapes({4, 6, 8}, {{0, 1}, {}, {}}, {2, 12, 8}, {{}, {}, {}}, {{}, {}, {}}));
static_assert(reshapes({4, 6, 8}, {{0}, {1}, {}}, {12, 2, 8}, {{0, 1}, {}, {}}, {{0, 1}, {}, {}}));
static_assert(reshapes({4, 6, 8}, {{0, 1}, {}, {}}, {12, 2, 8}, {{0, 1}, {}, {}}, {{0, 1}, {}, {}}));
static_assert(reshapes({4, 6, 8}, {{0}, {1}, {}}, {8, 6, 4}, {{0, 1}, {}, {}}, {{0, 1}, {}, {}}));
static_assert(reshapes({4, 6, 8}, {{}, {0}, {1}}, {8, 6, 4}, {{}, {}, {}}, {{}, {}, {}}));
static_assert(reshapes({4, 6, 8}, {{0}, {}, {1}}, {8, 6, 4}, {{0}, {}, {}}, {{0}, {}, {}}));
static_assert(reshapes({4, 6, 8}, {{0, 1}, {}, {}}, {8, 6, 4}, {{0, 1}, {}, {}}, {{0, 1}, {}, {}}));
static_assert(reshapes({4, 6, 8}, {{}, {}, {0, 1}}, {24, 2, 4}, {{}, {}, {}}, {{}, {}, {}}));
static_assert(reshapes({4, 6, 8}, {{}, {}, {0, 1}}, {24, 4, 2}, {{}, {}, {0, 1}}, {{}, {0, 1}, {}}));
// a mesh dim moves onto the group's first dim only if that dim's size stays divisible (phi
// checks only the split's first piece, and would give [2, 4, 5]'s first dim [1, 0])
static_assert(reshapes({2, 4, 5}, {{1}, {0}, {}}, {4, 2, 5}, {{1}, {}, {}}, {{1}, {}, {}}));
// fluid keeps only the first dim's mesh dims through a flatten
static_assert(is(reshape::infer_forward({co(m22, {4, 6, 8}, {{0}, {1}, {}})}, {.shape = {192}}).outputs[0], {{0}}));
// partial status passes through under phi too
constexpr dist_tensor_spec partial_co = [] {
  tensor_dist_attr a(m22, {{0}, {}});
  a.set_partial_status({1});
  return dist_tensor_spec({4, 6}, a);
}();
static_assert(reshape::infer_forward({partial_co}, {.shape = {24}}, phi).outputs[0].partial_dims() == mesh_dims{1});
// backward: the same algorithm from the output
constexpr auto back = reshape::infer_backward({co(m22, {4, 6, 8}, {{}, {}, {}})}, {co(m22, {192}, {{0, 1}})},
                                              {.shape = {192}}, phi);
static_assert(is(back.inputs[0], {{0, 1}, {}, {}}) && is(back.outputs[0], {{0, 1}}));

// ==== flatten: a reshape of [start_axis, stop_axis] into one dim ====================================
constexpr process_mesh m24({2, 4});
static_assert(is(flatten::infer_forward({co(m22, {4, 6, 8}, {{0}, {1}, {}})}, {.start_axis = 0, .stop_axis = 1}).outputs[0],
                 {{0}, {}}));
static_assert(is(flatten::infer_forward({co(m22, {4, 6, 8}, {{0}, {1}, {}})}, {.start_axis = 0, .stop_axis = 1}, phi)
                     .outputs[0],
                 {{0, 1}, {}}));
// Paddle's test_flatten_rule: everything flattened, [1, 0, -1, -1] on [2, 4]
constexpr auto all_fluid = flatten::infer_forward({co(m24, {8, 16, 8, 24}, {{1}, {0}, {}, {}})});
static_assert(is(all_fluid.outputs[0], {{1}}) && is(all_fluid.inputs[0], {{1}, {}, {}, {}}));
constexpr auto all_phi = flatten::infer_forward({co(m24, {8, 16, 8, 24}, {{1}, {0}, {}, {}})}, {}, phi);
static_assert(is(all_phi.outputs[0], {{1, 0}}) && is(all_phi.inputs[0], {{1, 0}, {}, {}, {}}));
// the dims outside the range keep their mappings, even of unknown size
constexpr auto middle = flatten::infer_forward({co(m24, {-1, 4, 6, 8}, {{0}, {1}, {}, {}})}, {.start_axis = 1, .stop_axis = 2});
static_assert(is(middle.outputs[0], {{0}, {1}, {}}) && middle.outputs[0].rank() == 3);
static_assert(flatten::target_of({3, 4, 5}, {.start_axis = 1, .stop_axis = -1})->shape == tensor_shape{3, 20});
static_assert(flatten::target_of({}, {})->shape == tensor_shape{1});
static_assert(!flatten::target_of({3, 4, 5}, {.start_axis = 2, .stop_axis = 1}));
static_assert(!flatten::target_of({3, 4, 5}, {.start_axis = 3, .stop_axis = 3}));
constexpr auto flat_back = flatten::infer_backward({co(m24, {8, 16, 8}, {{}, {}, {}})}, {co(m24, {8, 128}, {{0}, {1}})},
                                                   {.start_axis = 1});
static_assert(is(flat_back.inputs[0], {{0}, {1}, {}}));
}  // namespace phi_cases
// flattened sizes whose product overflows int64 are an error, not undefined behaviour (found by fuzzing)
static_assert(!phi_cases::flatten::target_of({std::int64_t{1} << 62, 4}, {}));
