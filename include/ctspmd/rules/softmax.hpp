#ifndef CTSPMD_RULES_SOFTMAX_HPP
#define CTSPMD_RULES_SOFTMAX_HPP
/// \file The softmax rule (`softmax`, `log_softmax`): out = softmax(x) along `axis`.
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

#include <cstddef>
#include <cstdint>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit.hpp>
#include <ctspmd/rules/rule_base.hpp>

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

 private:
  /// x and the output as `from`'s mapping makes them, with the softmax axis replicated.
  static constexpr status infer(spmd_info& info, const dist_tensor_spec& x, const dist_tensor_spec& from,
                                const attributes& attrs, semantics s) {
    const auto letters = first_letters(x.ndim());
    if (!letters) return letters.error();
    const std::int64_t rank = x.ndim();
    const std::int64_t bound = rank > 0 ? rank : 1;  // a 0-D x takes axis -1 or 0
    if (attrs.axis < -bound || attrs.axis >= bound)
      return make_error(error_kind::invalid_argument, "", "axis {} is outside [-{}, {}) for x of rank {}", attrs.axis,
                        bound, bound, rank);
    // The softmax axis must be replicated: every output element reads all of it.
    axes_string labels(*letters);
    if (rank > 0) labels[static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis)] = broadcast_label;
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, labels, from, s, {/*merge_conflicts=*/false, false, false, /*drop_indivisible=*/true}));
    push(info.inputs, x.dist_attr(), labels, map);
    push(info.outputs, from.dist_attr(), labels, map);
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
