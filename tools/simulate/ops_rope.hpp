#ifndef CTSPMD_TOOLS_SIMULATE_OPS_ROPE_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_ROPE_HPP
// CPU references of the rotary position embedding and its gradient (fused_rope) on
// float64 tensors, written from the operator's mathematical definition. As in ops.hpp, the same
// functions run on the unsharded tensors (the reference) and on each simulated device's local
// tensors.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tensor.hpp"

namespace ctspmd_oracle::ops {

/// Rotary embedding's options.
struct rope_options {
  bool neox = true;         ///< rotate_half pairs j with j + d/2 (else 2i with 2i + 1)
  bool time_major = false;  ///< x is [s, b, h, d] (else [b, s, h, d])
  double base = 10000.0;    ///< the base of the angles when sin and cos are absent
};

/// The rotation's partner of element j of a head vector of size d, and the sign it enters with:
/// out[j] = x[j] cos[j] + sign(j) x[partner(j)] sin[j].
inline std::size_t rope_partner(std::size_t j, std::size_t d, bool neox) {
  if (neox) return j < d / 2 ? j + d / 2 : j - d / 2;
  return j % 2 == 0 ? j + 1 : j - 1;
}
inline double rope_sign(std::size_t j, std::size_t d, bool neox) {
  return (neox ? j < d / 2 : j % 2 == 0) ? -1.0 : 1.0;
}

/// Applies `f(x_offset, row, j)` per element of x (4-D), where row is the sin/cos row of the
/// element (position_ids[b][s], or s when `pos` is 0-D).
template <class F>
void rope_for_each(const tensor& x, const tensor& pos, const rope_options& o, F f) {
  if (x.rank() != 4) throw oracle_error("rope: x of shape " + shape_string(x.shape));
  const auto n0 = to_size(x.shape[0]), n1 = to_size(x.shape[1]), h = to_size(x.shape[2]), d = to_size(x.shape[3]);
  if (d % 2 != 0) throw oracle_error("rope: odd head dim");
  for (std::size_t i0 = 0; i0 < n0; ++i0)
    for (std::size_t i1 = 0; i1 < n1; ++i1) {
      const std::size_t b = o.time_major ? i1 : i0, s = o.time_major ? i0 : i1;
      std::size_t row = s;
      if (pos.rank() != 0) {
        if (b >= to_size(pos.shape.at(0)) || s >= to_size(pos.shape.at(1)))
          throw oracle_error("rope: position_ids of shape " + shape_string(pos.shape));
        row = to_size(static_cast<std::int64_t>(pos.data[b * to_size(pos.shape[1]) + s]));
      }
      for (std::size_t k = 0; k < h; ++k)
        for (std::size_t j = 0; j < d; ++j) f(((i0 * n1 + i1) * h + k) * d, row, j);
    }
}

/// cos (or sin when `is_sin`) of element j of row `row`: from the table (2-D [rows, d] or 4-D
/// [1, rows, 1, d], both stored as rows of d), or, with no table (0-D), from the angle
/// row * base^(-2i/d) of the element's pair i.
inline double rope_table(const tensor& t, std::size_t row, std::size_t j, std::size_t d, const rope_options& o,
                         bool is_sin) {
  if (t.rank() == 0) {
    const std::size_t i = o.neox ? j % (d / 2) : j / 2;
    const double angle = static_cast<double>(row) *
                         std::pow(o.base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    return is_sin ? std::sin(angle) : std::cos(angle);
  }
  if (to_size(t.shape.back()) != d || numel(t.shape) < to_int((row + 1) * d))
    throw oracle_error("rope: table of shape " + shape_string(t.shape) + " for row " + std::to_string(row));
  return t.data[row * d + j];
}

/// out = x cos + rotate_half(x) sin, per head vector, at x's positions. A 0-D x (absent) gives
/// a 0-D result.
inline tensor rope(const tensor& x, const tensor& sin, const tensor& cos, const tensor& pos, const rope_options& o) {
  if (x.rank() == 0) return tensor(shape_t{});
  tensor out(x.shape);
  const auto d = to_size(x.shape.back());
  rope_for_each(x, pos, o, [&](std::size_t base, std::size_t row, std::size_t j) {
    out.data[base + j] = x.data[base + j] * rope_table(cos, row, j, d, o, false) +
                         rope_sign(j, d, o.neox) * x.data[base + rope_partner(j, d, o.neox)] *
                             rope_table(sin, row, j, d, o, true);
  });
  return out;
}

/// The gradient of x for out = rope(x) and out_grad `g` (the transposed rotation).
inline tensor rope_grad(const tensor& g, const tensor& sin, const tensor& cos, const tensor& pos, const rope_options& o) {
  if (g.rank() == 0) return tensor(shape_t{});
  tensor dx(g.shape);
  const auto d = to_size(g.shape.back());
  rope_for_each(g, pos, o, [&](std::size_t base, std::size_t row, std::size_t j) {
    dx.data[base + j] += g.data[base + j] * rope_table(cos, row, j, d, o, false);
    dx.data[base + rope_partner(j, d, o.neox)] +=
        rope_sign(j, d, o.neox) * g.data[base + j] * rope_table(sin, row, j, d, o, true);
  });
  return dx;
}

}  // namespace ctspmd_oracle::ops

#endif
