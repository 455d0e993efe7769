#ifndef CTSPMD_RULES_CONCAT_HPP
#define CTSPMD_RULES_CONCAT_HPP
/// \file The concat rule (`concat`): n >= 1 tensors joined along `axis`.
///
/// Notation: every input and the output get the first rank letters of
/// `abcdefghijklmnopqrstuvwxyz`, with the concat axis labelled `'1'`: it never takes part in
/// a merge and always maps to -1.
///
/// Checks: at least one input; all inputs of one rank (>= 1); `axis` in [-rank, rank)
/// (negative counts from the end); every dim but the concat axis of one size in all inputs
/// where both sizes are known (not -1).
///
/// Forward: a shard of a concatenation is not the concatenation of the inputs' shards, so the
/// concat axis is replicated. All inputs are merged (merge_conflicts = true: a mesh dim that
/// shards different axes of different inputs stays with the first claimant, in input order);
/// every input is required with the merged dims mapping (concat axis -1), and the output gets
/// the same. Partial inputs: concatenation only places elements, so it commutes with any
/// reduction over a mesh dim; on a mesh dim where every input is partial with the same reduce
/// type the inputs stay partial and the output is partial alike; every other partial status
/// is dropped from the inputs (they must be reduced first).
///
/// Backward (from the output): the output alone is merged; every input gets its dims mapping
/// with the concat axis -1, and the output is returned with that mapping and no partial
/// status, i.e. exactly what forward produces from the returned inputs. No partial status is
/// inferred for the inputs.
///
/// Under `phi` (both concat and stack): the inputs are aligned by cost (`align_least_cost`,
/// phi's AlignDimsSharding) over the axes other than the concat axis: a mesh dim on which all
/// inputs agree keeps its sharding (or, if they are all partial with sum or avg, its partial
/// status); one they disagree on goes to the free axis that is cheapest to reshard the inputs
/// to. The output takes the same mapping and partial status. phi keeps the partial status on
/// the inputs of a concat but not on its output, which would drop the sum: the output here is
/// partial alike. Backward merges the output with the co-shard union and returns it with its
/// concat axis replicated (phi returns it unchanged even when that axis is sharded).
///
/// `stack` (attribute `axis`, in [-(rank + 1), rank + 1)): inputs of one rank and shape (known
/// sizes equal) joined along a new dim at `axis`; the output has the inputs' letters with `'1'`
/// (never sharded) inserted there. Merging, partial status and backward are concat's.
///
/// Forward then backward gives back forward's inputs (the round-trip property holds).
/// The gradients: `concat_grad` (concat_grad.hpp) and `stack_grad` (stack_grad.hpp).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `concat` (Paddle's default).
struct concat_attributes {
  std::int64_t axis = 0;  ///< the concat axis; negative counts from the end
};

namespace detail {

/// Forward of concat and stack: `in` labelled `letters`, which must be aligned on every letter of
/// `out_labels` (`'1'` where neither may be sharded: the joined axis); the inputs are required,
/// and the output is, with the mapping of `out_labels` under the merge (fluid: first-wins;
/// phi: `align_least_cost`), and the partial status every input shares (phi: of sum or avg).
constexpr status join_forward(spmd_info& info, spec_span in, std::string_view letters, const axes_string& out_labels,
                              semantics s) {
  // The inputs' labels: `letters`, with '1' at the axis of a concat.
  axes_string in_labels(letters);
  if (in_labels.size() == out_labels.size())
    for (std::size_t d = 0; d < in_labels.size(); ++d)
      if (out_labels[d] == broadcast_label) in_labels[d] = broadcast_label;
  axis_to_dim_map map;
  tensor_dist_attr partial = common_partial(in);
  if (s == semantics::phi) {
    axes_string align;
    for (char c : out_labels)
      if (c != broadcast_label) align.push_back(c);
    kept_partial kept{};
    align_least_cost(
        map, kept, in.size(), [&](std::size_t) { return letters; }, [&](std::size_t t) -> const tensor_dist_attr& {
          return in[t].dist_attr();
        },
        [&](std::size_t t) -> const tensor_shape& { return in[t].shape(); }, align, /*allow_partial=*/true);
    partial = tensor_dist_attr(in[0].process_mesh());
    for (std::size_t m = 0; m < kept.size(); ++m)
      if (kept[m] >= 0) partial.set_partial_status({static_cast<std::int64_t>(m)}, static_cast<reduce_type>(kept[m]));
  } else {
    static_vector<std::string_view, max_operands> labels(in.size(), in_labels.view());
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view>(labels.data(), labels.size()), in, s));
  }
  for (const auto& x : in) add_partial_of(push(info.inputs, x.dist_attr(), in_labels, map), partial);
  add_partial_of(push(info.outputs, in[0].dist_attr(), out_labels, map), partial);
  return {};
}

