// Llama 3 405B's training step at its published configuration, verified at compile time, and
// its pipeline: 126 layers, hidden 16384, 128 query and 8 key/value heads of 128, SwiGLU 53248,
// vocabulary 128256, sequences of 8192, on 8,192 GPUs as a [pp 16, dp 64, tp 8] mesh: tensor
// parallelism 8 with sequence parallelism, 16 pipeline stages (the first and last one layer
// fewer: 7 + 14 x 8 + 7), data parallelism 64 (Llama 3 paper, "Scaling", table 4).
//
// The plan is one micro-batch: a sequence per dp rank. A step of 16M tokens (2,048 sequences)
// is 32 micro-batches a dp rank; under 1F1B stage r keeps min(16 - r, 32) micro-batches'
// activations. Megatron's mixed precision: bf16 parameters, fp32 gradients, fp32 master weights
// and moments sharded over dp (ZeRO-1, 6 + 12/64 bytes a parameter).
//
// Its long-context stage: sequences of 131,072 on [pp 16, dp 4, cp 16, tp 8], context
// parallelism 16 (each device a chunk of 8,192 positions; attention gathers keys and values over
// cp), the same 16M tokens a step: 128 sequences, 32 micro-batches a dp rank.
#include <cstdio>

#include <ctspmd/model/pipeline.hpp>

#include "llama_plan.hpp"

using namespace ctspmd;

struct llama3_405b {
  static constexpr std::int64_t hidden = 16384, heads = 128, kv_heads = 8, head_dim = 128, ffn = 53248;
  static constexpr std::int64_t vocab = 128256, seq = 8192, layers = 126;
  static constexpr std::int64_t pp = 16, dp = 64, mp = 8, batch = dp;  // a micro-batch: a sequence per dp rank
  static constexpr process_mesh mesh{{pp, dp, mp}};
  static constexpr std::int64_t dp_dim = 1, mp_dim = 2;
};

/// The long-context configuration: context parallelism over mesh dim 2.
struct llama3_405b_128k : llama3_405b {
  static constexpr std::int64_t seq = 131072;
  static constexpr std::int64_t dp = 4, cp = 16, batch = dp;
  static constexpr process_mesh mesh{{pp, dp, cp, mp}};
  static constexpr std::int64_t dp_dim = 1, cp_dim = 2, mp_dim = 3;
};

constexpr model::training_options megatron{.shard_optimizer_states_on = llama3_405b::dp_dim, .gradient_element_bytes = 4,
                                           .master_weights = true};
constexpr model::training_options megatron_recompute{.shard_optimizer_states_on = llama3_405b::dp_dim,
                                                     .gradient_element_bytes = 4, .master_weights = true,
                                                     .recompute = model::recompute::full};

// Under context parallelism, ZeRO shards over dp x cp (Megatron's distributed optimizer): one
// reduce-scatter of each gradient and one all-gather of each updated shard over the 64 devices.
constexpr model::training_options megatron_recompute_cp{.shard_optimizer_states_on = llama3_405b_128k::dp_dim,
                                                        .shard_optimizer_states_also_on = llama3_405b_128k::cp_dim,
                                                        .gradient_element_bytes = 4, .master_weights = true,
                                                        .recompute = model::recompute::full};

template <model::training_options Options, class M = llama3_405b>
constexpr auto make_step() {
  return llama::make_step<M::layers, llama::variant::sequence_parallel, Options, M>();
}

constexpr auto& step = model::plan_of<make_step<megatron>>;
constexpr auto verified_step = model::verified<make_step<megatron>>();
// Each layer: Megatron's sequence parallelism, 2 all-gathers and 2 reduce-scatters forward.
static_assert(verified_step.count_in_block(0, model::phase::forward, model::collective::all_gather) == 2 * llama3_405b::layers);
static_assert(verified_step.count_in_block(0, model::phase::forward, model::collective::reduce_scatter) == 2 * llama3_405b::layers);

constexpr model::pipeline_options pipeline_options{
    .mesh_dim = 0, .micro_batches = 32, .stage_layers = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7}};
constexpr auto pipe = model::pipeline(step, verified_step, pipeline_options);
// A stage boundary sends a device's part of the layer output, split along the sequence over tp:
// 8192 / 8 positions of 16384 bf16 values, 32 MiB.
static_assert(pipe.boundary_bytes() == llama3_405b::seq / llama3_405b::mp * llama3_405b::hidden * 2);
static_assert(pipe.bubble_fraction() == 15.0 / 32);

