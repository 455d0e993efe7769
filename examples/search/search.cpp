// Finding a plan: model::search lays out the unannotated inputs of a forward plan and chooses the
// step's options, ranked by the exact cost of each candidate's training step (README, "Tutorial
// 8"). This example searches Alpa's MLP on a slow and a fast mesh dim, and Llama-3-8B (the model
// library's, 32 layers, nothing annotated, not even the data) on [2, 8] H100s with and without a
// memory limit, prints what it finds, and Megatron's layouts written by hand, costed the same way.
#include <ctspmd/dist/format.hpp>
#include <ctspmd/model/search.hpp>
#include <ctspmd/models/llama.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "search_plans.hpp"

using namespace ctspmd;

namespace {

template <class Plan>
void print(const Plan& p, const model::searched_plan& found, const char* what) {
  using model::collective, model::phase;
  std::printf("  %s: %.4f s a step, peak %.2f GiB, ZeRO stage %lld, recompute %s\n", what, found.step_seconds(),
              static_cast<double>(found.cost.memory().peak) / static_cast<double>(model::GiB),
              static_cast<long long>(found.training.stage()),
              found.training.recompute == model::recompute::none        ? "none"
              : found.training.recompute == model::recompute::selective ? "selective"
                                                                        : "full");
  for (const auto& l : found.layouts)
    std::printf("    %-12s %s\n", std::string(p.tensor_at(l.tensor.index).name).c_str(), to_string(l.attr).c_str());
  for (auto ph : {phase::forward, phase::backward, phase::optimizer})
    for (auto k : {collective::all_reduce, collective::reduce_scatter, collective::all_gather, collective::all_to_all})
      if (const auto t = found.cost.collectives(ph, k); t.count > 0)
        std::printf("    %-9s %-14s %4zu, %9.3f ms\n", std::string(to_string(ph)).c_str(), std::string(to_string(k)).c_str(),
                    t.count, t.seconds * 1e3);
}

template <class Plan>
model::search_result timed_search(const Plan& p, model::tensor_id loss, const model::cluster& c,
                                  const model::search_options& o, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  auto found = model::search(p, loss, c, o);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::printf("%s: %zu states, %zu exact evaluations (%zu infeasible), %.3f s\n", what, found.states,
              found.evaluations, found.infeasible, took.count());
  return found;
}

}  // namespace

int main() {
  {
    const auto p = std::make_unique<search_plans::mlp_plan_type>(search_plans::mlp());
    const auto found = timed_search(*p, search_plans::mlp_loss, search_plans::slow_fast(), {}, "Alpa's MLP on [2, 2]");
    print(*p, found.best(), "best");
    if (found.greedy_feasible) print(*p, found.greedy, "greedy (per operator)");
  }
  {
    const process_mesh mesh({2, 8});
    const auto cluster = model::h100_cluster(mesh);  // mesh dim 1 inside a node, dim 0 across
    const auto built = [&](models::layout l, std::int64_t micro_batch) {
      return std::make_unique<models::built_model<models::llama_plan>>(
          models::llama(models::llama3_8b, mesh, l, {.seq = 8192, .micro_batch = micro_batch}));
    };
    const auto m = built({.annotated = false}, 8);  // 8 sequences a step, their split searched too
    model::search_options o{.training = {.gradient_element_bytes = 4, .master_weights = true}};
    const auto found = timed_search(m->plan, m->loss, cluster, o, "Llama-3-8B, 32 layers, [2, 8]");
    print(m->plan, found.best(), "best");
    for (const auto& [what, l] : {std::pair{"Megatron (data over dim 0, tp over dim 1)", models::layout{.dp = 0, .tp = 1}},
                                  std::pair{"Megatron with sequence parallelism", models::layout{.dp = 0, .tp = 1, .sp = true}}}) {
      const auto hand = built(l, 4);
      model::search_options exact = o;
      exact.improve = false;
      std::printf("  %s, written by hand: %.4f s a step\n", what,
                  model::search(hand->plan, hand->loss, cluster, exact).best().step_seconds());
    }
    o.memory_limit = 40 * model::GiB;
    o.zero_dim = 0;
    o.try_recompute = true;
    const auto fit = timed_search(m->plan, m->loss, cluster, o, "the same within 40 GiB");
    print(m->plan, fit.best(), "best");
  }
}
