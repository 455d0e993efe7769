#ifndef CTSPMD_RULES_SPLIT_HPP
#define CTSPMD_RULES_SPLIT_HPP
/// \file The split rule (`split`, `split_with_num`): x cut along `axis` into `num` equal
/// parts or into parts of the sizes `sections`.
///
/// Notation: x gets the first rank(x) letters of `abcdefghijlmnopqrstuvwxyz` with its split
/// axis relabelled `k`; every output gets the same letters with `'1'` at the split axis.
///
/// Attributes: exactly one of `num` (> 0) and `sections` (non-empty) gives the number of
/// outputs, at most max_operands. When the split axis' size is known (not -1), `num` must
/// divide it and the sections must add up to it; one section may be -1 (inferred from the
/// others, whose sum must then not exceed the size). `axis` may be negative.
///
/// Forward: a shard of the split axis would not hold whole parts, so the split axis is
/// replicated: x is required with that dim -1 (its other dims unchanged), and every output
/// gets x's dims mapping with the split axis -1. Split only selects elements, so it commutes
/// with any reduction over a mesh dim: a partial x is kept partial (same mesh dims and reduce
/// types) and its outputs are partial alike. (Paddle keeps x partial but drops the status on
/// the outputs, which would make them wrong.)
///
/// Backward: the outputs' count must be the one the attributes give. All outputs are merged
/// (merge_conflicts = true) over x's letters, `k` included: an output sharded on its split
/// axis takes part in the merge (and may win a mesh dim over a later axis, as in Paddle),
/// although the split axis is then replicated everywhere. x gets the merged dims mapping with
/// the split axis -1 (labels absent from the outputs are replicated); each output is returned
/// with the same dims mapping and no partial status, i.e. exactly what forward produces from
/// the returned x. No partial status is inferred for x.
///
/// Forward then backward gives back forward's x (the round-trip property holds).

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

/// Attributes of `split` / `split_with_num` (Paddle's defaults: neither count given yet).
struct split_attributes {
  std::int64_t num = 0;                                     ///< number of equal parts (split_with_num), or 0
  static_vector<std::int64_t, max_operands> sections = {};  ///< sizes of the parts (one may be -1), or empty
  std::int64_t axis = 0;                                    ///< the split axis; negative counts from the end
};

/// The split rule.
struct split : rule_base<split, split_attributes> {
  static constexpr std::string_view name = "split";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count = operand_count::at_least(1);  // as num or sections say

