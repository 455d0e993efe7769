#ifndef CTSPMD_MODEL_COLLECTIVE_HPP
#define CTSPMD_MODEL_COLLECTIVE_HPP
/// \file The collective vocabulary: how a reshard moves data on a mesh dim (`collective`),
/// which collective a change of layout on one mesh dim takes (`classify`), the product groups
/// one collective spans, and the bytes a device sends. Propagation reports reshards in these
/// terms; the cost, the pipeline report, the layout search and the tools read them.
///
/// Bytes each device sends, by ring algorithms, for a tensor whose local part (under the layout
/// it has when the collective runs: see `execution_rank`; the largest device's part, each dim's
/// parts rounded up) is S bytes on a mesh dim of n devices: all-reduce 2(n-1)S/n, reduce-scatter (n-1)S/n, all-gather (n-1)S, all-to-all
/// (n-1)S/n, each rounded up, so that a collective that moves data never reports 0 bytes; local
/// slice and local partial 0 (they move nothing: `moves_data`), a pipeline's send_recv S. Sizes
/// unknown until run time (-1) give -1 bytes. A tensor partial (with one reduce type) over
/// several mesh dims that it needs replicated on them is one all-reduce over their product group
/// (n the product of their sizes: a gradient reduced over dp and cp at once); so is one it needs
/// split on one tensor dim over them (a co-shard) one reduce-scatter, one split on one tensor dim
/// over several mesh dims that it needs replicated on them one all-gather (ZeRO's shard over dp x
/// cp), and one it needs split so on another tensor dim one all-to-all. When none of a reshard's
/// collectives can run alone (a co-shard's mesh dims change order: no device group of one of them
/// holds what it needs, `reachable`), those left are one all-to-all over their product group,
/// each device receiving what it lacks of its new part (`received_bytes`: all of it where its new
/// block lies outside its old one). A reshard's collectives run in the order `execution_rank`
/// gives, which the report keeps.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/saturating.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>

