#include <ctspmd/rules/fused_rope.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::fused_rope;
using ctspmd::rules::fused_rope_attributes;
using ctspmd::rules::fused_rope_grad;
using ctspmd_test::co;
using ctspmd_test::is;

// Our own vectors (Paddle's test_fused_rope_rule.py is not in the reference index), written from
// phi-semantics.md section 2.
constexpr process_mesh m3({2, 2, 2});
constexpr dist_tensor_spec none({}, {m3, dims_mapping{}});
constexpr tensor_shape qs{4, 16, 8, 32};  // [b, s, h, d]
constexpr dist_tensor_spec sin2({16, 32}, {m3, {-1, -1}});
constexpr dist_tensor_spec sin4({1, 16, 1, 32}, {m3, {-1, -1, -1, -1}});
constexpr dist_tensor_spec q(qs, {m3, {-1, -1, -1, -1}});

// ==== forward, no sin/cos, no position_ids: seq and head_dim replicated, batch and heads merged ====
constexpr auto f1 = fused_rope::infer_forward({co(m3, qs, {{0}, {1}, {}, {}}), co(m3, qs, {{}, {}, {2}, {1}}), none, none, none, none});
static_assert(f1.inputs.size() == 6 && f1.outputs.size() == 3);
static_assert(is(f1.inputs[0], {{0}, {}, {2}, {}}) && is(f1.inputs[1], {{0}, {}, {2}, {}}));
static_assert(f1.inputs[2].dims_mapping() == dims_mapping{} && f1.inputs[3].dims_mapping() == dims_mapping{} &&
              f1.inputs[5].dims_mapping() == dims_mapping{});
static_assert(is(f1.outputs[0], {{0}, {}, {2}, {}}) && is(f1.outputs[1], {{0}, {}, {2}, {}}) &&
              f1.outputs[2].dims_mapping() == dims_mapping{});
static_assert(fused_rope::infer_forward({co(m3, qs, {{0}, {1}, {}, {}}), co(m3, qs, {{}, {}, {2}, {1}}), none, none, none, none}, {},
                                        semantics::phi) == f1);

// ==== sequence parallelism: sin and cos given, no position_ids: seq keeps its sharding ============
constexpr auto sp = fused_rope::infer_forward({co(m3, qs, {{}, {0}, {}, {1}}), co(m3, qs, {{}, {}, {}, {}}),
                                               co(m3, qs, {{2}, {}, {}, {}}), sin2, co(m3, {16, 32}, {{1}, {2}}), none});
static_assert(is(sp.inputs[0], {{2}, {0}, {}, {}}) && is(sp.inputs[2], {{2}, {0}, {}, {}}));
static_assert(is(sp.inputs[3], {{0}, {}}) && is(sp.inputs[4], {{0}, {}}));
static_assert(is(sp.outputs[2], {{2}, {0}, {}, {}}));
// 4-D sin/cos [1, s, 1, d]
constexpr auto sp4 = fused_rope::infer_forward({co(m3, qs, {{}, {0}, {}, {}}), co(m3, qs, {{}, {}, {}, {}}), none, sin4, sin4, none});
static_assert(is(sp4.inputs[3], {{}, {0}, {}, {}}) && is(sp4.inputs[4], {{}, {0}, {}, {}}));
// with position_ids: seq replicated everywhere, position_ids proposes its batch
constexpr dist_tensor_spec sin_long({64, 32}, {m3, {0, -1}});
constexpr auto pid = fused_rope::infer_forward(
    {co(m3, qs, {{}, {0}, {}, {}}), co(m3, qs, {{}, {}, {}, {}}), none, sin_long, sin_long, co(m3, {4, 16}, {{1}, {0}})});
static_assert(is(pid.inputs[0], {{1}, {}, {}, {}}) && is(pid.inputs[3], {{}, {}}) && is(pid.inputs[5], {{1}, {}}));
static_assert(is(pid.outputs[0], {{1}, {}, {}, {}}));
// without sin/cos: no sequence parallelism
static_assert(is(fused_rope::infer_forward({co(m3, qs, {{}, {0}, {}, {}}), co(m3, qs, {{}, {}, {}, {}}), none, none, none, none})
                     .inputs[0],
                 {{}, {}, {}, {}}));

