#ifndef CTSPMD_MERGE_SHARDING_MERGE_HPP
#define CTSPMD_MERGE_SHARDING_MERGE_HPP
/// \file Merging the shardings that several tensors propose for their axes, and reading
/// dims mappings back out of the merged map.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
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

namespace detail {

/// The axes that claimed one mesh dim in a merge: the first, and another one later, if any.
struct mesh_dim_claim {
  char first = 0;
  char second = 0;
};

/// The end of a merge in which some mesh dims were claimed by two axes (`claims`): each stays
/// with the axis that claimed it first, the others replicated, when `merge_conflicts`; a
/// `precondition_not_met` otherwise. (Apart, being rare, from the merge's common path.)
CTSPMD_NOINLINE constexpr status resolve_conflicts(axis_to_dim_map& map,
                                                   const std::array<mesh_dim_claim, max_mesh_ndim>& claims,
                                                   bool merge_conflicts) {
  for (std::size_t m = 0; m < claims.size(); ++m) {
    const auto& c = claims[m];
    if (c.second == 0) continue;
    if (!merge_conflicts)
      return make_error(error_kind::precondition_not_met, "sharding_merge_for_tensors",
                        "tensor axes '{c}' and '{c}' are sharded by the same mesh dim {}", c.first, c.second, m);
    axis_to_dim_map resolved = map;
    map.for_each([&](char label, std::int64_t d) {
      if (d == static_cast<std::int64_t>(m) && label != c.first) resolved.set(label, -1);
    });
    map = resolved;
  }
  return {};
}

/// The merge behind `try_sharding_merge_for_tensors`, into `map` (empty), over `count`
/// tensors: `labels(t)` gives tensor t's axis labels (indexable, with size()) and
/// `mapping(t)` its dims mapping. Rules call it on their operands where they are, without
/// first copying labels and mappings into pairs. `Validate` checks each tensor's labels and
/// mapping entries as it goes; a caller whose labels come from a parsed notation and whose
/// mappings from `dist_tensor_spec`s (valid by construction, of matching ranks) skips that.
/// `RecordReplicated == false` skips the -1 entries of the mappings, which change no mesh dim
/// (`sharding_merge_for_axis`), so that the map has entries only for sharded axes: for a
/// caller that reads a missing axis as replicated (and skips validation, which would miss them).
template <bool Validate = true, bool RecordReplicated = true, class Labels, class Mapping>
constexpr status merge_sharding(axis_to_dim_map& map, std::size_t count, Labels labels, Mapping mapping,
                                bool merge_conflicts) {
  static_assert(RecordReplicated || !Validate, "validation reads every entry");
  constexpr std::string_view op = "sharding_merge_for_tensors";
  std::array<mesh_dim_claim, max_mesh_ndim> claims{};
  bool conflict = false;
  for (std::size_t t = 0; t < count; ++t) {
    const auto& axes = labels(t);
    const dims_mapping& dims = mapping(t);
    if (Validate && axes.size() != dims.size())
      return make_error(error_kind::invalid_argument, op, "tensor {} has {} axis labels but a dims mapping of {} entries",
                        t, axes.size(), dims.size());
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const std::int64_t m = dims.data()[i];
      if (!RecordReplicated && m == -1) continue;
      const char a = axes[i];
      if (Validate && !is_axis_label(a))
        return make_error(error_kind::invalid_argument, op, "'{c}' (tensor {}, dim {}) is not an axis label", a, t, i);
      if (Validate && (m < -1 || m >= static_cast<std::int64_t>(max_mesh_ndim)))
        return make_error(error_kind::invalid_argument, op, "dims mapping entry {} of tensor {}, dim {} is out of range",
                          m, t, i);
      if (a == broadcast_label) continue;  // a size-1 dim is never sharded
      const std::int64_t before = map.propose(a, m);
      if (before == m) continue;  // no change; the claim below, if any, is recorded already
      if (before != -1) {  // a mesh dim stays: m is -1, or a conflict
        if (m == -1) continue;
        return try_sharding_merge_for_axis(a, m, before).error();
      }
      // The entry was -1 or none, and is now m, a mesh dim (m == -1 continued above).
      auto& c = claims[static_cast<std::size_t>(m)];
      if (c.first == 0) {
        c.first = a;
      } else if (c.first != a && c.second == 0) {
        c.second = a;
        conflict = true;
      }
    }
  }
  return conflict ? resolve_conflicts(map, claims, merge_conflicts) : status{};
}

}  // namespace detail

