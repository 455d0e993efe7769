#ifndef CTSPMD_MERGE_SHARDING_MERGE_HPP
#define CTSPMD_MERGE_SHARDING_MERGE_HPP
/// \file Merging the shardings that several tensors propose for their axes (fluid's
/// first-wins policy; phi's policies are in merge/policies.hpp), and reading dims mappings
/// back out of the merged map.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/mesh_dim_list.hpp>
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

/// Reads and writes the mapping of dist attrs in the form merges use, one `mesh_dim_list` per
/// tensor dim (a friend of `tensor_dist_attr`). Rules write each output attr once, in the
/// `spmd_info` the caller receives, instead of building it and copying it there.
struct tensor_dist_attr_access {
  /// The mesh dims of tensor dim `d` (< rank) of `a`.
  static constexpr mesh_dim_list list(const tensor_dist_attr& a, std::size_t d) noexcept {
    std::int64_t m = a.mapping_.data()[d];
    if (m < 0 || a.next_[static_cast<std::size_t>(m)] == -1) return mesh_dim_list::single(m);  // the common case
    mesh_dim_list l;
    for (; m != -1; m = a.next_[static_cast<std::size_t>(m)]) l.push_back(m);
    return l;
  }
  /// Appends a tensor dim sharded by `l` to `a`'s mapping (of fewer than max_rank dims). The
  /// caller keeps the invariants: the mesh dims are valid on `a`'s mesh, none is used by another
  /// dim, none is partial.
  static constexpr void append(tensor_dist_attr& a, mesh_dim_list l) {
    a.mapping_.emplace_back_unchecked(static_cast<std::int8_t>(l.major()));
    if (l.at_most_one()) return;  // no links
    for (std::size_t k = 1; k < l.size(); ++k) a.next_.set(static_cast<std::size_t>(l[k - 1]), l[k]);
  }
  /// Makes `a`'s mapping (empty) that of `axes` under `map` (see `for_each_mapped`), written in
  /// place: each dim's major mesh dim, then the links of a co-shard list (the same caveats as
  /// `append`).
  /// (`Validate == false`: the labels are known to be labels, none missing but by intent.)
  template <bool Validate, class Labels>
  static constexpr status assign(tensor_dist_attr& a, const Labels& axes, const axis_to_dim_map& map,
                                 bool unsharded_miss_axis);
  /// Replaces the list of tensor dim `d` (< rank) of `a` by `l` (same caveats as `append`).
  static constexpr void replace(tensor_dist_attr& a, std::size_t d, mesh_dim_list l) {
    for (std::int64_t m = a.mapping_[d]; m != -1;) {
      const std::int64_t n = a.next_[static_cast<std::size_t>(m)];
      a.next_.set(static_cast<std::size_t>(m), -1);
      m = n;
    }
    a.mapping_[d] = static_cast<std::int8_t>(l.major());
    for (std::size_t k = 1; k < l.size(); ++k) a.next_.set(static_cast<std::size_t>(l[k - 1]), l[k]);
  }
  /// Empties `a`'s mapping.
  static constexpr void clear(tensor_dist_attr& a) {
    a.mapping_.clear();
    a.next_ = {};
  }
  static constexpr void set_batch_dim(tensor_dist_attr& a, const tensor_dist_attr& src) noexcept {
    a.batch_dim_ = src.batch_dim_;
  }
  /// Checks `a`'s invariants (after `append` / `replace`): mesh dims in range, each once, none
  /// partial.
  static constexpr status check(const tensor_dist_attr& a) {
    std::uint64_t seen = 0;
    for (std::size_t d = 0; d < a.mapping_.size(); ++d) {
      const mesh_dim_list l = list(a, d);
      for (std::size_t k = 0; k < l.size(); ++k) {
        const std::int64_t m = l[k];
        if (!tensor_dist_attr::check_entry(a.mesh_, m, seen))
          return tensor_dist_attr::entry_error(a.mesh_, m, static_cast<std::size_t>(a.sharded_tensor_dim(m)), d);
        if (a.is_partial(m))
          return make_error(error_kind::invalid_argument, "tensor_dist_attr",
                            "mesh dim {} cannot shard a tensor dim: the tensor is partial on it", m);
      }
    }
    return {};
  }
};

