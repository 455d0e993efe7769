#ifndef CTSPMD_TOOLS_REQUESTS_PLAN_ANSWER_HPP
#define CTSPMD_TOOLS_REQUESTS_PLAN_ANSWER_HPP
// A propagated plan as a plan request's answer (see ctspmd-infer --help): every tensor's layout,
// the reshard report and its totals, and a training step's cost. Templates over the plan's type:
// plan requests answer run-time plans with them (plan_request.cpp), and tests/tool/plan_parity.cpp
// answers typed plans (the examples') to compare.

#include "requests.hpp"

#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace ctspmd_requests {

namespace model = ctspmd::model;
using ctspmd::runtime::layout_form;

/// Operator `o`'s attributes, every one, as a plan request writes them: `runtime::
/// operator_attributes`, compiled in the library, whose by-name plan table it reads (a unit that
/// calls the runtime's instantiates that table: some 17 s of GCC at -O3 in the plan parity test).
ctspmd::runtime::attribute_map operator_attributes(const model::operator_info& o);

/// Tensor t of plan `p` (propagated as `r`) in a plan answer.
template <class Plan, class Propagation>
json tensor_json(const Plan& p, const Propagation& r, std::size_t t, const ctspmd::named_mesh& mesh, const layout_form& form) {
  const auto& info = p.tensor_at(t);
  const auto& a = r.attr({t});
  // A tensor no operator reads or writes has no layout.
  const bool laid_out = a.process_mesh() == static_cast<const ctspmd::process_mesh&>(mesh) && a.rank() == info.shape.size();
  json o = laid_out ? attr_json(a, mesh, form) : json::object();
  o["name"] = info.name;
  constexpr std::string_view roles[] = {"value", "gradient", "optimizer_state", "first_run_layout"};
  if (info.role != model::tensor_role::value) {
    o["role"] = roles[static_cast<std::size_t>(info.role)];
    o["of"] = info.role_of;
  }
  if (info.trainable) o["parameter"] = true;
  return o;
}

/// Appends to `out` the paths (`at` first, dot-separated) of the integer figures of `j` at int64's
/// largest value: a figure that overflowed saturates there, and so does every sum it enters.
inline void saturated_paths(const json& j, const std::string& at, json& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) saturated_paths(value, at.empty() ? key : at + "." + key, out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) saturated_paths(j[i], at + "." + std::to_string(i), out);
  } else if (j.is_number_integer() && j.get<std::int64_t>() == std::numeric_limits<std::int64_t>::max()) {
    out.push_back(at);
  }
}

