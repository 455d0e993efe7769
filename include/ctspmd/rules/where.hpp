#ifndef CTSPMD_RULES_WHERE_HPP
#define CTSPMD_RULES_WHERE_HPP
/// \file The where rule (phi): out = condition ? x : y, and its grad rule `where_grad`.
///
/// Operands: condition, x, y; condition's rank must be at least x's and y's (phi requires it:
/// `invalid_argument` naming the operand otherwise); out has condition's rank. The shapes
/// broadcast (numpy, right-aligned).
///
/// Forward: the ternary elementwise rule (elementwise.hpp): condition gets the first r letters,
/// x and y the last letters of those (right-aligned), a size-1 dim of any operand is `'1'`
/// (never sharded); the three are merged (fluid: first-wins; phi: phi's element-wise merge) and
/// every operand and the output take the merged sharding of their labels. Partial status is
/// dropped (a selection does not commute with a pending reduction of the condition; for x and y
/// it would, but phi drops it). phi merges y with x's mapping (a length mismatch in its
/// notation: phi-semantics.md section 5.2); we merge y's own mapping. phi also does not treat
/// size-1 dims as broadcast; we do (a sharded size-1 dim cannot be split).
///
/// Backward: the elementwise backward: out's mapping alone is merged and every operand takes its
/// labels' sharding (broadcast dims replicated).
///
/// `where_grad(condition, x, y, out_grad)` gives x_grad and y_grad (elementwise_grad.hpp's
/// binary grad): condition, x and y follow out_grad's layout (no merge; broadcast dims
/// replicated), out_grad's partial status is cleaned, and x_grad and y_grad are out_grad's layout
/// reduced to x's and y's shapes: partial (sum) on the mesh dims of condition's leading dims (and
/// size-1 dims) they lack, as phi's rule says.
///
/// where exists only in phi and behaves the same under both semantics except for the merge
/// policy.

#include <cstddef>
#include <cstdint>

#include <ctspmd/rules/elementwise.hpp>
#include <ctspmd/rules/elementwise_grad.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `where`: none.
struct where_attributes {};

namespace detail {
/// Checks that condition (in[0]) has rank at least x's and y's (in[1], in[2]).
constexpr status check_condition_rank(spec_span in) {
  for (std::size_t i = 1; i < 3; ++i)
    if (in[i].ndim() > in[0].ndim())
      return make_error(error_kind::invalid_argument, "", "{c} has rank {}, more than condition's rank {}",
                        i == 1 ? 'x' : 'y', in[i].ndim(), in[0].ndim());
  return {};
}
}  // namespace detail

/// The where rule (see the file comment): inputs condition, x, y; output out.
struct where : rule_base<where, where_attributes> {
  static constexpr std::string_view name = "where";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{1};

  /// condition, x and y broadcast.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    CTSPMD_TRY(detail::check_condition_rank(in));
    return elementwise::output_shapes(out, in, {});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    CTSPMD_TRY(detail::check_condition_rank(in));
    return elementwise::forward(info, in, {}, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    CTSPMD_TRY(detail::check_condition_rank(in));
    return elementwise::backward(info, in, out, {}, s);
  }
};

/// Attributes of `where_grad`: none.
struct where_grad_attributes {};

/// The where grad rule: inputs condition, x, y, out_grad; outputs x_grad, y_grad.
struct where_grad : rule_base<where_grad, where_grad_attributes> {
  static constexpr std::string_view name = "where_grad";
  static constexpr operand_count input_count{4};
  static constexpr operand_count output_count{2};

  /// x_grad and y_grad: x's and y's shapes.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {1, 2});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics) {
    CTSPMD_TRY(detail::check_condition_rank(in));
    return detail::broadcast_grad(info, in, 1, 2);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
