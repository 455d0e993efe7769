#ifndef CTSPMD_TOOLS_SIMULATE_OPS_ELEMENTWISE_NORMS_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_ELEMENTWISE_NORMS_HPP
// CPU references of the elementwise family's operators and the norms and of their gradients,
// on whole tensors; the oracle runs the same functions on each device's local tensors.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::ops_a {

inline double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
inline double silu(double v) { return v * sigmoid(v); }

/// `t` summed over the dims it was broadcast on to reach its shape from `shape` (numpy,
/// right-aligned): the leading dims `shape` lacks and the dims where `shape` has size 1.
inline tensor sum_to(const tensor& t, const shape_t& shape) {
  if (shape.size() > t.shape.size()) throw oracle_error("sum_to: a target of higher rank");
  tensor out(shape);
  const std::size_t lead = t.shape.size() - shape.size();
  std::size_t o = 0;
  shape_t idx(shape.size());
  for_each_index(t.shape, [&](const shape_t& i) {
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] != 1 && shape[d] != t.shape[lead + d]) throw oracle_error("sum_to: shapes do not broadcast");
      idx[d] = shape[d] == 1 ? 0 : i[lead + d];
    }
    out[idx] += t.data[o++];
  });
  return out;
}

inline tensor scale(const tensor& x, double s, double b, bool after) {
  return ops::elementwise({x}, [=](const std::vector<double>& a) { return after ? s * a[0] + b : s * (a[0] + b); });
}
inline tensor pow(const tensor& x, double y) {
  return ops::elementwise({x}, [=](const std::vector<double>& a) { return std::pow(a[0], y); });
}
inline tensor add_n(const std::vector<tensor>& in) {
  return ops::elementwise(in, [](const std::vector<double>& a) {
    double s = 0;
    for (double v : a) s += v;
    return s;
  });
}
/// swiglu(x, y) = silu(x) * y.
inline tensor swiglu(const tensor& x, const tensor& y) {
  return ops::elementwise({x, y}, [](const std::vector<double>& a) { return silu(a[0]) * a[1]; });
}
/// swiglu(x) = silu(first half of x's last dim) * second half.
inline tensor swiglu(const tensor& x) {
  const std::size_t last = x.shape.size() - 1;
  const std::int64_t h = x.shape[last] / 2;
  return swiglu(slice(x, last, 0, h), slice(x, last, h, h));
}
/// The gradients of swiglu(x) (x_grad, of x's shape) for out_grad `g`.
inline tensor swiglu_grad(const tensor& x, const tensor& g) {
  const std::size_t last = x.shape.size() - 1;
  const std::int64_t h = x.shape[last] / 2;
  const tensor a = slice(x, last, 0, h), b = slice(x, last, h, h);
  const tensor da = ops::elementwise({a, b, g}, [](const std::vector<double>& v) {
    const double s = sigmoid(v[0]);
    return v[2] * v[1] * s * (1 + v[0] * (1 - s));
  });
  const tensor db = ops::elementwise({a, g}, [](const std::vector<double>& v) { return v[1] * silu(v[0]); });
  return concat({da, db}, last);
}
inline tensor where(const tensor& c, const tensor& x, const tensor& y) {
  return ops::elementwise({c, x, y}, [](const std::vector<double>& a) { return a[0] != 0 ? a[1] : a[2]; });
}

// ---- grads of elementwise ops -----------------------------------------------------------------
/// relu_grad(out, out_grad).
inline tensor relu_grad(const tensor& out, const tensor& g) {
  return ops::elementwise({out, g}, [](const std::vector<double>& a) { return a[0] > 0 ? a[1] : 0.0; });
}
/// silu_grad(x, out, out_grad).
inline tensor silu_grad(const tensor& x, const tensor& /*out*/, const tensor& g) {
  return ops::elementwise({x, g}, [](const std::vector<double>& a) {
    const double s = sigmoid(a[0]);
    return a[1] * s * (1 + a[0] * (1 - s));
  });
}
/// pow_grad(x, out_grad) of x ^ y.
inline tensor pow_grad(const tensor& x, const tensor& g, double y) {
  return ops::elementwise({x, g}, [=](const std::vector<double>& a) { return a[1] * y * std::pow(a[0], y - 1); });
}
/// gelu_grad(x, out_grad), exact gelu: x * Phi(x).
inline tensor gelu_grad(const tensor& x, const tensor& g) {
  return ops::elementwise({x, g}, [](const std::vector<double>& a) {
    const double cdf = 0.5 * (1 + std::erf(a[0] / std::sqrt(2.0)));
    const double pdf = std::exp(-0.5 * a[0] * a[0]) / std::sqrt(2 * 3.14159265358979323846);
    return a[1] * (cdf + a[0] * pdf);
  });
}
/// {x_grad, y_grad} of add (x + y).
inline std::vector<tensor> add_grad(const tensor& x, const tensor& y, const tensor& g) {
  return {sum_to(g, x.shape), sum_to(g, y.shape)};
}
/// {x_grad, y_grad} of multiply.
inline std::vector<tensor> multiply_grad(const tensor& x, const tensor& y, const tensor& g) {
  return {sum_to(ops::multiply(g, y), x.shape), sum_to(ops::multiply(g, x), y.shape)};
}
/// {x_grad, y_grad} of divide (out = x / y).
inline std::vector<tensor> divide_grad(const tensor& x, const tensor& y, const tensor& out, const tensor& g) {
  const tensor dx = ops::elementwise({g, y}, [](const std::vector<double>& a) { return a[0] / a[1]; });
  const tensor dy = ops::elementwise({g, out, y}, [](const std::vector<double>& a) { return -a[0] * a[1] / a[2]; });
  return {sum_to(dx, x.shape), sum_to(dy, y.shape)};
}
/// {x_grad, y_grad} of where(c, x, y).
inline std::vector<tensor> where_grad(const tensor& c, const tensor& x, const tensor& y, const tensor& g) {
  const tensor dx = ops::elementwise({c, g}, [](const std::vector<double>& a) { return a[0] != 0 ? a[1] : 0.0; });
  const tensor dy = ops::elementwise({c, g}, [](const std::vector<double>& a) { return a[0] != 0 ? 0.0 : a[1]; });
  return {sum_to(dx, x.shape), sum_to(dy, y.shape)};
}

