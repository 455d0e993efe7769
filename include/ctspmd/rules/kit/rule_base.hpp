#ifndef CTSPMD_RULES_KIT_RULE_BASE_HPP
#define CTSPMD_RULES_KIT_RULE_BASE_HPP
/// \file The rule contract (`SpmdRule`), the public entry points every rule shares
/// (`rule_base`), and the two semantics a rule can follow.
///
/// A rule is a struct with
/// - `name`: a `std::string_view`, the name its errors carry;
/// - `attributes`: an aggregate with Paddle's defaults, adapted with `BOOST_HANA_ADAPT_STRUCT`
///   (the runtime layer and the JSON tool fill it by name);
/// - `input_count` and `output_count`: `operand_count`s, how many operands each side takes
///   (checked before the rule runs; the fuzzer and the tool read them);
/// - `forward(spmd_info&, spec_span inputs, const attributes&, semantics)` and
///   `backward(spmd_info&, spec_span inputs, spec_span outputs, const attributes&, semantics)`,
///   each appending the inferred attrs to an empty `spmd_info` and returning a `status`;
/// - optionally, `output_shapes(shape_list& out, spec_span inputs, const attributes&)`, a
///   `status`: appends to an empty `out` one shape per output, derived from the inputs' shapes
///   (only their shapes are read) and the attributes, or returns the error the inputs' shapes
///   give (e.g. a matmul's k sizes that differ). A dim it cannot know (an input's size is -1,
///   unknown) is written -1, which matches any declared size. A rule whose output shapes depend
///   on data leaves it out. A plan (model/plan.hpp) checks every operator whose rule has it
///   (`HasOutputShapes`) against the shapes the plan declares for its outputs; without it only
///   the outputs' ranks are checked, during propagation;
/// - optionally, its cost traits: `kind`, `flops` and `bytes` (rules/kit/cost_traits.hpp), each with
///   a default by kind.
/// Deriving from `rule_base<Rule, Attributes>` gives it its public API. rules/kit/labels_and_merges.hpp has the
/// pieces rules are written with; registry/rules_by_name.hpp checks every registered rule against
/// `SpmdRule` and names the first requirement it misses.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <type_traits>

#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/dist_tensor_spec.hpp>
#include <ctspmd/dist/spmd_info.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/rules/kit/cost_traits.hpp>

