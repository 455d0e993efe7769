#ifndef CTSPMD_DIST_FORMAT_HPP
#define CTSPMD_DIST_FORMAT_HPP
/// \file Text forms of meshes, dims mappings and dist attributes (run time only).

#include <string>

#include <ctspmd/dist/spmd_info.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>

namespace ctspmd {

/// "[0, -1, 1]"
template <class T, std::size_t N>
std::string to_string(const static_vector<T, N>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

/// "dims_mapping [0, -1], partial {1: sum}" (the partial part only when partial).
inline std::string to_string(const tensor_dist_attr& a) {
  std::string s = "dims_mapping " + to_string(a.dims_mapping());
  if (a.is_partial()) {
    s += ", partial {";
    const auto dims = a.partial_dims();
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(dims[i]) + ": " + to_string(a.partial_reduce_type(dims[i]));
    }
    s += "}";
  }
  return s;
}

}  // namespace ctspmd

#endif
