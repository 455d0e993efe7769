#ifndef CTSPMD_TOOLS_SIMULATE_OPS_HPP
#define CTSPMD_TOOLS_SIMULATE_OPS_HPP
// CPU references of the operators whose sharding rules the oracle checks, on float64
// tensors. They are written from the operators' mathematical definitions (numpy / Paddle
// semantics), independent of the rules. The same functions run on the unsharded tensors
// (the reference) and on each simulated device's local tensors (the sharded run); every
// shape disagreement throws `oracle_error`, which the simulator reports as a failed case.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor.hpp"

namespace ctspmd_oracle::ops {

/// `axis` (negative counts from the end) as a dim of a tensor of `rank` (a 0-d tensor takes
/// 0 and -1, meaning "no dim").
inline std::size_t normalize_axis(std::int64_t axis, std::int64_t rank) {
  const std::int64_t bound = rank > 0 ? rank : 1;
  if (axis < -bound || axis >= bound)
    throw oracle_error("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return to_size(axis < 0 ? axis + bound : axis);
}

inline void same_shape(const tensor& a, const tensor& b, const char* what) {
  if (a.shape != b.shape)
    throw oracle_error(std::string(what) + ": shapes " + shape_string(a.shape) + " and " + shape_string(b.shape));
}
inline double scalar_of(const tensor& t, const char* what) {
  if (t.size() != 1) throw oracle_error(std::string(what) + " must hold one value, has shape " + shape_string(t.shape));
  return t.data[0];
}

// ---------------------------------------------------------------------------- layout ops

/// out dim i = x dim perm[i].
inline tensor transpose(const tensor& x, const std::vector<std::size_t>& perm) {
  if (perm.size() != x.shape.size()) throw oracle_error("transpose: perm of wrong length");
  shape_t s(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) s[i] = x.shape.at(perm[i]);
  tensor out(s);
  shape_t src(perm.size());
  std::size_t o = 0;
  for_each_index(s, [&](const shape_t& idx) {
    for (std::size_t i = 0; i < perm.size(); ++i) src[perm[i]] = idx[i];
    out.data[o++] = x[src];
  });
  return out;
}

/// x with its last two dims swapped.
inline tensor swap_last_two(const tensor& x) {
  std::vector<std::size_t> perm(x.shape.size());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::swap(perm[perm.size() - 2], perm[perm.size() - 1]);
  return transpose(x, perm);
}

/// x viewed with `target` (resolved sizes; same element count).
inline tensor reshape(const tensor& x, const shape_t& target) {
  if (numel(target) != numel(x.shape))
    throw oracle_error("reshape of " + shape_string(x.shape) + " into " + shape_string(target));
  tensor out = x;
  out.shape = target;
  return out;
}

/// x cut along `axis` into parts of `sizes`.
inline std::vector<tensor> split(const tensor& x, const std::vector<std::int64_t>& sizes, std::int64_t axis) {
  const auto a = normalize_axis(axis, x.rank());
  std::int64_t total = 0;
  for (auto s : sizes) total += s;
  if (total != x.shape.at(a))
    throw oracle_error("split of size " + std::to_string(x.shape.at(a)) + " into sections adding up to " +
                       std::to_string(total));
  std::vector<tensor> out;
  std::int64_t start = 0;
  for (auto s : sizes) {
    out.push_back(slice(x, a, start, s));
    start += s;
  }
  return out;
}

/// The concatenation of `xs` along `axis`.
inline tensor concat(const std::vector<tensor>& xs, std::int64_t axis) {
  return ctspmd_oracle::concat(xs, normalize_axis(axis, xs.at(0).rank()));
}

/// The stacking of `xs` (one shape) along a new dim `axis` of the output (rank + 1).
inline tensor stack(const std::vector<tensor>& xs, std::int64_t axis) {
  const std::int64_t rank = xs.at(0).rank() + 1;
  if (axis < -rank || axis >= rank)
    throw oracle_error("stack axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  const std::size_t a = to_size(axis < 0 ? axis + rank : axis);
  std::vector<tensor> parts;
  for (const auto& x : xs) {
    if (x.shape != xs[0].shape) throw oracle_error("stack of " + shape_string(x.shape) + " and " + shape_string(xs[0].shape));
    shape_t s = x.shape;
    s.insert(s.begin() + to_int(a), 1);
    parts.push_back(reshape(x, s));
  }
  return ctspmd_oracle::concat(parts, a);
}

// ---------------------------------------------------------------------------- elementwise

/// The numpy broadcast of `shapes` (right-aligned; size 1 stretches).
inline shape_t broadcast_shapes(const std::vector<shape_t>& shapes) {
  std::size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  shape_t out(rank, 1);
  for (const auto& s : shapes)
    for (std::size_t i = 0; i < s.size(); ++i) {
      auto& o = out[rank - s.size() + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) throw oracle_error("shapes do not broadcast: size " + std::to_string(s[i]) + " against " + std::to_string(o));
      o = s[i];
    }
  return out;
}

/// Index into `x` (right-aligned, broadcast) of the broadcast index `idx`.
inline std::size_t broadcast_offset(const tensor& x, const shape_t& idx) {
  const std::size_t lead = idx.size() - x.shape.size();
  std::size_t off = 0;
  for (std::size_t i = 0; i < x.shape.size(); ++i)
    off = off * to_size(x.shape[i]) + (x.shape[i] == 1 ? 0 : to_size(idx[lead + i]));
  return off;
}

/// f applied elementwise to the broadcast inputs.
inline tensor elementwise(const std::vector<tensor>& in, const std::function<double(const std::vector<double>&)>& f) {
  std::vector<shape_t> shapes;
  for (const auto& x : in) shapes.push_back(x.shape);
  tensor out(broadcast_shapes(shapes));
  std::vector<double> args(in.size());
  std::size_t o = 0;
  for_each_index(out.shape, [&](const shape_t& idx) {
    for (std::size_t i = 0; i < in.size(); ++i) args[i] = in[i].data[broadcast_offset(in[i], idx)];
    out.data[o++] = f(args);
  });
  return out;
}

inline tensor relu(const tensor& x) {
  return elementwise({x}, [](const std::vector<double>& a) { return a[0] > 0 ? a[0] : 0.0; });
}
inline tensor add(const tensor& x, const tensor& y) {
  return elementwise({x, y}, [](const std::vector<double>& a) { return a[0] + a[1]; });
}
inline tensor multiply(const tensor& x, const tensor& y) {
  return elementwise({x, y}, [](const std::vector<double>& a) { return a[0] * a[1]; });
}
/// x * y + z, a ternary elementwise op (the rule is n-ary).
inline tensor multiply_add(const tensor& x, const tensor& y, const tensor& z) {
  return elementwise({x, y, z}, [](const std::vector<double>& a) { return a[0] * a[1] + a[2]; });
}

// ---------------------------------------------------------------------------- matmul

/// numpy matmul of op(x) and op(y), op swapping the last two dims when trans is set; a 1-D
/// operand is a vector (its dim is removed from the result); batch dims broadcast.
inline tensor matmul(const tensor& x, const tensor& y, bool trans_x, bool trans_y) {
  if (x.rank() == 0 || y.rank() == 0) throw oracle_error("matmul of a 0-d tensor");
  tensor a = x.rank() == 1 ? tensor(x) : (trans_x ? swap_last_two(x) : x);
  tensor b = y.rank() == 1 ? tensor(y) : (trans_y ? swap_last_two(y) : y);
  if (x.rank() == 1) a.shape = {1, x.shape[0]};
  if (y.rank() == 1) b.shape = {y.shape[0], 1};
  const shape_t ab(a.shape.begin(), a.shape.end() - 2);
  const shape_t bb(b.shape.begin(), b.shape.end() - 2);
  const shape_t batch = broadcast_shapes({ab, bb});
  const std::int64_t m = a.shape[a.shape.size() - 2];
  const std::int64_t k = a.shape.back();
  const std::int64_t n = b.shape.back();
  if (b.shape[b.shape.size() - 2] != k)
    throw oracle_error("matmul: contracted sizes " + std::to_string(k) + " and " +
                       std::to_string(b.shape[b.shape.size() - 2]) + " differ");
  shape_t os = batch;
  os.push_back(m);
  os.push_back(n);
  tensor out(os);
  tensor a_batch(ab.empty() ? shape_t{} : ab);
  tensor b_batch(bb.empty() ? shape_t{} : bb);
  const auto mk = to_size(m * k);
  const auto kn = to_size(k * n);
  std::size_t o = 0;
  for_each_index(batch, [&](const shape_t& idx) {
    const std::size_t ao = broadcast_offset(a_batch, idx) * mk;
    const std::size_t bo = broadcast_offset(b_batch, idx) * kn;
    for (std::size_t i = 0; i < to_size(m); ++i)
      for (std::size_t j = 0; j < to_size(n); ++j) {
        double s = 0;
        for (std::size_t l = 0; l < to_size(k); ++l)
          s += a.data[ao + i * to_size(k) + l] * b.data[bo + l * to_size(n) + j];
        out.data[o++] = s;
      }
  });
  if (y.rank() == 1) out.shape.pop_back();
  if (x.rank() == 1) out.shape.erase(out.shape.end() - (y.rank() == 1 ? 1 : 2));
  return out;
}

// ---------------------------------------------------------------------------- reductions

enum class reduce_kind { sum, mean, max, min, prod, any, all, frobenius_norm };

/// The dims `axis` names in a tensor of `rank` (empty: all), as a mask.
inline std::vector<bool> reduced_mask(const std::vector<std::int64_t>& axis, std::int64_t rank) {
  std::vector<bool> mask(to_size(rank), axis.empty());
  for (auto a : axis) {
    const auto d = normalize_axis(a, rank);
    if (to_int(d) < rank) mask[d] = true;
  }
  return mask;
}

/// x reduced over `axis` (Paddle's reduce ops; an empty axis reduces every dim).
inline tensor reduce(const tensor& x, const std::vector<std::int64_t>& axis, bool keep_dim, reduce_kind kind) {
  const auto mask = reduced_mask(axis, x.rank());
  shape_t os;
  for (std::size_t d = 0; d < x.shape.size(); ++d)
    if (!mask[d])
      os.push_back(x.shape[d]);
    else if (keep_dim)
      os.push_back(1);
  double init = 0;
  switch (kind) {
    case reduce_kind::max: init = -std::numeric_limits<double>::infinity(); break;
    case reduce_kind::min: init = std::numeric_limits<double>::infinity(); break;
    case reduce_kind::prod:
    case reduce_kind::all: init = 1; break;
    default: init = 0;
  }
  tensor out(os, init);
  std::vector<double> count(out.size(), 0.0);
  shape_t oi;
  for_each_index(x.shape, [&](const shape_t& idx) {
    oi.clear();
    for (std::size_t d = 0; d < idx.size(); ++d)
      if (!mask[d])
        oi.push_back(idx[d]);
      else if (keep_dim)
        oi.push_back(0);
    const std::size_t o = out.offset(oi);
    const double v = x[idx];
    double& acc = out.data[o];
    count[o] += 1;
    switch (kind) {
      case reduce_kind::sum:
      case reduce_kind::mean: acc += v; break;
      case reduce_kind::max: acc = std::max(acc, v); break;
      case reduce_kind::min: acc = std::min(acc, v); break;
      case reduce_kind::prod: acc *= v; break;
      case reduce_kind::any: acc = (acc != 0 || v != 0) ? 1 : 0; break;
      case reduce_kind::all: acc = (acc != 0 && v != 0) ? 1 : 0; break;
      case reduce_kind::frobenius_norm: acc += v * v; break;
    }
  });
  for (std::size_t o = 0; o < out.size(); ++o) {
    if (kind == reduce_kind::mean) out.data[o] /= count[o];
    if (kind == reduce_kind::frobenius_norm) out.data[o] = std::sqrt(out.data[o]);
  }
  return out;
}

// ---------------------------------------------------------------------------- normalisations

/// softmax along `axis` (a 0-d x gives 1).
inline tensor softmax(const tensor& x, std::int64_t axis) {
  if (x.rank() == 0) return tensor({}, 1.0);
  const auto a = normalize_axis(axis, x.rank());
  tensor out(x.shape);
  shape_t outer = x.shape;
  outer[a] = 1;
  for_each_index(outer, [&](const shape_t& base) {
    shape_t idx = base;
    double mx = -std::numeric_limits<double>::infinity();
    for (idx[a] = 0; idx[a] < x.shape[a]; ++idx[a]) mx = std::max(mx, x[idx]);
    double s = 0;
    for (idx[a] = 0; idx[a] < x.shape[a]; ++idx[a]) s += std::exp(x[idx] - mx);
    for (idx[a] = 0; idx[a] < x.shape[a]; ++idx[a]) out[idx] = std::exp(x[idx] - mx) / s;
  });
  return out;
}

struct layer_norm_result {
  tensor out, mean, variance;
};

/// layer_norm over x's dims from `begin_norm_axis` (negative counts from the end); scale and
/// bias are 1-D over the flattened normalised dims; mean and variance have shape x[:bna].
inline layer_norm_result layer_norm(const tensor& x, const tensor& scale, const tensor& bias,
                                    std::int64_t begin_norm_axis, double epsilon) {
  const std::int64_t bna = begin_norm_axis < 0 ? begin_norm_axis + x.rank() : begin_norm_axis;
  if (bna < 1 || bna >= x.rank()) throw oracle_error("layer_norm: begin_norm_axis out of range");
  const shape_t lead(x.shape.begin(), x.shape.begin() + bna);
  const auto rows = to_size(numel(lead));
  const auto cols = to_size(numel(shape_t(x.shape.begin() + bna, x.shape.end())));
  if (scale.rank() != 1 || to_size(scale.shape[0]) != cols || bias.rank() != 1 || to_size(bias.shape[0]) != cols)
    throw oracle_error("layer_norm: scale " + shape_string(scale.shape) + " / bias " + shape_string(bias.shape) +
                       " do not match the " + std::to_string(cols) + " normalised elements of x " +
                       shape_string(x.shape));
  layer_norm_result r{tensor(x.shape), tensor(lead), tensor(lead)};
  for (std::size_t i = 0; i < rows; ++i) {
    double mean = 0;
    for (std::size_t j = 0; j < cols; ++j) mean += x.data[i * cols + j];
    mean /= static_cast<double>(cols);
    double var = 0;
    for (std::size_t j = 0; j < cols; ++j) var += (x.data[i * cols + j] - mean) * (x.data[i * cols + j] - mean);
    var /= static_cast<double>(cols);
    for (std::size_t j = 0; j < cols; ++j)
      r.out.data[i * cols + j] = (x.data[i * cols + j] - mean) / std::sqrt(var + epsilon) * scale.data[j] + bias.data[j];
    r.mean.data[i] = mean;
    r.variance.data[i] = var;
  }
  return r;
}

// ---------------------------------------------------------------------------- lookups

/// `v` as an integer index (it must be integral).
inline std::int64_t as_index(double v) {
  const double r = std::round(v);
  if (std::abs(v - r) > 1e-9) throw oracle_error("index " + std::to_string(v) + " is not an integer");
  return static_cast<std::int64_t>(r);
}

/// out[..., :] = w[ids[...], :]; rows equal to `padding_idx` (unless -1) give zeros.
/// `row_offset` >= 0 runs the row-sharded local variant: `w` holds global rows
/// [row_offset, row_offset + rows), and an id outside them contributes zeros (another device
/// holds that row); the reference (row_offset < 0) rejects ids out of range.
inline tensor embedding(const tensor& ids, const tensor& w, std::int64_t padding_idx, std::int64_t row_offset = -1) {
  if (w.rank() != 2) throw oracle_error("embedding: the table must be 2-D");
  const auto rows = w.shape[0];
  const auto cols = to_size(w.shape[1]);
  shape_t os = ids.shape;
  os.push_back(w.shape[1]);
  tensor out(os);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t id = as_index(ids.data[i]);
    if (id == padding_idx && padding_idx != -1) continue;
    const std::int64_t r = row_offset < 0 ? id : id - row_offset;
    if (r < 0 || r >= rows) {
      if (row_offset < 0) throw oracle_error("embedding: id " + std::to_string(id) + " out of range");
      continue;
    }
    for (std::size_t j = 0; j < cols; ++j) out.data[i * cols + j] = w.data[to_size(r) * cols + j];
  }
  return out;
}

struct cross_entropy_result {
  tensor softmax_out;  ///< softmax(x) with use_softmax, else a 0-d placeholder
  tensor loss;         ///< x's shape with 1 at the class axis
};

/// softmax_with_cross_entropy: hard labels (class indices, size 1 at `axis`; `ignore_index`
/// gives loss 0) or soft labels (distributions); without use_softmax x holds probabilities.
inline cross_entropy_result cross_entropy(const tensor& x, const tensor& label, std::int64_t axis, bool soft_label,
                                          bool use_softmax, std::int64_t ignore_index) {
  const auto a = normalize_axis(axis, x.rank());
  const std::int64_t classes = x.shape[a];
  shape_t ls = x.shape;
  ls[a] = 1;
  if (label.shape != (soft_label ? x.shape : ls))
    throw oracle_error("cross_entropy: label " + shape_string(label.shape) + " does not fit x " + shape_string(x.shape));
  cross_entropy_result r{use_softmax ? softmax(x, axis) : tensor(), tensor(ls)};
  const tensor& p = use_softmax ? r.softmax_out : x;
  for_each_index(ls, [&](const shape_t& base) {
    shape_t idx = base;
    double loss = 0;
    if (soft_label) {
      for (idx[a] = 0; idx[a] < classes; ++idx[a]) loss -= label[idx] * std::log(p[idx]);
    } else {
      const std::int64_t l = as_index(label[base]);
      if (l != ignore_index) {
        if (l < 0 || l >= classes) throw oracle_error("cross_entropy: label " + std::to_string(l) + " out of range");
        idx[a] = l;
        loss = -std::log(p[idx]);
      }
    }
    r.loss[base] = loss;
  });
  return r;
}

// ---------------------------------------------------------------------------- einsum

struct einsum_parts {
  std::vector<std::string> inputs;
  std::string output;
};

inline einsum_parts parse_einsum(std::string_view notation) {
  einsum_parts p;
  const auto arrow = notation.find("->");
  if (arrow == std::string_view::npos) throw oracle_error("einsum: no '->'");
  std::string_view lhs = notation.substr(0, arrow);
  p.output = std::string(notation.substr(arrow + 2));
  std::size_t start = 0;
  while (true) {
    const auto comma = lhs.find(',', start);
    p.inputs.emplace_back(lhs.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return p;
}

/// numpy einsum without ellipsis; the label '1' is a size-1 dim.
inline tensor einsum(std::string_view notation, const std::vector<tensor>& in) {
  const auto p = parse_einsum(notation);
  if (p.inputs.size() != in.size()) throw oracle_error("einsum: operand count");
  std::string letters;
  std::vector<std::int64_t> sizes;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (p.inputs[i].size() != in[i].shape.size()) throw oracle_error("einsum: operand rank");
    for (std::size_t d = 0; d < p.inputs[i].size(); ++d) {
      const char c = p.inputs[i][d];
      const auto s = in[i].shape[d];
      if (c == '1') {
        if (s != 1) throw oracle_error("einsum: a '1' dim of size " + std::to_string(s));
        continue;
      }
      const auto at = letters.find(c);
      if (at == std::string::npos) {
        letters.push_back(c);
        sizes.push_back(s);
      } else if (sizes[at] != s) {
        throw oracle_error(std::string("einsum: label ") + c + " has sizes " + std::to_string(sizes[at]) + " and " +
                           std::to_string(s));
      }
    }
  }
  shape_t os;
  for (char c : p.output) os.push_back(c == '1' ? 1 : sizes.at(letters.find(c)));
  tensor out(os);
  // positions[i][d]: the letter index of operand i's dim d (npos for '1').
  auto positions = [&](const std::string& labels) {
    std::vector<std::size_t> pos;
    for (char c : labels) pos.push_back(c == '1' ? std::string::npos : letters.find(c));
    return pos;
  };
  std::vector<std::vector<std::size_t>> in_pos;
  for (const auto& l : p.inputs) in_pos.push_back(positions(l));
  const auto out_pos = positions(p.output);
  shape_t sub;
  for_each_index(shape_t(sizes.begin(), sizes.end()), [&](const shape_t& all) {
    double prod = 1;
    for (std::size_t i = 0; i < in.size(); ++i) {
      sub.assign(in_pos[i].size(), 0);
      for (std::size_t d = 0; d < sub.size(); ++d)
        if (in_pos[i][d] != std::string::npos) sub[d] = all[in_pos[i][d]];
      prod *= in[i][sub];
    }
    sub.assign(out_pos.size(), 0);
    for (std::size_t d = 0; d < sub.size(); ++d)
      if (out_pos[d] != std::string::npos) sub[d] = all[out_pos[d]];
    out[sub] += prod;
  });
  return out;
}

/// The determinant of each matrix in the last two dims of x (square): a tensor of the leading
/// dims. Gaussian elimination with partial pivoting.
inline tensor det(const tensor& x) {
  const auto r = x.shape.size();
  if (r < 2 || x.shape[r - 1] != x.shape[r - 2]) throw oracle_error("det of " + shape_string(x.shape));
  const auto n = to_size(x.shape[r - 1]);
  tensor out(shape_t(x.shape.begin(), x.shape.end() - 2));
  for (std::size_t b = 0; b < out.data.size(); ++b) {
    std::vector<double> m(x.data.begin() + to_int(b * n * n), x.data.begin() + to_int((b + 1) * n * n));
    double d = 1;
    for (std::size_t c = 0; c < n && d != 0; ++c) {
      std::size_t p = c;
      for (std::size_t i = c + 1; i < n; ++i)
        if (std::abs(m[i * n + c]) > std::abs(m[p * n + c])) p = i;
      if (m[p * n + c] == 0) d = 0;
      if (p != c) {
        for (std::size_t j = 0; j < n; ++j) std::swap(m[p * n + j], m[c * n + j]);
        d = -d;
      }
      d *= m[c * n + c];
      for (std::size_t i = c + 1; i < n && d != 0; ++i) {
        const double f = m[i * n + c] / m[c * n + c];
        for (std::size_t j = c; j < n; ++j) m[i * n + j] -= f * m[c * n + j];
      }
    }
    out.data[b] = d;
  }
  return out;
}

// ---------------------------------------------------------------------------- a non-shardable op

/// The replicated rule's stand-in operator: the running (row-major) sum of inputs[0], plus
/// the sum of every element of the other inputs. No dim of it can be sharded.
inline tensor running_sum(const std::vector<tensor>& in) {
  tensor out = in.at(0);
  double extra = 0;
  for (std::size_t i = 1; i < in.size(); ++i)
    for (double v : in[i].data) extra += v;
  double acc = 0;
  for (auto& v : out.data) {
    acc += v;
    v = acc + extra;
  }
  return out;
}

}  // namespace ctspmd_oracle::ops

#endif
