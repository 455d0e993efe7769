#ifndef CTSPMD_RULES_PAD_GRAD_HPP
#define CTSPMD_RULES_PAD_GRAD_HPP
/// \file The pad grad rule (`pad_grad`; phi, called forward): x_grad = out_grad without the
/// padding, i.e. out_grad[paddings[2d] : size - paddings[2d + 1]] along each dim d.
///
/// Operands: one input, out_grad, and one output, x_grad, as Paddle's grad rule
/// (PadGradInferSpmdDynamic(out_grad, paddings, pad_value)) takes them. (Paddle's `pad_grad`
/// operator also lists x, which its kernel does not read; the rule does not take it. Paddle's
/// PadGradInferSpmd(x, out, ...) is the reverse rule registered in the grad slot, not a grad
/// rule.) Attributes as pad (pad.hpp): `paddings`, two entries >= 0 per dim of out_grad (an
/// `invalid_argument` naming the count or the entry otherwise), and `pad_value`, not read. A
/// known size of out_grad must be at least its dim's two paddings (x's size is the difference).
///
/// Notation: out_grad and x_grad get the first rank letters of `abcdefghijklmnopqrstuvwxyz`,
/// `'1'` at every dim with a non-zero padding.
///
/// Inference (Paddle's: the pad rule run on out_grad): out_grad's mapping with its padded dims
/// replicated (a shard of a padded dim does not line up with the shard of the unpadded one) is
/// merged alone; out_grad is required with it and x_grad takes it. Partial: slicing selects
/// elements, which commutes with every reduction, so out_grad's partial status is kept on
/// out_grad and x_grad (Paddle clears it on both). The same under both semantics but for the
/// merge policy. Backward (reverse) inference: none.

#include <cstddef>
#include <cstdint>
#include <limits>

#include <ctspmd/core/error.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/pad.hpp>

namespace ctspmd::rules {

/// The pad grad rule.
struct pad_grad : rule_base<pad_grad, pad_attributes> {
  static constexpr std::string_view name = "pad_grad";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};   // out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: out_grad's sizes less the paddings.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    CTSPMD_TRY(notate(in[0].shape(), attrs));
    tensor_shape& o = out.emplace_back(in[0].shape());
    for (std::size_t d = 0; d < o.size(); ++d)
      if (o[d] >= 0) o[d] -= attrs.paddings[2 * d] + attrs.paddings[2 * d + 1];
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& g = in[0];
    const auto labels = notate(g.shape(), attrs);
    if (!labels) return labels.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, *labels, g, s));
    add_unsharded_partial_of(push(info.inputs, g.dist_attr(), *labels, map), g.dist_attr());
    add_unsharded_partial_of(push(info.outputs, g.dist_attr(), *labels, map), g.dist_attr());
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }

 private:
  static constexpr result<axes_string> notate(const tensor_shape& g, const attributes& attrs) {
    if (attrs.paddings.size() != 2 * g.size())
      return make_error(error_kind::invalid_argument, "", "paddings has {} entries, but out_grad of rank {} needs {}",
                        attrs.paddings.size(), g.size(), 2 * g.size());
    const auto letters = first_letters(static_cast<std::int64_t>(g.size()));
    if (!letters) return letters.error();
    axes_string labels(*letters);
    for (std::size_t d = 0; d < g.size(); ++d) {
      const std::int64_t before = attrs.paddings[2 * d];
      const std::int64_t after = attrs.paddings[2 * d + 1];
      if (before < 0 || after < 0)
        return make_error(error_kind::invalid_argument, "", "dim {} has paddings {} and {}; a padding is >= 0", d,
                          before, after);
      // before + after cannot overflow: each is at most half of int64's range here
      const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / 2;
      if (before > limit || after > limit)
        return make_error(error_kind::invalid_argument, "", "dim {} has paddings {} and {}, too large", d, before,
                          after);
      if (g[d] >= 0 && g[d] < before + after)
        return make_error(error_kind::invalid_argument, "",
                          "out_grad dim {} has size {}, less than its paddings {} and {}", d, g[d], before, after);
      if (before != 0 || after != 0) labels[d] = broadcast_label;
    }
    return labels;
  }
};

}  // namespace ctspmd::rules

#endif
