#ifndef CTSPMD_MODELS_GPT_HPP
#define CTSPMD_MODELS_GPT_HPP
/// \file GPT (GPT-2, GPT-3, Megatron's GPT) from its Hugging Face config.
///
///     constexpr auto m = models::gpt(models::gpt2, process_mesh({2, 4}), {.dp = 0, .tp = 1}, {.seq = 1024});
///     static_assert(models::parameter_count(m.plan) == 124'439'808);
///
/// A decoder of `n_layer` layers (the plan's repeated block): token and learned position
/// embeddings (`n_positions` rows) added; per layer a LayerNorm with bias, the fused q/k/v
/// projection `[n_embd, 3 n_embd]` with its bias, reshaped to `n_head` heads and split into q,
/// k and v, causal flash attention (or, with `run_shape::flash_attention` false, the core written
/// out: transposes, Q Kᵀ, a scale, softmax, the product with V), the output projection and its bias, a residual; a LayerNorm,
/// the MLP (`n_inner`, 4 x `n_embd` if 0) with GeLU and biases, a residual; a final LayerNorm,
/// the head (`tie_word_embeddings`, GPT-2's default: the token embedding's weight) and the cross
/// entropy. All bf16 (statistics and the loss fp32).
///
/// Layout as `<ctspmd/models/llama.hpp>` (Megatron's tensor parallelism with the region points
/// as `assign`s, sequence parallelism, context parallelism, the padded vocabulary): the fused
/// projection is column parallel, so each tp rank holds whole heads' q, k and v (its columns are
/// laid out head by head, `[n_head, 3, head_dim]`, as Megatron's are); the biases of the column
/// parallel projections are split with their columns, those of the row parallel ones added after
/// the reduce, whole.

#include <cstddef>
#include <cstdint>

#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/model/plan.hpp>
#include <ctspmd/models/common.hpp>

