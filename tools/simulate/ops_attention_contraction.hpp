#ifndef CTSPMD_TOOLS_SIMULATE_OPS_ATTENTION_CONTRACTION_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_ATTENTION_CONTRACTION_HPP
// CPU references of the LLM-training operators (attention, contraction gradients,
// vocabulary-parallel embedding and cross entropy), and of their gradients, on float64 tensors,
// written from the operators' mathematical definitions. As in ops.hpp, the same functions run on
// the unsharded tensors (the reference) and on each simulated device's local tensors.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <algorithm>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::ops {

struct two_grads {
  tensor dx, dy;
};

/// The gradients of out = matmul(x, y, trans_x, trans_y) (ops::matmul) for out_grad `g`:
/// dX = G op(Y)ᵀ and dY = op(X)ᵀ G, each summed over the batch dims its operand broadcast over
/// (a missing leading dim, or a size-1 dim), and laid out as the operand is stored.
inline two_grads matmul_grad(const tensor& x, const tensor& y, const tensor& g, bool trans_x, bool trans_y) {
  tensor a = x.rank() == 1 ? tensor(x) : (trans_x ? swap_last_two(x) : x);
  tensor b = y.rank() == 1 ? tensor(y) : (trans_y ? swap_last_two(y) : y);
  if (x.rank() == 1) a.shape = {1, x.shape[0]};
  if (y.rank() == 1) b.shape = {y.shape[0], 1};
  const shape_t ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  const shape_t batch = broadcast_shapes({ab, bb});
  const auto m = to_size(a.shape[a.shape.size() - 2]), k = to_size(a.shape.back()), n = to_size(b.shape.back());
  if (to_size(b.shape[b.shape.size() - 2]) != k) throw oracle_error("matmul_grad: contracted sizes differ");
  shape_t gs = batch;
  gs.push_back(to_int(m));
  gs.push_back(to_int(n));
  if (numel(gs) != numel(g.shape)) throw oracle_error("matmul_grad: out_grad of shape " + shape_string(g.shape));
  tensor da(a.shape), db(b.shape);
  const tensor a_batch(ab), b_batch(bb);
  std::size_t go = 0;
  for_each_index(batch, [&](const shape_t& idx) {
    const std::size_t ao = broadcast_offset(a_batch, idx) * m * k, bo = broadcast_offset(b_batch, idx) * k * n;
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j, ++go)
        for (std::size_t l = 0; l < k; ++l) {
          da.data[ao + i * k + l] += g.data[go] * b.data[bo + l * n + j];
          db.data[bo + l * n + j] += g.data[go] * a.data[ao + i * k + l];
        }
  });
  if (x.rank() == 1) da.shape = x.shape;
  else if (trans_x) da = swap_last_two(da);
  if (y.rank() == 1) db.shape = y.shape;
  else if (trans_y) db = swap_last_two(db);
  return {da, db};
}

struct attention_result {
  tensor out, softmax, lse;
};

/// Index of `i` into a dim of size `n` that broadcasts (size 1) or not.
inline std::int64_t bidx(std::int64_t i, std::int64_t n) { return n == 1 ? 0 : i; }

