#ifndef CTSPMD_MODELS_LLAMA_HPP
#define CTSPMD_MODELS_LLAMA_HPP
/// \file The Llama family from its Hugging Face config: Llama 2 / 3 / 3.1, Mistral, Qwen2.
///
///     constexpr models::llama_config c = models::llama3_8b;  // config.json's fields, by name
///     constexpr auto m = models::llama(c, process_mesh({2, 8}), {.dp = 0, .tp = 1, .sp = true}, {.seq = 8192});
///     constexpr auto step = model::training_step(m.plan, m.loss);
///
/// A decoder of `num_hidden_layers` layers (the plan's repeated block): token embedding, then
/// per layer RMSNorm, q/k/v projections (with biases for Qwen2: `qkv_bias`), rotary embedding,
/// grouped-query causal flash attention (`num_key_value_heads` key/value heads of `head_dim`),
/// the output projection and a residual; RMSNorm, a SwiGLU MLP (`intermediate_size`) and a
/// residual; a final RMSNorm, the head (`tie_word_embeddings`: the embedding's weight) and the
/// cross entropy. All bf16 (statistics and the loss fp32), as the models train.
///
/// Layout (`models::layout`): the batch over dp; with tp Megatron-LM's tensor parallelism
/// (column-parallel q/k/v, gate and up; row-parallel output and down projections; the
/// vocabulary-parallel embedding, head and cross entropy), the two points where a tensor-parallel
/// region begins and ends written as `assign`s (`*.gather`, `*.reduce`): with `sp` the
/// activations between the regions are split along the sequence over tp, so the gather is an
/// all-gather and the reduce a reduce-scatter; without it an all-reduce. With cp the sequence is
/// split over cp through the whole layer and attention gathers keys and values
/// (`flash_attention`'s `context_parallel`). The vocabulary is padded as Megatron does when tp
/// does not divide it (`padded_vocab`); the embedding and the head then have the padded rows.
///
/// `parameter_count(m.plan)` is the model's parameter count (Llama-3-8B: 8,030,261,248), computed
/// from the plan's parameters, unpadded vocabulary.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/model/plan.hpp>
#include <ctspmd/models/common.hpp>

