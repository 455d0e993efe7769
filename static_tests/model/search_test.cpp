// model::searched at compile time: Alpa's 6-layer MLP on a [2, 2] mesh with a slow (InfiniBand)
// and a fast (NVLink) mesh dim, nothing annotated. The search, spread over constant expressions,
// finds data parallelism on the slow dim and Megatron's column/row split on the fast one (the
// runtime test checks that this is the best of all 343 assignments), and says so in static_asserts.
#include <ctspmd/model/search.hpp>

using namespace ctspmd;
using model::collective;
using model::phase;

namespace {
constexpr process_mesh mesh({2, 2});
constexpr std::int64_t tokens = 16384, hidden = 4096;
using plan_type = model::plan<16, 8>;

constexpr plan_type mlp() {  // x is tensor 0, the body's weights 2 and 5, the output 7
  plan_type p(mesh);
  auto x = p.tensor("x", {tokens, hidden}, model::bfloat16);
  p.repeat(3, x, [&](plan_type& b, model::tensor_id h) {
    auto w1 = b.parameter("w1", {hidden, hidden}, model::bfloat16);
    auto y = b.tensor("y", {tokens, hidden}, model::bfloat16);
    b.op<"matmul">({h, w1}, {y});
    auto a = b.tensor("a", {tokens, hidden}, model::bfloat16);
    b.op<"relu">({y}, {a});
    auto w2 = b.parameter("w2", {hidden, hidden}, model::bfloat16);
    auto y2 = b.tensor("y2", {tokens, hidden}, model::bfloat16);
    b.op<"matmul">({a, w2}, {y2});
    auto a2 = b.tensor("a2", {tokens, hidden}, model::bfloat16);
    b.op<"relu">({y2}, {a2});
    return a2;
  });
  return p;
}
constexpr model::cluster slow_fast() {
  model::cluster c = model::h100_cluster(mesh);
  c.links[0] = model::infiniband_h100;
  return c;
}
constexpr auto problem() { return model::search_problem<plan_type>{mlp(), {7}, slow_fast(), {.keep = 1}}; }
constexpr auto found = model::searched<problem>();
constexpr const auto& best = found.best();

static_assert(best.layout({0}) == tensor_dist_attr(mesh, {0, -1}));  // the batch over the slow dim
static_assert(best.layout({2}) == tensor_dist_attr(mesh, {-1, 1}));  // column parallel over the fast dim
static_assert(best.layout({5}) == tensor_dist_attr(mesh, {1, -1}));  // row parallel
static_assert(best.cost.collectives(phase::forward, collective::all_reduce, 1).count == 3);
static_assert(best.cost.collectives(phase::backward, collective::all_reduce, 1).count == 2);
static_assert(best.cost.collectives(phase::optimizer, collective::all_reduce, 0).count == 6);
static_assert(best.step_seconds() < 0.006);
static_assert(found.plans.size() == 2 && found.plans[1].step_seconds() >= best.step_seconds());
static_assert(found.evaluations == 17 && found.infeasible == 0);
// DTensor's greedy per-operator choice: about twice the time.
static_assert(found.greedy_feasible && found.greedy.step_seconds() > 1.5 * best.step_seconds());
// The layouts applied: a plan annotated as found, which propagates as usual.
constexpr auto applied = model::apply(mlp(), best);
static_assert(applied.tensor_at(2).annotated && applied.tensor_at(2).annotation == tensor_dist_attr(mesh, {-1, 1}));
}  // namespace