/// `sharding_merge_for_tensors`, result-returning. Merges, tensor by tensor and left to
/// right, every axis' proposals (`sharding_merge_for_axis`); `'1'` positions are skipped.
/// When one mesh dim ends up sharding several axes, `merge_conflicts` keeps it on the axis
/// that claimed it first and replicates the others; without it that is
/// `precondition_not_met`.
constexpr result<axis_to_dim_map> try_sharding_merge_for_tensors(std::span<const axes_dims_pair> pairs,
                                                                 bool merge_conflicts = true) {
  axis_to_dim_map map;
  CTSPMD_TRY(detail::merge_sharding(
      map, pairs.size(), [&](std::size_t t) { return pairs[t].axes; },
      [&](std::size_t t) -> const dims_mapping& { return pairs[t].mapping; }, merge_conflicts));
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

namespace detail {

/// Appends to `out` (empty) the dims mapping of a tensor labelled `axes` (a string, or any
/// indexable sequence of labels with size()) under `map` (see `try_get_dims_mapping_for_axes`).
/// Rules write a mapping straight into the dist attr they return with it.
template <class Labels>
constexpr status append_dims_mapping_for_axes(dims_mapping& out, const Labels& axes, const axis_to_dim_map& map,
                                              bool unsharded_miss_axis) {
  constexpr std::string_view op = "get_dims_mapping_for_axes";
  if (axes.size() > max_rank)
    return make_error(error_kind::invalid_argument, op, "{} axes exceed max_rank = {}", axes.size(), max_rank);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const char a = axes[i];
    const std::int64_t m = map.entry(a);  // -1 for '1' and for a letter without an entry
    if (m == axis_to_dim_map::not_a_label ||
        (m == -1 && !unsharded_miss_axis && a != broadcast_label && !map.contains(a)))
      return make_error(error_kind::invalid_argument, op, "tensor axis '{c}' is not in the axis-to-dim map", a);
    out.push_back(m);
  }
  return {};
}

}  // namespace detail

/// `get_dims_mapping_for_axes`, result-returning: the dims mapping of a tensor labelled
/// `axes` under `map`. `'1'` gives -1; a label without an entry gives -1 when
/// `unsharded_miss_axis`, and is an `invalid_argument` otherwise (never a short result).
constexpr result<dims_mapping> try_get_dims_mapping_for_axes(std::string_view axes, const axis_to_dim_map& map,
                                                             bool unsharded_miss_axis = false) {
  dims_mapping out;
  CTSPMD_TRY(detail::append_dims_mapping_for_axes(out, axes, map, unsharded_miss_axis));
  return out;
}

/// Throwing form of `try_get_dims_mapping_for_axes`.
constexpr dims_mapping get_dims_mapping_for_axes(std::string_view axes, const axis_to_dim_map& map,
                                                 bool unsharded_miss_axis = false) {
  return try_get_dims_mapping_for_axes(axes, map, unsharded_miss_axis).value();
}

namespace detail {

/// Builds the dist attrs a rule returns where they are returned (a friend of
/// `tensor_dist_attr`). A freshly built value copied as a block is both a copy and, on x86, a
/// store-forwarding stall (wide loads of bytes just written narrowly), so the rules write
/// each output attr once, in the `spmd_info` the caller receives.
struct tensor_dist_attr_access {
  /// Makes `a` (constructed on `src`'s mesh, so with an empty mapping and no partial status)
  /// an attr with `src`'s batch dim whose dims mapping is that of `axes` under `map`. Fails as
  /// `get_dims_mapping_for_axes` and the `tensor_dist_attr` constructor would: raises.
  ///
  /// `Check == false` skips the final check of the mapping against the mesh, for a caller
  /// that knows it holds: `map` maps no two labels to one mesh dim, every mesh dim in it comes
  /// from a mapping valid on `src`'s mesh, and no label occurs twice in `axes` (but `'1'`).
  template <bool Check = true, class Labels>
  static constexpr void assign_mapped(tensor_dist_attr& a, const tensor_dist_attr& src, const Labels& axes,
                                      const axis_to_dim_map& map, bool unsharded_miss_axis) {
    a.batch_dim_ = src.batch_dim_;
    append_dims_mapping_for_axes(a.mapping_, axes, map, unsharded_miss_axis).check();
    if constexpr (Check) tensor_dist_attr::check(a.mesh_, a.mapping_).check();
  }
};

}  // namespace detail

/// A dist attr on `src`'s mesh (with its batch dim, no partial status) with the dims mapping
/// of `axes` under `map`, appended to `out` and returned.
/// (`Check` as in `detail::tensor_dist_attr_access::assign_mapped`.)
template <bool Check = true, class Labels, std::size_t N>
constexpr tensor_dist_attr& push_mapped(static_vector<tensor_dist_attr, N>& out, const tensor_dist_attr& src,
                                        const Labels& axes, const axis_to_dim_map& map,
                                        bool unsharded_miss_axis = false) {
  tensor_dist_attr& a = out.emplace_back(src.process_mesh());
  detail::tensor_dist_attr_access::assign_mapped<Check>(a, src, axes, map, unsharded_miss_axis);
  return a;
}

}  // namespace ctspmd

#endif
