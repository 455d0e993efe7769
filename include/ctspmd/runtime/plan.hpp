#ifndef CTSPMD_RUNTIME_PLAN_HPP
#define CTSPMD_RUNTIME_PLAN_HPP
/// \file Plans built at run time (run time only): operators added by name with an attribute map,
/// and a plan's propagation, training step and cost computed on the heap.
///
///     auto p = std::make_unique<runtime::plan>(mesh);       // plans are big: never on the stack
///     auto x = p->tensor("x", {8, 1024}, {0, -1});
///     ...
///     runtime::add_operator(*p, "matmul", {{x, w}}, {{y}}, {{"trans_y", true}}, "proj");
///     const auto r = runtime::propagate(*p);                 // a unique_ptr to the propagation
///
/// `add_operator(p, "matmul", ...)` adds exactly the operator `p.op<"matmul">(...)` adds (the
/// same rule name, attributes, thunks, grad recipe and output-shape checks): the by-name table is
/// generated from `rules::registry`, like `rule_table`, and the attribute map is converted as
/// `infer_forward` converts it. A plan keeps views, not copies, of its strings: tensor names,
/// labels, mesh names and string attributes must outlive it (keep the attribute maps too).

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/pipeline.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>
#include <ctspmd/runtime.hpp>

namespace ctspmd::runtime {

/// A plan of run-time size (about 4 MB: allocate it, e.g. with std::make_unique).
using plan = model::plan<8192, 4096>;
/// The training step of a `plan` (`training_step`).
using step_plan = model::plan<model::detail::step_tensors<0, plan::max_tensors>, model::detail::step_ops<0, plan::max_ops>>;
/// The propagation of a plan of `Plan`'s capacities.
template <class Plan>
using propagation_of = model::propagation<Plan::max_tensors, model::default_max_reshards(Plan::max_ops)>;

namespace detail {

using tensor_span = std::span<const model::tensor_id>;

template <class Plan, std::size_t I>
void add_by_name(Plan& p, tensor_span inputs, tensor_span outputs, const attribute_map& attrs, std::string_view label) {
  static constexpr auto name = model::detail::to_fixed_string<rules::registry[I].name.size()>(rules::registry[I].name);
  using rule = rules::registered_rule<rules::registry[I].rule>;
  p.template op<name>(inputs, outputs, to_attributes<typename rule::attributes>(name.view(), attrs), label);
}

/// `a` (the attributes of a rule whose attributes are `Attributes`) as an attribute map: every
/// attribute, under its first name.
template <class Attributes>
attribute_map attribute_values(const model::any_attributes& a) {
  attribute_map out;
  const auto& attrs = a.template get<Attributes>();
  boost::hana::for_each(boost::hana::accessors<Attributes>(), [&](auto member) {
    const auto& value = boost::hana::second(member)(attrs);
    using traits = member_traits<std::remove_cvref_t<decltype(value)>>;
    out.emplace(boost::hana::to<const char*>(boost::hana::first(member)), traits::to_attribute(value));
  });
  return out;
}

template <class Plan>
struct plan_entry {
  void (*add)(Plan&, tensor_span, tensor_span, const attribute_map&, std::string_view);
  attribute_map (*attributes)(const model::any_attributes&);
};
template <class Plan, std::size_t... I>
constexpr std::array<plan_entry<Plan>, sizeof...(I)> make_plan_table(std::index_sequence<I...>) {
  return {plan_entry<Plan>{&add_by_name<Plan, I>,
                           &attribute_values<typename rules::registered_rule<rules::registry[I].rule>::attributes>}...};
}
/// Per registry entry (`rule_table`'s order), how to add its operator to a `Plan`.
template <class Plan>
inline constexpr auto plan_table = make_plan_table<Plan>(std::make_index_sequence<rules::registry.size()>{});

template <class Plan>
const plan_entry<Plan>& plan_entry_of(std::string_view op) {
  return plan_table<Plan>[static_cast<std::size_t>(&rule(op) - rule_table.data())];
}

}  // namespace detail

/// Adds operator `op` (a registered name) reading `inputs` and writing `outputs`, with attributes
/// `attrs`, to `p`: what `p.op<op>(inputs, outputs, attributes, label)` adds. An unknown name is
/// `not_found` (with the closest names), a bad attribute `invalid_argument`, and the plan's own
/// checks (operands, declared output shapes) raise as `op` does.
template <std::size_t T, std::size_t O>
void add_operator(model::plan<T, O>& p, std::string_view op, std::span<const model::tensor_id> inputs,
                  std::span<const model::tensor_id> outputs, const attribute_map& attrs = {}, std::string_view label = "") {
  detail::plan_entry_of<model::plan<T, O>>(op).add(p, inputs, outputs, attrs, label);
}

/// Operator `o`'s attributes as an attribute map (every attribute, defaults included): what
/// `add_operator` reads back into the same attributes.
inline attribute_map operator_attributes(const model::operator_info& o) {
  return detail::plan_entry_of<plan>(o.rule).attributes(o.attributes);
}

/// The propagation of `p` (result-returning: check `ok()`), on the heap.
template <std::size_t T, std::size_t O>
std::unique_ptr<model::propagation<T, model::default_max_reshards(O)>> propagate(const model::plan<T, O>& p,
                                                                               model::propagate_options options = {}) {
  constexpr std::size_t R = model::default_max_reshards(O);
  auto out = std::make_unique<model::propagation<T, R>>();
  model::detail::propagator<T, O, R> run(p, *out, options);
  run.start();
  run.resume(static_cast<std::size_t>(-1));
  return out;
}

/// The training step of `forward` (see `model::training_step`), on the heap.
inline std::unique_ptr<step_plan> training_step(const plan& forward, model::tensor_id loss,
                                                const model::training_options& options = {}) {
  auto step = std::make_unique<step_plan>(forward.mesh(), forward.semantics());
  const auto state = std::make_unique<model::detail::step_state<plan::max_tensors, step_plan::max_tensors>>();
  model::detail::step_builder<plan::max_tensors, plan::max_ops, step_plan::max_tensors, step_plan::max_ops>(
      forward, *step, *state, options)
      .build(loss);
  return step;
}

/// The cost of training step `step` whose propagation is `r` on cluster `c` (`model::cost`),
/// computed on the heap (its scratch is some MB for a `step_plan`).
template <std::size_t T, std::size_t O, std::size_t R>
model::step_cost cost(const model::plan<T, O>& step, const model::propagation<T, R>& r, const model::cluster& c) {
  const auto k = std::make_unique<model::detail::coster<T, O, R>>(step, r);
  k->resume(static_cast<std::size_t>(-1));
  return k->result(c);
}

/// The pipeline report of step `step` whose propagation is `r` (`model::pipeline`), its cost
/// computed on the heap.
template <std::size_t T, std::size_t O, std::size_t R>
model::pipeline_report pipeline(const model::plan<T, O>& step, const model::propagation<T, R>& r,
                                const model::pipeline_options& o, const model::cluster& c) {
  const std::int64_t block = model::detail::pipeline_block(step, r, o);
  const auto k = std::make_unique<model::detail::coster<T, O, R>>(step, r, nullptr, block);
  k->resume(static_cast<std::size_t>(-1));
  return model::detail::pipeline_of(step, r, o, c, k->result(c), block);
}

}  // namespace ctspmd::runtime

#endif
