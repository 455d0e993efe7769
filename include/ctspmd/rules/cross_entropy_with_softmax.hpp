#ifndef CTSPMD_RULES_CROSS_ENTROPY_WITH_SOFTMAX_HPP
#define CTSPMD_RULES_CROSS_ENTROPY_WITH_SOFTMAX_HPP
/// \file The cross_entropy_with_softmax rule (`cross_entropy_with_softmax`,
/// `softmax_with_cross_entropy`): inputs x (logits) and label; outputs softmax_out =
/// softmax(x) along `axis` and loss = -sum(label * log(softmax_out)) along `axis`.
///
/// Notation: the rank(x) - 1 dims other than the class (softmax) axis get the first
/// rank(x) - 1 letters of `abcdefghijlmnopqrstuvwxyz`; x inserts `k` at `axis`. The label
/// has x's letters when `soft_label` (a distribution over the classes), else those letters
/// with `'1'` at `axis` (one class index per position, a size-1 dim). loss has the letters
/// with `'1'` at `axis`; softmax_out has x's letters when `use_softmax`, and is rank 0
/// (empty dims mapping, Paddle's convention) otherwise.
///
/// Checks: the label has x's rank, and its class dim has size 1 (or unknown) unless
/// `soft_label`; `axis` in [-rank, rank) (negative counts from the end); two inputs (and two
/// outputs backward). `ignore_index` and `numeric_stable_mode` do not affect the sharding.
///
/// Forward: x and the label are merged (merge_conflicts = true: the label loses a mesh dim x
/// already uses). A sharded class axis is only supported in the layout of Paddle's
/// c_softmax_with_cross_entropy (vocabulary parallelism): hard labels, the class axis last,
/// use_softmax; otherwise `invalid_argument` naming the requirement. The check reads the
/// merged class axis, so a soft label sharded on it is caught too (Paddle checks x only).
/// With the class axis sharded, the kernel computes the softmax normaliser and the picked
/// logit with collectives across that mesh dim, so each device holds its slice of
/// softmax_out and the complete loss: as in Paddle, loss (class dim -1) is not partial.
/// Softmax and log are not linear, so partial inputs must be reduced first: the inputs are
/// required without partial status and the outputs are not partial. Inputs and outputs all
/// take their dims mappings from the merged map.
///
/// Backward (Paddle has none; derived): softmax_out (when use_softmax) and loss are merged
/// (merge_conflicts = true) over their letters; x and the label get the merged map over
/// their letters, letters absent from the outputs replicated (the class axis when
/// !use_softmax); the sharded-class-axis requirements are checked as forward; the outputs are
/// returned with the merged dims mappings and no partial status. No partial status is
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
#include <ctspmd/rules/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `cross_entropy_with_softmax` (Paddle's defaults).
struct cross_entropy_with_softmax_attributes {
  std::int64_t axis = -1;            ///< the class (softmax) axis; negative counts from the end
  std::int64_t ignore_index = -100;  ///< label value that contributes no loss (hard labels)
  bool numeric_stable_mode = true;   ///< subtract the max logit before exponentiating
  bool use_softmax = true;           ///< false: x already holds probabilities
  bool soft_label = false;           ///< the label is a distribution over the classes
};

