// Plans written with the typed API (the GPT and Llama examples, a few layers) and the same plans
// written as JSON plan requests give identical answers: every tensor's layout, every reshard
// entry, the totals and the training step's cost. The JSON is written from the typed plan
// (tensors, operators with every attribute, blocks, annotations), dumped and parsed again, and
// verified by ctspmd-infer's reader (ctspmd_requests); the typed plan is propagated and costed directly.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "gpt/gpt_plan.hpp"
#include "llama/llama_plan.hpp"
#include "plan_answer.hpp"

#include <ctspmd/runtime/plan.hpp>

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

namespace {

using ctspmd_requests::json;
namespace model = ctspmd::model;
namespace rt = ctspmd::runtime;

/// A typed plan as a JSON plan request, and where each of its tensors is in the plan the request
/// builds (outer tensors first, then each block's input and body).
struct written {
  json request;
  std::vector<std::size_t> index;
};

template <class Plan>
written write(const Plan& p) {
  written out;
  const auto block_of = [&](std::size_t t) {
    for (std::size_t b = 0; b < p.block_count(); ++b)
      if (t >= p.block_at(b).input.index && t < p.block_at(b).end_tensor) return static_cast<std::int64_t>(b);
    return std::int64_t{-1};
  };
  out.index.resize(p.tensor_count());
  std::size_t next = 0;
  for (std::size_t t = 0; t < p.tensor_count(); ++t)
    if (block_of(t) < 0) out.index[t] = next++;
  for (std::size_t b = 0; b < p.block_count(); ++b)
    for (std::size_t t = p.block_at(b).input.index; t < p.block_at(b).end_tensor; ++t) out.index[t] = next++;

  const auto tensor = [&](std::size_t t) {
    const auto& info = p.tensor_at(t);
    json shape = json::array();
    for (auto s : info.shape) shape.push_back(s);
    json o = info.annotated ? ctspmd_requests::attr_json(info.annotation, ctspmd::named_mesh(p.mesh()), {}) : json::object();
    o["name"] = info.name;
    o["shape"] = shape;
    o["element_bytes"] = info.element_bytes;
    if (info.trainable) o["parameter"] = true;
    return o;
  };
  const auto op = [&](std::size_t i) {
    const auto& o = p.op_at(i);
    json in = json::array(), outs = json::array(), attrs = json::object();
    for (auto t : o.inputs) in.push_back(out.index[t]);
    for (auto t : o.outputs) outs.push_back(out.index[t]);
    for (const auto& [name, value] : ctspmd_requests::operator_attributes(o))
      attrs[name] = std::visit([](const auto& v) { return json(v); }, value);
    json j = {{"op", o.rule}, {"inputs", in}, {"outputs", outs}, {"attrs", attrs}, {"label", o.label}};
    if (o.recomputable) j["recomputable"] = true;
    return j;
  };

  json tensors = json::array(), ops = json::array();
  for (std::size_t t = 0; t < p.tensor_count(); ++t)
    if (block_of(t) < 0) tensors.push_back(tensor(t));
  for (std::size_t i = 0, b = 0; i < p.op_count();) {
    if (b < p.block_count() && i == p.block_at(b).first_op) {
      const auto& k = p.block_at(b++);
      json body_tensors = json::array(), body_ops = json::array();
      for (std::size_t t = k.input.index + 1; t < k.end_tensor; ++t) body_tensors.push_back(tensor(t));
      for (; i < k.end_op; ++i) body_ops.push_back(op(i));
      ops.push_back({{"repeat",
                      {{"count", k.count},
                       {"source", out.index[k.source.index]},
                       {"input", "block input"},
                       {"tensors", body_tensors},
                       {"operators", body_ops},
                       {"output", out.index[k.output.index]}}}});
      continue;
    }
    ops.push_back(op(i++));
  }
  json mesh = json::array();
  for (auto s : p.mesh().shape()) mesh.push_back(s);
  out.request = {{"mesh", mesh},
                 {"semantics", p.semantics() == ctspmd::semantics::phi ? "phi" : "fluid"},
                 {"tensors", tensors},
                 {"operators", ops}};
  return out;
}

/// The typed step's answer with its tensors where the JSON plan has them (tensors a training step
/// adds are in the same place in both).
json renumbered(json answer, const std::vector<std::size_t>& index) {
  const auto at = [&](std::size_t t) { return t < index.size() ? index[t] : t; };
  json tensors = answer["tensors"];
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    auto& o = answer["tensors"][at(t)] = tensors[t];
    if (o.contains("of")) o["of"] = at(o["of"].get<std::size_t>());
  }
  for (auto& r : answer["reshards"]) r["tensor"] = at(r["tensor"].get<std::size_t>());
  return answer;
}

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
  const auto p = gpt::make_plan<2>();
  model::tensor_id loss{p.tensor_count() - 1};
  REQUIRE(p.tensor_at(loss.index).name == "loss");
  check_parity(p, loss, {}, json::object());
}

TEST_CASE("GPT with sequence parallelism, ZeRO-1 over dp and selective recomputation") {
  const auto p = gpt::make_plan<3, gpt::variant::sequence_parallel>();
  const model::training_options options{.shard_optimizer_states_on = 0, .recompute = model::recompute::selective};
  check_parity(p, {p.tensor_count() - 1}, options, {{"shard_optimizer_states_on", 0}, {"recompute", "selective"}});
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
