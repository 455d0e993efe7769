#ifndef CTSPMD_BENCH_PADDLE_STYLE_HPP
#define CTSPMD_BENCH_PADDLE_STYLE_HPP
// A baseline for the benchmarks: matmul and embedding inference written the way a runtime
// framework's C++ typically does it (axis strings as std::string, std::unordered_map for the
// axis map, std::vector dims mappings and attribute lists), so that ctspmd's typed call can
// be measured side by side with the same algorithm in that style. Same semantics as
// ctspmd's rules on the benchmarked inputs; not a library API.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace paddle_style {

struct dist_attr {
  std::vector<std::int64_t> mesh_shape;
  std::vector<std::int64_t> dims_mapping;
  std::map<std::int64_t, int> partial;  // mesh dim -> reduce type
  std::int64_t batch_dim = 0;
};
struct spec {
  std::vector<std::int64_t> shape;
  dist_attr attr;
};
using result = std::pair<std::vector<dist_attr>, std::vector<dist_attr>>;

inline std::int64_t merge_axis(std::int64_t a, std::int64_t b) {
  if (a == b || b == -1) return a;
  if (a == -1) return b;
  throw std::runtime_error("axis sharded by two mesh dims");
}

inline std::unordered_map<char, std::int64_t> merge_tensors(
    const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& pairs, bool merge_conflicts) {
  std::unordered_map<char, std::int64_t> axis_to_dim;
  std::unordered_map<std::int64_t, std::string> dim_to_axes;
  for (const auto& [axes, dm] : pairs) {
    for (std::size_t i = 0; i < dm.size(); ++i) {
      const char a = axes[i];
      if (a == '1') continue;
      const auto it = axis_to_dim.find(a);
      const std::int64_t m = it == axis_to_dim.end() ? dm[i] : merge_axis(dm[i], it->second);
      axis_to_dim[a] = m;
      if (m == -1) continue;
      auto& claimants = dim_to_axes[m];
      if (claimants.find(a) == std::string::npos) claimants += a;
    }
  }
  for (const auto& [m, axes] : dim_to_axes) {
    if (axes.size() <= 1) continue;
    if (!merge_conflicts) throw std::runtime_error("mesh dim shards several axes");
    for (std::size_t i = 1; i < axes.size(); ++i) axis_to_dim[axes[i]] = -1;
  }
  return axis_to_dim;
}

inline std::vector<std::int64_t> dims_for(const std::string& axes, const std::unordered_map<char, std::int64_t>& map) {
  std::vector<std::int64_t> out;
  for (char a : axes) {
    const auto it = map.find(a);
    out.push_back(a == '1' || it == map.end() ? -1 : it->second);
  }
  return out;
}

inline dist_attr output_attr(const dist_attr& src, std::vector<std::int64_t> dims) {
  dist_attr out;
  out.mesh_shape = src.mesh_shape;
  out.batch_dim = src.batch_dim;
  out.dims_mapping = std::move(dims);
  return out;
}

inline std::vector<std::int64_t> partial_dims(const std::unordered_map<char, std::int64_t>& map,
                                              const std::string& out_axes) {
  std::vector<std::int64_t> out;
  for (const auto& [a, m] : map)
    if (m > -1 && out_axes.find(a) == std::string::npos) out.push_back(m);
  return out;
}

/// matmul forward (no transposes, the benchmarked case), N-D x 2-D or N-D x N-D.
inline result matmul_forward(const std::vector<spec>& in, const std::map<std::string, bool>& attrs) {
  const bool trans_x = attrs.at("trans_x"), trans_y = attrs.at("trans_y");
  if (trans_x || trans_y) throw std::runtime_error("the baseline does not transpose");
  const std::string alphabet = "abcdefghijlopqrstuvwxyz";
  const auto& x = in.at(0);
  const auto& y = in.at(1);
  const auto x_ndim = x.shape.size(), y_ndim = y.shape.size();
  const auto max_ndim = std::max(x_ndim, y_ndim);
  const std::string x_axes = alphabet.substr(max_ndim - x_ndim, x_ndim - 2) + "mk";
  const std::string y_axes = alphabet.substr(max_ndim - y_ndim, y_ndim - 2) + "kn";
  const std::string out_axes = (x_ndim >= y_ndim ? x_axes.substr(0, x_ndim - 2) : y_axes.substr(0, y_ndim - 2)) + "mn";
  const auto map = merge_tensors({{x_axes, x.attr.dims_mapping}, {y_axes, y.attr.dims_mapping}}, true);
  auto input_dims = [&](const spec& s, const std::string& axes) {
    auto dims = dims_for(axes, map);
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (s.shape[i] == 1) dims[i] = -1;
    return dims;
  };
  dist_attr out = output_attr(x.attr, dims_for(out_axes, map));
  for (auto m : partial_dims(map, out_axes)) out.partial[m] = 0;
  return {{output_attr(x.attr, input_dims(x, x_axes)), output_attr(y.attr, input_dims(y, y_axes))}, {out}};
}

/// embedding forward.
inline result embedding_forward(const std::vector<spec>& in, const std::map<std::string, std::int64_t>& attrs) {
  const auto& x = in.at(0);
  const auto& w = in.at(1);
  if (w.shape.size() != 2) throw std::runtime_error("the table must be 2-D");
  const std::int64_t row = w.attr.dims_mapping[0];
  if ((attrs.at("padding_idx") != -1 || attrs.at("sparse") != 0) && row != -1)
    throw std::runtime_error("row-wise parallel does not support padding_idx or sparse");
  const std::string x_axes = std::string("abcdefghilmnopqrstuvwxyz").substr(0, x.shape.size());
  const std::string out_axes = x_axes + "k";
  const auto map = merge_tensors({{x_axes, x.attr.dims_mapping}, {"jk", w.attr.dims_mapping}}, false);
  dist_attr out = output_attr(x.attr, dims_for(out_axes, map));
  if (row != -1) out.partial[row] = 0;
  return {{output_attr(x.attr, dims_for(x_axes, map)), output_attr(w.attr, dims_for("jk", map))}, {out}};
}

}  // namespace paddle_style

#endif
