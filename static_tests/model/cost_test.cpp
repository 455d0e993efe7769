// What a training step costs: memory per device against the published formulas (Korthikanti et
// al. 2022, ZeRO, Megatron's distributed optimizer), FLOPs, collectives and time.
#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using model::collective;
using model::phase;
using model::tensor_id;
using ctspmd_test::constant_evaluates;

// ==== Korthikanti et al. 2022, Table 2: activation memory of a GPT layer ========================
// The layer written with the paper's operators (section 4.1): layer norm, the Q, K, V projections
// (one input, kept once), Q K^T, softmax, dropout with 1-byte masks, the product with V, the output
// projection, dropout, the residual, layer norm, fc1, GeLU, fc2, dropout, the residual; 16-bit
// activations. Mesh [t]: Megatron's tensor parallelism, and with `SP` sequence parallelism (the
// activations outside the two regions split along the sequence over t). Attention's core (Q K^T,
// softmax, its dropout, the product with V) is the plan's `recomputable` region. The 22B model of
// the paper's Table 3: s 2048, b 4, h 6144, a 64 heads, t 8, 48 layers.
namespace gpt {
inline constexpr std::int64_t s = 2048, b = 4, h = 6144, a = 64, d = h / a, layers = 48;
inline constexpr std::int64_t sbh = s * b * h, as2b = a * s * s * b;
constexpr auto bf16 = model::bfloat16;
constexpr auto byte = model::element_size::of_bytes(1);
using plan_type = model::plan<72, 40>;

struct forward {
  plan_type plan;
  tensor_id loss{};
};

template <std::int64_t T, bool SP, std::size_t Layers = layers>
constexpr forward make_forward() {
  forward r{plan_type(process_mesh({T})), {}};
  auto& p = r.plan;
  const tensor_shape act{b, s, h};
  const dims_mapping outside = SP ? dims_mapping{-1, 0, -1} : dims_mapping{-1, -1, -1}, inside{-1, -1, -1};
  auto x0 = p.tensor("x0", act, outside, bf16);
  auto out = p.repeat(Layers, x0, [&](plan_type& l, tensor_id x) {
    // ---- attention ----
    auto ln1_w = l.parameter("ln1.w", {h}, bf16), ln1_b = l.parameter("ln1.b", {h}, bf16);
    auto ln1 = l.tensor("ln1", act, bf16), ln1_mean = l.tensor("ln1.mean", {b, s}), ln1_var = l.tensor("ln1.var", {b, s});
    l.op<"layer_norm">({x, ln1_w, ln1_b}, {ln1, ln1_mean, ln1_var}, {.begin_norm_axis = 2}, "ln1");
    auto in = l.tensor("attn.in", act, inside, bf16);
    l.op<"assign">({ln1}, {in}, {}, "attn.f");
    tensor_id heads[3] = {};
    const std::string_view names[3] = {"q", "k", "v"};
    for (std::size_t i = 0; i < 3; ++i) {
      auto w = l.parameter(names[i], {h, h}, {-1, 0}, bf16);  // column parallel
      auto y = l.tensor(names[i], act, bf16);
      l.op<"matmul">({in, w}, {y}, {}, names[i]);
      auto y4 = l.tensor(names[i], {b, s, a, d}, bf16);
      l.op<"reshape">({y}, {y4}, {.shape = {b, s, a, d}});
      // q and v as [b, a, s, d], k as K^T [b, a, d, s]
      heads[i] = l.tensor(names[i], i == 1 ? tensor_shape{b, a, d, s} : tensor_shape{b, a, s, d}, bf16);
      l.op<"transpose">({y4}, {heads[i]}, {.perm = i == 1 ? static_vector<std::int64_t, max_rank>{0, 2, 3, 1}
                                                           : static_vector<std::int64_t, max_rank>{0, 2, 1, 3}});
    }
    auto ctx = l.tensor("ctx", {b, a, s, d}, bf16);
    l.recomputable([&](plan_type& c) {
      auto scores = c.tensor("scores", {b, a, s, s}, bf16);
      c.op<"matmul">({heads[0], heads[1]}, {scores}, {}, "attn.qk");
      auto probs = c.tensor("probs", {b, a, s, s}, bf16);
      c.op<"softmax">({scores}, {probs}, {}, "attn.softmax");
      auto dropped = c.tensor("probs.dropout", {b, a, s, s}, bf16), mask = c.tensor("probs.mask", {b, a, s, s}, byte);
      c.op<"dropout">({probs}, {dropped, mask}, {.p = 0.1}, "attn.dropout");
      c.op<"matmul">({dropped, heads[2]}, {ctx}, {}, "attn.v");
    });
    auto ctx_t = l.tensor("ctx", {b, s, a, d}, bf16);
    l.op<"transpose">({ctx}, {ctx_t}, {.perm = {0, 2, 1, 3}});
    auto ctx_flat = l.tensor("ctx", act, bf16);
    l.op<"reshape">({ctx_t}, {ctx_flat}, {.shape = {b, s, h}});
    auto wo = l.parameter("wo", {h, h}, {0, -1}, bf16);  // row parallel
    auto o = l.tensor("attn.o", act, bf16);
    l.op<"matmul">({ctx_flat, wo}, {o}, {}, "attn.proj");
    auto attn = l.tensor("attn.out", act, outside, bf16);
    l.op<"assign">({o}, {attn}, {}, "attn.g");
    auto attn_d = l.tensor("attn.dropout", act, bf16), attn_mask = l.tensor("attn.mask", act, byte);
    l.op<"dropout">({attn}, {attn_d, attn_mask}, {.p = 0.1}, "attn.dropout");
    auto x1 = l.tensor("x1", act, bf16);
    l.op<"add">({x, attn_d}, {x1}, {}, "attn.residual");
    // ---- MLP ----
    auto ln2_w = l.parameter("ln2.w", {h}, bf16), ln2_b = l.parameter("ln2.b", {h}, bf16);
    auto ln2 = l.tensor("ln2", act, bf16), ln2_mean = l.tensor("ln2.mean", {b, s}), ln2_var = l.tensor("ln2.var", {b, s});
    l.op<"layer_norm">({x1, ln2_w, ln2_b}, {ln2, ln2_mean, ln2_var}, {.begin_norm_axis = 2}, "ln2");
    auto m = l.tensor("mlp.in", act, inside, bf16);
    l.op<"assign">({ln2}, {m}, {}, "mlp.f");
    auto w1 = l.parameter("fc1", {h, 4 * h}, {-1, 0}, bf16);
    auto f1 = l.tensor("fc1", {b, s, 4 * h}, bf16);
    l.op<"matmul">({m, w1}, {f1}, {}, "fc1");
    auto g = l.tensor("gelu", {b, s, 4 * h}, bf16);
    l.op<"gelu">({f1}, {g}, {}, "gelu");
    auto w2 = l.parameter("fc2", {4 * h, h}, {0, -1}, bf16);
    auto f2 = l.tensor("fc2", act, bf16);
    l.op<"matmul">({g, w2}, {f2}, {}, "fc2");
    auto mlp = l.tensor("mlp.out", act, outside, bf16);
    l.op<"assign">({f2}, {mlp}, {}, "mlp.g");
    auto mlp_d = l.tensor("mlp.dropout", act, bf16), mlp_mask = l.tensor("mlp.mask", act, byte);
    l.op<"dropout">({mlp}, {mlp_d, mlp_mask}, {.p = 0.1}, "mlp.dropout");
    auto x2 = l.tensor("x2", act, bf16);
    l.op<"add">({x1, mlp_d}, {x2}, {}, "mlp.residual");
    return x2;
  });
  r.loss = p.tensor("loss", {b, s});
  p.op<"mean">({out}, {r.loss}, {.axis = {2}}, "loss");
  return r;
}

template <std::int64_t T, bool SP, model::recompute Recompute = model::recompute::none>
constexpr auto make_step() {
  const auto f = make_forward<T, SP>();
  return model::training_step(f.plan, f.loss, {.recompute = Recompute});
}

/// The bytes a layer keeps beyond the paper's count: the layer norms' mean and variance (fp32,
/// [b, s], laid out as their input), which the paper leaves out. Checked tensor by tensor below.
constexpr std::int64_t statistics(std::int64_t t, bool sp) { return 2 * 2 * 4 * b * s / (sp ? t : 1); }

/// The bytes of the kept tensors whose names end in `suffix`.
template <class Kept, class Step>
constexpr std::int64_t kept_named(const Kept& kept, const Step& step, std::string_view suffix) {
  std::int64_t n = 0;
  for (const auto& k : kept) {
    const auto name = step.tensor_at(k.tensor).name;
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      n += k.bytes * static_cast<std::int64_t>(k.copies);
  }
  return n;
}
}  // namespace gpt

