// A Mixtral-style mixture-of-experts layer's sharding plan (Mixtral-8x7B's sizes) on a
// [dp, ep] mesh, for a whole training step: RMSNorm, a linear router, top-2 dispatch to 8
// SwiGLU experts with expert parallelism over all-to-alls, and the weighted combine. (The
// attention of each layer is as in examples/llama.)
//
// Every device holds its own tokens (the batch is split over dp and ep, one sequence each) and
// dispatches them into its own capacity slots (include/ctspmd/rules/moe.hpp): the dispatched
// tokens [E, C, H] have their capacity dim split like the tokens. An all-to-all over ep moves
// each expert's slots to the device that holds the expert, and another brings the experts'
// outputs back, as Megatron's all-to-all dispatcher and Paddle's auto-parallel MoE do. Each
// all-to-all is written as an `assign` whose output is annotated with the layout wanted (a
// reshard, in Paddle `dist.reshard`).
#ifndef CTSPMD_EXAMPLES_MIXTRAL_PLAN_HPP
#define CTSPMD_EXAMPLES_MIXTRAL_PLAN_HPP

#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>

namespace mixtral {

using namespace ctspmd;

// Mixtral-8x7B (Mistral AI's published config): hidden 4096, intermediate 14336, 8 experts,
// 2 per token, 32 layers. One sequence of 4096 tokens per device; capacity factor 1: each
// device has 4096 x 2 / 8 = 1024 slots per expert (capacity counts them over all devices).
inline constexpr std::int64_t hidden = 4096, ffn = 14336, experts = 8, top_k = 2, layers = 32;
inline constexpr std::int64_t dp = 2, ep = 8, devices = dp * ep;  // mesh [dp, ep]
inline constexpr std::int64_t seq = 4096, batch = devices, tokens = batch * seq;
inline constexpr std::int64_t slots_per_device = seq * top_k / experts, capacity = devices * slots_per_device;
inline constexpr auto bf16 = model::bfloat16;
inline constexpr auto int64 = model::int64;
inline constexpr process_mesh mesh({dp, ep});

enum class variant {
  expert_parallel,
  experts_split_by_hidden,  ///< the experts' first weights split on the hidden dim instead of the expert dim
  unannotated,  ///< the experts' weights and the all-to-alls' outputs without layouts (for `model::search`)
};

using plan_type = model::plan<56, 28>;

template <std::size_t Layers, variant V = variant::expert_parallel>
struct forward {
  plan_type plan{mesh};
  model::tensor_id loss{};

