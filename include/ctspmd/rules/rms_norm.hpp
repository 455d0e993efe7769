#ifndef CTSPMD_RULES_RMS_NORM_HPP
#define CTSPMD_RULES_RMS_NORM_HPP
/// \file The rms_norm rule (`rms_norm`, `fused_rms_norm`): out = x / sqrt(mean(x^2) + epsilon)
/// * scale over x's last dim, invvar = 1 / sqrt(mean(x^2) + epsilon); and its grad rule
/// `rms_norm_grad`. Also the alignment the norm grads share (`detail::align_norm_grad`).
///
/// Operands: inputs x (rank r >= 1) and scale (1-D, x's last size); outputs out (x's shape) and
/// invvar (shape x[:r-1]). Ranks and scale's size are checked (`invalid_argument`).
///
/// Notation: x and out get the first r letters of `abcdefghijklmnopqrstuvwxyz` with the last one
/// `'1'`; invvar the first r - 1 letters.
///
/// Forward (phi's RmsNormInferSpmd): every device needs whole rows to normalise them, so x's
/// last dim is replicated (a reshard if it was sharded) and its leading dims keep their
/// sharding (merged alone: under `phi` the co-shard union, which drops trailing mesh dims that do
/// not divide a dim); out takes x's mapping, invvar the leading dims'. scale is replicated. A
/// partial x cannot be normalised part by part: partial status is dropped (x is reduced first)
/// and no output is partial. (layer_norm under phi moves the normalised dims' mesh dims to x's
/// first dim; phi's rms_norm simply replicates the last dim, and so do we.)
///
/// Backward (phi's reverse): out's leading dims and invvar's dims (the same labels) are merged
/// (fluid: first-wins, an axis on two mesh dims is `unimplemented`; phi: the co-shard union); x
/// and out take the result with the last dim replicated, invvar the leading dims', scale is
/// replicated.
///
/// `rms_norm_grad(x, scale, invvar, out_grad)` gives x_grad and scale_grad. x, invvar and
/// out_grad are aligned on the leading dims (phi's AlignDimsSharding, `align_least_cost`: a mesh
/// dim the three agree on stays, another goes to the cheapest free leading dim; under `fluid` the
/// first-wins merge of the three, in that order); the last dim is replicated; partial status is
/// dropped. x_grad takes the aligned layout of x; scale is replicated and scale_grad is
/// replicated and **partial (sum) on every mesh dim that shards a leading dim**: each device sums
/// out_grad * x * invvar over its own rows only.
///
/// Round trip (rms_norm): forward then backward gives back forward's inputs, and forward from
/// them the same outputs.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/policies.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

namespace detail {

/// The labels of a norm: x's (the leading letters, then `'1'` for the normalised dims) and the
/// leading dims' (the statistics': invvar, mean, variance).
struct norm_labels {
  axes_string x;
  axes_string lead;
};

/// Labels for x of `rank` normalised from dim `begin` on.
constexpr result<norm_labels> make_norm_labels(std::int64_t rank, std::int64_t begin) {
  const auto letters = first_letters(rank);
  if (!letters) return letters.error();
  norm_labels l{axes_string(*letters), axes_string(letters->substr(0, static_cast<std::size_t>(begin)))};
  for (auto i = static_cast<std::size_t>(begin); i < l.x.size(); ++i) l.x[i] = broadcast_label;
  return l;
}

/// The alignment of the norm grads: merges into `map` the leading dims of `specs` labelled
/// `labels` (x-like operands with the `'1'` normalised dims, statistics with the leading dims
/// only): under `phi` phi's AlignDimsSharding (`align_least_cost` over the leading letters
/// `lead`, partial status not kept), under `fluid` the first-wins merge.
template <std::size_t N>
constexpr status align_norm_grad(axis_to_dim_map& map, std::span<const std::string_view, N> labels, spec_span specs,
                                 std::string_view lead, semantics s) {
  if (s != semantics::phi) return merge_operands(map, labels, specs, s);
  kept_partial kept{};
  align_least_cost(
      map, kept, labels.size(), [&](std::size_t t) { return labels[t]; },
      [&](std::size_t t) -> const tensor_dist_attr& { return specs[t].dist_attr(); },
      [&](std::size_t t) -> const tensor_shape& { return specs[t].shape(); }, lead, /*allow_partial=*/false);
  return {};
}

/// `like` replicated, partial (sum) on every mesh dim that `map` gives to a label of `lead`
/// (the gradient of a parameter summed over the leading dims).
constexpr tensor_dist_attr summed_over(const tensor_dist_attr& like, const axis_to_dim_map& map, std::string_view lead) {
  tensor_dist_attr a = replicated_on_mesh(like);
  mesh_dims summed;
  for (const char c : lead) {
    const mesh_dim_list l = map.list(c);
    for (std::size_t k = 0; k < l.size(); ++k) summed.push_back(l[k]);
  }
  if (!summed.empty()) a.set_partial_status(summed, reduce_type::sum);
  return a;
}

/// Checks that `spec` (named `what`) has rank `rank` and the sizes of `shape`'s first dims.
constexpr status check_norm_operand(const dist_tensor_spec& spec, const char* rank_format, const char* size_format,
                                    std::int64_t rank, const tensor_shape& shape) {
  if (spec.ndim() != rank) return make_error(error_kind::invalid_argument, "", rank_format, spec.ndim(), rank);
  for (std::size_t d = 0; d < spec.shape().size(); ++d)
    if (spec.shape()[d] != -1 && shape[d] != -1 && spec.shape()[d] != shape[d])
      return make_error(error_kind::invalid_argument, "", size_format, spec.shape()[d], d, shape[d]);
  return {};
}

}  // namespace detail

