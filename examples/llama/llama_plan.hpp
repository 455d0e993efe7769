// A Llama-style decoder's sharding plan (Llama-3-8B's sizes) on a [dp, mp] mesh, for a whole
// training step: RMSNorm, rotary embeddings, grouped-query flash attention and a SwiGLU MLP,
// with Megatron-LM's tensor parallelism (column-parallel q/k/v and gate/up projections, then
// row-parallel output projections) and, as a variant, sequence parallelism.
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

using plan_type = model::plan<72, 40>;

/// The context-parallel mesh dim of model `M` (its `cp_dim`), or -1.
template <class M>
constexpr std::int64_t cp_dim_of() {
  if constexpr (requires { M::cp_dim; })
    return M::cp_dim;
  else
    return -1;
}

/// The forward plan of a decoder with `Layers` layers (one repeated block) and its loss, of
/// model `M` (sizes, mesh and its dp and mp dims; other mesh dims, such as a pipeline's, hold
/// every tensor whole). With a `cp_dim`, context parallelism: the sequence split over it through
/// the whole layer (and, outside the tensor-parallel regions under sequence parallelism, over mp
/// too: a co-shard), attention gathering keys and values over cp, and the rotary tables each
/// device's rows (no position ids), as Megatron does.
template <std::size_t Layers, variant V = variant::tensor_parallel, class M = llama3_8b>
struct forward {
  plan_type plan{M::mesh};
  model::tensor_id loss{};

