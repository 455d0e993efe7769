#include <ctspmd/rules/squeeze.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::squeeze;
using ctspmd::rules::unsqueeze;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr ctspmd_test::on_mesh spec{mesh};
using error_values = std::array<std::int64_t, 4>;
constexpr auto phi = semantics::phi;

/// True if the rule's forward (under `s`) requires x as `x_needs` and gives `out`.
template <class Rule>
constexpr bool fwd(const dist_tensor_spec& x, const typename Rule::attributes& a, dims_mapping x_needs, dims_mapping out,
                   semantics s = semantics::fluid) {
  const auto r = Rule::infer_forward({x}, a, s);
  return r.inputs.size() == 1 && r.outputs.size() == 1 && r.inputs[0].dims_mapping() == x_needs &&
         r.outputs[0].dims_mapping() == out;
}
/// True if the rule's backward from `o` gives x `x_gets` and the output `out`.
template <class Rule>
constexpr bool bwd(const dist_tensor_spec& x, const dist_tensor_spec& o, const typename Rule::attributes& a,
                   dims_mapping x_gets, dims_mapping out, semantics s = semantics::fluid) {
  const auto r = Rule::infer_backward({x}, {o}, a, s);
  return r.inputs[0].dims_mapping() == x_gets && r.outputs[0].dims_mapping() == out;
}

// ==== squeeze: Paddle's test_squeeze_rule.py (mesh [2, 4], x [1, 8, 1, 16]), both semantics ======
constexpr auto sx0 = spec({1, 8, 1, 16}, {-1, 0, -1, 1});
constexpr auto sx1 = spec({1, 8, 1, 16}, {-1, 1, -1, 0});
static_assert(fwd<squeeze>(sx0, {.axis = {0, 2}}, {-1, 0, -1, 1}, {0, 1}));
static_assert(fwd<squeeze>(sx0, {.axis = {1, 2}}, {-1, 0, -1, 1}, {-1, 0, 1}));  // size-8 dim 1 listed: kept
static_assert(fwd<squeeze>(sx0, {.axis = {-4}}, {-1, 0, -1, 1}, {0, -1, 1}));
static_assert(fwd<squeeze>(sx1, {.axis = {0, 2}}, {-1, 1, -1, 0}, {1, 0}));
static_assert(fwd<squeeze>(sx1, {.axis = {1, 2}}, {-1, 1, -1, 0}, {-1, 1, 0}));
static_assert(fwd<squeeze>(sx1, {.axis = {-4}}, {-1, 1, -1, 0}, {1, -1, 0}));
static_assert(fwd<squeeze>(sx1, {.axis = {-4}}, {-1, 1, -1, 0}, {1, -1, 0}, phi));
// a shard on a size-1 dim is dropped (x is required without it)
static_assert(fwd<squeeze>(spec({1, 8, 1, 16}, {-1, 0, 1, -1}), {.axis = {0, 1}}, {-1, 0, -1, -1}, {0, -1, -1}));
// empty axis: every size-1 dim
static_assert(fwd<squeeze>(sx0, {}, {-1, 0, -1, 1}, {0, 1}));
static_assert(fwd<squeeze>(sx0, {}, {-1, 0, -1, 1}, {0, 1}, phi));
// reverse (test_squeeze_rule.py)
static_assert(bwd<squeeze>(sx0, spec({8, 16}, {0, 1}), {.axis = {0, 2}}, {-1, 0, -1, 1}, {0, 1}));
static_assert(bwd<squeeze>(sx0, spec({1, 8, 16}, {-1, 0, 1}), {.axis = {1, 2}}, {-1, 0, -1, 1}, {-1, 0, 1}));
static_assert(bwd<squeeze>(sx0, spec({8, 1, 16}, {0, -1, 1}), {.axis = {-4}}, {-1, 0, -1, 1}, {0, -1, 1}));
static_assert(bwd<squeeze>(sx0, spec({8, 16}, {1, 0}), {.axis = {0, 2}}, {-1, 1, -1, 0}, {1, 0}));
static_assert(bwd<squeeze>(sx0, spec({8, 1, 16}, {1, 0, -1}), {.axis = {-4}}, {-1, 1, -1, -1}, {1, -1, -1}));
static_assert(bwd<squeeze>(sx0, spec({8, 1, 16}, {1, 0, -1}), {.axis = {-4}}, {-1, 1, -1, -1}, {1, -1, -1}, phi));