namespace ctspmd::models {

/// A GPT `config.json` (`GPT2Config`'s fields, by their names; `n_inner` 0: 4 x `n_embd`).
struct gpt_config {
  std::int64_t n_embd = 0, n_layer = 0, n_head = 0, n_positions = 0, vocab_size = 0, n_inner = 0;
  bool tie_word_embeddings = true;
  constexpr std::int64_t inner() const noexcept { return n_inner > 0 ? n_inner : 4 * n_embd; }
};

/// Published configs (models/configs/).
inline constexpr gpt_config gpt2{.n_embd = 768, .n_layer = 12, .n_head = 12, .n_positions = 1024, .vocab_size = 50257};
inline constexpr gpt_config gpt2_xl{.n_embd = 1600, .n_layer = 48, .n_head = 25, .n_positions = 1024, .vocab_size = 50257};
/// GPT-3 175B as Brown et al. 2020 (Table 2.1) describe it, in GPT-2's vocabulary and form.
inline constexpr gpt_config gpt3_175b{.n_embd = 12288, .n_layer = 96, .n_head = 96, .n_positions = 2048, .vocab_size = 50257};

/// The plan a GPT builder returns.
using gpt_plan = model::plan<80, 40>;

/// The GPT model of config `c` on `mesh` with layout `l` and run sizes `r` (see the file comment).
constexpr built_model<gpt_plan> gpt(const gpt_config& c, const process_mesh& mesh, const layout& l = {},
                                    const run_shape& r = {}) {
  detail::check_positive(c.n_embd, "config field n_embd is {}: it must be positive");
  detail::check_positive(c.n_layer, "config field n_layer is {}: it must be positive");
  detail::check_positive(c.n_head, "config field n_head is {}: it must be positive");
  detail::check_positive(c.n_positions, "config field n_positions is {}: it must be positive");
  detail::check_positive(c.vocab_size, "config field vocab_size is {}: it must be positive");
  detail::check_positive(r.seq, "seq is {}: it must be positive");
  detail::check_positive(r.micro_batch, "micro_batch is {}: it must be positive");
  if (c.n_embd % c.n_head != 0)
    raise(make_error(error_kind::invalid_argument, "models", "n_embd ({}) is not a multiple of n_head ({})", c.n_embd, c.n_head));
  if (r.seq > c.n_positions)
    raise(make_error(error_kind::invalid_argument, "models", "seq {} is longer than n_positions ({})", r.seq, c.n_positions));
  detail::check_layout(mesh, l, false);
  if (!r.flash_attention && l.cp >= 0)
    raise(make_error(error_kind::invalid_argument, "models", "context parallelism (cp = mesh dim {}) needs flash attention",
                     l.cp));
  detail::check_divides(mesh, l.tp, c.n_head, "n_head ({}) is not divisible by mesh dim {}'s size {}");

  const std::int64_t on_dp = l.dp, on_mp = l.tp, on_cp = l.cp;
  const std::int64_t hidden = c.n_embd, heads = c.n_head, head_dim = hidden / heads, ffn = c.inner();
  const std::int64_t seq = r.seq, batch = r.micro_batch * detail::size_of(mesh, on_dp);
  const std::int64_t mp = detail::size_of(mesh, on_mp);
  const std::int64_t vocab = padded_vocab(c.vocab_size, mp);
  constexpr auto bf16 = model::bfloat16;
  constexpr auto int64 = model::int64;
  using model::tensor_id;

  built_model<gpt_plan> m{gpt_plan(mesh), {}, vocab, vocab - c.vocab_size};
  auto& p = m.plan;
  const detail::declarer<gpt_plan> d{p, l.annotated};
  const tensor_shape act{batch, seq, hidden};
  mesh_dims seq_inside = detail::dims_of(on_cp), seq_outside = seq_inside;
  if (l.sp) seq_outside.push_back(on_mp);
  const tensor_dist_attr outside(mesh, {detail::dims_of(on_dp), seq_outside, mesh_dims{}});
  const tensor_dist_attr inside(mesh, {detail::dims_of(on_dp), seq_inside, mesh_dims{}});
  const tensor_dist_attr tokens(mesh, {detail::dims_of(on_dp), seq_inside});

  auto ids = detail::data_tensor(p, l, "ids", {batch, seq}, tokens);
  auto wte = d.parameter("wte", {vocab, hidden}, {on_mp, -1}, bf16);  // vocabulary-parallel embedding
  auto emb = p.tensor("emb", act, bf16);
  p.op<"c_embedding">({wte, ids}, {emb}, {.vocab_size = vocab}, "embed");  // partial over tp
  auto tok = d.tensor("emb.tokens", act, outside, bf16);
  p.op<"assign">({emb}, {tok}, {}, "embed.reduce");
  // The positions laid out as the token embeddings they are added to (with sp, each tp rank its
  // part of the sequence; under cp together with sp, a co-shard the add could not merge with
  // the cp split alone).
  auto positions =
      detail::data_tensor(p, l, "position_ids", {batch, seq}, tensor_dist_attr(mesh, {detail::dims_of(on_dp), seq_outside}));
  auto wpe = p.parameter("wpe", {c.n_positions, hidden}, bf16);
  auto pos = p.tensor("emb.positions", act, bf16);
  p.op<"embedding">({positions, wpe}, {pos}, {}, "embed.positions");
  auto x0 = p.tensor("x0", act, bf16);
  p.op<"add">({tok, pos}, {x0}, {}, "embed.add");

  auto out = p.repeat(static_cast<std::size_t>(c.n_layer), x0, [&](gpt_plan& b, tensor_id x) {
    const detail::declarer<gpt_plan> e{b, l.annotated};
    // ---- attention ----
    auto ln1_w = b.parameter("ln1.weight", {hidden}, bf16), ln1_b = b.parameter("ln1.bias", {hidden}, bf16);
    auto ln1 = b.tensor("ln1", act, bf16), ln1_mean = b.tensor("ln1.mean", {batch, seq}),
         ln1_var = b.tensor("ln1.var", {batch, seq});
    b.op<"layer_norm">({x, ln1_w, ln1_b}, {ln1, ln1_mean, ln1_var}, {.begin_norm_axis = 2}, "ln1");
    auto h = e.tensor("attn.in", act, inside, bf16);
    b.op<"assign">({ln1}, {h}, {}, "attn.gather");
    auto w_qkv = e.parameter("c_attn.weight", {hidden, 3 * hidden}, {-1, on_mp}, bf16);  // column parallel
    auto b_qkv = e.parameter("c_attn.bias", {3 * hidden}, {on_mp}, bf16);
    auto qkv_mm = b.tensor("qkv.mm", {batch, seq, 3 * hidden}, bf16);
    b.op<"matmul">({h, w_qkv}, {qkv_mm}, {}, "attn.qkv");
    auto qkv = b.tensor("qkv", {batch, seq, 3 * hidden}, bf16);
    b.op<"add">({qkv_mm, b_qkv}, {qkv}, {}, "attn.qkv.bias");
    auto per_head = b.tensor("qkv.heads", {batch, seq, heads, 3 * head_dim}, bf16);
    b.op<"reshape">({qkv}, {per_head}, {.shape = {batch, seq, heads, 3 * head_dim}}, "attn.heads");
    const tensor_shape bshd{batch, seq, heads, head_dim};
    auto q = b.tensor("q", bshd, bf16), k = b.tensor("k", bshd, bf16), v = b.tensor("v", bshd, bf16);
    b.op<"split">({per_head}, {q, k, v}, {.num = 3, .axis = 3}, "attn.split");
    auto ctx = b.tensor("ctx", bshd, bf16);
    if (r.flash_attention) {
      auto probs = b.tensor("attn.softmax", {batch, heads, seq, seq}, bf16);
      auto lse = b.tensor("attn.lse", {batch, heads, seq}), seed = b.tensor("attn.seed", {2}, int64);
      b.op<"flash_attention">({q, k, v}, {ctx, probs, lse, seed}, {.causal = true, .context_parallel = on_cp >= 0},
                             "attn.core");
    } else {  // written out: heads first, Q Kᵀ, scaled and masked softmax, the product with V, back
      const tensor_shape bhsd{batch, heads, seq, head_dim}, scores{batch, heads, seq, seq};
      auto qt = b.tensor("q.t", bhsd, bf16), kt = b.tensor("k.t", bhsd, bf16), vt = b.tensor("v.t", bhsd, bf16);
      b.op<"transpose">({q}, {qt}, {.perm = {0, 2, 1, 3}}, "attn.q.t");
      b.op<"transpose">({k}, {kt}, {.perm = {0, 2, 1, 3}}, "attn.k.t");
      b.op<"transpose">({v}, {vt}, {.perm = {0, 2, 1, 3}}, "attn.v.t");
      auto s = b.tensor("attn.scores", scores, bf16), scaled = b.tensor("attn.scaled", scores, bf16);
      b.op<"matmul">({qt, kt}, {s}, {.trans_y = true}, "attn.scores");
      b.op<"scale">({s}, {scaled}, {}, "attn.scale");
      auto probs = b.tensor("attn.softmax", scores, bf16);
      b.op<"softmax">({scaled}, {probs}, {.axis = -1}, "attn.softmax");
      auto ctx_h = b.tensor("ctx.heads", bhsd, bf16);
      b.op<"matmul">({probs, vt}, {ctx_h}, {}, "attn.context");
      b.op<"transpose">({ctx_h}, {ctx}, {.perm = {0, 2, 1, 3}}, "attn.context.t");
    }
    auto ctx_flat = b.tensor("ctx.flat", act, bf16);
    b.op<"reshape">({ctx}, {ctx_flat}, {.shape = {batch, seq, hidden}}, "attn.merge");
    auto wo = e.parameter("c_proj.weight", {hidden, hidden}, {on_mp, -1}, bf16);  // row parallel
    auto o = b.tensor("attn.o", act, bf16);
    b.op<"matmul">({ctx_flat, wo}, {o}, {}, "attn.o");  // partial over tp
    auto reduced = e.tensor("attn.reduced", act, outside, bf16);
    b.op<"assign">({o}, {reduced}, {}, "attn.reduce");
    auto bo = b.parameter("c_proj.bias", {hidden}, bf16);
    auto attn = b.tensor("attn.out", act, bf16);
    b.op<"add">({reduced, bo}, {attn}, {}, "attn.o.bias");
    auto x1 = b.tensor("x1", act, bf16);
    b.op<"add">({x, attn}, {x1}, {}, "attn.residual");

    // ---- MLP ----
    auto ln2_w = b.parameter("ln2.weight", {hidden}, bf16), ln2_b = b.parameter("ln2.bias", {hidden}, bf16);
    auto ln2 = b.tensor("ln2", act, bf16), ln2_mean = b.tensor("ln2.mean", {batch, seq}),
         ln2_var = b.tensor("ln2.var", {batch, seq});
    b.op<"layer_norm">({x1, ln2_w, ln2_b}, {ln2, ln2_mean, ln2_var}, {.begin_norm_axis = 2}, "ln2");
    auto mlp_in = e.tensor("mlp.in", act, inside, bf16);
    b.op<"assign">({ln2}, {mlp_in}, {}, "mlp.gather");
    auto w_fc = e.parameter("c_fc.weight", {hidden, ffn}, {-1, on_mp}, bf16);  // column parallel
    auto b_fc = e.parameter("c_fc.bias", {ffn}, {on_mp}, bf16);
    auto fc_mm = b.tensor("fc.mm", {batch, seq, ffn}, bf16), fc = b.tensor("fc", {batch, seq, ffn}, bf16);
    b.op<"matmul">({mlp_in, w_fc}, {fc_mm}, {}, "mlp.fc");
    b.op<"add">({fc_mm, b_fc}, {fc}, {}, "mlp.fc.bias");
    auto gelu = b.tensor("gelu", {batch, seq, ffn}, bf16);
    b.op<"gelu">({fc}, {gelu}, {}, "mlp.gelu");
    auto w_proj = e.parameter("mlp.c_proj.weight", {ffn, hidden}, {on_mp, -1}, bf16);  // row parallel
    auto dn = b.tensor("mlp.d", act, bf16);
    b.op<"matmul">({gelu, w_proj}, {dn}, {}, "mlp.proj");  // partial over tp
    auto down = e.tensor("mlp.reduced", act, outside, bf16);
    b.op<"assign">({dn}, {down}, {}, "mlp.reduce");
    auto b_proj = b.parameter("mlp.c_proj.bias", {hidden}, bf16);
    auto mlp = b.tensor("mlp.out", act, bf16);
    b.op<"add">({down, b_proj}, {mlp}, {}, "mlp.proj.bias");
    auto x2 = b.tensor("x2", act, bf16);
    b.op<"add">({x1, mlp}, {x2}, {}, "mlp.residual");
    return x2;
  });

  auto lnf_w = p.parameter("ln_f.weight", {hidden}, bf16), lnf_b = p.parameter("ln_f.bias", {hidden}, bf16);
  auto lnf = p.tensor("ln_f", act, bf16), lnf_mean = p.tensor("ln_f.mean", {batch, seq}), lnf_var = p.tensor("ln_f.var", {batch, seq});
  p.op<"layer_norm">({out, lnf_w, lnf_b}, {lnf, lnf_mean, lnf_var}, {.begin_norm_axis = 2}, "ln_f");
  auto head_in = d.tensor("head.in", act, inside, bf16);
  p.op<"assign">({lnf}, {head_in}, {}, "head.gather");
  const auto w_lm = c.tie_word_embeddings ? wte : d.parameter("lm_head", {hidden, vocab}, {-1, on_mp}, bf16);
  auto logits = p.tensor("logits", {batch, seq, vocab}, bf16);
  p.op<"matmul">({head_in, w_lm}, {logits}, {.trans_y = c.tie_word_embeddings}, "lm_head");
  auto labels =
      detail::data_tensor(p, l, "labels", {batch, seq, 1}, tensor_dist_attr(mesh, {detail::dims_of(on_dp), seq_inside, mesh_dims{}}));
  auto probs = p.tensor("softmax", {batch, seq, vocab}), token_loss = p.tensor("loss", {batch, seq, 1});
  p.op<"c_softmax_with_cross_entropy">({logits, labels}, {probs, token_loss}, {.nranks = mp}, "loss");
  m.loss = token_loss;
  return m;
}

/// The model's own parameter count (its vocabulary unpadded): of the plan `gpt(c, ...)` builds on
/// one device.
constexpr std::int64_t parameters(const gpt_config& c) {
  return parameter_count(gpt(c, process_mesh({1}), {}, {.seq = 1, .micro_batch = 1}).plan);
}

}  // namespace ctspmd::models

#endif
