#ifndef CTSPMD_MERGE_SHARDING_MERGE_HPP
#define CTSPMD_MERGE_SHARDING_MERGE_HPP
/// \file Merging the shardings that several tensors propose for their axes, and reading
/// dims mappings back out of the merged map.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/merge/axis_to_dim_map.hpp>
#include <ctspmd/notation/axes.hpp>

namespace ctspmd {

/// `sharding_merge_for_axis`, result-returning: the sharding of `axis` given two proposals.
/// Replicated (-1) yields to a shard; two different mesh dims are `unimplemented`.
constexpr result<std::int64_t> try_sharding_merge_for_axis(char axis, std::int64_t a, std::int64_t b) {
  if (a == b || b == -1) return a;
  if (a == -1) return b;
  return make_error(error_kind::unimplemented, "sharding_merge_for_axis",
                    "tensor axis '{c}' is sharded by two different mesh dims, {} and {}", axis, a, b);
}

/// Throwing form of `try_sharding_merge_for_axis`.
constexpr std::int64_t sharding_merge_for_axis(char axis, std::int64_t a, std::int64_t b) {
  return try_sharding_merge_for_axis(axis, a, b).value();
}

/// One tensor's proposal: its axis labels and its dims mapping (same length).
struct axes_dims_pair {
  std::string_view axes;
  dims_mapping mapping;
};

/// `sharding_merge_for_tensors`, result-returning. Merges, tensor by tensor and left to
/// right, every axis' proposals (`sharding_merge_for_axis`); `'1'` positions are skipped.
/// When one mesh dim ends up sharding several axes, `merge_conflicts` keeps it on the axis
/// that claimed it first and replicates the others; without it that is
/// `precondition_not_met`.
constexpr result<axis_to_dim_map> try_sharding_merge_for_tensors(std::span<const axes_dims_pair> pairs,
                                                                 bool merge_conflicts = true) {
  constexpr std::string_view op = "sharding_merge_for_tensors";
  struct claim {
    char first = 0;   // the axis that claimed the mesh dim first
    char second = 0;  // another axis that claimed it later, if any
  };
  std::array<claim, max_mesh_ndim> claims{};
  axis_to_dim_map map;
  for (std::size_t t = 0; t < pairs.size(); ++t) {
    const auto& [axes, mapping] = pairs[t];
    if (axes.size() != mapping.size())
      return make_error(error_kind::invalid_argument, op, "tensor {} has {} axis labels but a dims mapping of {} entries",
                        t, axes.size(), mapping.size());
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const char a = axes[i];
      if (!is_axis_label(a))
        return make_error(error_kind::invalid_argument, op, "'{c}' (tensor {}, dim {}) is not an axis label", a, t, i);
      if (mapping[i] < -1 || mapping[i] >= static_cast<std::int64_t>(max_mesh_ndim))
        return make_error(error_kind::invalid_argument, op, "dims mapping entry {} of tensor {}, dim {} is out of range",
                          mapping[i], t, i);
      if (a == broadcast_label) continue;  // a size-1 dim is never sharded
      std::int64_t m = mapping[i];
      if (map.contains(a)) {
        const auto merged = try_sharding_merge_for_axis(a, mapping[i], map.at(a));
        if (!merged) return merged.error();
        m = *merged;
      }
      map.set(a, m);
      if (m == -1) continue;
      auto& c = claims[static_cast<std::size_t>(m)];
      if (c.first == 0)
        c.first = a;
      else if (c.first != a && c.second == 0)
        c.second = a;
    }
  }
  for (std::size_t m = 0; m < claims.size(); ++m) {
    const auto& c = claims[m];
    if (c.second == 0) continue;
    if (!merge_conflicts)
      return make_error(error_kind::precondition_not_met, op,
                        "tensor axes '{c}' and '{c}' are sharded by the same mesh dim {}", c.first, c.second, m);
    axis_to_dim_map resolved = map;
    map.for_each([&](char label, std::int64_t d) {
      if (d == static_cast<std::int64_t>(m) && label != c.first) resolved.set(label, -1);
    });
    map = resolved;
  }
  return map;
}

constexpr result<axis_to_dim_map> try_sharding_merge_for_tensors(std::initializer_list<axes_dims_pair> pairs,
                                                                 bool merge_conflicts = true) {
  return try_sharding_merge_for_tensors(std::span<const axes_dims_pair>(pairs.begin(), pairs.size()), merge_conflicts);
}

/// Throwing form: `sharding_merge_for_tensors({{"ij", {0, -1}}, {"jk", {-1, 1}}})`.
constexpr axis_to_dim_map sharding_merge_for_tensors(std::span<const axes_dims_pair> pairs, bool merge_conflicts = true) {
  return try_sharding_merge_for_tensors(pairs, merge_conflicts).value();
}
constexpr axis_to_dim_map sharding_merge_for_tensors(std::initializer_list<axes_dims_pair> pairs,
                                                     bool merge_conflicts = true) {
  return try_sharding_merge_for_tensors(pairs, merge_conflicts).value();
}

/// `get_dims_mapping_for_axes`, result-returning: the dims mapping of a tensor labelled
/// `axes` under `map`. `'1'` gives -1; a label without an entry gives -1 when
/// `unsharded_miss_axis`, and is an `invalid_argument` otherwise (never a short result).
constexpr result<dims_mapping> try_get_dims_mapping_for_axes(std::string_view axes, const axis_to_dim_map& map,
                                                             bool unsharded_miss_axis = false) {
  constexpr std::string_view op = "get_dims_mapping_for_axes";
  if (axes.size() > max_rank)
    return make_error(error_kind::invalid_argument, op, "{} axes exceed max_rank = {}", axes.size(), max_rank);
  dims_mapping out;
  for (char a : axes) {
    if (a == broadcast_label) {
      out.push_back(-1);
    } else if (map.contains(a)) {
      out.push_back(map.at(a));
    } else if (unsharded_miss_axis && is_axis_label(a)) {
      out.push_back(-1);
    } else {
      return make_error(error_kind::invalid_argument, op, "tensor axis '{c}' is not in the axis-to-dim map", a);
    }
  }
  return out;
}

/// Throwing form of `try_get_dims_mapping_for_axes`.
constexpr dims_mapping get_dims_mapping_for_axes(std::string_view axes, const axis_to_dim_map& map,
                                                 bool unsharded_miss_axis = false) {
  return try_get_dims_mapping_for_axes(axes, map, unsharded_miss_axis).value();
}

}  // namespace ctspmd

#endif