/// The attention scores s[b, h, i, j] = q[b, i, h] . k[b, j, h / group] / sqrt(d) + mask[b, h, i, j]
/// (the mask's size-1 dims broadcast; a 0-d mask is none), -inf where `causal` hides key j > i.
/// `q_offset`: the row of q's first query in the whole sequence (a chunk of it: context
/// parallelism). `balanced` = n > 0: the sequence (k's T rows) is in the load-balanced order of n
/// devices, device b holding chunks b and 2n - 1 - b of 2n (`balanced_position`), so a row's
/// position, which the causal mask compares, is not its index.
inline std::int64_t balanced_position(std::int64_t row, std::int64_t rows, std::int64_t n) {
  if (n <= 0) return row;
  if (rows % (2 * n) != 0)
    throw oracle_error("attention: a sequence of " + std::to_string(rows) + " in 2 x " + std::to_string(n) + " chunks");
  const auto c = rows / (2 * n), b = row / (2 * c), r = row % (2 * c);
  return r < c ? b * c + r : (2 * n - 1 - b) * c + (r - c);
}
inline tensor attention_scores(const tensor& q, const tensor& k, const tensor& mask, bool causal,
                               std::int64_t q_offset = 0, std::int64_t balanced = 0) {
  if (q.rank() != 4 || k.rank() != 4) throw oracle_error("attention: q and k must be 4-D");
  const auto B = q.shape[0], S = q.shape[1], H = q.shape[2], D = q.shape[3], T = k.shape[1], HK = k.shape[2];
  if (k.shape[0] != B || k.shape[3] != D || HK == 0 || H % HK != 0)
    throw oracle_error("attention: q " + shape_string(q.shape) + " and k " + shape_string(k.shape) + " do not match");
  const bool has_mask = mask.rank() == 4;
  if (has_mask)
    for (std::size_t d = 0; d < 4; ++d)
      if (mask.shape[d] != 1 && mask.shape[d] != shape_t{B, H, S, T}[d])
        throw oracle_error("attention: a mask of shape " + shape_string(mask.shape) + " for scores " +
                           shape_string({B, H, S, T}));
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  tensor s({B, H, S, T});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < S; ++i)
        for (std::int64_t j = 0; j < T; ++j) {
          double acc = 0;
          for (std::int64_t e = 0; e < D; ++e) acc += q[{b, i, h, e}] * k[{b, j, h / (H / HK), e}];
          acc *= scale;
          if (has_mask)
            acc += mask[{bidx(b, mask.shape[0]), bidx(h, mask.shape[1]), bidx(i, mask.shape[2]), bidx(j, mask.shape[3])}];
          if (causal && balanced_position(j, T, balanced) > balanced_position(i + q_offset, T, balanced))
            acc = -std::numeric_limits<double>::infinity();
          s[{b, h, i, j}] = acc;
        }
  return s;
}

/// Flash attention: out [b, sq, h, dv], softmax [b, h, sq, skv], softmax_lse [b, h, sq].
inline attention_result attention(const tensor& q, const tensor& k, const tensor& v, const tensor& mask, bool causal,
                                  std::int64_t q_offset = 0, std::int64_t balanced = 0) {
  const tensor s = attention_scores(q, k, mask, causal, q_offset, balanced);
  if (v.rank() != 4) throw oracle_error("attention: v must be 4-D");
  const auto B = s.shape[0], H = s.shape[1], S = s.shape[2], T = s.shape[3], HK = v.shape[2], DV = v.shape[3];
  if (v.shape[0] != B || v.shape[1] != T || H % HK != 0) throw oracle_error("attention: v does not match");
  attention_result r{tensor({B, S, H, DV}), tensor(s.shape), tensor({B, H, S})};
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < S; ++i) {
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < T; ++j) mx = std::max(mx, s[{b, h, i, j}]);
        double sum = 0;
        for (std::int64_t j = 0; j < T; ++j) sum += std::exp(s[{b, h, i, j}] - mx);
        r.lse[{b, h, i}] = mx + std::log(sum);
        for (std::int64_t j = 0; j < T; ++j) {
          const double p = std::exp(s[{b, h, i, j}] - mx) / sum;
          r.softmax[{b, h, i, j}] = p;
          for (std::int64_t e = 0; e < DV; ++e) r.out[{b, i, h, e}] += p * v[{b, j, h / (H / HK), e}];
        }
      }
  return r;
}

struct attention_grads {
  tensor dq, dk, dv;
};

