#ifndef CTSPMD_RULES_EXPAND_AS_GRAD_HPP
#define CTSPMD_RULES_EXPAND_AS_GRAD_HPP
/// \file The expand_as grad rule (`expand_as_grad`; phi, called forward): x_grad = out_grad
/// summed over the dims x was broadcast along (the leading dims x lacks, and the dims where x has
/// size 1 and out_grad not).
///
/// Operands, as Paddle's ExpandAsGradInferSpmd(x, out_grad, target_shape) and its `expand_as_grad`
/// operator take them: inputs x (read for its shape only) and out_grad; output x_grad, of x's
/// shape. Attribute `target_shape` as expand_as's (expand_as.hpp): the forward output's shape;
/// when given (non-empty) out_grad's rank and known sizes must be its. Checks (`invalid_argument`,
/// naming the values): x's rank at most out_grad's; each x dim equal to the out_grad dim it
/// aligns with (right-aligned), or 1, where both sizes are known (-1 matches anything).
///
/// Notation: out_grad gets the first rank letters of `abcdefghijklmnopqrstuvwxyz`; x dim i the
/// letter of the out_grad dim it aligns with, or `'1'` where x has size 1 and out_grad not.
///
/// Inference (Paddle's): out_grad decides. Its mapping is merged alone and out_grad is required
/// with it; x follows it at its non-broadcast dims (x's values are not read, so its own mapping
/// does not count; its broadcast dims are replicated); x_grad is out_grad's mapping without the
/// leading dims and with the broadcast dims replicated, partial (sum) on the mesh dims of those
/// leading and broadcast dims (each device sums over its block of them:
/// `reduce_grad_broadcast_dims`, kit/labels_and_merges.hpp). Paddle's test (mesh [2, 3], x [1, 48] replicated,
/// out_grad [2, 32, 48] [0, 1, -1]) gives x_grad [-1, -1] partial on mesh dims 0 and 1; so does
/// this rule. Partial out_grad: the sum over broadcast dims commutes with sum and avg parts, so
/// that partial status is kept on out_grad and passes to x_grad (Paddle clears it on x_grad);
/// other reduce types must be reduced first (a sum of maxima is not the maximum of sums).
/// x comes back not partial.
///
/// The same under both semantics but for the merge policy (out_grad merged alone gives its own
/// mapping under both). Backward (reverse) inference: none.

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/expand_as.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// The expand_as grad rule.
struct expand_as_grad : rule_base<expand_as_grad, expand_as_attributes> {
  static constexpr std::string_view name = "expand_as_grad";
  static constexpr operand_count input_count{2};   // x, out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& g = in[1];
    const std::size_t r = x.shape().size();
    const std::size_t n = g.shape().size();
    if (r > n)
      return make_error(error_kind::invalid_argument, "", "x has rank {}, above out_grad's rank {}", r, n);
    if (!attrs.target_shape.empty()) {
      if (attrs.target_shape.size() != n)
        return make_error(error_kind::invalid_argument, "", "out_grad has rank {}, but target_shape has {} entries", n,
                          attrs.target_shape.size());
      CTSPMD_TRY(check_same_sizes(g.shape(), attrs.target_shape, "out_grad dim {} has size {}, but target_shape gives {}"));
    }
    const auto letters = first_letters(static_cast<std::int64_t>(n));
    if (!letters) return letters.error();
    axes_string xl;
    for (std::size_t i = 0; i < r; ++i) {
      const std::size_t j = i + n - r;
      const std::int64_t a = x.shape()[i], b = g.shape()[j];
      if (a != -1 && b != -1 && a != b && a != 1)
        return make_error(error_kind::invalid_argument, "",
                          "x dim {} has size {}, which neither equals out_grad dim {} ({}) nor is 1", i, a, j, b);
      xl.push_back(a == 1 && b != 1 ? broadcast_label : (*letters)[j]);
    }
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, *letters, g, s));
    push(info.inputs, x.dist_attr(), xl, map);
    const auto& grad = add_unsharded_partial_of(push(info.inputs, g.dist_attr(), *letters, map), g.dist_attr(),
                                                /*linear_only=*/true);
    info.outputs.push_back(reduce_grad_broadcast_dims(grad, g.shape(), x.shape()));
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
