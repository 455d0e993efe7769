#ifndef CTSPMD_MODEL_COLLECTIVE_HPP
#define CTSPMD_MODEL_COLLECTIVE_HPP
/// \file The collective vocabulary: how a reshard moves data on a mesh dim (`collective`),
/// which collective a change of layout on one mesh dim takes (`classify`), the product groups
/// one collective spans, and the bytes a device sends. Propagation reports reshards in these
/// terms; the cost, the pipeline report, the layout search and the tools read them.
///
/// Bytes each device sends, by ring algorithms, for a tensor whose local part (under the layout
/// it has; the largest device's, each dim's parts rounded up) is S bytes on a mesh dim of n
/// devices: all-reduce 2(n-1)S/n, reduce-scatter (n-1)S/n, all-gather (n-1)S, all-to-all
/// (n-1)S/n, each rounded up, so that a collective that moves data never reports 0 bytes; local
/// slice and local partial 0 (they move nothing: `moves_data`), a pipeline's send_recv S. Sizes
/// unknown until run time (-1) give -1 bytes. A tensor partial (with one reduce type) over
/// several mesh dims that it needs replicated on them is one all-reduce over their product group
/// (n the product of their sizes: a gradient reduced over dp and cp at once); so is one it needs
/// split on one tensor dim over them (a co-shard) one reduce-scatter, and one split on one
/// tensor dim over several mesh dims that it needs replicated on them one all-gather (ZeRO's
/// shard over dp x cp).

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
/// all-gather, those splitting the same tensor dim that are needed as m is. One collective over
/// their product group (see the file comment).
constexpr std::uint32_t product_group(const tensor_dist_attr& from, const tensor_dist_attr& to, std::int64_t m,
                                      collective kind) {
  std::uint32_t group = std::uint32_t{1} << m;
  if (kind != collective::all_reduce && kind != collective::reduce_scatter && kind != collective::all_gather) return group;
  const auto a = state_on(from, m), b = state_on(to, m);
  for (std::int64_t k = m + 1; k < from.process_mesh().ndim(); ++k) {
    const auto ak = state_on(from, k), bk = state_on(to, k);
    if (ak == bk || classify(ak, bk) != kind) continue;
    const bool alike = kind == collective::all_gather ? ak.value == a.value && bk == b
                                                      : ak == a && (kind == collective::all_reduce || bk.value == b.value);
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
/// Bytes each device sends (see the file comment), over a group of `n` devices.
constexpr std::int64_t reshard_bytes(collective c, const tensor_shape& shape, std::int64_t element_bytes,
                                     const tensor_dist_attr& from, std::int64_t n) {
  std::int64_t local = element_bytes;  // the largest device's part: each dim's parts rounded up
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) return -1;
    const std::int64_t parts = from.parts(d);
    local = saturating_product(local, shape[d] / parts + (shape[d] % parts != 0));
  }
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
