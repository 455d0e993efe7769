#ifndef CTSPMD_RULES_TOPK_HPP
#define CTSPMD_RULES_TOPK_HPP
/// \file The selection rules along one axis: `argmax`, `argmin` (the index of the extreme
/// element), `topk` (the k extreme elements and their indices) and `topk_grad`.
///
/// Notation: x gets the first rank(x) letters; the selection axis is `'1'`: the answer depends
/// on every element of the axis (and an index is global), so a sharded axis is gathered first.
/// `axis` is in [-rank, rank) and normalised; a 0-D x takes -1 and 0.
///
/// argmax / argmin (axis, keepdims, flatten, dtype): the output is x without the axis (with
/// keepdims: the axis kept, `'1'`). With flatten, every dim of x is `'1'` and the output is
/// 0-D (with keepdims: rank(x), all `'1'`). phi's reverse with flatten and !keepdims appends a
/// -1 to the output's mapping; we do not copy that. Backward: the output's mapping goes to
/// x's kept dims, the axis replicated.
///
/// topk (k, axis, largest, sorted) -> out, indices, both of x's shape with k at the axis:
/// both take x's mapping (the axis replicated). Backward: out and indices are merged and x takes
/// the merge. topk_grad (x, indices, out_grad) -> x_grad: x, indices and out_grad are merged on
/// x's labels (the axis replicated; phi merges them on rank-1 letters, ignoring the axis: we
/// do not copy that) and x_grad takes the merge. No reverse inference.
///
/// Partial status is dropped everywhere (the extreme of a partial sum is not a partial of
/// extremes). Both semantics behave the same except for the merge policy.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/cumsum.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `argmax` and `argmin` (Paddle's defaults).
struct argmax_attributes {
  std::int64_t axis = -1;
  bool keepdims = false;
  bool flatten = false;
  std::string_view dtype = "int64";
};

/// Attributes of `topk` and `topk_grad` (Paddle's defaults).
struct topk_attributes {
  std::int64_t k = 1;
  std::int64_t axis = -1;
  bool largest = true;
  bool sorted = true;
};

/// The argmax rule (also `argmin`; see the file comment).
struct argmax : rule_base<argmax, argmax_attributes> {
  static constexpr std::string_view name = "argmax";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape without the axis (keepdims: size 1 there); flatten: [] (keepdims: all 1).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    CTSPMD_TRY(detail::scan_labels(in[0].ndim(), attrs.axis, attrs.flatten));
    const std::int64_t axis = attrs.axis < 0 ? attrs.axis + in[0].ndim() : attrs.axis;
    tensor_shape& o = out.emplace_back();
    for (std::size_t d = 0; d < in[0].shape().size(); ++d)
      if (attrs.flatten || static_cast<std::int64_t>(d) == axis) {
        if (attrs.keepdims) o.push_back(1);
      } else {
        o.push_back(in[0].shape()[d]);
      }
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto l = detail::scan_labels(in[0].ndim(), attrs.axis, attrs.flatten);
    if (!l) return l.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, *l, in[0], s, detail::scan_merge));
    push(info.inputs, in[0].dist_attr(), *l, map);
    push(info.outputs, in[0].dist_attr(), out_labels(*l, in[0].ndim(), attrs), map);
    return {};
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto l = detail::scan_labels(in[0].ndim(), attrs.axis, attrs.flatten);
    if (!l) return l.error();
    const axes_string ol = out_labels(*l, in[0].ndim(), attrs);
    if (out[0].ndim() != static_cast<std::int64_t>(ol.size()))
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but must have rank {} (x has rank {})",
                        out[0].ndim(), ol.size(), in[0].ndim());
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, ol, out[0], s, detail::scan_merge));
    push(info.inputs, in[0].dist_attr(), *l, map);
    push(info.outputs, out[0].dist_attr(), ol, map);
    return {};
  }

 private:
  /// x's labels without the axis (keepdims: all kept); flatten: none (keepdims: all `'1'`).
  static constexpr axes_string out_labels(const axes_string& x, std::int64_t rank, const attributes& attrs) {
    if (attrs.flatten) return attrs.keepdims ? x : axes_string{};
    axes_string o;
    const std::int64_t axis = attrs.axis < 0 ? attrs.axis + rank : attrs.axis;
    for (std::size_t d = 0; d < x.size(); ++d)
      if (attrs.keepdims || static_cast<std::int64_t>(d) != axis) o.push_back(x[d]);
    return o;
  }
};