// co-shard lists pass whole, under both semantics
constexpr process_mesh m22({2, 2});
static_assert(is(squeeze::infer_forward({co(m22, {1, 8, 4}, {{}, {0, 1}, {}})}, {}).outputs[0], {{0, 1}, {}}));
static_assert(is(squeeze::infer_forward({co(m22, {1, 8, 4}, {{}, {1, 0}, {}})}, {}, phi).outputs[0], {{1, 0}, {}}));
static_assert(is(squeeze::infer_backward({co(m22, {1, 8, 4}, {{}, {}, {}})}, {co(m22, {8, 4}, {{}, {1, 0}})}, {}, phi)
                     .inputs[0],
                 {{}, {}, {1, 0}}));

// partial: squeeze moves elements, so partial passes through (Paddle clears it)
constexpr auto partial_x = [] {
  tensor_dist_attr a(mesh, dims_mapping{-1, 0, -1, -1});
  a.set_partial_status({1}, reduce_type::max);
  return dist_tensor_spec({1, 8, 1, 16}, a);
}();
static_assert(squeeze::infer_forward({partial_x}, {}).outputs[0].partial_dims() == mesh_dims{1});
static_assert(squeeze::infer_forward({partial_x}, {}).outputs[0].partial_reduce_type(1) == reduce_type::max);
static_assert(squeeze::infer_forward({partial_x}, {}, phi).inputs[0].partial_dims() == mesh_dims{1});
static_assert(!squeeze::infer_backward({sx0}, {spec({8, 16}, {0, 1})}, {}).inputs[0].is_partial());

// errors
constexpr auto bad_axis = squeeze::try_infer_forward({sx0}, {.axis = {0, 4}});
static_assert(bad_axis.kind() == error_kind::invalid_argument && bad_axis.error().op == "squeeze" &&
              bad_axis.error().values == error_values{4, 4, 0, 0});
static_assert(squeeze::try_infer_forward({sx0}, {.axis = {-5}}).error().values == error_values{-5, 4, 0, 0});
constexpr auto bad_out = squeeze::try_infer_backward({sx0}, {spec({8, 17}, {-1, -1})}, {.axis = {0, 2}});
static_assert(bad_out.kind() == error_kind::invalid_argument && bad_out.error().values == error_values{1, 17, 16, 0});
static_assert(squeeze::try_infer_backward({sx0}, {spec({8, 1, 16}, {-1, -1, -1})}, {.axis = {0, 2}}).kind() ==
              error_kind::invalid_argument);  // wrong rank
static_assert(!squeeze::try_infer_forward({sx0, sx0}, {}));
static_assert(!constant_evaluates<[] { return squeeze::infer_forward({sx0}, {.axis = {9}}); }>);

