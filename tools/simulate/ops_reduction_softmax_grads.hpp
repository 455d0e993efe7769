#ifndef CTSPMD_TOOLS_SIMULATE_OPS_REDUCTION_SOFTMAX_GRADS_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_REDUCTION_SOFTMAX_GRADS_HPP
// CPU references of these gradients (the reduction grads; softmax_grad, transpose_grad; the
// softmax cross-entropy grads; logsumexp_grad, p_norm_grad) on float64 tensors, written from the
// operators' definitions (their derivatives, as Paddle's grad kernels compute them), independent
// of the rules. As in ops.hpp, the same functions run on the unsharded tensors and on each
// simulated device's local tensors; a shape disagreement throws `oracle_error`.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::ops {

/// What a reduction grad computes from (x, out, out_grad).
enum class reduction_grad_kind {
  sum,   ///< out_grad broadcast
  mean,  ///< out_grad broadcast, divided by the number of reduced elements
  max,   ///< out_grad where x equals out (every tie gets it), else 0; also min
  amax,  ///< out_grad shared evenly among the ties equal to out, else 0; also amin
  prod,  ///< out_grad * out / x
  logsumexp,  ///< out_grad * exp(x - out)
  p_norm,     ///< out_grad * sign(x) |x|^(p-1) / out^(p-1)
};

/// The index into the reduced tensor (of shape `out_shape`) of x's element `idx`.
inline shape_t reduced_index(const shape_t& idx, const std::vector<bool>& mask, bool keep_dim) {
  shape_t oi;
  for (std::size_t d = 0; d < idx.size(); ++d)
    if (!mask[d])
      oi.push_back(idx[d]);
    else if (keep_dim)
      oi.push_back(0);
  return oi;
}

/// x's shape reduced over `mask`.
inline shape_t reduced_shape(const shape_t& s, const std::vector<bool>& mask, bool keep_dim) {
  shape_t os;
  for (std::size_t d = 0; d < s.size(); ++d)
    if (!mask[d])
      os.push_back(s[d]);
    else if (keep_dim)
      os.push_back(1);
  return os;
}

/// The gradient x_grad (x's shape) of a reduction of x over `axis` (empty: every dim) whose
/// result is `out` (ignored by sum and mean: pass any tensor of out_grad's shape), from
/// `out_grad`. `p` is p_norm's order.
inline tensor reduction_grad(reduction_grad_kind kind, const tensor& x, const tensor& out, const tensor& out_grad,
                             const std::vector<std::int64_t>& axis, bool keep_dim, double p = 2.0) {
  const auto mask = reduced_mask(axis, x.rank());
  const shape_t os = reduced_shape(x.shape, mask, keep_dim);
  if (out_grad.shape != os || out.shape != os)
    throw oracle_error("reduction grad: out " + shape_string(out.shape) + " / out_grad " +
                       shape_string(out_grad.shape) + " do not match x " + shape_string(x.shape) + " reduced to " +
                       shape_string(os));
  // Per output element: the number of reduced elements, and of the ties equal to out.
  tensor count(os), ties(os);
  for_each_index(x.shape, [&](const shape_t& idx) {
    const auto oi = reduced_index(idx, mask, keep_dim);
    count[oi] += 1;
    if (x[idx] == out[oi]) ties[oi] += 1;
  });
  tensor g(x.shape);
  for_each_index(x.shape, [&](const shape_t& idx) {
    const auto oi = reduced_index(idx, mask, keep_dim);
    const double dy = out_grad[oi], v = x[idx], y = out[oi];
    double r = 0;
    switch (kind) {
      case reduction_grad_kind::sum: r = dy; break;
      case reduction_grad_kind::mean: r = dy / count[oi]; break;
      case reduction_grad_kind::max: r = v == y ? dy : 0.0; break;
      case reduction_grad_kind::amax: r = v == y ? dy / ties[oi] : 0.0; break;
      case reduction_grad_kind::prod: r = dy * y / v; break;
      case reduction_grad_kind::logsumexp: r = dy * std::exp(v - y); break;
      case reduction_grad_kind::p_norm:
        r = y == 0 ? 0.0 : dy * (v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0) * std::pow(std::abs(v), p - 1) / std::pow(y, p - 1);
        break;
    }
    g[idx] = r;
  });
  return g;
}

/// logsumexp of x over `axis` (empty: every dim).
inline tensor logsumexp(const tensor& x, const std::vector<std::int64_t>& axis, bool keep_dim) {
  const auto mask = reduced_mask(axis, x.rank());
  tensor mx = reduce(x, axis, keep_dim, reduce_kind::max);
  tensor s(mx.shape);
  for_each_index(x.shape, [&](const shape_t& idx) {
    const auto oi = reduced_index(idx, mask, keep_dim);
    s[oi] += std::exp(x[idx] - mx[oi]);
  });
  for (std::size_t i = 0; i < s.size(); ++i) s.data[i] = mx.data[i] + std::log(s.data[i]);
  return s;
}

