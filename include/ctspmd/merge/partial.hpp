#ifndef CTSPMD_MERGE_PARTIAL_HPP
#define CTSPMD_MERGE_PARTIAL_HPP
/// \file Partial status of outputs, and building output dist attributes from inputs.

#include <bit>
#include <cstdint>
#include <string_view>

#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/merge/axis_to_dim_map.hpp>

namespace ctspmd {

namespace detail {
/// The mesh dims, ascending, whose bits are set in `mask`.
constexpr mesh_dims mesh_dims_in(std::uint64_t mask) {
  mesh_dims out;
  for (; mask != 0; mask &= mask - 1) out.push_back(std::countr_zero(mask));
  return out;
}
}  // namespace detail

/// The mesh dims, ascending, that shard an axis absent from `out_axes`: contracted or
/// reduced axes, over which an output is partial.
constexpr mesh_dims resolute_output_partial_dimension(const axis_to_dim_map& map, std::string_view out_axes) {
  std::uint64_t partial = 0;  // bit m: mesh dim m shards an axis absent from out_axes
  map.for_each([&](char, mesh_dim_list l) { partial |= l.mask(); }, /*except=*/out_axes);
  return detail::mesh_dims_in(partial);
}

/// A bit per mesh dim that shards one of `axes` under `map`.
constexpr std::uint64_t partial_mask(const axis_to_dim_map& map, std::string_view axes) {
  std::uint64_t dims = 0;
  for (char c : axes) dims |= map.list(c).mask();
  return dims;
}
/// The mesh dims, ascending, that shard one of `axes` under `map`. Given an einsum's
/// contracted axes (those of its inputs absent from its output), the dims its output is
/// partial on: `resolute_output_partial_dimension` of the output's axes, when the merge left
/// no mesh dim sharding two axes. Rules that know their contracted axes read only those.
constexpr mesh_dims sharding_mesh_dims(const axis_to_dim_map& map, std::string_view axes) {
  return detail::mesh_dims_in(partial_mask(map, axes));
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
