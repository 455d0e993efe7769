// The step simulator (step_sim.hpp) on whole training steps: each must match one device, move
// exactly the bytes its report lists, and need every collective. Doctored reports (a reshard
// left out, wrong bytes, a layout that is not what the devices hold) must be caught.
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>
#include <memory>

#include <ctspmd/models/gpt.hpp>
#include <ctspmd/models/llama.hpp>
#include <ctspmd/models/mixtral.hpp>

#include <doctest/doctest.h>

#include "step_sim.hpp"

#ifdef CTSPMD_TEST_REQUESTS
#include <nlohmann/json.hpp>

#include "requests.hpp"
#endif

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_step_sim_test {

using namespace ctspmd;
namespace sim = ctspmd_oracle::step;

constexpr models::gpt_config tiny_gpt{.n_embd = 16, .n_layer = 2, .n_head = 4, .n_positions = 8, .vocab_size = 32};

using gpt_model = models::built_model<models::gpt_plan>;
std::unique_ptr<gpt_model> gpt(const process_mesh& mesh, const models::layout& l, bool flash = true) {
  return std::make_unique<gpt_model>(models::gpt(tiny_gpt, mesh, l, {.seq = 8, .micro_batch = 2, .flash_attention = flash}));
}

/// Calls f(step, propagation) for the training step of plan `p` with loss `loss` under `o`.
template <class Plan, class F>
void with_step(const Plan& p, model::tensor_id loss, const model::training_options& o, F f) {
  const auto step = std::make_unique<decltype(model::training_step(p, loss, o))>(model::training_step(p, loss, o));
  const auto r = runtime::propagate(*step);
  REQUIRE(r->ok());
  f(*step, *r);
}
template <class Model, class F>
void with_step(const Model& m, const model::training_options& o, F f) {
  with_step(m.plan, m.loss, o, f);
}

template <class Model>
sim::result simulate_model(const Model& m, const model::training_options& o = {}, const sim::options& so = {}) {
  sim::result res;
  with_step(m, o, [&](const auto& step, const auto& r) { res = sim::simulate(step, r, so); });
  return res;
}

/// Options of a pipeline over mesh dim 0 with 4 micro-batches, without the necessity check (the
/// tensor-parallel reshards are those of the cases without a pipeline).
sim::options pipelined(model::pipeline_schedule schedule = model::pipeline_schedule::one_f_one_b, std::int64_t chunks = 1) {
  sim::options so;
  so.pipeline.emplace();
  so.pipeline->mesh_dim = 0;
  so.pipeline->micro_batches = 4;
  so.pipeline->schedule = schedule;
  so.pipeline->chunks = chunks;
  so.necessity = false;
  return so;
}

void check_ok(const sim::result& res) {
  INFO(res.summary());
  CHECK(res.ok());
  CHECK(res.max_relative_error < 1e-9);
  CHECK(res.collectives > 0);
  CHECK(res.gradient_error >= 0);  // checked (an optimizer and a loss gradient)
  CHECK(res.gradient_error < 1e-6);
}

TEST_CASE("step simulator: GPT, Megatron tensor parallelism with and without sequence parallelism") {
  for (const bool sp : {false, true})
    for (const bool flash : {true, false}) {
      INFO("sp " << sp << " flash attention " << flash);
      check_ok(simulate_model(*gpt(process_mesh({2, 2}), {.dp = 0, .tp = 1, .sp = sp}, flash)));
    }
}

TEST_CASE("step simulator: ZeRO stages 1 to 3, mixed precision, recomputation") {
  const auto m = gpt(process_mesh({2, 2}), {.dp = 0, .tp = 1, .sp = true});
  // (Recomputation changes what a step keeps, not what it computes: one mode a stage.)
  const std::pair<std::int64_t, model::recompute> cases[] = {
      {1, model::recompute::none}, {2, model::recompute::selective}, {3, model::recompute::full}};
  for (const auto& c : cases) {  // (not a structured binding: INFO captures it, which Clang 14 cannot)
    const auto stage = c.first;
    const auto rc = c.second;
    model::training_options o;
    o.shard_optimizer_states_on = 0;
    o.zero_stage = stage;
    o.master_weights = stage == 2;
    o.gradient_element_bytes = 4;
    o.recompute = rc;
    INFO("ZeRO " << stage << " recompute " << static_cast<int>(rc));
    check_ok(simulate_model(*m, o));
  }
}

TEST_CASE("step simulator: gradients accumulated over micro-batches, reduced once (ZeRO 2)") {
  model::training_options o;
  o.shard_optimizer_states_on = 0;
  o.zero_stage = 2;
  sim::options so;
  so.micro_batches = 4;
  so.necessity = false;  // (the same reshards as the ZeRO 2 case above, where each is checked)
  check_ok(simulate_model(*gpt(process_mesh({2, 2}), {.dp = 0, .tp = 1, .sp = true}), o, so));
}

TEST_CASE("step simulator: an input a grad operator reads for its shape alone moves nothing") {
  // h split on dim 0, s = sum(h) over dim 0 (partial, all-reduced for the add). sum_grad reads
  // h for its shape alone, beside s's replicated gradient: nothing moves for it (an all-gather
  // was listed, whose removal changed nothing), and the step matches (the simulator gives such
  // operands NaNs).
  const process_mesh mesh({2});
  auto p = std::make_unique<model::plan<16, 8>>(mesh, semantics::phi);
  const auto x = p->tensor("x", {8, 8, 16}, {0, -1, -1});
  const auto h = p->tensor("h", {8, 8, 16}), s = p->tensor("s", {1, 8, 16}), o = p->tensor("o", {8, 8, 16});
  const auto loss = p->tensor("loss", {8, 8, 16});
  p->op<"multiply">({x, p->parameter("g", {16})}, {h});
  p->op<"sum">({h}, {s}, {.axis = {0}, .keep_dim = true});
  p->op<"add">({h, s}, {o});
  p->op<"multiply">({o, p->parameter("head", {16})}, {loss});
  with_step(*p, loss, {}, [](const auto& step, const auto& r) {
    for (std::size_t e = 0; e < r.reshard_entries(); ++e) {
      const auto& x_ = r.reshard_at(e);
      INFO("reshard read by " << step.op_at(x_.op).rule << " operand " << x_.operand);
      CHECK(((step.op_at(x_.op).shape_only >> x_.operand) & 1) == 0);
    }
    check_ok(sim::simulate(step, r));
  });
}

TEST_CASE("step simulator: dropout and fused_dropout_add, sharded over both mesh dims") {
  // h = x w, column-parallel over mesh dim 1, x split over mesh dim 0; d = dropout(h); y =
  // dropout(d) + x. Each kernel draws its mask by global element, the grads draw it again (or
  // read it), so the sharded step matches one device's and its gradients its loss's.
  for (const std::string_view mode : {"upscale_in_train", "downscale_in_infer"}) {
    INFO(mode);
    auto p = std::make_unique<model::plan<16, 8>>(process_mesh({2, 2}), semantics::phi);
    const auto x = p->tensor("x", {8, 16}, {0, -1});
    const auto h = p->tensor("h", {8, 16}), d = p->tensor("d", {8, 16}), mask = p->tensor("mask", {8, 16});
    const auto y = p->tensor("y", {8, 16}), seed_offset = p->tensor("seed_offset", {2}), loss = p->tensor("loss", {8, 16});
    p->op<"matmul">({x, p->parameter("w", {16, 16}, {-1, 1})}, {h});
    p->op<"dropout">({h}, {d, mask}, {.p = 0.3, .mode = mode, .seed = 7});
    p->op<"fused_dropout_add">({d, x}, {y, seed_offset}, {.p = 0.5, .mode = mode, .seed = 11});
    p->op<"multiply">({y, p->parameter("g", {16})}, {loss});
    with_step(*p, loss, {}, [](const auto& step, const auto& r) { check_ok(sim::simulate(step, r)); });
  }
}

TEST_CASE("step simulator: 1F1B and GPipe pipelines of 4 stages and 4 micro-batches, tensor parallel in each stage") {
  // (Untied: the next case has the head tied to the embedding.)
  constexpr models::gpt_config four_layers{
      .n_embd = 16, .n_layer = 4, .n_head = 4, .n_positions = 8, .vocab_size = 32, .tie_word_embeddings = false};
  const auto m = std::make_unique<gpt_model>(
      models::gpt(four_layers, process_mesh({4, 2}), {.tp = 1, .pp = 0}, {.seq = 8, .micro_batch = 2}));
  auto so = pipelined();
  model::training_options o;
  o.master_weights = true;
  const auto res = simulate_model(*m, o, so);
  check_ok(res);
  // 3 boundaries, each a forward and a backward send per micro-batch: 24, counted with the rest.
  CHECK(res.collectives >= 24);
  // GPipe: every forward first, each stage keeping all 4 micro-batches in flight (as run).
  so.pipeline->schedule = model::pipeline_schedule::gpipe;
  check_ok(simulate_model(*m, o, so));
  so.pipeline->schedule = model::pipeline_schedule::one_f_one_b;
  // A stage map the pipeline refuses is an error naming why.
  so.pipeline->stage_layers = {1, 2, 1, 0};
  CHECK(simulate_model(*m, o, so).error.find("stage_layers[3] is 0") != std::string::npos);
  so.pipeline->stage_layers = {};
}

TEST_CASE("step simulator: a pipeline whose head is tied to the embedding sums their gradients once a step") {
  // The head (last stage) and the embedding (first) share wte: each stage accumulates its part
  // of the gradient over the micro-batches, and the last sends its part to the first once, as
  // the report's tied_gradient_bytes say.
  constexpr models::gpt_config tied{.n_embd = 16, .n_layer = 4, .n_head = 4, .n_positions = 8, .vocab_size = 32};
  const auto t = std::make_unique<gpt_model>(models::gpt(tied, process_mesh({4, 2}), {.tp = 1, .pp = 0}, {.seq = 8, .micro_batch = 2}));
  const auto so = pipelined();
  model::training_options o;
  o.master_weights = true;
  check_ok(simulate_model(*t, o, so));
  // The report: wte's gradient, vocabulary-parallel over tp (16 x 16 elements in bf16), sent
  // once a step; the last stage's copy of wte holds what an untied head's weight would.
  constexpr models::gpt_config untied{
      .n_embd = 16, .n_layer = 4, .n_head = 4, .n_positions = 8, .vocab_size = 32, .tie_word_embeddings = false};
  const auto u = std::make_unique<gpt_model>(models::gpt(untied, process_mesh({4, 2}), {.tp = 1, .pp = 0}, {.seq = 8, .micro_batch = 2}));
  std::vector<model::stage_report> stages[2];
  for (int k = 0; k < 2; ++k)
    with_step(k == 0 ? *t : *u, o, [&](const auto& step, const auto& r) {
      const auto report = runtime::pipeline(step, r, *so.pipeline, model::h100_cluster(step.mesh()));
      for (std::size_t s = 0; s < report.stages(); ++s) stages[k].push_back(report.stage(s));
    });
  REQUIRE(stages[0].size() == 4);
  CHECK(stages[0][0].tied_gradient_bytes == 16 * 16 * 2);
  CHECK(stages[0][3].tied_gradient_bytes == 16 * 16 * 2);
  CHECK(stages[0][1].tied_gradient_bytes == 0);
  CHECK(stages[0][0].tied_gradient_seconds > 0);
  CHECK(stages[1][0].tied_gradient_bytes == 0);
  for (std::size_t s = 0; s < 4; ++s) {  // the copy updated as the untied head's weight is
    CHECK(stages[0][s].parameters == stages[1][s].parameters);
    CHECK(stages[0][s].gradients == stages[1][s].gradients);
    CHECK(stages[0][s].optimizer_states == stages[1][s].optimizer_states);
    CHECK(stages[0][s].reduction_seconds == doctest::Approx(stages[1][s].reduction_seconds));
    CHECK(stages[0][s].optimizer_seconds - stages[0][s].tied_gradient_seconds ==
          doctest::Approx(stages[1][s].optimizer_seconds));
  }
}

TEST_CASE("step simulator: the interleaved schedule, 2 stages of 2 chunks, in Megatron's order") {
  // Stage 0 holds layers 0 and 2, stage 1 layers 1 and 3; each pass is one chunk's. Stage 0 runs
  // 2 + 2 forward passes before its first backward, stage 1 two, each then one more: 5 and 3
  // chunk passes in flight, 2.5 and 1.5 micro-batches, as the report says. The head is tied to
  // the embedding.
  constexpr models::gpt_config four_layers{.n_embd = 16, .n_layer = 4, .n_head = 4, .n_positions = 8, .vocab_size = 32};
  const auto m = std::make_unique<gpt_model>(
      models::gpt(four_layers, process_mesh({2, 2}), {.tp = 1, .pp = 0}, {.seq = 8, .micro_batch = 2}));
  const auto so = pipelined(model::pipeline_schedule::interleaved, 2);
  model::training_options o;
  o.master_weights = true;
  check_ok(simulate_model(*m, o, so));
  // The report's memory: the last stage's passes keep at most 3 layers' activations (chunk passes
  // of one layer each) and the head's (its last chunk's) once, not 1.5 x (2 layers and the head).
  // A layer's and the head's activations from two 1F1B reports: stage 1 with 2 layers and with 1.
  with_step(*m, o, [&](const auto& step, const auto& r) {
    const auto c = model::h100_cluster(step.mesh());
    const auto inter = runtime::pipeline(step, r, *so.pipeline, c);
    auto plain = *so.pipeline;
    plain.schedule = model::pipeline_schedule::one_f_one_b;
    plain.chunks = 1;
    const auto two = runtime::pipeline(step, r, plain, c).stage(1).activations;
    plain.stage_layers = {3, 1};
    const auto layer = two - runtime::pipeline(step, r, plain, c).stage(1).activations, head = two - 2 * layer;
    REQUIRE(head > 0);
    CHECK(inter.stage(1).in_flight == 1.5);
    CHECK(inter.stage(1).memory - inter.stage(1).persistent() == 3 * layer + head);
  });
}

TEST_CASE("step simulator: a pipeline that is none is an error naming why") {
  const auto m = gpt(process_mesh({2, 2}), {.dp = 0, .tp = 1});
  sim::options so;
  so.pipeline.emplace();  // dp splits the batch over mesh dim 0
  so.pipeline->mesh_dim = 0;
  so.pipeline->micro_batches = 2;
  const auto res = simulate_model(*m, {}, so);
  CHECK(res.error.find("split or partial over the pipeline's mesh dim 0") != std::string::npos);
}

constexpr models::llama_config tiny_llama{.hidden_size = 16, .intermediate_size = 24, .num_hidden_layers = 2,
                                          .num_attention_heads = 4, .num_key_value_heads = 2, .vocab_size = 32,
                                          .max_position_embeddings = 64};

TEST_CASE("step simulator: Llama (grouped-query attention, rotary, SwiGLU) under tensor, sequence and context parallelism") {
  const models::layout layouts[] = {{.dp = 0, .tp = 1}, {.dp = 0, .tp = 1, .sp = true}, {.tp = 1, .cp = 0},
                                    {.dp = 0, .cp = 1}};
  for (const auto& l : layouts) {
    const auto m = std::make_unique<decltype(models::llama(tiny_llama, process_mesh({2, 2}), l, {.seq = 8, .micro_batch = 2}))>(
        models::llama(tiny_llama, process_mesh({2, 2}), l, {.seq = 8, .micro_batch = 2}));
    model::training_options o;
    o.shard_optimizer_states_on = l.dp >= 0 ? l.dp : -1;
    INFO("dp " << l.dp << " tp " << l.tp << " cp " << l.cp << " sp " << l.sp);
    check_ok(simulate_model(*m, o));
    if (l.cp < 0) continue;
    // The same report in the load-balanced order (device i of 2 holding chunks i and 3 - i of 4):
    // the causal masks follow the positions, on the devices and in the reference.
    const std::int64_t positions[] = {0, 1, 6, 7, 2, 3, 4, 5};  // of rows 0..7 in that order
    for (std::int64_t row = 0; row < 8; ++row) CHECK(ctspmd_oracle::ops::balanced_position(row, 8, 2) == positions[row]);
    sim::options balanced;
    balanced.load_balanced_context = true;
    balanced.necessity = false;  // (the reshards of the run above)
    check_ok(simulate_model(*m, o, balanced));
  }
}

/// A propagation as another one reports it, with one change.
template <class Prop>
struct doctored {
  const Prop& real;
  std::function<void(std::size_t, model::reshard&)> edit = [](std::size_t, model::reshard&) {};
  std::int64_t dropped = -1;       ///< an entry left out
  std::int64_t wrong_tensor = -1;  ///< a tensor whose layout is reported without its partial status
  bool ok() const { return real.ok(); }
  const error_info& error() const { return real.error(); }
  std::size_t reshard_entries() const { return real.reshard_entries() - (dropped >= 0 ? 1 : 0); }
  model::reshard reshard_at(std::size_t i) const {
    const std::size_t j = dropped >= 0 && i >= static_cast<std::size_t>(dropped) ? i + 1 : i;
    auto x = real.reshard_at(j);
    edit(j, x);
    return x;
  }
  tensor_dist_attr attr(model::tensor_id t) const {
    auto a = real.attr(t);
    if (static_cast<std::int64_t>(t.index) == wrong_tensor) a.clean_partial_status();
    return a;
  }
};

TEST_CASE("step simulator: Mixtral, experts over all-to-alls with capacity, beside data and tensor parallelism") {
  // 4 experts, 2 a token, capacity factor 1: tokens over capacity are dropped, each device
  // routing its own tokens into its own slots (the reference routes the same blocks).
  const models::mixtral_config tiny_mixtral{tiny_llama, 4, 2};
  const models::layout layouts[] = {{.dp = 0, .ep = 1}, {.tp = 0, .ep = 1}};
  for (const auto& l : layouts) {
    INFO("dp " << l.dp << " tp " << l.tp << " ep " << l.ep);
    using mixtral_model = models::built_model<models::mixtral_plan>;
    const auto m = std::make_unique<mixtral_model>(models::mixtral(tiny_mixtral, process_mesh({2, 2}), l, {.seq = 8, .micro_batch = 2}));
    model::training_options o;
    o.shard_optimizer_states_on = l.dp;
    o.zero_stage = l.dp >= 0 ? 1 : 0;
    check_ok(simulate_model(*m, o));
  }
}

TEST_CASE("step simulator: a doctored report is caught") {
  const auto m = gpt(process_mesh({2, 2}), {.dp = 0, .tp = 1, .sp = true});
  model::training_options o;
  o.shard_optimizer_states_on = 0;
  with_step(*m, o, [&](const auto& step, const auto& r) {
    using prop = std::remove_cvref_t<decltype(r)>;
    // Each kind of collective left out: the step no longer matches one device.
    std::set<model::collective> seen;
    for (std::size_t e = 0; e < r.reshard_entries(); ++e) {
      if (!seen.insert(r.reshard_at(e).kind).second) continue;
      doctored<prop> d{r};
      d.dropped = static_cast<std::int64_t>(e);
      const auto res = sim::simulate(step, d, {.necessity = false});
      INFO("without " << model::to_string(r.reshard_at(e).kind) << " of operator " << r.reshard_at(e).op);
      CHECK(!res.mismatch.empty());
    }
    CHECK(seen.size() >= 4);
    // Bytes or occurrences misreported.
    doctored<prop> bytes{r};
    bytes.edit = [](std::size_t e, model::reshard& x) {
      if (e == 0) x.bytes += 2;
    };
    auto res = sim::simulate(step, bytes, {.necessity = false});
    CHECK(res.mismatch.empty());
    CHECK(!res.bytes_match);
    doctored<prop> times{r};
    times.edit = [](std::size_t e, model::reshard& x) {
      if (e == 0) x.times += 1;
    };
    CHECK(!sim::simulate(step, times, {.necessity = false}).bytes_match);
    // A partial tensor reported as whole: the first partial output of the step.
    doctored<prop> layout{r};
    for (std::size_t t = 0; t < step.tensor_count() && layout.wrong_tensor < 0; ++t)
      if (step.tensor_at(t).producer >= 0 && r.attr(model::tensor_id{t}).is_partial()) layout.wrong_tensor = static_cast<std::int64_t>(t);
    REQUIRE(layout.wrong_tensor >= 0);
    CHECK(!sim::simulate(step, layout, {.necessity = false}).mismatch.empty());
  });
}


namespace generated {

using model::tensor_id;

std::string mesh_text(const process_mesh& m) {
  std::string s = "[";
  for (std::int64_t d = 0; d < m.ndim(); ++d) s += (d ? ", " : "") + std::to_string(m.dim_size(d));
  return s + "]";
}

using step_plan = model::plan<160, 64>;

/// A random layout of a tensor of `rank` dims on `mesh`: each mesh dim shards a random dim or
/// none (under phi, two mesh dims may co-shard one dim); with `partial`, a mesh dim left unused
/// may hold the tensor partial (sum).
tensor_dist_attr random_layout(const process_mesh& mesh, std::size_t rank, bool phi, bool partial, std::mt19937& g) {
  const auto pick = [&](int n) { return static_cast<int>(g() % static_cast<unsigned>(n)); };
  multi_dims_mapping dm(rank, mesh_dims{});
  mesh_dims unused;
  for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
    const int d = pick(static_cast<int>(rank) + 1) - 1;
    if (d >= 0 && (phi || dm[static_cast<std::size_t>(d)].empty()))
      dm[static_cast<std::size_t>(d)].push_back(m);
    else
      unused.push_back(m);
  }
  tensor_dist_attr a(mesh, dm);
  if (partial)
    for (auto m : unused)
      if (pick(3) == 0) a.set_partial_status({m});
  return a;
}

/// A random training step's forward plan: an activation [8, 8, 16] through random operators, in
/// a repeated block now and then; weights and some activations annotated at random. (No operator
/// makes a later one's input irrelevant or constant, or a reshard of it would rightly change no
/// result, and be reported so: a layer norm after a softmax would see equal means, a softmax
/// over another dim than the last ignore a layer norm's bias, a softmax or a norm a sum over the
/// last dim added back.)
struct generated_plan {
  std::unique_ptr<step_plan> plan;
  tensor_id loss{};
  std::string what;
};

generated_plan make(std::mt19937& g) {
  const auto pick = [&](int n) { return static_cast<int>(g() % static_cast<unsigned>(n)); };
  static const std::vector<tensor_shape> meshes = {{2}, {4}, {2, 2}, {4, 2}, {2, 2, 2}};
  const auto& ms = meshes[static_cast<std::size_t>(pick(static_cast<int>(meshes.size())))];
  const process_mesh mesh(ms);
  const bool phi = pick(2) == 0;
  generated_plan out;
  out.plan = std::make_unique<step_plan>(mesh, phi ? semantics::phi : semantics::fluid);
  out.what = "mesh " + mesh_text(mesh) + (phi ? " phi" : " fluid");
  auto& p = *out.plan;
  const tensor_shape act{8, 8, 16};
  const auto maybe = [&](std::string_view name, const tensor_shape& s, bool partial) {
    if (pick(2) == 0) return p.tensor(name, s);
    const auto a = random_layout(mesh, s.size(), phi, partial, g);
    out.what += " " + std::string(name) + to_string(a);
    return p.tensor(name, s, a);
  };
  const auto param = [&](std::string_view name, const tensor_shape& s) {
    if (pick(2) == 0) return p.parameter(name, s);
    const auto a = random_layout(mesh, s.size(), phi, false, g);
    out.what += " " + std::string(name) + to_string(a);
    return p.parameter(name, s, a);
  };
  const int n_ops = 2 + pick(4);
  std::vector<int> kinds;
  for (int i = 0; i < n_ops; ++i) kinds.push_back(pick(13));
  // A layer norm reading a softmax's rows (through operators that keep the rows' sums equal: a
  // relu of positive values, a scale, an assign, a sum over dim 0 added back, transposes; in a
  // block, around from the run before) would see equal means: an rms norm instead.
  bool equal_row_sums = false;
  for (int round = 0; round < 2; ++round)
    for (auto& k : kinds) {
      if (k == 5 && equal_row_sums) k = 9;
      equal_row_sums = k == 4 || (equal_row_sums && (k == 1 || k == 6 || k == 8 || k == 10 || k == 11));
    }
  const auto layer = [&](step_plan& b, tensor_id x) {
    tensor_id cur = x;
    for (const int k : kinds) {
      const auto o = b.tensor("act", act);
      switch (k) {
        case 0: b.op<"matmul">({cur, param("w", {16, 16})}, {o}); break;
        case 1: b.op<"relu">({cur}, {o}); break;
        case 2: b.op<"gelu">({cur}, {o}); break;
        case 3: b.op<"add">({cur, x}, {o}); break;
        case 4: b.op<"softmax">({cur}, {o}, {.axis = -1}); break;
        case 5: {
          const auto mean = b.tensor("mean", {8, 8}), var = b.tensor("var", {8, 8});
          b.op<"layer_norm">({cur, param("ln.w", {16}), param("ln.b", {16})}, {o, mean, var}, {.begin_norm_axis = 2});
          break;
        }
        case 6: b.op<"scale">({cur}, {o}, {.scale = 0.5, .bias = 0.25}); break;
        case 7: b.op<"multiply">({cur, param("g", {16})}, {o}); break;
        case 9: b.op<"rms_norm">({cur, param("rms.w", {16})}, {o, b.tensor("invvar", {8, 8})}); break;
        case 10: {  // a reduction kept as a dim of 1, broadcast back
          const auto s = b.tensor("sum", {1, 8, 16});
          b.op<"sum">({cur}, {s}, {.axis = {0}, .keep_dim = true});
          b.op<"add">({cur, s}, {o});
          break;
        }
        case 11: {
          const auto t = b.tensor("t", {8, 16, 8});
          b.op<"transpose">({cur}, {t}, {.perm = {0, 2, 1}});
          b.op<"transpose">({t}, {o}, {.perm = {0, 2, 1}});
          break;
        }
        case 12: b.op<"swiglu">({cur, x}, {o}); break;
        case 8: b.op<"assign">({cur}, {maybe("point", act, true)}); continue;  // a reshard point
        default: throw std::logic_error("no such kind");
      }
      cur = o;
    }
    return cur;
  };
  const auto x0 = maybe("x0", act, true);
  tensor_id y = x0;
  if (pick(2) == 0) {
    const auto runs = static_cast<std::size_t>(1 + pick(3));
    out.what += " block x" + std::to_string(runs);
    y = p.repeat(runs, x0, layer);
  } else {
    y = layer(p, x0);
  }
  out.loss = p.tensor("loss", act);
  p.op<"multiply">({y, param("head", {16})}, {out.loss});
  std::string kinds_text;
  for (int k : kinds) kinds_text += std::to_string(k);
  out.what += " ops " + kinds_text;
  return out;
}

}  // namespace generated