/// The mesh dims of tensor dim `d` of `a` (see `tensor_dist_attr_access::list`).
constexpr mesh_dim_list dim_list(const tensor_dist_attr& a, std::size_t d) noexcept {
  return tensor_dist_attr_access::list(a, d);
}

/// The axes that claimed one mesh dim in a merge: the first, and another one later, if any.
struct mesh_dim_claim {
  char first = 0;
  char second = 0;
};

/// The end of a first-wins merge in which some mesh dims were claimed by two axes (`claims`):
/// each stays with the axis that claimed it first, and every other axis whose list holds it is
/// replicated (a list is a unit), when `merge_conflicts`; a `precondition_not_met` otherwise.
/// (Apart, being rare, from the merge's common path.)
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
    map.for_each([&](char label, mesh_dim_list l) {
      if (l.contains(static_cast<std::int64_t>(m)) && label != c.first) resolved.set(label, mesh_dim_list{});
    });
    map = resolved;
  }
  return {};
}

/// The error of an axis proposed two different lists of mesh dims.
constexpr error_info two_lists_error(char axis, mesh_dim_list a, mesh_dim_list b) {
  if (a.size() == 1 && b.size() == 1) return try_sharding_merge_for_axis(axis, a.major(), b.major()).error();
  return make_error(error_kind::unimplemented, "sharding_merge_for_axis",
                    "tensor axis '{c}' is sharded by two different lists of mesh dims, of {} and {} mesh dims "
                    "(starting with mesh dim {})",
                    axis, a.size(), b.size(), a.major());
}

/// The first-wins merge (fluid) behind `try_sharding_merge_for_tensors`, into `map` (empty),
/// over `count` tensors: `labels(t)` gives tensor t's axis labels (indexable, with size()) and
/// `list(t, i)` the mesh dims of its dim i. Proposals merge tensor by tensor, left to right: an
/// axis takes the first non-empty list proposed for it, and a different non-empty list later is
/// `unimplemented` (a co-shard list merges as a unit, as one mesh dim does); `'1'` positions
/// are skipped. A mesh dim that ends up sharding several axes stays with the axis that claimed
/// it first, the others replicated, when `merge_conflicts`; `precondition_not_met` otherwise.
///
/// Rules call it on their operands where they are. `Validate` checks each tensor's labels and
/// list entries as it goes; a caller whose labels come from a parsed notation and whose lists
/// from `dist_tensor_spec`s (valid by construction, of matching ranks) skips that, and
/// `count_of(t)`, the number of labels, is then the operand's rank. `RecordReplicated == false`
/// skips empty lists, which change no mesh dim, so that the map has entries only for sharded
/// axes: for a caller that reads a missing axis as replicated.
template <bool Validate = true, bool RecordReplicated = true, class Labels, class Lists>
constexpr status merge_first_wins(axis_to_dim_map& map, std::size_t count, Labels labels, Lists list,
                                  bool merge_conflicts) {
  static_assert(RecordReplicated || !Validate, "validation reads every entry");
  std::array<mesh_dim_claim, max_mesh_ndim> claims{};
  bool conflict = false;
  for (std::size_t t = 0; t < count; ++t) {
    const auto& axes = labels(t);
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const mesh_dim_list l = list(t, i);
      if (!RecordReplicated && l.empty()) continue;
      const char a = axes[i];
      if (Validate && !is_axis_label(a))
        return make_error(error_kind::invalid_argument, "sharding_merge_for_tensors",
                          "'{c}' (tensor {}, dim {}) is not an axis label", a, t, i);
      if (a == broadcast_label) continue;  // a size-1 dim is never sharded
      const mesh_dim_list before = map.propose(a, l);
      if (before == l) continue;  // no change; the claims below, if any, are recorded already
      if (!before.empty()) {      // a list stays: l is empty, or a conflict
        if (l.empty()) continue;
        return two_lists_error(a, l, before);
      }
      // The entry was empty or absent, and is now l (l empty continued above, or is a no-op).
      l.for_each([&](std::int64_t m) {
        auto& c = claims[static_cast<std::size_t>(m)];
        if (c.first == 0) {
          c.first = a;
        } else if (c.first != a && c.second == 0) {
          c.second = a;
          conflict = true;
        }
      });
    }
  }
  return conflict ? resolve_conflicts(map, claims, merge_conflicts) : status{};
}

