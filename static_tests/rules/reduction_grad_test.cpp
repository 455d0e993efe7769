#include <ctspmd/rules/reduction_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::reduction_grad;
using ctspmd::rules::reduction_grad_with_out;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr auto phi = semantics::phi;
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

static_assert(rules::reduction_grad_attributes{}.axis.empty() && !rules::reduction_grad_attributes{}.keepdim &&
              !rules::reduction_grad_attributes{}.reduce_all);
static_assert(reduction_grad::input_count == operand_count{2} && reduction_grad_with_out::input_count == operand_count{3});

// ==== Paddle's spmd_rule_test.cc (ReduceMaxRule): mesh [2], x [4,6,8] [-1,0,-1], axis {1}; out and
// out_grad [4,8] [-1,-1] partial on 0 -> out not partial, x_grad [-1,-1,-1] not partial ===========
constexpr process_mesh mesh2({2});
constexpr auto pm = [] {
  tensor_dist_attr out(mesh2, {-1, -1});
  out.set_partial_status({0}, reduce_type::max);
  const dist_tensor_spec x({4, 6, 8}, {mesh2, {-1, 0, -1}});
  const dist_tensor_spec o({4, 8}, out);
  return reduction_grad_with_out::infer_forward({x, o, o}, {.axis = {1}});
}();
static_assert(!pm.inputs[1].is_partial() && !pm.inputs[2].is_partial());
static_assert(pm.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1} && !pm.outputs[0].is_partial());
static_assert(pm.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1});  // x's reduced dim is replicated

