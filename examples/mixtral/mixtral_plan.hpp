// Mixtral-8x7B's sharding plan on a [dp, ep] mesh, built by the model library
// (<ctspmd/models/mixtral.hpp>), for a whole training step: each layer a Llama-style attention
// (replicated over the mesh: no tensor parallelism here), then RMSNorm, a linear router, top-2
// dispatch to 8 SwiGLU experts with expert parallelism over all-to-alls, and the weighted
// combine.
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
#include <ctspmd/models/mixtral.hpp>

namespace mixtral {

using namespace ctspmd;

// Mixtral-8x7B (Mistral AI's published config, models::mixtral_8x7b): hidden 4096, intermediate
// 14336, 8 experts, 2 per token, 32 layers. One sequence of 4096 tokens per device; capacity
// factor 1: each device has 4096 x 2 / 8 = 1024 slots per expert (capacity counts them over all
// devices).
inline constexpr std::int64_t hidden = 4096, ffn = 14336, experts = 8, top_k = 2, layers = 32;
inline constexpr std::int64_t dp = 2, ep = 8, devices = dp * ep;  // mesh [dp, ep]
inline constexpr std::int64_t seq = 4096, batch = devices, tokens = batch * seq;
inline constexpr std::int64_t slots_per_device = seq * top_k / experts, capacity = devices * slots_per_device;
inline constexpr process_mesh mesh({dp, ep});

enum class variant {
  expert_parallel,
  experts_split_by_hidden,  ///< the experts' first weights split on the hidden dim instead of the expert dim
  unannotated,  ///< the experts' weights and the all-to-alls' outputs without layouts (for `model::search`)
};

using plan_type = models::mixtral_plan;

/// The model with `Layers` layers, built by the model library: the batch over dp and ep, the
/// experts over ep.
template <std::size_t Layers, variant V = variant::expert_parallel>
constexpr models::built_model<plan_type> make_model() {
  models::mixtral_config c = models::mixtral_8x7b;
  c.base.num_hidden_layers = static_cast<std::int64_t>(Layers);
  auto m = models::mixtral(c, mesh, {.dp = 0, .ep = 1}, {.seq = seq});
  if (V == variant::experts_split_by_hidden)
    m.plan.reannotate(m.plan.tensor_named("w1"), tensor_dist_attr(mesh, dims_mapping{-1, 1, -1}));
  if (V == variant::unannotated)
    for (const char* name : {"w1", "w3", "w2", "to_experts", "from_experts"}) m.plan.unannotate(m.plan.tensor_named(name));
  return m;
}

/// ZeRO-1: the optimizer states sharded over dp, and those of the weights every ep rank holds
/// (all but the experts') over ep too, as Megatron's distributed optimizer shards them.
inline constexpr model::training_options zero1{.shard_optimizer_states_on = 0, .shard_optimizer_states_also_on = 1};
/// The same with full recomputation: each layer keeps its input only.
inline constexpr model::training_options zero1_recompute{
    .shard_optimizer_states_on = 0, .shard_optimizer_states_also_on = 1, .recompute = model::recompute::full};

template <std::size_t Layers, variant V = variant::expert_parallel, model::training_options Options = zero1>
constexpr auto make_step() {
  const auto m = make_model<Layers, V>();
  return model::training_step(m.plan, m.loss, Options);
}

}  // namespace mixtral

#endif
