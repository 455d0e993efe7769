#ifndef CTSPMD_RULES_REDUCTION_GRAD_HPP
#define CTSPMD_RULES_REDUCTION_GRAD_HPP
/// \file The gradients of the reductions (phi, called forward; phi's ReductionGradInferSpmd):
/// `sum_grad`, `mean_grad` (rule `reduction_grad`, inputs x, out_grad) and `max_grad`,
/// `min_grad`, `amax_grad`, `amin_grad`, `prod_grad` (rule `reduction_grad_with_out`, inputs x,
/// out, out_grad); and `logsumexp_grad`, `p_norm_grad` (rules of those names, inputs x, out,
/// out_grad). The output is x_grad, of x's shape.
///
/// Operand order: Paddle's grad kernels take (x, out_grad) for sum and mean, whose gradient
/// does not read the forward output (out_grad broadcast, divided by the reduced count for
/// mean), and (x, out, out_grad) for max, min, amax, amin and prod, whose gradient compares x
/// with out (or divides out by x). phi's ReductionGradInferSpmd has one overload for each, and
/// the operators' yaml entries pick the one of their kernel's arguments; we do the same, so
/// `sum_grad` and `mean_grad` take two inputs and the others three (section 7 of the notes
/// lists the three-input form under `max_grad`).
///
/// Attributes: `axis` (int list; negative counts from the end), `keepdim` (`keep_dim` is
/// accepted too), `reduce_all` (true, or an empty `axis`, reduces every dim). The axis checks
/// are the reduction's (reduction.hpp): out of range or a dim named twice is `invalid_argument`.
///
/// Notation: x and x_grad get the first rank(x) letters of `abcdefghijklmnopqrstuvwxyz` with
/// `'1'` at the reduced dims; out and out_grad get the kept letters, with `'1'` at the reduced
/// dims when `keepdim`. out and out_grad must have that rank and the kept dims' sizes of x (1 at
/// a keepdim dim; -1 matches anything): each an `invalid_argument` naming the operand.
///
/// Inference: x, out and out_grad are merged over those labels (first-wins under `fluid`, the
/// co-shard union under `phi`, mesh dims that do not divide an axis dropped); every input and
/// x_grad take the merged mapping. So a kept dim keeps its sharding and a reduced dim of x and
/// x_grad is replicated: each device computes its gradient from the whole reduced extent (mean
/// divides by the whole reduced count; amax shares out_grad among all the ties). A keepdim dim
/// of out and out_grad is replicated too.
///
/// Partial: no input may be partial (each comes back without partial status: the framework
/// reduces it first) and x_grad is not partial. For max, min and prod this is required: a part
/// of out (a partial max) does not say which elements of x are the maximum, so out's partial
/// status must go (Paddle's note on its max/min grad). sum and mean are linear in out_grad and
/// could pass a partial sum through; phi cleans it (its "partial stage I") and so do we.
///
/// Where we differ from Paddle: phi gives x, out and x_grad out_grad's mapping (partial
/// cleaned) with -1 inserted at the reduced dims, reading neither x's nor out's mapping; we
/// merge all three: a kept dim sharded in one of them and replicated in another takes the
/// sharding; sharded by different mesh dims, it is fluid's merge error (`unimplemented`, naming
/// the axis and the two mesh dims) under `fluid` and a co-shard under `phi`; a mesh dim that two
/// kept dims claim stays with the first (fluid) or the larger (phi). phi inserts the -1s
/// only when out_grad's rank differs from x's, so with keepdim a sharded size-1 dim of out_grad
/// would shard x's reduced dim: we replicate every reduced dim. phi reads out_grad's mapping
/// for out; we use the merged one (the same when they agree).
///
/// `logsumexp_grad` (x, out, out_grad; attributes as logsumexp: axis, keepdim, reduce_all) and
/// `p_norm_grad` (x, out, out_grad; attributes as p_norm: porder, axis, epsilon, keepdim,
/// asvector, which reduces every dim), phi's LogSumExpGradInferSpmd and PNormGradInferSpmd, are
/// the same rule on their forward's reduced dims: x_grad = out_grad * exp(x - out), and
/// out_grad * sign(x) |x|^(p-1) / out^(p-1). Their forwards require x's reduced dims replicated
/// and produce no partial output (logsumexp.hpp); the grads replicate the reduced dims too.
///
/// The rules exist only in phi and behave the same under both semantics except for the merge
/// policy. No reverse inference.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/logsumexp.hpp>
#include <ctspmd/rules/reduction.hpp>

