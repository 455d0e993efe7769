#ifndef CTSPMD_RULES_ELEMENTWISE_GRAD_HPP
#define CTSPMD_RULES_ELEMENTWISE_GRAD_HPP
/// \file The grad rules of the elementwise operators (phi): `relu_grad`, `silu_grad`, `exp_grad`,
/// ... (unary), `gelu_grad`, `pow_grad` (unary with an attribute), and `add_grad`,
/// `subtract_grad`, `multiply_grad`, `divide_grad`, `maximum_grad`, `minimum_grad`,
/// `elementwise_pow_grad` (binary). Grad rules are called forward (kit/rule_base.hpp): their inputs
/// include the output gradient, their outputs are the input gradients; `backward` is
/// `no_reverse_inference()`.
///
/// Operands. Unary: the forward tensors the kernel reads (x, or out, or x and out, as Paddle's
/// grad op takes them: `relu_grad(out, out_grad)`, `silu_grad(x, out, out_grad)`,
/// `gelu_grad(x, out_grad)`), then out_grad, last; one output, x_grad. Every forward tensor has
/// out_grad's shape (rank and sizes; an `invalid_argument` names the input otherwise). Binary:
/// x, y, optionally out (`divide_grad(x, y, out, out_grad)`), then out_grad; outputs x_grad and
/// y_grad. x and y broadcast (numpy, right-aligned) to out_grad's shape, out has it.
///
/// Layouts (phi's ElementwiseUnaryGradInferSpmd / ElementwiseBinaryGradInferSpmd): out_grad's
/// layout decides everything; no merge is made, so fluid and phi agree (a co-sharded out_grad
/// is followed as it is). out_grad comes back with its mapping and no partial status (phi cleans
/// it: a partial out_grad is reduced first, the reshard). Every forward tensor comes back with
/// out_grad's mapping on its dims, its size-1 (broadcast) dims replicated: the forward layouts
/// the rule was given do not count (they are resharded to follow out_grad), which is how the
/// rule reconciles inputs that disagree. The gradient of an operand is out_grad's layout
/// reduced to the operand's shape (`reduce_grad_broadcast_dims`): the leading dims the operand
/// lacks and its size-1 dims are summed over, so the mesh dims that shard those dims in out_grad
/// make the gradient partial (sum): each device holds the sum over its own block. Binary ops
/// take attribute `axis`, which must be -1 (numpy broadcasting; phi's other values are a legacy
/// form no LLM operator uses): anything else is `invalid_argument`.
///
/// Paddle's grad loop starts at `i = ndim` (out of bounds); nothing of that here.

#include <cstddef>
#include <cstdint>

#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

namespace detail {

/// Checks that `x` (input `i`) broadcasts to `g`'s shape: rank at most g's, each size equal to
/// g's (right-aligned) or 1 (-1, unknown, agrees with anything).
constexpr status check_broadcasts_to(const dist_tensor_spec& x, std::size_t i, const dist_tensor_spec& g) {
  if (x.ndim() > g.ndim())
    return make_error(error_kind::invalid_argument, "", "input {} has rank {}, more than out_grad's rank {}", i,
                      x.ndim(), g.ndim());
  const auto lead = static_cast<std::size_t>(g.ndim() - x.ndim());
  for (std::size_t d = 0; d < x.shape().size(); ++d) {
    const std::int64_t xs = x.shape()[d], gs = g.shape()[lead + d];
    if (xs != 1 && xs != -1 && gs != -1 && xs != gs)
      return make_error(error_kind::invalid_argument, "",
                        "input {} has size {} at dim {}, which does not broadcast to out_grad's size {} there", i, xs,
                        d, gs);
  }
  return {};
}

/// Checks that `x` (input `i`) has `g`'s shape.
constexpr status check_same_shape_as_grad(const dist_tensor_spec& x, std::size_t i, const dist_tensor_spec& g) {
  if (x.ndim() != g.ndim())
    return make_error(error_kind::invalid_argument, "", "input {} has rank {}, but out_grad has rank {}", i, x.ndim(),
                      g.ndim());
  for (std::size_t d = 0; d < x.shape().size(); ++d) {
    const std::int64_t xs = x.shape()[d], gs = g.shape()[d];
    if (xs != -1 && gs != -1 && xs != gs)
      return make_error(error_kind::invalid_argument, "", "input {} has size {} at dim {}, but out_grad has size {}",
                        i, xs, d, gs);
  }
  return {};
}

/// `a` without partial status.
constexpr tensor_dist_attr without_partial(tensor_dist_attr a) {
  a.clean_partial_status();
  return a;
}

/// A forward operand `x` as a grad rule requires it: out_grad `g`'s layout (partial status
/// cleaned) on x's dims, x's size-1 broadcast dims replicated.
constexpr tensor_dist_attr follow_grad(const dist_tensor_spec& g, const dist_tensor_spec& x) {
  tensor_dist_attr a = without_partial(reduce_grad_broadcast_dims(without_partial(g.dist_attr()), g.shape(), x.shape()));
  a.set_batch_dim(x.dist_attr().batch_dim());
  return a;
}

/// The gradient of forward operand `x` from out_grad `g` (partial status cleaned): g's layout
/// reduced to x's shape, partial (sum) on the mesh dims of the dims summed over.
constexpr tensor_dist_attr grad_of(const dist_tensor_spec& g, const dist_tensor_spec& x) {
  return reduce_grad_broadcast_dims(without_partial(g.dist_attr()), g.shape(), x.shape());
}

/// The common grad rule of broadcasting elementwise ops: `in` = forward operands, then out_grad
/// (last). Each forward operand must broadcast to out_grad; each comes back following out_grad;
/// out_grad comes back without partial status; then, for each of the `count` operands from
/// `first`, its gradient.
constexpr status broadcast_grad(spmd_info& info, spec_span in, std::size_t first, std::size_t count) {
  const dist_tensor_spec& g = in.back();
  for (std::size_t i = 0; i + 1 < in.size(); ++i) CTSPMD_TRY(check_broadcasts_to(in[i], i, g));
  for (std::size_t i = 0; i + 1 < in.size(); ++i) info.inputs.push_back(follow_grad(g, in[i]));
  info.inputs.push_back(without_partial(g.dist_attr()));
  for (std::size_t i = first; i < first + count; ++i) info.outputs.push_back(grad_of(g, in[i]));
  return {};
}

/// The grad rule of a unary elementwise op: forward tensors of out_grad's shape, then out_grad.
constexpr status unary_grad(spmd_info& info, spec_span in) {
  for (std::size_t i = 0; i + 1 < in.size(); ++i) CTSPMD_TRY(check_same_shape_as_grad(in[i], i, in.back()));
  return broadcast_grad(info, in, 0, 1);
}

}  // namespace detail