namespace ctspmd {

/// Operand specs as rules read them.
using spec_span = std::span<const dist_tensor_spec>;

/// Which of Paddle's two generations of rules a call follows: `fluid` (2023, the default; one
/// mesh dim per axis, conflicts are errors or first-wins) or `phi` (2025: co-shard, merges that
/// turn conflicting proposals into co-shards, phi's partial handling). Each rule's header says
/// where the two differ for it.
enum class semantics : std::uint8_t { fluid, phi };

/// The name of a semantics ("fluid", "phi").
constexpr std::string_view to_string(semantics s) noexcept { return s == semantics::phi ? "phi" : "fluid"; }

/// How many operands one side of a rule takes: between `min` and `max`.
struct operand_count {
  std::size_t min = 0;
  std::size_t max = 0;
  /// Exactly n.
  constexpr operand_count(std::size_t n) noexcept : min(n), max(n) {}  // NOLINT: a count by design
  constexpr operand_count(std::size_t lo, std::size_t hi) noexcept : min(lo), max(hi) {}
  /// n or more (up to max_operands).
  static constexpr operand_count at_least(std::size_t n) noexcept { return {n, max_operands}; }
  constexpr bool accepts(std::size_t n) const noexcept { return n >= min && n <= max; }
  friend constexpr bool operator==(operand_count, operand_count) = default;
};

/// A second name an attribute is accepted under by name (phi's `keepdim` for fluid's
/// `keep_dim`). An attributes struct lists its own as
/// `static constexpr std::array<attribute_alias, N> aliases{{{"keepdim", "keep_dim"}}};`.
struct attribute_alias {
  std::string_view alias;
  std::string_view name;
};

/// Output shapes, as a rule's optional `output_shapes` derives them (one per output).
using shape_list = static_vector<tensor_shape, max_operands>;

/// The rule contract (see the file comment).
template <class R>
concept SpmdRule =
    requires { typename R::attributes; } && std::is_aggregate_v<typename R::attributes> &&
    std::is_default_constructible_v<typename R::attributes> && std::is_copy_assignable_v<typename R::attributes> &&
    std::is_copy_constructible_v<typename R::attributes> &&
    requires(spmd_info& info, spec_span specs, const typename R::attributes& attrs, semantics s) {
      { R::name } -> std::convertible_to<std::string_view>;
      { R::input_count } -> std::convertible_to<operand_count>;
      { R::output_count } -> std::convertible_to<operand_count>;
      { R::forward(info, specs, attrs, s) } -> std::same_as<status>;
      { R::backward(info, specs, specs, attrs, s) } -> std::same_as<status>;
    };

/// Whether rule `R` derives its outputs' shapes (`output_shapes`, see the file comment).
template <class R>
concept HasOutputShapes = requires(shape_list& out, spec_span specs, const typename R::attributes& attrs) {
  { R::output_shapes(out, specs, attrs) } -> std::same_as<status>;
};

/// Gives a rule `Rule` (see `SpmdRule`) its public API: `try_infer_forward` /
/// `try_infer_backward` (result-returning), `infer_forward` / `infer_backward` (throwing; a
/// compile error in constant evaluation), each over a span or a braced list of
/// `dist_tensor_spec`, and `try_infer_forward_into` / `try_infer_backward_into` (writing into a
/// given `spmd_info`, returning a `status`). Each takes the attributes and the semantics
/// (`fluid` by default). Before the rule runs, the operand counts are checked against its
/// `input_count` / `output_count` and all operands must live on one process mesh; errors are
/// reported under the rule's name. A rule with `output_shapes` also gets `try_output_shapes`
/// (the input count checked, errors under the rule's name).
///
/// Why an out-parameter inside: an `spmd_info` holds two vectors of `max_operands` attrs.
/// Written once where the caller receives it (the named return value of `infer_forward`, the
/// value inside `try_infer_forward`'s result), it is never copied on the way out.
template <class Rule, class Attributes>
struct rule_base {
  using attributes = Attributes;
  using inputs_list = std::initializer_list<dist_tensor_spec>;

  /// Forward inference into `info` (empty): ok, or the error (then `info` is unspecified).
  static constexpr status try_infer_forward_into(spmd_info& info, spec_span inputs, const Attributes& attrs = {},
                                                 semantics s = semantics::fluid) {
    static_assert(SpmdRule<Rule>, "a rule must satisfy ctspmd::SpmdRule (see rules/kit/rule_base.hpp)");
    if (auto c = check_operands(inputs, {}, false); !c) return named(c.error());
    if (auto r = Rule::forward(info, inputs, attrs, s); !r) return named(r.error());
    return {};
  }
  /// Backward inference into `info` (empty): ok, or the error (then `info` is unspecified).
  static constexpr status try_infer_backward_into(spmd_info& info, spec_span inputs, spec_span outputs,
                                                  const Attributes& attrs = {}, semantics s = semantics::fluid) {
    static_assert(SpmdRule<Rule>, "a rule must satisfy ctspmd::SpmdRule (see rules/kit/rule_base.hpp)");
    if (auto c = check_operands(inputs, outputs, true); !c) return named(c.error());
    if (auto r = Rule::backward(info, inputs, outputs, attrs, s); !r) return named(r.error());
    return {};
  }

