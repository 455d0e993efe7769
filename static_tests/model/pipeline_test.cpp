// Pipeline parallelism (<ctspmd/model/pipeline.hpp>): an 8-layer MLP stack with an embedding
// before it and a head after it, on a [pp 4, dp 2, tp 2] mesh, its layers split over the 4
// stages. Every figure is checked against its formula from the layer's sizes.
#include <ctspmd/model/pipeline.hpp>
#include <ctspmd/model/training.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd_test::constant_evaluates;
using model::pipeline_schedule;

namespace {

constexpr std::int64_t hidden = 256, ffn = 1024, vocab = 1000, seq = 128, batch = 2, layers = 8;
constexpr std::int64_t pp = 4, dp = 2, tp = 2;
constexpr process_mesh mesh({pp, dp, tp});
using plan_type = model::plan<40, 20>;

/// `sp`: the layers' output split along the sequence over tp (sequence parallelism); `on_pp`:
/// the batch split over the pipeline's mesh dim (an error).
template <bool sp = false, bool on_pp = false>
constexpr auto make_step() {
  plan_type p(mesh);
  using model::tensor_id;
  constexpr auto bf16 = model::bfloat16;
  const tensor_shape act{batch, seq, hidden};
  auto ids = p.tensor("ids", {batch, seq}, {on_pp ? 0 : 1, -1}, model::int64);
  auto wte = p.parameter("wte", {vocab, hidden}, {-1, -1}, bf16);
  auto x0 = p.tensor("x0", act, bf16);
  p.op<"embedding">({ids, wte}, {x0}, {}, "embed");
  auto out = p.repeat(layers, x0, [&](plan_type& b, tensor_id x) {
    auto in = b.tensor("in", act, {on_pp ? 0 : 1, -1, -1}, bf16);
    b.op<"assign">({x}, {in}, {}, "gather");
    auto w1 = b.parameter("w1", {hidden, ffn}, {-1, 2}, bf16);  // column parallel over tp
    auto h = b.tensor("h", {batch, seq, ffn}, bf16);
    b.op<"matmul">({in, w1}, {h}, {}, "up");
    auto a = b.tensor("a", {batch, seq, ffn}, bf16);
    b.op<"relu">({h}, {a}, {}, "act");
    auto w2 = b.parameter("w2", {ffn, hidden}, {2, -1}, bf16);  // row parallel over tp
    auto d = b.tensor("d", act, bf16);
    b.op<"matmul">({a, w2}, {d}, {}, "down");
    auto y = b.tensor("y", act, {on_pp ? 0 : 1, sp ? 2 : -1, -1}, bf16);
    b.op<"assign">({d}, {y}, {}, "reduce");
    return y;
  });
  auto wh = p.parameter("head", {hidden, vocab}, {-1, 2}, bf16);
  auto logits = p.tensor("logits", {batch, seq, vocab}, bf16);
  p.op<"matmul">({out, wh}, {logits}, {}, "head");
  return model::training_step(p, logits);
}
constexpr auto step = make_step();
constexpr auto r = model::propagate(step);
constexpr auto cost = model::cost(step, r);

// A layer's weights on a device: w1 and w2, half of each (tp), bf16.
constexpr std::int64_t layer_bytes = 2 * (hidden * ffn / tp) * 2;
constexpr std::int64_t embedding_bytes = vocab * hidden * 2, head_bytes = hidden * vocab / tp * 2;
// A stage boundary sends a device's part of the layer output: its batch row (dp), bf16.
constexpr std::int64_t boundary = batch / dp * seq * hidden * 2;

// ---- 1F1B, an even split, 8 micro-batches ----
constexpr auto f1b = model::pipeline(step, r, {.mesh_dim = 0, .micro_batches = 8});
static_assert(f1b.stages() == pp && f1b.micro_batches() == 8);
static_assert(f1b.stage(0).first_layer == 0 && f1b.stage(1).first_layer == 2 && f1b.stage(3).first_layer == 6);
static_assert(f1b.stage(0).layers == 2 && f1b.stage(3).layers == 2);
// the embedding on the first stage, the head on the last
static_assert(f1b.stage(1).parameters == 2 * layer_bytes && f1b.stage(2).parameters == 2 * layer_bytes);
static_assert(f1b.stage(0).parameters == 2 * layer_bytes + embedding_bytes);
static_assert(f1b.stage(3).parameters == 2 * layer_bytes + head_bytes);
// the stages hold the whole step's parameters, gradients and states between them
static_assert(f1b.stage(0).parameters + f1b.stage(1).parameters + f1b.stage(2).parameters + f1b.stage(3).parameters ==
              cost.memory().parameters);
static_assert(f1b.stage(0).optimizer_states + f1b.stage(1).optimizer_states + f1b.stage(2).optimizer_states +
                  f1b.stage(3).optimizer_states ==
              cost.memory().optimizer_states);
// activations: a layer's share of the block's, per micro-batch
static_assert(f1b.stage(1).activations == cost.kept_in_block(0) / layers * 2);
static_assert(f1b.stage(0).activations + f1b.stage(1).activations + f1b.stage(2).activations + f1b.stage(3).activations ==
              cost.memory().activations);
// stage r keeps min(p - r, m) micro-batches: 4, 3, 2, 1
static_assert(f1b.stage(0).in_flight == 4 && f1b.stage(1).in_flight == 3 && f1b.stage(3).in_flight == 1);
static_assert(f1b.stage(1).memory == f1b.stage(1).persistent() + 3 * f1b.stage(1).activations);
static_assert(f1b.peak_stage() == 0 && f1b.peak_memory() == f1b.stage(0).persistent() + 4 * f1b.stage(0).activations);
// sends: the first stage forward only, the last backward only, the others both
static_assert(f1b.boundary_bytes() == boundary);
static_assert(f1b.stage(0).sends == 1 && f1b.stage(1).sends == 2 && f1b.stage(3).sends == 1);
static_assert(f1b.stage(1).send_bytes == 2 * boundary);
// a stage's collectives by kind: its sends as send_recv; the layers' all-reduces (tp: a layer's
// output forward, its input's gradient backward), two layers a stage, the stages' adding up to
// the step's
using model::collective;
constexpr auto kind = [](std::size_t s, collective k) { return f1b.stage(s).collectives[static_cast<std::size_t>(k)]; };
static_assert(kind(1, collective::send_recv).count == 2 && kind(1, collective::send_recv).bytes == 2 * boundary &&
              kind(1, collective::send_recv).seconds == f1b.stage(1).send_seconds);
static_assert(kind(0, collective::send_recv).count == 1 && kind(3, collective::send_recv).bytes == boundary);
static_assert(kind(1, collective::all_reduce).count == 2 * 2 && kind(2, collective::all_reduce).count == 2 * 2);
static_assert(kind(1, collective::all_gather).count == 0 && kind(1, collective::reduce_scatter).count == 0);
constexpr auto all_stages = [](collective k) {
  model::collective_total t;
  for (std::size_t s = 0; s < pp; ++s) {
    t.count += kind(s, k).count;
    t.bytes += kind(s, k).bytes;
    t.seconds += kind(s, k).seconds;
  }
  return t;
};
constexpr auto step_all_reduces = [] {
  model::collective_total t;
  for (auto ph : {model::phase::forward, model::phase::backward}) {
    t.count += cost.collectives(ph, collective::all_reduce).count;
    t.bytes += cost.collectives(ph, collective::all_reduce).bytes;
  }
  return t;
}();
static_assert(all_stages(collective::all_reduce).count == step_all_reduces.count);
static_assert(all_stages(collective::all_reduce).bytes == step_all_reduces.bytes);
static_assert(constant_evaluates<[] {  // the kinds' times are the stage's communication time
  for (std::size_t s = 0; s < pp; ++s) {
    double sum = 0;
    for (std::size_t k = 0; k + 1 < model::collective_count; ++k) sum += f1b.stage(s).collectives[k].seconds;
    const double gap = sum - f1b.stage(s).communication_seconds;
    if (!(gap < 1e-18 && gap > -1e-18)) throw "the kinds' times are not the stage's";
  }
}>);
// FLOPs: the stages' add up to the step's; the last has the head's too
static_assert(f1b.stage(0).flops + f1b.stage(1).flops + f1b.stage(2).flops + f1b.stage(3).flops ==
              cost.flops(model::phase::forward) + cost.flops(model::phase::backward));
static_assert(f1b.stage(3).flops > f1b.stage(1).flops && f1b.stage(1).flops == f1b.stage(2).flops);
// the bubble: (p - 1) / m of the ideal time
static_assert(f1b.bubble_fraction() == 3.0 / 8);
constexpr double slowest = [] {
  double t = 0;
  for (std::size_t s = 0; s < pp; ++s) t = f1b.stage(s).micro_batch_seconds() > t ? f1b.stage(s).micro_batch_seconds() : t;
  return t;
}();
// (at these sizes a middle stage, which sends both ways, is the slowest)
static_assert(slowest == f1b.stage(1).micro_batch_seconds());
constexpr double gap = f1b.step_seconds() - f1b.ideal_seconds() - 3 * slowest;
static_assert(gap < 1e-15 && gap > -1e-15);

// ---- GPipe keeps every micro-batch ----
constexpr auto gpipe = model::pipeline(step, r, {.mesh_dim = 0, .micro_batches = 8, .schedule = pipeline_schedule::gpipe});
static_assert(gpipe.stage(0).in_flight == 8 && gpipe.stage(3).in_flight == 8 && gpipe.bubble_fraction() == 3.0 / 8);

// ---- interleaved, 2 chunks a stage: stage r holds chunks r and r + 4 of a layer each ----
constexpr auto inter = model::pipeline(step, r, {.mesh_dim = 0, .micro_batches = 8, .schedule = pipeline_schedule::interleaved, .chunks = 2});
static_assert(inter.bubble_fraction() == 3.0 / 16);
// Megatron's warm-up: 2(p - r - 1) + (v - 1)p chunk passes, then one more; half a micro-batch each
static_assert(inter.stage(0).in_flight == 4 * (1 + 3.0 / 8) && inter.stage(1).in_flight == 4.5 &&
              inter.stage(3).in_flight == 2.5);
// With as many micro-batches as stages, every stage runs at most its m·v passes first
constexpr auto inter_p = model::pipeline(step, r, {.mesh_dim = 0, .micro_batches = 4, .schedule = pipeline_schedule::interleaved, .chunks = 2});
static_assert(inter_p.stage(0).in_flight == 4 && inter_p.stage(1).in_flight == 4 && inter_p.stage(2).in_flight == 3.5);
static_assert(inter.stage(1).first_layer == 1 && inter.stage(1).layers == 2);
static_assert(inter.stage(0).sends == 3 && inter.stage(1).sends == 4 && inter.stage(3).sends == 3);
static_assert(inter.stage(1).collectives[static_cast<std::size_t>(model::collective::send_recv)].count == 4);

// ---- a stage map: the first and last stages one layer fewer (as Llama 3) ----
constexpr auto mapped = model::pipeline(step, r, {.mesh_dim = 0, .micro_batches = 4, .stage_layers = {1, 3, 3, 1}});
static_assert(mapped.stage(1).first_layer == 1 && mapped.stage(2).first_layer == 4 && mapped.stage(3).first_layer == 7);
static_assert(mapped.stage(0).parameters == layer_bytes + embedding_bytes && mapped.stage(1).parameters == 3 * layer_bytes);
static_assert(mapped.stage(0).in_flight == 4 && mapped.stage(1).in_flight == 3);

// ---- sequence parallelism: a t-th of the boundary ----
constexpr auto sp_step = make_step<true>();
constexpr auto sp = model::pipeline(sp_step, model::propagate(sp_step), {.mesh_dim = 0, .micro_batches = 8});
static_assert(sp.boundary_bytes() == boundary / tp);

// ---- what is not a pipeline ----
static_assert(!constant_evaluates<[] { return model::pipeline(step, r, {.mesh_dim = 3}).stages(); }>);
static_assert(!constant_evaluates<[] { return model::pipeline(step, r, {.mesh_dim = 0, .micro_batches = 0}).stages(); }>);
static_assert(!constant_evaluates<[] {  // 8 layers, 4 stages x 3 chunks
  return model::pipeline(step, r, {.mesh_dim = 0, .micro_batches = 8, .schedule = pipeline_schedule::interleaved, .chunks = 3})
      .stages();
}>);
static_assert(!constant_evaluates<[] { return model::pipeline(step, r, {.mesh_dim = 0, .chunks = 2}).stages(); }>);
static_assert(!constant_evaluates<[] {
  return model::pipeline(step, r, {.mesh_dim = 0, .micro_batches = 6, .schedule = pipeline_schedule::interleaved, .chunks = 2})
      .stages();
}>);
static_assert(!constant_evaluates<[] { return model::pipeline(step, r, {.mesh_dim = 0, .stage_layers = {2, 2, 2, 1}}).stages(); }>);
static_assert(!constant_evaluates<[] {
  constexpr auto s = make_step<false, true>();  // the batch split over the stages' mesh dim
  return model::pipeline(s, model::propagate(s), {.mesh_dim = 0}).stages();
}>);

}  // namespace

// Layers that do not divide into the stages: the rest to the middle stages, then the last, then
// the first.
namespace {
constexpr auto split_10_4 = model::detail::even_stage_layers(10, 4);
static_assert(split_10_4[0] == 2 && split_10_4[1] == 3 && split_10_4[2] == 3 && split_10_4[3] == 2 && split_10_4[4] == 0);
constexpr auto split_7_2 = model::detail::even_stage_layers(7, 2);
static_assert(split_7_2[0] == 3 && split_7_2[1] == 4);
constexpr auto split_11_4 = model::detail::even_stage_layers(11, 4);
static_assert(split_11_4[0] == 2 && split_11_4[1] == 3 && split_11_4[2] == 3 && split_11_4[3] == 3);
constexpr auto split_8_4 = model::detail::even_stage_layers(8, 4);
static_assert(split_8_4[0] == 2 && split_8_4[1] == 2 && split_8_4[2] == 2 && split_8_4[3] == 2);
}  // namespace
