// A GPT-style decoder's sharding plan on a [dp, mp] mesh, with Megatron-LM's tensor
// parallelism: in attention and in the MLP, a column-parallel matmul (weight split on its
// output dim over mp) feeds a row-parallel one (weight split on its input dim), so the
// activations in between stay sharded and only the row-parallel output, partial over mp, is
// all-reduced. With sequence parallelism, the activations outside those regions are also
// sharded along the sequence dim on mp: each all-reduce becomes an all-gather before the
// column-parallel matmul and a reduce-scatter after the row-parallel one.
#ifndef CTSPMD_EXAMPLES_GPT_PLAN_HPP
#define CTSPMD_EXAMPLES_GPT_PLAN_HPP

#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>

namespace gpt {

using namespace ctspmd;

// Model and mesh sizes.
inline constexpr std::int64_t dp = 2, mp = 4;                  // mesh [dp, mp]
inline constexpr std::int64_t batch = 8, seq = 1024, hidden = 1024, heads = 16, head_dim = 64;
inline constexpr std::int64_t ffn = 4 * hidden, vocab = 32000;
inline constexpr auto fp16 = model::float16;
inline constexpr auto int64 = model::int64;
inline constexpr process_mesh mesh({dp, mp});

/// Which plan: Megatron tensor parallelism, the same with sequence parallelism, or one with a
/// mis-sharded matmul (for the compile-fail tests).
enum class variant {
  tensor_parallel,
  sequence_parallel,
  row_weight_on_dp,   ///< attention's output weight split on the dp mesh dim: a conflict
  up_weight_by_rows,  ///< the MLP's first weight split by rows: extra reshards in the layer
};

using plan_type = model::plan<64, 48>;

/// The plan of a decoder with `Layers` layers (one repeated block).
template <std::size_t Layers, variant V = variant::tensor_parallel>
constexpr auto make_plan() {
  constexpr bool sp = V == variant::sequence_parallel;
  // Activations outside the tensor-parallel regions are [batch, seq, hidden] sharded on dp
  // (and, with sequence parallelism, on seq over mp: annotated where they start, on x0 and
  // on the column-parallel outputs, whose inputs must then be gathered).
  plan_type p(mesh);
  using model::tensor_id;
  const tensor_shape act{batch, seq, hidden};

  auto ids = p.tensor("ids", {batch, seq}, {0, -1}, int64);
  auto wte = p.parameter("wte", {vocab, hidden}, {1, -1}, fp16);  // vocabulary-parallel embedding
  auto emb = p.tensor("emb", act, fp16);
  p.op<"c_embedding">({wte, ids}, {emb}, {.vocab_size = vocab}, "embed");  // partial over mp: each device has its rows
  auto x0 = sp ? p.tensor("x0", act, {0, 1, -1}, fp16) : p.tensor("x0", act, fp16);
  p.op<"assign">({emb}, {x0}, {}, "embed.reduce");

  auto out = p.repeat(Layers, x0, [&](plan_type& b, tensor_id x) {
    // ---- attention ----
    // (Tensors are declared in statements of their own: the order in which a call's arguments
    // are evaluated is unspecified, and it would decide their indices.)
    auto ln1_scale = b.parameter("ln1.scale", {hidden}, fp16), ln1_bias = b.parameter("ln1.bias", {hidden}, fp16);
    auto ln1 = b.tensor("ln1", act, fp16);
    auto ln1_mean = b.tensor("ln1.mean", {batch, seq}), ln1_var = b.tensor("ln1.var", {batch, seq});
    b.op<"layer_norm">({x, ln1_scale, ln1_bias}, {ln1, ln1_mean, ln1_var}, {.begin_norm_axis = 2}, "ln1");
    auto w_qkv = b.parameter("w_qkv", {hidden, 3 * hidden}, {-1, 1}, fp16);  // column parallel
    auto qkv = sp ? b.tensor("qkv", {batch, seq, 3 * hidden}, {0, -1, 1}, fp16)
                  : b.tensor("qkv", {batch, seq, 3 * hidden}, fp16);
    b.op<"matmul">({ln1, w_qkv}, {qkv}, {}, "attn.qkv");
    auto per_head = b.tensor("qkv.heads", {batch, seq, heads, 3 * head_dim}, fp16);
    b.op<"reshape">({qkv}, {per_head}, {.shape = {batch, seq, heads, 3 * head_dim}}, "attn.heads");
    const tensor_shape bshd{batch, seq, heads, head_dim}, bhsd{batch, heads, seq, head_dim};
    auto q = b.tensor("q", bshd, fp16), k = b.tensor("k", bshd, fp16), v = b.tensor("v", bshd, fp16);
    b.op<"split">({per_head}, {q, k, v}, {.num = 3, .axis = 3}, "attn.split");
    auto qt = b.tensor("q.t", bhsd, fp16), kt = b.tensor("k.t", bhsd, fp16), vt = b.tensor("v.t", bhsd, fp16);
    b.op<"transpose">({q}, {qt}, {.perm = {0, 2, 1, 3}}, "attn.q.t");
    b.op<"transpose">({k}, {kt}, {.perm = {0, 2, 1, 3}}, "attn.k.t");
    b.op<"transpose">({v}, {vt}, {.perm = {0, 2, 1, 3}}, "attn.v.t");
    auto scores = b.tensor("scores", {batch, heads, seq, seq}, fp16);
    b.op<"matmul">({qt, kt}, {scores}, {.trans_y = true}, "attn.scores");
    auto scaled = b.tensor("scores.scaled", {batch, heads, seq, seq}, fp16);
    b.op<"scale">({scores}, {scaled}, {}, "attn.scale");
    auto probs = b.tensor("probs", {batch, heads, seq, seq}, fp16);
    b.op<"softmax">({scaled}, {probs}, {.axis = -1}, "attn.softmax");
    auto ctx = b.tensor("ctx", bhsd, fp16);
    b.op<"matmul">({probs, vt}, {ctx}, {}, "attn.context");
    auto ctx_t = b.tensor("ctx.t", bshd, fp16);
    b.op<"transpose">({ctx}, {ctx_t}, {.perm = {0, 2, 1, 3}}, "attn.context.t");
    auto ctx_flat = b.tensor("ctx.flat", act, fp16);
    b.op<"reshape">({ctx_t}, {ctx_flat}, {.shape = {batch, seq, hidden}}, "attn.merge");
    auto w_o = V == variant::row_weight_on_dp ? b.parameter("w_o", {hidden, hidden}, {0, -1}, fp16)
                                              : b.parameter("w_o", {hidden, hidden}, {1, -1}, fp16);  // row parallel
    auto attn = b.tensor("attn.out", act, fp16);
    b.op<"matmul">({ctx_flat, w_o}, {attn}, {}, "attn.out");  // partial over mp
    auto x1 = b.tensor("x1", act, fp16);
    b.op<"add">({x, attn}, {x1}, {}, "attn.residual");

    // ---- MLP ----
    auto ln2_scale = b.parameter("ln2.scale", {hidden}, fp16), ln2_bias = b.parameter("ln2.bias", {hidden}, fp16);
    auto ln2 = b.tensor("ln2", act, fp16);
    auto ln2_mean = b.tensor("ln2.mean", {batch, seq}), ln2_var = b.tensor("ln2.var", {batch, seq});
    b.op<"layer_norm">({x1, ln2_scale, ln2_bias}, {ln2, ln2_mean, ln2_var}, {.begin_norm_axis = 2}, "ln2");
    auto w_up = V == variant::up_weight_by_rows ? b.parameter("w_up", {hidden, ffn}, {1, -1}, fp16)
                                                : b.parameter("w_up", {hidden, ffn}, {-1, 1}, fp16);  // column parallel
    auto up = sp ? b.tensor("up", {batch, seq, ffn}, {0, -1, 1}, fp16) : b.tensor("up", {batch, seq, ffn}, fp16);
    b.op<"matmul">({ln2, w_up}, {up}, {}, "mlp.up");
    auto act_up = b.tensor("up.gelu", {batch, seq, ffn}, fp16);
    b.op<"gelu">({up}, {act_up}, {}, "mlp.gelu");
    auto w_down = b.parameter("w_down", {ffn, hidden}, {1, -1}, fp16);  // row parallel
    auto down = b.tensor("mlp.out", act, fp16);
    b.op<"matmul">({act_up, w_down}, {down}, {}, "mlp.down");  // partial over mp
    auto x2 = b.tensor("x2", act, fp16);
    b.op<"add">({x1, down}, {x2}, {}, "mlp.residual");
    return x2;
  });

  auto ln_f_scale = p.parameter("ln_f.scale", {hidden}, fp16), ln_f_bias = p.parameter("ln_f.bias", {hidden}, fp16);
  auto ln_f = p.tensor("ln_f", act, fp16);
  auto ln_f_mean = p.tensor("ln_f.mean", {batch, seq}), ln_f_var = p.tensor("ln_f.var", {batch, seq});
  p.op<"layer_norm">({out, ln_f_scale, ln_f_bias}, {ln_f, ln_f_mean, ln_f_var}, {.begin_norm_axis = 2}, "ln_f");
  auto w_lm = p.parameter("w_lm", {hidden, vocab}, {-1, 1}, fp16);  // vocabulary-parallel head
  auto logits = sp ? p.tensor("logits", {batch, seq, vocab}, {0, -1, 1}, fp16)
                   : p.tensor("logits", {batch, seq, vocab}, fp16);
  p.op<"matmul">({ln_f, w_lm}, {logits}, {}, "lm_head");
  auto labels = p.tensor("labels", {batch, seq, 1}, {0, -1, -1}, int64);
  auto softmax = p.tensor("softmax", {batch, seq, vocab}, fp16), loss = p.tensor("loss", {batch, seq, 1});
  p.op<"cross_entropy_with_softmax">({logits, labels}, {softmax, loss}, {}, "loss");
  return p;
}

/// The training step of that decoder: its loss is the plan's last tensor.
template <std::size_t Layers, variant V = variant::tensor_parallel>
constexpr auto make_step() {
  const auto p = make_plan<Layers, V>();
  return model::training_step(p, {p.tensor_count() - 1});
}

}  // namespace gpt

#endif
