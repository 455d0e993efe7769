#ifndef CTSPMD_TOOLS_SIMULATE_OPS_MOE_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_MOE_HPP
// CPU references of the mixture-of-experts operators (moe_gate_dispatch, moe_combine and their
// gradients) on float64 tensors, written from the operators' definitions (Paddle's documented
// semantics), independent of the rules. As in ops.hpp, the same functions run on the unsharded
// tensors and on each simulated device's local tensors.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::ops {

// ---------------------------------------------------------------------------- mixture of experts

struct dispatch_result {
  tensor y, combine_weights, scatter_index, expert_offset, expert_id;
};

/// moe_gate_dispatch: each token (row of x [S,H]) takes its top-k experts by gate_logits [S,E]
/// (ties: the lower expert); combine_weights [S,k] are the chosen logits, expert_id [S,k] the
/// experts. Slots are given k-major, then in token order: the next free one of `capacity` in
/// the expert, else none. scatter_index [k,S] is e * capacity + slot, or -1; y [E,capacity,H]
/// holds the tokens' rows in their slots (zeros elsewhere); expert_offset [E] is the running
/// count of filled slots.
inline dispatch_result moe_gate_dispatch(const tensor& x, const tensor& gate, std::int64_t k, std::int64_t capacity) {
  if (x.rank() != 2 || gate.rank() != 2 || x.shape[0] != gate.shape[0] || k < 1 || k > gate.shape[1])
    throw oracle_error("moe_gate_dispatch of x " + shape_string(x.shape) + " and gate " + shape_string(gate.shape));
  const std::int64_t S = x.shape[0], H = x.shape[1], E = gate.shape[1];
  dispatch_result r{tensor({E, capacity, H}), tensor({S, k}), tensor({k, S}), tensor({E}), tensor({S, k})};
  for (std::int64_t s = 0; s < S; ++s) {
    std::vector<bool> taken(to_size(E), false);
    for (std::int64_t j = 0; j < k; ++j) {
      std::int64_t best = -1;
      for (std::int64_t e = 0; e < E; ++e)
        if (!taken[to_size(e)] && (best < 0 || gate[{s, e}] > gate[{s, best}])) best = e;
      taken[to_size(best)] = true;
      r.expert_id[{s, j}] = static_cast<double>(best);
      r.combine_weights[{s, j}] = gate[{s, best}];
    }
  }
  std::vector<std::int64_t> filled(to_size(E), 0);
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t s = 0; s < S; ++s) {
      const auto e = as_index(r.expert_id[{s, j}]);
      std::int64_t& n = filled[to_size(e)];
      if (n >= capacity) {
        r.scatter_index[{j, s}] = -1;
        continue;
      }
      r.scatter_index[{j, s}] = static_cast<double>(e * capacity + n);
      for (std::int64_t h = 0; h < H; ++h) r.y[{e, n, h}] = x[{s, h}];
      ++n;
    }
  double run = 0;
  for (std::int64_t e = 0; e < E; ++e) r.expert_offset[{e}] = run += static_cast<double>(filled[to_size(e)]);
  return r;
}

/// moe_gate_dispatch_grad: x_grad [S,H] (row s: the sum of grad_y's rows at the token's slots)
/// and gate_logits_grad [S,E] (grad_combine_weights scattered to the chosen experts). Every
/// token's columns of scatter_index [k,S] and rows of the others must be local; grad_y [E,C,H]
/// whole in E and C.
inline std::vector<tensor> moe_gate_dispatch_grad(const tensor& cw, const tensor& si, const tensor& eid,
                                                  const tensor& grad_y, const tensor& gcw) {
  const std::int64_t experts = grad_y.shape.at(0);
  const std::int64_t S = cw.shape.at(0), k = cw.shape.at(1), C = grad_y.shape.at(1), H = grad_y.shape.at(2);
  if (si.shape != shape_t{k, S} || eid.shape != cw.shape || gcw.shape != cw.shape || grad_y.shape[0] != experts)
    throw oracle_error("moe_gate_dispatch_grad of mismatched shapes");
  tensor x_grad({S, H}), gate_grad({S, experts});
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t j = 0; j < k; ++j) {
      gate_grad[{s, as_index(eid[{s, j}])}] += gcw[{s, j}];
      const auto slot = as_index(si[{j, s}]);
      if (slot < 0) continue;
      for (std::int64_t h = 0; h < H; ++h) x_grad[{s, h}] += grad_y[{slot / C, slot % C, h}];
    }
  return {x_grad, gate_grad};
}

/// moe_combine: y [S,H], y[s] = sum_j combine_weights[s,j] * x[scatter_index[s,j]] (x [R,H]);
/// a dropped token's (index -1) adds nothing.
inline tensor moe_combine(const tensor& x, const tensor& cw, const tensor& si) {
  if (x.rank() != 2 || cw.rank() != 2 || si.shape != cw.shape) throw oracle_error("moe_combine of mismatched shapes");
  const std::int64_t S = cw.shape[0], k = cw.shape[1], H = x.shape[1];
  tensor y({S, H});
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t j = 0; j < k; ++j) {
      const auto r = as_index(si[{s, j}]);
      if (r < 0) continue;  // dropped: over its expert's capacity
      for (std::int64_t h = 0; h < H; ++h) y[{s, h}] += cw[{s, j}] * x[{r, h}];
    }
  return y;
}

/// moe_combine_grad: x_grad [R,H] (grad_y rows times their weights, scattered to x's rows),
/// combine_weights_grad [S,k] (grad_y[s] . x[scatter_index[s,j]]), scatter_index_grad (zeros).
inline std::vector<tensor> moe_combine_grad(const tensor& x, const tensor& cw, const tensor& si, const tensor& grad_y) {
  if (x.rank() != 2 || si.shape != cw.shape || grad_y.shape != shape_t{cw.shape.at(0), x.shape[1]})
    throw oracle_error("moe_combine_grad of mismatched shapes");
  const std::int64_t S = cw.shape[0], k = cw.shape[1], H = x.shape[1];
  tensor x_grad(x.shape), cw_grad(cw.shape), si_grad(si.shape);
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t j = 0; j < k; ++j) {
      const auto r = as_index(si[{s, j}]);
      if (r < 0) continue;
      for (std::int64_t h = 0; h < H; ++h) {
        x_grad[{r, h}] += grad_y[{s, h}] * cw[{s, j}];
        cw_grad[{s, j}] += grad_y[{s, h}] * x[{r, h}];
      }
    }
  return {x_grad, cw_grad, si_grad};
}

}  // namespace ctspmd_oracle::ops

#endif