/// The argmin rule: argmax's.
struct argmin : rule_base<argmin, argmax_attributes> {
  static constexpr std::string_view name = "argmin";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    return argmax::output_shapes(out, in, attrs);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    return argmax::forward(info, in, attrs, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    return argmax::backward(info, in, out, attrs, s);
  }
};

/// The topk rule (see the file comment).
struct topk : rule_base<topk, topk_attributes> {
  static constexpr std::string_view name = "topk";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{2};

  /// out and indices: x's shape with k at the axis.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    CTSPMD_TRY(labels(in[0], attrs));
    tensor_shape o = in[0].shape();
    if (!o.empty()) o[static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + in[0].ndim() : attrs.axis)] = attrs.k;
    out.push_back(o);
    out.push_back(o);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto l = labels(in[0], attrs);
    if (!l) return l.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, *l, in[0], s, detail::scan_merge));
    push(info.inputs, in[0].dist_attr(), *l, map);
    push(info.outputs, in[0].dist_attr(), *l, map);
    push(info.outputs, in[0].dist_attr(), *l, map);
    return {};
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto l = labels(in[0], attrs);
    if (!l) return l.error();
    for (std::size_t o = 0; o < 2; ++o)
      if (out[o].ndim() != in[0].ndim())
        return make_error(error_kind::invalid_argument, "", "output {} has rank {}, but x has rank {}", o, out[o].ndim(),
                          in[0].ndim());
    const std::array<std::string_view, 2> both{l->view(), l->view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(both), out, s, detail::scan_merge));
    push(info.inputs, in[0].dist_attr(), *l, map);
    push(info.outputs, out[0].dist_attr(), *l, map);
    push(info.outputs, out[1].dist_attr(), *l, map);
    return {};
  }

  /// x's labels, the axis `'1'`, after checking k against the axis' size.
  static constexpr result<axes_string> labels(const dist_tensor_spec& x, const attributes& attrs) {
    const auto l = detail::scan_labels(x.ndim(), attrs.axis, false);
    if (!l) return l.error();
    const std::int64_t n = x.ndim() > 0 ? x.shape()[static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + x.ndim() : attrs.axis)] : 1;
    if (attrs.k < 1 || (n != -1 && attrs.k > n))
      return make_error(error_kind::invalid_argument, "", "k = {} must be in [1, {}], the size of axis {}", attrs.k, n,
                        attrs.axis);
    return l;
  }
};

/// The topk_grad rule (see the file comment).
struct topk_grad : rule_base<topk_grad, topk_attributes> {
  static constexpr std::string_view name = "topk_grad";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{1};

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto l = topk::labels(in[0], attrs);
    if (!l) return l.error();
    for (std::size_t i = 1; i < 3; ++i) {
      if (in[i].ndim() != in[0].ndim())
        return make_error(error_kind::invalid_argument, "", "input {} has rank {}, but x has rank {}", i, in[i].ndim(),
                          in[0].ndim());
      if (auto c = check_same_sizes(in[i].shape(), in[1].shape(), "dim {} has size {} in out_grad, {} in indices"); !c)
        return c;
    }
    const auto axis = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + in[0].ndim() : attrs.axis);
    for (std::size_t d = 0; d < in[0].shape().size(); ++d) {
      const auto x = in[0].shape()[d], k = in[1].shape()[d];
      if (d != axis && x != -1 && k != -1 && x != k)
        return make_error(error_kind::invalid_argument, "", "indices has size {} at dim {}, but x has size {}", k, d, x);
    }
    const std::array<std::string_view, 3> all{l->view(), l->view(), l->view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 3>(all), in, s, detail::scan_merge));
    for (std::size_t i = 0; i < 3; ++i) push(info.inputs, in[i].dist_attr(), *l, map);
    push(info.outputs, in[0].dist_attr(), *l, map);  // x_grad
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
