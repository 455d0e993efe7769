// A Mixtral-style mixture-of-experts layer's sharding plan (Mixtral-8x7B's sizes) on a
// [dp, ep] mesh, for a whole training step: RMSNorm, a linear router, top-2 dispatch to 8
// SwiGLU experts with expert parallelism (each device of an ep group holds one expert's
// weights), and the weighted combine. (The attention of each layer is as in examples/llama.)
//
// ctspmd's dispatch and combine rules (include/ctspmd/rules/moe.hpp) keep a token's capacity
// slot global: which slot a token gets depends on every earlier token that chose its expert,
// so the dispatch reads every token of its group, and the combine gathers expert rows by index.
#ifndef CTSPMD_EXAMPLES_MIXTRAL_PLAN_HPP
#define CTSPMD_EXAMPLES_MIXTRAL_PLAN_HPP

#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>

namespace mixtral {

using namespace ctspmd;

// Mixtral-8x7B (Mistral AI's published config): hidden 4096, intermediate 14336, 8 experts,
// 2 per token, 32 layers. A micro-batch of 2 x 4096 tokens; capacity factor 1: each expert has
// tokens x 2 / 8 slots.
inline constexpr std::int64_t hidden = 4096, ffn = 14336, experts = 8, top_k = 2, layers = 32;
inline constexpr std::int64_t batch = 2, seq = 4096, tokens = batch * seq, capacity = tokens * top_k / experts;
inline constexpr std::int64_t dp = 2, ep = 8;  // mesh [dp, ep]
inline constexpr auto bf16 = model::bfloat16;
inline constexpr auto int64 = model::int64;
inline constexpr process_mesh mesh({dp, ep});

enum class variant {
  expert_parallel,
  experts_split_by_hidden,  ///< the experts' first weights split on the hidden dim instead of the expert dim
};

using plan_type = model::plan<48, 24>;

template <std::size_t Layers, variant V = variant::expert_parallel>
struct forward {
  plan_type plan{mesh};
  model::tensor_id loss{};

  constexpr forward() {
    auto& p = plan;
    using model::tensor_id;
    const tensor_shape act{batch, seq, hidden};
    auto x0 = p.tensor("x0", act, {0, -1, -1}, bf16);
    auto out = p.repeat(Layers, x0, [&](plan_type& b, tensor_id x) {
      auto ln_w = b.parameter("ln.weight", {hidden}, bf16);
      auto ln = b.tensor("ln", act, bf16), invvar = b.tensor("ln.invvar", {batch, seq});
      b.op<"rms_norm">({x, ln_w}, {ln, invvar}, {}, "ln");
      auto t = b.tensor("tokens", {tokens, hidden}, bf16);
      b.op<"reshape">({ln}, {t}, {.shape = {tokens, hidden}}, "tokens");
      auto w_router = b.parameter("router", {hidden, experts}, bf16);
      auto logits = b.tensor("router.logits", {tokens, experts}, bf16);
      b.op<"matmul">({t, w_router}, {logits}, {}, "router");
      auto y = b.tensor("dispatched", {experts, capacity, hidden}, bf16);
      auto weights = b.tensor("combine_weights", {tokens, top_k}, bf16);
      auto slots = b.tensor("scatter_index", {top_k, tokens}, int64);
      auto offsets = b.tensor("expert_offset", {experts}, int64), ids = b.tensor("expert_id", {tokens, top_k}, int64);
      b.op<"moe_gate_dispatch">({t, logits}, {y, weights, slots, offsets, ids}, {.k = top_k, .capacity = capacity},
                                "dispatch");
      // Expert parallelism: expert e's weights live on ep rank e.
      const dims_mapping by_expert{1, -1, -1};
      auto w1 = V == variant::experts_split_by_hidden ? b.parameter("w1", {experts, hidden, ffn}, {-1, 1, -1}, bf16)
                                                       : b.parameter("w1", {experts, hidden, ffn}, by_expert, bf16);
      auto w3 = b.parameter("w3", {experts, hidden, ffn}, by_expert, bf16);
      auto w2 = b.parameter("w2", {experts, ffn, hidden}, by_expert, bf16);
      auto gate = b.tensor("gate", {experts, capacity, ffn}, bf16), up = b.tensor("up", {experts, capacity, ffn}, bf16);
      b.op<"matmul">({y, w1}, {gate}, {}, "experts.w1");
      b.op<"matmul">({y, w3}, {up}, {}, "experts.w3");
      auto act_e = b.tensor("swiglu", {experts, capacity, ffn}, bf16);
      b.op<"swiglu">({gate, up}, {act_e}, {}, "experts.swiglu");
      auto o = b.tensor("experts.out", {experts, capacity, hidden}, bf16);
      b.op<"matmul">({act_e, w2}, {o}, {}, "experts.w2");
      auto rows = b.tensor("expert.rows", {experts * capacity, hidden}, bf16);
      b.op<"reshape">({o}, {rows}, {.shape = {experts * capacity, hidden}}, "experts.rows");
      auto slots_t = b.tensor("scatter_index.t", {tokens, top_k}, int64);
      b.op<"transpose">({slots}, {slots_t}, {.perm = {1, 0}}, "slots");
      auto combined = b.tensor("combined", {tokens, hidden}, bf16);
      b.op<"moe_combine">({rows, weights, slots_t}, {combined}, {}, "combine");
      auto moe = b.tensor("moe.out", act, bf16);
      b.op<"reshape">({combined}, {moe}, {.shape = {batch, seq, hidden}}, "moe.out");
      auto x2 = b.tensor("x2", act, bf16);
      b.op<"add">({x, moe}, {x2}, {}, "residual");
      return x2;
    });
    loss = out;
  }
};

template <std::size_t Layers, variant V = variant::expert_parallel>
constexpr auto make_step() {
  const forward<Layers, V> f;
  return model::training_step(f.plan, f.loss);
}

}  // namespace mixtral

#endif
