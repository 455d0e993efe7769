#ifndef CTSPMD_MERGE_POLICIES_HPP
#define CTSPMD_MERGE_POLICIES_HPP
/// \file phi's merge policies, one function each (fluid's first-wins policy is
/// `detail::merge_first_wins`, merge/sharding_merge.hpp):
/// - `merge_co_shard`: the co-shard union with the divisibility drop and largest-axis-wins;
/// - `merge_elementwise`: phi's element-wise merge, which follows one operand;
/// - `align_least_cost`: phi's AlignDimsSharding (concat, stack, norm grads);
/// - `agree_or_drop`: phi's optimizer vote.
/// Each reads its operands through callbacks, so that rules call it on their operands where
/// they are: `labels(t)` gives operand t's axis labels (indexable, with size()), `list(t, i)`
/// the mesh dims of its dim i (a `mesh_dim_list`) and `size(t, i)` the dim's size (-1: unknown).
///
/// Where phi leaves a choice unspecified or gets it wrong, these decide (and say so below):
/// ties between axes go to the axis seen first (operand order, then dim order; phi iterates an
/// unordered map); an unknown size (-1) divides by anything (phi's `-1 % n != 0` drops every
/// mesh dim of a dynamic axis); the element-wise merge follows the operand that is best by
/// (co-sharded dims, shards, rank) in that order (phi ORs the three tests, so an operand with
/// fewer co-sharded dims but more shards takes over); and the optimizer vote never gives one
/// mesh dim to two tensor dims.

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/saturating.hpp>
#include <ctspmd/dist/mesh_dim_list.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/merge/axis_to_dim_map.hpp>
#include <ctspmd/notation/axes.hpp>

namespace ctspmd {

/// How phi's merges read their proposals and settle conflicts.
struct co_shard_options {
  bool merge_conflicts = true;      ///< a mesh dim claimed by two axes: resolve (else an error)
  bool size_one_unsharded = false;  ///< read a size-1 dim as `'1'` (never sharded)
  bool check_sizes = false;         ///< two known sizes of one axis that do not broadcast: an error
  /// (`merge_co_shard`) Drop the union's last mesh dims while they do not divide the axis, even
  /// those of a single proposal (phi's vector merge: matmul, softmax); otherwise a proposal is
  /// kept as it is and the union only adds what keeps the axis divisible (phi's rules that
  /// still merge one mesh dim per axis never drop a given sharding).
  bool drop_indivisible = false;
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

/// True if `list` splits an axis of `size` (-1: unknown, divisible by anything) evenly.
constexpr bool divides(mesh_dim_list list, std::int64_t size, const process_mesh& mesh) {
  return size == -1 || size % list.shards(mesh) == 0;
}

/// The axes a phi merge sees: the letters in the order first seen, with their sizes.
struct axis_table {
  std::array<std::int64_t, axis_letter_count> sizes{};
  std::array<char, axis_letter_count> letters{};
  std::size_t count = 0;
  constexpr std::int64_t size_of(char a) const { return sizes[static_cast<std::size_t>(axis_letter_index(a))]; }
};

/// Records every label of the operands in `map` (empty lists) and `table` (with its size);
/// with `check_sizes`, two known sizes of one axis that are neither equal nor 1 are a
/// `precondition_not_met`.
template <class Labels, class Sizes>
constexpr status collect_axes(axis_to_dim_map& map, axis_table& table, std::size_t count, Labels labels, Sizes size,
                              const co_shard_options& o) {
  for (std::size_t t = 0; t < count; ++t) {
    const auto& axes = labels(t);
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const char a = axes[i];
      const int k = axis_letter_index(a);
      const std::int64_t n = size(t, i);
      if (k < 0 || (o.size_one_unsharded && n == 1)) continue;
      auto& s = table.sizes[static_cast<std::size_t>(k)];
      if (!map.contains(a)) {
        map.set(a, mesh_dim_list{});
        table.letters[table.count++] = a;
        s = n;
        continue;
      }
      if (o.check_sizes && s != -1 && n != -1 && s != 1 && n != 1 && s != n)
        return make_error(error_kind::precondition_not_met, "sharding_merge_for_tensors",
                          "tensor axis '{c}' has sizes {} and {}, which do not broadcast", a, s, n);
      s = broadcast_size(s, n);
    }
  }
  return {};
}

/// The end of phi's merges: each mesh dim that shards several axes stays with the largest of
/// them (ties: the one seen first) and leaves the others, when `merge_conflicts`; otherwise
/// that is a `precondition_not_met`.
constexpr status largest_axis_wins(axis_to_dim_map& map, const axis_table& table, const process_mesh& mesh,
                                   bool merge_conflicts) {
  for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
    char first = 0, second = 0, keeper = 0;  // the first two claimants, and the largest
    for (std::size_t j = 0; j < table.count; ++j) {
      const char a = table.letters[j];
      if (!map.list(a).contains(m)) continue;
      if (first == 0)
        first = a;
      else if (second == 0)
        second = a;
      if (keeper == 0 || (table.size_of(keeper) != -1 && table.size_of(a) > table.size_of(keeper))) keeper = a;
    }
    if (second == 0) continue;
    if (!merge_conflicts)
      return make_error(error_kind::precondition_not_met, "sharding_merge_for_tensors",
                        "tensor axes '{c}' and '{c}' are sharded by the same mesh dim {}", first, second, m);
    for (std::size_t j = 0; j < table.count; ++j)
      if (table.letters[j] != keeper) map.set(table.letters[j], map.list(table.letters[j]).without(m));
  }
  return {};
}

}  // namespace detail