TEST_CASE("step simulator: 100 generated training steps match one device") {
  std::mt19937 g(20261207);
  int simulated = 0, attempts = 0;
  while (simulated < 100 && attempts < 400) {
    ++attempts;
    auto gp = generated::make(g);
    model::training_options o;
    if (g() % 2 == 0) {
      o.shard_optimizer_states_on = 0;
      o.zero_stage = 1 + static_cast<std::int64_t>(g() % 3);
    }
    using step_t = decltype(model::training_step(*gp.plan, gp.loss, o));
    std::unique_ptr<step_t> step;
    try {
      step = std::make_unique<step_t>(model::training_step(*gp.plan, gp.loss, o));
    } catch (const spmd_error&) {
      continue;  // e.g. a layer norm's weight sharded where the layout cannot be
    }
    const auto r = runtime::propagate(*step);
    if (!r->ok()) continue;  // the generated layouts conflict: propagation says so
    const auto res = sim::simulate(*step, *r);
    ++simulated;
    INFO(gp.what << " ZeRO " << o.stage() << ": " << res.summary());

    CHECK(res.ok());
  }
  MESSAGE("simulated " << simulated << " of " << attempts << " generated (the others' layouts conflict)");
  CHECK(simulated == 100);
}

#ifdef CTSPMD_TEST_REQUESTS  // the tool's request reader is built (runtime_tests/CMakeLists.txt)

