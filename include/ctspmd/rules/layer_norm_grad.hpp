#ifndef CTSPMD_RULES_LAYER_NORM_GRAD_HPP
#define CTSPMD_RULES_LAYER_NORM_GRAD_HPP
/// \file The layer_norm grad rule (phi): `layer_norm_grad(x, scale, bias, mean, variance,
/// out_grad)` gives x_grad, scale_grad and bias_grad. Called forward; no reverse inference.
///
/// Operands: x of rank r >= 2; `begin_norm_axis` (bna) in [1, r), negative counting from the end
/// (as layer_norm.hpp); mean and variance of shape x[:bna]; out_grad of x's shape. scale and bias
/// are optional (absent: shape `[]`, dims mapping `[]`, given back as given; their gradient is
/// then absent too, without partial status); when given they span the normalised dims and may
/// have any rank (phi's test passes a 2-D scale): their layout does not matter, they are
/// replicated. Each shape precondition is an `invalid_argument` naming the operand.
///
/// Layouts (phi's LayerNormGradInferSpmd): x, mean, variance and out_grad are aligned on the
/// leading dims (rms_norm.hpp's `align_norm_grad`: phi's AlignDimsSharding under `phi`, the
/// first-wins merge in the order x, mean, variance, out_grad under `fluid`); the normalised dims
/// are replicated; partial status is dropped (each is reduced first). x_grad takes x's aligned
/// layout. scale and bias are replicated; scale_grad and bias_grad are replicated and **partial
/// (sum) on every mesh dim that shards a leading dim**: each device sums over its own rows.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/rms_norm.hpp>

namespace ctspmd::rules {

/// Attributes of `layer_norm_grad` (Paddle's defaults).
struct layer_norm_grad_attributes {
  double epsilon = 1e-5;             ///< as layer_norm's (no effect on sharding)
  std::int64_t begin_norm_axis = 1;  ///< first normalised dim of x (negative: from the end)
};

/// The layer_norm grad rule (see the file comment).
struct layer_norm_grad : rule_base<layer_norm_grad, layer_norm_grad_attributes> {
  static constexpr std::string_view name = "layer_norm_grad";
  static constexpr operand_count input_count{6};   ///< x, scale, bias, mean, variance, out_grad
  static constexpr operand_count output_count{3};  ///< x_grad, scale_grad, bias_grad

  /// Each gradient has its forward operand's shape (an absent one stays []).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0, 1, 2});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const std::int64_t r = x.ndim();
    const std::int64_t bna = attrs.begin_norm_axis < 0 ? attrs.begin_norm_axis + r : attrs.begin_norm_axis;
    if (bna < 1 || bna >= r)
      return make_error(error_kind::invalid_argument, "",
                        "begin_norm_axis {} is outside [1, {}) for x of rank {} (negative values count from the end)",
                        attrs.begin_norm_axis, r, r);
    const auto n = detail::make_norm_labels(r, bna);
    if (!n) return n.error();
    CTSPMD_TRY(detail::check_norm_operand(in[3], "mean has rank {}, but begin_norm_axis is {}",
                                          "mean has size {} at dim {}, but x has size {}", bna, x.shape()));
    CTSPMD_TRY(detail::check_norm_operand(in[4], "variance has rank {}, but begin_norm_axis is {}",
                                          "variance has size {} at dim {}, but x has size {}", bna, x.shape()));
    CTSPMD_TRY(detail::check_norm_operand(in[5], "out_grad has rank {}, but x has rank {}",
                                          "out_grad has size {} at dim {}, but x has size {}", r, x.shape()));
    const std::array<std::string_view, 4> labels{n->x.view(), n->lead.view(), n->lead.view(), n->x.view()};
    const std::array<dist_tensor_spec, 4> aligned{in[0], in[3], in[4], in[5]};
    axis_to_dim_map map;
    CTSPMD_TRY(detail::align_norm_grad(map, std::span<const std::string_view, 4>(labels), spec_span(aligned),
                                       n->lead, s));
    push(info.inputs, x.dist_attr(), n->x, map);
    for (std::size_t p = 1; p < 3; ++p)
      info.inputs.push_back(is_absent(in[p]) ? in[p].dist_attr() : replicated_on_mesh(in[p].dist_attr()));
    push(info.inputs, in[3].dist_attr(), n->lead, map);
    push(info.inputs, in[4].dist_attr(), n->lead, map);
    push(info.inputs, in[5].dist_attr(), n->x, map);
    push(info.outputs, x.dist_attr(), n->x, map);
    for (std::size_t p = 1; p < 3; ++p)
      if (is_absent(in[p]))
        info.outputs.emplace_back(in[p].dist_attr()).clean_partial_status();
      else
        info.outputs.push_back(detail::summed_over(in[p].dist_attr(), map, n->lead));
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