/// phi's co-shard merge (the vector `ShardingMergeForTensors`), into `map` (empty), over `count`
/// operands (see the file comment for the callbacks):
/// 1. Per axis, the non-empty proposals are sorted (more mesh dims first, then more shards,
///    then lexicographically) and unioned in that order: each list appends the mesh dims the
///    union lacks. Two different mesh dims for one axis become a co-shard, not an error.
/// 2. The axis' size is the broadcast of its dims' sizes. With `drop_indivisible`, while the
///    union's shard count does not divide it, its last mesh dim is dropped; without, the first
///    proposal is kept as it is and a later one's mesh dim is added only if the count still
///    divides the size.
/// 3. A mesh dim that shards several axes stays with the largest (`largest_axis_wins`).
/// Every axis seen gets an entry; `'1'` positions (and size-1 dims with `size_one_unsharded`)
/// propose nothing.
template <class Labels, class Lists, class Sizes>
constexpr status merge_co_shard(axis_to_dim_map& map, std::size_t count, Labels labels, Lists list, Sizes size,
                                const process_mesh& mesh, co_shard_options o = {}) {
  detail::axis_table table;
  CTSPMD_TRY(detail::collect_axes(map, table, count, labels, size, o));
  for (std::size_t j = 0; j < table.count; ++j) {
    const char a = table.letters[j];
    std::array<mesh_dim_list, max_operands * max_rank> proposals{};
    std::size_t n = 0;
    for (std::size_t t = 0; t < count; ++t) {
      const auto& axes = labels(t);
      for (std::size_t i = 0; i < axes.size(); ++i) {
        if (axes[i] != a || (o.size_one_unsharded && size(t, i) == 1)) continue;
        const mesh_dim_list l = list(t, i);
        if (l.empty()) continue;
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
      for (std::size_t k = 0; k < proposals[p].size(); ++k) {
        if (u.contains(proposals[p][k])) continue;
        u.push_back(proposals[p][k]);
        if (!o.drop_indivisible && p > 0 && !detail::divides(u, table.size_of(a), mesh)) u.pop_back();
      }
    while (o.drop_indivisible && !u.empty() && !detail::divides(u, table.size_of(a), mesh)) u.pop_back();
    map.set(a, u);
  }
  return detail::largest_axis_wins(map, table, mesh, o.merge_conflicts);
}

/// phi's element-wise merge (`ShardingMergeForTensorsElementWise`), generalised to any number
/// of operands, into `map` (empty): the merge follows one operand, the best by (number of
/// co-sharded dims, number of shards, rank), compared in that order (the first on a tie); every
/// axis takes its mesh dims. The other operands, in order, then append to each of their axes the
/// mesh dims that no axis has yet; while an axis' size is then not divisible, its last mesh dim
/// is given back (free for a later axis). So one operand's layout is kept, and the others fill in.
template <class Labels, class Lists, class Sizes>
constexpr status merge_elementwise(axis_to_dim_map& map, std::size_t count, Labels labels, Lists list, Sizes size,
                                   const process_mesh& mesh, co_shard_options o = {}) {
  detail::axis_table table;
  CTSPMD_TRY(detail::collect_axes(map, table, count, labels, size, o));
  const auto usable = [&](std::size_t t, std::size_t i) {
    return axis_letter_index(labels(t)[i]) >= 0 && !(o.size_one_unsharded && size(t, i) == 1);
  };
  // The operand followed: most co-sharded dims, then most shards, then highest rank.
  std::size_t followed = 0;
  std::int64_t best[3] = {-1, -1, -1};
  for (std::size_t t = 0; t < count; ++t) {
    std::int64_t co = 0;
    std::uint64_t used = 0;
    for (std::size_t i = 0; i < labels(t).size(); ++i) {
      const mesh_dim_list l = list(t, i);
      co += l.size() > 1 ? 1 : 0;
      used |= l.mask();
    }
    std::int64_t shards = 1;
    for (std::int64_t m = 0; m < mesh.ndim(); ++m)
      if ((used >> m & 1u) != 0) shards *= mesh.dim_size(m);
    const std::int64_t key[3] = {co, shards, static_cast<std::int64_t>(labels(t).size())};
    if (key[0] > best[0] || (key[0] == best[0] && (key[1] > best[1] || (key[1] == best[1] && key[2] > best[2])))) {
      followed = t;
      for (int k = 0; k < 3; ++k) best[k] = key[k];
    }
  }
  std::uint64_t seen = 0;  // mesh dims some axis has
  for (std::size_t i = 0; i < labels(followed).size(); ++i) {
    if (!usable(followed, i)) continue;
    const mesh_dim_list l = list(followed, i);
    map.set(labels(followed)[i], l);
    seen |= l.mask();
  }
  for (std::size_t t = 0; t < count; ++t) {
    if (t == followed) continue;
    for (std::size_t i = 0; i < labels(t).size(); ++i) {
      if (!usable(t, i)) continue;
      const char a = labels(t)[i];
      const mesh_dim_list l = list(t, i);
      mesh_dim_list u = map.list(a);
      for (std::size_t k = 0; k < l.size(); ++k)
        if ((seen >> l[k] & 1u) == 0) {
          u.push_back(l[k]);
          seen |= std::uint64_t{1} << l[k];
        }
      while (!u.empty() && !detail::divides(u, table.size_of(a), mesh)) {  // give back the last
        seen &= ~(std::uint64_t{1} << u.last());
        u.pop_back();
      }
      map.set(a, u);
    }
  }
  return detail::largest_axis_wins(map, table, mesh, o.merge_conflicts);
}

/// What `align_least_cost` keeps of the operands' partial status: per mesh dim, -1 or the
/// reduce type every operand is partial with there.
using kept_partial = std::array<std::int8_t, max_mesh_ndim>;

/// phi's AlignDimsSharding (concat, stack, norm grads), into `map` (empty) and `partial`:
/// operands with the same labels `align` for the axes that may be sharded (each operand's
/// `labels(t)` holds every letter of `align`; `attr(t)` is its dist attr, `shape(t)` its
/// shape). Operands with no elements are left out (the first non-empty one is the reference);
/// with none non-empty, nothing is sharded. Per mesh dim m, in ascending order:
/// 1. If every operand does the same on m: sharding one axis of `align` keeps m on it (in the
///    reference operand's order of its list); partial with one reduce type keeps m partial when
///    `allow_partial` and the type is sum or avg; anything else leaves m unused.
/// 2. Otherwise m goes to the cheapest axis of `align` that has no mesh dim yet: an operand
///    costs nothing if it already shards that axis, and otherwise its local element count times
///    m's size (what it would move; a cost beyond int64 counts as its largest value); an axis
///    whose size m's size does not divide in some operand cannot take it (unknown sizes can).
///    Ties go to the smaller letter; if no axis can take m, it stays unused.
/// (phi only refuses an axis smaller than m's size, so it can propose an uneven shard; here a
/// shard is always even.)
template <class Labels, class Attrs, class Shapes>
constexpr void align_least_cost(axis_to_dim_map& map, kept_partial& partial, std::size_t count, Labels labels,
                                Attrs attr, Shapes shape, std::string_view align, bool allow_partial) {
  for (auto& p : partial) p = -1;
  constexpr std::int64_t infinite = -1;
  const auto dim_of = [&](std::size_t t, char label) -> std::size_t {  // label's dim in operand t
    const auto& axes = labels(t);
    std::size_t d = 0;
    while (d < axes.size() && axes[d] != label) ++d;
    return d;
  };
  const auto empty = [&](std::size_t t) {
    const auto& s = shape(t);
    if (s.size() == 0) return true;
    for (const auto n : s)
      if (n == 0) return true;
    return false;
  };
  std::size_t ref = 0;
  while (ref < count && empty(ref)) ++ref;
  if (ref == count) return;
  const process_mesh& mesh = attr(ref).process_mesh();
  // What operand t does on mesh dim m: 0 replicate, 1 + label shard, -(1 + type) partial.
  const auto state = [&](std::size_t t, std::int64_t m) -> std::int64_t {
    const auto& a = attr(t);
    if (a.is_partial(m)) return -1 - static_cast<std::int64_t>(a.partial_reduce_type(m));
    const std::int64_t d = a.sharded_tensor_dim(m);
    return d < 0 ? 0 : 1 + static_cast<unsigned char>(labels(t)[static_cast<std::size_t>(d)]);
  };
  std::array<bool, max_mesh_ndim> agreed{};
  for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
    bool same = true;
    for (std::size_t t = ref + 1; t < count; ++t) same = same && (empty(t) || state(t, m) == state(ref, m));
    agreed[static_cast<std::size_t>(m)] = same;
  }
  // Pass 1: the agreed mesh dims, each label's in the reference's list order.
  for (std::size_t d = 0; d < labels(ref).size(); ++d) {
    const char label = labels(ref)[d];
    if (!has_label(align, label)) continue;
    mesh_dim_list kept;
    const mesh_dims ref_list = attr(ref).mesh_dims_of(d);
    for (const auto m : ref_list)
      if (agreed[static_cast<std::size_t>(m)]) kept.push_back(m);
    if (!kept.empty()) map.set(label, kept);
  }
  for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
    const std::int64_t st = state(ref, m);
    if (!agreed[static_cast<std::size_t>(m)] || st >= 0) continue;
    const auto type = static_cast<reduce_type>(-1 - st);
    if (allow_partial && (type == reduce_type::sum || type == reduce_type::avg))
      partial[static_cast<std::size_t>(m)] = static_cast<std::int8_t>(type);
  }
  // Pass 2: each mesh dim the operands disagree on goes to the cheapest free axis.
  for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
    if (agreed[static_cast<std::size_t>(m)]) continue;
    const std::int64_t mesh_size = mesh.dim_size(m);
    char best = 0;
    std::int64_t best_cost = infinite;
    for (const char label : align) {
      if (!map.list(label).empty()) continue;  // an axis takes one mesh dim here
      std::int64_t cost = 0;
      for (std::size_t t = 0; t < count && cost != infinite; ++t) {
        if (empty(t)) continue;
        const auto d = dim_of(t, label);
        const auto& s = shape(t);
        if (s[d] != -1 && s[d] % mesh_size != 0) {
          cost = infinite;
        } else if (attr(t).mesh_dims_of(d).empty()) {
          std::int64_t local = 1;  // the operand's local element count (unknown sizes count 1)
          for (std::size_t k = 0; k < s.size(); ++k) {
            const std::int64_t shards = mesh_dim_list::of(attr(t).mesh_dims_of(k)).shards(mesh);
            local = detail::saturating_product(local, s[k] < 0 ? 1 : (s[k] - 1) / shards + 1);
          }
          const std::int64_t moved = detail::saturating_product(local, mesh_size);
          cost = cost > std::numeric_limits<std::int64_t>::max() - moved ? std::numeric_limits<std::int64_t>::max()
                                                                          : cost + moved;
        }
      }
      if (cost != infinite && (best == 0 || cost < best_cost || (cost == best_cost && label < best))) {
        best = label;
        best_cost = cost;
      }
    }
    if (best != 0) map.set(best, mesh_dim_list::single(m));
  }
}

/// phi's optimizer vote, into `out` (one list per dim): per tensor dim, over the `count`
/// operands' lists of that dim (`list(t, i)`, all operands of rank `rank`), the first non-empty
/// list is taken, unless a later non-empty one differs: then the dim is replicated. A mesh dim
/// that two dims would get stays with the first of them (phi can give it to both).
template <class Lists>
constexpr void agree_or_drop(static_vector<mesh_dim_list, max_rank>& out, std::size_t count, std::size_t rank,
                             Lists list) {
  out.clear();
  std::uint64_t used = 0;
  for (std::size_t i = 0; i < rank; ++i) {
    mesh_dim_list vote;
    for (std::size_t t = 0; t < count; ++t) {
      const mesh_dim_list l = list(t, i);
      if (l.empty()) continue;
      if (vote.empty()) {
        vote = l;
      } else if (!(vote == l)) {
        vote = {};
        break;
      }
    }
    mesh_dim_list kept;
    for (std::size_t k = 0; k < vote.size(); ++k)
      if ((used >> vote[k] & 1u) == 0) kept.push_back(vote[k]);
    used |= kept.mask();
    out.push_back(kept);
  }
}

}  // namespace ctspmd

#endif
