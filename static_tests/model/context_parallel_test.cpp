// Context parallelism: a Llama-style attention block on a [dp, cp, tp] mesh whose activations
// keep the sequence split over cp through the whole layer (Llama 3's and Megatron's all-gather
// form): attention keeps each device's chunk of queries and all-gathers keys and values over cp;
// backward gathers them again (the cost counts it) and reduce-scatters their gradients; the
// weights are replicated over cp, so their gradients are reduced over dp and cp at once (one
// all-reduce over the product group). The rotary
// tables are each device's rows (no position ids), as Megatron slices them per cp rank.
// Context parallelism is asked for: flash_attention's attribute context_parallel (the grad
// recipe passes it to flash_attention_grad); without it attention gathers q's sequence too.
#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>

#include "../test_support.hpp"

#include <utility>

using namespace ctspmd;
using model::collective;
using model::phase;

namespace {

constexpr std::int64_t hidden = 512, heads = 8, kv_heads = 4, head_dim = 64, seq = 256, batch = 2, layers = 2;
constexpr std::int64_t dp = 2, cp = 2, tp = 2;
constexpr process_mesh mesh({dp, cp, tp});
using plan_type = model::plan<48, 24>;

struct forward {
  plan_type p{mesh};
  model::tensor_id loss{};
  constexpr explicit forward(bool context_parallel = true) {
    using model::tensor_id;
    constexpr auto bf16 = model::bfloat16;
    const tensor_shape act{batch, seq, hidden};
    const dims_mapping by_sequence{0, 1, -1};  // batch over dp, sequence over cp
    auto x0 = p.tensor("x0", act, by_sequence, bf16);
    auto sin = p.tensor("rope.sin", {1, seq, 1, head_dim}, bf16), cos = p.tensor("rope.cos", {1, seq, 1, head_dim}, bf16);
    loss = p.repeat(layers, x0, [&](plan_type& b, tensor_id x) {
      auto ln_w = b.parameter("ln.weight", {hidden}, bf16);
      auto ln = b.tensor("ln", act, bf16), invvar = b.tensor("ln.invvar", {batch, seq});
      b.op<"rms_norm">({x, ln_w}, {ln, invvar}, {}, "ln");
      auto wq = b.parameter("wq", {hidden, heads * head_dim}, {-1, 2}, bf16);  // column parallel over tp
      auto wk = b.parameter("wk", {hidden, kv_heads * head_dim}, {-1, 2}, bf16);
      auto wv = b.parameter("wv", {hidden, kv_heads * head_dim}, {-1, 2}, bf16);
      auto q = b.tensor("q", {batch, seq, heads * head_dim}, bf16);
      auto k = b.tensor("k", {batch, seq, kv_heads * head_dim}, bf16);
      auto v = b.tensor("v", {batch, seq, kv_heads * head_dim}, bf16);
      b.op<"matmul">({ln, wq}, {q}, {}, "q");
      b.op<"matmul">({ln, wk}, {k}, {}, "k");
      b.op<"matmul">({ln, wv}, {v}, {}, "v");
      auto q4 = b.tensor("q.heads", {batch, seq, heads, head_dim}, bf16);
      auto k4 = b.tensor("k.heads", {batch, seq, kv_heads, head_dim}, bf16);
      auto v4 = b.tensor("v.heads", {batch, seq, kv_heads, head_dim}, bf16);
      b.op<"reshape">({q}, {q4}, {.shape = {batch, seq, heads, head_dim}}, "q.heads");
      b.op<"reshape">({k}, {k4}, {.shape = {batch, seq, kv_heads, head_dim}}, "k.heads");
      b.op<"reshape">({v}, {v4}, {.shape = {batch, seq, kv_heads, head_dim}}, "v.heads");
      auto none = b.tensor("rope.none", {}), none_out = b.tensor("rope.none.out", {});
      auto qr = b.tensor("q.rope", {batch, seq, heads, head_dim}, bf16);
      auto kr = b.tensor("k.rope", {batch, seq, kv_heads, head_dim}, bf16);
      b.op<"fused_rope">({q4, k4, none, sin, cos, none}, {qr, kr, none_out}, {}, "rope");
      auto ctx = b.tensor("ctx", {batch, seq, heads, head_dim}, bf16);
      auto probs = b.tensor("softmax", {batch, heads, seq, seq}, bf16);
      auto lse = b.tensor("lse", {batch, heads, seq}), seed = b.tensor("seed", {2}, model::int64);
      b.op<"flash_attention">({qr, kr, v4}, {ctx, probs, lse, seed}, {.causal = true, .context_parallel = context_parallel}, "core");
      auto ctx_flat = b.tensor("ctx.flat", act, bf16);
      b.op<"reshape">({ctx}, {ctx_flat}, {.shape = {batch, seq, hidden}}, "merge");
      auto wo = b.parameter("wo", {heads * head_dim, hidden}, {2, -1}, bf16);  // row parallel over tp
      auto o = b.tensor("o", act, bf16);
      b.op<"matmul">({ctx_flat, wo}, {o}, {}, "o");
      auto reduced = b.tensor("o.reduced", act, by_sequence, bf16);
      b.op<"assign">({o}, {reduced}, {}, "o.reduce");
      auto y = b.tensor("y", act, bf16);
      b.op<"add">({x, reduced}, {y}, {}, "residual");
      return y;
    });
  }
};

constexpr auto make_step(const model::training_options& o = {}) {
  const forward f;
  return model::training_step(f.p, f.loss, o);
}
constexpr auto step = make_step();
constexpr auto r = model::propagate(step);
constexpr auto c = model::cost(step, r);

// The sequence stays split over cp: q, the attention output and the layer's output.
constexpr auto attr_of(std::string_view name) {
  for (std::size_t t = 0; t < step.tensor_count(); ++t)
    if (step.tensor_at(t).name == name) return r.attr({t});
  return tensor_dist_attr{};
}
static_assert(attr_of("q.rope").dims_mapping() == dims_mapping{0, 1, 2, -1});
static_assert(attr_of("ctx").dims_mapping() == dims_mapping{0, 1, 2, -1});
static_assert(attr_of("lse").dims_mapping() == dims_mapping{0, 2, 1});
static_assert(attr_of("y").dims_mapping() == dims_mapping{0, 1, -1});

// Not asked for (Paddle's rule): the attention's sequence is replicated, q gathered over cp too,
// and no gradient of k or v is partial over the chunks (nothing reduce-scattered over cp).
constexpr auto no_cp = [] {
  const forward f(false);
  const auto s = model::training_step(f.p, f.loss);
  const auto rs = model::propagate(s);
  const auto cs = model::cost(s, rs);
  dims_mapping ctx;
  for (std::size_t t = 0; t < s.tensor_count(); ++t)
    if (s.tensor_at(t).name == "ctx") ctx = rs.attr({t}).dims_mapping();
  return std::pair{ctx, cs.collectives(phase::backward, collective::reduce_scatter, 1).count};
}();
static_assert(no_cp.first == dims_mapping{0, -1, 2, -1} && no_cp.second == 0);

// A device's k (and v): its batch row, its 128 positions, its 2 kv heads of 64, bf16.
constexpr std::int64_t kv_local = (batch / dp) * (seq / cp) * (kv_heads / tp) * head_dim * 2;
// Forward: k and v all-gathered over cp (mesh dim 1) in each layer; the row-parallel output's
// all-reduce over tp; nothing else.
static_assert(r.count(phase::forward) == 3 * layers);
static_assert(c.collectives(phase::forward, collective::all_gather, 1).count == 2 * layers);
static_assert(c.collectives(phase::forward, collective::all_gather, 1).bytes == 2 * layers * (cp - 1) * kv_local);
static_assert(c.collectives(phase::forward, collective::all_reduce, 2).count == layers);
// Backward: k and v gathered again (kept as their chunks, as Megatron does), their gradients,
// partial over the query chunks, reduce-scattered back to the chunks.
static_assert(c.collectives(phase::backward, collective::all_gather, 1).count == 2 * layers);
static_assert(c.collectives(phase::backward, collective::reduce_scatter, 1).count == 2 * layers);
static_assert(c.collectives(phase::backward, collective::reduce_scatter, 1).bytes == 2 * layers * (cp * kv_local) * (cp - 1) / cp);
// Optimizer: the five weights of a layer saw every token of dp and cp: each gradient is one
// all-reduce over their product group of 4 devices, listed under dp (mesh dim 0): 2 x 3/4 of a
// device's part (ln [512] whole, wq, wk, wv and wo split over tp), bf16.
constexpr std::int64_t layer_weights = (512 + (512 * 512 + 2 * 512 * 256 + 512 * 512) / tp) * 2;
static_assert(c.collectives(phase::optimizer, collective::all_reduce, 0).count == 5 * layers);
static_assert(c.collectives(phase::optimizer, collective::all_reduce, 0).bytes == layers * layer_weights * 2 * 3 / 4);
static_assert(c.collectives(phase::optimizer, collective::all_reduce, 1).count == 0);
static_assert(c.collectives(phase::optimizer, collective::all_reduce, 2).count == 0);
static_assert([] {
  for (std::size_t e = 0; e < r.reshard_entries(); ++e)
    if (r.reshard_at(e).phase == phase::optimizer && r.reshard_at(e).group != 0b011) return false;
  return true;
}());

// ZeRO over the product group of dp and cp (Megatron's distributed optimizer under context
// parallelism): each state split over the 4 devices on one dim (dp major), each gradient one
// reduce-scatter over the group and each updated shard one all-gather back, listed under dp;
// nothing over cp alone.
constexpr auto zero_step = make_step({.shard_optimizer_states_on = 0, .shard_optimizer_states_also_on = 1});
constexpr auto zr = model::propagate(zero_step);
constexpr auto zc = model::cost(zero_step, zr);
static_assert(zr.ok());
static_assert(zc.collectives(phase::optimizer, collective::reduce_scatter, 0).count == 5 * layers);
static_assert(zc.collectives(phase::optimizer, collective::reduce_scatter, 0).bytes == layers * layer_weights * 3 / 4);
static_assert(zc.collectives(phase::optimizer, collective::all_gather, 0).count == 5 * layers);
static_assert(zc.collectives(phase::optimizer, collective::all_gather, 0).bytes == layers * layer_weights / 4 * 3);
static_assert(zc.collectives(phase::optimizer, collective::all_reduce).count == 0);
static_assert(zc.collectives(phase::optimizer, collective::reduce_scatter, 1).count == 0);
static_assert(zc.collectives(phase::optimizer, collective::all_gather, 1).count == 0);
// the moments (fp32): a quarter of each weight's device part, two of them
static_assert(zc.memory().optimizer_states == layers * layer_weights / 2 / 4 * 4 * 2);
static_assert([] {
  for (std::size_t e = 0; e < zr.reshard_entries(); ++e) {
    const auto& s = zr.reshard_at(e);
    if (s.phase == phase::optimizer && s.kind != collective::local_slice && s.group != 0b011) return false;
  }
  return true;
}());
// ZeRO-3: the parameters gathered over the group before forward and for backward
constexpr auto zero3 = make_step({.shard_optimizer_states_on = 0, .shard_optimizer_states_also_on = 1, .zero_stage = 3});
constexpr auto z3 = model::cost(zero3, model::propagate(zero3));
static_assert(z3.collectives(phase::forward, collective::all_gather, 0).count == 5 * layers);
static_assert(z3.collectives(phase::forward, collective::all_gather, 0).bytes == layers * layer_weights / 4 * 3);
static_assert(z3.memory().parameters == layers * layer_weights / 4);

}  // namespace
