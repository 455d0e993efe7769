// model::search at run time: Alpa's 6-layer MLP on a [2, 2] mesh with a slow and a fast mesh dim,
// checked against the exact cost of every assignment of layouts; the greedy choice strictly
// worse; memory limits that make the search shard the optimizer states; Megatron's split found
// in unannotated Llama-3-8B and BERT-style layers, expert parallelism in Mixtral-8x7B; bad input.
#include <ctspmd/model/search.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <string_view>
#include <vector>

#include "../examples/mixtral/mixtral_plan.hpp"
#include "../examples/search/search_plans.hpp"
#include "check_error.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace search_test {

using namespace ctspmd;
using ctspmd_test::check_error;

using search_plans::mlp;
using search_plans::slow_fast;
using plan_type = search_plans::mlp_plan_type;
constexpr const process_mesh& mesh = search_plans::mlp_mesh;
constexpr model::tensor_id x = search_plans::mlp_x, w1 = search_plans::mlp_w1, w2 = search_plans::mlp_w2,
                           loss = search_plans::mlp_loss;

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
  for (std::size_t i = 0; i < found.plans.size(); ++i) {
    const auto& q = found.plans[i];  // each figure is its layouts' exact cost, built apart
    CHECK(q.step_seconds() == doctest::Approx(step_seconds(q.layout(x).dims_mapping(), q.layout(w1).dims_mapping(),
                                                           q.layout(w2).dims_mapping()))
                                  .epsilon(1e-12));
    if (i > 0) CHECK(found.plans[i - 1].step_seconds() <= q.step_seconds());
  }
  // 16 candidates, the greedy one and data parallelism, under one option set; then exact moves
  // from the two best (each other layout of x, w1 and w2, 6 each, a pass or more): none improves
  // the best, the optimum (the next test).
  CHECK(found.evaluations >= 18 + 2 * 3 * 6);
  CHECK(found.improvements.empty());
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
  const auto narrow = model::search(*p, loss, slow_fast(), {.candidates = 1, .keep = 1, .improve = false});
  CHECK(narrow.evaluations == 3);  // and data parallelism's
  CHECK(narrow.greedy_feasible);
  CHECK(narrow.best().step_seconds() <= narrow.greedy.step_seconds());
  // Improved by exact moves, one candidate reaches the optimum of them all.
  const auto moved = model::search(*p, loss, slow_fast(), {.candidates = 1, .keep = 1});
  CHECK(moved.best().step_seconds() == doctest::Approx(found.best().step_seconds()).epsilon(1e-12));
}

TEST_CASE("search: a memory limit the best plan exceeds makes the search shard the optimizer states (ZeRO)") {
  const auto p = std::make_unique<plan_type>(mlp());
  model::search_options o{.training = {.gradient_element_bytes = 4, .master_weights = true}, .zero_dim = 0};
  auto without_zero = o;
  without_zero.zero_dim = -1;
  const auto plain_free = model::search(*p, loss, slow_fast(), without_zero);
  const auto free = model::search(*p, loss, slow_fast(), o);
  const auto& unlimited = free.best();
  CHECK(plain_free.best().training.stage() == 0);
  // With ZeRO tried, never slower; here faster: ZeRO-1 sends the same bytes (a reduce-scatter and
  // an all-gather for an all-reduce) and the optimizer, bound by memory bandwidth, updates a shard.
  CHECK(unlimited.training.stage() == 1);
  CHECK(unlimited.step_seconds() < plain_free.best().step_seconds());
  // 75% of the plan without ZeRO: a ZeRO stage fits, and no layout found fits without it.
  o.memory_limit = plain_free.best().cost.memory().peak * 3 / 4;
  const auto limited = model::search(*p, loss, slow_fast(), o);
  REQUIRE(limited.ok());
  CHECK(limited.best().cost.memory().peak <= o.memory_limit);
  CHECK(limited.best().training.stage() >= 1);
  CHECK(limited.best().training.shard_optimizer_states_on == 0);
  CHECK(limited.best().step_seconds() >= unlimited.step_seconds());  // what fitting costs
  CHECK(limited.infeasible > 0);
  CHECK(limited.evaluations >= 17 * 4);  // 17 candidates x (no ZeRO, stages 1, 2, 3), then moves
  without_zero.memory_limit = o.memory_limit;
  const auto plain = model::search(*p, loss, slow_fast(), without_zero);
  if (plain.ok()) CHECK(plain.best().step_seconds() >= limited.best().step_seconds());  // ZeRO tried: never slower
  // A limit nothing meets: no plan, and best() says why.
  o.memory_limit = 1;
  const auto none = model::search(*p, loss, slow_fast(), o);
  CHECK(!none.ok());
  check_error([&] { (void)none.best(); }, error_kind::not_found, "exceeded the memory limit");
}