namespace ctspmd::models {

/// A Llama-family `config.json`: its fields, by their names (0 where a field may be absent:
/// `num_key_value_heads` then is `num_attention_heads`, `head_dim` is hidden / heads).
struct llama_config {
  std::int64_t hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0, num_attention_heads = 0;
  std::int64_t num_key_value_heads = 0, head_dim = 0, vocab_size = 0, max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  ///< q, k and v projections with biases (Qwen2's architecture; `attention_bias` in Llama's)
  constexpr std::int64_t kv_heads() const noexcept { return num_key_value_heads > 0 ? num_key_value_heads : num_attention_heads; }
  constexpr std::int64_t head_size() const noexcept {
    return head_dim > 0 ? head_dim : num_attention_heads > 0 ? hidden_size / num_attention_heads : 0;
  }
};

/// Published configs (the fields above of each model's `config.json`, models/configs/).
inline constexpr llama_config llama3_8b{.hidden_size = 4096, .intermediate_size = 14336, .num_hidden_layers = 32,
                                        .num_attention_heads = 32, .num_key_value_heads = 8, .vocab_size = 128256,
                                        .max_position_embeddings = 8192};
inline constexpr llama_config llama3_70b{.hidden_size = 8192, .intermediate_size = 28672, .num_hidden_layers = 80,
                                         .num_attention_heads = 64, .num_key_value_heads = 8, .vocab_size = 128256,
                                         .max_position_embeddings = 8192};
inline constexpr llama_config llama3_1_405b{.hidden_size = 16384, .intermediate_size = 53248, .num_hidden_layers = 126,
                                            .num_attention_heads = 128, .num_key_value_heads = 8, .vocab_size = 128256,
                                            .max_position_embeddings = 131072};
inline constexpr llama_config qwen2_7b{.hidden_size = 3584, .intermediate_size = 18944, .num_hidden_layers = 28,
                                       .num_attention_heads = 28, .num_key_value_heads = 4, .vocab_size = 152064,
                                       .max_position_embeddings = 131072, .qkv_bias = true};
inline constexpr llama_config qwen2_72b{.hidden_size = 8192, .intermediate_size = 29568, .num_hidden_layers = 80,
                                        .num_attention_heads = 64, .num_key_value_heads = 8, .vocab_size = 152064,
                                        .max_position_embeddings = 131072, .qkv_bias = true};

/// The plan a Llama-family builder returns: one layer's tensors and operators, and the rest.
using llama_plan = model::plan<84, 44>;

namespace detail {
/// Checks a Llama-family config's fields and the run's sizes.
constexpr void check_llama(const llama_config& c, const run_shape& r) {
  check_positive(c.hidden_size, "config field hidden_size is {}: it must be positive");
  check_positive(c.intermediate_size, "config field intermediate_size is {}: it must be positive");
  check_positive(c.num_hidden_layers, "config field num_hidden_layers is {}: it must be positive");
  check_positive(c.num_attention_heads, "config field num_attention_heads is {}: it must be positive");
  check_positive(c.vocab_size, "config field vocab_size is {}: it must be positive");
  check_positive(r.seq, "seq is {}: it must be positive");
  check_positive(r.micro_batch, "micro_batch is {}: it must be positive");
  if (c.head_dim < 0 || (c.head_dim == 0 && c.hidden_size % c.num_attention_heads != 0))
    raise(make_error(error_kind::invalid_argument, "models",
                     "head_dim is {}, and hidden_size ({}) is not a multiple of num_attention_heads ({})", c.head_dim,
                     c.hidden_size, c.num_attention_heads));
  if (c.num_key_value_heads < 0 || c.num_attention_heads % c.kv_heads() != 0)
    raise(make_error(error_kind::invalid_argument, "models",
                     "num_attention_heads ({}) is not a multiple of num_key_value_heads ({})", c.num_attention_heads,
                     c.num_key_value_heads));
}

/// The parts of a Llama-style decoder (embedding, attention, SwiGLU MLP, head), on plan `Plan`,
/// laid out as `layout` asks (see the file comment). `batch_dims`: the mesh dims the batch is
/// split over (dp; a mixture of experts also ep).
template <class Plan>
struct llama_decoder {
  static constexpr auto bf16 = model::bfloat16;
  static constexpr auto int64 = model::int64;
  using tensor_id = model::tensor_id;

  const llama_config& c;
  const layout& l;
  process_mesh mesh;
  mesh_dims batch_dims;
  std::int64_t batch, seq, hidden, heads, kv_heads, head_dim, mp, vocab;
  tensor_shape act;
  mesh_dims seq_inside, seq_outside;  ///< the sequence's mesh dims inside and between the tp regions
  tensor_dist_attr outside, inside, tokens;
  tensor_id wte{}, sin{}, cos{}, pos{};

  constexpr llama_decoder(const llama_config& config, const process_mesh& m, const layout& lay, const run_shape& r,
                          const mesh_dims& split_batch)
      : c(config), l(lay), mesh(m), batch_dims(split_batch), batch(r.micro_batch), seq(r.seq), hidden(c.hidden_size),
        heads(c.num_attention_heads), kv_heads(c.kv_heads()), head_dim(c.head_size()), mp(size_of(m, lay.tp)),
        vocab(padded_vocab(c.vocab_size, mp)), seq_inside(dims_of(lay.cp)) {
    for (auto d : batch_dims) batch *= m.dim_size(d);
    act = {batch, seq, hidden};
    seq_outside = seq_inside;
    if (l.sp) seq_outside.push_back(l.tp);
    outside = tensor_dist_attr(mesh, {batch_dims, seq_outside, mesh_dims{}});
    inside = tensor_dist_attr(mesh, {batch_dims, seq_inside, mesh_dims{}});
    tokens = tensor_dist_attr(mesh, {batch_dims, seq_inside});
  }

