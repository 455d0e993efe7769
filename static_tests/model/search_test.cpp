// model::searched at compile time: Alpa's 6-layer MLP on a [2, 2] mesh with a slow (InfiniBand)
// and a fast (NVLink) mesh dim, nothing annotated. The search, spread over constant expressions,
// finds data parallelism on the slow dim and Megatron's column/row split on the fast one (the
// runtime test checks that this is the best of all 343 assignments), and says so in static_asserts.
#include <ctspmd/model/search.hpp>

#include "../../examples/search/search_plans.hpp"

using namespace ctspmd;
using model::collective;
using model::phase;

namespace {
using search_plans::mlp;
using plan_type = search_plans::mlp_plan_type;
constexpr const process_mesh& mesh = search_plans::mlp_mesh;
constexpr auto problem() { return model::search_problem<plan_type>{mlp(), search_plans::mlp_loss, search_plans::slow_fast(), {.keep = 1}}; }
constexpr auto found = model::searched<problem>();
constexpr const auto& best = found.best();

static_assert(best.layout({0}) == tensor_dist_attr(mesh, {0, -1}));  // the batch over the slow dim
static_assert(best.layout({2}) == tensor_dist_attr(mesh, {-1, 1}));  // column parallel over the fast dim
static_assert(best.layout({5}) == tensor_dist_attr(mesh, {1, -1}));  // row parallel
static_assert(best.cost.collectives(phase::forward, collective::all_reduce, 1).count == 3);
static_assert(best.cost.collectives(phase::backward, collective::all_reduce, 1).count == 2);
static_assert(best.cost.collectives(phase::optimizer, collective::all_reduce, 0).count == 6);
static_assert(best.step_seconds() > 0.0075 && best.step_seconds() < 0.008);
static_assert(found.plans.size() == 2 && found.plans[1].step_seconds() >= best.step_seconds());
static_assert(found.evaluations == 17 && found.infeasible == 0);  // 16 candidates and greedy's (data parallelism's among them)
// DTensor's greedy per-operator choice: about twice the time.
static_assert(found.greedy_feasible && found.greedy.step_seconds() > 1.5 * best.step_seconds());
// The layouts applied: a plan annotated as found, which propagates as usual.
constexpr auto applied = model::apply(mlp(), best);
static_assert(applied.tensor_at(2).annotated && applied.tensor_at(2).annotation == tensor_dist_attr(mesh, {-1, 1}));
}  // namespace
