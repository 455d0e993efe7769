#ifndef CTSPMD_TOOLS_SIMULATE_TENSOR_HPP
#define CTSPMD_TOOLS_SIMULATE_TENSOR_HPP
// A small row-major float64 N-d tensor for the numerical oracle, with the slicing and
// concatenation the mesh simulator needs, a deterministic random generator and a
// tolerance comparison. Run time only; no dependency on ctspmd.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ctspmd_oracle {

using shape_t = std::vector<std::int64_t>;

/// A failure of an operator or of the simulator on the shapes it was given (a wrong rule
/// makes local shapes disagree: the simulator reports it as a failed case).
struct oracle_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::size_t to_size(std::int64_t v) {
  if (v < 0) throw oracle_error("negative size or index " + std::to_string(v));
  return static_cast<std::size_t>(v);
}
inline std::int64_t to_int(std::size_t v) { return static_cast<std::int64_t>(v); }

inline std::int64_t numel(const shape_t& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

inline std::string shape_string(const shape_t& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// Row-major strides of `s`.
inline shape_t strides_of(const shape_t& s) {
  shape_t st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

/// Calls f(index) for every multi-index of `shape` in row-major order (once for a 0-d shape,
/// never when a dim is 0).
template <class F>
void for_each_index(const shape_t& shape, F&& f) {
  for (auto d : shape)
    if (d == 0) return;
  shape_t idx(shape.size(), 0);
  while (true) {
    f(static_cast<const shape_t&>(idx));
    std::size_t d = shape.size();
    while (d > 0) {
      --d;
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (shape.empty()) return;
  }
}

/// A dense float64 tensor; a 0-d tensor has one element.
struct tensor {
  shape_t shape;
  std::vector<double> data = std::vector<double>(1, 0.0);

  tensor() = default;
  explicit tensor(shape_t s, double fill = 0.0) : shape(std::move(s)), data(to_size(numel(shape)), fill) {}

  std::int64_t rank() const { return to_int(shape.size()); }
  std::int64_t dim(std::size_t d) const { return shape.at(d); }
  std::size_t size() const { return data.size(); }

  std::size_t offset(const shape_t& idx) const {
    if (idx.size() != shape.size()) throw oracle_error("index of rank " + std::to_string(idx.size()) + " into a tensor of shape " + shape_string(shape));
    std::size_t off = 0;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      if (idx[i] < 0 || idx[i] >= shape[i]) throw oracle_error("index out of range in shape " + shape_string(shape));
      off = off * to_size(shape[i]) + to_size(idx[i]);
    }
    return off;
  }
  double& operator[](const shape_t& idx) { return data[offset(idx)]; }
  double operator[](const shape_t& idx) const { return data[offset(idx)]; }
};

/// A deterministic generator (splitmix64): the same sequence everywhere.
class rng {
 public:
  explicit rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// An integer in [lo, hi].
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  /// A real in [lo, hi).
  double real(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// True with probability 1 / n.
  bool one_in(std::int64_t n) { return uniform(1, n) == 1; }
  bool coin() { return one_in(2); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[to_size(uniform(0, to_int(v.size()) - 1))];
  }

 private:
  std::uint64_t state_;
};

/// Values in [lo, hi), never closer than 0.05 to 0 when `nonzero`.
inline tensor random_tensor(const shape_t& shape, rng& r, double lo = -2.0, double hi = 2.0, bool nonzero = false) {
  tensor t(shape);
  for (auto& v : t.data) {
    v = r.real(lo, hi);
    if (nonzero && std::abs(v) < 0.05) v = v < 0 ? -0.5 : 0.5;
  }
  return t;
}

/// The largest |entry| (0 for no entries).
inline double magnitude(const tensor& t) {
  double m = 0;
  for (double v : t.data) m = std::max(m, std::abs(v));
  return m;
}

/// `len` entries of dim `dim` from `start`.
inline tensor slice(const tensor& t, std::size_t dim, std::int64_t start, std::int64_t len) {
  if (dim >= t.shape.size() || start < 0 || len < 0 || start + len > t.shape[dim])
    throw oracle_error("slice [" + std::to_string(start) + ", +" + std::to_string(len) + ") of dim " +
                       std::to_string(dim) + " out of shape " + shape_string(t.shape));
  shape_t s = t.shape;
  s[dim] = len;
  tensor out(s);
  const std::size_t outer = to_size(numel(shape_t(t.shape.begin(), t.shape.begin() + static_cast<std::ptrdiff_t>(dim))));
  const std::size_t inner =
      to_size(numel(shape_t(t.shape.begin() + static_cast<std::ptrdiff_t>(dim) + 1, t.shape.end())));
  const std::size_t n = to_size(t.shape[dim]);
  std::size_t o = 0;
  for (std::size_t a = 0; a < outer; ++a)
    for (std::size_t b = to_size(start); b < to_size(start + len); ++b)
      for (std::size_t c = 0; c < inner; ++c) out.data[o++] = t.data[(a * n + b) * inner + c];
  return out;
}

/// The concatenation of `parts` (same rank, equal but for `dim`) along `dim`.
inline tensor concat(const std::vector<tensor>& parts, std::size_t dim) {
  if (parts.empty()) throw oracle_error("concat of no tensors");
  const shape_t& s0 = parts[0].shape;
  if (dim >= s0.size()) throw oracle_error("concat dim " + std::to_string(dim) + " out of rank " + std::to_string(s0.size()));
  shape_t s = s0;
  s[dim] = 0;
  for (const auto& p : parts) {
    if (p.shape.size() != s0.size()) throw oracle_error("concat of different ranks");
    for (std::size_t d = 0; d < s0.size(); ++d)
      if (d != dim && p.shape[d] != s0[d])
        throw oracle_error("concat of shapes " + shape_string(s0) + " and " + shape_string(p.shape));
    s[dim] += p.shape[dim];
  }
  tensor out(s);
  const std::size_t outer = to_size(numel(shape_t(s0.begin(), s0.begin() + static_cast<std::ptrdiff_t>(dim))));
  const std::size_t inner = to_size(numel(shape_t(s0.begin() + static_cast<std::ptrdiff_t>(dim) + 1, s0.end())));
  std::size_t o = 0;
  for (std::size_t a = 0; a < outer; ++a)
    for (const auto& p : parts) {
      const std::size_t block = to_size(p.shape[dim]) * inner;
      for (std::size_t c = 0; c < block; ++c) out.data[o++] = p.data[a * block + c];
    }
  return out;
}

/// Outputs computed block by block, put back together: `parts[o][b]` is output o of block b;
/// output o's blocks are concatenated along `dims[o]`, or summed where `dims[o]` < 0.
inline std::vector<tensor> join_blocks(std::vector<std::vector<tensor>> parts, const std::vector<int>& dims) {
  std::vector<tensor> out;
  for (std::size_t o = 0; o < dims.size(); ++o) {
    if (dims[o] >= 0) {
      out.push_back(concat(parts.at(o), static_cast<std::size_t>(dims[o])));
      continue;
    }
    tensor sum = std::move(parts.at(o).at(0));
    for (std::size_t b = 1; b < parts[o].size(); ++b)
      for (std::size_t e = 0; e < sum.data.size(); ++e) sum.data[e] += parts[o][b].data[e];
    out.push_back(std::move(sum));
  }
  return out;
}

/// Empty when `got` equals `want` within |g - w| <= tol * max(1, |w|) elementwise (and the
/// shapes are equal); otherwise a description of the first difference.
inline std::string compare(const tensor& got, const tensor& want, double tol = 1e-9) {
  if (got.shape != want.shape) return "shape " + shape_string(got.shape) + ", expected " + shape_string(want.shape);
  for (std::size_t i = 0; i < got.data.size(); ++i) {
    const double g = got.data[i];
    const double w = want.data[i];
    const bool same = (std::isnan(g) && std::isnan(w)) || (g == w) || std::abs(g - w) <= tol * std::max(1.0, std::abs(w));
    if (!same) {
      std::ostringstream os;
      os.precision(17);
      os << "element " << i << " is " << g << ", expected " << w;
      return os.str();
    }
  }
  return {};
}

}  // namespace ctspmd_oracle

#endif
