#ifndef CTSPMD_RULES_BMM_GRAD_HPP
#define CTSPMD_RULES_BMM_GRAD_HPP
/// \file The bmm grad rule (`bmm_grad`; phi, called forward): inputs x [B, M, K], y [B, K, N]
/// and out_grad [B, M, N], in that order (Paddle's BmmGradInferSpmd and its `bmm_grad`
/// operator); outputs x_grad and y_grad, in that order, the gradients of out = x @ y per batch.
///
/// Checks (`invalid_argument`, naming the operands and sizes): x, y and out_grad 3-D; one batch
/// size B in the three (no broadcasting: a size-1 batch dim does not stretch, as in bmm.hpp),
/// x's K equal to y's, out_grad's M x's and its N y's; a size of -1 (unknown) matches any.
///
/// Then bmm_grad is matmul_grad without transposes (matmul_grad.hpp), as Paddle's rule is: x, y
/// and out_grad are merged over `bmk, bkn, bmn` (fluid first-wins, phi the co-shard union;
/// size-1 dims are never sharded) and required with the merged mappings, not partial; x_grad takes
/// x's merged mapping, partial (sum) on n's mesh dims, and y_grad y's, partial (sum) on m's: a
/// device sums only over its shard of the contracted label. No batch dim is ever broadcast here,
/// so no other dim makes a gradient partial. Backward (reverse) inference: none.
/// On Paddle's BmmGradInferSpmd co-shard test (mesh [2, 2, 2]) both give x_grad x's mapping,
/// not partial, and y_grad y's, partial on mesh dim 2.

#include <cstdint>

#include <ctspmd/rules/bmm.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/matmul_grad.hpp>

namespace ctspmd::rules {

/// The bmm grad rule.
struct bmm_grad : rule_base<bmm_grad, bmm_attributes> {
  static constexpr std::string_view name = "bmm_grad";
  static constexpr operand_count input_count{3};   // x, y, out_grad
  static constexpr operand_count output_count{2};  // x_grad, y_grad

  /// x_grad and y_grad: x's and y's shapes.
  /// Twice the forward bmm's.
  static constexpr std::int64_t flops(const local_operands& in, const local_operands&, const attributes&) {
    return ctspmd::detail::saturating_product(2, matmul_flops(in, false));
  }
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0, 1});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    CTSPMD_TRY(check(in));
    return matmul_grad::forward(info, in, {}, s);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }

 private:
  static constexpr bool same(std::int64_t a, std::int64_t b) noexcept { return a == -1 || b == -1 || a == b; }
  static constexpr status check(spec_span in) {
    const auto& x = in[0];
    const auto& y = in[1];
    const auto& g = in[2];
    if (x.ndim() != 3 || y.ndim() != 3 || g.ndim() != 3)
      return make_error(error_kind::invalid_argument, "", "x, y and out_grad must be 3-D, but have ranks {}, {} and {}",
                        x.ndim(), y.ndim(), g.ndim());
    const auto& xs = x.shape();
    const auto& ys = y.shape();
    const auto& gs = g.shape();
    if (!same(xs[0], ys[0]) || !same(xs[0], gs[0]) || !same(ys[0], gs[0]))
      return make_error(error_kind::invalid_argument, "", "the batch sizes of x ({}), y ({}) and out_grad ({}) differ",
                        xs[0], ys[0], gs[0]);
    if (!same(xs[2], ys[1]))
      return make_error(error_kind::invalid_argument, "", "x's dim 2 ({}) differs from y's dim 1 ({})", xs[2], ys[1]);
    if (!same(xs[1], gs[1]))
      return make_error(error_kind::invalid_argument, "", "out_grad's dim 1 ({}) differs from x's dim 1 ({})", gs[1],
                        xs[1]);
    if (!same(ys[2], gs[2]))
      return make_error(error_kind::invalid_argument, "", "out_grad's dim 2 ({}) differs from y's dim 2 ({})", gs[2],
                        ys[2]);
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