// ==== time_major: q [s, b, h, d] ====================================================================
constexpr tensor_shape ts{16, 4, 8, 32};
constexpr fused_rope_attributes tm{true, true, 10000.0};
constexpr auto tmaj = fused_rope::infer_forward(
    {co(m3, ts, {{0}, {1}, {}, {}}), co(m3, ts, {{}, {}, {2}, {}}), none, sin2, sin2, none}, tm);
static_assert(is(tmaj.inputs[0], {{0}, {1}, {2}, {}}) && is(tmaj.inputs[3], {{0}, {}}) && is(tmaj.outputs[1], {{0}, {1}, {2}, {}}));
constexpr auto tp = fused_rope::infer_forward(
    {co(m3, ts, {{0}, {}, {}, {}}), co(m3, ts, {{}, {}, {}, {}}), none, sin_long, sin_long, co(m3, {4, 16}, {{1}, {2}})}, tm);
static_assert(is(tp.inputs[0], {{}, {1}, {}, {}}) && is(tp.inputs[5], {{1}, {}}));

// ==== co-shards ======================================================================================
// a co-sharded input keeps its list under both semantics
constexpr auto cs_in = fused_rope::infer_forward({co(m3, qs, {{0, 1}, {}, {2}, {}}), co(m3, qs, {{}, {}, {}, {}}), none, none, none, none});
static_assert(is(cs_in.inputs[1], {{0, 1}, {}, {2}, {}}) && is(cs_in.outputs[0], {{0, 1}, {}, {2}, {}}));
static_assert(fused_rope::infer_forward({co(m3, qs, {{0, 1}, {}, {2}, {}}), co(m3, qs, {{}, {}, {}, {}}), none, none, none, none}, {},
                                        semantics::phi) == cs_in);
// a co-sharded seq under sequence parallelism: sin/cos take the whole list
constexpr auto cs_sp = fused_rope::infer_forward({co(m3, qs, {{}, {1, 0}, {}, {}}), co(m3, qs, {{}, {}, {}, {}}), none, sin2, sin2, none}, {},
                                                 semantics::phi);
static_assert(is(cs_sp.inputs[3], {{1, 0}, {}}) && is(cs_sp.outputs[0], {{}, {1, 0}, {}, {}}));
// phi: q and k shard the batch by different mesh dims: a co-shard; fluid: a conflict
constexpr auto cs = fused_rope::infer_forward({co(m3, qs, {{0}, {}, {}, {}}), co(m3, qs, {{1}, {}, {}, {}}), none, none, none, none}, {},
                                              semantics::phi);
static_assert(is(cs.inputs[0], {{0, 1}, {}, {}, {}}) && is(cs.outputs[1], {{0, 1}, {}, {}, {}}));
static_assert(fused_rope::try_infer_forward({co(m3, qs, {{0}, {}, {}, {}}), co(m3, qs, {{1}, {}, {}, {}}), none, none, none, none})
                  .kind() == error_kind::unimplemented);

// ==== GQA: 8 query heads, 2 kv heads: the heads split by 2 (mesh dim 0) but not by 4 ================
constexpr tensor_shape ks{4, 16, 2, 32};
constexpr auto gqa = fused_rope::infer_forward(
    {co(m3, qs, {{}, {}, {0, 1}, {}}), co(m3, ks, {{}, {}, {}, {}}), co(m3, ks, {{}, {}, {}, {}}), none, none, none}, {},
    semantics::phi);
static_assert(is(gqa.inputs[0], {{}, {}, {0}, {}}) && is(gqa.inputs[2], {{}, {}, {0}, {}}) && is(gqa.outputs[1], {{}, {}, {0}, {}}));
static_assert(is(fused_rope::infer_forward({co(m3, qs, {{}, {}, {0, 1}, {}}), co(m3, ks, {{}, {}, {}, {}}), none, none, none, none})
                     .inputs[0],
                 {{}, {}, {}, {}}));
// MQA: one kv head is never sharded, q's heads keep theirs
constexpr auto mqa = fused_rope::infer_forward({co(m3, qs, {{}, {}, {0}, {}}), co(m3, {4, 16, 1, 32}, {{}, {}, {}, {}}), none, none, none, none});
static_assert(is(mqa.inputs[0], {{}, {}, {}, {}}));  // 1 kv head is not divisible by 2: the heads are replicated