/// Checks one flat proposal: as many labels as entries, entries in [-1, max_mesh_ndim).
constexpr status check_pair(const axes_dims_pair& p, std::size_t t) {
  constexpr std::string_view op = "sharding_merge_for_tensors";
  if (p.axes.size() != p.mapping.size())
    return make_error(error_kind::invalid_argument, op, "tensor {} has {} axis labels but a dims mapping of {} entries", t,
                      p.axes.size(), p.mapping.size());
  for (std::size_t i = 0; i < p.mapping.size(); ++i)
    if (p.mapping[i] < -1 || p.mapping[i] >= static_cast<std::int64_t>(max_mesh_ndim))
      return make_error(error_kind::invalid_argument, op, "dims mapping entry {} of tensor {}, dim {} is out of range",
                        p.mapping[i], t, i);
  return {};
}

}  // namespace detail

/// `sharding_merge_for_tensors`, result-returning (fluid's first-wins policy). Merges, tensor by
/// tensor and left to right, every axis' proposals (`sharding_merge_for_axis`); `'1'` positions
/// are skipped. When one mesh dim ends up sharding several axes, `merge_conflicts` keeps it on
/// the axis that claimed it first and replicates the others; without it that is
/// `precondition_not_met`.
constexpr result<axis_to_dim_map> try_sharding_merge_for_tensors(std::span<const axes_dims_pair> pairs,
                                                                 bool merge_conflicts = true) {
  for (std::size_t t = 0; t < pairs.size(); ++t) CTSPMD_TRY(detail::check_pair(pairs[t], t));
  axis_to_dim_map map;
  CTSPMD_TRY(detail::merge_first_wins(
      map, pairs.size(), [&](std::size_t t) { return pairs[t].axes; },
      [&](std::size_t t, std::size_t i) { return mesh_dim_list::single(pairs[t].mapping[i]); }, merge_conflicts));
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

/// The mesh dims of label `a` under `map` (empty for '1'), or `axis_to_dim_map::invalid` when `a`
/// is no label, or has no entry and `unsharded_miss_axis` is false.
constexpr mesh_dim_list mapped_list(char a, const axis_to_dim_map& map, bool unsharded_miss_axis) {
  const mesh_dim_list l = map.list_or_invalid(a);  // empty for '1' and for a letter without an entry
  return !unsharded_miss_axis && l.empty() && a != broadcast_label && !map.contains(a) ? axis_to_dim_map::invalid : l;
}
constexpr error_info too_many_axes(std::size_t n) {
  return make_error(error_kind::invalid_argument, "get_dims_mapping_for_axes", "{} axes exceed max_rank = {}", n,
                    max_rank);
}
constexpr error_info unmapped_axis(char a) {
  return make_error(error_kind::invalid_argument, "get_dims_mapping_for_axes",
                    "tensor axis '{c}' is not in the axis-to-dim map", a);
}

/// Calls `f(list)` with the mesh dims of each label of `axes` (a string, or any indexable
/// sequence of labels with size()) under `map`, or returns the error `get_dims_mapping_for_axes`
/// gives (see `try_get_dims_mapping_for_axes`).
template <class Labels, class F>
constexpr status for_each_mapped(const Labels& axes, const axis_to_dim_map& map, bool unsharded_miss_axis, F f) {
  if (axes.size() > max_rank) return too_many_axes(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const mesh_dim_list l = mapped_list(axes[i], map, unsharded_miss_axis);
    if (l == axis_to_dim_map::invalid) return unmapped_axis(axes[i]);
    f(l);
  }
  return {};
}

template <bool Validate, class Labels>
constexpr status tensor_dist_attr_access::assign(tensor_dist_attr& a, const Labels& axes, const axis_to_dim_map& map,
                                                 bool unsharded_miss_axis) {
  if (axes.size() > max_rank) return too_many_axes(axes.size());
  std::int8_t* heads = a.mapping_.resize_for_overwrite(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const mesh_dim_list l = Validate ? mapped_list(axes[i], map, unsharded_miss_axis) : map.list_or_invalid(axes[i]);
    if (Validate && l == axis_to_dim_map::invalid) {
      a.mapping_.clear();
      return unmapped_axis(axes[i]);
    }
    heads[i] = static_cast<std::int8_t>(l.major());
    if (!l.at_most_one())  // a co-shard: link its mesh dims
      for (std::size_t k = 1; k < l.size(); ++k) a.next_.set(static_cast<std::size_t>(l[k - 1]), l[k]);
  }
  return {};
}

}  // namespace detail