  constexpr forward() {
    constexpr bool sp = V == variant::sequence_parallel;
    constexpr std::int64_t on_dp = M::dp_dim, on_mp = M::mp_dim, on_cp = cp_dim_of<M>();
    auto& p = plan;
    using model::tensor_id;
    const tensor_shape act{M::batch, M::seq, M::hidden};
    mesh_dims seq_inside, seq_outside;  // the sequence's mesh dims inside and between the regions
    if (on_cp >= 0) seq_inside.push_back(on_cp);
    seq_outside = seq_inside;
    if (sp) seq_outside.push_back(on_mp);
    const tensor_dist_attr outside(M::mesh, {mesh_dims{on_dp}, seq_outside, mesh_dims{}});
    const tensor_dist_attr inside(M::mesh, {mesh_dims{on_dp}, seq_inside, mesh_dims{}});
    const tensor_dist_attr tokens(M::mesh, {mesh_dims{on_dp}, seq_inside});

    auto ids = p.tensor("ids", {M::batch, M::seq}, tokens, int64);
    auto wte = p.parameter("wte", {M::vocab, M::hidden}, {on_mp, -1}, bf16);  // vocabulary-parallel embedding
    auto emb = p.tensor("emb", act, bf16);
    // Megatron's vocabulary-parallel embedding: each device looks up the ids in its rows (others
    // give zeros), so the output is partial over mp.
    p.op<"c_embedding">({wte, ids}, {emb}, {.vocab_size = M::vocab}, "embed");
    auto x0 = p.tensor("x0", act, outside, bf16);
    p.op<"assign">({emb}, {x0}, {}, "embed.reduce");
    // Rotary tables [1, seq, 1, head_dim] and positions, the same in every layer.
    auto sin = p.tensor("rope.sin", {1, M::seq, 1, M::head_dim}, bf16), cos = p.tensor("rope.cos", {1, M::seq, 1, M::head_dim}, bf16);
    auto pos = on_cp >= 0 ? p.tensor("rope.no_positions", {}) : p.tensor("position_ids", {M::batch, M::seq}, tokens, int64);

    auto out = p.repeat(Layers, x0, [&](plan_type& b, tensor_id x) {
      // ---- attention ----
      auto ln1_w = b.parameter("ln1.weight", {M::hidden}, bf16);
      auto ln1 = b.tensor("ln1", act, bf16), ln1_invvar = b.tensor("ln1.invvar", {M::batch, M::seq});
      b.op<"rms_norm">({x, ln1_w}, {ln1, ln1_invvar}, {}, "ln1");
      auto h = b.tensor("attn.in", act, inside, bf16);
      b.op<"assign">({ln1}, {h}, {}, "attn.gather");
      auto wq = b.parameter("wq", {M::hidden, M::heads * M::head_dim}, {-1, on_mp}, bf16);  // column parallel
      auto wk = b.parameter("wk", {M::hidden, M::kv_heads * M::head_dim}, {-1, on_mp}, bf16);
      auto wv = b.parameter("wv", {M::hidden, M::kv_heads * M::head_dim}, {-1, on_mp}, bf16);
      auto q = b.tensor("q", {M::batch, M::seq, M::heads * M::head_dim}, bf16);
      auto k = b.tensor("k", {M::batch, M::seq, M::kv_heads * M::head_dim}, bf16);
      auto v = b.tensor("v", {M::batch, M::seq, M::kv_heads * M::head_dim}, bf16);
      b.op<"matmul">({h, wq}, {q}, {}, "attn.q");
      b.op<"matmul">({h, wk}, {k}, {}, "attn.k");
      b.op<"matmul">({h, wv}, {v}, {}, "attn.v");
      auto q4 = b.tensor("q.heads", {M::batch, M::seq, M::heads, M::head_dim}, bf16);
      auto k4 = b.tensor("k.heads", {M::batch, M::seq, M::kv_heads, M::head_dim}, bf16);
      auto v4 = b.tensor("v.heads", {M::batch, M::seq, M::kv_heads, M::head_dim}, bf16);
      b.op<"reshape">({q}, {q4}, {.shape = {M::batch, M::seq, M::heads, M::head_dim}}, "attn.q.heads");
      b.op<"reshape">({k}, {k4}, {.shape = {M::batch, M::seq, M::kv_heads, M::head_dim}}, "attn.k.heads");
      b.op<"reshape">({v}, {v4}, {.shape = {M::batch, M::seq, M::kv_heads, M::head_dim}}, "attn.v.heads");
      auto no_v = b.tensor("rope.no_v", {}), no_v_out = b.tensor("rope.no_v.out", {});
      auto qr = b.tensor("q.rope", {M::batch, M::seq, M::heads, M::head_dim}, bf16);
      auto kr = b.tensor("k.rope", {M::batch, M::seq, M::kv_heads, M::head_dim}, bf16);
      b.op<"fused_rope">({q4, k4, no_v, sin, cos, pos}, {qr, kr, no_v_out}, {}, "attn.rope");
      auto ctx = b.tensor("ctx", {M::batch, M::seq, M::heads, M::head_dim}, bf16);
      auto probs = b.tensor("attn.softmax", {M::batch, M::heads, M::seq, M::seq}, bf16);
      auto lse = b.tensor("attn.lse", {M::batch, M::heads, M::seq}), seed = b.tensor("attn.seed", {2}, int64);
      b.op<"flash_attention">({qr, kr, v4}, {ctx, probs, lse, seed}, {.causal = true, .context_parallel = on_cp >= 0},
                             "attn.core");
      auto ctx_flat = b.tensor("ctx.flat", act, bf16);
      b.op<"reshape">({ctx}, {ctx_flat}, {.shape = {M::batch, M::seq, M::hidden}}, "attn.merge");
      auto wo = b.parameter("wo", {M::heads * M::head_dim, M::hidden}, {on_mp, -1}, bf16);  // row parallel
      auto o = b.tensor("attn.o", act, bf16);
      b.op<"matmul">({ctx_flat, wo}, {o}, {}, "attn.o");  // partial over mp
      auto attn = b.tensor("attn.out", act, outside, bf16);
      b.op<"assign">({o}, {attn}, {}, "attn.reduce");
      auto x1 = b.tensor("x1", act, bf16);
      b.op<"add">({x, attn}, {x1}, {}, "attn.residual");

      // ---- SwiGLU MLP ----
      auto ln2_w = b.parameter("ln2.weight", {M::hidden}, bf16);
      auto ln2 = b.tensor("ln2", act, bf16), ln2_invvar = b.tensor("ln2.invvar", {M::batch, M::seq});
      b.op<"rms_norm">({x1, ln2_w}, {ln2, ln2_invvar}, {}, "ln2");
      auto m = b.tensor("mlp.in", act, inside, bf16);
      b.op<"assign">({ln2}, {m}, {}, "mlp.gather");
      auto w_gate = b.parameter("w_gate", {M::hidden, M::ffn}, {-1, on_mp}, bf16);  // column parallel
      auto w_up = b.parameter("w_up", {M::hidden, M::ffn}, {-1, on_mp}, bf16);
      auto gate = b.tensor("gate", {M::batch, M::seq, M::ffn}, bf16), up = b.tensor("up", {M::batch, M::seq, M::ffn}, bf16);
      b.op<"matmul">({m, w_gate}, {gate}, {}, "mlp.gate");
      b.op<"matmul">({m, w_up}, {up}, {}, "mlp.up");
      auto act_ffn = b.tensor("swiglu", {M::batch, M::seq, M::ffn}, bf16);
      b.op<"swiglu">({gate, up}, {act_ffn}, {}, "mlp.swiglu");
      auto w_down = V == variant::down_weight_by_columns ? b.parameter("w_down", {M::ffn, M::hidden}, {-1, on_mp}, bf16)
                                                         : b.parameter("w_down", {M::ffn, M::hidden}, {on_mp, -1}, bf16);  // row parallel
      auto d = b.tensor("mlp.d", act, bf16);
      b.op<"matmul">({act_ffn, w_down}, {d}, {}, "mlp.down");  // partial over mp
      auto down = b.tensor("mlp.out", act, outside, bf16);
      b.op<"assign">({d}, {down}, {}, "mlp.reduce");
      auto x2 = b.tensor("x2", act, bf16);
      b.op<"add">({x1, down}, {x2}, {}, "mlp.residual");
      return x2;
    });

    auto norm_w = p.parameter("norm.weight", {M::hidden}, bf16);
    auto normed = p.tensor("norm", act, bf16), norm_invvar = p.tensor("norm.invvar", {M::batch, M::seq});
    p.op<"rms_norm">({out, norm_w}, {normed, norm_invvar}, {}, "norm");
    auto head_in = p.tensor("head.in", act, inside, bf16);
    p.op<"assign">({normed}, {head_in}, {}, "head.gather");
    auto w_lm = p.parameter("lm_head", {M::hidden, M::vocab}, {-1, on_mp}, bf16);  // vocabulary parallel
    auto logits = p.tensor("logits", {M::batch, M::seq, M::vocab}, bf16);
    p.op<"matmul">({head_in, w_lm}, {logits}, {}, "lm_head");
    auto labels = p.tensor("labels", {M::batch, M::seq, 1}, tensor_dist_attr(M::mesh, {mesh_dims{on_dp}, seq_inside, mesh_dims{}}),
                           int64);
    auto probs = p.tensor("softmax", {M::batch, M::seq, M::vocab}), token_loss = p.tensor("loss", {M::batch, M::seq, 1});
    // Megatron's vocabulary-parallel cross entropy: each device holds a slice of the vocabulary.
    p.op<"c_softmax_with_cross_entropy">({logits, labels}, {probs, token_loss}, {.nranks = M::mp}, "loss");
    // (Its own max and sum all-reduces over the vocabulary are inside its kernel, not reshards.)
    loss = token_loss;
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