/// Backward of concat and stack: the output `o` (labelled `out_labels`) alone is merged; every
/// input takes `in_labels` under it, and the output comes back with `out_labels` under it.
constexpr status join_backward(spmd_info& info, spec_span in, const dist_tensor_spec& o, const axes_string& in_labels,
                               const axes_string& out_labels, semantics s) {
  // Only the output's mapping is merged: the inputs' own mappings do not count backward.
  axis_to_dim_map map;
  CTSPMD_TRY(merge_operand(map, out_labels, o, s));
  for (const auto& x : in) push(info.inputs, x.dist_attr(), in_labels, map);
  push(info.outputs, o.dist_attr(), out_labels, map);
  return {};
}

}  // namespace detail

/// The concat rule.
struct concat : rule_base<concat, concat_attributes> {
  static constexpr std::string_view name = "concat";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count = operand_count::at_least(1);
  static constexpr operand_count output_count{1};

  /// The inputs' shape with, at the axis, the sum of their sizes (-1 when one is unknown).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto axes = notate(in, attrs);
    if (!axes) return axes.error();
    const std::size_t axis = axes->view().find(broadcast_label);
    tensor_shape& o = out.emplace_back(in[0].shape());
    std::int64_t total = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::int64_t v = in[i].shape()[axis];
      if (total >= 0 && v > std::numeric_limits<std::int64_t>::max() - total)
        return make_error(error_kind::invalid_argument, "", "the inputs' sizes at the concat axis {} overflow int64", axis);
      total = total < 0 || v < 0 ? -1 : total + v;
      for (std::size_t d = 0; d < o.size(); ++d)
        if (o[d] == -1 && d != axis) o[d] = in[i].shape()[d];  // a size another input knows
    }
    o[axis] = total;
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto axes = notate(in, attrs);
    if (!axes) return axes.error();
    const auto letters = first_letters(in[0].ndim());
    return detail::join_forward(info, in, *letters, *axes, s);
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto axes = notate(in, attrs);
    if (!axes) return axes.error();
    const auto& o = out[0];
    if (o.ndim() != in[0].ndim())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but the inputs have rank {}",
                        o.ndim(), in[0].ndim());
    return detail::join_backward(info, in, o, *axes, *axes, s);
  }

 private:
  /// Validates the inputs and the axis; the letters every operand carries ('1' at the axis).
  static constexpr result<axes_string> notate(spec_span in, const attributes& attrs) {
    const std::int64_t rank = in[0].ndim();
    for (std::size_t i = 1; i < in.size(); ++i)
      if (in[i].ndim() != rank)
        return make_error(error_kind::invalid_argument, "", "input {} has rank {}, but input 0 has rank {}", i,
                          in[i].ndim(), rank);
    const auto axis = normalize_axis(attrs.axis, rank, "axis {} is out of range for inputs of rank {}");
    if (!axis) return axis.error();
    for (std::size_t i = 1; i < in.size(); ++i)
      for (std::size_t d = 0; d < static_cast<std::size_t>(rank); ++d) {
        const std::int64_t a = in[0].shape()[d];
        const std::int64_t b = in[i].shape()[d];
        if (d != *axis && a != -1 && b != -1 && a != b)
          return make_error(error_kind::invalid_argument, "",
                            "input {} has size {} at dim {}, but input 0 has size {} (only the concat axis may differ)",
                            i, b, d, a);
      }
    const auto letters = first_letters(rank);
    if (!letters) return letters.error();
    axes_string labels(*letters);
    labels[*axis] = broadcast_label;
    return labels;
  }
};

