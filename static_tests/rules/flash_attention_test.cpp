#include <ctspmd/rules/flash_attention.hpp>

#include <array>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::flash_attention;
using ctspmd::rules::flash_attention_grad;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m23({2, 3});
constexpr process_mesh m3({2, 2, 2});
constexpr dist_tensor_spec none23({}, {m23, dims_mapping{}});
constexpr dist_tensor_spec none3({}, {m3, dims_mapping{}});

// ==== forward: Paddle's test_flash_attention_rule.py (mesh [2, 3]), both semantics ===============
constexpr dist_tensor_spec q({2, 512, 64, 1024}, {m23, {0, -1, 1, -1}});
constexpr dist_tensor_spec k({2, 1024, 64, 1024}, {m23, {0, -1, -1, -1}});
constexpr dist_tensor_spec v({2, 1024, 64, 512}, {m23, {0, -1, -1, -1}});
constexpr auto f = flash_attention::infer_forward({q, k, v, none23, none23});
static_assert(f.inputs.size() == 5 && f.outputs.size() == 4);
static_assert(f.inputs[0].dims_mapping() == dims_mapping{0, -1, 1, -1} && f.inputs[1].dims_mapping() == dims_mapping{0, -1, 1, -1} &&
              f.inputs[2].dims_mapping() == dims_mapping{0, -1, 1, -1});
static_assert(f.inputs[3].dims_mapping() == dims_mapping{} && f.inputs[4].dims_mapping() == dims_mapping{});
static_assert(f.outputs[0].dims_mapping() == dims_mapping{0, -1, 1, -1} && f.outputs[1].dims_mapping() == dims_mapping{0, 1, -1, -1} &&
              f.outputs[2].dims_mapping() == dims_mapping{0, 1, -1} && f.outputs[3].dims_mapping() == dims_mapping{-1});
static_assert(flash_attention::infer_forward({q, k, v, none23, none23}, {}, semantics::phi) == f);
static_assert(flash_attention::infer_forward({q, k, v}) .outputs == f.outputs);  // optional inputs left out
// backward: Paddle's test_infer_backward: out and softmax_lse merged
constexpr auto b = flash_attention::infer_backward(
    {q, k, v, none23, none23},
    {dist_tensor_spec({2, 512, 64, 512}, {m23, {0, -1, 1, -1}}), none23, dist_tensor_spec({2, 64, 512}, {m23, {0, 1, -1}}),
     dist_tensor_spec({2}, {m23, {-1}})});