using big_plan = search_plans::llama_plan_type;
constexpr const process_mesh& dp_mp = search_plans::llama_mesh;
/// Llama-3-8B's decoder layers (search_plans.hpp), on the heap.
struct llama_layer {
  std::unique_ptr<big_plan> p;
  model::tensor_id x = search_plans::llama_x, out = search_plans::llama_loss;
  explicit llama_layer(std::size_t layers) : p(std::make_unique<big_plan>(search_plans::llama(layers))) {}
  model::tensor_id param(std::string_view name) const { return search_plans::input(*p, name); }
};

TEST_CASE("search: unannotated Llama-3-8B layers: exact moves improve on the estimate's best, no slower than Megatron by hand") {
  constexpr std::size_t layers = 4;
  const llama_layer m(layers);
  const auto c = model::h100_cluster(dp_mp);  // mesh dim 0 across nodes (InfiniBand), 1 inside (NVLink)
  model::search_options o{.training = {.gradient_element_bytes = 4, .master_weights = true}, .improve = false};
  const auto tier2 = model::search(*m.p, m.out, c, o);
  CHECK(tier2.best().step_seconds() < tier2.greedy.step_seconds());
  CHECK(tier2.improvements.empty());
  // Improved by exact moves (the default), each move lowering the exact step time.
  o.improve = true;
  const auto found = model::search(*m.p, m.out, c, o);
  const auto& best = found.best();
  REQUIRE(!found.improvements.empty());
  CHECK(best.step_seconds() < tier2.best().step_seconds());
  CHECK(found.improvements[found.improvements.size() - 1].after == best.step_seconds());
  for (const auto& move : found.improvements) CHECK(move.after < move.before);
  // Written by hand as Megatron does (the batch over dp, tensor parallel over mp), or with the
  // dims swapped as found, and costed exactly: the search is no slower than either.
  for (const std::int64_t tp : {1, 0}) {
    auto hand = std::make_unique<big_plan>(*m.p);
    hand->annotate(m.x, tensor_dist_attr(dp_mp, {1 - tp, -1, -1}));
    for (auto name : {"wq", "wk", "wv", "w_gate", "w_up"}) hand->annotate(m.param(name), tensor_dist_attr(dp_mp, {-1, tp}));
    for (auto name : {"wo", "w_down"}) hand->annotate(m.param(name), tensor_dist_attr(dp_mp, {tp, -1}));
    const auto written = model::search(*hand, m.out, c, o);
    CHECK_MESSAGE(best.step_seconds() <= written.best().step_seconds(), tp);
  }
}

