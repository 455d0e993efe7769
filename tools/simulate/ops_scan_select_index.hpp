#ifndef CTSPMD_TOOLS_SIMULATE_OPS_SCAN_SELECT_INDEX_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_SCAN_SELECT_INDEX_HPP
// CPU references of the scans and selections (cumsum, argmax / argmin, topk, numel, logsumexp,
// p_norm) and of indexing (gather, index_select, one_hot), and of their gradients, on float64
// tensors, written from the operators' definitions (Paddle's documented semantics), independent
// of the rules. As in ops.hpp, the same functions run on the unsharded tensors and on each
// simulated device's local tensors.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ops.hpp"
#include "ops_reduction_softmax_grads.hpp"  // logsumexp
#include "tensor.hpp"

namespace ctspmd_oracle::ops {

// ---------------------------------------------------------------------------- scans and selections

/// Calls f(outer, inner) for every line along dim `axis` of `shape`: the line's elements are at
/// offsets outer * n * inner + i * inner + inner_offset for i < n.
inline void for_each_line(const shape_t& shape, std::size_t axis, const std::function<void(std::size_t, std::size_t)>& f) {
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= to_size(shape[d]);
  for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= to_size(shape[d]);
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < inner; ++i) f(o, i);
}

/// cumsum along `axis` (flatten: of x flattened, 1-D), exclusive and / or reverse.
inline tensor cumsum(const tensor& x, std::int64_t axis, bool flatten, bool exclusive, bool reverse) {
  if (flatten) return cumsum(reshape(x, {numel(x.shape)}), 0, false, exclusive, reverse);
  if (x.rank() == 0) return exclusive ? tensor(shape_t{}) : x;
  const std::size_t a = normalize_axis(axis, x.rank());
  tensor out(x.shape);
  const std::size_t n = to_size(x.shape[a]);
  std::size_t inner = 1;
  for (std::size_t d = a + 1; d < x.shape.size(); ++d) inner *= to_size(x.shape[d]);
  for_each_line(x.shape, a, [&](std::size_t o, std::size_t i) {
    double acc = 0;
    for (std::size_t step = 0; step < n; ++step) {
      const std::size_t j = reverse ? n - 1 - step : step;
      const std::size_t off = (o * n + j) * inner + i;
      if (exclusive) {
        out.data[off] = acc;
        acc += x.data[off];
      } else {
        acc += x.data[off];
        out.data[off] = acc;
      }
    }
  });
  return out;
}

/// cumsum's gradient: the cumsum of out_grad the other way (flatten: reshaped to x's shape).
inline tensor cumsum_grad(const tensor& x, const tensor& out_grad, std::int64_t axis, bool flatten, bool exclusive,
                          bool reverse) {
  if (flatten) return reshape(cumsum(out_grad, 0, false, exclusive, !reverse), x.shape);
  same_shape(x, out_grad, "cumsum_grad out_grad");
  return cumsum(out_grad, axis, false, exclusive, !reverse);
}

/// argmax (or argmin with `min`) along `axis` (first index on ties); flatten: of x flattened.
inline tensor argmax(const tensor& x, std::int64_t axis, bool keepdims, bool flatten, bool min) {
  if (flatten) {
    tensor r = argmax(reshape(x, {numel(x.shape)}), 0, false, false, min);
    return keepdims ? reshape(r, shape_t(x.shape.size(), 1)) : r;
  }
  if (x.rank() == 0) return tensor(shape_t{});
  const std::size_t a = normalize_axis(axis, x.rank());
  shape_t os = x.shape;
  os[a] = 1;
  tensor out(os);
  const std::size_t n = to_size(x.shape[a]);
  std::size_t inner = 1;
  for (std::size_t d = a + 1; d < x.shape.size(); ++d) inner *= to_size(x.shape[d]);
  for_each_line(x.shape, a, [&](std::size_t o, std::size_t i) {
    std::size_t best = 0;
    for (std::size_t j = 1; j < n; ++j) {
      const double v = x.data[(o * n + j) * inner + i], b = x.data[(o * n + best) * inner + i];
      if (min ? v < b : v > b) best = j;
    }
    out.data[o * inner + i] = static_cast<double>(best);
  });
  if (keepdims) return out;
  shape_t dropped;
  for (std::size_t d = 0; d < os.size(); ++d)
    if (d != a) dropped.push_back(os[d]);
  return reshape(out, dropped);
}

