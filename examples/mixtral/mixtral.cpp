// A Mixtral-8x7B mixture-of-experts layer's training step, verified at compile time, with
// expert parallelism: each ep rank holds one expert's weights, the batch is split over dp.
//
// The numbers, and where they come from (include/ctspmd/rules/moe.hpp):
// - A token's capacity slot depends on every earlier token that chose the same expert, so the
//   dispatch reads every token of the micro-batch and all router logits: forward, the tokens
//   and the logits are all-gathered over dp (2 all-gathers).
// - Each ep rank runs its expert on its slots (a local slice of the dispatched tokens, no
//   communication), and the combine gathers the experts' rows by index: 1 all-gather over ep.
//   So this plan sends no all-to-all: 0 per layer. (Systems that dispatch with all-to-alls give
//   each rank its own capacity; ctspmd's dispatch rule keeps capacity global, as its kernel
//   does.)
// - Backward: the combine's grad reads the experts' rows as the combine read them (gathered:
//   no second gather), the gradient of the experts' outputs sums each dp rank's tokens (1
//   all-reduce over dp), and the dispatch's grad reads the dispatched tokens' gradient whole
//   (1 all-gather over ep).
// - Optimizer: the RMSNorm and router weights' gradients are all-reduced over dp (2); the
//   experts see every token on every dp rank, so their gradients need no synchronisation.
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
static_assert(moe.expect_in_block(step, 0, phase::forward, collective::all_gather, 3 * L));
static_assert(moe.count_in_block(0, phase::backward, collective::all_gather) == L);
static_assert(moe.count_in_block(0, phase::backward, collective::all_reduce) == L);
static_assert(moe.count(phase::backward) - moe.count(phase::backward, collective::local_slice) == 2 * L);
static_assert(moe.expect_in_block(step, 0, phase::optimizer, collective::all_reduce, 2 * L));
// No all-to-all anywhere in the step.
static_assert(moe.count(phase::forward, collective::all_to_all) == 0 && moe.count(phase::backward, collective::all_to_all) == 0 &&
              moe.count(phase::optimizer, collective::all_to_all) == 0);
// Bytes: an all-gather over n devices sends (n - 1) x the local part. Forward: the tokens and
// the logits (each dp rank holds half) and the experts' rows (each ep rank its expert's
// capacity x hidden); backward: the dispatched tokens' gradient, as large as those rows.
constexpr std::int64_t rows_bytes = (mixtral::ep - 1) * mixtral::capacity * mixtral::hidden * 2;
constexpr std::int64_t token_bytes = (mixtral::dp - 1) * (mixtral::tokens / mixtral::dp) * mixtral::hidden * 2;
constexpr std::int64_t logit_bytes = (mixtral::dp - 1) * (mixtral::tokens / mixtral::dp) * mixtral::experts * 2;
static_assert(moe.bytes_in_block(0, phase::forward, collective::all_gather) == L * (token_bytes + logit_bytes + rows_bytes));
static_assert(moe.bytes_in_block(0, phase::backward, collective::all_gather) == L * rows_bytes);

// What the step costs each device, on H100 nodes (ep's 8 devices in a node, dp across).
constexpr auto moe_cost = model::cost(step, moe);
// Each ep rank holds one expert's three weights whole (bf16), its shard of nothing else but the
// replicated norm and router: the experts dominate.
constexpr std::int64_t expert_bytes = 3 * 2 * mixtral::hidden * mixtral::ffn;
static_assert(moe_cost.memory().parameters > L * expert_bytes && moe_cost.memory().parameters < L * expert_bytes * 11 / 10);
static_assert(moe_cost.memory().peak < 80'000'000'000);

int main() {
  std::printf("Mixtral-8x7B MoE layer training step, %zu layers, mesh [dp = %lld, ep = %lld], %lld tokens, capacity %lld\n\n",
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
}