/// The gradients of `attention` for out_grad `dout` (a kv head's gradients sum over its group).
inline attention_grads attention_grad(const tensor& q, const tensor& k, const tensor& v, const tensor& mask,
                                      const tensor& dout, bool causal, std::int64_t q_offset = 0,
                                      std::int64_t balanced = 0) {
  const auto a = attention(q, k, v, mask, causal, q_offset, balanced);
  const auto B = q.shape[0], S = q.shape[1], H = q.shape[2], D = q.shape[3], T = k.shape[1], HK = k.shape[2],
             DV = v.shape[3];
  if (dout.shape != a.out.shape) throw oracle_error("attention_grad: out_grad of shape " + shape_string(dout.shape));
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  attention_grads g{tensor(q.shape), tensor(k.shape), tensor(v.shape)};
  std::vector<double> dp(static_cast<std::size_t>(T));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t hk = h / (H / HK);
      for (std::int64_t i = 0; i < S; ++i) {
        double row = 0;
        for (std::int64_t j = 0; j < T; ++j) {
          const double p = a.softmax[{b, h, i, j}];
          double acc = 0;
          for (std::int64_t e = 0; e < DV; ++e) {
            acc += dout[{b, i, h, e}] * v[{b, j, hk, e}];
            g.dv[{b, j, hk, e}] += p * dout[{b, i, h, e}];
          }
          dp[static_cast<std::size_t>(j)] = acc;
          row += p * acc;
        }
        for (std::int64_t j = 0; j < T; ++j) {
          const double ds = a.softmax[{b, h, i, j}] * (dp[static_cast<std::size_t>(j)] - row) * scale;
          for (std::int64_t e = 0; e < D; ++e) {
            g.dq[{b, i, h, e}] += ds * k[{b, j, hk, e}];
            g.dk[{b, j, hk, e}] += ds * q[{b, i, h, e}];
          }
        }
      }
    }
  return g;
}

/// The weight gradient of an embedding lookup: grad[r, :] = sum of out_grad[p, :] over the
/// positions p whose id is r (`padding_idx`, unless -1, gets none). `row_offset` >= 0 computes
/// the rows [row_offset, row_offset + rows) of a row-sharded table (ids outside them are another
/// device's); the reference (row_offset < 0) rejects ids out of range.
inline tensor embedding_grad(const tensor& ids, const tensor& out_grad, std::int64_t rows, std::int64_t padding_idx,
                             std::int64_t row_offset = -1) {
  if (out_grad.rank() != ids.rank() + 1 || !std::equal(ids.shape.begin(), ids.shape.end(), out_grad.shape.begin()))
    throw oracle_error("embedding_grad: out_grad of shape " + shape_string(out_grad.shape) + " for ids of shape " +
                       shape_string(ids.shape));
  const auto cols = out_grad.shape.back();
  tensor g({rows, cols});
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t id = as_index(ids.data[i]);
    if (id == padding_idx && padding_idx != -1) continue;
    const std::int64_t r = row_offset < 0 ? id : id - row_offset;
    if (r < 0 || r >= rows) {
      if (row_offset < 0) throw oracle_error("embedding_grad: id " + std::to_string(id) + " out of range");
      continue;
    }
    for (std::int64_t j = 0; j < cols; ++j) g.data[to_size(r * cols + j)] += out_grad.data[i * to_size(cols) + to_size(j)];
  }
  return g;
}

/// fused_linear_param_grad_add: dweight + xᵀ dout and dbias + dout, each summed over every
/// leading dim (x [..., M], dout [..., N]); a 0-d dweight / dbias is none.
inline two_grads linear_param_grad_add(const tensor& x, const tensor& dout, const tensor& dweight, const tensor& dbias) {
  const auto m = x.shape.back(), n = dout.shape.back();
  const auto rows = numel(x.shape) / m;
  if (numel(dout.shape) / n != rows) throw oracle_error("linear_param_grad_add: x and dout rows differ");
  two_grads r{dweight.rank() == 2 ? dweight : tensor({m, n}), dbias.rank() == 1 ? dbias : tensor({n})};
  if (r.dx.shape != shape_t{m, n} || r.dy.shape != shape_t{n}) throw oracle_error("linear_param_grad_add: accumulators");
  for (std::int64_t p = 0; p < rows; ++p)
    for (std::int64_t j = 0; j < n; ++j) {
      const double g = dout.data[to_size(p * n + j)];
      r.dy.data[to_size(j)] += g;
      for (std::int64_t i = 0; i < m; ++i) r.dx.data[to_size(i * n + j)] += x.data[to_size(p * m + i)] * g;
    }
  return r;
}

}  // namespace ctspmd_oracle::ops

#endif
