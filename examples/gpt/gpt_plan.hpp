// A GPT-style decoder's sharding plan on a [dp, mp] mesh, built by the model library
// (<ctspmd/models/gpt.hpp>) with Megatron-LM's tensor parallelism: in attention and in the MLP,
// a column-parallel matmul (weight split on its output dim over mp) feeds a row-parallel one
// (weight split on its input dim), so the activations in between stay sharded and only the
// row-parallel output, partial over mp, is all-reduced. With sequence parallelism, the
// activations outside those regions are also sharded along the sequence dim on mp: each
// all-reduce becomes an all-gather before the column-parallel matmul and a reduce-scatter after
// the row-parallel one. The attention core is written out (Q Kᵀ, scale, softmax, the product
// with V), as before flash attention.
#ifndef CTSPMD_EXAMPLES_GPT_PLAN_HPP
#define CTSPMD_EXAMPLES_GPT_PLAN_HPP

#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>
#include <ctspmd/models/gpt.hpp>

namespace gpt {

using namespace ctspmd;

// Model and mesh sizes.
inline constexpr std::int64_t dp = 2, mp = 4;                  // mesh [dp, mp]
inline constexpr std::int64_t batch = 8, seq = 1024, hidden = 1024, heads = 16, head_dim = 64;
inline constexpr std::int64_t ffn = 4 * hidden, vocab = 32000;
inline constexpr auto bf16 = model::bfloat16;
inline constexpr auto int64 = model::int64;
inline constexpr process_mesh mesh({dp, mp});

/// Which plan: Megatron tensor parallelism, the same with sequence parallelism, or one with a
/// mis-sharded matmul (for the compile-fail tests: the library's plan with one weight laid out
/// otherwise).
enum class variant {
  tensor_parallel,
  sequence_parallel,
  row_weight_on_dp,   ///< attention's output weight split on the dp mesh dim: a conflict
  up_weight_by_rows,  ///< the MLP's first weight split by rows: extra reshards in the layer
};

using plan_type = models::gpt_plan;

/// The decoder with `Layers` layers (one repeated block), its own head (untied), and its loss.
template <std::size_t Layers, variant V = variant::tensor_parallel>
constexpr models::built_model<plan_type> make_model() {
  constexpr models::gpt_config config{.n_embd = hidden, .n_layer = static_cast<std::int64_t>(Layers), .n_head = heads,
                                      .n_positions = seq, .vocab_size = vocab, .tie_word_embeddings = false};
  auto m = models::gpt(config, mesh, {.dp = 0, .tp = 1, .sp = V == variant::sequence_parallel},
                       {.seq = seq, .micro_batch = batch / dp, .flash_attention = false});
  if (V == variant::row_weight_on_dp)
    m.plan.reannotate(m.plan.tensor_named("c_proj.weight"), tensor_dist_attr(mesh, dims_mapping{0, -1}));
  if (V == variant::up_weight_by_rows)
    m.plan.reannotate(m.plan.tensor_named("c_fc.weight"), tensor_dist_attr(mesh, dims_mapping{1, -1}));
  return m;
}

/// The forward plan of that decoder.
template <std::size_t Layers, variant V = variant::tensor_parallel>
constexpr plan_type make_plan() {
  return make_model<Layers, V>().plan;
}

/// The training step of that decoder: forward, backward and adamw.
template <std::size_t Layers, variant V = variant::tensor_parallel>
constexpr auto make_step() {
  const auto m = make_model<Layers, V>();
  return model::training_step(m.plan, m.loss);
}

}  // namespace gpt

#endif
