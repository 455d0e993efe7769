#ifndef CTSPMD_RULES_TRIU_HPP
#define CTSPMD_RULES_TRIU_HPP
/// \file The triangular-mask rule (`triu`, `tril_triu`) and its gradient (`triu_grad`, phi,
/// called forward): out = x with the elements below (triu) or above (`lower`: tril) the
/// `diagonal`-th diagonal of its last two dims set to 0; the gradient masks out_grad alike.
///
/// Notation: x and the output get the first rank(x) letters of `abcdefghijklmnopqrstuvwxyz`,
/// the last two replaced by `'1'`. x must have rank >= 2 (an `invalid_argument` otherwise).
///
/// Forward: whether an element is kept depends on its row and column index in the whole
/// matrix, which a shard of either of the last two dims does not know, so both are required
/// replicated (Paddle's rule; every diagonal). The leading (batch) dims keep their mesh dims (a
/// co-shard list as a whole) and the output takes them. Partial x: the mask keeps an element
/// or writes 0 on every device, and every reduce type combines parts that are all 0 into 0, so
/// the mask commutes with each: x's partial status is kept and the output takes it (Paddle
/// clears it on both).
/// Backward: the output's rank and sizes must be x's; its mapping with the last two dims
/// replicated is merged alone; x takes it and the output comes back with it, not partial.
///
/// triu_grad(out_grad) -> x_grad: the same as forward, out_grad in x's place (Paddle's rule).
/// No reverse inference.
///
/// The round trip (forward, then backward from forward's outputs) gives back forward's x.
/// Both rules exist only in phi and behave the same under both semantics except for the merge
/// policy.

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `triu` / `tril_triu` / `triu_grad` (Paddle's defaults).
struct triu_attributes {
  std::int64_t diagonal = 0;  ///< which diagonal bounds the kept triangle (0: the main one)
  bool lower = false;         ///< `tril_triu`: keep the lower triangle instead
};

/// The triangular-mask rule.
struct triu : rule_base<triu, triu_attributes> {
  static constexpr std::string_view name = "triu";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    return infer(info, in[0], in[0], s, true);
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    const auto& x = in[0];
    const auto& o = out[0];
    if (o.ndim() != x.ndim())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but x has rank {}", o.ndim(),
                        x.ndim());
    CTSPMD_TRY(check_same_sizes(o.shape(), x.shape(), "output dim {} has size {}, but x has size {}"));
    return infer(info, x, o, s, false);
  }

  /// x (the mask's input) and the output, as `from`'s mapping makes them; with `partial`, x's
  /// partial status is kept on both.
  static constexpr status infer(spmd_info& info, const dist_tensor_spec& x, const dist_tensor_spec& from, semantics s,
                                bool partial) {
    if (x.ndim() < 2)
      return make_error(error_kind::invalid_argument, "", "x has rank {}, but the mask needs rank >= {}", x.ndim(), 2);
    const auto letters = first_letters(x.ndim());
    if (!letters) return letters.error();
    axes_string labels(*letters);
    labels[labels.size() - 1] = broadcast_label;
    labels[labels.size() - 2] = broadcast_label;
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, labels, from, s));
    auto& xi = push(info.inputs, x.dist_attr(), labels, map);
    auto& o = push(info.outputs, from.dist_attr(), labels, map);
    if (partial) {
      add_partial_of(xi, x.dist_attr());
      add_partial_of(o, x.dist_attr());
    }
    return {};
  }
};

/// The gradient rule of triu.
struct triu_grad : rule_base<triu_grad, triu_attributes> {
  static constexpr std::string_view name = "triu_grad";
  static constexpr operand_count input_count{1};   // out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: out_grad's shape (x's).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    return triu::infer(info, in[0], in[0], s, true);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