/// Attributes of the unary elementwise grad rules without attributes.
struct elementwise_unary_grad_attributes {};

/// The grad rule of a unary elementwise op (`relu_grad`, `exp_grad`, ...; see the file comment).
struct elementwise_unary_grad : rule_base<elementwise_unary_grad, elementwise_unary_grad_attributes> {
  static constexpr std::string_view name = "elementwise_unary_grad";
  static constexpr operand_count input_count{2, 3};  ///< x and/or out, then out_grad
  static constexpr operand_count output_count{1};    ///< x_grad

  /// x_grad: the shape of the first forward tensor (x or out, which share it).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics) {
    return detail::unary_grad(info, in);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

/// Attributes of `gelu_grad` (Paddle's default).
struct gelu_grad_attributes {
  bool approximate = false;  ///< the tanh approximation (no effect on sharding)
};

/// `gelu_grad(x, out_grad)`: a unary elementwise grad rule.
struct gelu_grad : rule_base<gelu_grad, gelu_grad_attributes> {
  static constexpr std::string_view name = "gelu_grad";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics) {
    return detail::unary_grad(info, in);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

/// Attributes of `pow_grad` (Paddle's default).
struct pow_grad_attributes {
  double y = 1.0;  ///< the exponent (no effect on sharding)
};

/// `pow_grad(x, out_grad)`: a unary elementwise grad rule.
struct pow_grad : rule_base<pow_grad, pow_grad_attributes> {
  static constexpr std::string_view name = "pow_grad";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics) {
    return detail::unary_grad(info, in);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

/// Attributes of the binary elementwise grad rules (Paddle's default).
struct elementwise_binary_grad_attributes {
  std::int64_t axis = -1;  ///< must be -1: numpy broadcasting
};

/// The grad rule of a binary elementwise op (`add_grad`, `multiply_grad`, ...; see the file
/// comment): inputs x, y, (out,) out_grad; outputs x_grad, y_grad.
struct elementwise_binary_grad : rule_base<elementwise_binary_grad, elementwise_binary_grad_attributes> {
  static constexpr std::string_view name = "elementwise_binary_grad";
  static constexpr operand_count input_count{3, 4};
  static constexpr operand_count output_count{2};

  /// x_grad and y_grad: x's and y's shapes.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0, 1});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics) {
    if (attrs.axis != -1)
      return make_error(error_kind::invalid_argument, "", "axis {} is not supported: only -1 (numpy broadcasting)",
                        attrs.axis);
    if (in.size() == 4) CTSPMD_TRY(detail::check_same_shape_as_grad(in[2], 2, in[3]));
    return detail::broadcast_grad(info, in, 0, 2);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
