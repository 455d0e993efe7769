#ifndef CTSPMD_MODELS_DEEPSEEK_HPP
#define CTSPMD_MODELS_DEEPSEEK_HPP
/// \file DeepSeek-V3 from its Hugging Face config: multi-head latent attention and a mixture of
/// experts with shared experts.
///
///     static_assert(models::parameters(models::deepseek_v3) == 671'026'419'200);
///     constexpr auto m = models::deepseek(models::deepseek_v3, process_mesh({4, 8}), {.dp = 0, .ep = 1});
///
/// Each layer: RMSNorm and multi-head latent attention: q through a low-rank projection
/// (`q_lora_rank`, its RMSNorm, then up to `num_attention_heads` heads of `qk_nope_head_dim` +
/// `qk_rope_head_dim`), k and v through the compressed `kv_lora_rank` (its RMSNorm, then up to
/// each head's `qk_nope_head_dim` key and `v_head_dim` value) beside one rotary key of
/// `qk_rope_head_dim` shared by the heads; the rotary parts rotated, the key's expanded to every
/// head, each concatenated to its part; causal flash attention (value dim `v_head_dim`) and the
/// output projection; a residual. Then RMSNorm and, in the first `first_k_dense_replace` layers,
/// a SwiGLU MLP of `intermediate_size` (a first repeated block); in the others (a second block)
/// `n_routed_experts` routed SwiGLU experts of `moe_intermediate_size`, `num_experts_per_tok` a
/// token (the router with its score correction bias: `e_score_correction_bias`), plus
/// `n_shared_experts` shared experts applied to every token; a residual. The multi-token
/// prediction layer (`num_nextn_predict_layers`) is not built.
///
/// Layout: the batch over dp (and ep, the experts' tokens as `<ctspmd/models/mixtral.hpp>`);
/// tp splits the heads (the q and kv up projections column parallel, the output projection row
/// parallel; the low-rank down projections replicated) and the dense and shared MLPs (Megatron's
/// column and row splits); ep the routed experts. Sequence and context parallelism are refused.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/model/plan.hpp>
#include <ctspmd/models/common.hpp>
#include <ctspmd/models/llama.hpp>
#include <ctspmd/models/mixtral.hpp>