TEST_CASE("search: one Llama-3-8B layer, as static_tests/model/search_llama_test.cpp finds it at compile time") {
  const llama_layer m(1);
  // (`searched` does not improve by exact moves: compared without them)
  const auto found = model::search(*m.p, m.out, model::h100_cluster(dp_mp), {.improve = false});
  const auto& best = found.best();
  CHECK(found.evaluations == 17);  // 16 candidates and greedy's (data parallelism's among them)
  CHECK(found.infeasible == 0);
  CHECK(best.layout(m.x) == tensor_dist_attr(dp_mp, {1, -1, -1}));  // the batch over mp (NVLink)
  // The attention's weights whole (its work repeated on both dp ranks: nothing of it crosses the
  // nodes), the MLP column then row parallel over dp.
  for (auto name : {"wq", "wk", "wv", "wo"}) CHECK_MESSAGE(best.layout(m.param(name)) == tensor_dist_attr(dp_mp, {-1, -1}), name);
  for (auto name : {"w_gate", "w_up"}) CHECK_MESSAGE(best.layout(m.param(name)) == tensor_dist_attr(dp_mp, {-1, 0}), name);
  CHECK(best.layout(m.param("w_down")) == tensor_dist_attr(dp_mp, {0, -1}));
  CHECK(best.step_seconds() > 0.0178);
  CHECK(best.step_seconds() < 0.0180);
  CHECK(found.greedy.step_seconds() > 1.8 * best.step_seconds());
}

TEST_CASE("search: under a memory limit tensor parallelism alone cannot meet, the Llama-3-8B step takes ZeRO or recomputation") {
  constexpr std::size_t layers = 32;
  const llama_layer m(layers);
  const auto c = model::h100_cluster(dp_mp);
  // (Without exact moves: they would split the weights over the batch's dim too, which fits.)
  model::search_options o{.training = {.gradient_element_bytes = 4, .master_weights = true}, .improve = false};
  const auto tp = model::search(*m.p, m.out, c, o);  // layouts only: tensor parallelism as found
  CHECK(tp.best().cost.memory().peak > 40 * model::GiB);
  o.memory_limit = 40 * model::GiB;
  CHECK(!model::search(*m.p, m.out, c, o).ok());  // no layout found fits 40 GiB alone
  o.zero_dim = 0;
  o.try_recompute = true;
  const auto fit = model::search(*m.p, m.out, c, o);
  REQUIRE(fit.ok());
  const auto& best = fit.best();
  CHECK(best.cost.memory().peak <= o.memory_limit);
  CHECK((best.training.stage() > 0 || best.training.recompute != model::recompute::none));
  CHECK(best.step_seconds() > tp.best().step_seconds());
  MESSAGE("40 GiB: ZeRO stage " << best.training.stage() << ", recompute " << static_cast<int>(best.training.recompute)
                                << ", peak " << static_cast<double>(best.cost.memory().peak) / static_cast<double>(model::GiB) << " GiB, step "
                                << best.step_seconds() << " s (unlimited " << tp.best().step_seconds() << " s)");
}

