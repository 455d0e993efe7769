#ifndef CTSPMD_RULES_CROSS_ENTROPY_WITH_SOFTMAX_HPP
#define CTSPMD_RULES_CROSS_ENTROPY_WITH_SOFTMAX_HPP
/// \file The cross_entropy_with_softmax rule (`cross_entropy_with_softmax`,
/// `softmax_with_cross_entropy`): inputs x (logits) and label; outputs softmax_out =
/// softmax(x) along `axis` and loss = -sum(label * log(softmax_out)) along `axis`; and its
/// gradient (`cross_entropy_with_softmax_grad`, `softmax_with_cross_entropy_grad`: below).
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
/// Under `phi`: the merges are co-shard unions, and backward replicates a sharded class axis
/// that does not have the c_softmax layout (phi's reverse rule) instead of failing; forward
/// still fails, as phi's does.
///
/// Forward then backward gives back forward's inputs (the round-trip property holds).
///
/// cross_entropy_with_softmax_grad (phi, called forward; also `softmax_with_cross_entropy_grad`):
/// inputs label, softmax, loss_grad, in the order of phi's CrossEntropyWithSoftmaxGradInferSpmd
/// and of Paddle's grad kernel (section 7 of the notes has no row for it); attributes as the
/// forward; output x_grad (the logits' gradient, of softmax's shape): with use_softmax,
/// (softmax * sum(label) - label) * loss_grad over the class axis for soft labels, and
/// (softmax - onehot(label)) * loss_grad for hard ones (0 where label == ignore_index); without
/// use_softmax (softmax then holds the probabilities x), -label / softmax * loss_grad.
/// Notation as forward, of loss_grad's rank R: the label and loss_grad have `'1'` at the class
/// axis (a soft label has `k`), softmax and x_grad `k`. Checks (`invalid_argument`): R >= 1,
/// axis in [-R, R); the label and softmax of rank R, a hard label and loss_grad of size 1 on
/// the class axis; softmax's sizes the label's (soft) and loss_grad's off the class axis (-1
/// matches anything). Without use_softmax, softmax may be absent (shape `[]`, dims mapping
/// `[]`, as forward's 0-D softmax_out): it then comes back as given and x_grad takes the
/// label's shape (soft) or loss_grad's mapping with the class axis replicated.
/// Inference: label, softmax and loss_grad are merged in that order (first-wins under `fluid`,
/// two mesh dims on one axis being `unimplemented`; the co-shard union under `phi`, mesh dims
/// that do not divide their axis dropped); every input and x_grad take the merge. The class
/// axis: where forward may keep it sharded (hard labels, the class axis last, use_softmax: the
/// c_softmax_with_cross_entropy layout), softmax's sharding of it is kept and x_grad takes it
/// (each device computes its slice of the classes, as the vocabulary-parallel kernel does);
/// otherwise it is replicated in softmax, a soft label and x_grad (phi always replicates it,
/// which would all-gather a vocabulary-parallel softmax: we keep forward's layout instead).
/// Partial: every input comes back whole (softmax and the label are no sums of parts; x_grad is
/// linear in loss_grad, but phi cleans a partial loss_grad and so do we); x_grad is not partial.
/// No reverse inference; both semantics behave the same except for the merge policy.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

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
struct cross_entropy_with_softmax : rule_base<cross_entropy_with_softmax, cross_entropy_with_softmax_attributes> {
  static constexpr std::string_view name = "cross_entropy_with_softmax";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{2};

  /// softmax_out: x's shape (with use_softmax; else [], none); loss: x's shape with size 1 at
  /// the class axis.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = notate(in[0], in[1], attrs);
    if (!n) return n.error();
    out.push_back(attrs.use_softmax ? in[0].shape() : tensor_shape{});
    out.emplace_back(in[0].shape())[n->axis] = 1;
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& label = in[1];
    const auto n = notate(x, label, attrs);
    if (!n) return n.error();
    const std::array<std::string_view, 2> labels{n->x.view(), n->label.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), in, s));
    CTSPMD_TRY(check_class_axis(map, *n, attrs));

    push(info.inputs, x.dist_attr(), n->x, map);
    push(info.inputs, label.dist_attr(), n->label, map);
    push(info.outputs, x.dist_attr(), n->softmax_out, map);
    push(info.outputs, x.dist_attr(), n->loss, map);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
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
    const std::array<std::string_view, 2> labels{n->softmax_out.view(), n->loss.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), out, s));
    if (s == semantics::phi && !check_class_axis(map, *n, attrs))
      map.set('k', mesh_dim_list{});  // phi replicates a class axis it cannot keep sharded
    else
      CTSPMD_TRY(check_class_axis(map, *n, attrs));

    push(info.inputs, x.dist_attr(), n->x, map);
    push(info.inputs, label.dist_attr(), n->label, map);
    push(info.outputs, softmax_out.dist_attr(), n->softmax_out, map);
    push(info.outputs, loss.dist_attr(), n->loss, map);
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
    const auto normalized = normalize_axis(attrs.axis, rank, "axis {} is out of range for x of rank {}");
    if (!normalized) return normalized.error();
    const std::size_t axis = *normalized;
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
    if (map.list('k').empty()) return {};
    const std::int64_t m = map.list('k').major();
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

