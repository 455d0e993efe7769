// A Llama-style decoder's sharding plan (Llama-3-8B's sizes) on a [dp, mp] mesh, for a whole
// training step, built by the model library (<ctspmd/models/llama.hpp>): RMSNorm, rotary
// embeddings, grouped-query flash attention and a SwiGLU MLP, with Megatron-LM's tensor
// parallelism (column-parallel q/k/v and gate/up projections, then row-parallel output
// projections) and, as a variant, sequence parallelism.
//
// As Megatron (and Paddle's Llama) write them, the two points where a tensor-parallel region
// begins and ends are operators of their own: `*.gather` before the column-parallel
// projections, `*.reduce` after the row-parallel one. Without sequence parallelism both hold the
// activations replicated over mp, so the gather moves nothing and the reduce is an all-reduce of
// the partial sums; with it the activations outside the regions are split along the sequence
// over mp, so the gather is an all-gather and the reduce a reduce-scatter.
#ifndef CTSPMD_EXAMPLES_LLAMA_PLAN_HPP
#define CTSPMD_EXAMPLES_LLAMA_PLAN_HPP

#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>
#include <ctspmd/models/llama.hpp>

namespace llama {

using namespace ctspmd;

/// Llama-3-8B (Meta's published config): hidden 4096, 32 layers, 32 query heads and 8 key/value
/// heads of 128, intermediate (SwiGLU) size 14336, vocabulary 128256, context 8192; on a mesh
/// [dp 2, mp 8], one sequence per dp rank. (A model is a type with these members: `forward`'s
/// third argument; examples/llama/llama405b.cpp has another.)
struct llama3_8b {
  static constexpr std::int64_t hidden = 4096, heads = 32, kv_heads = 8, head_dim = 128, ffn = 14336;
  static constexpr std::int64_t vocab = 128256, seq = 8192, layers = 32;
  static constexpr std::int64_t dp = 2, mp = 8, batch = 2;
  static constexpr process_mesh mesh{{dp, mp}};
  static constexpr std::int64_t dp_dim = 0, mp_dim = 1;  ///< the mesh dims of data and tensor parallelism
};
inline constexpr std::int64_t hidden = llama3_8b::hidden, heads = llama3_8b::heads, kv_heads = llama3_8b::kv_heads,
                              head_dim = llama3_8b::head_dim, ffn = llama3_8b::ffn;
inline constexpr std::int64_t vocab = llama3_8b::vocab, seq = llama3_8b::seq, layers = llama3_8b::layers;
inline constexpr std::int64_t dp = llama3_8b::dp, mp = llama3_8b::mp, batch = llama3_8b::batch;
inline constexpr auto bf16 = model::bfloat16;
inline constexpr auto int64 = model::int64;
inline constexpr process_mesh mesh = llama3_8b::mesh;

enum class variant {
  tensor_parallel,
  sequence_parallel,
  down_weight_by_columns,  ///< the MLP's down projection split on its output dim: not Megatron's
};

using plan_type = models::llama_plan;

/// The context-parallel mesh dim of model `M` (its `cp_dim`), or -1.
template <class M>
constexpr std::int64_t cp_dim_of() {
  if constexpr (requires { M::cp_dim; })
    return M::cp_dim;
  else
    return -1;
}

/// Model `M`'s sizes as the Llama builder's config, with `layer_count` layers.
template <class M>
constexpr models::llama_config config_of(std::size_t layer_count) {
  return {.hidden_size = M::hidden,
          .intermediate_size = M::ffn,
          .num_hidden_layers = static_cast<std::int64_t>(layer_count),
          .num_attention_heads = M::heads,
          .num_key_value_heads = M::kv_heads,
          .head_dim = M::head_dim,
          .vocab_size = M::vocab,
          .max_position_embeddings = M::seq};
}

/// The forward plan of a decoder with `Layers` layers (one repeated block) and its loss, of
/// model `M` (sizes, mesh and its dp and mp dims; other mesh dims, such as a pipeline's, hold
/// every tensor whole), built by the model library (`models::llama`). With a `cp_dim`, context
/// parallelism: the sequence split over it through the whole layer (and, outside the
/// tensor-parallel regions under sequence parallelism, over mp too: a co-shard), attention
/// gathering keys and values over cp, and the rotary tables each device's rows (no position
/// ids), as Megatron does. `variant::down_weight_by_columns` edits the built plan: the down
/// projection's weight laid out otherwise.
template <std::size_t Layers, variant V = variant::tensor_parallel, class M = llama3_8b>
struct forward {
  plan_type plan{M::mesh};
  model::tensor_id loss{};

  constexpr forward() {
    const models::layout megatron{
        .dp = M::dp_dim, .tp = M::mp_dim, .cp = cp_dim_of<M>(), .sp = V == variant::sequence_parallel};
    auto m = models::llama(config_of<M>(Layers), M::mesh, megatron, {.seq = M::seq, .micro_batch = M::batch / M::dp});
    if (V == variant::down_weight_by_columns)
      m.plan.reannotate(m.plan.tensor_named("w_down"), tensor_dist_attr(M::mesh, dims_mapping{-1, M::mp_dim}));
    plan = m.plan;
    loss = m.loss;
  }
};

template <std::size_t Layers, variant V = variant::tensor_parallel>
constexpr auto make_forward() {
  return forward<Layers, V>{}.plan;
}

/// ZeRO-1 over dp: the optimizer states sharded, the gradients reduce-scattered and the updated
/// parameters all-gathered.
inline constexpr model::training_options zero{.shard_optimizer_states_on = 0};
/// Megatron's mixed precision with its distributed optimizer: bf16 parameters, fp32 gradients,
/// fp32 master weights and moments, the optimizer state sharded over dp (6 + 12/dp bytes a
/// parameter).
inline constexpr model::training_options megatron{.shard_optimizer_states_on = 0, .gradient_element_bytes = 4,
                                                  .master_weights = true};

/// The training step: forward, backward, adamw and the data-parallel gradient all-reduce (or,
/// with ZeRO's options, the reduce-scatter and all-gather of sharded optimizer states).
/// Full recomputation: each layer keeps its input only.
inline constexpr model::training_options full_recompute{.recompute = model::recompute::full};

template <std::size_t Layers, variant V = variant::tensor_parallel, model::training_options Options = model::training_options{},
          class M = llama3_8b>
constexpr auto make_step() {
  const forward<Layers, V, M> f;
  return model::training_step(f.plan, f.loss, Options);
}

}  // namespace llama

#endif
