// model::searched at compile time on a Llama-3-8B decoder layer (search_plans::llama(1)) on
// [dp 2, mp 8] H100s, nothing annotated, the search's default options: some 4,000 branches of the
// dynamic programming and 17 exact evaluations, within the compilers' default limits.
// runtime_tests/search_test.cpp runs the same search with model::search and checks the same
// answer: the batch over mp (NVLink) and Megatron's column/row split over dp, about half the
// greedy choice's step time.
#include <ctspmd/model/search.hpp>

#include "../../examples/search/search_plans.hpp"

using namespace ctspmd;

namespace {
constexpr const process_mesh& mesh = search_plans::llama_mesh;
constexpr auto problem() {
  return model::search_problem<search_plans::llama_plan_type>{search_plans::llama(1), search_plans::llama_loss,
                                                              model::h100_cluster(mesh), {}};
}
constexpr auto found = model::searched<problem>();
constexpr const auto& best = found.best();
constexpr auto input(std::string_view name) { return search_plans::input(model::detail::problem_value<problem>.plan, name); }

// Two candidates fail in the backward pass, which the dynamic programming does not run
// (matmul_grad refuses a tensor axis split over both mesh dims): exact evaluation drops them.
static_assert(found.evaluations == 18 && found.infeasible == 2);  // 16 candidates, greedy's, data parallelism's
static_assert(best.layout(search_plans::llama_x) == tensor_dist_attr(mesh, {1, -1, -1}));
static_assert(best.layout(input("wq")) == tensor_dist_attr(mesh, {-1, 0}));
static_assert(best.layout(input("w_up")) == tensor_dist_attr(mesh, {-1, 0}));
static_assert(best.layout(input("wo")) == tensor_dist_attr(mesh, {0, -1}));
static_assert(best.layout(input("w_down")) == tensor_dist_attr(mesh, {0, -1}));
static_assert(best.step_seconds() > 0.018 && best.step_seconds() < 0.019);
static_assert(found.greedy_feasible && found.greedy.step_seconds() > 1.8 * best.step_seconds());
}  // namespace