  /// The token embedding (vocabulary parallel), the rotary tables and positions: the first
  /// layer's input.
  constexpr tensor_id embed(Plan& p) {
    const declarer<Plan> d{p, l.annotated};
    auto ids = data_tensor(p, l, "ids", {batch, seq}, tokens);
    wte = d.parameter("wte", {vocab, hidden}, {l.tp, -1}, bf16);
    auto emb = p.tensor("emb", act, bf16);
    // Megatron's vocabulary-parallel embedding: each device looks up the ids in its rows (others
    // give zeros), so the output is partial over tp.
    p.template op<"c_embedding">({wte, ids}, {emb}, {.vocab_size = vocab}, "embed");
    auto x0 = d.tensor("x0", act, outside, bf16);
    p.template op<"assign">({emb}, {x0}, {}, "embed.reduce");
    // Rotary tables [1, seq, 1, head_dim] and positions, the same in every layer.
    sin = p.tensor("rope.sin", {1, seq, 1, head_dim}, bf16);
    cos = p.tensor("rope.cos", {1, seq, 1, head_dim}, bf16);
    pos = l.cp >= 0 ? p.tensor("rope.no_positions", {}) : data_tensor(p, l, "position_ids", {batch, seq}, tokens);
    return x0;
  }

  /// RMSNorm, grouped-query attention and the residual: x + attention(norm(x)).
  constexpr tensor_id attention(Plan& b, tensor_id x) const {
    const declarer<Plan> e{b, l.annotated};
    const std::int64_t on_mp = l.tp;
    auto ln1_w = b.parameter("ln1.weight", {hidden}, bf16);
    auto ln1 = b.tensor("ln1", act, bf16), ln1_invvar = b.tensor("ln1.invvar", {batch, seq});
    b.template op<"rms_norm">({x, ln1_w}, {ln1, ln1_invvar}, {}, "ln1");
    auto h = e.tensor("attn.in", act, inside, bf16);
    b.template op<"assign">({ln1}, {h}, {}, "attn.gather");
    auto wq = e.parameter("wq", {hidden, heads * head_dim}, {-1, on_mp}, bf16);  // column parallel
    auto wk = e.parameter("wk", {hidden, kv_heads * head_dim}, {-1, on_mp}, bf16);
    auto wv = e.parameter("wv", {hidden, kv_heads * head_dim}, {-1, on_mp}, bf16);
    auto q = b.tensor("q", {batch, seq, heads * head_dim}, bf16);
    auto k = b.tensor("k", {batch, seq, kv_heads * head_dim}, bf16);
    auto v = b.tensor("v", {batch, seq, kv_heads * head_dim}, bf16);
    b.template op<"matmul">({h, wq}, {q}, {}, "attn.q");
    b.template op<"matmul">({h, wk}, {k}, {}, "attn.k");
    b.template op<"matmul">({h, wv}, {v}, {}, "attn.v");
    if (c.qkv_bias) {  // Qwen2: biases on q, k and v, split as their columns
      const auto bias = [&](std::string_view weight, std::string_view sum, tensor_id t, std::int64_t n) {
        auto w = e.parameter(weight, {n}, {on_mp}, bf16);
        auto y = b.tensor(sum, {batch, seq, n}, bf16);
        b.template op<"add">({t, w}, {y}, {}, sum);
        return y;
      };
      q = bias("bq", "attn.q.bias", q, heads * head_dim);
      k = bias("bk", "attn.k.bias", k, kv_heads * head_dim);
      v = bias("bv", "attn.v.bias", v, kv_heads * head_dim);
    }
    auto q4 = b.tensor("q.heads", {batch, seq, heads, head_dim}, bf16);
    auto k4 = b.tensor("k.heads", {batch, seq, kv_heads, head_dim}, bf16);
    auto v4 = b.tensor("v.heads", {batch, seq, kv_heads, head_dim}, bf16);
    b.template op<"reshape">({q}, {q4}, {.shape = {batch, seq, heads, head_dim}}, "attn.q.heads");
    b.template op<"reshape">({k}, {k4}, {.shape = {batch, seq, kv_heads, head_dim}}, "attn.k.heads");
    b.template op<"reshape">({v}, {v4}, {.shape = {batch, seq, kv_heads, head_dim}}, "attn.v.heads");
    auto no_v = b.tensor("rope.no_v", {}), no_v_out = b.tensor("rope.no_v.out", {});
    auto qr = b.tensor("q.rope", {batch, seq, heads, head_dim}, bf16);
    auto kr = b.tensor("k.rope", {batch, seq, kv_heads, head_dim}, bf16);
    b.template op<"fused_rope">({q4, k4, no_v, sin, cos, pos}, {qr, kr, no_v_out}, {}, "attn.rope");
    auto ctx = b.tensor("ctx", {batch, seq, heads, head_dim}, bf16);
    auto probs = b.tensor("attn.softmax", {batch, heads, seq, seq}, bf16);
    auto lse = b.tensor("attn.lse", {batch, heads, seq}), seed = b.tensor("attn.seed", {2}, int64);
    b.template op<"flash_attention">({qr, kr, v4}, {ctx, probs, lse, seed}, {.causal = true, .context_parallel = l.cp >= 0},
                                    "attn.core");
    auto ctx_flat = b.tensor("ctx.flat", {batch, seq, heads * head_dim}, bf16);
    b.template op<"reshape">({ctx}, {ctx_flat}, {.shape = {batch, seq, heads * head_dim}}, "attn.merge");
    auto wo = e.parameter("wo", {heads * head_dim, hidden}, {on_mp, -1}, bf16);  // row parallel
    auto o = b.tensor("attn.o", act, bf16);
    b.template op<"matmul">({ctx_flat, wo}, {o}, {}, "attn.o");  // partial over tp
    auto attn = e.tensor("attn.out", act, outside, bf16);
    b.template op<"assign">({o}, {attn}, {}, "attn.reduce");
    auto x1 = b.tensor("x1", act, bf16);
    b.template op<"add">({x, attn}, {x1}, {}, "attn.residual");
    return x1;
  }