using gpt::as2b;
using gpt::layers;
using gpt::sbh;

// -- no parallelism (t = 1): sbh (34 + 5as/h) a layer --
constexpr auto& none_step = model::plan_of<gpt::make_step<1, false>>;
constexpr auto none_r = model::verified<gpt::make_step<1, false>>();
constexpr auto none_cost = model::cost(none_step, none_r);
static_assert(none_cost.kept_in_block(0) == layers * (34 * sbh + 5 * as2b + gpt::statistics(1, false)));
// The difference from the paper, tensor by tensor: the four statistics of each layer.
constexpr auto none_kept = model::kept_tensors(none_step, none_r);
static_assert(gpt::kept_named(none_kept, none_step, ".mean") + gpt::kept_named(none_kept, none_step, ".var") ==
              layers * gpt::statistics(1, false));
// Tensor by tensor (bytes a layer, in sbh): the layer's input (layer norm 1) 2, layer norm 1's output
// (the projections' input) 2, Q, K, V 2 each, softmax 2as/h, its dropout mask as/h and output 2as/h,
// the output projection's input 2, the attention dropout's mask 1, layer norm 2's input 2 and
// output 2, fc1's output (GeLU's input) 8, GeLU's output 8, the MLP dropout's mask 1.
static_assert(none_kept.size() == 19);
static_assert(gpt::kept_named(none_kept, none_step, "probs") == layers * 2 * as2b &&
              gpt::kept_named(none_kept, none_step, "probs.mask") == layers * as2b &&
              gpt::kept_named(none_kept, none_step, "gelu") == layers * 8 * sbh &&
              gpt::kept_named(none_kept, none_step, "mask") == layers * (as2b + 2 * sbh));