// ---- norms ------------------------------------------------------------------------------------
struct rms_norm_result {
  tensor out, invvar;
};
/// rms_norm over x's last dim; invvar has shape x[:-1].
inline rms_norm_result rms_norm(const tensor& x, const tensor& scale, double eps) {
  if (x.rank() < 1 || scale.size() != to_size(x.shape.back()))
    throw oracle_error("rms_norm: scale " + shape_string(scale.shape) + " for x " + shape_string(x.shape));
  const auto cols = to_size(x.shape.back());
  const shape_t lead(x.shape.begin(), x.shape.end() - 1);
  const auto rows = to_size(numel(lead));
  rms_norm_result r{tensor(x.shape), tensor(lead)};
  for (std::size_t i = 0; i < rows; ++i) {
    double ms = 0;
    for (std::size_t j = 0; j < cols; ++j) ms += x.data[i * cols + j] * x.data[i * cols + j];
    const double inv = 1.0 / std::sqrt(ms / static_cast<double>(cols) + eps);
    for (std::size_t j = 0; j < cols; ++j) r.out.data[i * cols + j] = x.data[i * cols + j] * inv * scale.data[j];
    r.invvar.data[i] = inv;
  }
  return r;
}
/// {x_grad, scale_grad} of rms_norm, from the given invvar.
inline std::vector<tensor> rms_norm_grad(const tensor& x, const tensor& scale, const tensor& invvar, const tensor& g) {
  if (x.rank() < 1 || g.shape != x.shape || scale.size() != to_size(x.shape.back()) ||
      invvar.size() * to_size(x.shape.back()) != x.size())
    throw oracle_error("rms_norm_grad: x " + shape_string(x.shape) + ", scale " + shape_string(scale.shape) +
                       ", invvar " + shape_string(invvar.shape) + ", out_grad " + shape_string(g.shape) + " do not fit");
  const auto cols = to_size(x.shape.back());
  const auto rows = x.size() / cols;
  tensor dx(x.shape), ds(scale.shape);
  for (std::size_t i = 0; i < rows; ++i) {
    const double r = invvar.data[i];
    double dot = 0;  // sum_j g_j s_j x_j
    for (std::size_t j = 0; j < cols; ++j) dot += g.data[i * cols + j] * scale.data[j] * x.data[i * cols + j];
    for (std::size_t j = 0; j < cols; ++j) {
      const double xj = x.data[i * cols + j];
      dx.data[i * cols + j] = r * scale.data[j] * g.data[i * cols + j] - r * r * r * xj * dot / static_cast<double>(cols);
      ds.data[j] += g.data[i * cols + j] * xj * r;
    }
  }
  return {dx, ds};
}
/// {x_grad, scale_grad, bias_grad} of layer_norm over x's dims from `bna` (scale and bias 1-D
/// over the flattened normalised dims), from the given mean and variance.
inline std::vector<tensor> layer_norm_grad(const tensor& x, const tensor& scale, const tensor& mean,
                                           const tensor& variance, const tensor& g, std::size_t bna, double eps) {
  if (bna > x.shape.size()) throw oracle_error("layer_norm_grad: begin_norm_axis out of range");
  const auto rows = to_size(numel(shape_t(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(bna))));
  const auto cols = rows == 0 ? 0 : x.size() / rows;
  if (g.shape != x.shape || scale.size() != cols || mean.size() != rows || variance.size() != rows)
    throw oracle_error("layer_norm_grad: x " + shape_string(x.shape) + ", scale " + shape_string(scale.shape) +
                       ", mean " + shape_string(mean.shape) + ", out_grad " + shape_string(g.shape) + " do not fit");
  tensor dx(x.shape), ds(scale.shape), db(scale.shape);
  for (std::size_t i = 0; i < rows; ++i) {
    const double rstd = 1.0 / std::sqrt(variance.data[i] + eps);
    double m1 = 0, m2 = 0;  // means of dxhat and dxhat * xhat
    for (std::size_t j = 0; j < cols; ++j) {
      const double xhat = (x.data[i * cols + j] - mean.data[i]) * rstd;
      const double dxhat = g.data[i * cols + j] * scale.data[j];
      m1 += dxhat;
      m2 += dxhat * xhat;
      ds.data[j] += g.data[i * cols + j] * xhat;
      db.data[j] += g.data[i * cols + j];
    }
    m1 /= static_cast<double>(cols);
    m2 /= static_cast<double>(cols);
    for (std::size_t j = 0; j < cols; ++j) {
      const double xhat = (x.data[i * cols + j] - mean.data[i]) * rstd;
      dx.data[i * cols + j] = rstd * (g.data[i * cols + j] * scale.data[j] - m1 - xhat * m2);
    }
  }
  return {dx, ds, db};
}

}  // namespace ctspmd_oracle::ops_a

#endif
