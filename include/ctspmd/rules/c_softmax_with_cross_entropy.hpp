#ifndef CTSPMD_RULES_C_SOFTMAX_WITH_CROSS_ENTROPY_HPP
#define CTSPMD_RULES_C_SOFTMAX_WITH_CROSS_ENTROPY_HPP
/// \file The c_softmax_with_cross_entropy rule (phi): the vocabulary-parallel softmax cross
/// entropy. Inputs logits [..., V] and label [..., 1] (hard labels: a class index per position);
/// outputs softmax [..., V] = softmax(logits) over the last dim and loss [..., 1] =
/// -log softmax[label] (0 where label == ignore_index).
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
/// Not registered: its grad rule (phi merges label, softmax and loss_grad, and logits_grad takes
/// softmax's mapping), which section 7 of the notes does not list.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit.hpp>
#include <ctspmd/rules/rule_base.hpp>

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

 private:
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

}  // namespace ctspmd::rules

#endif