// ==== partial inputs come back whole, no output partial =============================================
constexpr auto part = [] {
  tensor_dist_attr a(m3, {0, -1, -1, -1});
  a.set_partial_status({1});
  const dist_tensor_spec p(qs, a);
  return fused_rope::infer_forward({p, p, p, none, none, none});
}();
static_assert(!part.inputs[0].is_partial() && !part.outputs[0].is_partial() && is(part.outputs[2], {{0}, {}, {}, {}}));

// ==== absent inputs: every one but q, in any combination ===========================================
// q only: seq and head_dim replicated, everything else comes back as given, out_k and out_v absent
constexpr auto q_only = fused_rope::infer_forward({co(m3, qs, {{0}, {1}, {2}, {}}), none, none, none, none, none});
static_assert(is(q_only.inputs[0], {{0}, {}, {2}, {}}) && is(q_only.outputs[0], {{0}, {}, {2}, {}}));
static_assert(q_only.inputs[1] == none.dist_attr() && q_only.inputs[2] == none.dist_attr() && q_only.inputs[3] == none.dist_attr() &&
              q_only.inputs[4] == none.dist_attr() && q_only.inputs[5] == none.dist_attr());
static_assert(q_only.outputs[1] == none.dist_attr() && q_only.outputs[2] == none.dist_attr());
static_assert(fused_rope::infer_forward({co(m3, qs, {{0}, {1}, {2}, {}}), none, none, none, none, none}, {}, semantics::phi) ==
              q_only);
// q and v (k absent): merged, out_k absent
constexpr auto q_v = fused_rope::infer_forward({co(m3, qs, {{0}, {}, {}, {}}), none, co(m3, qs, {{}, {}, {1}, {}}), none, none, none});
static_assert(is(q_v.inputs[0], {{0}, {}, {1}, {}}) && is(q_v.inputs[2], {{0}, {}, {1}, {}}) && is(q_v.outputs[2], {{0}, {}, {1}, {}}));
static_assert(q_v.inputs[1] == none.dist_attr() && q_v.outputs[1] == none.dist_attr());
// GQA reads v's heads where k is absent: 2 kv heads split by mesh dim 0, not by 0 and 1
constexpr auto q_v_gqa = fused_rope::infer_forward(
    {co(m3, qs, {{}, {}, {0, 1}, {}}), none, co(m3, ks, {{}, {}, {}, {}}), none, none, none}, {}, semantics::phi);
static_assert(is(q_v_gqa.inputs[0], {{}, {}, {0}, {}}) && is(q_v_gqa.outputs[2], {{}, {}, {0}, {}}));
// q with sin and cos, no position_ids: sequence parallel
constexpr auto q_sp = fused_rope::infer_forward({co(m3, qs, {{}, {0}, {}, {1}}), none, none, sin2, sin2, none});
static_assert(is(q_sp.inputs[0], {{}, {0}, {}, {}}) && is(q_sp.inputs[3], {{0}, {}}) && is(q_sp.inputs[4], {{0}, {}}));
static_assert(q_sp.outputs[1] == none.dist_attr() && q_sp.outputs[2] == none.dist_attr());
// q with position_ids only: the batch from position_ids, seq replicated
constexpr auto q_pos = fused_rope::infer_forward({co(m3, qs, {{}, {0}, {}, {}}), none, none, none, none, co(m3, {4, 16}, {{1}, {2}})});
static_assert(is(q_pos.inputs[0], {{1}, {}, {}, {}}) && is(q_pos.inputs[5], {{1}, {}}) && q_pos.inputs[3] == none.dist_attr());
// only one of sin and cos: the kernel reads neither; both come back as given, no sequence parallelism,
// and the lone one is not checked
constexpr auto lone_sin = fused_rope::infer_forward({co(m3, qs, {{}, {0}, {}, {}}), q, none, co(m3, {16, 32}, {{1}, {2}}), none, none});
static_assert(is(lone_sin.inputs[0], {{}, {}, {}, {}}) && is(lone_sin.inputs[3], {{1}, {2}}) && lone_sin.inputs[4] == none.dist_attr());
static_assert(is(fused_rope::infer_forward({q, none, none, none, co(m3, {3, 5, 7}, {{0}, {}, {}}), none}).inputs[4], {{0}, {}, {}}));
// the shapes a plan checks: absent outputs stay []
static_assert(fused_rope::try_output_shapes({q, none, none, none, none, none}).value() == shape_list{qs, {}, {}});
static_assert(fused_rope::try_output_shapes({q, none, q, sin2, none, none}).value() == shape_list{qs, {}, qs});
// backward with k absent: out_k absent too
constexpr auto b_q_v = fused_rope::infer_backward({q, none, q, none, none, none}, {co(m3, qs, {{0}, {}, {}, {}}), none, co(m3, qs, {{}, {}, {1}, {}})});
static_assert(is(b_q_v.inputs[0], {{0}, {}, {1}, {}}) && b_q_v.inputs[1] == none.dist_attr() && b_q_v.outputs[1] == none.dist_attr());
static_assert(fused_rope::try_infer_backward({q, none, none, none, none, none}, {q, q, none}).kind() == error_kind::invalid_argument);