// ==== unsqueeze: Paddle's test_unsqueeze_rule.py (mesh [2, 4], x [8, 16]) ========================
constexpr auto ux0 = spec({8, 16}, {0, 1});
constexpr auto ux1 = spec({8, 16}, {1, 0});
static_assert(fwd<unsqueeze>(ux0, {.axis = {0}}, {0, 1}, {-1, 0, 1}));
static_assert(fwd<unsqueeze>(ux0, {.axis = {-1}}, {0, 1}, {0, 1, -1}));
static_assert(fwd<unsqueeze>(ux0, {.axis = {1, 2}}, {0, 1}, {0, -1, -1, 1}));
static_assert(fwd<unsqueeze>(ux0, {.axis = {0, 1, 2}}, {0, 1}, {-1, -1, -1, 0, 1}));
static_assert(fwd<unsqueeze>(ux1, {.axis = {0}}, {1, 0}, {-1, 1, 0}));
static_assert(fwd<unsqueeze>(ux1, {.axis = {-1}}, {1, 0}, {1, 0, -1}, phi));
static_assert(fwd<unsqueeze>(ux1, {.axis = {1, 2}}, {1, 0}, {1, -1, -1, 0}));
static_assert(fwd<unsqueeze>(ux1, {.axis = {0, 1, 2}}, {1, 0}, {-1, -1, -1, 1, 0}, phi));
static_assert(fwd<unsqueeze>(spec({1, 8, 16}, {0, 1, -1}), {.axis = {0}}, {-1, 1, -1}, {-1, -1, 1, -1}));
// insertions one after the other, as Paddle's operator does (its rule normalises every negative
// entry with rank(x) + 1 and mishandles repeats)
static_assert(unsqueeze::target_of({8, 16}, {.axis = {-1, -1}})->shape == tensor_shape{8, 16, 1, 1});
static_assert(unsqueeze::target_of({8, 16}, {.axis = {0, 0}})->shape == tensor_shape{1, 1, 8, 16});
static_assert(unsqueeze::target_of({8, 16}, {.axis = {2, -4}})->shape == tensor_shape{1, 8, 16, 1});
static_assert(fwd<unsqueeze>(ux0, {.axis = {-1, -1}}, {0, 1}, {0, 1, -1, -1}));
// reverse
static_assert(bwd<unsqueeze>(ux0, spec({1, 8, 16}, {-1, 0, 1}), {.axis = {0}}, {0, 1}, {-1, 0, 1}));
static_assert(bwd<unsqueeze>(ux0, spec({8, 16, 1}, {0, 1, -1}), {.axis = {-1}}, {0, 1}, {0, 1, -1}));
static_assert(bwd<unsqueeze>(ux0, spec({8, 1, 1, 16}, {1, -1, -1, 0}), {.axis = {1, 2}}, {1, 0}, {1, -1, -1, 0}));
static_assert(bwd<unsqueeze>(ux0, spec({1, 1, 1, 8, 16}, {-1, -1, -1, 1, 0}), {.axis = {0, 1, 2}}, {1, 0},
                             {-1, -1, -1, 1, 0}, phi));
static_assert(bwd<unsqueeze>(spec({1, 8, 16}, {-1, -1, -1}), spec({1, 1, 8, 16}, {-1, 0, 1, -1}), {.axis = {0}},
                             {-1, 1, -1}, {-1, -1, 1, -1}));
// co-shard
static_assert(is(unsqueeze::infer_forward({co(m22, {8, 4}, {{1, 0}, {}})}, {.axis = {0}}, phi).outputs[0],
                 {{}, {1, 0}, {}}));
static_assert(is(unsqueeze::infer_forward({co(m22, {8, 4}, {{0, 1}, {}})}, {.axis = {1}}).outputs[0],
                 {{0, 1}, {}, {}}));
// partial passes through
static_assert(unsqueeze::infer_forward({partial_x}, {.axis = {0}}).outputs[0].partial_dims() == mesh_dims{1});
// errors
constexpr auto u_bad = unsqueeze::try_infer_forward({ux0}, {.axis = {3}});
static_assert(u_bad.kind() == error_kind::invalid_argument && u_bad.error().op == "unsqueeze" &&
              u_bad.error().values == error_values{3, 3, 2, 2});
static_assert(unsqueeze::try_infer_forward({ux0}, {.axis = {0, -5}}).error().values == error_values{-5, 4, 3, 3});
static_assert(unsqueeze::try_infer_forward({spec({2, 2, 2, 2, 2}, {-1, -1, -1, -1, -1})}, {.axis = {0, 0, 0, 0, 0}})
                  .kind() == error_kind::invalid_argument);  // rank 10 > max_rank
static_assert(unsqueeze::try_infer_backward({ux0}, {spec({8, 16}, {-1, -1})}, {.axis = {0}}).kind() ==
              error_kind::invalid_argument);
static_assert(!constant_evaluates<[] { return unsqueeze::infer_forward({ux0}, {.axis = {7}}); }>);

