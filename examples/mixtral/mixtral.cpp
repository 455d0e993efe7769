// A Mixtral-8x7B training step, built by the model library and verified at compile time, with
// expert parallelism over all-to-alls: each ep rank holds one expert's weights, every device its
// own sequence of tokens.
//
// The numbers, and where they come from (include/ctspmd/rules/moe.hpp):
// - Each device dispatches its 4096 tokens into its own 1024 slots per expert: 8 x 1024 x 4096
//   bf16 values, 64 MiB, enter the dispatch's output on each device. No gather: the router's
//   logits and the tokens stay where they are.
// - Forward, an all-to-all over ep sends each expert its slots (each device keeps 1/8 and sends
//   7/8: 56 MiB), and another returns the experts' outputs (56 MiB): 2 all-to-alls a layer. The
//   attention, the embedding and the head, replicated, move nothing.
// - Backward mirrors them: the gradient of the experts' output goes to the experts, the
//   gradient of the dispatched tokens comes back: 2 all-to-alls, 56 MiB each.
// - Optimizer (ZeRO-1 over dp, and over ep for what every ep rank holds): an expert's gradient
//   sums the tokens of the devices that hold the expert, the dp ranks of its ep rank:
//   reduce-scattered over dp, the updated shards all-gathered, for each of w1, w3, w2; the two
//   RMSNorms', the attention's four projections' and the router's weights saw every device's
//   tokens: reduce-scattered over dp x ep in one collective each, and all-gathered back. A
//   layer: 10 reduce-scatters, 10 all-gathers, no all-reduce.
// - Memory: without recomputation the peak is 81.05 GiB, over an H100's 80; with full
//   recomputation (each layer keeps its input) 51.09 GiB.
// If the experts' first weight is split on the hidden dim instead of the expert dim, the step
// does not compile (static_tests/fail/mixtral_experts_by_hidden.cpp).
#include "mixtral_plan.hpp"

#include <cstdio>

#include "../cost_report.hpp"

using namespace ctspmd;
using model::collective;
using model::phase;

constexpr std::size_t L = mixtral::layers;

constexpr auto& step = model::plan_of<mixtral::make_step<L>>;
constexpr auto moe = model::verified<mixtral::make_step<L>>();
static_assert(moe.expect_in_block(step, 0, phase::forward, collective::all_to_all, 2 * L));
static_assert(moe.count(phase::forward) == 2 * L);  // nothing else moves forward
static_assert(moe.count_in_block(0, phase::backward, collective::all_to_all) == 2 * L);
static_assert(moe.count(phase::backward) - moe.count(phase::backward, collective::local_slice) == 2 * L);
static_assert(moe.count_in_block(0, phase::optimizer, collective::reduce_scatter) == 10 * L);
static_assert(moe.count_in_block(0, phase::optimizer, collective::all_gather) == 10 * L);
static_assert(moe.count_in_block(0, phase::optimizer, collective::all_reduce) == 0);
static_assert(moe.count(phase::forward, collective::all_gather) + moe.count(phase::backward, collective::all_gather) == 0);
// Bytes: 64 MiB of dispatched tokens on each device; an all-to-all over ep's 8 devices sends
// 7/8 of them.
constexpr std::int64_t MiB = 1 << 20;
constexpr std::int64_t dispatched_bytes = mixtral::experts * mixtral::slots_per_device * mixtral::hidden * 2;
static_assert(dispatched_bytes == 64 * MiB);
constexpr std::int64_t all_to_all_bytes = dispatched_bytes * (mixtral::ep - 1) / mixtral::ep;
static_assert(all_to_all_bytes == 56 * MiB);
static_assert(moe.bytes_in_block(0, phase::forward, collective::all_to_all) == 2 * L * all_to_all_bytes);
static_assert(moe.bytes_in_block(0, phase::backward, collective::all_to_all) == 2 * L * all_to_all_bytes);

// What the step costs each device, on H100 nodes (ep's 8 devices in a node, dp across).
constexpr auto moe_cost = model::cost(step, moe);
// Each ep rank holds one expert's three weights a layer (bf16), and everything else whole: the
// model's 46.7 billion parameters less 7/8 of the experts'.
constexpr std::int64_t expert_parameters = 3 * mixtral::hidden * mixtral::ffn;
static_assert(moe_cost.memory().parameters ==
              2 * (models::parameters(models::mixtral_8x7b) - L * (mixtral::experts - 1) * expert_parameters));
static_assert(moe_cost.memory().peak > 80 * model::GiB);  // does not fit an H100 ...
constexpr auto& recompute_step = model::plan_of<mixtral::make_step<L, mixtral::variant::expert_parallel, mixtral::zero1_recompute>>;
constexpr auto recompute_cost = model::cost(
    recompute_step, model::verified<mixtral::make_step<L, mixtral::variant::expert_parallel, mixtral::zero1_recompute>>());
static_assert(recompute_cost.memory().peak < 60 * model::GiB);  // ... with full recomputation it does

int main() {
  std::printf("Mixtral-8x7B training step, %zu layers, mesh [dp = %lld, ep = %lld], %lld tokens, capacity %lld\n\n",
              L, static_cast<long long>(mixtral::dp), static_cast<long long>(mixtral::ep),
              static_cast<long long>(mixtral::tokens), static_cast<long long>(mixtral::capacity));
  constexpr collective kinds[] = {collective::all_reduce, collective::reduce_scatter, collective::all_gather,
                                  collective::all_to_all};
  constexpr phase phases[] = {phase::forward, phase::backward, phase::optimizer};
  std::printf("%-10s %-15s %14s %18s\n", "phase", "collective", "in layers", "bytes/device");
  for (auto ph : phases)
    for (auto k : kinds)
      std::printf("%-10.*s %-15.*s %14zu %18lld\n", static_cast<int>(to_string(ph).size()), to_string(ph).data(),
                  static_cast<int>(to_string(k).size()), to_string(k).data(), moe.count_in_block(0, ph, k),
                  static_cast<long long>(moe.bytes_in_block(0, ph, k)));
  std::printf("\n");
  example::print_cost("expert parallelism, bf16 parameters and gradients, fp32 moments, on H100 nodes", step, moe_cost);
  example::print_cost("the same with full recomputation", recompute_step, recompute_cost);
}
