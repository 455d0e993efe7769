#ifndef CTSPMD_MERGE_PARTIAL_HPP
#define CTSPMD_MERGE_PARTIAL_HPP
/// \file Partial status of outputs, and building output dist attributes from inputs.

#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/merge/axis_to_dim_map.hpp>

namespace ctspmd {

/// The mesh dims, ascending, that shard an axis absent from `out_axes`: contracted or
/// reduced axes, over which an output is partial.
constexpr mesh_dims resolute_output_partial_dimension(const axis_to_dim_map& map, std::string_view out_axes) {
  std::array<bool, max_mesh_ndim> partial{};
  map.for_each([&](char label, std::int64_t m) {
    if (m >= 0 && !has_label(out_axes, label)) partial[static_cast<std::size_t>(m)] = true;
  });
  mesh_dims out;
  for (std::size_t m = 0; m < partial.size(); ++m)
    if (partial[m]) out.push_back(static_cast<std::int64_t>(m));
  return out;
}

/// A fresh dist attr on `src`'s mesh with its batch dim: empty dims mapping, no partial.
constexpr tensor_dist_attr copy_tensor_dist_attr_for_output(const tensor_dist_attr& src) {
  tensor_dist_attr out(src.process_mesh(), {});
  out.set_batch_dim(src.batch_dim());
  return out;
}

/// `src` replicated: every dim -1 (same rank), no partial status, same mesh and batch dim.
constexpr tensor_dist_attr replicated_on_mesh(const tensor_dist_attr& src) {
  tensor_dist_attr out(src.process_mesh(), dims_mapping(src.dims_mapping().size(), -1));
  out.set_batch_dim(src.batch_dim());
  return out;
}

}  // namespace ctspmd

#endif
