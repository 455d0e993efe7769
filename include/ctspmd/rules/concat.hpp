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
/// Forward then backward gives back forward's inputs (the round-trip property holds).

#include <cstddef>
#include <cstdint>
#include <span>

#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit.hpp>
#include <ctspmd/rules/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `concat` (Paddle's default).
struct concat_attributes {
  std::int64_t axis = 0;  ///< the concat axis; negative counts from the end
};

/// The concat rule.
struct concat : rule_base<concat, concat_attributes> {
  static constexpr std::string_view name = "concat";
  static constexpr operand_count input_count = operand_count::at_least(1);
  static constexpr operand_count output_count{1};

  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto axes = notate(in, attrs);
    if (!axes) return axes.error();
    static_vector<std::string_view, max_operands> labels(in.size(), axes->view());
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view>(labels.data(), labels.size()), in, s));

    const auto partial = common_partial(in);
    for (const auto& x : in) add_partial_of(push(info.inputs, x.dist_attr(), *axes, map), partial);
    add_partial_of(push(info.outputs, in[0].dist_attr(), *axes, map), partial);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto axes = notate(in, attrs);
    if (!axes) return axes.error();
    const auto& o = out[0];
    if (o.ndim() != in[0].ndim())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but the inputs have rank {}",
                        o.ndim(), in[0].ndim());
    // Only the output's mapping is merged: the inputs' own mappings do not count backward.
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, *axes, o, s));
    for (const auto& x : in) push(info.inputs, x.dist_attr(), *axes, map);
    push(info.outputs, o.dist_attr(), *axes, map);
    return {};
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

}  // namespace ctspmd::rules

#include <boost/hana/adapt_struct.hpp>
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::concat_attributes, axis);

#endif
