#ifndef CTSPMD_TOOLS_SIMULATE_OPS_SHAPE_GRADS_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_SHAPE_GRADS_HPP
// CPU references of the gradients the shape grad rules (and bmm_grad) compute, written from the operators'
// definitions (the gradient of each forward operator), independent of the rules. Like ops.hpp,
// each runs on the unsharded tensors and on every simulated device's local tensors, and throws
// `oracle_error` on shapes it cannot handle.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::ops {

/// The gradients of out[b] = x[b] @ y[b] (x [B, M, K], y [B, K, N]) from out_grad [B, M, N].
struct bmm_grads {
  tensor dx, dy;
};
inline bmm_grads bmm_grad(const tensor& x, const tensor& y, const tensor& out_grad) {
  return {einsum("bmn,bkn->bmk", {out_grad, y}), einsum("bmk,bmn->bkn", {x, out_grad})};
}

/// The gradient of x[starts:ends:strides] along `axes` (Python's clamping; out_grad may lack
/// the slice's size-1 dims that slice's `decrease_axis` dropped): a tensor of `x_shape`, zero
/// outside the slice, out_grad inside.
inline tensor strided_slice_grad(const tensor& out_grad, const shape_t& x_shape, const std::vector<std::int64_t>& axes,
                                 const std::vector<std::int64_t>& starts, const std::vector<std::int64_t>& ends,
                                 const std::vector<std::int64_t>& strides) {
  const std::size_t r = x_shape.size();
  std::vector<std::int64_t> first(r, 0), step(r, 1);
  shape_t s = x_shape;  // the slice's shape, decreased dims kept
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto d = normalize_axis(axes[i], to_int(r));
    const std::int64_t n = x_shape[d];
    const std::int64_t st = strides.empty() ? 1 : strides[i];
    auto clamp = [&](std::int64_t v) {
      if (v < 0) v += n;
      const std::int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? n : n - 1;
      return std::min(std::max(v, lo), hi);
    };
    const std::int64_t b = clamp(starts[i]), e = clamp(ends[i]);
    std::int64_t len = 0;
    if (st > 0 && e > b) len = (e - b + st - 1) / st;
    if (st < 0 && b > e) len = (b - e + (-st) - 1) / (-st);
    first[d] = b;
    step[d] = st;
    s[d] = len;
  }
  const tensor g = reshape(out_grad, s);  // decreased dims back as size 1
  tensor x_grad(x_shape);
  shape_t dst(r);
  std::size_t o = 0;
  for_each_index(s, [&](const shape_t& idx) {
    for (std::size_t d = 0; d < r; ++d) dst[d] = first[d] + idx[d] * step[d];
    x_grad[dst] += g.data[o++];
  });
  return x_grad;
}

/// The gradient of pad (paddings[2d] before and paddings[2d + 1] after each dim d): out_grad
/// without the padding.
inline tensor pad_grad(const tensor& out_grad, const std::vector<std::int64_t>& paddings) {
  if (paddings.size() != 2 * out_grad.shape.size()) throw oracle_error("pad_grad: wrong number of paddings");
  tensor t = out_grad;
  for (std::size_t d = 0; d < t.shape.size(); ++d) {
    const std::int64_t len = t.shape[d] - paddings[2 * d] - paddings[2 * d + 1];
    if (len < 0) throw oracle_error("pad_grad: a dim smaller than its paddings");
    t = ctspmd_oracle::slice(t, d, paddings[2 * d], len);
  }
  return t;
}

/// The gradient of x broadcast (right-aligned) to out_grad's shape: out_grad summed over the
/// leading dims x lacks and over the dims where x has size 1.
inline tensor expand_grad(const tensor& out_grad, const shape_t& x_shape) {
  const std::size_t n = out_grad.shape.size();
  if (x_shape.size() > n) throw oracle_error("expand_grad: x of higher rank than out_grad");
  const std::size_t lead = n - x_shape.size();
  for (std::size_t d = 0; d < x_shape.size(); ++d)
    if (x_shape[d] != 1 && x_shape[d] != out_grad.shape[d + lead])
      throw oracle_error("expand_grad of " + shape_string(out_grad.shape) + " to " + shape_string(x_shape));
  tensor x_grad(x_shape);
  shape_t dst(x_shape.size());
  std::size_t o = 0;
  for_each_index(out_grad.shape, [&](const shape_t& idx) {
    for (std::size_t d = 0; d < dst.size(); ++d) dst[d] = x_shape[d] == 1 ? 0 : idx[d + lead];
    x_grad[dst] += out_grad.data[o++];
  });
  return x_grad;
}

/// The gradients of stack(xs, axis): out_grad's slices along `axis`, each without that dim.
inline std::vector<tensor> unstack(const tensor& out_grad, std::int64_t axis) {
  const auto a = normalize_axis(axis, out_grad.rank());
  shape_t s = out_grad.shape;
  s.erase(s.begin() + to_int(a));
  std::vector<tensor> out;
  for (std::int64_t i = 0; i < out_grad.shape[a]; ++i) out.push_back(reshape(ctspmd_oracle::slice(out_grad, a, i, 1), s));
  return out;
}

}  // namespace ctspmd_oracle::ops

#endif
