// Plans written with the typed API (the GPT and Llama examples, a few layers) and the same plans
// written as JSON plan requests give identical answers: every tensor's layout, every reshard
// entry, the totals and the training step's cost. The JSON is written from the typed plan
// (tensors, operators with every attribute, blocks, annotations), dumped and parsed again, and
// verified by ctspmd-infer's reader (ctspmd_requests); the typed plan is propagated and costed directly.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "gpt/gpt_plan.hpp"
#include "llama/llama_plan.hpp"
#include "plan_write.hpp"

#include <ctspmd/runtime/plan.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace {

using ctspmd_requests::json;
namespace model = ctspmd::model;
namespace rt = ctspmd::runtime;
using plan_write::renumbered;
using plan_write::write;

/// Checks that forward plan `forward` (loss `loss`) gives the same answers typed and as JSON:
/// forward alone, and its training step with `options` on H100 nodes.
template <class Plan>
void check_parity(const Plan& forward, model::tensor_id loss, const model::training_options& options, json training) {
  const auto w = write(forward);
  const ctspmd::named_mesh mesh(forward.mesh());
  {
    const auto r = rt::propagate(forward);
    REQUIRE(r->ok());
    const json request = json::parse(ctspmd_requests::dump(w.request));
    CHECK(ctspmd_requests::verify_plan(request) ==
          renumbered(ctspmd_requests::report_json(forward, *r, mesh, {}), w.index));
  }
  const auto step = std::make_unique<decltype(model::training_step(forward, loss, options))>(
      model::training_step(forward, loss, options));
  const auto r = rt::propagate(*step);
  REQUIRE(r->ok());
  json expected = renumbered(ctspmd_requests::report_json(*step, *r, mesh, {}), w.index);
  expected["cost"] = ctspmd_requests::cost_json(*step, rt::cost(*step, *r, model::h100_cluster(step->mesh())));
  training["loss"] = w.index[loss.index];
  json request = w.request;
  request["training"] = training;
  const json answer = ctspmd_requests::verify_plan(json::parse(ctspmd_requests::dump(request)));
  CHECK(answer["tensors"] == expected["tensors"]);
  CHECK(answer["reshards"] == expected["reshards"]);
  CHECK(answer["totals"] == expected["totals"]);
  CHECK(answer["cost"] == expected["cost"]);
  CHECK(answer["reshards"].size() > 0);
}

}  // namespace

TEST_CASE("GPT, two layers: typed and JSON plans give the same answers") {
  const auto m = gpt::make_model<2>();
  REQUIRE(m.plan.tensor_at(m.loss.index).name == "loss");
  check_parity(m.plan, m.loss, {}, json::object());
}

TEST_CASE("GPT with sequence parallelism, ZeRO-1 over dp and selective recomputation") {
  const auto m = gpt::make_model<3, gpt::variant::sequence_parallel>();
  const model::training_options options{.shard_optimizer_states_on = 0, .recompute = model::recompute::selective};
  check_parity(m.plan, m.loss, options, {{"shard_optimizer_states_on", 0}, {"recompute", "selective"}});
}

TEST_CASE("Llama, two layers: typed and JSON plans give the same answers") {
  const llama::forward<2> f;
  check_parity(f.plan, f.loss, {}, json::object());
}

TEST_CASE("Llama with sequence parallelism, ZeRO-3, fp32 gradients and master weights, full recomputation") {
  const llama::forward<2, llama::variant::sequence_parallel> f;
  const model::training_options options{.shard_optimizer_states_on = 0,
                                        .zero_stage = 3,
                                        .gradient_element_bytes = 4,
                                        .master_weights = true,
                                        .recompute = model::recompute::full};
  check_parity(f.plan, f.loss, options,
               {{"shard_optimizer_states_on", 0},
                {"zero_stage", 3},
                {"gradient_element_bytes", 4},
                {"master_weights", true},
                {"recompute", "full"}});
}