/// The p-norm of x over `axis` (empty: every dim).
inline tensor p_norm(const tensor& x, double p, const std::vector<std::int64_t>& axis, bool keep_dim) {
  const auto mask = reduced_mask(axis, x.rank());
  tensor s(reduced_shape(x.shape, mask, keep_dim));
  for_each_index(x.shape, [&](const shape_t& idx) { s[reduced_index(idx, mask, keep_dim)] += std::pow(std::abs(x[idx]), p); });
  for (auto& v : s.data) v = std::pow(v, 1.0 / p);
  return s;
}

/// softmax's gradient from out = softmax(x) along `axis`: out * (out_grad - sum(out * out_grad));
/// log_softmax's (`log`): out_grad - exp(out) * sum(out_grad).
inline tensor softmax_grad(const tensor& out, const tensor& out_grad, std::int64_t axis, bool log) {
  if (out.shape != out_grad.shape) throw oracle_error("softmax_grad: out and out_grad differ in shape");
  if (out.rank() == 0) return log ? tensor({}, out_grad.data[0] - std::exp(out.data[0]) * out_grad.data[0]) : tensor({}, 0.0);
  const auto a = normalize_axis(axis, out.rank());
  tensor g(out.shape);
  shape_t outer = out.shape;
  outer[a] = 1;
  for_each_index(outer, [&](const shape_t& base) {
    shape_t idx = base;
    double s = 0;
    for (idx[a] = 0; idx[a] < out.shape[a]; ++idx[a]) s += log ? out_grad[idx] : out[idx] * out_grad[idx];
    for (idx[a] = 0; idx[a] < out.shape[a]; ++idx[a])
      g[idx] = log ? out_grad[idx] - std::exp(out[idx]) * s : out[idx] * (out_grad[idx] - s);
  });
  return g;
}

/// The inverse of a permutation (out dim i = x dim perm[i]).
inline std::vector<std::size_t> inverse_perm(const std::vector<std::size_t>& perm) {
  std::vector<std::size_t> inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inv.at(perm[i]) = i;
  return inv;
}

/// The logits' gradient of softmax cross entropy along `axis`, from the label (class indices of
/// size 1 at the axis, or distributions with `soft_label`), softmax (the probabilities: softmax(x)
/// with `use_softmax`, x itself without) and loss_grad (size 1 at the axis). With use_softmax:
/// (softmax * sum(label) - label) * loss_grad (soft), (softmax - onehot(label)) * loss_grad
/// (hard; 0 on a row whose label is `ignore_index`); without: -label / softmax * loss_grad. For
/// hard labels, `class_offset` is the global index of softmax's first class (a device holding a
/// slice of the classes).
inline tensor cross_entropy_grad(const tensor& label, const tensor& softmax, const tensor& loss_grad, std::int64_t axis,
                                 bool soft_label, bool use_softmax, std::int64_t ignore_index,
                                 std::int64_t class_offset = 0) {
  const auto a = normalize_axis(axis, softmax.rank());
  shape_t row = softmax.shape;
  row[a] = 1;
  if (loss_grad.shape != row || label.shape != (soft_label ? softmax.shape : row))
    throw oracle_error("cross_entropy_grad: label " + shape_string(label.shape) + " / loss_grad " +
                       shape_string(loss_grad.shape) + " do not fit softmax " + shape_string(softmax.shape));
  tensor g(softmax.shape);
  for_each_index(row, [&](const shape_t& base) {
    shape_t idx = base;
    const double dl = loss_grad[base];
    double total = 0;  // sum of the soft label
    if (soft_label)
      for (idx[a] = 0; idx[a] < softmax.shape[a]; ++idx[a]) total += label[idx];
    const std::int64_t hard = soft_label ? -1 : as_index(label[base]);
    for (idx[a] = 0; idx[a] < softmax.shape[a]; ++idx[a]) {
      const double p = softmax[idx];
      const double y = soft_label ? label[idx] : (idx[a] + class_offset == hard ? 1.0 : 0.0);
      double r = 0;
      if (!soft_label && hard == ignore_index)
        r = 0;
      else if (use_softmax)
        r = (soft_label ? p * total - y : p - y) * dl;
      else
        r = -y / p * dl;
      g[idx] = r;
    }
  });
  return g;
}

}  // namespace ctspmd_oracle::ops

#endif