/// The gradient rule of cross_entropy_with_softmax: inputs label, softmax, loss_grad; output
/// x_grad (see the file comment).
struct cross_entropy_with_softmax_grad
    : rule_base<cross_entropy_with_softmax_grad, cross_entropy_with_softmax_attributes> {
  static constexpr std::string_view name = "cross_entropy_with_softmax_grad";
  static constexpr operand_count input_count{3};   // label, softmax, loss_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: softmax's shape; without it (absent, use_softmax off), loss_grad's with the class
  /// axis' size unknown (-1).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    if (attrs.use_softmax || !is_absent(in[1])) return shapes_of(out, in, {1});
    const auto axis = normalize_axis(attrs.axis, in[2].ndim(), "axis {} is out of range for loss_grad of rank {}");
    if (!axis) return axis.error();
    out.emplace_back(in[2].shape())[*axis] = -1;
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& label = in[0];
    const auto& softmax = in[1];
    const auto& loss_grad = in[2];
    const std::int64_t rank = loss_grad.ndim();
    if (rank < 1)
      return make_error(error_kind::invalid_argument, "", "loss_grad must have rank >= 1, but has rank {}", rank);
    const auto normalized = normalize_axis(attrs.axis, rank, "axis {} is out of range for loss_grad of rank {}");
    if (!normalized) return normalized.error();
    const std::size_t axis = *normalized;
    const bool absent = !attrs.use_softmax && is_absent(softmax);
    if (label.ndim() != rank || (!absent && softmax.ndim() != rank))
      return make_error(error_kind::invalid_argument, "",
                        "the label and softmax must have loss_grad's rank {}, but have ranks {} and {}", rank,
                        label.ndim(), softmax.ndim());
    if (loss_grad.shape()[axis] != -1 && loss_grad.shape()[axis] != 1)
      return make_error(error_kind::invalid_argument, "", "loss_grad has size {} on the class axis {}, but must have 1",
                        loss_grad.shape()[axis], axis);
    const std::int64_t classes = label.shape()[axis];
    if (!attrs.soft_label && classes != -1 && classes != 1)
      return make_error(error_kind::invalid_argument, "",
                        "a hard label (soft_label = false) has size 1 on the class axis {}, but has size {}", axis,
                        classes);
    tensor_shape off_axis = loss_grad.shape();  // every operand's sizes off the class axis
    off_axis[axis] = -1;
    CTSPMD_TRY(check_same_sizes(label.shape(), off_axis, "the label's dim {} has size {}, but loss_grad's has size {}"));
    if (!absent) {
      CTSPMD_TRY(check_same_sizes(softmax.shape(), off_axis, "softmax's dim {} has size {}, but loss_grad's has size {}"));
      if (attrs.soft_label)
        CTSPMD_TRY(check_same_sizes(softmax.shape(), label.shape(), "softmax's dim {} has size {}, but the label's has size {}"));
    }
    const auto letters = try_get_broadcast_axes(rank - 1, rank - 1, alphabets::cross_entropy);
    if (!letters) return letters.error();

    // The class axis stays sharded only in the c_softmax layout; elsewhere it is '1'.
    const bool shard_classes = !attrs.soft_label && axis + 1 == static_cast<std::size_t>(rank) && attrs.use_softmax;
    axes_string x, hard;  // x's labels, and with '1' at the class axis
    for (std::size_t i = 0, next = 0; i < static_cast<std::size_t>(rank); ++i) {
      const bool class_axis = i == axis;
      const char letter = class_axis ? (shard_classes ? 'k' : broadcast_label) : (*letters)[next++];
      x.push_back(letter);
      hard.push_back(class_axis ? broadcast_label : letter);
    }
    const axes_string& label_labels = attrs.soft_label ? x : hard;
    const std::array<std::string_view, 3> labels{label_labels.view(), absent ? std::string_view{} : x.view(),
                                                 hard.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 3>(labels), in, s,
                              {true, false, false, /*drop_indivisible=*/true}));
    push(info.inputs, label.dist_attr(), label_labels, map);
    if (absent)
      info.inputs.push_back(softmax.dist_attr());
    else
      push(info.inputs, softmax.dist_attr(), x, map);
    push(info.inputs, loss_grad.dist_attr(), hard, map);
    push(info.outputs, (absent ? label : softmax).dist_attr(), x, map);  // x_grad
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
