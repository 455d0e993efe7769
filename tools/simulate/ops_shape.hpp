#ifndef CTSPMD_TOOLS_SIMULATE_OPS_SHAPE_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_SHAPE_HPP
// CPU references of the shape operators (squeeze, unsqueeze, tile and its
// gradient, triu / tril, expand_as, unbind, slice / strided_slice, pad), written from the
// operators' definitions (numpy / Paddle semantics), independent of the rules. Like ops.hpp,
// each runs on the unsharded tensors and on every simulated device's local tensors, and
// throws `oracle_error` on shapes it cannot handle.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::ops {

/// x's shape without the size-1 dims listed in `axis` (all size-1 dims when empty).
inline shape_t squeeze_shape(const shape_t& x, const std::vector<std::int64_t>& axis) {
  std::vector<bool> listed(x.size(), axis.empty());
  for (auto a : axis) listed[normalize_axis(a, to_int(x.size()))] = true;
  shape_t out;
  for (std::size_t d = 0; d < x.size(); ++d)
    if (!(listed[d] && x[d] == 1)) out.push_back(x[d]);
  return out;
}

/// x's shape with a 1 inserted at each entry of `axis` in turn (negative: counted from the end
/// of the shape grown so far, -1 appends).
inline shape_t unsqueeze_shape(shape_t x, const std::vector<std::int64_t>& axis) {
  for (auto a : axis) {
    const auto r = to_int(x.size());
    if (a < -(r + 1) || a > r) throw oracle_error("unsqueeze axis " + std::to_string(a) + " out of range");
    x.insert(x.begin() + (a < 0 ? a + r + 1 : a), 1);
  }
  return x;
}

/// x's shape and the repeat counts, both left-padded with 1s to one rank.
struct tile_shapes {
  shape_t x, repeats, out;
};
inline tile_shapes tile_shapes_of(const shape_t& x, const std::vector<std::int64_t>& repeats) {
  const std::size_t n = std::max(x.size(), repeats.size());
  tile_shapes t;
  t.x = shape_t(n - x.size(), 1);
  t.x.insert(t.x.end(), x.begin(), x.end());
  t.repeats = shape_t(n - repeats.size(), 1);
  t.repeats.insert(t.repeats.end(), repeats.begin(), repeats.end());
  for (std::size_t d = 0; d < n; ++d) t.out.push_back(t.x[d] * t.repeats[d]);
  return t;
}

/// x repeated `repeats[d]` times along each dim (numpy.tile).
inline tensor tile(const tensor& x, const std::vector<std::int64_t>& repeats) {
  const auto t = tile_shapes_of(x.shape, repeats);
  const tensor xp = reshape(x, t.x);
  tensor out(t.out);
  shape_t src(t.out.size());
  std::size_t o = 0;
  for_each_index(t.out, [&](const shape_t& idx) {
    for (std::size_t d = 0; d < idx.size(); ++d) src[d] = idx[d] % t.x[d];
    out.data[o++] = xp[src];
  });
  return out;
}

/// The gradient of tile: x_grad (of `x_shape`) sums out_grad over the copies of each element.
/// On a device, out_grad may hold a block of the leading dims only: `x_shape` is then the local
/// x_grad's shape and the sum runs over the block.
inline tensor tile_grad(const tensor& out_grad, const shape_t& x_shape) {
  const std::size_t n = out_grad.shape.size();
  if (x_shape.size() > n) throw oracle_error("tile_grad: x of higher rank than out_grad");
  const std::size_t lead = n - x_shape.size();
  tensor x_grad(x_shape);
  shape_t dst(x_shape.size());
  std::size_t o = 0;
  for_each_index(out_grad.shape, [&](const shape_t& idx) {
    for (std::size_t d = 0; d < dst.size(); ++d) {
      if (out_grad.shape[d + lead] % x_shape[d] != 0) throw oracle_error("tile_grad: a dim that is not a whole tiling");
      dst[d] = idx[d + lead] % x_shape[d];
    }
    x_grad[dst] += out_grad.data[o++];
  });
  return x_grad;
}

