#ifndef CTSPMD_TOOLS_REQUESTS_PLAN_WRITE_HPP
#define CTSPMD_TOOLS_REQUESTS_PLAN_WRITE_HPP
// A typed plan written as a JSON plan request (tensors, operators with every attribute, blocks,
// annotations), and a typed answer renumbered to the request's tensors: what a model request
// (model_request.cpp) sends on as a plan request, and what the tests that compare typed plans
// with ctspmd-infer's answers write (tests/tool/plan_parity.cpp, plan_property.cpp).

#include "plan_answer.hpp"

#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

namespace plan_write {

using ctspmd_requests::json;

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
    for (const auto& [name, value] : ctspmd_requests::operator_attributes(o)) attrs[name] = std::visit([](const auto& v) { return json(v); }, value);
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
inline json renumbered(json answer, const std::vector<std::size_t>& index) {
  const auto at = [&](std::size_t t) { return t < index.size() ? index[t] : t; };
  json tensors = answer["tensors"];
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    auto& o = answer["tensors"][at(t)] = tensors[t];
    if (o.contains("of")) o["of"] = at(o["of"].get<std::size_t>());
  }
  for (auto& r : answer["reshards"]) r["tensor"] = at(r["tensor"].get<std::size_t>());
  return answer;
}

}  // namespace plan_write

#endif