/// The cross_entropy_with_softmax rule.
struct cross_entropy_with_softmax
    : detail::rule_base<cross_entropy_with_softmax, cross_entropy_with_softmax_attributes> {
  static constexpr std::string_view name = "cross_entropy_with_softmax";

  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs) {
    CTSPMD_TRY(detail::check_count(in, 2));
    const auto& x = in[0];
    const auto& label = in[1];
    const auto n = notate(x, label, attrs);
    if (!n) return n.error();
    const auto map = try_sharding_merge_for_tensors({{n->x, x.dims_mapping()}, {n->label, label.dims_mapping()}});
    if (!map) return map.error();
    CTSPMD_TRY(check_class_axis(*map, *n, attrs));

    info.inputs.push_back(detail::mapped(x.dist_attr(), n->x, *map));
    info.inputs.push_back(detail::mapped(label.dist_attr(), n->label, *map));
    info.outputs.push_back(detail::mapped(x.dist_attr(), n->softmax_out, *map));
    info.outputs.push_back(detail::mapped(x.dist_attr(), n->loss, *map));
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs) {
    CTSPMD_TRY(detail::check_count(in, 2));
    CTSPMD_TRY(detail::check_count(out, 2, /*outputs=*/true));
    const auto& x = in[0];
    const auto& label = in[1];
    const auto& softmax_out = out[0];
    const auto& loss = out[1];
    const auto n = notate(x, label, attrs);
    if (!n) return n.error();
    const auto softmax_rank = attrs.use_softmax ? x.ndim() : 0;
    if (softmax_out.ndim() != softmax_rank)
      return make_error(error_kind::invalid_argument, "",
                        "softmax_out must have rank {} (x's rank with use_softmax, else 0), but has rank {}",
                        softmax_rank, softmax_out.ndim());
    if (loss.ndim() != x.ndim())
      return make_error(error_kind::invalid_argument, "", "loss must have x's rank {}, but has rank {}", x.ndim(),
                        loss.ndim());
    // softmax_out's axes are empty without use_softmax: it then proposes nothing.
    const auto map =
        try_sharding_merge_for_tensors({{n->softmax_out, softmax_out.dims_mapping()}, {n->loss, loss.dims_mapping()}});
    if (!map) return map.error();
    CTSPMD_TRY(check_class_axis(*map, *n, attrs));

    info.inputs.push_back(detail::mapped(x.dist_attr(), n->x, *map, /*unsharded_miss_axis=*/true));
    info.inputs.push_back(detail::mapped(label.dist_attr(), n->label, *map, /*unsharded_miss_axis=*/true));
    info.outputs.push_back(detail::mapped(softmax_out.dist_attr(), n->softmax_out, *map));
    info.outputs.push_back(detail::mapped(loss.dist_attr(), n->loss, *map));
    return {};
  }

 private:
  struct notation {
    axes_string x, label, softmax_out, loss;
    std::size_t axis = 0;  // the class axis, normalised
  };

  /// Validates x, the label and the axis, and labels the four tensors.
  static constexpr result<notation> notate(const dist_tensor_spec& x, const dist_tensor_spec& label,
                                           const attributes& attrs) {
    const std::int64_t rank = x.ndim();
    if (attrs.axis < -rank || attrs.axis >= rank)
      return make_error(error_kind::invalid_argument, "", "axis {} is out of range for x of rank {}", attrs.axis, rank);
    const auto axis = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis);
    if (label.ndim() != rank)
      return make_error(error_kind::invalid_argument, "", "the label must have x's rank {}, but has rank {}", rank,
                        label.ndim());
    const std::int64_t classes = label.shape()[axis];
    if (!attrs.soft_label && classes != -1 && classes != 1)
      return make_error(error_kind::invalid_argument, "",
                        "a hard label (soft_label = false) has size 1 on the class axis {}, but has size {}", axis,
                        classes);
    const auto letters = try_get_broadcast_axes(rank - 1, rank - 1, alphabets::cross_entropy);
    if (!letters) return letters.error();

    notation n;
    n.axis = axis;
    for (std::size_t i = 0, next = 0; i < static_cast<std::size_t>(rank); ++i) {
      const bool class_axis = i == axis;
      const char letter = class_axis ? 'k' : (*letters)[next++];
      n.x.push_back(letter);
      n.loss.push_back(class_axis ? broadcast_label : letter);
    }
    n.label = attrs.soft_label ? n.x : n.loss;
    if (attrs.use_softmax) n.softmax_out = n.x;
    return n;
  }

  /// A sharded class axis needs the c_softmax_with_cross_entropy layout.
  static constexpr status check_class_axis(const axis_to_dim_map& map, const notation& n, const attributes& attrs) {
    if (!map.contains('k') || map.at('k') == -1) return {};
    const std::int64_t m = map.at('k');
    if (attrs.soft_label)
      return make_error(error_kind::invalid_argument, "",
                        "the class axis {} is sharded by mesh dim {}, which does not support soft_label", n.axis, m);
    if (n.axis + 1 != n.x.size())
      return make_error(error_kind::invalid_argument, "",
                        "the class axis {} is sharded by mesh dim {}, which needs it to be the last axis ({})", n.axis,
                        m, n.x.size() - 1);
    if (!attrs.use_softmax)
      return make_error(error_kind::invalid_argument, "",
                        "the class axis {} is sharded by mesh dim {}, which needs use_softmax = true", n.axis, m);
    return {};
  }
};

}  // namespace ctspmd::rules

#include <boost/hana/adapt_struct.hpp>
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::cross_entropy_with_softmax_attributes, axis, ignore_index, numeric_stable_mode,
                        use_softmax, soft_label);

#endif