/// x with the elements below (triu) or above (`lower`: tril) diagonal `diagonal` of its last
/// two dims set to 0.
inline tensor triu(const tensor& x, std::int64_t diagonal, bool lower) {
  if (x.rank() < 2) throw oracle_error("triu of rank < 2");
  tensor out = x;
  std::size_t o = 0;
  for_each_index(x.shape, [&](const shape_t& idx) {
    const std::int64_t row = idx[idx.size() - 2];
    const std::int64_t col = idx[idx.size() - 1];
    const bool keep = lower ? col - row <= diagonal : col - row >= diagonal;
    if (!keep) out.data[o] = 0.0;
    ++o;
  });
  return out;
}

/// x broadcast (right-aligned, size 1 stretches) to `target`.
inline tensor expand(const tensor& x, const shape_t& target) {
  if (x.shape.size() > target.size()) throw oracle_error("expand to a lower rank");
  const std::size_t lead = target.size() - x.shape.size();
  for (std::size_t d = 0; d < x.shape.size(); ++d)
    if (x.shape[d] != 1 && x.shape[d] != target[d + lead])
      throw oracle_error("expand of " + shape_string(x.shape) + " to " + shape_string(target));
  tensor out(target);
  shape_t src(x.shape.size());
  std::size_t o = 0;
  for_each_index(target, [&](const shape_t& idx) {
    for (std::size_t d = 0; d < src.size(); ++d) src[d] = x.shape[d] == 1 ? 0 : idx[d + lead];
    out.data[o++] = x[src];
  });
  return out;
}

/// The slices of x along `axis`, each without that dim.
inline std::vector<tensor> unbind(const tensor& x, std::int64_t axis) {
  const auto a = normalize_axis(axis, x.rank());
  shape_t s = x.shape;
  s.erase(s.begin() + to_int(a));
  std::vector<tensor> out;
  for (std::int64_t i = 0; i < x.shape[a]; ++i) out.push_back(reshape(ctspmd_oracle::slice(x, a, i, 1), s));
  return out;
}

/// x[starts:ends:strides] along `axes` (Python's clamping), then the dims of `decrease`
/// dropped (each must hold one element).
inline tensor strided_slice(const tensor& x, const std::vector<std::int64_t>& axes,
                            const std::vector<std::int64_t>& starts, const std::vector<std::int64_t>& ends,
                            const std::vector<std::int64_t>& strides, const std::vector<std::int64_t>& decrease = {}) {
  const std::size_t r = x.shape.size();
  std::vector<std::int64_t> first(r, 0), step(r, 1);
  shape_t s = x.shape;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto d = normalize_axis(axes[i], to_int(r));
    const std::int64_t n = x.shape[d];
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
  tensor out(s);
  shape_t src(r);
  std::size_t o = 0;
  for_each_index(s, [&](const shape_t& idx) {
    for (std::size_t d = 0; d < r; ++d) src[d] = first[d] + idx[d] * step[d];
    out.data[o++] = x[src];
  });
  shape_t kept;
  std::vector<bool> drop(r, false);
  for (auto a : decrease) drop[normalize_axis(a, to_int(r))] = true;
  for (std::size_t d = 0; d < r; ++d) {
    if (drop[d] && s[d] != 1) throw oracle_error("decrease_axis on a dim of size " + std::to_string(s[d]));
    if (!drop[d]) kept.push_back(s[d]);
  }
  return reshape(out, kept);
}

/// x with paddings[2d] values `value` before and paddings[2d + 1] after each dim d.
inline tensor pad(const tensor& x, const std::vector<std::int64_t>& paddings, double value) {
  if (paddings.size() != 2 * x.shape.size()) throw oracle_error("pad: wrong number of paddings");
  shape_t s = x.shape;
  for (std::size_t d = 0; d < s.size(); ++d) s[d] += paddings[2 * d] + paddings[2 * d + 1];
  tensor out(s, value);
  shape_t dst(s.size());
  std::size_t o = 0;
  for_each_index(x.shape, [&](const shape_t& idx) {
    for (std::size_t d = 0; d < dst.size(); ++d) dst[d] = idx[d] + paddings[2 * d];
    out[dst] = x.data[o++];
  });
  return out;
}

}  // namespace ctspmd_oracle::ops

#endif
