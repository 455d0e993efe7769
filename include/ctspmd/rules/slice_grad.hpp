#ifndef CTSPMD_RULES_SLICE_GRAD_HPP
#define CTSPMD_RULES_SLICE_GRAD_HPP
/// \file The slice grad rules (`slice_grad`, `strided_slice_grad`; phi, called forward).
///
/// Operands, as Paddle's SliceGradInferSpmdDynamic / StridedSliceGradInferSpmdDynamic and the
/// `slice_grad` / `strided_slice_grad` operators take them: inputs x (the forward input, read for
/// its shape only) and out_grad; output x_grad, of x's shape: zero outside the slice, out_grad
/// inside. Attributes as slice / strided_slice (slice.hpp), with the same checks; out_grad's rank
/// must be rank(x) minus the decreased dims and its known sizes the slice's (an
/// `invalid_argument` naming the dim and the sizes otherwise).
///
/// Notation: slice.hpp's: x gets `abcd...` with `'1'` at every sliced axis, out_grad x's labels
/// without the decreased dims.
///
/// Inference (phi-semantics.md section 2: "sliced axes unsharded in input and out_grad, then
/// merged"): out_grad and x are merged in that order, as Paddle does (fluid: first-wins, so
/// out_grad's sharding wins a conflict; phi: the co-shard union), with every sliced axis
/// replicated in both; x, out_grad and x_grad take the merged mapping. (A shard of a sliced dim of
/// x_grad does not line up with the shard of out_grad at the same place, hence the replication;
/// Paddle unshards the same axes, also for strided_slice, whose forward keeps one special case.)
/// Paddle applies `decrease_axis` here (it ignores it in SliceInferSpmd), as slice.hpp does too.
///
/// Partial: scattering out_grad into zeros commutes with every reduction (parts of zero combine
/// to zero under sum, avg, max, min, prod, any and all), so out_grad's partial status is kept on
/// out_grad and x_grad on every mesh dim the merged mapping does not shard (where it does,
/// out_grad must be reduced first). Paddle keeps it on out_grad but clears it on x_grad, which
/// labels a sum of parts as a whole value; we do not copy that. x is read for its shape only: it
/// comes back with the merged mapping and no partial status.
///
/// Both rules exist only in phi and behave the same under both semantics except for the merge
/// policy. Backward (reverse) inference: none (a grad rule is called forward).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <ctspmd/core/error.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/slice.hpp>

namespace ctspmd::rules {

namespace detail {

/// slice_grad from the slice's labels `n`: inputs x and out_grad, output x_grad.
constexpr status slice_grad_forward(spmd_info& info, spec_span in, const slice_notation& n, semantics s) {
  const auto& x = in[0];
  const auto& g = in[1];
  if (g.shape().size() != n.out.size())
    return make_error(error_kind::invalid_argument, "", "out_grad has rank {}, but the slice of x has rank {}", g.ndim(),
                      n.out.size());
  CTSPMD_TRY(check_same_sizes(g.shape(), n.out_shape, "out_grad dim {} has size {}, but the slice of x gives {}"));
  // out_grad first: under first-wins its sharding wins a conflict (Paddle's order).
  const std::array<std::string_view, 2> labels{n.out.view(), n.x.view()};
  const std::array<dist_tensor_spec, 2> specs{g, x};
  axis_to_dim_map map;
  CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), spec_span(specs), s));
  push(info.inputs, x.dist_attr(), n.x, map);
  add_unsharded_partial_of(push(info.inputs, g.dist_attr(), n.out, map), g.dist_attr());
  add_unsharded_partial_of(push(info.outputs, x.dist_attr(), n.x, map), g.dist_attr());
  return {};
}

}  // namespace detail

/// The slice grad rule.
struct slice_grad : rule_base<slice_grad, slice_attributes> {
  static constexpr std::string_view name = "slice_grad";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{2};   // x, out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    const auto n = detail::notate_slice(in[0].shape(), a.axes, a.starts, a.ends, {}, a.decrease_axis);
    if (!n) return n.error();
    return detail::slice_grad_forward(info, in, *n, s);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

/// The strided_slice grad rule.
struct strided_slice_grad : rule_base<strided_slice_grad, strided_slice_attributes> {
  static constexpr std::string_view name = "strided_slice_grad";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{2};   // x, out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    if (a.strides.size() != a.axes.size())
      return make_error(error_kind::invalid_argument, "", "axes has {} entries, but strides has {}", a.axes.size(),
                        a.strides.size());
    const auto n = detail::notate_slice(in[0].shape(), a.axes, a.starts, a.ends, a.strides, {});
    if (!n) return n.error();
    return detail::slice_grad_forward(info, in, *n, s);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
