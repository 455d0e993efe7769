#ifndef CTSPMD_RUNTIME_TESTS_ORACLE_OPS_GROUP_D_HPP
#define CTSPMD_RUNTIME_TESTS_ORACLE_OPS_GROUP_D_HPP
// CPU references of group D's operators (optimizers, data-parallel fallback, mixture of experts,
// scans and selections, indexing) on float64 tensors, written from the operators' definitions
// (Paddle's documented semantics), independent of the rules. As in ops.hpp, the same functions
// run on the unsharded tensors and on each simulated device's local tensors.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::ops {

inline void same_shape(const tensor& a, const tensor& b, const char* what) {
  if (a.shape != b.shape)
    throw oracle_error(std::string(what) + ": shapes " + shape_string(a.shape) + " and " + shape_string(b.shape));
}
inline double scalar_of(const tensor& t, const char* what) {
  if (t.size() != 1) throw oracle_error(std::string(what) + " must hold one value, has shape " + shape_string(t.shape));
  return t.data[0];
}

// ---------------------------------------------------------------------------- optimizers

struct adam_result {
  tensor param, moment1, moment2;
  std::optional<tensor> moment2_max, master;
  tensor beta1_pow, beta2_pow;
};

/// One Adam (AdamW with `coeff` > 0: decoupled weight decay, scaled by lr * lr_ratio) step, as
/// Paddle's kernels compute it. With a master param, the update runs on it and param_out is it.
inline adam_result adam(const tensor& param, const tensor& grad, const tensor& lr, const tensor& m1, const tensor& m2,
                        const std::optional<tensor>& m2_max, const tensor& b1p, const tensor& b2p,
                        const std::optional<tensor>& master, double beta1, double beta2, double epsilon,
                        double coeff = 0.0, double lr_ratio = 1.0) {
  same_shape(param, grad, "adam grad");
  same_shape(param, m1, "adam moment1");
  same_shape(param, m2, "adam moment2");
  if (m2_max) same_shape(param, *m2_max, "adam moment2_max");
  if (master) same_shape(param, *master, "adam master_param");
  const double l = scalar_of(lr, "learning_rate") * lr_ratio;
  const double p1 = scalar_of(b1p, "beta1_pow"), p2 = scalar_of(b2p, "beta2_pow");
  const tensor& p = master ? *master : param;
  adam_result r{tensor(p.shape), tensor(p.shape), tensor(p.shape), std::nullopt, std::nullopt, tensor(b1p.shape, p1 * beta1),
                tensor(b2p.shape, p2 * beta2)};
  if (m2_max) r.moment2_max = tensor(p.shape);
  const double lr_t = l * std::sqrt(1 - p2) / (1 - p1);
  for (std::size_t e = 0; e < p.size(); ++e) {
    const double g = grad.data[e];
    double w = p.data[e] * (1 - l * coeff);
    const double a = beta1 * m1.data[e] + (1 - beta1) * g;
    const double b = beta2 * m2.data[e] + (1 - beta2) * g * g;
    double denom = b;
    if (m2_max) denom = r.moment2_max->data[e] = std::max(m2_max->data[e], b);
    w -= lr_t * a / (std::sqrt(denom) + epsilon);
    r.param.data[e] = w;
    r.moment1.data[e] = a;
    r.moment2.data[e] = b;
  }
  if (master) r.master = r.param;
  return r;
}

/// One SGD step: param - lr * grad (on the master param when there is one; param_out is it).
inline std::vector<tensor> sgd(const tensor& param, const tensor& lr, const tensor& grad,
                               const std::optional<tensor>& master) {
  same_shape(param, grad, "sgd grad");
  const tensor& p = master ? *master : param;
  same_shape(param, p, "sgd master_param");
  const double l = scalar_of(lr, "learning_rate");
  tensor out(p.shape);
  for (std::size_t e = 0; e < p.size(); ++e) out.data[e] = p.data[e] - l * grad.data[e];
  return {out, master ? out : tensor(shape_t{})};
}

// ---------------------------------------------------------------------------- data parallel

/// A per-sample operator: out[b, ...] = x0[b, ...] * (1 + the sum of every other input's
/// sample b). Inputs are batch-first with one batch size.
inline tensor per_sample(const std::vector<tensor>& in) {
  const tensor& x = in.at(0);
  if (x.rank() == 0) throw oracle_error("per_sample: x0 is 0-D");
  const std::int64_t batch = x.shape[0];
  std::vector<double> extra(to_size(batch), 1.0);
  for (std::size_t i = 1; i < in.size(); ++i) {
    if (in[i].rank() == 0 || in[i].shape[0] != batch)
      throw oracle_error("per_sample: input " + std::to_string(i) + " of shape " + shape_string(in[i].shape) +
                         " against batch " + std::to_string(batch));
    const std::size_t per = in[i].size() / to_size(batch);
    for (std::size_t e = 0; e < in[i].size(); ++e) extra[e / per] += in[i].data[e];
  }
  tensor out = x;
  const std::size_t per = x.size() / to_size(batch);
  for (std::size_t e = 0; e < out.size(); ++e) out.data[e] *= extra[e / per];
  return out;
}


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

/// moe_combine: y [S,H], y[s] = sum_j combine_weights[s,j] * x[scatter_index[s,j]] (x [R,H]).
inline tensor moe_combine(const tensor& x, const tensor& cw, const tensor& si) {
  if (x.rank() != 2 || cw.rank() != 2 || si.shape != cw.shape) throw oracle_error("moe_combine of mismatched shapes");
  const std::int64_t S = cw.shape[0], k = cw.shape[1], H = x.shape[1];
  tensor y({S, H});
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t j = 0; j < k; ++j) {
      const auto r = as_index(si[{s, j}]);
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
      for (std::int64_t h = 0; h < H; ++h) {
        x_grad[{r, h}] += grad_y[{s, h}] * cw[{s, j}];
        cw_grad[{s, j}] += grad_y[{s, h}] * x[{r, h}];
      }
    }
  return {x_grad, cw_grad, si_grad};
}

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

/// log(sum(exp(x))) over `axis` (empty: every dim).
inline tensor logsumexp(const tensor& x, const std::vector<std::int64_t>& axis, bool keepdim) {
  tensor e = x;
  for (auto& v : e.data) v = std::exp(v);
  tensor s = reduce(e, axis, keepdim, reduce_kind::sum);
  for (auto& v : s.data) v = std::log(v);
  return s;
}

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