namespace ctspmd::model {

/// How a reshard moves data on one mesh dim.
enum class collective : std::int8_t {
  all_reduce,      ///< partial -> replicated
  reduce_scatter,  ///< partial -> sharded
  all_gather,      ///< sharded -> replicated (or -> partial)
  all_to_all,      ///< sharded on one tensor dim -> sharded on another
  local_slice,     ///< replicated -> sharded: each device keeps its part, no communication
  local_partial,   ///< replicated -> partial: one device keeps the value, the others zero
  /// Point to point: a pipeline stage sends its block output's local part to the next stage,
  /// and its gradient to the previous one (`<ctspmd/model/pipeline.hpp>`). No reshard is one:
  /// propagation and the step's cost never report it, a pipeline's stages do.
  send_recv,
};
/// The number of collectives (the size of every table indexed by one).
inline constexpr std::size_t collective_count = 7;
static_assert(static_cast<std::size_t>(collective::send_recv) + 1 == collective_count, "a collective is missing");

constexpr std::string_view to_string(collective c) noexcept {
  switch (c) {
    case collective::all_reduce: return "all_reduce";
    case collective::reduce_scatter: return "reduce_scatter";
    case collective::all_gather: return "all_gather";
    case collective::all_to_all: return "all_to_all";
    case collective::local_slice: return "local_slice";
    case collective::local_partial: return "local_partial";
    case collective::send_recv: return "send_recv";
  }
  return "unknown";
}

/// True if collective `c` sends data between devices (a local slice or local partial does not).
constexpr bool moves_data(collective c) noexcept {
  return c != collective::local_slice && c != collective::local_partial;
}

namespace detail {
using ctspmd::detail::saturating_product;

/// What a dist attr holds on one mesh dim.
struct mesh_dim_state {
  enum kind_t : std::int8_t { replicate, shard, partial } kind = replicate;
  std::int64_t value = 0;  ///< the tensor dim (shard) or the reduce type (partial)
  std::int64_t order = 0;  ///< (shard) the mesh dim's place in its tensor dim's list, 0 = major
  friend constexpr bool operator==(const mesh_dim_state&, const mesh_dim_state&) = default;
};
/// A co-sharded tensor dim is split over its mesh dims major first, so a mesh dim that moves in
/// the list moves data too: its state carries its place there.
constexpr mesh_dim_state state_on(const tensor_dist_attr& a, std::int64_t m) {
  if (a.is_partial(m)) return {mesh_dim_state::partial, static_cast<std::int64_t>(a.partial_reduce_type(m)), 0};
  const std::int64_t d = a.sharded_tensor_dim(m);
  if (d < 0) return {};
  const mesh_dims list = a.mesh_dims_of(static_cast<std::size_t>(d));
  std::int64_t order = 0;
  while (list[static_cast<std::size_t>(order)] != m) ++order;
  return {mesh_dim_state::shard, d, order};
}
constexpr collective classify(mesh_dim_state from, mesh_dim_state to) {
  using s = mesh_dim_state;
  if (from.kind == s::partial) return to.kind == s::shard ? collective::reduce_scatter : collective::all_reduce;
  if (from.kind == s::shard) return to.kind == s::shard ? collective::all_to_all : collective::all_gather;
  return to.kind == s::shard ? collective::local_slice : collective::local_partial;
}
/// The mesh dims one collective of `kind` on mesh dim m takes with m (bits, m's included): with
/// an all-reduce, the later mesh dims partial alike that are needed replicated; with a
/// reduce-scatter, those partial alike needed split on the same tensor dim (a co-shard); with an
/// all-gather, those splitting the same tensor dim that are needed as m is; with an all-to-all,
/// those splitting the same tensor dim that are needed splitting the same other one (a co-shard
/// moving whole; mesh dims reordered on one tensor dim are not such a move). One collective over
/// their product group (see the file comment).
constexpr std::uint32_t product_group(const tensor_dist_attr& from, const tensor_dist_attr& to, std::int64_t m,
                                      collective kind) {
  std::uint32_t group = std::uint32_t{1} << m;
  if (kind == collective::local_slice || kind == collective::local_partial || kind == collective::send_recv) return group;
  const auto a = state_on(from, m), b = state_on(to, m);
  for (std::int64_t k = m + 1; k < from.process_mesh().ndim(); ++k) {
    const auto ak = state_on(from, k), bk = state_on(to, k);
    if (ak == bk || classify(ak, bk) != kind) continue;
    bool alike = false;
    if (kind == collective::all_gather)
      alike = ak.value == a.value && bk == b;
    else if (kind == collective::all_to_all)
      alike = ak.value == a.value && bk.value == b.value && a.value != b.value;
    else
      alike = ak == a && (kind == collective::all_reduce || bk.value == b.value);
    if (alike) group |= std::uint32_t{1} << k;
  }
  return group;
}
/// The devices of a product group: the product of its mesh dims' sizes (saturating).
constexpr std::int64_t group_size(const process_mesh& mesh, std::uint32_t group) {
  std::int64_t n = 1;
  for (std::int64_t k = 0; k < mesh.ndim(); ++k)
    if (((group >> k) & 1) != 0) n = saturating_product(n, mesh.dim_size(k));
  return n;
}
/// The order in which the collectives of one reshard are tried (`execution_rank`, lowest first;
/// mesh dims in order within a kind): local slices (they shrink what the others move), then
/// all-reduces and all-to-alls (which keep the local size), reduce-scatters, all-gathers, local
/// partials. Each runs when it can (`layout_after`, `reachable`) and is charged on the local part
/// the collectives before it left.
constexpr int execution_rank(collective c) noexcept {
  switch (c) {
    case collective::local_slice: return 0;
    case collective::all_reduce: return 1;
    case collective::all_to_all: return 2;
    case collective::reduce_scatter: return 3;
    case collective::all_gather: return 4;
    default: return 5;
  }
}
/// The layout of a tensor going from `from` to `to` once the mesh dims in `done` (bits) have
/// moved, into `out`; false if that is no layout on the way to `to`: a tensor dim's mesh dims
/// split it major first, so those of `to`'s list that are in place (moved, or there in `from`)
/// must come first in it. The mesh dims of `from` that have not moved keep their places after
/// them.
constexpr bool layout_after(const tensor_dist_attr& from, const tensor_dist_attr& to, std::uint32_t done,
                            tensor_dist_attr& out) {
  const auto moved = [done](std::int64_t m) { return ((done >> m) & 1U) != 0; };
  const auto has = [](const mesh_dims& l, std::int64_t m) {
    for (auto x : l)
      if (x == m) return true;
    return false;
  };
  multi_dims_mapping dm;
  for (std::size_t d = 0; d < from.rank(); ++d) {
    const mesh_dims f = from.mesh_dims_of(d), t = to.mesh_dims_of(d);
    mesh_dims list;
    bool gap = false;
    for (auto m : t) {
      if (!moved(m) && !has(f, m)) {
        gap = true;
      } else if (gap) {
        return false;
      } else {
        list.push_back(m);
      }
    }
    for (auto m : f)
      if (!moved(m) && !has(t, m)) list.push_back(m);
    dm.push_back(list);
  }
  out = tensor_dist_attr(from.process_mesh(), dm);
  for (auto m : from.partial_dims())
    if (!moved(m)) out.set_partial_status({m}, from.partial_reduce_type(m));
  for (auto m : to.partial_dims())
    if (moved(m)) out.set_partial_status({m}, to.partial_reduce_type(m));
  return true;
}
/// True if every device can make its part of `next` from what the devices of its `group` (those
/// that differ from it on the group's mesh dims only) hold under `cur`: in each tensor dim, the
/// mesh dims of `cur` outside the group come first in its list (what the group holds together is
/// then one block) and are where `next` has them (that block holds `next`'s).
constexpr bool reachable(const tensor_dist_attr& cur, const tensor_dist_attr& next, std::uint32_t group) {
  const auto in = [group](std::int64_t m) { return ((group >> m) & 1U) != 0; };
  for (std::size_t d = 0; d < cur.rank(); ++d) {
    const mesh_dims a = cur.mesh_dims_of(d), b = next.mesh_dims_of(d);
    std::size_t k = 0;
    while (k < a.size() && !in(a[k])) ++k;
    for (std::size_t j = k; j < a.size(); ++j)
      if (!in(a[j])) return false;
    if (k > b.size()) return false;
    for (std::size_t j = 0; j < k; ++j)
      if (a[j] != b[j]) return false;
  }
  return true;
}
/// Bytes each device sends (see the file comment), over a group of `n` devices.
/// The bytes of the largest device's part of a tensor laid out as `a` (each dim's parts rounded
/// up), or -1 for sizes unknown until run time.
constexpr std::int64_t local_bytes(const tensor_shape& shape, std::int64_t element_bytes, const tensor_dist_attr& a) {
  std::int64_t local = element_bytes;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) return -1;
    const std::int64_t parts = a.parts(d);
    local = saturating_product(local, shape[d] / parts + (shape[d] % parts != 0));
  }
  return local;
}
/// The most bytes a device lacks of its part under `next`, holding its part under `cur`: what
/// it receives when its group gathers them for it (each dim's parts rounded up), -1 for sizes
/// unknown until run time. Counted device by device.
constexpr std::int64_t received_bytes(const tensor_shape& shape, std::int64_t element_bytes, const tensor_dist_attr& cur,
                                      const tensor_dist_attr& next) {
  const auto& mesh = cur.process_mesh();
  std::int64_t worst = 0;
  for (std::int64_t dev = 0; dev < mesh.size(); ++dev) {
    std::int64_t need = element_bytes, have = element_bytes;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] < 0) return -1;
      // The block of dim d device `dev` holds under `a`: [start, end).
      const auto block = [&](const tensor_dist_attr& a, std::int64_t& start, std::int64_t& end) {
        std::int64_t index = 0, parts = 1;
        for (auto m : a.mesh_dims_of(d)) {
          std::int64_t stride = 1;
          for (std::int64_t k = m + 1; k < mesh.ndim(); ++k) stride *= mesh.dim_size(k);
          index = index * mesh.dim_size(m) + (dev / stride) % mesh.dim_size(m);
          parts *= mesh.dim_size(m);
        }
        const std::int64_t len = shape[d] / parts + (shape[d] % parts != 0);
        start = index * len < shape[d] ? index * len : shape[d];
        end = start + len < shape[d] ? start + len : shape[d];
      };
      std::int64_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
      block(cur, a0, a1);
      block(next, b0, b1);
      const std::int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
      need = saturating_product(need, b1 - b0);
      have = saturating_product(have, hi > lo ? hi - lo : 0);
    }
    if (need - have > worst) worst = need - have;
  }
  return worst;
}
constexpr std::int64_t reshard_bytes(collective c, const tensor_shape& shape, std::int64_t element_bytes,
                                     const tensor_dist_attr& from, std::int64_t n) {
  const std::int64_t local = local_bytes(shape, element_bytes, from);
  if (local < 0) return -1;
  // (n - 1) x / n, rounded up (what moves data never rounds to 0), as x - floor(x / n): no overflow.
  const auto sent = [n](std::int64_t x) { return x - x / n; };
  switch (c) {
    case collective::all_reduce: return sent(saturating_product(2, local));
    case collective::reduce_scatter:
    case collective::all_to_all: return sent(local);
    case collective::all_gather: return saturating_product(n - 1, local);
    case collective::local_slice:
    case collective::local_partial: return 0;
    case collective::send_recv: return local;
  }
  return 0;
}

}  // namespace detail

}  // namespace ctspmd::model

#endif
