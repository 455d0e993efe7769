// model::search at run time: Alpa's 6-layer MLP on a [2, 2] mesh with a slow and a fast mesh dim,
// checked against the exact cost of every assignment of layouts; the greedy choice strictly
// worse; a memory limit that makes the search shard the optimizer states; bad input.
#include <ctspmd/model/search.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "check_error.hpp"

using namespace ctspmd;
using ctspmd_test::check_error;

namespace {

constexpr process_mesh mesh({2, 2});  // mesh dim 0 across nodes (slow), 1 inside a node (fast)
using plan_type = model::plan<16, 8>;
constexpr std::int64_t tokens = 16384, hidden = 4096;

/// Six linear layers with relu, as three runs of a block of two (Alpa's MLP test); nothing
/// annotated: x is tensor 0, the body's weights tensors 2 and 5, the output 7.
constexpr plan_type mlp() {
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
constexpr model::tensor_id x{0}, w1{2}, w2{5}, loss{7};

model::cluster slow_fast() {
  model::cluster c = model::h100_cluster(mesh);
  c.links[0] = model::infiniband_h100;  // 50 GB/s
  c.links[1] = model::nvlink_h100;      // 450 GB/s
  return c;
}

/// Every layout of a rank-2 tensor on the mesh without co-shards.
const std::vector<dims_mapping> layouts{{-1, -1}, {0, -1}, {1, -1}, {-1, 0}, {-1, 1}, {0, 1}, {1, 0}};

/// The exact step time of the MLP with x, w1 and w2 laid out as given (what `search` ranks by).
double step_seconds(const dims_mapping& lx, const dims_mapping& l1, const dims_mapping& l2) {
  auto p = std::make_unique<plan_type>(mlp());
  p->annotate(x, tensor_dist_attr(mesh, lx));
  p->annotate(w1, tensor_dist_attr(mesh, l1));
  p->annotate(w2, tensor_dist_attr(mesh, l2));
  const auto step = std::make_unique<decltype(model::training_step(*p, loss))>(model::training_step(*p, loss));
  const auto r = std::make_unique<decltype(model::try_propagate(*step))>(model::try_propagate(*step));
  if (!r->ok()) return -1;
  return model::cost(*step, *r, slow_fast()).step_seconds();
}

}  // namespace

TEST_CASE("search: Alpa's MLP gets data parallelism on the slow mesh dim and tensor parallelism on the fast one") {
  const auto p = std::make_unique<plan_type>(mlp());
  const auto found = model::search(*p, loss, slow_fast());
  REQUIRE(found.ok());
  const auto& best = found.best();
  CHECK(best.layout(x) == tensor_dist_attr(mesh, {0, -1}));   // the batch over the slow dim
  CHECK(best.layout(w1) == tensor_dist_attr(mesh, {-1, 1}));  // column parallel over the fast dim
  CHECK(best.layout(w2) == tensor_dist_attr(mesh, {1, -1}));  // row parallel
  // Alpa's count: 5 all-reduces over the fast dim, 3 forward (after each row-parallel layer) and
  // 2 backward (before each column-parallel layer but the first: x has no gradient).
  using model::collective, model::phase;
  CHECK(best.cost.collectives(phase::forward, collective::all_reduce, 1).count == 3);
  CHECK(best.cost.collectives(phase::backward, collective::all_reduce, 1).count == 2);
  CHECK(best.cost.collectives(phase::forward, collective::all_reduce, 0).count == 0);
  CHECK(best.cost.collectives(phase::backward, collective::all_reduce, 0).count == 0);
  // The six weights' gradients are reduced over the slow (data-parallel) dim.
  CHECK(best.cost.collectives(phase::optimizer, collective::all_reduce, 0).count == 6);
  // Ranked by the exact cost, the others after.
  REQUIRE(found.plans.size() == 4);
  for (std::size_t i = 1; i < found.plans.size(); ++i)
    CHECK(found.plans[i - 1].step_seconds() <= found.plans[i].step_seconds());
  CHECK(found.evaluations == 17);  // 16 candidates and the greedy one, under one option set
}

TEST_CASE("search: its best is the best of every assignment of layouts (exhaustive enumeration)") {
  double best = 1e30;
  std::size_t feasible = 0;
  for (const auto& lx : layouts)
    for (const auto& l1 : layouts)
      for (const auto& l2 : layouts)
        if (const double s = step_seconds(lx, l1, l2); s >= 0) {
          ++feasible;
          best = s < best ? s : best;
        }
  CHECK(feasible == 225);  // the others fail to propagate (a block whose runs do not repeat, ...)
  const auto p = std::make_unique<plan_type>(mlp());
  const auto found = model::search(*p, loss, slow_fast());
  CHECK(found.best().step_seconds() == doctest::Approx(best).epsilon(1e-12));
  CHECK(step_seconds({0, -1}, {-1, 1}, {1, -1}) == doctest::Approx(best).epsilon(1e-12));
}

TEST_CASE("search: the greedy per-operator choice (DTensor's) is strictly worse here, and never better") {
  const auto p = std::make_unique<plan_type>(mlp());
  const auto found = model::search(*p, loss, slow_fast());
  REQUIRE(found.greedy_feasible);
  CHECK(found.greedy.greedy);
  // Greedy lays x out for the first operator alone (replicated on the fast dim costs it nothing
  // there) and pays for it in every layer: about twice the time.
  CHECK(found.greedy.step_seconds() > 1.5 * found.best().step_seconds());
  CHECK(found.greedy.layout(x) != tensor_dist_attr(mesh, {0, -1}));
  // A search with one candidate still evaluates greedy's: never worse than it.
  const auto narrow = model::search(*p, loss, slow_fast(), {.candidates = 1, .keep = 0});
  CHECK(narrow.best().step_seconds() <= narrow.greedy.step_seconds());
}

TEST_CASE("search: a memory limit the best plan exceeds makes the search shard the optimizer states (ZeRO)") {
  const auto p = std::make_unique<plan_type>(mlp());
  model::search_options o{.training = {.gradient_element_bytes = 4, .master_weights = true}, .zero_dim = 0};
  const auto free = model::search(*p, loss, slow_fast(), o);
  const auto& unlimited = free.best();
  CHECK(unlimited.training.stage() == 0);  // ZeRO costs time: not chosen without a limit
  // 60% of it: a ZeRO stage fits, faster than any layout found that fits without it.
  o.memory_limit = unlimited.cost.memory().peak * 6 / 10;
  const auto limited = model::search(*p, loss, slow_fast(), o);
  REQUIRE(limited.ok());
  CHECK(limited.best().cost.memory().peak <= o.memory_limit);
  CHECK(limited.best().training.stage() >= 1);
  CHECK(limited.best().training.shard_optimizer_states_on == 0);
  CHECK(limited.best().step_seconds() > unlimited.step_seconds());  // what fitting costs
  CHECK(limited.infeasible > 0);
  CHECK(limited.evaluations == 17 * 4);  // 17 candidates x (no ZeRO, stages 1, 2, 3)
  auto without_zero = o;
  without_zero.zero_dim = -1;
  const auto plain = model::search(*p, loss, slow_fast(), without_zero);
  CHECK((!plain.ok() || plain.best().step_seconds() > limited.best().step_seconds()));
  // A limit nothing meets: no plan, and best() says why.
  o.memory_limit = 1;
  const auto none = model::search(*p, loss, slow_fast(), o);
  CHECK(!none.ok());
  check_error([&] { (void)none.best(); }, error_kind::not_found, "exceeded the memory limit");
}

TEST_CASE("search: bad input is an spmd_error naming it") {
  const auto p = std::make_unique<plan_type>(mlp());
  check_error([&] { model::search(*p, loss, slow_fast(), {.candidates = 0}); }, error_kind::invalid_argument,
              "candidates is 0");
  check_error([&] { model::search(*p, loss, slow_fast(), {.max_states = 1000}); }, error_kind::invalid_argument,
              "max_states is 1000");
  check_error([&] { model::search(*p, loss, slow_fast(), {.keep = 16}); }, error_kind::invalid_argument, "keep is 16");
  model::cluster no_flops = slow_fast();
  no_flops.peak_flops = 0;
  check_error([&] { model::search(*p, loss, no_flops); }, error_kind::invalid_argument, "peak FLOP/s");
  model::cluster no_links{};
  no_links.peak_flops = 1e15;
  check_error([&] { model::search(*p, loss, no_links); }, error_kind::invalid_argument, "has no bandwidth");
  // A size unknown until run time.
  auto q = std::make_unique<plan_type>(mesh);
  auto a = q->tensor("a", {-1, 8});
  auto b = q->tensor("b", {-1, 8});
  q->op<"relu">({a}, {b});
  check_error([&] { model::search(*q, b, slow_fast()); }, error_kind::invalid_argument, "unknown until run time");
  // Annotating: only an unannotated plan input, on the plan's mesh.
  check_error([&] { p->annotate({1}, tensor_dist_attr(mesh, {0, -1})); }, error_kind::invalid_argument,
              "cannot be annotated");
  check_error([&] { p->annotate(x, tensor_dist_attr(process_mesh({4}), {0, -1})); }, error_kind::invalid_argument,
              "another process mesh");
  const auto found = model::search(*p, loss, slow_fast());
  check_error([&] { (void)found.best().layout({3}); }, error_kind::not_found, "tensor 3 is not a plan input");
  // apply() annotates exactly the chosen layouts: the plan then propagates to the same cost.
  const auto applied = std::make_unique<plan_type>(model::apply(*p, found.best()));
  CHECK(applied->tensor_at(x.index).annotated);
  CHECK(step_seconds(applied->tensor_at(x.index).annotation.dims_mapping(), applied->tensor_at(w1.index).annotation.dims_mapping(),
                     applied->tensor_at(w2.index).annotation.dims_mapping()) ==
        doctest::Approx(found.best().step_seconds()).epsilon(1e-12));
}
