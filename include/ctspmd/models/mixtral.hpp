#ifndef CTSPMD_MODELS_MIXTRAL_HPP
#define CTSPMD_MODELS_MIXTRAL_HPP
/// \file Mixtral from its Hugging Face config: a Llama-style decoder (`<ctspmd/models/llama.hpp>`)
/// whose MLP is a mixture of `num_local_experts` SwiGLU experts, `num_experts_per_tok` a token.
///
///     constexpr auto m = models::mixtral(models::mixtral_8x7b, process_mesh({2, 8}), {.dp = 0, .ep = 1});
///     static_assert(models::parameters(models::mixtral_8x7b) == 46'702'792'704);
///
/// Each layer: the Llama attention (tensor parallel over tp, context parallel over cp); then
/// RMSNorm, the router (a linear layer to the experts' logits), top-k dispatch of each device's
/// tokens into its own capacity slots (`moe_gate_dispatch`: slots per device = tokens x k /
/// experts x `capacity_factor`, rounded up), an all-to-all over ep that brings each expert's
/// slots to the device holding the expert (an `assign` to the layout wanted), the experts'
/// SwiGLU, the all-to-all back, and the weighted combine (`moe_combine`), as Megatron's
/// all-to-all dispatcher does (and `examples/mixtral`).
///
/// Layout: the batch is split over dp and ep (each device its own tokens); the experts' weights
/// over ep (expert e on ep rank e / (experts / ep)); tp applies to the attention (the experts
/// are not split over it, each tp rank computing them for its tokens: Megatron's expert tensor
/// parallelism is not built); sequence parallelism with experts is refused.

#include <cstddef>
#include <cstdint>

#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/model/plan.hpp>
#include <ctspmd/models/common.hpp>
#include <ctspmd/models/llama.hpp>