/// The cost `c` of plan `p` in a plan answer. A figure that overflowed int64 is not a number to
/// trust: the answer lists it under "saturated", with the times and rates derived from it.
template <class Plan>
json cost_json(const Plan& p, const model::step_cost& c) {
  const auto& m = c.memory();
  json collectives = json::object();
  for (std::size_t ph = 0; ph < model::phase_count; ++ph)
    for (std::size_t k = 0; k < model::collective_count; ++k) {
      const auto t = c.collectives(static_cast<model::phase>(ph), static_cast<model::collective>(k));
      if (t.count == 0) continue;
      json mesh_dims = json::array();
      for (std::int64_t dim = 0; dim < p.mesh().ndim(); ++dim)
        if (const auto d = c.collectives(static_cast<model::phase>(ph), static_cast<model::collective>(k), dim); d.count > 0)
          mesh_dims.push_back({{"mesh_dim", dim}, {"count", d.count}, {"bytes", d.bytes}, {"seconds", d.seconds}});
      collectives[std::string(model::to_string(static_cast<model::phase>(ph)))]
                 [std::string(model::to_string(static_cast<model::collective>(k)))] = {
                     {"count", t.count}, {"bytes", t.bytes}, {"seconds", t.seconds}, {"mesh_dims", mesh_dims}};
    }
  json out = {{"memory",
           {{"parameters", m.parameters},
            {"gradients", m.gradients},
            {"optimizer_states", m.optimizer_states},
            {"activations", m.activations},
            {"peak", m.peak},
            {"peak_op", m.peak_op},
            {"peak_op_name", p.op_count() > 0 ? p.op_at(m.peak_op).name() : ""},
            {"peak_phase", model::to_string(m.peak_phase)}}},
          {"flops",
           {{"forward", c.flops(model::phase::forward)},
            {"backward", c.flops(model::phase::backward)},
            {"optimizer", c.flops(model::phase::optimizer)},
            {"recompute", c.recompute_flops()},
            {"model", c.model_flops()},
            {"hardware", c.hardware_flops()}}},
          {"collectives", collectives},
          {"compute_seconds", c.compute_seconds()},
          {"communication_seconds", c.communication_seconds()},
          {"step_seconds", c.step_seconds()},
          {"overlapped_step_seconds", c.overlapped_step_seconds()},
          {"mfu", c.mfu()},
          {"overlapped_mfu", c.overlapped_mfu()}};
  json saturated = json::array();
  saturated_paths(out, "", saturated);
  if (saturated.empty()) return out;
  bool compute = false, communication = false;
  for (const auto& path : saturated) {
    const auto& at = path.get_ref<const std::string&>();
    compute = compute || at.rfind("flops.", 0) == 0;
    communication = communication || at.rfind("collectives.", 0) == 0;
  }
  if (compute) saturated.push_back("compute_seconds");
  if (communication) saturated.push_back("communication_seconds");
  for (const char* derived : {"step_seconds", "overlapped_step_seconds", "mfu", "overlapped_mfu"})
    if (compute || communication) saturated.push_back(derived);
  out["saturated"] = saturated;
  return out;
}

/// The answer to a propagated plan `p` (`r`): every tensor's layout, the reshards and their totals.
template <class Plan, class Propagation>
json report_json(const Plan& p, const Propagation& r, const ctspmd::named_mesh& mesh, const layout_form& form) {
  json tensors = json::array();
  for (std::size_t t = 0; t < p.tensor_count(); ++t) tensors.push_back(tensor_json(p, r, t, mesh, form));
  json reshards = json::array(), totals = json::object();
  for (std::size_t e = 0; e < r.reshard_entries(); ++e) {
    const auto& s = r.reshard_at(e);
    const auto& op = p.op_at(s.op);
    reshards.push_back({{"op", s.op},
                        {"name", op.name()},
                        {"rule", op.rule},
                        {s.on_output ? "output" : "input", s.operand},
                        {"tensor", s.tensor},
                        {"tensor_name", p.tensor_at(s.tensor).name},
                        {"mesh_dim", s.mesh_dim},
                        {"collective", model::to_string(s.kind)},
                        {"bytes", s.bytes},
                        {"times", s.times},
                        {"block", s.block},
                        {"phase", model::to_string(s.phase)},
                        {"from", attr_json(s.from, mesh, form)},
                        {"to", attr_json(s.to, mesh, form)}});
    if ((s.group & (s.group - 1)) != 0) {  // a collective over a product group: its mesh dims
      json group = json::array();
      for (std::int64_t m = 0; m < mesh.ndim(); ++m)
        if (((s.group >> m) & 1) != 0) group.push_back(m);
      reshards.back()["mesh_dims"] = group;
    }
    auto& total = totals[std::string(model::to_string(s.phase))][std::string(model::to_string(s.kind))];
    if (total.is_null()) total = {{"count", 0}, {"bytes", 0}};
    const auto times = static_cast<std::int64_t>(s.times), before = total["bytes"].get<std::int64_t>();
    total["count"] = ctspmd::detail::saturating_sum(total["count"].get<std::int64_t>(), times);
    total["bytes"] = before < 0 || s.bytes < 0
                         ? -1  // a size is unknown
                         : ctspmd::detail::saturating_sum(before, ctspmd::detail::saturating_product(s.bytes, times));
  }
  return {{"tensors", tensors}, {"reshards", reshards}, {"totals", totals}};
}


}  // namespace ctspmd_requests

#endif