// Only the layers keep anything (the loss, a mean, keeps nothing).
static_assert(none_cost.memory().activations == none_cost.kept_in_block(0));

// -- tensor parallelism (t = 8): sbh (10 + 24/t + 5as/(ht)) --
constexpr auto& tp_step = model::plan_of<gpt::make_step<8, false>>;
constexpr auto tp_cost = model::cost(tp_step, model::verified<gpt::make_step<8, false>>());
static_assert(tp_cost.kept_in_block(0) == layers * (10 * sbh + 24 * sbh / 8 + 5 * as2b / 8 + gpt::statistics(8, false)));
// The 22B model: 59.25 GiB of activations (the paper's Table 2 formula, TP only), plus the statistics.
static_assert(tp_cost.kept_in_block(0) - layers * gpt::statistics(8, false) == 59 * model::GiB + model::GiB / 4);

// -- tensor and sequence parallelism: (sbh/t)(34 + 5as/h) --
constexpr auto& sp_step = model::plan_of<gpt::make_step<8, true>>;
constexpr auto sp_cost = model::cost(sp_step, model::verified<gpt::make_step<8, true>>());
static_assert(sp_cost.kept_in_block(0) == layers * ((34 * sbh + 5 * as2b) / 8 + gpt::statistics(8, true)));
// The gathered inputs of the QKV projections and fc1 are kept as their shards and gathered again
// in backward: two all-gathers a layer forward (f), two more backward besides g's two.
static_assert(sp_cost.collectives(phase::forward, collective::all_gather).count == 2 * layers);
static_assert(sp_cost.collectives(phase::backward, collective::all_gather).count == 2 * layers + 2 * layers);

// -- selective recomputation (with sequence parallelism): 34 sbh / t --
constexpr auto sel_cost = model::cost(model::plan_of<gpt::make_step<8, true, model::recompute::selective>>,
                                      model::verified<gpt::make_step<8, true, model::recompute::selective>>());
