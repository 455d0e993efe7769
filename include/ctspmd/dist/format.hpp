#ifndef CTSPMD_DIST_FORMAT_HPP
#define CTSPMD_DIST_FORMAT_HPP
/// \file Text forms of meshes, dims mappings and dist attributes (run time only).

#include <string>

#include <ctspmd/core/error.hpp>

#include <ctspmd/dist/spmd_info.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>

namespace ctspmd {

/// The message of `e`: prefixed by its operator name, its values substituted.
inline std::string to_string(const error_info& e) {
  char buffer[256];
  const std::size_t n = e.format_to(buffer, sizeof buffer);
  if (n < sizeof buffer) return std::string(buffer, n);
  std::string long_message(n + 1, '\0');
  e.format_to(long_message.data(), long_message.size());
  long_message.pop_back();
  return long_message;
}

/// "[0, -1, 1]"
template <class T, std::size_t N, class Tag>
std::string to_string(const static_vector<T, N, Tag>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

/// "dims_mapping [0, -1], partial {1: sum}" (the partial part only when partial); a co-sharded
/// mapping prints its lists, "dims_mapping [[0, 1], []]".
inline std::string to_string(const tensor_dist_attr& a) {
  std::string s = "dims_mapping ";
  if (a.is_co_sharded()) {
    s += "[";
    for (std::size_t d = 0; d < a.rank(); ++d) s += (d ? ", " : "") + to_string(a.mesh_dims_of(d));
    s += "]";
  } else {
    s += to_string(a.dims_mapping());
  }
  if (a.is_partial()) {
    s += ", partial {";
    bool first = true;
    for (std::int64_t m = 0; m < a.process_mesh().ndim(); ++m) {
      if (!a.is_partial(m)) continue;
      s += (first ? "" : ", ") + std::to_string(m) + ": " + to_string(a.partial_reduce_type(m));
      first = false;
    }
    s += "}";
  }
  return s;
}

}  // namespace ctspmd

#endif
