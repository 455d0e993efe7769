// model::searched at compile time on a Llama-3-8B decoder layer (search_plans::llama(1)) on
// [dp 2, mp 8] H100s, nothing annotated, the search's default options: some 4,000 branches of the
// dynamic programming and 17 exact evaluations, within the compilers' default limits.
// runtime_tests/search_test.cpp runs the same search with model::search and checks the same
// answer: the batch over mp (NVLink), the attention's weights whole and the MLP's column/row
// split over dp, about half the greedy choice's step time.
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

// Every candidate propagates (whole steps: the dynamic programming does not run the backward
// pass, exact evaluation does).
static_assert(found.evaluations == 17 && found.infeasible == 0);  // 16 candidates and greedy's (data parallelism's among them)
static_assert(best.layout(search_plans::llama_x) == tensor_dist_attr(mesh, {1, -1, -1}));
static_assert(best.layout(input("wq")) == tensor_dist_attr(mesh, {-1, -1}));
static_assert(best.layout(input("wo")) == tensor_dist_attr(mesh, {-1, -1}));
static_assert(best.layout(input("w_up")) == tensor_dist_attr(mesh, {-1, 0}));
static_assert(best.layout(input("w_down")) == tensor_dist_attr(mesh, {0, -1}));
static_assert(best.step_seconds() > 0.0178 && best.step_seconds() < 0.0180);
static_assert(found.greedy_feasible && found.greedy.step_seconds() > 1.8 * best.step_seconds());
}  // namespace