// ==== errors (invalid_argument) =====================================================================
constexpr auto bad = [](const dist_tensor_spec& a, const dist_tensor_spec& b, const dist_tensor_spec& c, const dist_tensor_spec& s,
                        const dist_tensor_spec& cc, const dist_tensor_spec& p) {
  const auto r = fused_rope::try_infer_forward({a, b, c, s, cc, p});
  return !r && r.kind() == error_kind::invalid_argument;
};
constexpr dist_tensor_spec r3({4, 16, 8}, {m3, {-1, -1, -1}});
static_assert(bad(r3, q, none, none, none, none));                                       // q not 4-D
static_assert(bad(q, r3, none, none, none, none));                                       // k not 4-D
static_assert(bad(q, q, r3, none, none, none));                                          // v not 4-D
static_assert(bad(q, dist_tensor_spec({4, 16, 3, 32}, {m3, {-1, -1, -1, -1}}), none, none, none, none));  // 8 % 3
static_assert(bad(q, dist_tensor_spec({4, 8, 8, 32}, {m3, {-1, -1, -1, -1}}), none, none, none, none));   // k's seq
static_assert(bad(q, q, dist_tensor_spec({4, 16, 8, 16}, {m3, {-1, -1, -1, -1}}), none, none, none));     // v != k
static_assert(bad(q, none, dist_tensor_spec({4, 16, 3, 32}, {m3, {-1, -1, -1, -1}}), none, none, none));  // k absent: 8 % 3
static_assert(bad(q, none, dist_tensor_spec({4, 8, 8, 32}, {m3, {-1, -1, -1, -1}}), none, none, none));   // k absent: v's seq
static_assert(bad(q, none, r3, none, none, none));                                       // v not 4-D
static_assert(bad(q, q, none, sin2, sin4, none));                                        // sin != cos
static_assert(!bad(q, q, none, sin2, none, none));  // cos absent: neither is used (below)
constexpr dist_tensor_spec sin3({1, 16, 32}, {m3, {-1, -1, -1}});
static_assert(bad(q, q, none, sin3, sin3, none));                                        // rank 3
constexpr dist_tensor_spec sin4b({2, 16, 1, 32}, {m3, {-1, -1, -1, -1}});
static_assert(bad(q, q, none, sin4b, sin4b, none));                                      // dim 0 != 1
constexpr dist_tensor_spec pos({4, 16}, {m3, {-1, -1}});
static_assert(bad(q, q, none, sin_long, sin_long, dist_tensor_spec({4, 8}, {m3, {-1, -1}})));  // ids not [b, s]
static_assert(bad(q, q, none, sin_long, sin_long, dist_tensor_spec({4, 16, 1}, {m3, {-1, -1, -1}})));  // ids rank
constexpr dist_tensor_spec sin_short({8, 32}, {m3, {-1, -1}});
static_assert(bad(q, q, none, sin_short, sin_short, pos));                               // rows < s
static_assert(bad(q, q, none, sin_long, sin_long, none));                                // rows != s without ids
constexpr dist_tensor_spec sin_d({16, 16}, {m3, {-1, -1}});
static_assert(bad(q, q, none, sin_d, sin_d, none));                                      // head dim
static_assert(!bad(q, q, q, sin_long, sin_long, pos) && !bad(q, q, q, sin2, sin2, none));
// unknown sizes (-1) match anything
static_assert(!bad(dist_tensor_spec({-1, 16, 8, 32}, {m3, {-1, -1, -1, -1}}), q, none, sin2, sin2, none));

// ==== backward: out_q, out_k, out_v merged ==========================================================
constexpr auto b = fused_rope::infer_backward({q, q, q, sin2, sin2, none},
                                              {co(m3, qs, {{0}, {1}, {}, {}}), co(m3, qs, {{}, {}, {2}, {}}), co(m3, qs, {{}, {}, {}, {}})});
