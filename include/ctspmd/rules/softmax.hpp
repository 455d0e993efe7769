#ifndef CTSPMD_RULES_SOFTMAX_HPP
#define CTSPMD_RULES_SOFTMAX_HPP
/// \file The softmax rule (`softmax`, `log_softmax`): out = softmax(x) along `axis`; and its
/// gradient (`softmax_grad`, `log_softmax_grad`, phi, called forward: below).
///
/// Notation: x and the output both get the first rank(x) letters of
/// `abcdefghijklmnopqrstuvwxyz`. `axis` is in [-rank, rank) (negative counts from the end).
/// A 0-D x is accepted with axis -1 or 0, as Paddle's softmax operator accepts it (its
/// softmax is 1): there is no dim to keep replicated, and every mapping is empty.
///
/// Forward: each output element needs the whole softmax axis, so that axis must be
/// replicated: if x shards it, x comes back with it -1 (the reshard). x's other dims are
/// merged (merge_conflicts = false; one valid tensor cannot conflict) and the output takes
/// the same mapping. Partial inputs: softmax of a partial sum is not a partial of softmaxes,
/// so a partial x must be reduced first: x comes back not partial, and the output is not
/// partial.
///
/// Under `phi` the merge is the co-shard union (merge_conflicts = false): the softmax axis'
/// whole list is dropped and a co-shard list elsewhere stays (or loses trailing mesh dims that do
/// not divide its dim). x comes back with exactly the mapping the output gets (phi returns the
/// input with only its axis cleared, which differs from the output when the merge drops a mesh
/// dim; we do not copy that).
///
/// Backward (Paddle had none mid-2023; derived): the output's rank and sizes must be x's.
/// The output's mapping, with the softmax axis forced to -1, is merged alone; x takes it,
/// and the output comes back with it (the axis replicated, not partial), which is exactly
/// what forward of the inferred x produces.
///
/// softmax_grad (phi, called forward; also `log_softmax_grad`): inputs out, out_grad (the
/// forward's output and its gradient, of one shape: an `invalid_argument` naming the rank or
/// the dim otherwise), attribute `axis`; output x_grad = out * (out_grad - sum(out * out_grad)
/// over the axis) (log_softmax: out_grad - exp(out) * sum(out_grad)). Every element needs the
/// whole axis, so it is replicated in all three. As phi's SoftmaxGradInferSpmd does, the axis is
/// cleared on out and out_grad first, and then the two are merged on the other dims through the
/// elementwise binary rule: first-wins under `fluid` (two mesh dims on one dim are
/// `unimplemented`), phi's element-wise merge under `phi` (the layout of the input with the most
/// co-sharded dims, then the most shards, followed; the other adds mesh dims nobody uses; a mesh
/// dim that does not divide its dim dropped). Clearing first matters under `phi`: the operand
/// followed is chosen on the dims that stay, so a co-sharded or sharded softmax axis does not
/// make its operand's layout win (out [[], [2], [0, 1]] with out_grad [[], [1, 2], []] on a
/// [2, 2, 2] mesh, axis -1, gives [[], [1, 2], []], out_grad's order, as Paddle does).
/// out, out_grad and x_grad take the merge. No input may be partial (each comes back whole;
/// x_grad is linear in out_grad, but phi cleans a partial out_grad and so do we), and x_grad is
/// not partial. No reverse inference. Both semantics behave the same except for the merge.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `softmax` (Paddle's defaults).
struct softmax_attributes {
  std::int64_t axis = -1;  ///< the normalised axis; negative counts from the end
};

/// The softmax rule (also `log_softmax`).
struct softmax : rule_base<softmax, softmax_attributes> {
  static constexpr std::string_view name = "softmax";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape (the axis checked).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    CTSPMD_TRY(labels_for(in[0].ndim(), attrs.axis));
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    return infer(info, in[0], in[0], attrs, s);
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& o = out[0];
    if (o.ndim() != x.ndim())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but x has rank {}", o.ndim(),
                        x.ndim());
    CTSPMD_TRY(check_same_sizes(o.shape(), x.shape(), "output dim {} has size {}, but x has size {}"));
    // Only the output's mapping is merged: x's own mapping does not count backward.
    return infer(info, x, o, attrs, s);
  }

  /// x's labels for `axis`: the first rank letters with `'1'` at the (normalised) axis.
  static constexpr result<axes_string> labels_for(std::int64_t rank, std::int64_t axis) {
    const auto letters = first_letters(rank);
    if (!letters) return letters.error();
    const std::int64_t bound = rank > 0 ? rank : 1;  // a 0-D x takes axis -1 or 0
    if (axis < -bound || axis >= bound)
      return make_error(error_kind::invalid_argument, "", "axis {} is outside [-{}, {}) for x of rank {}", axis, bound,
                        bound, rank);
    axes_string labels(*letters);
    if (rank > 0) labels[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)] = broadcast_label;
    return labels;
  }

 private:
  /// x and the output as `from`'s mapping makes them, with the softmax axis replicated.
  static constexpr status infer(spmd_info& info, const dist_tensor_spec& x, const dist_tensor_spec& from,
                                const attributes& attrs, semantics s) {
    // The softmax axis must be replicated: every output element reads all of it.
    const auto labels = labels_for(x.ndim(), attrs.axis);
    if (!labels) return labels.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, *labels, from, s, {/*merge_conflicts=*/false, false, false, /*drop_indivisible=*/true}));
    push(info.inputs, x.dist_attr(), *labels, map);
    push(info.outputs, from.dist_attr(), *labels, map);
    return {};
  }
};

/// The gradient rule of softmax and log_softmax: inputs out, out_grad; output x_grad (see the
/// file comment).
struct softmax_grad : rule_base<softmax_grad, softmax_attributes> {
  static constexpr std::string_view name = "softmax_grad";
  static constexpr operand_count input_count{2};   // out, out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// out's shape (x's).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& out = in[0];
    const auto& g = in[1];
    if (g.ndim() != out.ndim())
      return make_error(error_kind::invalid_argument, "", "out_grad has rank {}, but out has rank {}", g.ndim(),
                        out.ndim());
    CTSPMD_TRY(check_same_sizes(g.shape(), out.shape(), "out_grad dim {} has size {}, but out's has size {}"));
    const auto labels = softmax::labels_for(out.ndim(), attrs.axis);
    if (!labels) return labels.error();
    const std::array<std::string_view, 2> views{labels->view(), labels->view()};
    // The axis is replicated before the merge: its mesh dims must not decide the operand phi's
    // element-wise merge follows.
    const std::array<dist_tensor_spec, 2> cleared{with_ones_replicated(out, *labels), with_ones_replicated(g, *labels)};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_specs(map, std::span<const std::string_view, 2>(views), cleared,
                           s == semantics::phi ? merge_policy::elementwise : merge_policy::first_wins,
                           {true, false, false, /*drop_indivisible=*/true}));
    push(info.inputs, out.dist_attr(), *labels, map);
    push(info.inputs, g.dist_attr(), *labels, map);
    push(info.outputs, g.dist_attr(), *labels, map);  // x_grad
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