TEST_CASE("search: a BERT-style stack of L post-norm layers gets Megatron's split, 2 all-reduces a layer each way") {
  // Alpa counts 4L - 1 all-reduces (the first layer's input needs no gradient); a derived
  // training step runs a repeated block's backward as one block, so the first run's input
  // gradient is reduced too: 2L forward and 2L backward.
  constexpr std::int64_t b = 16, s = 1024, h = 4096, heads = 32, d = 128, f = 16384;  // (with h = 1024 data
  // parallelism over the fast dim and replicated weights cost less: the search returns that)
  constexpr std::size_t layers = 4;
  const process_mesh m({2, 4});
  const tensor_shape act{b, s, h};
  const auto fp16 = model::float16;
  auto p = std::make_unique<big_plan>(m);
  auto input = p->tensor("x", act, fp16);
  auto out = p->repeat(layers, input, [&](big_plan& l, model::tensor_id in) {
    auto w_qkv = l.parameter("w_qkv", {h, 3 * h}, fp16);
    auto qkv = l.tensor("qkv", {b, s, 3 * h}, fp16);
    l.op<"matmul">({in, w_qkv}, {qkv});
    // Megatron's fused layout: per head its q, k and v side by side, split after the heads.
    auto qkv4 = l.tensor("qkv.heads", {b, s, heads, 3 * d}, fp16);
    l.op<"reshape">({qkv}, {qkv4}, {.shape = {b, s, heads, 3 * d}});
    auto q4 = l.tensor("q", {b, s, heads, d}, fp16), k4 = l.tensor("k", {b, s, heads, d}, fp16),
         v4 = l.tensor("v", {b, s, heads, d}, fp16);
    l.op<"split">({qkv4}, {q4, k4, v4}, {.num = 3, .axis = 3});
    auto ctx = l.tensor("ctx", {b, s, heads, d}, fp16), probs = l.tensor("probs", {b, heads, s, s}, fp16);
    auto lse = l.tensor("lse", {b, heads, s}), seed = l.tensor("seed", {2}, model::int64);
    l.op<"flash_attention">({q4, k4, v4}, {ctx, probs, lse, seed});
    auto ctx_flat = l.tensor("ctx.flat", act, fp16);
    l.op<"reshape">({ctx}, {ctx_flat}, {.shape = {b, s, h}});
    auto wo = l.parameter("wo", {h, h}, fp16);
    auto o = l.tensor("attn.o", act, fp16), r1 = l.tensor("r1", act, fp16);
    l.op<"matmul">({ctx_flat, wo}, {o});
    l.op<"add">({in, o}, {r1});
    auto g1 = l.parameter("ln1.scale", {h}, fp16), b1 = l.parameter("ln1.bias", {h}, fp16);
    auto x1 = l.tensor("x1", act, fp16), mean1 = l.tensor("ln1.mean", {b, s}), var1 = l.tensor("ln1.var", {b, s});
    l.op<"layer_norm">({r1, g1, b1}, {x1, mean1, var1}, {.begin_norm_axis = 2});
    auto up_w = l.parameter("w1", {h, f}, fp16), down_w = l.parameter("w2", {f, h}, fp16);
    auto up = l.tensor("up", {b, s, f}, fp16), gelu = l.tensor("gelu", {b, s, f}, fp16);
    l.op<"matmul">({x1, up_w}, {up});
    l.op<"gelu">({up}, {gelu});
    auto dn = l.tensor("down", act, fp16), r2 = l.tensor("r2", act, fp16);
    l.op<"matmul">({gelu, down_w}, {dn});
    l.op<"add">({x1, dn}, {r2});
    auto g2 = l.parameter("ln2.scale", {h}, fp16), b2 = l.parameter("ln2.bias", {h}, fp16);
    auto x2 = l.tensor("x2", act, fp16), mean2 = l.tensor("ln2.mean", {b, s}), var2 = l.tensor("ln2.var", {b, s});
    l.op<"layer_norm">({r2, g2, b2}, {x2, mean2, var2}, {.begin_norm_axis = 2});
    return x2;
  });
  model::cluster c = model::h100_cluster(m);
  c.links[0] = model::h100_system.network_link;  // two nodes of four
  const auto found = model::search(*p, out, c);
  const auto& best = found.best();
  const auto param = [&](std::string_view name) {
    for (std::size_t t = 0; t < p->tensor_count(); ++t)
      if (p->tensor_at(t).name == name) return model::tensor_id{t};
    return model::tensor_id{0};
  };
  CHECK(best.layout(input) == tensor_dist_attr(m, {0, -1, -1}));
  CHECK(best.layout(param("w_qkv")) == tensor_dist_attr(m, {-1, 1}));
  CHECK(best.layout(param("wo")) == tensor_dist_attr(m, {1, -1}));
  CHECK(best.layout(param("w1")) == tensor_dist_attr(m, {-1, 1}));
  CHECK(best.layout(param("w2")) == tensor_dist_attr(m, {1, -1}));
  using model::collective, model::phase;
  CHECK(best.cost.collectives(phase::forward, collective::all_reduce, 1).count == 2 * layers);
  CHECK(best.cost.collectives(phase::backward, collective::all_reduce, 1).count == 2 * layers);
  CHECK(best.cost.collectives(phase::forward, collective::all_gather).count == 0);
}

