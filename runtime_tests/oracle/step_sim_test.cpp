// The step simulator (step_sim.hpp) on whole training steps: each must match one device, move
// exactly the bytes its report lists, and need every collective. Doctored reports (a reshard
// left out, wrong bytes, a layout that is not what the devices hold) must be caught.
#include <functional>
#include <memory>

#include <ctspmd/models/gpt.hpp>

#include <doctest/doctest.h>

#include "step_sim.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_step_sim_test {

using namespace ctspmd;
namespace sim = ctspmd_oracle::step;

constexpr models::gpt_config tiny_gpt{.n_embd = 16, .n_layer = 2, .n_head = 4, .n_positions = 8, .vocab_size = 32};

using gpt_model = models::built_model<models::gpt_plan>;
std::unique_ptr<gpt_model> gpt(const process_mesh& mesh, const models::layout& l, bool flash = true) {
  return std::make_unique<gpt_model>(models::gpt(tiny_gpt, mesh, l, {.seq = 8, .micro_batch = 2, .flash_attention = flash}));
}

/// Calls f(step, propagation) for the training step of `m` under `o`.
template <class Model, class F>
void with_step(const Model& m, const model::training_options& o, F f) {
  const auto step = std::make_unique<decltype(model::training_step(m.plan, m.loss, o))>(model::training_step(m.plan, m.loss, o));
  const auto r = runtime::propagate(*step);
  REQUIRE(r->ok());
  f(*step, *r);
}

template <class Model>
sim::result simulate_model(const Model& m, const model::training_options& o = {}) {
  sim::result res;
  with_step(m, o, [&](const auto& step, const auto& r) { res = sim::simulate(step, r); });
  return res;
}

void check_ok(const sim::result& res) {
  INFO(res.summary());
  CHECK(res.ok());
  CHECK(res.max_relative_error < 1e-9);
  CHECK(res.collectives > 0);
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
  for (const std::int64_t stage : {1, 2, 3})
    for (const auto rc : {model::recompute::none, model::recompute::selective, model::recompute::full}) {
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

}  // namespace oracle_step_sim_test
