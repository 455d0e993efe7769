#ifndef CTSPMD_MERGE_POLICIES_HPP
#define CTSPMD_MERGE_POLICIES_HPP
/// \file phi's merge policies: the co-shard union (`merge_co_shard`), and the others phi's
/// rules use. fluid's first-wins policy is `detail::merge_first_wins` (sharding_merge.hpp).

#include <array>
#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/mesh_dim_list.hpp>
#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/merge/axis_to_dim_map.hpp>
#include <ctspmd/notation/axes.hpp>

namespace ctspmd {

/// How `merge_co_shard` reads its proposals and settles conflicts.
struct co_shard_options {
  bool merge_conflicts = true;      ///< a mesh dim claimed by two axes: resolve (else an error)
  bool size_one_unsharded = false;  ///< read a size-1 dim as `'1'` (never sharded)
};

namespace detail {

/// True if proposal `a` sorts before `b` in the union of `merge_co_shard`: more mesh dims
/// first, then more shards, then the lexicographically smaller list.
constexpr bool co_shard_before(mesh_dim_list a, mesh_dim_list b, const process_mesh& mesh) {
  if (a.size() != b.size()) return a.size() > b.size();
  const auto sa = a.shards(mesh), sb = b.shards(mesh);
  if (sa != sb) return sa > sb;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return a[i] < b[i];
  return false;
}

/// The size of an axis whose dims have sizes `a` and `b` (-1: unknown): a size of 1 broadcasts,
/// an unknown size is the other one's (unless that is 1), otherwise the larger.
constexpr std::int64_t broadcast_size(std::int64_t a, std::int64_t b) noexcept {
  if (a == -1) return b == 1 ? -1 : b;
  if (b == -1) return a == 1 ? -1 : a;
  return a > b ? a : b;
}

}  // namespace detail

/// phi's co-shard merge (the vector `ShardingMergeForTensors`), into `map` (empty), over `count`
/// tensors: `labels(t)` gives tensor t's axis labels, `list(t, i)` the mesh dims of its dim i and
/// `size(t, i)` the dim's size (-1: unknown).
/// 1. Per axis, the non-empty proposals are sorted (more mesh dims first, then more shards,
///    then lexicographically) and unioned in that order: each list appends the mesh dims the
///    union lacks. Two different mesh dims for one axis become a co-shard, not an error.
/// 2. The axis' size is the largest size its dims have (sizes of 1 broadcast); while the union's
///    shard count does not divide it, its last mesh dim is dropped. An unknown size keeps all.
/// 3. A mesh dim that shards several axes: `precondition_not_met` without `merge_conflicts`;
///    otherwise the largest axis keeps it (ties: the axis that proposed it first, in tensor
///    then dim order) and the others drop it.
/// Every axis seen gets an entry; `'1'` positions (and size-1 dims with `size_one_unsharded`)
/// propose nothing.
template <class Labels, class Lists, class Sizes>
constexpr status merge_co_shard(axis_to_dim_map& map, std::size_t count, Labels labels, Lists list, Sizes size,
                                const process_mesh& mesh, co_shard_options o = {}) {
  // Per axis letter: its size; and the letters in the order they were first seen.
  std::array<std::int64_t, axis_letter_count> sizes{};
  std::array<char, axis_letter_count> seen{};
  std::size_t seen_count = 0;
  for (std::size_t t = 0; t < count; ++t) {
    const auto& axes = labels(t);
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const char a = axes[i];
      const int k = axis_letter_index(a);
      const std::int64_t n = size(t, i);
      if (k < 0 || (o.size_one_unsharded && n == 1)) continue;
      auto& s = sizes[static_cast<std::size_t>(k)];
      if (!map.contains(a)) {
        map.set(a, mesh_dim_list{});
        seen[seen_count++] = a;
        s = n;
      } else {
        s = detail::broadcast_size(s, n);
      }
    }
  }
  // 1 and 2: the union per axis, then the divisibility drop.
  for (std::size_t j = 0; j < seen_count; ++j) {
    const char a = seen[j];
    std::array<mesh_dim_list, max_operands> proposals{};
    std::size_t n = 0;
    for (std::size_t t = 0; t < count; ++t) {
      const auto& axes = labels(t);
      for (std::size_t i = 0; i < axes.size(); ++i) {
        if (axes[i] != a || (o.size_one_unsharded && size(t, i) == 1)) continue;
        const mesh_dim_list l = list(t, i);
        if (l.empty() || n == proposals.size()) continue;
        std::size_t at = n++;  // insertion sort
        while (at > 0 && detail::co_shard_before(l, proposals[at - 1], mesh)) {
          proposals[at] = proposals[at - 1];
          --at;
        }
        proposals[at] = l;
      }
    }
    mesh_dim_list u;
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t k = 0; k < proposals[p].size(); ++k)
        if (!u.contains(proposals[p][k])) u.push_back(proposals[p][k]);
    const std::int64_t axis_size = sizes[static_cast<std::size_t>(axis_letter_index(a))];
    while (!u.empty() && axis_size != -1 && axis_size % u.shards(mesh) != 0) u.pop_back();
    map.set(a, u);
  }
  // 3: a mesh dim on several axes.
  for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
    char keeper = 0;
    std::size_t claimants = 0;
    for (std::size_t j = 0; j < seen_count; ++j) {
      const char a = seen[j];
      if (!map.list(a).contains(m)) continue;
      ++claimants;
      const auto size_of = [&](char c) { return sizes[static_cast<std::size_t>(axis_letter_index(c))]; };
      if (keeper == 0 || size_of(a) > size_of(keeper)) keeper = a;
    }
    if (claimants < 2) continue;
    if (!o.merge_conflicts) {
      char other = 0;
      for (std::size_t j = 0; j < seen_count && other == 0; ++j)
        if (seen[j] != keeper && map.list(seen[j]).contains(m)) other = seen[j];
      return make_error(error_kind::precondition_not_met, "sharding_merge_for_tensors",
                        "tensor axes '{c}' and '{c}' are sharded by the same mesh dim {}", keeper, other, m);
    }
    for (std::size_t j = 0; j < seen_count; ++j)
      if (seen[j] != keeper) map.set(seen[j], map.list(seen[j]).without(m));
  }
  return {};
}

}  // namespace ctspmd

#endif