/// topk along `axis`: the k largest (or smallest) values, sorted, and their indices (the lower
/// index first on ties).
inline std::vector<tensor> topk(const tensor& x, std::int64_t k, std::int64_t axis, bool largest) {
  const std::size_t a = normalize_axis(axis, x.rank());
  if (x.rank() == 0 || k < 1 || k > x.shape[a]) throw oracle_error("topk: k out of range");
  shape_t os = x.shape;
  os[a] = k;
  tensor values(os), indices(os);
  const std::size_t n = to_size(x.shape[a]);
  std::size_t inner = 1;
  for (std::size_t d = a + 1; d < x.shape.size(); ++d) inner *= to_size(x.shape[d]);
  for_each_line(x.shape, a, [&](std::size_t o, std::size_t i) {
    std::vector<bool> used(n, false);
    for (std::size_t r = 0; r < to_size(k); ++r) {
      std::size_t best = n;
      for (std::size_t j = 0; j < n; ++j) {
        if (used[j]) continue;
        const double v = x.data[(o * n + j) * inner + i];
        if (best == n || (largest ? v > x.data[(o * n + best) * inner + i] : v < x.data[(o * n + best) * inner + i]))
          best = j;
      }
      used[best] = true;
      values.data[(o * to_size(k) + r) * inner + i] = x.data[(o * n + best) * inner + i];
      indices.data[(o * to_size(k) + r) * inner + i] = static_cast<double>(best);
    }
  });
  return {values, indices};
}

/// topk's gradient: out_grad scattered to x's shape at `indices` along `axis`.
inline tensor topk_grad(const tensor& x, const tensor& indices, const tensor& out_grad, std::int64_t axis) {
  same_shape(indices, out_grad, "topk_grad out_grad");
  const std::size_t a = normalize_axis(axis, x.rank());
  tensor out(x.shape);
  const std::size_t n = to_size(x.shape[a]), k = to_size(indices.shape.at(a));
  std::size_t inner = 1;
  for (std::size_t d = a + 1; d < x.shape.size(); ++d) inner *= to_size(x.shape[d]);
  for_each_line(indices.shape, a, [&](std::size_t o, std::size_t i) {
    for (std::size_t r = 0; r < k; ++r) {
      const auto j = to_size(as_index(indices.data[(o * k + r) * inner + i]));
      out.data[(o * n + j) * inner + i] += out_grad.data[(o * k + r) * inner + i];
    }
  });
  return out;
}

/// The number of elements, as a 0-D tensor.
inline tensor numel_of(const tensor& x) { return tensor(shape_t{}, static_cast<double>(x.size())); }

/// The p-norm over `axis` (asvector: over every dim).
inline tensor p_norm(const tensor& x, double p, std::int64_t axis, bool keepdim, bool asvector) {
  tensor e = x;
  for (auto& v : e.data) v = std::pow(std::abs(v), p);
  tensor s = reduce(e, asvector ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{axis}, keepdim, reduce_kind::sum);
  for (auto& v : s.data) v = std::pow(v, 1.0 / p);
  return s;
}

// ---------------------------------------------------------------------------- indexing

/// gather / index_select: x's slices at `index` (1-D, or 0-D: the axis removed) along `axis`.
inline tensor gather(const tensor& x, const tensor& index, std::int64_t axis) {
  const std::size_t a = normalize_axis(axis, x.rank());
  if (index.rank() > 1) throw oracle_error("gather: index of rank " + std::to_string(index.rank()));
  std::vector<tensor> slices;
  for (double v : index.data) slices.push_back(slice(x, a, as_index(v), 1));
  tensor out = concat(slices, a);
  if (index.rank() == 0) {
    shape_t s;
    for (std::size_t d = 0; d < x.shape.size(); ++d)
      if (d != a) s.push_back(x.shape[d]);
    out = reshape(out, s);
  }
  return out;
}

/// gather's gradient: out_grad's slices added into x's shape at `index` along `axis`.
inline tensor gather_grad(const tensor& x, const tensor& index, const tensor& out_grad, std::int64_t axis) {
  const std::size_t a = normalize_axis(axis, x.rank());
  shape_t gs = out_grad.shape;
  if (index.rank() == 0) gs.insert(gs.begin() + static_cast<std::ptrdiff_t>(a), 1);
  const tensor g = reshape(out_grad, gs);
  tensor out(x.shape);
  shape_t idx;
  for_each_index(g.shape, [&](const shape_t& i) {
    idx = i;
    idx[a] = as_index(index.data[to_size(i[a])]);
    out[idx] += g[i];
  });
  return out;
}

/// one_hot: out[..., c] = 1 where x[...] == c.
inline tensor one_hot(const tensor& x, std::int64_t num_classes) {
  shape_t s = x.shape;
  s.push_back(num_classes);
  tensor out(s);
  for (std::size_t e = 0; e < x.size(); ++e) out.data[e * to_size(num_classes) + to_size(as_index(x.data[e]))] = 1;
  return out;
}

}  // namespace ctspmd_oracle::ops

#endif
