#ifndef CTSPMD_RULES_LOGSUMEXP_HPP
#define CTSPMD_RULES_LOGSUMEXP_HPP
/// \file Two reductions that no reduce type combines: `logsumexp` (log of the sum of exp over
/// `axis`) and `p_norm` (the p-norm over `axis`, or of all of x with `asvector`).
///
/// The logsumexp of a shard, or the p-norm of a shard, is no partial of the whole (the whole is
/// log(sum exp(parts)), or (sum parts^p)^(1/p): no sum, max, ... of the parts), nor is either of
/// a partial x a combination of the parts' results. So both are `frobenius_norm`
/// (reduction.hpp): the reduced dims replicated (gathered where they were sharded), x not
/// partial (reduced first), the kept dims keeping their shardings, which the output takes, and
/// the output never partial. Backward is frobenius_norm's. Both semantics behave as
/// frobenius_norm does.
///
/// logsumexp (axis: int list, keepdim, reduce_all): reduce_all or an empty axis reduces every dim.
/// p_norm (porder, axis: int, epsilon, keepdim, asvector): asvector reduces every dim.
/// Axis checks are the reduction's (InvalidArgument).

#include <cstdint>
#include <string_view>

#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/reduction.hpp>

namespace ctspmd::rules {

/// Attributes of `logsumexp` (Paddle's defaults).
struct logsumexp_attributes {
  static_vector<std::int64_t, max_rank> axis = {};  ///< empty: every dim
  bool keepdim = false;
  bool reduce_all = false;
};

/// Attributes of `p_norm` (Paddle's defaults).
struct p_norm_attributes {
  double porder = 2.0;
  std::int64_t axis = -1;
  double epsilon = 1e-12;
  bool keepdim = false;
  bool asvector = false;
};

/// The logsumexp rule (see the file comment).
struct logsumexp : rule_base<logsumexp, logsumexp_attributes> {
  static constexpr std::string_view name = "logsumexp";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};
  /// x's shape without the reduced dims (size 1 with keepdim).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& a) {
    const reduction_attributes r = as_reduction(a);
    return detail::push_reduced_shape(out, in[0].shape(), r.axis, r.keep_dim);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    return frobenius_norm::forward(info, in, as_reduction(a), s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& a, semantics s) {
    return frobenius_norm::backward(info, in, out, as_reduction(a), s);
  }

 private:
  static constexpr reduction_attributes as_reduction(const attributes& a) {
    return {a.reduce_all ? static_vector<std::int64_t, max_rank>{} : a.axis, a.keepdim, reduce_type::sum};
  }
};

/// The p_norm rule (see the file comment).
struct p_norm : rule_base<p_norm, p_norm_attributes> {
  static constexpr std::string_view name = "p_norm";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};
  /// x's shape without the reduced dims (size 1 with keepdim).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& a) {
    const reduction_attributes r = as_reduction(a);
    return detail::push_reduced_shape(out, in[0].shape(), r.axis, r.keep_dim);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    return frobenius_norm::forward(info, in, as_reduction(a), s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& a, semantics s) {
    return frobenius_norm::backward(info, in, out, as_reduction(a), s);
  }

 private:
  static constexpr reduction_attributes as_reduction(const attributes& a) {
    if (a.asvector) return {{}, a.keepdim, reduce_type::sum};
    return {{a.axis}, a.keepdim, reduce_type::sum};
  }
};

}  // namespace ctspmd::rules

#endif
