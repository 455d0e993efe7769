#ifndef CTSPMD_RULES_C_SOFTMAX_WITH_CROSS_ENTROPY_HPP
#define CTSPMD_RULES_C_SOFTMAX_WITH_CROSS_ENTROPY_HPP
/// \file The c_softmax_with_cross_entropy rule (phi): the vocabulary-parallel softmax cross
/// entropy. Inputs logits [..., V] and label [..., 1] (hard labels: a class index per position);
/// outputs softmax [..., V] = softmax(logits) over the last dim and loss [..., 1] =
/// -log softmax[label] (0 where label == ignore_index); and its gradient
/// (`c_softmax_with_cross_entropy_grad`: below).
///
/// Notation: the leading dims are the first rank - 1 letters of `abcdefghijlmnopqrstuvwxyz`, the
/// vocabulary `k`; logits and softmax are leading + `k`, label and loss leading + `'1'`.
///
/// Checks (`invalid_argument`): logits of rank >= 1; the label of logits' rank, its leading
/// sizes logits' and its last size 1 (-1 matches any).
///
/// Forward: logits and label are merged with the semantics' policy (fluid first-wins, phi the
/// co-shard union), conflicts resolved (the label loses a mesh dim logits already use). The
/// vocabulary axis keeps its sharding: the kernel reduces the row maximum, the exponentials' sum
/// and the label's logit across the vocabulary's mesh dims, so each device holds its slice of
/// softmax and the whole loss: loss is replicated there, not partial. Inputs come back with the
/// merged mappings and without partial status (softmax is not linear). `rank`, `nranks` and
/// `ring_id` name the kernel's communicator and do not change the sharding.
///
/// Backward (phi has none; derived): softmax and loss are merged over their labels; logits take
/// the merged mapping of leading + `k`, the label that of leading + `'1'`; the outputs come back
/// with the merged mappings and no partial status. Forward from them gives them back (the
/// round-trip property holds).
///
/// c_softmax_with_cross_entropy_grad (phi, called forward): inputs softmax, label, loss_grad, in
/// the order of Paddle's grad kernel and its CSoftmaxWithCrossEntropyGradInferSpmd (section 7 of
/// the notes has no row for it); attributes as the forward; output logits_grad = (softmax -
/// onehot(label)) * loss_grad (0 on a row whose label is ignore_index), of softmax's shape.
/// Notation as forward: softmax and logits_grad leading + `k`, label and loss_grad leading +
/// `'1'`. Checks (`invalid_argument`): softmax of rank >= 1; the label and loss_grad of its rank,
/// its leading sizes, and size 1 last. The three are merged (phi merges them; we merge them in
/// input order, softmax first: first-wins under `fluid`, two mesh dims on one axis being
/// `unimplemented`; the co-shard union under `phi`, mesh dims that do not divide their axis
/// dropped), and every input and logits_grad take the merge: the vocabulary keeps softmax's
/// sharding (each device subtracts the one-hot of the labels in its slice of the vocabulary, as
/// the kernel does with `rank` and `nranks`), and logits_grad has softmax's mapping, as in phi.
/// Every input comes back whole (logits_grad is linear in loss_grad, but phi cleans a partial
/// loss_grad and so do we); logits_grad is not partial. No reverse inference; both semantics
/// behave the same except for the merge policy.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `c_softmax_with_cross_entropy` (Paddle's defaults).
struct c_softmax_with_cross_entropy_attributes {
  std::int64_t ignore_index = -100;  ///< label value that gives loss 0
  std::int64_t ring_id = 0;          ///< the kernel's communicator
  std::int64_t rank = 0;             ///< this device's rank in the vocabulary group (the kernel's)
  std::int64_t nranks = 1;           ///< the vocabulary group's size (the kernel's)
};

/// The c_softmax_with_cross_entropy rule.
struct c_softmax_with_cross_entropy : rule_base<c_softmax_with_cross_entropy, c_softmax_with_cross_entropy_attributes> {
  static constexpr std::string_view name = "c_softmax_with_cross_entropy";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{2};