namespace ctspmd::models {

/// A Mixtral `config.json`: the Llama fields and the experts'.
struct mixtral_config {
  llama_config base{};  ///< hidden_size, intermediate_size (each expert's), heads, layers, vocabulary
  std::int64_t num_local_experts = 0, num_experts_per_tok = 0;
};

/// Published configs (models/configs/).
inline constexpr mixtral_config mixtral_8x7b{{.hidden_size = 4096, .intermediate_size = 14336, .num_hidden_layers = 32,
                                              .num_attention_heads = 32, .num_key_value_heads = 8, .vocab_size = 32000,
                                              .max_position_embeddings = 32768},
                                             8, 2};
inline constexpr mixtral_config mixtral_8x22b{{.hidden_size = 6144, .intermediate_size = 16384, .num_hidden_layers = 56,
                                               .num_attention_heads = 48, .num_key_value_heads = 8, .vocab_size = 32768,
                                               .max_position_embeddings = 65536},
                                              8, 2};

/// The plan a Mixtral builder returns.
using mixtral_plan = model::plan<104, 56>;

namespace detail {
/// Routed experts' sizes and layout: `experts` SwiGLU experts of `ffn`, `top_k` a token; each of
/// `devices` devices (the batch split over `by_device`) has `slots` slots per expert.
struct expert_layer {
  std::int64_t experts = 0, top_k = 0, ffn = 0, devices = 1, slots = 0;
  mesh_dims by_device;
  /// The slots each device gets per expert, for `tokens_per_device` tokens: tokens x k / experts
  /// x `capacity_factor`, rounded up.
  static constexpr std::int64_t slots_for(std::int64_t tokens_per_device, std::int64_t experts, std::int64_t top_k,
                                          double capacity_factor) {
    const double wanted =
        static_cast<double>(tokens_per_device * top_k) / static_cast<double>(experts) * capacity_factor;
    auto n = static_cast<std::int64_t>(wanted);
    return static_cast<double>(n) < wanted ? n + 1 : n;
  }
  constexpr std::int64_t capacity() const noexcept { return devices * slots; }
};

/// The routed experts on tokens `t` [tokens, hidden] (see `<ctspmd/models/mixtral.hpp>`): the
/// router (with `correction_bias`, a bias added to the scores before the top-k, as DeepSeek-V3's
/// `e_score_correction_bias`), dispatch, the all-to-alls over ep, the experts and the combine;
/// returns the combined [tokens, hidden].
template <class Plan>
constexpr model::tensor_id routed_experts(Plan& b, const process_mesh& mesh, const layout& l, const expert_layer& x,
                                          model::tensor_id t, std::int64_t tokens, std::int64_t hidden,
                                          bool correction_bias = false) {
  constexpr auto bf16 = model::bfloat16;
  constexpr auto int64 = model::int64;
  const declarer<Plan> e{b, l.annotated};
  const std::int64_t experts = x.experts, top_k = x.top_k, ffn = x.ffn, capacity = x.capacity();
  auto w_router = b.parameter("router", {hidden, experts}, bf16);
  auto logits = b.tensor("router.logits", {tokens, experts}, bf16);
  b.template op<"matmul">({t, w_router}, {logits}, {}, "router");
  if (correction_bias) {
    auto bias = b.parameter("router.correction_bias", {experts});
    auto scores = b.tensor("router.scores", {tokens, experts}, bf16);
    b.template op<"add">({logits, bias}, {scores}, {}, "router.correction");
    logits = scores;
  }
  // Each device routes its tokens into its slots: the capacity dim is split like the tokens.
  auto y = b.tensor("dispatched", {experts, capacity, hidden}, bf16);
  auto weights = b.tensor("combine_weights", {tokens, top_k}, bf16);
  auto slots = b.tensor("scatter_index", {top_k, tokens}, int64);
  auto offsets = b.tensor("expert_offset", {experts}, int64), ids = b.tensor("expert_id", {tokens, top_k}, int64);
  b.template op<"moe_gate_dispatch">({t, logits}, {y, weights, slots, offsets, ids}, {.k = top_k, .capacity = capacity},
                                     "dispatch");
  // All-to-all over ep: each expert's slots to the ep rank holding it.
  auto to_experts = e.tensor("to_experts", {experts, capacity, hidden},
                             tensor_dist_attr(mesh, {dims_of(l.ep), dims_of(l.dp), mesh_dims{}}), bf16);
  b.template op<"assign">({y}, {to_experts}, {}, "all_to_all.dispatch");
  auto w1 = e.parameter("w1", {experts, hidden, ffn}, {l.ep, -1, -1}, bf16);
  auto w3 = e.parameter("w3", {experts, hidden, ffn}, {l.ep, -1, -1}, bf16);
  auto w2 = e.parameter("w2", {experts, ffn, hidden}, {l.ep, -1, -1}, bf16);
  auto gate = b.tensor("gate", {experts, capacity, ffn}, bf16), up = b.tensor("up", {experts, capacity, ffn}, bf16);
  b.template op<"matmul">({to_experts, w1}, {gate}, {}, "experts.w1");
  b.template op<"matmul">({to_experts, w3}, {up}, {}, "experts.w3");
  auto act_e = b.tensor("experts.swiglu", {experts, capacity, ffn}, bf16);
  b.template op<"swiglu">({gate, up}, {act_e}, {}, "experts.swiglu");
  auto o = b.tensor("experts.out", {experts, capacity, hidden}, bf16);
  b.template op<"matmul">({act_e, w2}, {o}, {}, "experts.w2");
  // All-to-all back: each device its own slots' outputs.
  auto back = e.tensor("from_experts", {experts, capacity, hidden}, tensor_dist_attr(mesh, {mesh_dims{}, x.by_device, mesh_dims{}}),
                       bf16);
  b.template op<"assign">({o}, {back}, {}, "all_to_all.combine");
  // Each device's rows are its slots, expert-major (scatter_index's order): [E, C, H] as
  // [E, devices, slots, H], devices first, flattened.
  auto blocks = b.tensor("rows.blocks", {experts, x.devices, x.slots, hidden}, bf16);
  b.template op<"reshape">({back}, {blocks}, {.shape = {experts, x.devices, x.slots, hidden}}, "rows.split");
  auto by_block = b.tensor("rows.by_device", {x.devices, experts, x.slots, hidden}, bf16);
  b.template op<"transpose">({blocks}, {by_block}, {.perm = {1, 0, 2, 3}}, "rows.by_device");
  auto rows = b.tensor("rows", {experts * capacity, hidden}, bf16);
  b.template op<"reshape">({by_block}, {rows}, {.shape = {experts * capacity, hidden}}, "rows");
  auto slots_t = b.tensor("scatter_index.t", {tokens, top_k}, int64);
  b.template op<"transpose">({slots}, {slots_t}, {.perm = {1, 0}}, "slots");
  auto combined = b.tensor("combined", {tokens, hidden}, bf16);
  b.template op<"moe_combine">({rows, weights, slots_t}, {combined}, {}, "combine");
  return combined;
}
}  // namespace detail

/// The Mixtral model of config `c` on `mesh` with layout `l`, run sizes `r` and the experts'
/// capacity factor (see the file comment).
constexpr built_model<mixtral_plan> mixtral(const mixtral_config& c, const process_mesh& mesh, const layout& l = {},
                                            const run_shape& r = {}, double capacity_factor = 1.0) {
  detail::check_llama(c.base, r);
  detail::check_experts(c.num_local_experts, c.num_experts_per_tok, capacity_factor);
  detail::check_layout(mesh, l, true);
  if (l.sp) raise(make_error(error_kind::invalid_argument, "models", "sequence parallelism with experts is not built (sp)"));
  detail::check_divides(mesh, l.tp, c.base.kv_heads(), "num_key_value_heads ({}) is not divisible by mesh dim {}'s size {}");
  detail::check_divides(mesh, l.ep, c.num_local_experts, "num_local_experts ({}) is not divisible by mesh dim {}'s size {}");

  mesh_dims by_device = detail::dims_of(l.dp);  // the batch: each device (of dp x ep) its own sequences
  if (l.ep >= 0) by_device.push_back(l.ep);
  detail::llama_decoder<mixtral_plan> dec(c.base, mesh, l, r, by_device);
  const std::int64_t hidden = dec.hidden, seq = dec.seq, batch = dec.batch, tokens = batch * seq;
  const std::int64_t devices = detail::size_of(mesh, l.dp) * detail::size_of(mesh, l.ep);
  const detail::expert_layer experts{
      c.num_local_experts, c.num_experts_per_tok, c.base.intermediate_size, devices,
      detail::expert_layer::slots_for(r.micro_batch * seq, c.num_local_experts, c.num_experts_per_tok, capacity_factor),
      by_device};
  constexpr auto bf16 = model::bfloat16;
  using model::tensor_id;

  built_model<mixtral_plan> m{mixtral_plan(mesh), {}, dec.vocab, dec.vocab - c.base.vocab_size};
  const auto x0 = dec.embed(m.plan);
  const auto out = m.plan.repeat(static_cast<std::size_t>(c.base.num_hidden_layers), x0, [&](mixtral_plan& b, tensor_id x) {
    const auto x1 = dec.attention(b, x);
    auto ln_w = b.parameter("ln2.weight", {hidden}, bf16);
    auto ln = b.tensor("ln2", dec.act, bf16), invvar = b.tensor("ln2.invvar", {batch, seq});
    b.op<"rms_norm">({x1, ln_w}, {ln, invvar}, {}, "ln2");
    auto t = b.tensor("tokens", {tokens, hidden}, bf16);
    b.op<"reshape">({ln}, {t}, {.shape = {tokens, hidden}}, "tokens");
    const auto combined = detail::routed_experts(b, mesh, l, experts, t, tokens, hidden);
    auto moe = b.tensor("moe.out", dec.act, bf16);
    b.op<"reshape">({combined}, {moe}, {.shape = {batch, seq, hidden}}, "moe.out");
    auto x2 = b.tensor("x2", dec.act, bf16);
    b.op<"add">({x1, moe}, {x2}, {}, "moe.residual");
    return x2;
  });
  m.loss = dec.head(m.plan, out);
  return m;
}

/// The model's own parameter count (its vocabulary unpadded): of the plan `mixtral(c, ...)`
/// builds on one device.
constexpr std::int64_t parameters(const mixtral_config& c) {
  return parameter_count(mixtral(c, process_mesh({1}), {}, {.seq = 1, .micro_batch = 1}).plan);
}
/// The parameters a token uses: all but the experts it is not routed to (each layer's
/// num_local_experts - num_experts_per_tok experts' three weights).
constexpr std::int64_t active_parameters(const mixtral_config& c) {
  const std::int64_t expert = 3 * c.base.hidden_size * c.base.intermediate_size;
  return parameters(c) - c.base.num_hidden_layers * (c.num_local_experts - c.num_experts_per_tok) * expert;
}

}  // namespace ctspmd::models

#endif