TEST_CASE("search: Mixtral-8x7B gets expert parallelism over all-to-alls: the example's plan") {
  // The example's model (full recomputation) without the experts' layouts and with its two
  // reshard points (the assigns before and after the experts) unannotated: the search lays them
  // out.
  const auto f = std::make_unique<models::built_model<mixtral::plan_type>>(
      mixtral::make_model<mixtral::layers, mixtral::variant::unannotated>());
  const auto c = model::h100_cluster(mixtral::mesh);
  model::search_options o{.training = mixtral::zero1_recompute};
  const auto tensor = [&](std::string_view name) { return f->plan.tensor_named(name); };
  const tensor_dist_attr by_expert(mixtral::mesh, {1, -1, -1});  // expert e on ep rank e
  using model::collective, model::phase;
  // The experts' outputs go back to the devices of their tokens, whose rows are split over dp and
  // ep together: a co-shard, which the search considers when asked to.
  o.co_shard = true;
  const auto found = model::search(f->plan, f->loss, c, o);
  const auto& best = found.best();
  for (auto name : {"w1", "w3", "w2"}) CHECK_MESSAGE(best.layout(tensor(name)) == by_expert, name);
  CHECK(best.layout(tensor("to_experts")) == tensor_dist_attr(mixtral::mesh, {{1}, {0}, {}}));
  CHECK(best.layout(tensor("from_experts")) == tensor_dist_attr(mixtral::mesh, {{}, {0, 1}, {}}));
  CHECK(best.cost.collectives(phase::forward, collective::all_to_all).count == 2 * mixtral::layers);
  // Backward: the two mirrored, and the recomputed forward's two again (full recomputation).
  CHECK(best.cost.collectives(phase::backward, collective::all_to_all).count == 4 * mixtral::layers);
  CHECK(best.cost.collectives(phase::forward, collective::all_gather).count == 0);
  // The same step time as the example's hand-written plan.
  const auto hand = std::make_unique<models::built_model<mixtral::plan_type>>(mixtral::make_model<mixtral::layers>());
  const auto written = model::search(hand->plan, hand->loss, c, o);
  CHECK(best.step_seconds() == doctest::Approx(written.best().step_seconds()).epsilon(1e-12));
  // Without co-shards the return trip cannot be one all-to-all: slower.
  o.co_shard = false;
  const auto plain = model::search(f->plan, f->loss, c, o).best();
  CHECK(plain.step_seconds() > best.step_seconds());
  // Under an H100's 80 GiB (the example's plan takes 51.09 GiB) the memory bound prunes the
  // plans with the experts replicated (over 200 GiB each); what is found fits, but splits the
  // experts' hidden dim over dp instead, 3.5% slower than the example's plan: a gap of the
  // search's estimate, which ranks the two alike, left open.
  o.co_shard = true;
  o.memory_limit = 80 * model::GiB;
  const auto limited = model::search(f->plan, f->loss, c, o).best();
  CHECK(limited.cost.memory().peak <= o.memory_limit);
  CHECK(limited.step_seconds() <= written.best().step_seconds() * 1.05);
  MESSAGE("Mixtral: search " << best.step_seconds() << " s (without co-shards " << plain.step_seconds()
                             << " s; within 80 GiB " << limited.step_seconds() << " s, peak "
                             << static_cast<double>(limited.cost.memory().peak) / static_cast<double>(model::GiB)
                             << " GiB); hand-written " << written.best().step_seconds() << " s");
}

