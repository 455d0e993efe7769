#ifndef CTSPMD_TOOLS_SIMULATE_OPS_GATHER_ND_SCATTER_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_GATHER_ND_SCATTER_HPP
// CPU references of the n-d indexing operators (gather_nd, scatter and their gradients) on float64
// tensors, written from the operators' definitions (Paddle's documented semantics), independent
// of the rules. As in ops.hpp, the same functions run on the unsharded tensors and on each
// simulated device's local tensors.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::ops {

/// x's element named by index row `lead` (its K coordinates) followed by `rest`.
inline shape_t gather_nd_position(const tensor& index, const shape_t& lead, const shape_t& rest) {
  shape_t pos, at = lead;
  at.push_back(0);
  const std::int64_t k = index.shape.back();
  for (std::int64_t j = 0; j < k; ++j) {
    at.back() = j;
    pos.push_back(as_index(index[at]));
  }
  pos.insert(pos.end(), rest.begin(), rest.end());
  return pos;
}

/// Calls f(out position, x position) for every element of gather_nd(x, index)'s shape.
template <class F>
void for_each_gather_nd(const shape_t& x_shape, const tensor& index, F f) {
  if (index.rank() < 1) throw oracle_error("gather_nd: a 0-D index");
  const std::size_t lead = index.shape.size() - 1;
  const auto k = to_size(index.shape.back());
  if (k > x_shape.size()) throw oracle_error("gather_nd: index's last dim exceeds x's rank");
  shape_t out(index.shape.begin(), index.shape.begin() + static_cast<std::ptrdiff_t>(lead));
  out.insert(out.end(), x_shape.begin() + static_cast<std::ptrdiff_t>(k), x_shape.end());
  for_each_index(out, [&](const shape_t& o) {
    const shape_t l(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(lead));
    const shape_t r(o.begin() + static_cast<std::ptrdiff_t>(lead), o.end());
    f(o, gather_nd_position(index, l, r));
  });
}

inline shape_t gather_nd_shape(const shape_t& x_shape, const tensor& index) {
  const std::size_t lead = index.shape.size() - 1;
  shape_t out(index.shape.begin(), index.shape.begin() + static_cast<std::ptrdiff_t>(lead));
  out.insert(out.end(), x_shape.begin() + index.shape.back(), x_shape.end());
  return out;
}

/// gather_nd: out[i..., r...] = x[index[i..., 0], ..., index[i..., K-1], r...].
inline tensor gather_nd(const tensor& x, const tensor& index) {
  tensor out(gather_nd_shape(x.shape, index));
  for_each_gather_nd(x.shape, index, [&](const shape_t& o, const shape_t& p) { out[o] = x[p]; });
  return out;
}

/// gather_nd's gradient: out_grad's elements added into x's shape at their positions.
inline tensor gather_nd_grad(const tensor& x, const tensor& index, const tensor& out_grad) {
  if (out_grad.shape != gather_nd_shape(x.shape, index)) throw oracle_error("gather_nd_grad: out_grad's shape");
  tensor g(x.shape);
  for_each_gather_nd(x.shape, index, [&](const shape_t& o, const shape_t& p) { g[p] += out_grad[o]; });
  return g;
}

/// Calls f(row of x, row of updates) over every element of updates (rows named by index).
template <class F>
void for_each_scatter(const tensor& index, const tensor& updates, F f) {
  if (index.rank() != 1 || updates.rank() < 1 || updates.shape[0] != index.shape[0])
    throw oracle_error("scatter: index and updates' rows");
  for_each_index(updates.shape, [&](const shape_t& u) {
    shape_t x = u;
    x[0] = as_index(index.data[to_size(u[0])]);
    f(x, u);
  });
}

/// scatter: x with its rows index[i] replaced by updates[i] (overwrite, the last one winning),
/// or by the sum of the updates naming them (overwrite = false).
inline tensor scatter(const tensor& x, const tensor& index, const tensor& updates, bool overwrite) {
  tensor out = x;
  if (!overwrite) for_each_scatter(index, updates, [&](const shape_t& p, const shape_t&) { out[p] = 0; });
  for_each_scatter(index, updates, [&](const shape_t& p, const shape_t& u) {
    if (overwrite)
      out[p] = updates[u];
    else
      out[p] += updates[u];
  });
  return out;
}

/// scatter's gradients: x_grad = out_grad with the named rows zeroed; updates_grad[i] =
/// out_grad's row index[i] (Paddle's kernels, in both modes).
inline std::vector<tensor> scatter_grad(const tensor& index, const tensor& updates, const tensor& out_grad) {
  tensor xg = out_grad, ug(updates.shape);
  for_each_scatter(index, updates, [&](const shape_t& p, const shape_t&) { xg[p] = 0; });
  for_each_scatter(index, updates, [&](const shape_t& p, const shape_t& u) { ug[u] = out_grad[p]; });
  return {xg, ug};
}

}  // namespace ctspmd_oracle::ops

#endif