TEST_CASE("step simulator: ctspmd-infer's \"simulate\": true proves a training step") {
  // (Their figures depend on rounding: checked here against bounds, not as golden lines. The
  // requests whose answers are exact are in tests/tool/simulate.jsonl.)
  const std::string lines[] = {
      R"json({"plan": {"mesh": [2, 4], "mesh_names": ["dp", "mp"], "tensors": [{"name": "x", "shape": [8, 16], "dims_mapping": [0, -1]}, {"name": "w1", "shape": [16, 32], "dims_mapping": [-1, 1], "parameter": true}, {"name": "h", "shape": [8, 32]}, {"name": "g", "shape": [8, 32]}, {"name": "w2", "shape": [32, 16], "dims_mapping": [1, -1], "parameter": true}, {"name": "y", "shape": [8, 16]}, {"name": "z", "shape": [8, 16], "dims_mapping": [0, -1]}], "operators": [{"op": "matmul", "inputs": ["x", "w1"], "outputs": ["h"], "label": "fc1"}, {"op": "gelu", "inputs": ["h"], "outputs": ["g"]}, {"op": "matmul", "inputs": ["g", "w2"], "outputs": ["y"], "label": "fc2"}, {"op": "assign", "inputs": ["y"], "outputs": ["z"], "label": "fc2.reduce"}], "training": {"loss": "z", "shard_optimizer_states_on": "dp", "zero_stage": 3, "master_weights": true}}, "simulate": true})json",
      R"json({"plan": {"mesh": [2, 4], "mesh_names": ["dp", "mp"], "tensors": [{"name": "x", "shape": [8, 64], "partition_spec": "P('dp')"}, {"name": "out", "shape": [8, 64]}], "operators": [{"repeat": {"count": 3, "source": "x", "input": "h", "tensors": [{"name": "w", "shape": [64, 64], "partition_spec": "P(None, 'mp')", "parameter": true}, {"name": "a", "shape": [8, 64]}, {"name": "b", "shape": [8, 64], "partition_spec": "P('dp')"}], "operators": [{"op": "matmul", "inputs": ["h", "w"], "outputs": ["a"]}, {"op": "relu", "inputs": ["a"], "outputs": ["b"]}], "output": "b"}}, {"op": "relu", "inputs": ["b"], "outputs": ["out"]}], "training": {"loss": "out"}}, "simulate": true})json",
      R"json({"plan": {"mesh": [2, 2], "tensors": [{"name": "x", "shape": [4, 6, 8], "dims_mapping": [0, -1, 1]}, {"name": "w", "shape": [8], "parameter": true}, {"name": "h", "shape": [4, 6, 8]}, {"name": "s", "shape": [4, 8]}, {"name": "m", "shape": [4, 1, 8]}, {"name": "e", "shape": [4, 8]}, {"name": "loss", "shape": [4, 8]}], "operators": [{"op": "multiply", "inputs": ["x", "w"], "outputs": ["h"]}, {"op": "sum", "inputs": ["h"], "outputs": ["s"], "attrs": {"axis": [1]}}, {"op": "mean", "inputs": ["h"], "outputs": ["m"], "attrs": {"axis": [1], "keep_dim": true}}, {"op": "squeeze", "inputs": ["m"], "outputs": ["e"], "attrs": {"axis": [1]}}, {"op": "subtract", "inputs": ["s", "e"], "outputs": ["loss"]}], "training": {"loss": "loss"}}, "simulate": true})json",
      // a pipeline of 2 stages: its sends, its 4 micro-batches accumulated
      R"json({"plan": {"mesh": [2, 2], "mesh_names": ["pp", "mp"], "tensors": [{"name": "x", "shape": [8, 16], "dims_mapping": [-1, -1]}, {"name": "out", "shape": [8, 16]}], "operators": [{"repeat": {"count": 4, "source": "x", "input": "h", "tensors": [{"name": "w", "shape": [16, 32], "dims_mapping": [-1, 1], "parameter": true}, {"name": "a", "shape": [8, 32]}, {"name": "g", "shape": [8, 32]}, {"name": "w2", "shape": [32, 16], "dims_mapping": [1, -1], "parameter": true}, {"name": "b", "shape": [8, 16]}, {"name": "c", "shape": [8, 16], "dims_mapping": [-1, -1]}], "operators": [{"op": "matmul", "inputs": ["h", "w"], "outputs": ["a"]}, {"op": "gelu", "inputs": ["a"], "outputs": ["g"]}, {"op": "matmul", "inputs": ["g", "w2"], "outputs": ["b"]}, {"op": "assign", "inputs": ["b"], "outputs": ["c"]}], "output": "c"}}, {"op": "relu", "inputs": ["c"], "outputs": ["out"]}], "training": {"loss": "out", "master_weights": true}, "pipeline": {"mesh_dim": "pp", "micro_batches": 4, "schedule": "1f1b"}}, "simulate": true})json",
  };
  for (const auto& line : lines) {
    const auto r = ctspmd_requests::handle(line);
    REQUIRE(r.ok);
    const auto answer = nlohmann::json::parse(r.line);
    const auto& sim = answer.at("simulation");
    INFO(sim.dump());
    CHECK(sim.at("matches").get<bool>());
    CHECK(sim.at("bytes_match").get<bool>());
    CHECK(sim.at("unnecessary").empty());
    CHECK(sim.at("max_relative_error").get<double>() < 1e-9);
    CHECK(sim.at("gradient_error").get<double>() >= 0);
    CHECK(sim.at("gradient_error").get<double>() < 1e-6);
    CHECK(sim.at("collectives").get<std::int64_t>() > 0);
    const auto request = nlohmann::json::parse(line);
    std::int64_t devices = 1;
    for (const auto& d : request.at("plan").at("mesh")) devices *= d.get<std::int64_t>();
    CHECK(sim.at("devices").get<std::int64_t>() == devices);
  }
}

#endif

}  // namespace oracle_step_sim_test
