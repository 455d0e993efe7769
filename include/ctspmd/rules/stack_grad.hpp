#ifndef CTSPMD_RULES_STACK_GRAD_HPP
#define CTSPMD_RULES_STACK_GRAD_HPP
/// \file The stack grad rule (`stack_grad`; phi, called forward): the gradients of stack's inputs
/// are out_grad's slices along the stacked axis, each without that dim.
///
/// Operands, as Paddle's StackGradInferSpmd(out_grad, axis) takes them: one input, out_grad, and
/// one output per stacked input. (Paddle's `stack_grad` operator also lists the inputs x, only to
/// count them; the rule does not take them.) The number of gradients is out_grad's size at `axis`,
/// as Paddle's rule counts them (and as unbind counts its outputs): it must be known and in
/// [1, max_operands] (an `invalid_argument` naming the size otherwise). Attribute `axis` as
/// stack's (concat.hpp), the stacked dim of out_grad, in [-rank, rank) of out_grad (negative
/// counts from the end; an `invalid_argument` otherwise).
///
/// Notation: out_grad gets the first rank letters of `abcdefghijklmnopqrstuvwxyz`, `'1'` at
/// `axis`; every gradient gets out_grad's letters without `axis`.
///
/// Inference (Paddle's): out_grad's mapping with `axis` replicated (a slice of the axis is held
/// whole by one device only when the axis is replicated) is merged alone; out_grad is required
/// with it and every gradient takes it without `axis`. Partial: slicing selects elements, which
/// commutes with every reduction, so out_grad's partial status is kept on out_grad and on every
/// gradient (Paddle keeps it on out_grad and clears it on the gradients, which labels parts as
/// whole values; phi-shape.md section 9, bug 7 is the same flaw in unbind). The same under both
/// semantics but for the merge policy. Backward (reverse) inference: none.
///
/// unbind's gradient (`unbind_grad`, Paddle's operator of that name) stacks the output gradients:
/// Paddle gives it no rule of its own but invokes stack, so `unbind_grad` is registered as the
/// stack rule (concat.hpp). (Paddle's `split_grad` likewise invokes concat; it is not registered
/// here: its `axis` defaults to -1, concat's to 0.)

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/concat.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// The stack grad rule.
struct stack_grad : rule_base<stack_grad, stack_attributes> {
  static constexpr std::string_view name = "stack_grad";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};                             // out_grad
  static constexpr operand_count output_count = operand_count::at_least(1);  // out_grad.shape[axis]

  /// out_grad.shape[axis] gradients, each out_grad's shape without the axis.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto& g = in[0].shape();
    const auto axis = normalize_axis(attrs.axis, in[0].ndim(), "axis {} is out of range for out_grad of rank {}");
    if (!axis) return axis.error();
    const std::int64_t count = g[*axis];
    if (count < 1 || count > static_cast<std::int64_t>(max_operands))
      return make_error(error_kind::invalid_argument, "",
                        "out_grad has size {} on axis {}, which must be known and in [1, {}] (the number of gradients)",
                        count, attrs.axis, max_operands);
    for (std::int64_t i = 0; i < count; ++i) {
      tensor_shape& o = out.emplace_back();
      for (std::size_t d = 0; d < g.size(); ++d)
        if (d != *axis) o.push_back(g[d]);
    }
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& g = in[0];
    const std::int64_t rank = g.ndim();
    const auto axis = normalize_axis(attrs.axis, rank, "axis {} is out of range for out_grad of rank {}");
    if (!axis) return axis.error();
    const std::int64_t count = g.shape()[*axis];
    if (count < 1 || count > static_cast<std::int64_t>(max_operands))
      return make_error(error_kind::invalid_argument, "",
                        "out_grad has size {} on axis {}, which must be known and in [1, {}] (the number of gradients)",
                        count, attrs.axis, max_operands);
    const auto letters = first_letters(rank);
    if (!letters) return letters.error();
    axes_string out(*letters), part;
    out[*axis] = broadcast_label;
    for (std::size_t d = 0; d < out.size(); ++d)
      if (d != *axis) part.push_back(out[d]);
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, out, g, s));
    add_unsharded_partial_of(push(info.inputs, g.dist_attr(), out, map), g.dist_attr());
    for (std::int64_t i = 0; i < count; ++i)
      add_unsharded_partial_of(push(info.outputs, g.dist_attr(), part, map), g.dist_attr());
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
