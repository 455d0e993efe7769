#ifndef CTSPMD_RULES_RULE_BASE_HPP
#define CTSPMD_RULES_RULE_BASE_HPP
/// \file The public entry points every rule shares, and checks rules run at their entry.

#include <cstddef>
#include <initializer_list>
#include <span>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/dist_tensor_spec.hpp>
#include <ctspmd/dist/spmd_info.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>

namespace ctspmd {

/// Operand specs as rules read them.
using spec_span = std::span<const dist_tensor_spec>;

namespace rules::detail {

/// Gives a rule `Rule` (which defines `name`, `forward(spmd_info&, spec_span, const Attributes&)`
/// and `backward(spmd_info&, spec_span, spec_span, const Attributes&)`, both appending the
/// inferred attrs to an empty `spmd_info` and returning a `status`) its public API:
/// `try_infer_forward` / `try_infer_backward` (result-returning), `infer_forward` /
/// `infer_backward` (throwing; a compile error in constant evaluation), each over a span or a
/// braced list of `dist_tensor_spec`, and `try_infer_forward_into` / `try_infer_backward_into`
/// (writing into a given `spmd_info`, returning a `status`). Errors are reported under the
/// rule's name, and all operands must live on one process mesh.
///
/// Why an out-parameter inside: an `spmd_info` is large (two vectors of `max_operands` attrs).
/// Written once where the caller receives it (the named return value of `infer_forward`, the
/// value inside `try_infer_forward`'s result), it is never copied on the way out; returned
/// through a `result` at each layer it was copied at each.
template <class Rule, class Attributes>
struct rule_base {
  using attributes = Attributes;
  using inputs_list = std::initializer_list<dist_tensor_spec>;

  /// Forward inference into `info` (empty): ok, or the error (then `info` is unspecified).
  static constexpr status try_infer_forward_into(spmd_info& info, spec_span inputs, const Attributes& attrs = {}) {
    if (auto s = check_one_mesh(inputs, {}); !s) return named(s.error());
    if (auto s = Rule::forward(info, inputs, attrs); !s) return named(s.error());
    return {};
  }
  /// Backward inference into `info` (empty): ok, or the error (then `info` is unspecified).
  static constexpr status try_infer_backward_into(spmd_info& info, spec_span inputs, spec_span outputs,
                                                  const Attributes& attrs = {}) {
    if (auto s = check_one_mesh(inputs, outputs); !s) return named(s.error());
    if (auto s = Rule::backward(info, inputs, outputs, attrs); !s) return named(s.error());
    return {};
  }

  static constexpr result<spmd_info> try_infer_forward(spec_span inputs, const Attributes& attrs = {}) {
    result<spmd_info> r{spmd_info{}};  // one returned object (so it is built in place), filled in place
    if (auto s = try_infer_forward_into(*r, inputs, attrs); !s) r = s.error();
    return r;
  }
  static constexpr result<spmd_info> try_infer_forward(inputs_list inputs, const Attributes& attrs = {}) {
    return try_infer_forward(as_span(inputs), attrs);
  }
  static constexpr result<spmd_info> try_infer_backward(spec_span inputs, spec_span outputs,
                                                        const Attributes& attrs = {}) {
    result<spmd_info> r{spmd_info{}};
    if (auto s = try_infer_backward_into(*r, inputs, outputs, attrs); !s) r = s.error();
    return r;
  }
  static constexpr result<spmd_info> try_infer_backward(inputs_list inputs, inputs_list outputs,
                                                        const Attributes& attrs = {}) {
    return try_infer_backward(as_span(inputs), as_span(outputs), attrs);
  }

  static constexpr spmd_info infer_forward(spec_span inputs, const Attributes& attrs = {}) {
    spmd_info info;
    try_infer_forward_into(info, inputs, attrs).check();
    return info;
  }
  static constexpr spmd_info infer_forward(inputs_list inputs, const Attributes& attrs = {}) {
    return infer_forward(as_span(inputs), attrs);
  }
  static constexpr spmd_info infer_backward(spec_span inputs, spec_span outputs, const Attributes& attrs = {}) {
    spmd_info info;
    try_infer_backward_into(info, inputs, outputs, attrs).check();
    return info;
  }
  static constexpr spmd_info infer_backward(inputs_list inputs, inputs_list outputs, const Attributes& attrs = {}) {
    return infer_backward(as_span(inputs), as_span(outputs), attrs);
  }

 private:
  static constexpr spec_span as_span(inputs_list l) noexcept { return {l.begin(), l.size()}; }
  static constexpr error_info named(error_info e) {
    e.op = Rule::name;
    return e;
  }
  static constexpr status check_one_mesh(spec_span inputs, spec_span outputs) {
    if (inputs.size() > max_operands || outputs.size() > max_operands)
      return make_error(error_kind::invalid_argument, "", "{} inputs and {} outputs exceed max_operands = {}",
                        inputs.size(), outputs.size(), max_operands);
    const dist_tensor_spec* first = !inputs.empty() ? &inputs[0] : !outputs.empty() ? &outputs[0] : nullptr;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (!(inputs[i].process_mesh() == first->process_mesh()))
        return make_error(error_kind::invalid_argument, "", "input {} is on another process mesh than the first operand", i);
    for (std::size_t i = 0; i < outputs.size(); ++i)
      if (!(outputs[i].process_mesh() == first->process_mesh()))
        return make_error(error_kind::invalid_argument, "", "output {} is on another process mesh than the first operand",
                          i);
    return {};
  }
};

/// Checks that a rule got `expected` operands of a kind ("inputs" / "outputs").
constexpr status check_count(spec_span specs, std::size_t expected, bool outputs = false) {
  if (specs.size() != expected)
    return make_error(error_kind::invalid_argument, "", outputs ? "expects {} outputs, got {}" : "expects {} inputs, got {}",
                      expected, specs.size());
  return {};
}

/// A dist attr on `src`'s mesh (and batch dim) with the dims mapping of `axes` under `map`.
constexpr tensor_dist_attr mapped(const tensor_dist_attr& src, std::string_view axes, const axis_to_dim_map& map,
                                  bool unsharded_miss_axis = false) {
  tensor_dist_attr a(src.process_mesh());
  ctspmd::detail::tensor_dist_attr_access::assign_mapped(a, src, axes, map, unsharded_miss_axis);
  return a;
}

}  // namespace rules::detail
}  // namespace ctspmd

#endif