TEST_CASE("search: co-shards on a 4-D mesh meet hundreds of distinct layouts, within the search's table") {
  using small_plan = model::plan<16, 8>;
  const process_mesh m4({2, 2, 2, 2});
  auto p = std::make_unique<small_plan>(m4);
  const tensor_shape act{16, 64, 64};
  auto in = p->tensor("x", act, model::bfloat16);
  auto out = p->repeat(2, in, [&](small_plan& b, model::tensor_id h) {
    auto w = b.parameter("w", {64, 64}, model::bfloat16);
    auto y = b.tensor("y", act, model::bfloat16);
    b.op<"matmul">({h, w}, {y});
    auto a = b.tensor("a", act, model::bfloat16);
    b.op<"relu">({y}, {a});
    return a;
  });
  // x alone has 4^4 = 256 candidate layouts, each the block's entry in a run of its own.
  const auto found = model::search(*p, out, model::h100_cluster(m4), {.co_shard = true});
  REQUIRE(found.ok());
  if (found.greedy_feasible) CHECK(found.best().step_seconds() <= found.greedy.step_seconds());
}

TEST_CASE("search: its estimate counts each operator's FLOPs as the exact cost does (the rules' cost traits)") {
  // Embedding, slices, reshapes and a concat (no FLOPs: data movement and views), causal
  // attention (half the product's FLOPs), matmuls, gelu and a mean. With communication free, the
  // dynamic programming's estimate of the best plan is its forward FLOPs, backward counted as
  // twice forward, over the device's rate: the exact cost's forward FLOPs, x 3.
  const process_mesh m({2});
  auto p = std::make_unique<model::plan<48, 32>>(m);
  constexpr std::int64_t b = 4, s = 16, h = 32, heads = 2, d = 16, vocab = 64;
  auto ids = p->tensor("ids", {b, s}, model::int64);
  auto table = p->parameter("table", {vocab, h});
  auto embedded = p->tensor("x", {b, s, h});
  p->op<"embedding">({ids, table}, {embedded});
  auto w_qkv = p->parameter("w_qkv", {h, 3 * h});
  auto qkv = p->tensor("qkv", {b, s, 3 * h});
  p->op<"matmul">({embedded, w_qkv}, {qkv});
  model::tensor_id heads_of[3];
  for (std::int64_t i = 0; i < 3; ++i) {
    auto part = p->tensor("part", {b, s, h});
    p->op<"slice">({qkv}, {part}, {.axes = {2}, .starts = {i * h}, .ends = {(i + 1) * h}});
    heads_of[i] = p->tensor("part.heads", {b, s, heads, d});
    p->op<"reshape">({part}, {heads_of[i]}, {.shape = {b, s, heads, d}});
  }
  auto ctx = p->tensor("ctx", {b, s, heads, d});
  auto probs = p->tensor("probs", {b, heads, s, s});
  auto lse = p->tensor("lse", {b, heads, s});
  auto seed = p->tensor("seed", {2}, model::int64);
  p->op<"flash_attention">({heads_of[0], heads_of[1], heads_of[2]}, {ctx, probs, lse, seed}, {.causal = true});
  auto ctx_flat = p->tensor("ctx.flat", {b, s, h});
  p->op<"reshape">({ctx}, {ctx_flat}, {.shape = {b, s, h}});
  auto both = p->tensor("both", {b, s, 2 * h});
  p->op<"concat">({ctx_flat, embedded}, {both}, {.axis = 2});
  auto w_out = p->parameter("w_out", {2 * h, h});
  auto y = p->tensor("y", {b, s, h});
  p->op<"matmul">({both, w_out}, {y});
  auto g = p->tensor("g", {b, s, h});
  p->op<"gelu">({y}, {g});
  auto l = p->tensor("loss", tensor_shape{});
  p->op<"mean">({g}, {l});

  model::cluster free = model::h100_cluster(m);
  free.links[0] = {1e30, 0};  // communication takes no time
  free.memory_bandwidth = 0;  // nor memory traffic: FLOPs alone
  const auto found = model::search(*p, l, free);
  REQUIRE(found.ok());
  const auto& best = found.best();
  const double forward = static_cast<double>(best.cost.flops(model::phase::forward));
  CHECK(forward > 0);
  CHECK(best.estimate == doctest::Approx(3 * forward / (free.peak_flops * free.compute_efficiency)).epsilon(1e-9));
}

