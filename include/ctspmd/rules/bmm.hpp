#ifndef CTSPMD_RULES_BMM_HPP
#define CTSPMD_RULES_BMM_HPP
/// \file The bmm rule: a batched matmul of two 3-D tensors, out[b] = x[b] @ y[b].
///
/// x is [B, M, K] and y [B, K, N], with one batch size (no broadcasting: a size-1 batch dim
/// does not stretch) and one K; a size of -1 (unknown) matches any. Anything else is
/// `invalid_argument` naming the operands and sizes. Then bmm is matmul without transposes
/// (matmul.hpp), forward and backward, under either semantics. The gradient: `bmm_grad`
/// (bmm_grad.hpp).

#include <cstdint>

#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/matmul.hpp>

namespace ctspmd::rules {

/// Attributes of `bmm`: none.
struct bmm_attributes {};

/// The bmm rule.
struct bmm : rule_base<bmm, bmm_attributes> {
  static constexpr std::string_view name = "bmm";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};

  /// [b, m, n] from x [b, m, k] and y [b, k, n].
  /// 2 x (x's local elements) x (y's local output length), per batch 2mnk.
  static constexpr std::int64_t flops(const local_operands& in, const local_operands&, const attributes&) {
    return matmul_flops(in, false);
  }
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    CTSPMD_TRY(check(in));
    return matmul::output_shapes(out, in, {});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    CTSPMD_TRY(check(in));
    return matmul::forward(info, in, {}, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    CTSPMD_TRY(check(in));
    return matmul::backward(info, in, out, {}, s);
  }

 private:
  static constexpr bool same(std::int64_t a, std::int64_t b) noexcept { return a == -1 || b == -1 || a == b; }
  static constexpr status check(spec_span in) {
    const auto& x = in[0];
    const auto& y = in[1];
    if (x.ndim() != 3 || y.ndim() != 3)
      return make_error(error_kind::invalid_argument, "", "x and y must be 3-D, but have ranks {} and {}", x.ndim(),
                        y.ndim());
    if (!same(x.shape()[0], y.shape()[0]))
      return make_error(error_kind::invalid_argument, "", "x's batch size {} differs from y's {}", x.shape()[0],
                        y.shape()[0]);
    if (!same(x.shape()[2], y.shape()[1]))
      return make_error(error_kind::invalid_argument, "", "x's dim 2 ({}) differs from y's dim 1 ({})", x.shape()[2],
                        y.shape()[1]);
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