static_assert(sel_cost.kept_in_block(0) == layers * (34 * sbh / 8 + gpt::statistics(8, true)));
// The core runs again: its FLOPs, Q K^T and the product with V, count twice more per layer.
static_assert(sel_cost.recompute_flops() > 0 && sel_cost.model_flops() == sp_cost.model_flops());

// -- full recomputation: 2 sbh, each layer's input --
constexpr auto full_cost = model::cost(model::plan_of<gpt::make_step<8, false, model::recompute::full>>,
                                       model::verified<gpt::make_step<8, false, model::recompute::full>>());
static_assert(full_cost.kept_in_block(0) == layers * 2 * sbh);
// The recomputed forward sends its all-reduces again: two a layer forward, two backward (f's) and
// two recomputed.
static_assert(tp_cost.collectives(phase::backward, collective::all_reduce).count == 2 * layers);
static_assert(full_cost.collectives(phase::backward, collective::all_reduce).count == 4 * layers);
// Every forward operator of the layers runs again: all forward FLOPs but the loss's (a mean: one
// per output element, b s).
static_assert(full_cost.recompute_flops() == full_cost.flops(phase::forward) - gpt::b * gpt::s);
static_assert(full_cost.hardware_flops() ==
              full_cost.model_flops() + full_cost.recompute_flops() + full_cost.flops(phase::optimizer));

