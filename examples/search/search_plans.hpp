#ifndef CTSPMD_EXAMPLES_SEARCH_PLANS_HPP
#define CTSPMD_EXAMPLES_SEARCH_PLANS_HPP
// Forward plans with nothing annotated, for `model::search` (<ctspmd/model/search.hpp>) to lay
// out: Alpa's six-layer MLP on a [2, 2] mesh of a slow and a fast mesh dim, and Llama-3-8B
// decoder layers on [dp 2, mp 8] H100s. examples/search/search.cpp searches them; the search's
// tests (static_tests/model/search_test.cpp, runtime_tests/search_test.cpp) and benchmarks
// (bench/bench.cpp) use them too.

#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/plan.hpp>

namespace search_plans {

using namespace ctspmd;

// ---- Alpa's MLP: six linear layers with relu, three runs of a block of two ----
inline constexpr process_mesh mlp_mesh({2, 2});  // mesh dim 0 across nodes (slow), 1 inside a node (fast)
inline constexpr std::int64_t mlp_tokens = 16384, mlp_hidden = 4096;
using mlp_plan_type = model::plan<16, 8>;
/// x is tensor 0, the body's weights tensors 2 and 5, the output (the loss) tensor 7.
inline constexpr model::tensor_id mlp_x{0}, mlp_w1{2}, mlp_w2{5}, mlp_loss{7};

constexpr mlp_plan_type mlp() {
  mlp_plan_type p(mlp_mesh);
  const tensor_shape act{mlp_tokens, mlp_hidden};
  auto x = p.tensor("x", act, model::bfloat16);
  p.repeat(3, x, [&](mlp_plan_type& b, model::tensor_id h) {
    auto w1 = b.parameter("w1", {mlp_hidden, mlp_hidden}, model::bfloat16);
    auto y = b.tensor("y", act, model::bfloat16);
    b.op<"matmul">({h, w1}, {y});
    auto a = b.tensor("a", act, model::bfloat16);
    b.op<"relu">({y}, {a});
    auto w2 = b.parameter("w2", {mlp_hidden, mlp_hidden}, model::bfloat16);
    auto y2 = b.tensor("y2", act, model::bfloat16);
    b.op<"matmul">({a, w2}, {y2});
    auto a2 = b.tensor("a2", act, model::bfloat16);
    b.op<"relu">({y2}, {a2});
    return a2;
  });
  return p;
}
/// H100s, the slow mesh dim over InfiniBand (50 GB/s), the fast one over NVLink (450 GB/s).
constexpr model::cluster slow_fast() {
  model::cluster c = model::h100_cluster(mlp_mesh);
  c.links[0] = model::h100_system.network_link;
  return c;
}

// ---- Llama-3-8B decoder layers: RMSNorm, grouped-query attention, SwiGLU (no rotary embedding) ----
inline constexpr process_mesh llama_mesh({2, 8});  // [dp, mp]: h100_cluster puts dp across nodes
using llama_plan_type = model::plan<56, 20>;  // 33 tensors, 17 operators (a training step: 6 x 56 tensors)
/// x is tensor 0; the last layer's output (the loss) tensor 32.
inline constexpr model::tensor_id llama_x{0}, llama_loss{32};

constexpr llama_plan_type llama(std::size_t layers) {
  constexpr std::int64_t b = 8, s = 8192, h = 4096, heads = 32, kv = 8, d = 128, f = 14336;
  const tensor_shape act{b, s, h};
  const auto bf16 = model::bfloat16;
  llama_plan_type p(llama_mesh);
  auto x = p.tensor("x", act, bf16);
  p.repeat(layers, x, [&](llama_plan_type& l, model::tensor_id in) {
    auto ln1_w = l.parameter("ln1.weight", {h}, bf16);
    auto ln1 = l.tensor("ln1", act, bf16);
    auto inv1 = l.tensor("ln1.invvar", {b, s});
    l.op<"rms_norm">({in, ln1_w}, {ln1, inv1});
    auto wq = l.parameter("wq", {h, heads * d}, bf16);
    auto wk = l.parameter("wk", {h, kv * d}, bf16);
    auto wv = l.parameter("wv", {h, kv * d}, bf16);
    auto q = l.tensor("q", {b, s, heads * d}, bf16);
    auto k = l.tensor("k", {b, s, kv * d}, bf16);
    auto v = l.tensor("v", {b, s, kv * d}, bf16);
    l.op<"matmul">({ln1, wq}, {q});
    l.op<"matmul">({ln1, wk}, {k});
    l.op<"matmul">({ln1, wv}, {v});
    auto q4 = l.tensor("q.heads", {b, s, heads, d}, bf16);
    auto k4 = l.tensor("k.heads", {b, s, kv, d}, bf16);
    auto v4 = l.tensor("v.heads", {b, s, kv, d}, bf16);
    l.op<"reshape">({q}, {q4}, {.shape = {b, s, heads, d}});
    l.op<"reshape">({k}, {k4}, {.shape = {b, s, kv, d}});
    l.op<"reshape">({v}, {v4}, {.shape = {b, s, kv, d}});
    auto ctx = l.tensor("ctx", {b, s, heads, d}, bf16);
    auto probs = l.tensor("probs", {b, heads, s, s}, bf16);
    auto lse = l.tensor("lse", {b, heads, s});
    auto seed = l.tensor("seed", {2}, model::int64);
    l.op<"flash_attention">({q4, k4, v4}, {ctx, probs, lse, seed}, {.causal = true});
    auto ctx_flat = l.tensor("ctx.flat", act, bf16);
    l.op<"reshape">({ctx}, {ctx_flat}, {.shape = {b, s, h}});
    auto wo = l.parameter("wo", {heads * d, h}, bf16);
    auto o = l.tensor("attn.o", act, bf16);
    auto x1 = l.tensor("x1", act, bf16);
    l.op<"matmul">({ctx_flat, wo}, {o});
    l.op<"add">({in, o}, {x1});
    auto ln2_w = l.parameter("ln2.weight", {h}, bf16);
    auto ln2 = l.tensor("ln2", act, bf16);
    auto inv2 = l.tensor("ln2.invvar", {b, s});
    l.op<"rms_norm">({x1, ln2_w}, {ln2, inv2});
    auto w_gate = l.parameter("w_gate", {h, f}, bf16);
    auto w_up = l.parameter("w_up", {h, f}, bf16);
    auto gate = l.tensor("gate", {b, s, f}, bf16);
    auto up = l.tensor("up", {b, s, f}, bf16);
    l.op<"matmul">({ln2, w_gate}, {gate});
    l.op<"matmul">({ln2, w_up}, {up});
    auto act_ffn = l.tensor("swiglu", {b, s, f}, bf16);
    l.op<"swiglu">({gate, up}, {act_ffn});
    auto w_down = l.parameter("w_down", {f, h}, bf16);
    auto dn = l.tensor("mlp.d", act, bf16);
    auto x2 = l.tensor("x2", act, bf16);
    l.op<"matmul">({act_ffn, w_down}, {dn});
    l.op<"add">({x1, dn}, {x2});
    return x2;
  });
  return p;
}

/// The plan input named `name` (the first, if a block repeats it).
template <class Plan>
constexpr model::tensor_id input(const Plan& p, std::string_view name) {
  for (std::size_t t = 0; t < p.tensor_count(); ++t)
    if (p.tensor_at(t).name == name && p.tensor_at(t).producer == -1) return {t};
  raise(make_error(error_kind::not_found, "search_plans", "no plan input of this name"));
  return {};
}

}  // namespace search_plans

#endif