/// Attributes of `rms_norm` (Paddle's default).
struct rms_norm_attributes {
  double epsilon = 1e-5;  ///< added to the mean square (no effect on sharding)
};

/// The rms_norm rule (also `fused_rms_norm`; see the file comment): inputs x, scale; outputs
/// out, invvar.
struct rms_norm : rule_base<rms_norm, rms_norm_attributes> {
  static constexpr std::string_view name = "rms_norm";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{2};

  /// out: x's shape; invvar: x[:r-1].
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    const auto n = notation(in[0], in[1]);
    if (!n) return n.error();
    out.push_back(in[0].shape());
    tensor_shape& invvar = out.emplace_back();
    for (std::size_t d = 0; d < n->lead.size(); ++d) invvar.push_back(in[0].shape()[d]);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    const auto n = notation(in[0], in[1]);
    if (!n) return n.error();
    const auto& x = in[0];
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->x, x, s, {true, false, false, /*drop_indivisible=*/true}));
    push(info.inputs, x.dist_attr(), n->x, map);
    info.inputs.push_back(replicated_on_mesh(in[1].dist_attr()));
    push(info.outputs, x.dist_attr(), n->x, map);
    push(info.outputs, x.dist_attr(), n->lead, map);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    const auto n = notation(in[0], in[1]);
    if (!n) return n.error();
    const auto& x = in[0];
    CTSPMD_TRY(detail::check_norm_operand(out[0], "out has rank {}, but x has rank {}",
                                          "out has size {} at dim {}, but x has size {}", x.ndim(), x.shape()));
    CTSPMD_TRY(detail::check_norm_operand(out[1], "invvar has rank {}, but x's leading dims are {}",
                                          "invvar has size {} at dim {}, but x has size {}", x.ndim() - 1, x.shape()));
    // Only the outputs are merged: x's own mapping does not count backward.
    const std::array<std::string_view, 2> labels{n->x.view(), n->lead.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), out, s,
                              {true, false, false, /*drop_indivisible=*/true}));
    push(info.inputs, x.dist_attr(), n->x, map);
    info.inputs.push_back(replicated_on_mesh(in[1].dist_attr()));
    push(info.outputs, out[0].dist_attr(), n->x, map);
    push(info.outputs, out[1].dist_attr(), n->lead, map);
    return {};
  }

  /// Checks x's rank and scale's shape, and labels the operands.
  static constexpr result<detail::norm_labels> notation(const dist_tensor_spec& x, const dist_tensor_spec& scale) {
    if (x.ndim() < 1)
      return make_error(error_kind::invalid_argument, "", "x must have rank at least 1, but has rank {}", x.ndim());
    const std::int64_t last = x.shape()[x.shape().size() - 1];
    if (scale.ndim() != 1)
      return make_error(error_kind::invalid_argument, "", "scale must be 1-D, but has rank {}", scale.ndim());
    if (scale.shape()[0] != -1 && last != -1 && scale.shape()[0] != last)
      return make_error(error_kind::invalid_argument, "", "scale has size {}, but x's last dim has size {}",
                        scale.shape()[0], last);
    return detail::make_norm_labels(x.ndim(), x.ndim() - 1);
  }
};

/// Attributes of `rms_norm_grad` (Paddle's default).
struct rms_norm_grad_attributes {
  double epsilon = 1e-5;  ///< as rms_norm's
};

/// The rms_norm grad rule: inputs x, scale, invvar, out_grad; outputs x_grad, scale_grad.
struct rms_norm_grad : rule_base<rms_norm_grad, rms_norm_grad_attributes> {
  static constexpr std::string_view name = "rms_norm_grad";
  static constexpr operand_count input_count{4};
  static constexpr operand_count output_count{2};

  /// x_grad and scale_grad: x's and scale's shapes.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0, 1});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    const auto n = rms_norm::notation(in[0], in[1]);
    if (!n) return n.error();
    const auto& x = in[0];
    CTSPMD_TRY(detail::check_norm_operand(in[2], "invvar has rank {}, but x's leading dims are {}",
                                          "invvar has size {} at dim {}, but x has size {}", x.ndim() - 1, x.shape()));
    CTSPMD_TRY(detail::check_norm_operand(in[3], "out_grad has rank {}, but x has rank {}",
                                          "out_grad has size {} at dim {}, but x has size {}", x.ndim(), x.shape()));
    const std::array<std::string_view, 3> labels{n->x.view(), n->lead.view(), n->x.view()};
    const std::array<dist_tensor_spec, 3> aligned{in[0], in[2], in[3]};
    axis_to_dim_map map;
    CTSPMD_TRY(detail::align_norm_grad(map, std::span<const std::string_view, 3>(labels), spec_span(aligned),
                                       n->lead, s));
    push(info.inputs, x.dist_attr(), n->x, map);
    info.inputs.push_back(replicated_on_mesh(in[1].dist_attr()));
    push(info.inputs, in[2].dist_attr(), n->lead, map);
    push(info.inputs, in[3].dist_attr(), n->x, map);
    push(info.outputs, x.dist_attr(), n->x, map);
    info.outputs.push_back(detail::summed_over(in[1].dist_attr(), map, n->lead));
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
