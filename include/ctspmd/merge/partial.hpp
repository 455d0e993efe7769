#ifndef CTSPMD_MERGE_PARTIAL_HPP
#define CTSPMD_MERGE_PARTIAL_HPP
/// \file Partial status of outputs, and building output dist attributes from inputs.

#include <bit>
#include <cstdint>
#include <string_view>

#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/merge/axis_to_dim_map.hpp>

namespace ctspmd {

/// The mesh dims, ascending, that shard an axis absent from `out_axes`: contracted or
/// reduced axes, over which an output is partial.
constexpr mesh_dims resolute_output_partial_dimension(const axis_to_dim_map& map, std::string_view out_axes) {
  std::uint64_t partial = 0;  // bit m: mesh dim m shards an axis absent from out_axes
  map.for_each([&](char, mesh_dim_list l) { partial |= l.mask(); }, /*except=*/out_axes);
  mesh_dims out;
  for (; partial != 0; partial &= partial - 1) out.push_back(std::countr_zero(partial));
  return out;
}

/// The mesh dims, ascending, that shard one of `axes` under `map`. Given an einsum's
/// contracted axes (those of its inputs absent from its output), the dims its output is
/// partial on: `resolute_output_partial_dimension` of the output's axes, when the merge left
/// no mesh dim sharding two axes. Rules that know their contracted axes read only those.
/// A bit per mesh dim of `sharding_mesh_dims(map, axes)`.
constexpr std::uint64_t partial_mask(const axis_to_dim_map& map, std::string_view axes) {
  std::uint64_t dims = 0;  // bit m: mesh dim m shards one of axes
  for (char c : axes) dims |= map.list(c).mask();
  return dims;
}
constexpr mesh_dims sharding_mesh_dims(const axis_to_dim_map& map, std::string_view axes) {
  std::uint64_t dims = partial_mask(map, axes);
  mesh_dims out;
  for (; dims != 0; dims &= dims - 1) out.push_back(std::countr_zero(dims));
  return out;
}

/// A fresh dist attr on `src`'s mesh with its batch dim: empty dims mapping, no partial.
constexpr tensor_dist_attr copy_tensor_dist_attr_for_output(const tensor_dist_attr& src) {
  tensor_dist_attr out(src.process_mesh());
  out.set_batch_dim(src.batch_dim());
  return out;
}

/// `src` replicated: every dim -1 (same rank), no partial status, same mesh and batch dim.
constexpr tensor_dist_attr replicated_on_mesh(const tensor_dist_attr& src) {
  tensor_dist_attr out(src.process_mesh(), dims_mapping(src.rank(), -1));
  out.set_batch_dim(src.batch_dim());
  return out;
}

}  // namespace ctspmd

#endif