/// `get_dims_mapping_for_axes`, result-returning: the dims mapping of a tensor labelled `axes`
/// under `map`. `'1'` gives -1; a label without an entry gives -1 when `unsharded_miss_axis`,
/// and is an `invalid_argument` otherwise (never a short result). A label split over several
/// mesh dims is an `invalid_argument` (see `try_get_multi_dims_mapping_for_axes`).
constexpr result<dims_mapping> try_get_dims_mapping_for_axes(std::string_view axes, const axis_to_dim_map& map,
                                                             bool unsharded_miss_axis = false) {
  dims_mapping out;
  bool co_sharded = false;
  CTSPMD_TRY(detail::for_each_mapped(axes, map, unsharded_miss_axis, [&](mesh_dim_list l) {
    co_sharded = co_sharded || l.size() > 1;
    out.push_back(l.major());
  }));
  if (co_sharded)
    return make_error(error_kind::invalid_argument, "get_dims_mapping_for_axes",
                      "an axis is split over several mesh dims: use get_multi_dims_mapping_for_axes");
  return out;
}

/// Throwing form of `try_get_dims_mapping_for_axes`.
constexpr dims_mapping get_dims_mapping_for_axes(std::string_view axes, const axis_to_dim_map& map,
                                                 bool unsharded_miss_axis = false) {
  return try_get_dims_mapping_for_axes(axes, map, unsharded_miss_axis).value();
}

/// The co-shard form of `try_get_dims_mapping_for_axes`: per label its list of mesh dims.
constexpr result<multi_dims_mapping> try_get_multi_dims_mapping_for_axes(std::string_view axes,
                                                                         const axis_to_dim_map& map,
                                                                         bool unsharded_miss_axis = false) {
  multi_dims_mapping out;
  CTSPMD_TRY(detail::for_each_mapped(axes, map, unsharded_miss_axis,
                                     [&](mesh_dim_list l) { out.push_back(l.to_mesh_dims()); }));
  return out;
}

/// Throwing form of `try_get_multi_dims_mapping_for_axes`.
constexpr multi_dims_mapping get_multi_dims_mapping_for_axes(std::string_view axes, const axis_to_dim_map& map,
                                                             bool unsharded_miss_axis = false) {
  return try_get_multi_dims_mapping_for_axes(axes, map, unsharded_miss_axis).value();
}

/// A dist attr on `src`'s mesh (with its batch dim, no partial status) whose mapping is that of
/// `axes` (a string, or any indexable sequence of labels) under `map`, appended to `out` and
/// returned. Fails as `get_dims_mapping_for_axes` and the `tensor_dist_attr` constructor would:
/// raises. `Check == false` skips the checks, for a caller that knows they hold: every char of
/// `axes` is a label, `map` maps no mesh dim to two labels, every mesh dim in it comes from a
/// mapping valid on `src`'s mesh, and no label occurs twice in `axes` (but `'1'`).
template <bool Check = true, class Labels, std::size_t N>
constexpr tensor_dist_attr& push_mapped(static_vector<tensor_dist_attr, N>& out, const tensor_dist_attr& src,
                                        const Labels& axes, const axis_to_dim_map& map,
                                        bool unsharded_miss_axis = false) {
  using access = detail::tensor_dist_attr_access;
  tensor_dist_attr& a = out.emplace_back(src.process_mesh());
  access::set_batch_dim(a, src);
  access::assign<Check>(a, axes, map, unsharded_miss_axis).check();
  if constexpr (Check) access::check(a).check();
  return a;
}

}  // namespace ctspmd

#endif