  /// softmax: logits' shape; loss: logits' shape with a last size of 1.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    CTSPMD_TRY(notate(in[0], in[1]));
    out.push_back(in[0].shape());
    out.emplace_back(in[0].shape())[in[0].shape().size() - 1] = 1;
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    const auto n = notate(in[0], in[1]);
    if (!n) return n.error();
    const std::array<std::string_view, 2> labels{n->logits.view(), n->label.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), in, s));
    push(info.inputs, in[0].dist_attr(), n->logits, map);
    push(info.inputs, in[1].dist_attr(), n->label, map);
    push(info.outputs, in[0].dist_attr(), n->logits, map);
    push(info.outputs, in[0].dist_attr(), n->label, map);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    const auto n = notate(in[0], in[1]);
    if (!n) return n.error();
    if (out[0].ndim() != in[0].ndim() || out[1].ndim() != in[0].ndim())
      return make_error(error_kind::invalid_argument, "",
                        "softmax and loss must have logits' rank {}, but have ranks {} and {}", in[0].ndim(),
                        out[0].ndim(), out[1].ndim());
    const std::array<std::string_view, 2> labels{n->logits.view(), n->label.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), out, s));
    push(info.inputs, in[0].dist_attr(), n->logits, map);
    push(info.inputs, in[1].dist_attr(), n->label, map);
    push(info.outputs, out[0].dist_attr(), n->logits, map);
    push(info.outputs, out[1].dist_attr(), n->label, map);
    return {};
  }

  /// The labels of logits (leading + `k`) and of the label (leading + `'1'`), checked.
  struct notation {
    axes_string logits, label;
  };
  static constexpr result<notation> notate(const dist_tensor_spec& logits, const dist_tensor_spec& label) {
    const std::int64_t r = logits.ndim();
    if (r < 1) return make_error(error_kind::invalid_argument, "", "logits must have rank >= 1, but have rank {}", r);
    if (label.ndim() != r)
      return make_error(error_kind::invalid_argument, "", "the label must have logits' rank {}, but has rank {}", r,
                        label.ndim());
    for (std::size_t d = 0; d + 1 < static_cast<std::size_t>(r); ++d)
      if (label.shape()[d] != -1 && logits.shape()[d] != -1 && label.shape()[d] != logits.shape()[d])
        return make_error(error_kind::invalid_argument, "", "the label's dim {} has size {}, but logits' has size {}", d,
                          label.shape()[d], logits.shape()[d]);
    const std::int64_t last = label.shape()[static_cast<std::size_t>(r - 1)];
    if (last != -1 && last != 1)
      return make_error(error_kind::invalid_argument, "",
                        "the label holds one class index per position: its last dim must have size 1, but has {}", last);
    const auto letters = try_get_broadcast_axes(r - 1, r - 1, alphabets::cross_entropy);
    if (!letters) return letters.error();
    notation n{*letters, *letters};
    n.logits.push_back('k');
    n.label.push_back(broadcast_label);
    return n;
  }
};

/// The gradient rule of c_softmax_with_cross_entropy: inputs softmax, label, loss_grad; output
/// logits_grad (see the file comment).
struct c_softmax_with_cross_entropy_grad
    : rule_base<c_softmax_with_cross_entropy_grad, c_softmax_with_cross_entropy_attributes> {
  static constexpr std::string_view name = "c_softmax_with_cross_entropy_grad";
  static constexpr operand_count input_count{3};   // softmax, label, loss_grad
  static constexpr operand_count output_count{1};  // logits_grad

  /// logits_grad: softmax's shape (logits').
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    const auto& softmax = in[0];
    const auto& loss_grad = in[2];
    if (softmax.ndim() < 1)
      return make_error(error_kind::invalid_argument, "", "softmax must have rank >= 1, but has rank {}", softmax.ndim());
    const auto n = c_softmax_with_cross_entropy::notate(softmax, in[1]);
    if (!n) return n.error();
    if (loss_grad.ndim() != softmax.ndim())
      return make_error(error_kind::invalid_argument, "", "loss_grad must have softmax's rank {}, but has rank {}",
                        softmax.ndim(), loss_grad.ndim());
    tensor_shape want = softmax.shape();
    want[want.size() - 1] = 1;
    CTSPMD_TRY(check_same_sizes(loss_grad.shape(), want,
                                "loss_grad's dim {} has size {}, but must have {} (softmax's, 1 last)"));
    const std::array<std::string_view, 3> labels{n->logits.view(), n->label.view(), n->label.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 3>(labels), in, s,
                              {true, false, false, /*drop_indivisible=*/true}));
    push(info.inputs, softmax.dist_attr(), n->logits, map);
    push(info.inputs, in[1].dist_attr(), n->label, map);
    push(info.inputs, loss_grad.dist_attr(), n->label, map);
    push(info.outputs, softmax.dist_attr(), n->logits, map);  // logits_grad
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