TEST_CASE("search: the layout search stops at its budget of work (max_work) with an error saying so") {
  const auto p = std::make_unique<plan_type>(mlp());
  const auto r = model::search(*p, loss, slow_fast());
  REQUIRE(r.ok());
  REQUIRE(r.work > 0);
  CHECK(r.work <= model::search_options{}.max_work);
  // The same search within a budget of exactly its work, and one unit short of it.
  const auto exact = model::search(*p, loss, slow_fast(), {.max_work = r.work});
  REQUIRE(exact.ok());
  CHECK(exact.work == r.work);
  CHECK(exact.best().layouts == r.best().layouts);
  check_error([&] { model::search(*p, loss, slow_fast(), {.max_work = r.work - 1}); }, error_kind::invalid_argument,
              "took more than max_work = ");
  // 0: no budget.
  CHECK(model::search(*p, loss, slow_fast(), {.max_work = 0}).work == r.work);
}

TEST_CASE("search: bad input is an spmd_error naming it") {
  const auto p = std::make_unique<plan_type>(mlp());
  check_error([&] { model::search(*p, loss, slow_fast(), {.candidates = 0}); }, error_kind::invalid_argument,
              "candidates is 0");
  check_error([&] { model::search(*p, loss, slow_fast(), {.max_states = 1000}); }, error_kind::invalid_argument,
              "max_states is 1000");
  check_error([&] { model::search(*p, loss, slow_fast(), {.keep = 16}); }, error_kind::invalid_argument, "keep is 16");
  check_error([&] { model::search(*p, loss, slow_fast(), {.zero_dim = 2}); }, error_kind::invalid_argument,
              "zero_dim is 2");
  // ZeRO over a product group in `training`, and zero_dim the second of its dims: the stages tried
  // over zero_dim alone drop the pair (before, a state "also on" its own dim raised mid-search).
  const auto paired = model::search(
      *p, loss, slow_fast(),
      {.training = {.shard_optimizer_states_on = 0, .shard_optimizer_states_also_on = 1}, .zero_dim = 1});
  REQUIRE(paired.ok());
  CHECK(paired.best().training.shard_optimizer_states_on >= 0);
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
  // No operators; an input no operator reads stays as declared.
  auto empty = std::make_unique<plan_type>(mesh);
  auto lone = empty->tensor("lone", {8, 8});
  check_error([&] { model::search(*empty, lone, slow_fast()); }, error_kind::invalid_argument, "no operators");
  auto unread = std::make_unique<plan_type>(mesh);
  auto u = unread->parameter("unread", {8, 8});
  auto in = unread->tensor("in", {8, 8});
  auto o = unread->tensor("out", {8, 8});
  unread->op<"relu">({in}, {o});
  const auto r = model::search(*unread, o, slow_fast());
  REQUIRE(r.ok());
  check_error([&] { (void)r.best().layout(u); }, error_kind::not_found, "not a plan input the search chose");
  CHECK(r.best().layouts.size() == 1);
  // Nested repeated blocks are refused (by the plan).
  auto nested = std::make_unique<plan_type>(mesh);
  auto n0 = nested->tensor("n0", {8, 8});
  check_error(
      [&] {
        auto out = nested->repeat(2, n0, [&](plan_type& outer, model::tensor_id h) {
          return outer.repeat(2, h, [&](plan_type& inner, model::tensor_id g) {
            auto y = inner.tensor("y", {8, 8});
            inner.op<"relu">({g}, {y});
            return y;
          });
        });
        model::search(*nested, out, slow_fast());
      },
      error_kind::invalid_argument, "nested repeated blocks");
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

}  // namespace search_test
