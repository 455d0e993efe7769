#ifndef CTSPMD_TOOLS_SIMULATE_OPS_OPTIMIZER_DATA_PARALLEL_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_OPTIMIZER_DATA_PARALLEL_HPP
// CPU references of the optimizers (adam, adamw, sgd) and of the data-parallel fallback
// (default_data_parallel) on float64 tensors, written from the operators' definitions (Paddle's
// documented semantics), independent of the rules. As in ops.hpp, the same functions run on the
// unsharded tensors and on each simulated device's local tensors.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::ops {

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

}  // namespace ctspmd_oracle::ops

#endif