/// Attributes of `stack` (Paddle's default).
struct stack_attributes {
  std::int64_t axis = 0;  ///< where the new dim goes, in [-(rank + 1), rank + 1); negative counts from the end
};

/// The stack rule: n >= 1 tensors of one shape joined along a new dim at `axis`.
struct stack : rule_base<stack, stack_attributes> {
  static constexpr std::string_view name = "stack";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count = operand_count::at_least(1);
  static constexpr operand_count output_count{1};

  /// The inputs' shape with a dim of their number inserted at the axis.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = notate(in, attrs);
    if (!n) return n.error();
    tensor_shape known = in[0].shape();
    for (std::size_t i = 1; i < in.size(); ++i)
      for (std::size_t d = 0; d < known.size(); ++d)
        if (known[d] == -1) known[d] = in[i].shape()[d];  // a size another input knows
    const std::size_t axis = n->out.view().find(broadcast_label);
    tensor_shape& o = out.emplace_back();
    for (std::size_t d = 0; d <= known.size(); ++d) {
      if (d == axis) o.push_back(static_cast<std::int64_t>(in.size()));
      if (d < known.size()) o.push_back(known[d]);
    }
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto n = notate(in, attrs);
    if (!n) return n.error();
    return detail::join_forward(info, in, n->in, n->out, s);
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto n = notate(in, attrs);
    if (!n) return n.error();
    const auto& o = out[0];
    if (o.ndim() != in[0].ndim() + 1)
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but the inputs have rank {}",
                        o.ndim(), in[0].ndim());
    return detail::join_backward(info, in, o, n->in, n->out, s);
  }

 private:
  struct labels {
    axes_string in;   ///< the inputs' letters
    axes_string out;  ///< the same with '1' inserted at the new dim
  };

  /// Validates the inputs (one rank, one shape where sizes are known) and the axis.
  static constexpr result<labels> notate(spec_span in, const attributes& attrs) {
    const std::int64_t rank = in[0].ndim();
    for (std::size_t i = 1; i < in.size(); ++i) {
      if (in[i].ndim() != rank)
        return make_error(error_kind::invalid_argument, "", "input {} has rank {}, but input 0 has rank {}", i,
                          in[i].ndim(), rank);
      for (std::size_t d = 0; d < static_cast<std::size_t>(rank); ++d) {
        const std::int64_t a = in[0].shape()[d], b = in[i].shape()[d];
        if (a != -1 && b != -1 && a != b)
          return make_error(error_kind::invalid_argument, "", "input {} has size {} at dim {}, but input 0 has size {}",
                            i, b, d, a);
      }
    }
    if (rank + 1 > static_cast<std::int64_t>(max_rank))
      return make_error(error_kind::invalid_argument, "", "inputs of rank {} give an output of rank {}, above max_rank = {}",
                        rank, rank + 1, max_rank);
    const auto axis = normalize_axis(attrs.axis, rank + 1, "axis {} is out of range for an output of rank {}");
    if (!axis) return axis.error();
    const auto letters = first_letters(rank);
    if (!letters) return letters.error();
    labels l{axes_string(*letters), {}};
    for (std::size_t d = 0; d <= l.in.size(); ++d) {
      if (d == *axis) l.out.push_back(broadcast_label);
      if (d < l.in.size()) l.out.push_back(l.in[d]);
    }
    return l;
  }
};

}  // namespace ctspmd::rules

#endif
