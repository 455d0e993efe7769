#ifndef CTSPMD_RULES_CONCAT_GRAD_HPP
#define CTSPMD_RULES_CONCAT_GRAD_HPP
/// \file The concat grad rule (`concat_grad`; phi, called forward): the gradients of concat's
/// inputs are out_grad cut along the concat axis at the inputs' sizes.
///
/// Operands, as Paddle's ConcatGradInferSpmdDynamic(x, out_grad, axis) and its `concat_grad`
/// operator take them: inputs x1, ..., xn (the forward inputs, read for their shapes only) and
/// then out_grad; outputs x1_grad, ..., xn_grad. Attribute `axis` as concat's (concat.hpp).
/// Checks (`invalid_argument`, naming the operands and sizes): at least one x; the x's and
/// out_grad of one rank (>= 1); `axis` in [-rank, rank); every dim but the axis of one size in
/// all operands, and out_grad's size at the axis the sum of the x's, where the sizes are known.
///
/// Notation: concat's: every operand gets the first rank letters of
/// `abcdefghijklmnopqrstuvwxyz`, `'1'` (never sharded) at the concat axis: a shard of out_grad's
/// axis does not line up with the pieces.
///
/// Inference: the x's and out_grad are merged over the other axes; every x, out_grad and every
/// gradient take the merged mapping. Under `phi`, as Paddle does, by phi's AlignDimsSharding
/// (`align_least_cost`, in Paddle's operand order x1, ..., xn, out_grad): a mesh dim they all
/// agree on keeps its sharding, one they disagree on goes to the free axis that is cheapest to
/// reshard them to. Under `fluid` (no fluid rule exists), first-wins over out_grad, then x1, ...,
/// xn: out_grad's sharding wins a conflict, and two different mesh dims on one axis are an error,
/// as in concat's fluid forward. The x's are merged for their layouts only (each gradient is
/// then laid out like its x where they agree); their partial status does not count (their values
/// are not read) and they come back not partial. Partial out_grad: cutting selects elements,
/// which commutes with every reduction, so out_grad's partial status is kept on out_grad and on
/// every gradient, on each mesh dim the merged mapping does not shard (Paddle aligns the partial
/// status too, so it keeps sum or avg only when every x is partial alike, which the x's, never
/// read, have no reason to be). Backward (reverse) inference: none.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/policies.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/concat.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// The concat grad rule.
struct concat_grad : rule_base<concat_grad, concat_attributes> {
  static constexpr std::string_view name = "concat_grad";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count = operand_count::at_least(2);  // x1, ..., xn, out_grad
  static constexpr operand_count output_count = operand_count::at_least(1);  // x1_grad, ..., xn_grad

  /// x1_grad, ..., xn_grad: x1's, ..., xn's shapes.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    for (std::size_t i = 0; i + 1 < in.size(); ++i) out.push_back(in[i].shape());
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto labels = notate(in, attrs);
    if (!labels) return labels.error();
    const std::size_t n = in.size() - 1;
    const auto& g = in[n];
    axis_to_dim_map map;
    if (s == semantics::phi) {
      // The operands' layouts without partial status: x's is not read, out_grad's is kept below.
      static_vector<tensor_dist_attr, max_operands> whole;
      for (const auto& t : in) {
        whole.push_back(t.dist_attr());
        whole.back().clean_partial_status();
      }
      axes_string align;
      for (char c : *labels)
        if (c != broadcast_label) align.push_back(c);
      kept_partial unused{};
      align_least_cost(
          map, unused, in.size(), [&](std::size_t) { return labels->view(); },
          [&](std::size_t t) -> const tensor_dist_attr& { return whole[t]; },
          [&](std::size_t t) -> const tensor_shape& { return in[t].shape(); }, align, /*allow_partial=*/false);
    } else {
      // out_grad first: under first-wins its sharding wins a conflict.
      static_vector<dist_tensor_spec, max_operands> order;
      order.push_back(g);
      for (std::size_t i = 0; i < n; ++i) order.push_back(in[i]);
      static_vector<std::string_view, max_operands> ls(in.size(), labels->view());
      CTSPMD_TRY(merge_operands(map, std::span<const std::string_view>(ls.data(), ls.size()),
                                spec_span(order.data(), order.size()), s));
    }
    for (std::size_t i = 0; i < n; ++i) push(info.inputs, in[i].dist_attr(), *labels, map);
    add_unsharded_partial_of(push(info.inputs, g.dist_attr(), *labels, map), g.dist_attr());
    for (std::size_t i = 0; i < n; ++i)
      add_unsharded_partial_of(push(info.outputs, in[i].dist_attr(), *labels, map), g.dist_attr());
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }

 private:
  /// Validates the operands and the axis; the letters every operand carries ('1' at the axis).
  static constexpr result<axes_string> notate(spec_span in, const attributes& attrs) {
    const std::size_t n = in.size() - 1;
    const auto& g = in[n];
    const std::int64_t rank = in[0].ndim();
    for (std::size_t i = 1; i < in.size(); ++i)
      if (in[i].ndim() != rank)
        return make_error(error_kind::invalid_argument, "",
                          i == n ? "out_grad has rank {1}, but x1 has rank {2}" : "x{} has rank {}, but x1 has rank {}",
                          i + 1, in[i].ndim(), rank);
    const auto axis = normalize_axis(attrs.axis, rank, "axis {} is out of range for inputs of rank {}");
    if (!axis) return axis.error();
    std::int64_t total = 0;  // the x's sizes at the axis, -1 once one is unknown
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t v = in[i].shape()[*axis];
      if (total >= 0 && v > std::numeric_limits<std::int64_t>::max() - total)
        return make_error(error_kind::invalid_argument, "", "the sizes of x1 to x{} at the concat axis {} overflow int64",
                          i + 1, *axis);
      total = total < 0 || v < 0 ? -1 : total + v;
    }
    for (std::size_t i = 1; i < in.size(); ++i)
      for (std::size_t d = 0; d < static_cast<std::size_t>(rank); ++d) {
        const std::int64_t a = in[0].shape()[d];
        const std::int64_t b = in[i].shape()[d];
        if (d != *axis && a != -1 && b != -1 && a != b)
          return make_error(error_kind::invalid_argument, "",
                            i == n ? "out_grad has size {1} at dim {2}, but x1 has size {3} (only the concat axis may "
                                     "differ)"
                                   : "x{} has size {} at dim {}, but x1 has size {} (only the concat axis may differ)",
                            i + 1, b, d, a);
      }
    if (total >= 0 && g.shape()[*axis] != -1 && g.shape()[*axis] != total)
      return make_error(error_kind::invalid_argument, "",
                        "out_grad has size {} at the concat axis {}, but the inputs add up to {}", g.shape()[*axis],
                        *axis, total);
    const auto letters = first_letters(rank);
    if (!letters) return letters.error();
    axes_string labels(*letters);
    labels[*axis] = broadcast_label;
    return labels;
  }
};

}  // namespace ctspmd::rules

#endif