namespace ctspmd::models {

/// A DeepSeek-V3 `config.json`: its fields, by their names.
struct deepseek_config {
  std::int64_t hidden_size = 0, intermediate_size = 0, moe_intermediate_size = 0, num_hidden_layers = 0;
  std::int64_t num_attention_heads = 0, q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0, n_routed_experts = 0, n_shared_experts = 0, num_experts_per_tok = 0;
  std::int64_t first_k_dense_replace = 0, vocab_size = 0, max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool score_correction_bias = true;  ///< the router's e_score_correction_bias (`topk_method` "noaux_tc")
};

/// DeepSeek-V3 (671B) as published (models/configs/deepseek_v3.json).
inline constexpr deepseek_config deepseek_v3{.hidden_size = 7168, .intermediate_size = 18432, .moe_intermediate_size = 2048,
                                             .num_hidden_layers = 61, .num_attention_heads = 128, .q_lora_rank = 1536,
                                             .kv_lora_rank = 512, .qk_nope_head_dim = 128, .qk_rope_head_dim = 64,
                                             .v_head_dim = 128, .n_routed_experts = 256, .n_shared_experts = 1,
                                             .num_experts_per_tok = 8, .first_k_dense_replace = 3, .vocab_size = 129280,
                                             .max_position_embeddings = 163840};

/// The plan a DeepSeek builder returns: two repeated blocks (dense, then MoE layers).
using deepseek_plan = model::plan<200, 100>;

namespace detail {
/// The decoder parts a Llama-style decoder gives DeepSeek: the embedding (its rotary tables of
/// the rope dims) and the head.
constexpr llama_config deepseek_base(const deepseek_config& c) {
  return {.hidden_size = c.hidden_size, .intermediate_size = c.intermediate_size, .num_hidden_layers = c.num_hidden_layers,
          .num_attention_heads = c.num_attention_heads, .head_dim = c.qk_rope_head_dim, .vocab_size = c.vocab_size,
          .max_position_embeddings = c.max_position_embeddings, .tie_word_embeddings = c.tie_word_embeddings};
}

/// RMSNorm, multi-head latent attention and the residual (see the file comment).
template <class Plan>
constexpr model::tensor_id latent_attention(Plan& b, const llama_decoder<Plan>& dec, const deepseek_config& c,
                                            model::tensor_id x) {
  constexpr auto bf16 = model::bfloat16;
  constexpr auto int64 = model::int64;
  const declarer<Plan> e{b, dec.l.annotated};
  const std::int64_t on_mp = dec.l.tp, batch = dec.batch, seq = dec.seq, hidden = dec.hidden, heads = c.num_attention_heads;
  const std::int64_t nope = c.qk_nope_head_dim, rope = c.qk_rope_head_dim, qk = nope + rope, vd = c.v_head_dim;
  const auto rms_norm = [&](std::string_view weight, std::string_view name, std::string_view statistic,
                            model::tensor_id in, std::int64_t n) {
    auto w = b.parameter(weight, {n}, bf16);
    auto y = b.tensor(name, {batch, seq, n}, bf16), invvar = b.tensor(statistic, {batch, seq});
    b.template op<"rms_norm">({in, w}, {y, invvar}, {}, name);
    return y;
  };
  const auto linear = [&](std::string_view weight, std::string_view name, model::tensor_id in, std::int64_t from,
                          std::int64_t to, const dims_mapping& layout) {
    auto w = e.parameter(weight, {from, to}, layout, bf16);
    auto y = b.tensor(name, {batch, seq, to}, bf16);
    b.template op<"matmul">({in, w}, {y}, {}, name);
    return y;
  };
  auto h = rms_norm("ln1.weight", "ln1", "ln1.invvar", x, hidden);
  // q: down to q_lora_rank (replicated), its norm, up to the heads (column parallel).
  auto q_a = linear("q_a_proj", "attn.q_a", h, hidden, c.q_lora_rank, {-1, -1});
  auto q_c = rms_norm("q_a_layernorm", "attn.q_a.norm", "attn.q_a.invvar", q_a, c.q_lora_rank);
  auto q = linear("q_b_proj", "attn.q", q_c, c.q_lora_rank, heads * qk, {-1, on_mp});
  auto q4 = b.tensor("q.heads", {batch, seq, heads, qk}, bf16);
  b.template op<"reshape">({q}, {q4}, {.shape = {batch, seq, heads, qk}}, "attn.q.heads");
  auto q_nope = b.tensor("q.nope", {batch, seq, heads, nope}, bf16), q_pe = b.tensor("q.pe", {batch, seq, heads, rope}, bf16);
  b.template op<"split">({q4}, {q_nope, q_pe}, {.sections = {nope, rope}, .axis = 3}, "attn.q.split");
  // kv: down to kv_lora_rank and the shared rotary key (replicated), the latent's norm, up to
  // each head's key and value (column parallel).
  auto kv_a = linear("kv_a_proj_with_mqa", "attn.kv_a", h, hidden, c.kv_lora_rank + rope, {-1, -1});
  auto kv_c = b.tensor("kv.latent", {batch, seq, c.kv_lora_rank}, bf16), k_pe = b.tensor("k.pe", {batch, seq, rope}, bf16);
  b.template op<"split">({kv_a}, {kv_c, k_pe}, {.sections = {c.kv_lora_rank, rope}, .axis = 2}, "attn.kv_a.split");
  auto kv_n = rms_norm("kv_a_layernorm", "attn.kv_a.norm", "attn.kv_a.invvar", kv_c, c.kv_lora_rank);
  auto kv = linear("kv_b_proj", "attn.kv", kv_n, c.kv_lora_rank, heads * (nope + vd), {-1, on_mp});
  auto kv4 = b.tensor("kv.heads", {batch, seq, heads, nope + vd}, bf16);
  b.template op<"reshape">({kv}, {kv4}, {.shape = {batch, seq, heads, nope + vd}}, "attn.kv.heads");
  auto k_nope = b.tensor("k.nope", {batch, seq, heads, nope}, bf16), v = b.tensor("v", {batch, seq, heads, vd}, bf16);
  b.template op<"split">({kv4}, {k_nope, v}, {.sections = {nope, vd}, .axis = 3}, "attn.kv.split");
  // The rotary parts: q's per head, the key's once, then expanded to every head.
  auto none = b.tensor("rope.none", {}), none_k = b.tensor("rope.none.k", {}), none_v = b.tensor("rope.none.v", {});
  auto q_rot = b.tensor("q.pe.rope", {batch, seq, heads, rope}, bf16);
  b.template op<"fused_rope">({q_pe, none, none, dec.sin, dec.cos, dec.pos}, {q_rot, none_k, none_v}, {}, "attn.q.rope");
  auto k_pe4 = b.tensor("k.pe.head", {batch, seq, 1, rope}, bf16);
  b.template op<"reshape">({k_pe}, {k_pe4}, {.shape = {batch, seq, 1, rope}}, "attn.k.pe.head");
  auto k_rot = b.tensor("k.pe.rope", {batch, seq, 1, rope}, bf16);
  auto none_k2 = b.tensor("rope.none.k2", {}), none_v2 = b.tensor("rope.none.v2", {});
  b.template op<"fused_rope">({k_pe4, none, none, dec.sin, dec.cos, dec.pos}, {k_rot, none_k2, none_v2}, {}, "attn.k.rope");
  auto no_y = b.tensor("expand.none", {});
  auto k_rot_all = b.tensor("k.pe.heads", {batch, seq, heads, rope}, bf16);
  b.template op<"expand_as">({k_rot, no_y}, {k_rot_all}, {.target_shape = {batch, seq, heads, rope}}, "attn.k.pe.expand");
  auto q_full = b.tensor("q.full", {batch, seq, heads, qk}, bf16), k_full = b.tensor("k.full", {batch, seq, heads, qk}, bf16);
  b.template op<"concat">({q_nope, q_rot}, {q_full}, {.axis = 3}, "attn.q.concat");
  b.template op<"concat">({k_nope, k_rot_all}, {k_full}, {.axis = 3}, "attn.k.concat");
  auto ctx = b.tensor("ctx", {batch, seq, heads, vd}, bf16);
  auto probs = b.tensor("attn.softmax", {batch, heads, seq, seq}, bf16);
  auto lse = b.tensor("attn.lse", {batch, heads, seq}), seed = b.tensor("attn.seed", {2}, int64);
  b.template op<"flash_attention">({q_full, k_full, v}, {ctx, probs, lse, seed}, {.causal = true}, "attn.core");
  auto ctx_flat = b.tensor("ctx.flat", {batch, seq, heads * vd}, bf16);
  b.template op<"reshape">({ctx}, {ctx_flat}, {.shape = {batch, seq, heads * vd}}, "attn.merge");
  auto wo = e.parameter("o_proj", {heads * vd, hidden}, {on_mp, -1}, bf16);  // row parallel
  auto o = b.tensor("attn.o", dec.act, bf16);
  b.template op<"matmul">({ctx_flat, wo}, {o}, {}, "attn.o");  // partial over tp
  auto attn = e.tensor("attn.out", dec.act, dec.outside, bf16);
  b.template op<"assign">({o}, {attn}, {}, "attn.reduce");
  auto x1 = b.tensor("x1", dec.act, bf16);
  b.template op<"add">({x, attn}, {x1}, {}, "attn.residual");
  return x1;
}
}  // namespace detail

/// The DeepSeek-V3 model of config `c` on `mesh` with layout `l`, run sizes `r` and the routed
/// experts' capacity factor (see the file comment).
constexpr built_model<deepseek_plan> deepseek(const deepseek_config& c, const process_mesh& mesh, const layout& l = {},
                                              const run_shape& r = {}, double capacity_factor = 1.0) {
  detail::check_positive(c.hidden_size, "config field hidden_size is {}: it must be positive");
  detail::check_positive(c.intermediate_size, "config field intermediate_size is {}: it must be positive");
  detail::check_positive(c.moe_intermediate_size, "config field moe_intermediate_size is {}: it must be positive");
  detail::check_positive(c.num_hidden_layers, "config field num_hidden_layers is {}: it must be positive");
  detail::check_positive(c.num_attention_heads, "config field num_attention_heads is {}: it must be positive");
  detail::check_positive(c.q_lora_rank, "config field q_lora_rank is {}: it must be positive");
  detail::check_positive(c.kv_lora_rank, "config field kv_lora_rank is {}: it must be positive");
  detail::check_positive(c.qk_nope_head_dim, "config field qk_nope_head_dim is {}: it must be positive");
  detail::check_positive(c.qk_rope_head_dim, "config field qk_rope_head_dim is {}: it must be positive");
  detail::check_positive(c.v_head_dim, "config field v_head_dim is {}: it must be positive");
  detail::check_positive(c.vocab_size, "config field vocab_size is {}: it must be positive");
  detail::check_positive(r.seq, "seq is {}: it must be positive");
  detail::check_positive(r.micro_batch, "micro_batch is {}: it must be positive");
  detail::check_experts(c.n_routed_experts, c.num_experts_per_tok, capacity_factor);
  if (c.n_shared_experts < 0 || c.first_k_dense_replace < 0 || c.first_k_dense_replace > c.num_hidden_layers)
    raise(make_error(error_kind::invalid_argument, "models",
                     "n_shared_experts ({}) must not be negative, first_k_dense_replace ({}) within the layers ({})",
                     c.n_shared_experts, c.first_k_dense_replace, c.num_hidden_layers));
  detail::check_layout(mesh, l, true);
  if (l.sp || l.cp >= 0)
    raise(make_error(error_kind::invalid_argument, "models", "sequence and context parallelism are not built for DeepSeek (sp, cp)"));
  detail::check_divides(mesh, l.tp, c.num_attention_heads, "num_attention_heads ({}) is not divisible by mesh dim {}'s size {}");
  detail::check_divides(mesh, l.ep, c.n_routed_experts, "n_routed_experts ({}) is not divisible by mesh dim {}'s size {}");

  mesh_dims by_device = detail::dims_of(l.dp);
  if (l.ep >= 0) by_device.push_back(l.ep);
  const auto base = detail::deepseek_base(c);
  detail::llama_decoder<deepseek_plan> dec(base, mesh, l, r, by_device);
  const std::int64_t hidden = dec.hidden, seq = dec.seq, batch = dec.batch, tokens = batch * seq;
  const std::int64_t devices = detail::size_of(mesh, l.dp) * detail::size_of(mesh, l.ep);
  const detail::expert_layer experts{
      c.n_routed_experts, c.num_experts_per_tok, c.moe_intermediate_size, devices,
      detail::expert_layer::slots_for(r.micro_batch * seq, c.n_routed_experts, c.num_experts_per_tok, capacity_factor),
      by_device};
  constexpr auto bf16 = model::bfloat16;
  using model::tensor_id;

  built_model<deepseek_plan> m{deepseek_plan(mesh), {}, dec.vocab, dec.vocab - c.vocab_size};
  auto x = dec.embed(m.plan);
  if (c.first_k_dense_replace > 0)
    x = m.plan.repeat(static_cast<std::size_t>(c.first_k_dense_replace), x, [&](deepseek_plan& b, tensor_id in) {
      return dec.swiglu_mlp(b, detail::latent_attention(b, dec, c, in), c.intermediate_size);
    });
  if (c.num_hidden_layers > c.first_k_dense_replace)
    x = m.plan.repeat(static_cast<std::size_t>(c.num_hidden_layers - c.first_k_dense_replace), x,
                      [&](deepseek_plan& b, tensor_id in) {
                        const auto x1 = detail::latent_attention(b, dec, c, in);
                        auto ln_w = b.parameter("ln2.weight", {hidden}, bf16);
                        auto ln = b.tensor("ln2", dec.act, bf16), invvar = b.tensor("ln2.invvar", {batch, seq});
                        b.op<"rms_norm">({x1, ln_w}, {ln, invvar}, {}, "ln2");
                        auto t = b.tensor("tokens", {tokens, hidden}, bf16);
                        b.op<"reshape">({ln}, {t}, {.shape = {tokens, hidden}}, "tokens");
                        const auto routed = detail::routed_experts(b, mesh, l, experts, t, tokens, hidden,
                                                                   c.score_correction_bias);
                        auto moe = b.tensor("moe.routed", dec.act, bf16);
                        b.op<"reshape">({routed}, {moe}, {.shape = {batch, seq, hidden}}, "moe.routed");
                        if (c.n_shared_experts > 0) {  // the shared experts: one SwiGLU MLP of their width
                          const detail::declarer<deepseek_plan> e{b, l.annotated};
                          const std::int64_t ffn = c.n_shared_experts * c.moe_intermediate_size;
                          auto w_gate = e.parameter("shared.w_gate", {hidden, ffn}, {-1, l.tp}, bf16);
                          auto w_up = e.parameter("shared.w_up", {hidden, ffn}, {-1, l.tp}, bf16);
                          auto gate = b.tensor("shared.gate", {batch, seq, ffn}, bf16);
                          auto up = b.tensor("shared.up", {batch, seq, ffn}, bf16);
                          b.op<"matmul">({ln, w_gate}, {gate}, {}, "shared.gate");
                          b.op<"matmul">({ln, w_up}, {up}, {}, "shared.up");
                          auto act = b.tensor("shared.swiglu", {batch, seq, ffn}, bf16);
                          b.op<"swiglu">({gate, up}, {act}, {}, "shared.swiglu");
                          auto w_down = e.parameter("shared.w_down", {ffn, hidden}, {l.tp, -1}, bf16);
                          auto d = b.tensor("shared.d", dec.act, bf16);
                          b.op<"matmul">({act, w_down}, {d}, {}, "shared.down");  // partial over tp
                          auto shared = e.tensor("shared.out", dec.act, dec.outside, bf16);
                          b.op<"assign">({d}, {shared}, {}, "shared.reduce");
                          auto both = b.tensor("moe.out", dec.act, bf16);
                          b.op<"add">({moe, shared}, {both}, {}, "moe.add_shared");
                          moe = both;
                        }
                        auto x2 = b.tensor("x2", dec.act, bf16);
                        b.op<"add">({x1, moe}, {x2}, {}, "moe.residual");
                        return x2;
                      });
  m.loss = dec.head(m.plan, x);
  return m;
}

/// The model's own parameter count (without the multi-token prediction layer): of the plan
/// `deepseek(c, ...)` builds on one device.
constexpr std::int64_t parameters(const deepseek_config& c) {
  return parameter_count(deepseek(c, process_mesh({1}), {}, {.seq = 1, .micro_batch = 1}).plan);
}
/// The parameters a token uses: all but the routed experts it is not routed to.
constexpr std::int64_t active_parameters(const deepseek_config& c) {
  const std::int64_t expert = 3 * c.hidden_size * c.moe_intermediate_size;
  return parameters(c) -
         (c.num_hidden_layers - c.first_k_dense_replace) * (c.n_routed_experts - c.num_experts_per_tok) * expert;
}

}  // namespace ctspmd::models

#endif