  constexpr forward() {
    auto& p = plan;
    using model::tensor_id;
    const tensor_shape act{batch, seq, hidden};
    const mesh_dims by_device{0, 1};  // split over dp, then ep: each device its own
    auto x0 = p.tensor("x0", act, tensor_dist_attr(mesh, {by_device, {}, {}}), bf16);
    auto out = p.repeat(Layers, x0, [&](plan_type& b, tensor_id x) {
      auto ln_w = b.parameter("ln.weight", {hidden}, bf16);
      auto ln = b.tensor("ln", act, bf16), invvar = b.tensor("ln.invvar", {batch, seq});
      b.op<"rms_norm">({x, ln_w}, {ln, invvar}, {}, "ln");
      auto t = b.tensor("tokens", {tokens, hidden}, bf16);
      b.op<"reshape">({ln}, {t}, {.shape = {tokens, hidden}}, "tokens");
      auto w_router = b.parameter("router", {hidden, experts}, bf16);
      auto logits = b.tensor("router.logits", {tokens, experts}, bf16);
      b.op<"matmul">({t, w_router}, {logits}, {}, "router");
      // Each device routes its tokens into its slots: y's capacity dim is split like the tokens.
      auto y = b.tensor("dispatched", {experts, capacity, hidden}, bf16);
      auto weights = b.tensor("combine_weights", {tokens, top_k}, bf16);
      auto slots = b.tensor("scatter_index", {top_k, tokens}, int64);
      auto offsets = b.tensor("expert_offset", {experts}, int64), ids = b.tensor("expert_id", {tokens, top_k}, int64);
      b.op<"moe_gate_dispatch">({t, logits}, {y, weights, slots, offsets, ids}, {.k = top_k, .capacity = capacity},
                                "dispatch");
      // All-to-all over ep: expert e's slots, from every device of its dp row, to ep rank e.
      auto to_experts = V == variant::unannotated
                            ? b.tensor("to_experts", {experts, capacity, hidden}, bf16)
                            : b.tensor("to_experts", {experts, capacity, hidden}, tensor_dist_attr(mesh, {{1}, {0}, {}}), bf16);
      b.op<"assign">({y}, {to_experts}, {}, "all_to_all.dispatch");
      // Expert parallelism: expert e's weights live on ep rank e.
      const dims_mapping by_expert{1, -1, -1};
      const auto weight = [&](std::string_view name, const tensor_shape& shape, const dims_mapping& layout) {
        return V == variant::unannotated ? b.parameter(name, shape, bf16) : b.parameter(name, shape, layout, bf16);
      };
      auto w1 = weight("w1", {experts, hidden, ffn}, V == variant::experts_split_by_hidden ? dims_mapping{-1, 1, -1} : by_expert);
      auto w3 = weight("w3", {experts, hidden, ffn}, by_expert);
      auto w2 = weight("w2", {experts, ffn, hidden}, by_expert);
      auto gate = b.tensor("gate", {experts, capacity, ffn}, bf16), up = b.tensor("up", {experts, capacity, ffn}, bf16);
      b.op<"matmul">({to_experts, w1}, {gate}, {}, "experts.w1");
      b.op<"matmul">({to_experts, w3}, {up}, {}, "experts.w3");
      auto act_e = b.tensor("swiglu", {experts, capacity, ffn}, bf16);
      b.op<"swiglu">({gate, up}, {act_e}, {}, "experts.swiglu");
      auto o = b.tensor("experts.out", {experts, capacity, hidden}, bf16);
      b.op<"matmul">({act_e, w2}, {o}, {}, "experts.w2");
      // All-to-all back: each device gets its own slots' outputs.
      auto back = V == variant::unannotated
                      ? b.tensor("from_experts", {experts, capacity, hidden}, bf16)
                      : b.tensor("from_experts", {experts, capacity, hidden}, tensor_dist_attr(mesh, {{}, by_device, {}}), bf16);
      b.op<"assign">({o}, {back}, {}, "all_to_all.combine");
      // Each device's rows are its slots, expert-major (scatter_index's order): [E, C, H] as
      // [E, devices, slots, H], devices first, flattened.
      auto blocks = b.tensor("rows.blocks", {experts, devices, slots_per_device, hidden}, bf16);
      b.op<"reshape">({back}, {blocks}, {.shape = {experts, devices, slots_per_device, hidden}}, "rows.split");
      auto by_block = b.tensor("rows.by_device", {devices, experts, slots_per_device, hidden}, bf16);
      b.op<"transpose">({blocks}, {by_block}, {.perm = {1, 0, 2, 3}}, "rows.by_device");
      auto rows = b.tensor("rows", {experts * capacity, hidden}, bf16);
      b.op<"reshape">({by_block}, {rows}, {.shape = {experts * capacity, hidden}}, "rows");
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

/// ZeRO-1 over dp: each dp rank keeps half of its experts' fp32 moments (without it, the
/// moments alone take 42 GiB a device and the step's peak is 90 GiB).
inline constexpr model::training_options zero1{.shard_optimizer_states_on = 0};

template <std::size_t Layers, variant V = variant::expert_parallel>
constexpr auto make_step() {
  const forward<Layers, V> f;
  return model::training_step(f.plan, f.loss, zero1);
}

}  // namespace mixtral

#endif
