#ifndef CTSPMD_RUNTIME_TESTS_ORACLE_OPS_GROUP_H_HPP
#define CTSPMD_RUNTIME_TESTS_ORACLE_OPS_GROUP_H_HPP
// CPU references of the gradients group H's grad rules compute, written from the operators'
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
}}  // namespace ctspmd_oracle::ops

#endif