  /// RMSNorm, the SwiGLU MLP of `ffn` and the residual: x + mlp(norm(x)).
  constexpr tensor_id swiglu_mlp(Plan& b, tensor_id x1, std::int64_t ffn) const {
    const declarer<Plan> e{b, l.annotated};
    const std::int64_t on_mp = l.tp;
    auto ln2_w = b.parameter("ln2.weight", {hidden}, bf16);
    auto ln2 = b.tensor("ln2", act, bf16), ln2_invvar = b.tensor("ln2.invvar", {batch, seq});
    b.template op<"rms_norm">({x1, ln2_w}, {ln2, ln2_invvar}, {}, "ln2");
    auto mlp_in = e.tensor("mlp.in", act, inside, bf16);
    b.template op<"assign">({ln2}, {mlp_in}, {}, "mlp.gather");
    auto w_gate = e.parameter("w_gate", {hidden, ffn}, {-1, on_mp}, bf16);  // column parallel
    auto w_up = e.parameter("w_up", {hidden, ffn}, {-1, on_mp}, bf16);
    auto gate = b.tensor("gate", {batch, seq, ffn}, bf16), up = b.tensor("up", {batch, seq, ffn}, bf16);
    b.template op<"matmul">({mlp_in, w_gate}, {gate}, {}, "mlp.gate");
    b.template op<"matmul">({mlp_in, w_up}, {up}, {}, "mlp.up");
    auto act_ffn = b.tensor("swiglu", {batch, seq, ffn}, bf16);
    b.template op<"swiglu">({gate, up}, {act_ffn}, {}, "mlp.swiglu");
    auto w_down = e.parameter("w_down", {ffn, hidden}, {on_mp, -1}, bf16);  // row parallel
    auto dn = b.tensor("mlp.d", act, bf16);
    b.template op<"matmul">({act_ffn, w_down}, {dn}, {}, "mlp.down");  // partial over tp
    auto down = e.tensor("mlp.out", act, outside, bf16);
    b.template op<"assign">({dn}, {down}, {}, "mlp.reduce");
    auto x2 = b.tensor("x2", act, bf16);
    b.template op<"add">({x1, down}, {x2}, {}, "mlp.residual");
    return x2;
  }

