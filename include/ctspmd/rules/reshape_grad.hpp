#ifndef CTSPMD_RULES_RESHAPE_GRAD_HPP
#define CTSPMD_RULES_RESHAPE_GRAD_HPP
/// \file The gradient rule of the reshapes (`reshape_grad`, `flatten_grad`, `squeeze_grad`,
/// `unsqueeze_grad`; phi, called forward): inputs (x, out_grad), output x_grad =
/// out_grad reshaped back to x's shape.
///
/// x is read for its shape only and comes back as given. out_grad is reshaped into x's shape
/// by reshape's forward (reshape.hpp, kit/dim_trans.hpp): out_grad's dims that keep their sharding
/// through the dim transformation keep it (the others are required replicated), and x_grad
/// takes the mesh dims the transformation gives (under `phi` with the co-shard algorithm).
/// out_grad's partial status passes to x_grad unchanged (a reshape moves elements without
/// combining them). The element counts of x and out_grad must agree where both are known
/// (an `invalid_argument` otherwise).
///
/// Paddle's flatten, squeeze and unsqueeze grads compute exactly this. Paddle's latest
/// reshape grad instead re-runs the forward rule on x (x_grad follows x, and out_grad's own
/// mapping is ignored); both are valid layouts, and we use the one rule for all four names, so
/// that x_grad follows the gradient it is computed from and no reshard of out_grad is asked
/// for when it is not needed. An absent x (shape []) means a 0-D x: out_grad must then hold
/// one element.
///
/// No reverse inference (a grad rule, `no_reverse_inference`).
/// A phi rule: under `fluid` the dim transformation keeps only the first dim's mesh dims of a
/// merged group (reshape.hpp), otherwise the same.

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/reshape.hpp>

namespace ctspmd::rules {

/// Attributes of `reshape_grad` (none: the target is x's shape).
struct reshape_grad_attributes {};

/// The reshapes' gradient rule.
struct reshape_grad : rule_base<reshape_grad, reshape_grad_attributes> {
  static constexpr std::string_view name = "reshape_grad";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{2};  // x, out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    const auto& x = in[0];
    const auto& out_grad = in[1];
    std::int64_t nx = 1;
    std::int64_t ng = 1;
    bool known = true;
    for (const auto d : x.shape()) known = known && d >= 0 && reshape::multiply(nx, d);
    for (const auto d : out_grad.shape()) known = known && d >= 0 && reshape::multiply(ng, d);
    if (known && nx != ng)
      return make_error(error_kind::invalid_argument, "",
                        "out_grad has {} elements (rank {}), but x has {} (rank {})", ng, out_grad.ndim(), nx,
                        x.ndim());
    info.inputs.push_back(x.dist_attr());
    reshape::target t;
    for (const auto d : x.shape()) {
      t.shape.push_back(d);
      t.same_size.push_back(-1);
    }
    return reshape::forward_to(info, out_grad, t, s);
  }

  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