static_assert(b.inputs[0].dims_mapping() == dims_mapping{0, -1, 1, -1} && b.inputs[2].dims_mapping() == dims_mapping{0, -1, 1, -1});
static_assert(b.outputs[0].dims_mapping() == dims_mapping{0, -1, 1, -1} && b.outputs[2].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(b.outputs[1].dims_mapping() == dims_mapping{});

// ==== Paddle's FlashAtt unit test (spmd_rule_test.cc, mesh [2, 2]), both semantics =============
// Without context_parallel q's sequence sharding is dropped (phi forces the sequences replicated).
constexpr process_mesh m22({2, 2});
constexpr dist_tensor_spec pqkv({2, 256, 2, 128}, {m22, {0, 1, -1, -1}});
constexpr dist_tensor_spec none22({}, {m22, dims_mapping{}});
constexpr auto paddle_forward = [](semantics sem, bool cp) {
  return flash_attention::infer_forward({pqkv, pqkv, pqkv, none22, none22}, {.dropout = 0.5, .context_parallel = cp}, sem);
};
constexpr bool paddle_forward_ok(const spmd_info& p) {
  return p.inputs.size() == 5 && p.outputs.size() == 4 && p.inputs[0].dims_mapping() == dims_mapping{0, -1, -1, -1} &&
         p.inputs[1].dims_mapping() == dims_mapping{0, -1, -1, -1} && p.inputs[2].dims_mapping() == dims_mapping{0, -1, -1, -1} &&
         p.inputs[3].dims_mapping() == dims_mapping{} && p.inputs[4].dims_mapping() == dims_mapping{} &&
         p.outputs[0].dims_mapping() == dims_mapping{0, -1, -1, -1} && p.outputs[1].dims_mapping() == dims_mapping{0, -1, -1, -1} &&
         p.outputs[2].dims_mapping() == dims_mapping{0, -1, -1} && p.outputs[3].dims_mapping() == dims_mapping{-1};
}
static_assert(paddle_forward_ok(paddle_forward(semantics::phi, false)));
static_assert(paddle_forward_ok(paddle_forward(semantics::fluid, false)));
// Asked for, context parallelism keeps q's chunk of the sequence (k and v gathered).
constexpr auto paddle_forward_cp = paddle_forward(semantics::phi, true);
static_assert(!paddle_forward_ok(paddle_forward_cp));
static_assert(paddle_forward_cp.inputs[0].dims_mapping() == dims_mapping{0, 1, -1, -1} &&
              paddle_forward_cp.inputs[1].dims_mapping() == dims_mapping{0, -1, -1, -1});
static_assert(paddle_forward_cp.outputs[0].dims_mapping() == dims_mapping{0, 1, -1, -1} &&
              paddle_forward_cp.outputs[1].dims_mapping() == dims_mapping{0, -1, 1, -1} &&
              paddle_forward_cp.outputs[2].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(paddle_forward(semantics::fluid, true) == paddle_forward_cp);

// The grad: q, k, v [0, 1, -1, -1], out [0, -1, 1, -1], softmax_lse [0, 1, -1], out_grad
// replicated, seed_offset and the mask absent. Mesh dim 1 leaves q's sequence for the heads
// (out's and softmax_lse's).
constexpr auto paddle_grad = [](semantics sem, bool cp) {
  return flash_attention_grad::infer_forward(
      {pqkv, pqkv, pqkv, dist_tensor_spec({2, 256, 2, 128}, {m22, {0, -1, 1, -1}}),
       dist_tensor_spec({2, 2, 256}, {m22, {0, 1, -1}}), none22, none22, dist_tensor_spec({2, 256, 2, 128}, m22)},
      {.dropout = 0.5, .context_parallel = cp}, sem);
};
constexpr bool paddle_grad_ok(const spmd_info& p) {
  if (p.inputs.size() != 8 || p.outputs.size() != 3) return false;
  for (const std::size_t i : std::array<std::size_t, 5>{0, 1, 2, 3, 7})
    if (p.inputs[i].dims_mapping() != dims_mapping{0, -1, 1, -1}) return false;
  for (std::size_t i = 0; i < 3; ++i)
    if (p.outputs[i].dims_mapping() != dims_mapping{0, -1, 1, -1} || p.outputs[i].is_partial()) return false;
  return p.inputs[4].dims_mapping() == dims_mapping{0, 1, -1} && p.inputs[5].dims_mapping() == dims_mapping{} &&
         p.inputs[6].dims_mapping() == dims_mapping{};
}
static_assert(paddle_grad_ok(paddle_grad(semantics::phi, false)));
static_assert(paddle_grad_ok(paddle_grad(semantics::fluid, false)));
// Asked for, q's chunk stays and k's and v's gradients are partial over the chunks.
constexpr auto paddle_grad_cp = paddle_grad(semantics::phi, true);
static_assert(paddle_grad_cp.outputs[0].dims_mapping()[1] == 1 && !paddle_grad_cp.outputs[0].is_partial());
static_assert(paddle_grad_cp.outputs[1].dims_mapping()[1] == -1 && paddle_grad_cp.outputs[1].partial_dims() == mesh_dims{1});
static_assert(paddle_grad_cp.outputs[2].partial_dims() == mesh_dims{1});

// ==== context parallelism (context_parallel = true) ================================================
// q's sequence stays sharded (each device its chunk of queries), k's and v's are gathered; head
// dims never sharded; a mask's size-1 heads dim never sharded
constexpr std::array<dist_tensor_spec, 5> seq_in{co(m3, {4, 16, 8, 32}, {{}, {0}, {1}, {2}}), co(m3, {4, 16, 8, 32}, {{}, {2}, {}, {}}),
                                                 co(m3, {4, 16, 8, 32}, {{}, {}, {}, {}}), none3,
                                                 co(m3, {4, 1, 16, 16}, {{}, {}, {0}, {}})};
constexpr flash_attention::attributes cp_on{.context_parallel = true};
constexpr auto seq = flash_attention::infer_forward(seq_in, cp_on);
static_assert(is(seq.inputs[0], {{}, {0}, {1}, {}}) && is(seq.inputs[1], {{}, {}, {1}, {}}) && is(seq.inputs[2], {{}, {}, {1}, {}}));
static_assert(is(seq.inputs[4], {{}, {}, {0}, {}}));
static_assert(is(seq.outputs[0], {{}, {0}, {1}, {}}) && is(seq.outputs[1], {{}, {1}, {0}, {}}) && is(seq.outputs[2], {{}, {1}, {0}}));
static_assert(flash_attention::infer_forward(seq_in, cp_on, semantics::phi) == seq);
// not asked for: the sequences are replicated, the mask's too
constexpr auto no_seq = flash_attention::infer_forward(seq_in);
static_assert(is(no_seq.inputs[0], {{}, {}, {1}, {}}) && is(no_seq.inputs[4], {{}, {}, {}, {}}));
static_assert(is(no_seq.outputs[0], {{}, {}, {1}, {}}) && is(no_seq.outputs[1], {{}, {1}, {}, {}}) &&
              is(no_seq.outputs[2], {{}, {1}, {}}));
static_assert(flash_attention::infer_forward(seq_in, {}, semantics::phi) == no_seq);
// the reverse: out's and softmax_lse's query chunks give q's
constexpr std::array<dist_tensor_spec, 4> seq_out{dist_tensor_spec({2, 512, 64, 512}, {m23, {-1, 1, -1, -1}}), none23,
                                                  dist_tensor_spec({2, 64, 512}, {m23, {0, -1, 1}}),
                                                  dist_tensor_spec({2}, {m23, {-1}})};
constexpr std::array<dist_tensor_spec, 5> seq_b_in{q, k, v, none23, none23};
constexpr auto seq_b = flash_attention::infer_backward(seq_b_in, seq_out, cp_on);
static_assert(seq_b.inputs[0].dims_mapping() == dims_mapping{0, 1, -1, -1} && seq_b.inputs[1].dims_mapping() == dims_mapping{0, -1, -1, -1});
static_assert(seq_b.outputs[0].dims_mapping() == dims_mapping{0, 1, -1, -1} && seq_b.outputs[2].dims_mapping() == dims_mapping{0, -1, 1});
// not asked for: they are dropped
constexpr auto no_seq_b = flash_attention::infer_backward(seq_b_in, seq_out, {}, semantics::phi);
static_assert(no_seq_b.inputs[0].dims_mapping() == dims_mapping{0, -1, -1, -1} &&
              no_seq_b.outputs[0].dims_mapping() == dims_mapping{0, -1, -1, -1} &&
              no_seq_b.outputs[2].dims_mapping() == dims_mapping{0, -1, -1});
// phi: q and k shard the batch by different mesh dims: a co-shard
constexpr auto cs = flash_attention::infer_forward(
    {co(m3, {4, 16, 8, 32}, {{0}, {}, {}, {}}), co(m3, {4, 16, 8, 32}, {{1}, {}, {}, {}}), co(m3, {4, 16, 8, 32}, {{}, {}, {2}, {}})},
    {}, semantics::phi);
static_assert(is(cs.inputs[0], {{0, 1}, {}, {2}, {}}) && is(cs.outputs[2], {{0, 1}, {2}, {}}));
// fluid: two mesh dims on one axis conflict
static_assert(flash_attention::try_infer_forward(
    {co(m3, {4, 16, 8, 32}, {{0}, {}, {}, {}}), co(m3, {4, 16, 8, 32}, {{1}, {}, {}, {}}), co(m3, {4, 16, 8, 32}, {{}, {}, {}, {}})})
                  .kind() == error_kind::unimplemented);
// GQA: 8 query heads, 2 kv heads: the heads split by 2 (mesh dim 0) but not by 4 (mesh dims 0, 1)
constexpr auto gqa = flash_attention::infer_forward(
    {co(m3, {4, 16, 8, 32}, {{}, {}, {0, 1}, {}}), co(m3, {4, 16, 2, 32}, {{}, {}, {}, {}}), co(m3, {4, 16, 2, 32}, {{}, {}, {}, {}})},
    {}, semantics::phi);
static_assert(is(gqa.inputs[0], {{}, {}, {0}, {}}) && is(gqa.inputs[1], {{}, {}, {0}, {}}));
constexpr auto gqa_fluid = flash_attention::infer_forward(
    {co(m3, {4, 16, 8, 32}, {{}, {}, {0, 1}, {}}), co(m3, {4, 16, 2, 32}, {{}, {}, {}, {}}), co(m3, {4, 16, 2, 32}, {{}, {}, {}, {}})});
static_assert(is(gqa_fluid.inputs[0], {{}, {}, {}, {}}));
// partial inputs come back whole
constexpr auto part = [] {
  tensor_dist_attr a(m3, {-1, -1, -1, -1});
  a.set_partial_status({0});
  const dist_tensor_spec p({4, 16, 8, 32}, a);
  return flash_attention::infer_forward({p, p, p});
}();
static_assert(!part.inputs[0].is_partial() && !part.outputs[0].is_partial());

// ==== flash_attention_grad ==========================================================================
constexpr dist_tensor_spec gq({4, 16, 8, 32}, {m3, {0, 1, -1, -1}});
constexpr dist_tensor_spec gk({4, 16, 8, 32}, {m3, {-1, -1, 2, -1}});
constexpr dist_tensor_spec gout({4, 16, 8, 32}, {m3, {-1, -1, -1, 1}});
constexpr dist_tensor_spec glse({4, 8, 16}, {m3, {-1, -1, 1}});
constexpr dist_tensor_spec gseed({2}, {m3, {0}});
constexpr auto g = flash_attention_grad::infer_forward({gq, gk, gk, gout, glse, gseed, none3, gout}, {.context_parallel = true});
static_assert(g.inputs.size() == 8 && g.outputs.size() == 3);
// context parallelism: q's sequence on mesh dim 1: k and v gathered again, their gradients
// partial over the chunks
static_assert(g.inputs[0].dims_mapping() == dims_mapping{0, 1, 2, -1} && g.inputs[3].dims_mapping() == dims_mapping{0, 1, 2, -1});
static_assert(g.inputs[1].dims_mapping() == dims_mapping{0, -1, 2, -1} && g.inputs[7].dims_mapping() == dims_mapping{0, 1, 2, -1});
static_assert(g.inputs[4].dims_mapping() == dims_mapping{0, 2, 1} && g.inputs[5].dims_mapping() == dims_mapping{-1});
static_assert(g.inputs[6].dims_mapping() == dims_mapping{});
static_assert(g.outputs[0].dims_mapping() == dims_mapping{0, 1, 2, -1} && !g.outputs[0].is_partial());
static_assert(g.outputs[1].dims_mapping() == dims_mapping{0, -1, 2, -1} && g.outputs[1].partial_dims() == mesh_dims{1});
static_assert(g.outputs[2].dims_mapping() == dims_mapping{0, -1, 2, -1} && g.outputs[2].partial_dims() == mesh_dims{1});
static_assert(flash_attention_grad::infer_forward({gq, gk, gk, gout, glse, gseed, none3, gout}, {.context_parallel = true},
                                                  semantics::phi) == g);
// not asked for: q's sequence and softmax_lse's are replicated, no gradient partial
constexpr auto g_no_cp = flash_attention_grad::infer_forward({gq, gk, gk, gout, glse, gseed, none3, gout});
static_assert(g_no_cp.inputs[0].dims_mapping() == dims_mapping{0, -1, 2, -1} && g_no_cp.inputs[4].dims_mapping() == dims_mapping{0, 2, -1});
static_assert(g_no_cp.outputs[0].dims_mapping() == dims_mapping{0, -1, 2, -1} && !g_no_cp.outputs[0].is_partial());
static_assert(g_no_cp.outputs[1].dims_mapping() == dims_mapping{0, -1, 2, -1} && !g_no_cp.outputs[1].is_partial());
static_assert(flash_attention_grad::infer_forward({gq, gk, gk, gout, glse, gseed, none3, gout}, {}, semantics::phi) == g_no_cp);
// no sequence sharding: no partial gradient
constexpr auto g0 = flash_attention_grad::infer_forward({dist_tensor_spec({4, 16, 8, 32}, {m3, {0, -1, -1, -1}}), gk, gk, gk,
                                                         dist_tensor_spec({4, 8, 16}, m3), gseed, none3, gk});
static_assert(g0.outputs[1].dims_mapping() == dims_mapping{0, -1, 2, -1} && !g0.outputs[1].is_partial());
static_assert(flash_attention_grad::try_infer_backward({gq, gk, gk, gout, glse, gseed, none3, gout}, {gq, gk, gk}).kind() ==
              error_kind::unimplemented);

// ==== errors ========================================================================================
constexpr dist_tensor_spec q4({4, 16, 8, 32}, m3), k4({4, 16, 8, 32}, m3);
static_assert(flash_attention::try_infer_forward({dist_tensor_spec({4, 16, 8}, m3), k4, k4}).error().values[0] == 3);
static_assert(flash_attention::try_infer_forward({q4, dist_tensor_spec({2, 16, 8, 32}, m3), k4}).kind() == error_kind::invalid_argument);
static_assert(flash_attention::try_infer_forward({q4, dist_tensor_spec({4, 16, 3, 32}, m3), dist_tensor_spec({4, 16, 3, 32}, m3)}).error().values[1] == 3);
static_assert(flash_attention::try_infer_forward({q4, dist_tensor_spec({4, 16, 8, 16}, m3), k4}).kind() == error_kind::invalid_argument);
static_assert(flash_attention::try_infer_forward({q4, k4, dist_tensor_spec({4, 12, 8, 32}, m3)}).kind() == error_kind::invalid_argument);
static_assert(flash_attention::try_infer_forward({q4, k4, dist_tensor_spec({4, 16, 4, 32}, m3)}).kind() == error_kind::invalid_argument);
static_assert(flash_attention::try_infer_forward({q4, k4, k4, none3, dist_tensor_spec({4, 8, 16}, m3)}).kind() == error_kind::invalid_argument);
static_assert(flash_attention::try_infer_forward({q4, k4, k4, none3, dist_tensor_spec({4, 8, 16, 15}, m3)}).error().values[2] == 16);
static_assert(flash_attention::try_infer_forward({q4, k4, k4, dist_tensor_spec({2, 1}, m3)}).kind() == error_kind::invalid_argument);
static_assert(flash_attention_grad::try_infer_forward({q4, k4, k4, q4, dist_tensor_spec({4, 8}, m3), gseed, none3, q4}).kind() ==
              error_kind::invalid_argument);
static_assert(flash_attention_grad::try_infer_forward({q4, k4, k4, q4, glse, gseed, none3, dist_tensor_spec({4, 16, 8, 31}, m3)})
                  .error().values[1] == 31);