// ==== ZeRO (Rajbhandari et al. 2020), Table 1: 7.5B parameters over 64 data-parallel ranks =======
// fp16 parameters and gradients, fp32 master weights and Adam moments (K = 12): 2Ψ + 2Ψ + 12Ψ
// bytes a device, 4Ψ + 12Ψ/N with the states sharded (stage 1), 2Ψ + 14Ψ/N (stage 2), 16Ψ/N
// (stage 3). Ψ = 7500 x 1,000,000 in one weight.
namespace zero {
inline constexpr std::int64_t psi = 7'500'000'000, rows = 7500, cols = 1'000'000;
constexpr auto make_forward() {
  model::plan<8, 4> p(process_mesh({64}));
  auto x = p.tensor("x", {64, rows}, {0, -1}, model::float16);
  auto w = p.parameter("w", {rows, cols}, model::float16);
  auto y = p.tensor("y", {64, cols}, model::float16);
  p.op<"matmul">({x, w}, {y}, {}, "layer");
  return p;
}
template <std::int64_t Stage>
constexpr auto make_step() {
  return model::training_step(make_forward(), {2},
                              {.shard_optimizer_states_on = Stage == 0 ? -1 : 0, .zero_stage = Stage, .master_weights = true});
}
template <std::int64_t Stage>
constexpr auto persistent = model::cost(model::plan_of<make_step<Stage>>, model::verified<make_step<Stage>>()).memory().persistent();
}  // namespace zero
static_assert(zero::persistent<0> == 16 * zero::psi);                       // 120 GB
static_assert(zero::persistent<1> == 4 * zero::psi + 12 * zero::psi / 64);  // 31.4 GB
static_assert(zero::persistent<2> == 2 * zero::psi + 14 * zero::psi / 64);  // 16.6 GB
static_assert(zero::persistent<3> == 16 * zero::psi / 64);                  // 1.88 GB
static_assert(zero::persistent<1> == 31'406'250'000 && zero::persistent<2> == 16'640'625'000 &&
              zero::persistent<3> == 1'875'000'000);
// Communication: stages 1 and 2 send what data parallelism does (a reduce-scatter and an
// all-gather instead of an all-reduce, the same bytes); stage 3 gathers the parameter before
// forward and again for backward, and no longer after the update: 3Ψ against 2Ψ.
constexpr auto zero0 = model::cost(model::plan_of<zero::make_step<0>>, model::verified<zero::make_step<0>>());
constexpr auto zero2 = model::cost(model::plan_of<zero::make_step<2>>, model::verified<zero::make_step<2>>());
constexpr auto zero3 = model::cost(model::plan_of<zero::make_step<3>>, model::verified<zero::make_step<3>>());
constexpr std::int64_t sent(const auto& c) {
  std::int64_t n = 0;
  for (auto ph : {phase::forward, phase::backward, phase::optimizer})
    for (auto k : {collective::all_reduce, collective::reduce_scatter, collective::all_gather, collective::all_to_all})
      n += c.collectives(ph, k).bytes;
  return n;
}
static_assert(zero0.collectives(phase::optimizer, collective::all_reduce).count == 1);
static_assert(sent(zero2) == sent(zero0));
static_assert(zero3.collectives(phase::forward, collective::all_gather).count == 1 &&
              zero3.collectives(phase::backward, collective::all_gather).count == 1 &&
              zero3.collectives(phase::optimizer, collective::all_gather).count == 0 &&
              zero3.collectives(phase::optimizer, collective::reduce_scatter).count == 1);
static_assert(2 * sent(zero3) == 3 * sent(zero0));

// ==== Megatron's distributed optimizer: 18 bytes a parameter, 6 + 12/d sharded ===================
// bf16 parameters, fp32 gradients (gradient_element_bytes = 4), fp32 master weights and moments;
// with d = 8 data-parallel ranks sharding the optimizer states: 6 + 12/8 = 7.5 bytes a parameter.
namespace megatron {
constexpr auto make_forward() {
  model::plan<8, 4> p(process_mesh({8}));
  auto x = p.tensor("x", {8, 1024}, {0, -1}, model::bfloat16);
  auto w = p.parameter("w", {1024, 4096}, model::bfloat16);
  auto y = p.tensor("y", {8, 4096}, model::bfloat16);
  p.op<"matmul">({x, w}, {y}, {}, "layer");
  return p;
}
template <bool Sharded>
constexpr auto make_step() {
  return model::training_step(make_forward(), {2},
                              {.shard_optimizer_states_on = Sharded ? 0 : -1, .gradient_element_bytes = 4,
                               .master_weights = true});
}
inline constexpr std::int64_t params = 1024 * 4096;
template <bool Sharded>
constexpr auto persistent =
    model::cost(model::plan_of<make_step<Sharded>>, model::verified<make_step<Sharded>>()).memory().persistent();
}  // namespace megatron
static_assert(megatron::persistent<false> == 18 * megatron::params);
static_assert(2 * megatron::persistent<true> == 15 * megatron::params);  // 6 + 12/8 = 7.5
// fp32 gradients are reduced in fp32: the all-reduce sends twice a bf16 gradient's bytes.
static_assert(model::cost(model::plan_of<megatron::make_step<false>>, model::verified<megatron::make_step<false>>())
                  .collectives(phase::optimizer, collective::all_reduce)
                  .bytes == 2 * 7 * megatron::params * 4 / 8);

// ==== ZeRO shards every parameter's state: a column-parallel bias, sharded on its only dim =======
// Mesh [dp 2, mp 4]; the bias [32] is split over mp; its state is co-sharded over mp then dp, the
// gradient reduce-scattered over dp and the updated shard gathered back: no all-reduce.
namespace bias {
constexpr auto make_step() {
  model::plan<16, 8> p(process_mesh({2, 4}));
  auto x = p.tensor("x", {8, 16}, {0, -1});
  auto w = p.parameter("w", {16, 32}, {-1, 1});
  auto bias = p.parameter("bias", {32}, {1});
  auto y = p.tensor("y", {8, 32}), z = p.tensor("z", {8, 32});
  p.op<"matmul">({x, w}, {y}, {}, "layer");
  p.op<"add">({y, bias}, {z}, {}, "bias");
  return model::training_step(p, z, {.shard_optimizer_states_on = 0});
}
constexpr auto step = make_step();
constexpr auto r = model::verified<make_step>();
constexpr std::size_t adamw_of(std::string_view name) {
  for (std::size_t i = 0; i < step.op_count(); ++i)
    if (step.op_at(i).rule == "adamw" && step.op_at(i).label == name) return i;
  return step.op_count();
}
}  // namespace bias
static_assert(ctspmd_test::is(bias::r.attr({bias::step.op_at(bias::adamw_of("bias")).inputs[3]}), {{1, 0}}));
static_assert(bias::r.count(phase::optimizer, collective::all_reduce) == 0);
static_assert(bias::r.count(phase::optimizer, collective::reduce_scatter) == 2 &&
              bias::r.count(phase::optimizer, collective::all_gather) == 2);
// The bias's reduce-scatter: its local gradient, 32 / 4 floats, halved: 16 bytes.
static_assert(bias::r.bytes(phase::optimizer, collective::reduce_scatter) == (16 * 32 / 4 * 4) / 2 + 32 / 4 * 4 / 2);

// ==== FLOPs, time and errors on a small plan ====================================================
// x [8, 64] (batch over dp) times w [64, 128] (columns over mp) on mesh [dp 2, mp 4]: forward
// 2 m n k = 2 x 4 x 32 x 64 per device, backward twice that; relu one per element.
namespace small {
constexpr auto make_step() {
  model::plan<16, 8> p(process_mesh({2, 4}));
  auto x = p.tensor("x", {8, 64}, {0, -1});
  auto w = p.parameter("w", {64, 128}, {-1, 1});
  auto y = p.tensor("y", {8, 128}), z = p.tensor("z", {8, 128});
  p.op<"matmul">({x, w}, {y}, {}, "layer");
  p.op<"relu">({y}, {z}, {}, "act");
  return model::training_step(p, z);
}
constexpr auto step = make_step();
constexpr auto r = model::verified<make_step>();
constexpr model::cluster fabric{{model::link{1e9, 1e-5}, model::link{1e10, 1e-6}}, 1e12, 0.5, 1};
constexpr auto c = model::cost(step, r, fabric);
}  // namespace small
static_assert(small::c.flops(phase::forward) == 2 * 4 * 32 * 64 + 4 * 32);
static_assert(small::c.flops(phase::backward) == 2 * (2 * 4 * 32 * 64) + 4 * 32);
static_assert(small::c.model_flops() == small::c.flops(phase::forward) + small::c.flops(phase::backward));

// Model FLOPs count a causal attention whole (as utilisation figures do), hardware FLOPs half:
// q [2, 16, 2, 8] a device, 4 x 512 x 16 = 32,768 FLOPs whole forward, twice that backward.
namespace causal {
constexpr auto make_step() {
  model::plan<16, 8> p(process_mesh({2}));
  auto q = p.parameter("q", {2, 16, 2, 8}, {-1, -1, -1, -1}), k = p.parameter("k", {2, 16, 2, 8}, {-1, -1, -1, -1}),
       v = p.parameter("v", {2, 16, 2, 8}, {-1, -1, -1, -1});
  auto out = p.tensor("out", {2, 16, 2, 8}), probs = p.tensor("probs", {2, 2, 16, 16}), lse = p.tensor("lse", {2, 2, 16});
  auto seed = p.tensor("seed", {2}, model::int64);
  p.op<"flash_attention">({q, k, v}, {out, probs, lse, seed}, {.causal = true});
  return model::training_step(p, out);
}
constexpr auto c = model::cost(make_step(), model::verified<make_step>(), small::fabric);
}  // namespace causal
static_assert(causal::c.flops(phase::forward) == 32768 / 2 && causal::c.flops(phase::backward) == 2 * 32768 / 2);
static_assert(causal::c.model_flops() == 3 * 32768);
// Counted once, timed on another cluster: the same as costed there.
static_assert(small::c.on(model::h100_cluster(process_mesh({2, 4}))).step_seconds() ==
              model::cost(small::step, small::r, model::h100_cluster(process_mesh({2, 4}))).step_seconds());
static_assert(small::c.on(model::h100_cluster(process_mesh({2, 4}))).on(small::fabric).step_seconds() == small::c.step_seconds());
static_assert(causal::c.hardware_flops() == 3 * 32768 / 2 + causal::c.flops(phase::optimizer));
static_assert(causal::c.mfu() == static_cast<double>(3 * 32768) / (causal::c.step_seconds() * 1e12));

// The weight's gradient (64 x 32 floats a device) all-reduced over dp: 2 (2-1)/2 of 8 KiB.
static_assert(small::c.collectives(phase::optimizer, collective::all_reduce, 0).count == 1 &&
              small::c.collectives(phase::optimizer, collective::all_reduce, 0).bytes == 64 * 32 * 4);
// Time: the all-reduce takes latency + bytes / bandwidth; compute hardware FLOPs at half of peak.
static_assert(small::c.communication_seconds() == 1e-5 + 64 * 32 * 4 / 1e9);
static_assert(small::c.compute_seconds() == static_cast<double>(small::c.hardware_flops()) / 0.5e12);
static_assert(small::c.step_seconds() == small::c.compute_seconds() + small::c.communication_seconds());
static_assert(small::c.overlapped_step_seconds() == small::c.communication_seconds());  // communication dominates
static_assert(small::c.mfu() == static_cast<double>(small::c.model_flops()) / (small::c.step_seconds() * 1e12));
// The H100 default: mesh [dp 2, mp 4] fits a node: NVLink on both; [16, 8]: InfiniBand across nodes.
static_assert(model::h100_cluster(process_mesh({2, 4})).links[0].bandwidth == 450e9);
static_assert(model::h100_cluster(process_mesh({16, 8})).links[0].bandwidth == 50e9 &&
              model::h100_cluster(process_mesh({16, 8})).links[1].bandwidth == 450e9);
// Errors: a cluster without bandwidth on a mesh dim that sends, a peak of zero, an efficiency above 1.
static_assert(!constant_evaluates<[] { return model::cost(small::step, small::r, model::cluster{{}, 1e12}).mfu(); }>);
static_assert(!constant_evaluates<[] {
  return model::cost(small::step, small::r, model::cluster{{model::link{1e9, 0}, model::link{1e9, 0}}, 0}).mfu();
}>);
static_assert(!constant_evaluates<[] {
  return model::cost(small::step, small::r, model::cluster{{model::link{1e9, 0}, model::link{1e9, 0}}, 1e12, 2}).mfu();
}>);
// verified_cost: the same report as `cost`, over as many constant expressions as the step needs
// (resuming the cost part by part is tested at run time, with parts of every size; here parts
// of a small budget force many constant expressions).
constexpr auto small_parts = model::verified_cost<small::make_step>(small::fabric);
static_assert(small_parts.flops(phase::backward) == small::c.flops(phase::backward) &&
              small_parts.memory().peak == small::c.memory().peak &&
              small_parts.step_seconds() == small::c.step_seconds());
constexpr std::size_t small_reshards = model::default_max_reshards(std::remove_cvref_t<decltype(small::step)>::max_ops);
static_assert(model::detail::cost_parts<small::make_step, model::propagate_options{}, small_reshards, 500> > 10);
constexpr auto small_many_parts =
    model::detail::finished_cost<small::make_step, model::propagate_options{}, small_reshards, 500>().result(small::fabric);
static_assert(small_many_parts.flops(phase::backward) == small::c.flops(phase::backward) &&
              small_many_parts.memory().peak == small::c.memory().peak &&
              small_many_parts.memory().peak_op == small::c.memory().peak_op &&
              small_many_parts.collectives(phase::optimizer, collective::all_reduce, 0).bytes ==
                  small::c.collectives(phase::optimizer, collective::all_reduce, 0).bytes &&
              small_many_parts.step_seconds() == small::c.step_seconds());
constexpr auto sel_parts = model::verified_cost<gpt::make_step<8, true, model::recompute::selective>>();
static_assert(sel_parts.memory().activations == sel_cost.memory().activations &&
              sel_parts.memory().peak == sel_cost.memory().peak &&
              sel_parts.memory().peak_op == sel_cost.memory().peak_op &&
              sel_parts.recompute_flops() == sel_cost.recompute_flops() &&
              sel_parts.collectives(phase::backward, collective::all_gather).bytes ==
                  sel_cost.collectives(phase::backward, collective::all_gather).bytes &&
              sel_parts.mfu() == sel_cost.mfu());
// Training options out of range.
static_assert(!constant_evaluates<[] {
  return model::training_step(zero::make_forward(), {2}, {.shard_optimizer_states_on = 0, .zero_stage = 4}).op_count();
}>);
static_assert(!constant_evaluates<[] { return model::training_step(zero::make_forward(), {2}, {.zero_stage = 2}).op_count(); }>);
static_assert(!constant_evaluates<[] {
  return model::training_step(zero::make_forward(), {2}, {.gradient_element_bytes = -4}).op_count();
}>);