namespace ctspmd::rules {

/// Attributes of the reduction grads (Paddle's defaults).
struct reduction_grad_attributes {
  static_vector<std::int64_t, max_rank> axis = {};  ///< dims reduced forward (negative: from the end); empty: all
  bool keepdim = false;                             ///< the forward kept reduced dims as size 1
  bool reduce_all = false;                          ///< the forward reduced every dim
  /// fluid spells keepdim `keep_dim`.
  static constexpr std::array<attribute_alias, 1> aliases{{{"keep_dim", "keepdim"}}};
};

namespace detail {

/// The inference of every reduction grad: x is in[0]; the other inputs (out and out_grad, or
/// out_grad alone) have the output's labels and are named `names[i - 1]` in messages. x_grad
/// is the output. `axis` empty reduces every dim.
constexpr status infer_reduction_grad(spmd_info& info, spec_span in, const static_vector<std::int64_t, max_rank>& axis,
                                      bool keepdim, semantics s, std::span<const char* const> rank_messages,
                                      std::span<const char* const> size_messages) {
  const auto& x = in[0];
  const auto n = make_reduction_notation(x.ndim(), axis, keepdim);
  if (!n) return n.error();
  axes_string xl;
  tensor_shape out_shape;
  for (std::size_t d = 0; d < n->x.size(); ++d) {
    const bool kept = has_label(n->out.view(), n->x[d]);
    xl.push_back(kept ? n->x[d] : broadcast_label);
    if (kept)
      out_shape.push_back(x.shape()[d]);
    else if (keepdim)
      out_shape.push_back(1);
  }
  for (std::size_t i = 1; i < in.size(); ++i) {
    if (in[i].ndim() != static_cast<std::int64_t>(n->out.size()))
      return make_error(error_kind::invalid_argument, "", rank_messages[i - 1], in[i].ndim(), n->out.size(), x.ndim(),
                        n->reduced);
    CTSPMD_TRY(check_same_sizes(in[i].shape(), out_shape, size_messages[i - 1]));
  }
  std::array<std::string_view, 3> labels{xl.view(), n->out.view(), n->out.view()};
  axis_to_dim_map map;
  CTSPMD_TRY(merge_operands(map, std::span<const std::string_view>(labels.data(), in.size()), in, s,
                            {true, false, false, /*drop_indivisible=*/true}));
  push(info.inputs, x.dist_attr(), xl, map);
  for (std::size_t i = 1; i < in.size(); ++i) push(info.inputs, in[i].dist_attr(), n->out, map);
  push(info.outputs, x.dist_attr(), xl, map);  // x_grad
  return {};
}

/// The axis list a reduction grad reduces: every dim (empty) with reduce_all.
constexpr static_vector<std::int64_t, max_rank> grad_axis(const reduction_grad_attributes& a) {
  return a.reduce_all ? static_vector<std::int64_t, max_rank>{} : a.axis;
}

inline constexpr const char* out_grad_rank_message =
    "out_grad has rank {}, but must have rank {} (x has rank {} and {} reduced dims)";
inline constexpr const char* out_rank_message =
    "out has rank {}, but must have rank {} (x has rank {} and {} reduced dims)";
inline constexpr const char* out_grad_size_message = "out_grad dim {} has size {}, but reducing x gives {}";
inline constexpr const char* out_size_message = "out dim {} has size {}, but reducing x gives {}";

}  // namespace detail

/// The gradient rule of `sum` and `mean`: inputs x, out_grad; output x_grad (see the file comment).
struct reduction_grad : rule_base<reduction_grad, reduction_grad_attributes> {
  static constexpr std::string_view name = "reduction_grad";
  static constexpr operand_count input_count{2};   // x, out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    constexpr std::array<const char*, 1> ranks{detail::out_grad_rank_message};
    constexpr std::array<const char*, 1> sizes{detail::out_grad_size_message};
    return detail::infer_reduction_grad(info, in, detail::grad_axis(attrs), attrs.keepdim, s, ranks, sizes);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

/// The gradient rule of `max`, `min`, `amax`, `amin` and `prod`: inputs x, out, out_grad;
/// output x_grad (see the file comment).
struct reduction_grad_with_out : rule_base<reduction_grad_with_out, reduction_grad_attributes> {
  static constexpr std::string_view name = "reduction_grad";
  static constexpr operand_count input_count{3};   // x, out, out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    return infer(info, in, detail::grad_axis(attrs), attrs.keepdim, s);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }

  /// The inference for (x, out, out_grad) reducing `axis` (empty: every dim).
  static constexpr status infer(spmd_info& info, spec_span in, const static_vector<std::int64_t, max_rank>& axis,
                                bool keepdim, semantics s) {
    constexpr std::array<const char*, 2> ranks{detail::out_rank_message, detail::out_grad_rank_message};
    constexpr std::array<const char*, 2> sizes{detail::out_size_message, detail::out_grad_size_message};
    return detail::infer_reduction_grad(info, in, axis, keepdim, s, ranks, sizes);
  }
};

/// The gradient rule of logsumexp: inputs x, out, out_grad; output x_grad (see the file comment).
struct logsumexp_grad : rule_base<logsumexp_grad, logsumexp_attributes> {
  static constexpr std::string_view name = "logsumexp_grad";
  static constexpr operand_count input_count{3};   // x, out, out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    return reduction_grad_with_out::infer(info, in, a.reduce_all ? static_vector<std::int64_t, max_rank>{} : a.axis,
                                          a.keepdim, s);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

/// The gradient rule of p_norm: inputs x, out, out_grad; output x_grad (see the file comment).
struct p_norm_grad : rule_base<p_norm_grad, p_norm_attributes> {
  static constexpr std::string_view name = "p_norm_grad";
  static constexpr operand_count input_count{3};   // x, out, out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    static_vector<std::int64_t, max_rank> axis;  // empty (every dim) with asvector
    if (!a.asvector) axis.push_back(a.axis);
    return reduction_grad_with_out::infer(info, in, axis, a.keepdim, s);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