constexpr auto& step_recompute = model::plan_of<make_step<megatron_recompute>>;
constexpr auto pipe_recompute =
    model::pipeline(step_recompute, model::verified<make_step<megatron_recompute>>(), pipeline_options);
static_assert(pipe_recompute.peak_memory() < 80'000'000'000);  // fits an 80 GB H100

// 128K: each layer also gathers keys and values over cp (2 all-gathers more, forward).
constexpr auto& step_128k = model::plan_of<make_step<megatron_recompute_cp, llama3_405b_128k>>;
constexpr auto verified_128k = model::verified<make_step<megatron_recompute_cp, llama3_405b_128k>>();
static_assert(verified_128k.count_in_block(0, model::phase::forward, model::collective::all_gather) ==
              4 * llama3_405b::layers);
// The optimizer's collectives over dp or cp span both (mesh dims 1 and 2), none one alone (a
// norm's gradient, partial over tp too under sequence parallelism, is all-reduced over tp apart).
static_assert([] {
  for (std::size_t e = 0; e < verified_128k.reshard_entries(); ++e)
    if (const auto& s = verified_128k.reshard_at(e); s.phase == model::phase::optimizer &&
                                                     s.kind != model::collective::local_slice &&
                                                     (s.group & 0b0110) != 0 && s.group != 0b0110)
      return false;
  return verified_128k.count(model::phase::optimizer, model::collective::reduce_scatter) > 0;
}());
constexpr auto pipe_128k = model::pipeline(step_128k, verified_128k, pipeline_options);
// the boundary: a device's 8,192 / 8 positions (cp, then tp) of 16384 bf16 values
static_assert(pipe_128k.boundary_bytes() == llama3_405b_128k::seq / llama3_405b_128k::cp / llama3_405b::mp * llama3_405b::hidden * 2);
static_assert(pipe_128k.peak_memory() < 80'000'000'000);

namespace {
void print(const char* title, const model::pipeline_report& p) {
  constexpr double GiB = 1024.0 * 1024 * 1024;
  std::printf("-- %s\n", title);
  std::printf("%5s %6s %5s %7s %7s %7s %9s %9s %8s %9s %10s %12s %8s\n", "stage", "layers", "first", "params", "grads",
              "states", "act/micro", "in flight", "memory", "send MiB", "compute ms", "collective ms", "send ms");
  for (std::size_t s = 0; s < p.stages(); ++s) {
    const auto& t = p.stage(s);
    std::printf("%5zu %6lld %5lld %7.2f %7.2f %7.2f %9.2f %9.1f %8.2f %9.1f %10.1f %12.1f %8.2f\n", s,
                static_cast<long long>(t.layers), static_cast<long long>(t.first_layer),
                static_cast<double>(t.parameters) / GiB, static_cast<double>(t.gradients) / GiB,
                static_cast<double>(t.optimizer_states) / GiB, static_cast<double>(t.activations) / GiB, t.in_flight,
                static_cast<double>(t.memory) / GiB, static_cast<double>(t.send_bytes) / (1024.0 * 1024),
                t.compute_seconds * 1e3, t.communication_seconds * 1e3, t.send_seconds * 1e3);
  }
  std::printf("(GiB per device; sends and times per micro-batch, forward and backward)\n");
  std::printf("peak %.2f GiB on stage %zu; bubble %.1f%% of the ideal %.2f s; step %.2f s with %lld micro-batches\n\n",
              static_cast<double>(p.peak_memory()) / GiB, p.peak_stage(), p.bubble_fraction() * 100, p.ideal_seconds(),
              p.step_seconds(), static_cast<long long>(p.micro_batches()));
}
}  // namespace

int main() {
  std::printf("Llama 3 405B training step, 126 layers on [pp 16, dp 64, tp 8] (8,192 GPUs), 1F1B, 32 micro-batches\n\n");
  print("no recomputation", pipe);
  print("full recomputation", pipe_recompute);
  std::printf("Long context: sequences of 131,072 on [pp 16, dp 4, cp 16, tp 8], full recomputation\n\n");
  print("context parallelism 16", pipe_128k);
}