  /// The final RMSNorm, the head (vocabulary parallel) and the cross entropy: the loss.
  constexpr tensor_id head(Plan& p, tensor_id out) const {
    const declarer<Plan> d{p, l.annotated};
    auto norm_w = p.parameter("norm.weight", {hidden}, bf16);
    auto normed = p.tensor("norm", act, bf16), norm_invvar = p.tensor("norm.invvar", {batch, seq});
    p.template op<"rms_norm">({out, norm_w}, {normed, norm_invvar}, {}, "norm");
    auto head_in = d.tensor("head.in", act, inside, bf16);
    p.template op<"assign">({normed}, {head_in}, {}, "head.gather");
    // Its own weight, or the embedding's rows.
    const auto w_lm = c.tie_word_embeddings ? wte : d.parameter("lm_head", {hidden, vocab}, {-1, l.tp}, bf16);
    auto logits = p.tensor("logits", {batch, seq, vocab}, bf16);
    p.template op<"matmul">({head_in, w_lm}, {logits}, {.trans_y = c.tie_word_embeddings}, "lm_head");
    auto labels = data_tensor(p, l, "labels", {batch, seq, 1}, tensor_dist_attr(mesh, {batch_dims, seq_inside, mesh_dims{}}));
    auto probs = p.tensor("softmax", {batch, seq, vocab}), token_loss = p.tensor("loss", {batch, seq, 1});
    // Megatron's vocabulary-parallel cross entropy: each device holds a slice of the vocabulary
    // (its max and sum all-reduces are inside its kernel, not reshards).
    p.template op<"c_softmax_with_cross_entropy">({logits, labels}, {probs, token_loss}, {.nranks = mp}, "loss");
    return token_loss;
  }
};
}  // namespace detail

/// The Llama-family model of config `c` on `mesh` with layout `l` and run sizes `r` (see the
/// file comment).
constexpr built_model<llama_plan> llama(const llama_config& c, const process_mesh& mesh, const layout& l = {},
                                        const run_shape& r = {}) {
  detail::check_llama(c, r);
  detail::check_layout(mesh, l, false);
  detail::check_divides(mesh, l.tp, c.kv_heads(), "num_key_value_heads ({}) is not divisible by mesh dim {}'s size {}");
  detail::llama_decoder<llama_plan> dec(c, mesh, l, r, detail::dims_of(l.dp));
  built_model<llama_plan> m{llama_plan(mesh), {}, dec.vocab, dec.vocab - c.vocab_size};
  const auto x0 = dec.embed(m.plan);
  const auto out = m.plan.repeat(static_cast<std::size_t>(c.num_hidden_layers), x0, [&](llama_plan& b, model::tensor_id x) {
    return dec.swiglu_mlp(b, dec.attention(b, x), c.intermediate_size);
  });
  m.loss = dec.head(m.plan, out);
  return m;
}

/// The model's own parameter count (its vocabulary unpadded): of the plan `llama(c, ...)` builds
/// on one device.
constexpr std::int64_t parameters(const llama_config& c) {
  return parameter_count(llama(c, process_mesh({1}), {}, {.seq = 1, .micro_batch = 1}).plan);
}

}  // namespace ctspmd::models

#endif
