#ifndef CTSPMD_RUNTIME_TESTS_ORACLE_OPS_GROUP_B_HPP
#define CTSPMD_RUNTIME_TESTS_ORACLE_OPS_GROUP_B_HPP
// CPU references of the LLM-training operators of group B (attention, contraction gradients,
// vocabulary-parallel embedding and cross entropy), and of their gradients, on float64 tensors,
// written from the operators' mathematical definitions. As in ops.hpp, the same functions run on
// the unsharded tensors (the reference) and on each simulated device's local tensors.

#include <cmath>
#include <cstddef>
#include <cstdint>
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

}  // namespace ctspmd_oracle::ops

#endif