static_assert(is(b.inputs[0], {{0}, {1}, {2}, {}}) && is(b.inputs[3], {{1}, {}}) && is(b.outputs[2], {{0}, {1}, {2}, {}}));
// out_v absent when v is (phi tests the input v here, section 5)
constexpr auto b2 = fused_rope::infer_backward({q, q, none, none, none, none}, {co(m3, qs, {{}, {}, {1}, {}}), q, none});
static_assert(is(b2.inputs[1], {{}, {}, {1}, {}}) && b2.outputs[2].dims_mapping() == dims_mapping{});
static_assert(fused_rope::try_infer_backward({q, q, none, none, none, none}, {q, q, q}).kind() == error_kind::invalid_argument);
static_assert(fused_rope::try_infer_backward({q, q, none, none, none, none}, {q, dist_tensor_spec({4, 16, 4, 32}, {m3, {-1, -1, -1, -1}}), none})
                  .kind() == error_kind::invalid_argument);  // out_k's heads (phi compares the head dims)

// ==== fused_rope_grad: sin, cos, position_ids, out_q_grad, out_k_grad, out_v_grad ==================
constexpr auto g = fused_rope_grad::infer_forward(
    {sin2, sin2, none, co(m3, qs, {{0}, {1}, {}, {2}}), co(m3, qs, {{}, {}, {2}, {}}), none});
static_assert(g.inputs.size() == 6 && g.outputs.size() == 3);
static_assert(is(g.inputs[0], {{1}, {}}) && is(g.inputs[3], {{0}, {1}, {2}, {}}) && is(g.inputs[4], {{0}, {1}, {2}, {}}));
static_assert(g.inputs[5].dims_mapping() == dims_mapping{} && g.outputs[2].dims_mapping() == dims_mapping{});
static_assert(is(g.outputs[0], {{0}, {1}, {2}, {}}) && !g.outputs[0].is_partial());
constexpr auto gp = fused_rope_grad::infer_forward(
    {sin_long, sin_long, co(m3, {4, 16}, {{2}, {}}), co(m3, qs, {{0}, {1}, {}, {}}), q, q}, {}, semantics::phi);
static_assert(is(gp.inputs[2], {{0, 2}, {}}) && is(gp.outputs[2], {{0, 2}, {}, {}, {}}));
static_assert(fused_rope_grad::try_infer_forward({sin2, sin2, none, r3, q, none}).kind() == error_kind::invalid_argument);
static_assert(fused_rope_grad::try_infer_backward({sin2, sin2, none, q, q, none}, {q, q, none}).kind() == error_kind::unimplemented);
// only out_q_grad: q_grad follows it, every other operand comes back as given, k_grad and v_grad absent
constexpr auto g_q = fused_rope_grad::infer_forward({none, none, none, co(m3, qs, {{0}, {1}, {2}, {}}), none, none});
static_assert(is(g_q.inputs[3], {{0}, {}, {2}, {}}) && is(g_q.outputs[0], {{0}, {}, {2}, {}}));
static_assert(g_q.inputs[0] == none.dist_attr() && g_q.inputs[2] == none.dist_attr() && g_q.inputs[4] == none.dist_attr());
static_assert(g_q.outputs[1] == none.dist_attr() && g_q.outputs[2] == none.dist_attr());
// out_q_grad and out_v_grad with sin and cos: sequence parallel, k_grad absent
constexpr auto g_q_v = fused_rope_grad::infer_forward(
    {sin2, sin2, none, co(m3, qs, {{}, {0}, {}, {}}), none, co(m3, qs, {{1}, {}, {}, {}})}, {}, semantics::phi);
static_assert(is(g_q_v.inputs[0], {{0}, {}}) && is(g_q_v.outputs[0], {{1}, {0}, {}, {}}) && is(g_q_v.outputs[2], {{1}, {0}, {}, {}}));
static_assert(g_q_v.outputs[1] == none.dist_attr());
static_assert(fused_rope_grad::try_output_shapes({none, none, none, q, none, none}).value() == shape_list{qs, {}, {}});
// out_v_grad is checked against out_q_grad where out_k_grad is absent
static_assert(fused_rope_grad::try_infer_forward({none, none, none, q, none, dist_tensor_spec({4, 16, 8, 16}, {m3, {-1, -1, -1, -1}})})
                  .kind() == error_kind::invalid_argument);