  static constexpr result<spmd_info> try_infer_forward(spec_span inputs, const Attributes& attrs = {},
                                                       semantics s = semantics::fluid) {
    result<spmd_info> r{spmd_info{}};  // one returned object (so it is built in place), filled in place
    if (auto st = try_infer_forward_into(*r, inputs, attrs, s); !st) r = st.error();
    return r;
  }
  static constexpr result<spmd_info> try_infer_forward(inputs_list inputs, const Attributes& attrs = {},
                                                       semantics s = semantics::fluid) {
    return try_infer_forward(as_span(inputs), attrs, s);
  }
  static constexpr result<spmd_info> try_infer_backward(spec_span inputs, spec_span outputs,
                                                        const Attributes& attrs = {}, semantics s = semantics::fluid) {
    result<spmd_info> r{spmd_info{}};
    if (auto st = try_infer_backward_into(*r, inputs, outputs, attrs, s); !st) r = st.error();
    return r;
  }
  static constexpr result<spmd_info> try_infer_backward(inputs_list inputs, inputs_list outputs,
                                                        const Attributes& attrs = {}, semantics s = semantics::fluid) {
    return try_infer_backward(as_span(inputs), as_span(outputs), attrs, s);
  }

  /// The outputs' shapes (see `HasOutputShapes`), or the error the inputs' shapes give.
  /// (A template, so that the rule is complete when it is checked.)
  template <class R = Rule>
  static constexpr result<shape_list> try_output_shapes(spec_span inputs, const Attributes& attrs = {}) {
    static_assert(HasOutputShapes<R>, "this rule does not derive its output shapes");
    result<shape_list> r{shape_list{}};
    if (auto c = check_count(inputs.size(), R::input_count, false); !c) return named(c.error());
    if (auto st = R::output_shapes(*r, inputs, attrs); !st) r = named(st.error());
    return r;
  }
  template <class R = Rule>
  static constexpr result<shape_list> try_output_shapes(inputs_list inputs, const Attributes& attrs = {}) {
    return try_output_shapes<R>(as_span(inputs), attrs);
  }

  static constexpr spmd_info infer_forward(spec_span inputs, const Attributes& attrs = {},
                                           semantics s = semantics::fluid) {
    spmd_info info;
    try_infer_forward_into(info, inputs, attrs, s).check();
    return info;
  }
  static constexpr spmd_info infer_forward(inputs_list inputs, const Attributes& attrs = {},
                                           semantics s = semantics::fluid) {
    return infer_forward(as_span(inputs), attrs, s);
  }
  static constexpr spmd_info infer_backward(spec_span inputs, spec_span outputs, const Attributes& attrs = {},
                                            semantics s = semantics::fluid) {
    spmd_info info;
    try_infer_backward_into(info, inputs, outputs, attrs, s).check();
    return info;
  }
  static constexpr spmd_info infer_backward(inputs_list inputs, inputs_list outputs, const Attributes& attrs = {},
                                            semantics s = semantics::fluid) {
    return infer_backward(as_span(inputs), as_span(outputs), attrs, s);
  }

 private:
  static constexpr spec_span as_span(inputs_list l) noexcept { return {l.begin(), l.size()}; }
  static constexpr error_info named(error_info e) {
    e.op = Rule::name;
    return e;
  }
  static constexpr status check_count(std::size_t got, operand_count want, bool outputs) {
    if (want.accepts(got)) return {};
    if (want.min == want.max)
      return make_error(error_kind::invalid_argument, "",
                        outputs ? (want.min == 1 ? "expects {} output, got {}" : "expects {} outputs, got {}")
                                : (want.min == 1 ? "expects {} input, got {}" : "expects {} inputs, got {}"),
                        want.min, got);
    if (want.max == max_operands)  // values: got, then the minimum
      return make_error(error_kind::invalid_argument, "",
                        outputs ? (want.min == 1 ? "expects at least {1} output, got {0}" : "expects at least {1} outputs, got {0}")
                                : (want.min == 1 ? "expects at least {1} input, got {0}" : "expects at least {1} inputs, got {0}"),
                        got, want.min);
    return make_error(error_kind::invalid_argument, "",
                      outputs ? "expects {} to {} outputs, got {}" : "expects {} to {} inputs, got {}", want.min,
                      want.max, got);
  }
  /// Operand counts (outputs only backward) and one mesh for all operands.
  static constexpr status check_operands(spec_span inputs, spec_span outputs, bool backward) {
    CTSPMD_TRY(check_count(inputs.size(), Rule::input_count, false));
    if (backward) CTSPMD_TRY(check_count(outputs.size(), Rule::output_count, true));
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

}  // namespace ctspmd

#endif
