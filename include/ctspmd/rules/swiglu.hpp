#ifndef CTSPMD_RULES_SWIGLU_HPP
#define CTSPMD_RULES_SWIGLU_HPP
/// \file The swiglu rule: out = silu(x) * y, or, with y absent, silu(x1) * x2 where x1 and x2
/// are the two halves of x's last dim. Inputs x and y (optional: absent = shape `[]`, dims
/// mapping `[]`, and it comes back as given); one output.
///
/// With y: the binary elementwise rule (elementwise.hpp: merged x and y, broadcasting, partial
/// dropped; under `phi` phi's element-wise merge).
///
/// Without y: x's last dim is split into halves, so out's last dim is half of x's (x's last size
/// must be even when known: `invalid_argument` otherwise). A device holding a block of x's last
/// dim does not hold the matching block of the other half, so that dim must be replicated: x
/// comes back with it -1 (the reshard) and so does the output; the other dims keep x's layout
/// (merged alone, as the unary rule does), partial dropped. phi runs the plain unary rule here
/// and only warns when x's last dim is sharded, which computes a wrong result; we do not copy
/// that. Backward: out must have x's rank and x's sizes except the last, which is half of x's;
/// out's mapping, its last dim replicated, is merged alone and x takes it.
///
/// `swiglu_grad(x, y, out_grad)` (y optional likewise) gives x_grad and y_grad. With y: the
/// binary elementwise grad (elementwise_grad.hpp): everything follows out_grad, whose partial
/// status is cleaned, and an operand's gradient is partial (sum) over the dims it was broadcast
/// on. Without y: x and x_grad take out_grad's mapping with the last dim replicated (x_grad's
/// halves pair up only there), out_grad too; y comes back absent as given, and y_grad is absent
/// (shape `[]`, dims mapping `[]`, no partial status).
///
/// swiglu exists only in phi; it behaves the same under both semantics except for the merge
/// policy.

#include <cstddef>
#include <cstdint>

#include <ctspmd/rules/elementwise.hpp>
#include <ctspmd/rules/elementwise_grad.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `swiglu`: none.
struct swiglu_attributes {};

/// The swiglu rule (see the file comment).
struct swiglu : rule_base<swiglu, swiglu_attributes> {
  static constexpr std::string_view name = "swiglu";
  static constexpr operand_count input_count{1, 2};  ///< x, y (optional)
  static constexpr operand_count output_count{1};

  /// x and y broadcast; without y, x's shape with its last size halved.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    if (in.size() == 2 && !is_absent(in[1])) return elementwise::output_shapes(out, in, {});
    CTSPMD_TRY(x_labels(in[0]));
    tensor_shape& o = out.emplace_back(in[0].shape());
    if (o[o.size() - 1] != -1) o[o.size() - 1] /= 2;
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    if (in.size() == 2 && !is_absent(in[1])) return elementwise::forward(info, in, {}, s);
    const auto& x = in[0];
    const auto labels = x_labels(x);
    if (!labels) return labels.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, *labels, x, s, {true, false, false, /*drop_indivisible=*/true}));
    push(info.inputs, x.dist_attr(), *labels, map);
    if (in.size() == 2) info.inputs.push_back(in[1].dist_attr());
    push(info.outputs, x.dist_attr(), *labels, map);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    if (in.size() == 2 && !is_absent(in[1])) return elementwise::backward(info, in, out, {}, s);
    const auto& x = in[0];
    const auto& o = out[0];
    const auto labels = x_labels(x);
    if (!labels) return labels.error();
    if (o.ndim() != x.ndim())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but x has rank {}", o.ndim(),
                        x.ndim());
    for (std::size_t d = 0; d < x.shape().size(); ++d) {
      const bool last = d + 1 == x.shape().size();
      const std::int64_t want = x.shape()[d] == -1 ? -1 : last ? x.shape()[d] / 2 : x.shape()[d];
      if (want != -1 && o.shape()[d] != -1 && o.shape()[d] != want)
        return make_error(error_kind::invalid_argument, "",
                          "the output has size {} at dim {}, but x's shape gives it size {}", o.shape()[d], d, want);
    }
    // Only the output's mapping is merged: x's own mapping does not count backward.
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, *labels, o, s, {true, false, false, true}));
    push(info.inputs, x.dist_attr(), *labels, map);
    if (in.size() == 2) info.inputs.push_back(in[1].dist_attr());
    push(info.outputs, o.dist_attr(), *labels, map);
    return {};
  }

  /// x's labels without y: its letters, the last dim `'1'` (replicated); x must have rank >= 1
  /// and an even last size.
  static constexpr result<axes_string> x_labels(const dist_tensor_spec& x) {
    if (x.ndim() < 1)
      return make_error(error_kind::invalid_argument, "", "x must have rank at least 1 (its last dim is halved), got {}",
                        x.ndim());
    const auto letters = first_letters(x.ndim());
    if (!letters) return letters.error();
    const std::int64_t last = x.shape()[x.shape().size() - 1];
    if (last != -1 && last % 2 != 0)
      return make_error(error_kind::invalid_argument, "",
                        "without y, x's last dim (size {}) is split in two halves, so its size must be even", last);
    axes_string labels(*letters);
    labels[labels.size() - 1] = broadcast_label;
    return labels;
  }
};

/// Attributes of `swiglu_grad`: none.
struct swiglu_grad_attributes {};

/// The swiglu grad rule: inputs x, y (optional), out_grad; outputs x_grad, y_grad.
struct swiglu_grad : rule_base<swiglu_grad, swiglu_grad_attributes> {
  static constexpr std::string_view name = "swiglu_grad";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{2};

  /// x_grad and y_grad: x's and y's shapes (y absent: [], given back).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0, 1});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics) {
    if (!is_absent(in[1])) return detail::broadcast_grad(info, in, 0, 2);
    const auto& x = in[0];
    const auto& g = in[2];
    const auto labels = swiglu::x_labels(x);
    if (!labels) return labels.error();
    if (g.ndim() != x.ndim())
      return make_error(error_kind::invalid_argument, "", "out_grad has rank {}, but x has rank {}", g.ndim(), x.ndim());
    for (std::size_t d = 0; d < x.shape().size(); ++d) {
      const bool last = d + 1 == x.shape().size();
      const std::int64_t want = x.shape()[d] == -1 ? -1 : last ? x.shape()[d] / 2 : x.shape()[d];
      if (want != -1 && g.shape()[d] != -1 && g.shape()[d] != want)
        return make_error(error_kind::invalid_argument, "",
                          "out_grad has size {} at dim {}, but x's shape gives it size {}", g.shape()[d], d, want);
    }
    // out_grad's layout, its last dim replicated, for x, out_grad and x_grad (no merge).
    multi_dims_mapping m = g.dist_attr().multi_dims_mapping();
    m[m.size() - 1] = mesh_dims{};
    tensor_dist_attr a(g.process_mesh(), m);
    a.set_batch_dim(g.dist_attr().batch_dim());
    info.inputs.push_back(a);
    info.inputs.push_back(in[1].dist_attr());
    info.inputs.push_back(a);
    info.outputs.push_back(a);
    info.outputs.push_back(detail::without_partial(in[1].dist_attr()));  // y_grad absent too
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