  /// x's shape with, at the axis, its size / num, or each section (the -1 one what the others
  /// leave); -1 where the axis' size is unknown.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = notate(in[0], attrs);
    if (!n) return n.error();
    const std::size_t axis = n->x_axes.view().find('k');
    const std::int64_t size = in[0].shape()[axis];
    std::int64_t rest = size;  // what the sections other than the -1 one leave
    for (const auto s : attrs.sections) rest -= s == -1 || size == -1 ? 0 : s;
    for (std::size_t i = 0; i < n->count; ++i) {
      tensor_shape& o = out.emplace_back(in[0].shape());
      if (!attrs.sections.empty() && attrs.sections[i] != -1)
        o[axis] = attrs.sections[i];
      else if (size == -1)
        o[axis] = -1;
      else
        o[axis] = attrs.sections.empty() ? size / attrs.num : rest;
    }
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto n = notate(x, attrs);
    if (!n) return n.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->x_axes, x, s));

    // The split axis is replicated; the rest of x, partial status included, is unchanged.
    const auto& required = add_partial_of(push(info.inputs, x.dist_attr(), n->out_axes, map), x.dist_attr());
    for (std::size_t i = 0; i < n->count; ++i) info.outputs.push_back(required);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto n = notate(x, attrs);
    if (!n) return n.error();
    if (out.size() != n->count)
      return make_error(error_kind::invalid_argument, "", "expects {} outputs, got {}", n->count, out.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i].ndim() != x.ndim())
        return make_error(error_kind::invalid_argument, "", "output {} has rank {}, but x has rank {}", i,
                          out[i].ndim(), x.ndim());
    static_vector<std::string_view, max_operands> labels(out.size(), n->x_axes.view());
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view>(labels.data(), labels.size()), out, s));

    push(info.inputs, x.dist_attr(), n->out_axes, map);
    for (const auto& o : out) push(info.outputs, o.dist_attr(), n->out_axes, map);
    return {};
  }

 private:
  struct notation {
    axes_string x_axes;     // x's letters, 'k' at the split axis
    axes_string out_axes;   // the outputs' letters, '1' at the split axis
    std::size_t count = 0;  // number of outputs
  };

  /// Validates the attributes against x and labels the tensors.
  static constexpr result<notation> notate(const dist_tensor_spec& x, const attributes& attrs) {
    const std::int64_t rank = x.ndim();
    const auto normalized = normalize_axis(attrs.axis, rank, "axis {} is out of range for x of rank {}");
    if (!normalized) return normalized.error();
    const std::size_t axis = *normalized;
    const auto letters = first_letters(rank, alphabets::split);
    if (!letters) return letters.error();

    const bool by_num = attrs.num > 0 && attrs.sections.empty();
    const bool by_sections = attrs.num == 0 && !attrs.sections.empty();
    if (!by_num && !by_sections)
      return make_error(error_kind::invalid_argument, "",
                        "exactly one of num (> 0) and sections (non-empty) gives the number of outputs, but num = {} "
                        "and sections has {} entries",
                        attrs.num, attrs.sections.size());
    const std::int64_t size = x.shape()[axis];
    if (by_num) {
      if (attrs.num > static_cast<std::int64_t>(max_operands))
        return make_error(error_kind::invalid_argument, "", "num = {} outputs exceed max_operands = {}", attrs.num,
                          max_operands);
      if (size != -1 && size % attrs.num != 0)
        return make_error(error_kind::invalid_argument, "", "num = {} does not divide the size {} of the split axis {}",
                          attrs.num, size, axis);
    } else {
      CTSPMD_TRY(check_sections(attrs.sections, size, axis));
    }

    notation n;
    n.x_axes = *letters;
    n.x_axes[axis] = 'k';
    n.out_axes = *letters;
    n.out_axes[axis] = broadcast_label;
    n.count = by_num ? static_cast<std::size_t>(attrs.num) : attrs.sections.size();
    return n;
  }

  /// Sections are sizes >= 0 with at most one -1, adding up to the axis' size when it is known.
  static constexpr status check_sections(const static_vector<std::int64_t, max_operands>& sections, std::int64_t size,
                                         std::size_t axis) {
    std::int64_t sum = 0;
    std::int64_t inferred = -1;  // index of the -1 section, if any
    for (std::size_t i = 0; i < sections.size(); ++i) {
      const std::int64_t s = sections[i];
      if (s < -1)
        return make_error(error_kind::invalid_argument, "",
                          "section {} has size {}; a section is >= 0, or -1 to be inferred", i, s);
      if (s == -1 && inferred != -1)
        return make_error(error_kind::invalid_argument, "", "sections {} and {} are both -1; at most one is inferred",
                          inferred, i);
      if (s == -1) {
        inferred = static_cast<std::int64_t>(i);
      } else {
        if (s > std::numeric_limits<std::int64_t>::max() - sum)
          return make_error(error_kind::invalid_argument, "",
                            "the sections up to section {} add up to more than int64 can hold", i);
        sum += s;
      }
    }
    if (size == -1) return {};
    if (inferred == -1 && sum != size)
      return make_error(error_kind::invalid_argument, "",
                        "the sections add up to {}, but the split axis {} has size {}", sum, axis, size);
    if (inferred != -1 && sum > size)
      return make_error(error_kind::invalid_argument, "",
                        "the sections other than the inferred one add up to {}, above the size {} of the split axis {}",
                        sum, size, axis);
    return {};
  }

};

}  // namespace ctspmd::rules

#endif