// ==== the kept dims keep their sharding, the reduced ones are replicated ===========================
constexpr auto s1 = reduction_grad::infer_forward({spec({8, 16, 32}, {0, -1, 1}), spec({8, 32}, {0, 1})}, {.axis = {1}});
static_assert(s1.inputs[0].dims_mapping() == dims_mapping{0, -1, 1} && s1.inputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(s1.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
// negative axes, and x's sharding of a reduced dim is dropped
constexpr auto s2 = reduction_grad::infer_forward({spec({8, 16, 32}, {-1, 0, 1}), spec({8}, {-1})}, {.axis = {-1, 1}});
static_assert(s2.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1} && s2.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
// out_grad's sharding reaches x and x_grad (Paddle's rule reads only out_grad)
constexpr auto s3 = reduction_grad::infer_forward({spec({8, 16}, {-1, -1}), spec({8}, {1})}, {.axis = {1}});
static_assert(s3.inputs[0].dims_mapping() == dims_mapping{1, -1} && s3.outputs[0].dims_mapping() == dims_mapping{1, -1});
// keepdim: a sharded size-1 dim of out_grad is replicated (Paddle would shard x's reduced dim with it)
constexpr auto k1 = reduction_grad::infer_forward({spec({8, 16}, {-1, -1}), spec({8, 1}, {0, 1})}, {.axis = {1}, .keepdim = true});
static_assert(k1.inputs[1].dims_mapping() == dims_mapping{0, -1} && k1.outputs[0].dims_mapping() == dims_mapping{0, -1});
// reduce_all and an empty axis reduce every dim: out_grad is 0-D
constexpr auto a1 = reduction_grad::infer_forward({spec({8, 16}, {0, 1}), spec({}, {})}, {.axis = {1}, .reduce_all = true});
static_assert(a1.outputs[0].dims_mapping() == dims_mapping{-1, -1} && a1.inputs[1].rank() == 0);
static_assert(reduction_grad::infer_forward({spec({8, 16}, {0, 1}), spec({}, {})}) == a1);
constexpr auto a2 = reduction_grad::infer_forward({spec({8, 16}, {0, 1}), spec({1, 1}, {-1, -1})}, {.keepdim = true});
static_assert(a2.outputs[0].dims_mapping() == dims_mapping{-1, -1} && a2.inputs[1].dims_mapping() == dims_mapping{-1, -1});
// a 0-D x (Paddle's 0-d convention: axis 0 reduces nothing)
static_assert(reduction_grad::infer_forward({spec({}, {}), spec({}, {})}, {.axis = {0}}).outputs[0].rank() == 0);

// ==== partial: every input comes back whole, x_grad is not partial =============================
constexpr auto p1 = reduction_grad::infer_forward({partial_spec({8, 16}, {0, -1}, 1), partial_spec({8}, {0}, 1)}, {.axis = {1}});
static_assert(!p1.inputs[0].is_partial() && !p1.inputs[1].is_partial() && !p1.outputs[0].is_partial());
static_assert(p1.outputs[0].dims_mapping() == dims_mapping{0, -1});
constexpr auto p2 = reduction_grad_with_out::infer_forward(
    {spec({8, 16}, {0, -1}), partial_spec({8}, {0}, 1, reduce_type::max), spec({8}, {0})}, {.axis = {1}});
static_assert(!p2.inputs[1].is_partial() && p2.inputs[1].dims_mapping() == dims_mapping{0});

// ==== disagreeing layouts: fluid's merge refuses two mesh dims on one axis, phi co-shards them ====
constexpr auto d1 = reduction_grad::try_infer_forward({spec({8, 16}, {0, -1}), spec({8}, {1})}, {.axis = {1}});
static_assert(d1.kind() == error_kind::unimplemented && d1.error().op == "reduction_grad");
// one of them replicated: the sharding is taken
static_assert(reduction_grad::infer_forward({spec({8, 16}, {0, -1}), spec({8}, {-1})}, {.axis = {1}}).inputs[1].dims_mapping() ==
              dims_mapping{0});
constexpr auto d2 = reduction_grad::infer_forward({spec({8, 16}, {0, -1}), spec({8}, {1})}, {.axis = {1}}, phi);
static_assert(is(d2.outputs[0], {{1, 0}, {}}) && is(d2.inputs[0], {{1, 0}, {}}) && is(d2.inputs[1], {{1, 0}}));
// phi drops a mesh dim that does not divide the axis
constexpr auto d3 = reduction_grad::infer_forward({spec({4, 16}, {0, -1}), spec({4}, {1})}, {.axis = {1}}, phi);
static_assert(is(d3.outputs[0], {{1}, {}}));
// fluid: x's kept dim sharded by a mesh dim out uses elsewhere: out loses it
constexpr auto d4 = reduction_grad_with_out::infer_forward(
    {spec({8, 16, 4}, {0, -1, -1}), spec({8, 4}, {-1, 0}), spec({8, 4}, {-1, -1})}, {.axis = {1}});
static_assert(d4.outputs[0].dims_mapping() == dims_mapping{0, -1, -1} && d4.inputs[1].dims_mapping() == dims_mapping{0, -1});

// ==== co-shard inputs, both semantics ==========================================================
constexpr auto c1 = reduction_grad_with_out::infer_forward(
    {co(mesh, {16, 8}, {{0, 1}, {}}), co(mesh, {16}, {{0, 1}}), co(mesh, {16}, {{0, 1}})}, {.axis = {1}});
static_assert(is(c1.outputs[0], {{0, 1}, {}}) && is(c1.inputs[1], {{0, 1}}) && is(c1.inputs[2], {{0, 1}}));
static_assert(reduction_grad_with_out::infer_forward(
                  {co(mesh, {16, 8}, {{0, 1}, {}}), co(mesh, {16}, {{0, 1}}), co(mesh, {16}, {{0, 1}})}, {.axis = {1}},
                  phi) == c1);
// a co-sharded reduced dim is replicated as a whole
static_assert(is(reduction_grad::infer_forward({co(mesh, {16, 8}, {{}, {1, 0}}), co(mesh, {16}, {{}})}, {.axis = {1}}, phi)
                     .outputs[0],
                 {{}, {}}));

// ==== errors =====================================================================================
constexpr auto e1 = reduction_grad::try_infer_forward({spec({8, 16}, {0, -1}), spec({8, 16}, {0, -1})}, {.axis = {1}});
static_assert(e1.kind() == error_kind::invalid_argument && e1.error().op == "reduction_grad");
static_assert(e1.error().values == std::array<std::int64_t, 4>{2, 1, 2, 1});
constexpr auto e2 = reduction_grad::try_infer_forward({spec({8, 16}, {0, -1}), spec({4}, {0})}, {.axis = {1}});
static_assert(e2.kind() == error_kind::invalid_argument && e2.error().values == std::array<std::int64_t, 4>{0, 4, 8, 0});
// keepdim: the reduced dim must have size 1
static_assert(reduction_grad::try_infer_forward({spec({8, 16}, {0, -1}), spec({8, 16}, {0, -1})}, {.axis = {1}, .keepdim = true})
                  .error()
                  .values == std::array<std::int64_t, 4>{1, 16, 1, 0});
// out is checked as out_grad is
constexpr auto e3 =
    reduction_grad_with_out::try_infer_forward({spec({8, 16}, {0, -1}), spec({8, 2}, {0, -1}), spec({8}, {0})}, {.axis = {1}});
static_assert(e3.kind() == error_kind::invalid_argument && e3.error().values == std::array<std::int64_t, 4>{2, 1, 2, 1});
static_assert(std::string_view(e3.error().format).starts_with("out has rank"));
static_assert(std::string_view(e1.error().format).starts_with("out_grad has rank"));
// the reduction's axis checks
static_assert(reduction_grad::try_infer_forward({spec({8, 16}, {0, -1}), spec({8}, {0})}, {.axis = {2}}).kind() ==
              error_kind::invalid_argument);
static_assert(!reduction_grad::try_infer_forward({spec({8, 16}, {0, -1}), spec({8}, {0})}, {.axis = {1, -1}}));
// operand counts, and no reverse inference
static_assert(!reduction_grad_with_out::try_infer_forward({spec({8, 16}, {0, -1}), spec({8}, {0})}, {.axis = {1}}));
static_assert(!constant_evaluates<[] {
  return reduction_grad::infer_forward({spec({8, 16}, {0, -1}), spec({8, 16}, {0, -1})}, {.axis = {1}});
}>);
static_assert(reduction_grad::try_infer_backward({spec({8, 16}, {0, -1}), spec({8}, {0})}, {spec({8, 16}, {0, -1})}).kind() ==
              error_kind::unimplemented);
static_assert(reduction_grad_with_out::try_infer_backward({spec({8, 16}, {0, -1}), spec({8}, {0}), spec({8}, {0})},
                                                          {spec({8, 16}, {0, -1})})
                  .kind() == error_kind::unimplemented);

// ==== logsumexp_grad and p_norm_grad: the same rule on their forwards' reduced dims =============
namespace forwards {
using ctspmd::rules::logsumexp_grad;
using ctspmd::rules::p_norm_grad;
constexpr dist_tensor_spec x = spec({8, 16, 32}, {0, 1, -1});
constexpr dist_tensor_spec o = spec({8, 32}, {0, -1});
constexpr auto l1 = logsumexp_grad::infer_forward({x, o, o}, {.axis = {1}});
static_assert(l1.outputs[0].dims_mapping() == dims_mapping{0, -1, -1} && l1.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(logsumexp_grad::infer_forward({x, spec({}, {}), spec({}, {})}, {.axis = {1}, .reduce_all = true}).outputs[0] ==
              spec({8, 16, 32}, {-1, -1, -1}).dist_attr());
static_assert(logsumexp_grad::infer_forward({x, spec({8, 1, 32}, {0, -1, 1}), spec({8, 1, 32}, {-1, -1, -1})},
                                            {.axis = {-2}, .keepdim = true})
                  .outputs[0]
                  .dims_mapping() == dims_mapping{0, -1, 1});
// p_norm: one axis (default -1), or every dim with asvector
constexpr auto p1 = p_norm_grad::infer_forward({x, spec({8, 16}, {-1, 1}), spec({8, 16}, {0, -1})});
static_assert(p1.outputs[0].dims_mapping() == dims_mapping{0, 1, -1} && p1.inputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(p_norm_grad::infer_forward({x, spec({}, {}), spec({}, {})}, {.axis = 1, .asvector = true}).outputs[0].dims_mapping() ==
              dims_mapping{-1, -1, -1});
static_assert(p_norm_grad::infer_forward({x, spec({8, 1, 32}, {0, -1, -1}), spec({8, 1, 32}, {0, -1, -1})},
                                         {.axis = 1, .keepdim = true})
                  .outputs[0]
                  .dims_mapping() == dims_mapping{0, -1, -1});
// partial out comes back whole
static_assert(!p_norm_grad::infer_forward({x, partial_spec({8, 16}, {-1, 1}, 0), spec({8, 16}, {0, -1})}).inputs[1].is_partial());
// errors: the reduction's
constexpr auto pe = p_norm_grad::try_infer_forward({x, spec({8, 16}, {-1, 1}), spec({8}, {0})});
static_assert(pe.kind() == error_kind::invalid_argument && pe.error().op == "p_norm_grad" &&
              pe.error().values == std::array<std::int64_t, 4>{1, 2, 3, 1});
static_assert(!p_norm_grad::try_infer_forward({x, o, o}, {.axis = 3}));
static_assert(!logsumexp_grad::try_infer_forward({x, o, o}, {.axis = {1, 1}}));
static_assert(logsumexp_grad::infer_forward({x, o, o}, {.axis = {1}}, phi) == l1);
static_assert(logsumexp_grad::try_infer_backward({x, o, o}, {x}, {.axis = {1}}).kind() == error_kind::unimplemented);
static_assert(p_norm_grad::try_infer_backward({x, o, o}, {x}).kind() == error_kind::unimplemented);
}  // namespace forwards
