#ifndef CTSPMD_INTEROP_DTENSOR_HPP
#define CTSPMD_INTEROP_DTENSOR_HPP
/// \file PyTorch DTensor placements <-> `tensor_dist_attr`, in constant expressions.
///
/// Text: a list, in brackets or parentheses, of one placement per mesh dim, in mesh dim order:
/// `[Shard(0), Replicate(), Partial()]`. Placements: `Shard(d)` / `Shard(dim=d)` (d may be
/// negative, counted from the end as in PyTorch), `Replicate()`, `Partial()` (sum) /
/// `Partial('max')` / `Partial(reduce_op="avg")` / `Partial(max)` (PyTorch's repr), and
/// `_StridedShard(d, split_factor=k)` (also `_StridedShard(dim=d, sf=k)`, its repr).
///
/// Reduce ops: DTensor's names: sum, avg, product (also prod), max, min, and the bitwise
/// band (= Paddle's `all` on booleans) and bor (= `any`). Printing writes `Partial()` for sum
/// and `Partial('op')` otherwise.
///
/// Co-shard order. Several placements `Shard(d)` on one tensor dim split it over those mesh
/// dims; DTensor applies placements left to right, so with plain `Shard`s the mesh dim of the
/// lowest index is the major (outer) split: ctspmd's list {0, 1} is `[Shard(d), Shard(d)]`.
/// Any other order is said with `_StridedShard(d, split_factor=k)`, whose local shard on
/// mesh dim m is, of the tensor dim seen as [k, size(m), rest], index i of the middle part
/// (PyTorch's `_StridedShard._split_tensor`). Exactly: for a tensor dim split over the list L
/// (major first), mesh dim m of L gets `Shard(d)` when k = 1, else `_StridedShard(d,
/// split_factor=k)`, where k is the product of the sizes of the mesh dims that come before m
/// in L but have a higher index than m (they split the tensor dim outside m, yet DTensor
/// applies them after m). FSDP2 + TP's `[_StridedShard(0, split_factor=tp), Shard(0)]` on a
/// (dp, tp) mesh is thus the list {1, 0}: tp major. Reading, the list is rebuilt from the
/// highest mesh dim down, each mesh dim inserted where the sizes before it, all of higher
/// index, multiply to its split factor (the earliest such place). This is exact when the
/// co-sharded mesh dims have sizes above 1; a mesh dim of size 1 splits nothing, and where it
/// stands in a list is not recoverable from placements (it reads back at the earliest place
/// its factor allows: the layouts are the same).

#include <cstdint>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/interop/text.hpp>

namespace ctspmd {

/// One DTensor placement as read from text.
struct dtensor_placement {
  enum class kind : std::uint8_t { replicate, shard, strided_shard, partial };
  kind what = kind::replicate;
  reduce_type reduce = reduce_type::sum;  ///< partial only
  std::int64_t dim = 0;                   ///< shard and strided_shard: the tensor dim, as written
  std::int64_t split_factor = 1;          ///< strided_shard only
  std::int64_t column = 0;                ///< where it starts in the text (1-based)
  friend constexpr bool operator==(const dtensor_placement&, const dtensor_placement&) = default;
};
/// A parsed placement list, one per mesh dim.
using dtensor_placements = static_vector<dtensor_placement, max_mesh_ndim>;

namespace detail::dtensor {
inline constexpr std::string_view op = "placements";

struct reduce_name {
  std::string_view name;
  reduce_type type;
};
inline constexpr reduce_name reduce_names[] = {{"sum", reduce_type::sum},   {"avg", reduce_type::avg},
                                               {"product", reduce_type::prod}, {"prod", reduce_type::prod},
                                               {"max", reduce_type::max},   {"min", reduce_type::min},
                                               {"band", reduce_type::all},  {"bor", reduce_type::any}};
/// DTensor's name of a reduce type.
constexpr std::string_view name_of(reduce_type r) noexcept {
  for (const auto& n : reduce_names)
    if (n.type == r) return n.name;
  return "sum";
}

constexpr status expect(text::cursor& c, char ch, const char* at_char, const char* at_end) {
  if (!c.eat(ch)) return c.expected(at_char, at_end);
  return {};
}

/// `dim=` (or `sf=` / `split_factor=`), optional, then an integer.
constexpr status keyword_integer(text::cursor& c, std::string_view k1, std::string_view k2, std::int64_t& out) {
  const std::size_t save = c.pos;
  const auto word = c.identifier();
  if (!word.empty() && (word == k1 || word == k2)) {
    if (!c.eat('=')) return c.expected("column {}: expected '=' after the keyword, found '{c}'",
                                       "column {}: expected '=' after the keyword, found the end of the text");
  } else {
    c.pos = save;
  }
  if (!c.integer(out))
    return c.expected("column {}: expected an integer, found '{c}'", "column {}: expected an integer, found the end of the text");
  return {};
}

constexpr status placement(text::cursor& c, dtensor_placement& p) {
  p.column = c.column();
  const auto kind = c.identifier();
  if (kind.empty())
    return c.expected("column {}: expected a placement (Shard, Replicate, Partial or _StridedShard), found '{c}'",
                      "column {}: expected a placement (Shard, Replicate, Partial or _StridedShard), found the end of the text");
  constexpr const char* open_c = "column {}: expected '(' after the placement kind, found '{c}'";
  constexpr const char* open_e = "column {}: expected '(' after the placement kind, found the end of the text";
  constexpr const char* close_c = "column {}: expected ')' to close the placement, found '{c}'";
  constexpr const char* close_e = "column {}: expected ')' to close the placement, found the end of the text";
  if (kind == "Shard" || kind == "_StridedShard") {
    p.what = kind == "Shard" ? dtensor_placement::kind::shard : dtensor_placement::kind::strided_shard;
    CTSPMD_TRY(expect(c, '(', open_c, open_e));
    CTSPMD_TRY(keyword_integer(c, "dim", "dim", p.dim));
    if (p.what == dtensor_placement::kind::strided_shard) {
      CTSPMD_TRY(expect(c, ',', "column {}: expected ',' and the split factor, found '{c}'",
                        "column {}: expected ',' and the split factor, found the end of the text"));
      const std::int64_t at = c.column();
      CTSPMD_TRY(keyword_integer(c, "split_factor", "sf", p.split_factor));
      if (p.split_factor < 1)
        return make_error(error_kind::invalid_argument, op, "column {}: a split factor is at least 1, not {}", at,
                          p.split_factor);
    }
    return expect(c, ')', close_c, close_e);
  }
  if (kind == "Replicate") {
    p.what = dtensor_placement::kind::replicate;
    CTSPMD_TRY(expect(c, '(', open_c, open_e));
    return expect(c, ')', "column {}: Replicate() takes no argument, found '{c}'", close_e);
  }
  if (kind == "Partial") {
    p.what = dtensor_placement::kind::partial;
    p.reduce = reduce_type::sum;
    CTSPMD_TRY(expect(c, '(', open_c, open_e));
    if (c.eat(')')) return {};
    const std::size_t save = c.pos;
    if (c.identifier() != "reduce_op" || !c.eat('=')) c.pos = save;
    const std::int64_t at = c.column();
    std::string_view name;
    bool quoted = false;
    CTSPMD_TRY(c.quoted(name, quoted));
    if (!quoted) name = c.identifier();
    if (name.empty())
      return c.expected("column {}: expected a reduce op (sum, avg, product, max, min, band, bor), found '{c}'",
                        "column {}: expected a reduce op, found the end of the text");
    bool known = false;
    for (const auto& n : reduce_names)
      if (n.name == name) p.reduce = n.type, known = true;
    if (!known)
      return make_error(error_kind::invalid_argument, op,
                        "column {}: unknown reduce op (DTensor's are sum, avg, product, max, min, band, bor)", at);
    return expect(c, ')', close_c, close_e);
  }
  return make_error(error_kind::invalid_argument, op,
                    "column {}: unknown placement kind (Shard, Replicate, Partial or _StridedShard)", p.column);
}
}  // namespace detail::dtensor

/// Parses DTensor placements text (syntax only: no mesh needed).
constexpr result<dtensor_placements> try_parse_placements(std::string_view text) {
  using namespace detail::dtensor;
  detail::text::cursor c{text, op};
  char close = ']';
  if (c.eat('(')) close = ')';
  else if (!c.eat('['))
    return c.expected("column {}: expected '[' to open the list of placements, found '{c}'",
                      "column {}: expected '[' to open the list of placements, found the end of the text");
  dtensor_placements out;
  if (!c.eat(close)) {
    while (true) {
      if (out.size() == max_mesh_ndim)
        return make_error(error_kind::invalid_argument, op, "column {}: more than {} placements (max_mesh_ndim)", c.column(),
                          max_mesh_ndim);
      dtensor_placement p;
      CTSPMD_TRY(placement(c, p));
      out.push_back(p);
      if (c.eat(close)) break;
      if (!c.eat(','))
        return c.expected(close == ']' ? "column {}: expected ',' or ']', found '{c}'" : "column {}: expected ',' or ')', found '{c}'",
                          close == ']' ? "column {}: expected ',' or ']' (the list is not closed), found the end of the text"
                                       : "column {}: expected ',' or ')' (the list is not closed), found the end of the text");
      if (c.eat(close)) break;  // a trailing comma
    }
  }
  if (!c.at_end()) return c.expected("column {}: unexpected '{c}' after the list of placements", "");
  return out;
}

/// The dist attr that `placements` give a tensor of rank `rank` on `mesh` (one placement per
/// mesh dim; see the file comment for the co-shard order).
constexpr result<tensor_dist_attr> try_from_placements(const process_mesh& mesh, const dtensor_placements& placements,
                                                       std::size_t rank) {
  using namespace detail::dtensor;
  if (static_cast<std::int64_t>(placements.size()) != mesh.ndim())
    return make_error(error_kind::invalid_argument, op, "{} placements for a mesh of {} dims: one per mesh dim",
                      placements.size(), mesh.ndim());
  if (rank > max_rank)
    return make_error(error_kind::invalid_argument, op, "a tensor of rank {} exceeds max_rank = {}", rank, max_rank);
  const auto r = static_cast<std::int64_t>(rank);
  std::int64_t dims[max_mesh_ndim] = {};
  for (std::size_t m = 0; m < placements.size(); ++m) {
    const auto& p = placements[m];
    if (p.what != dtensor_placement::kind::shard && p.what != dtensor_placement::kind::strided_shard) continue;
    if (p.dim < -r || p.dim >= r)
      return make_error(error_kind::invalid_argument, op, "column {}: Shard of dim {}, but the tensor has rank {}", p.column,
                        p.dim, r);
    dims[m] = p.dim < 0 ? p.dim + r : p.dim;
  }
  multi_dims_mapping mapping(rank, mesh_dims{});
  for (std::int64_t m = mesh.ndim() - 1; m >= 0; --m) {
    const auto& p = placements[static_cast<std::size_t>(m)];
    if (p.what != dtensor_placement::kind::shard && p.what != dtensor_placement::kind::strided_shard) continue;
    auto& list = mapping[static_cast<std::size_t>(dims[m])];
    const std::int64_t factor = p.what == dtensor_placement::kind::shard ? 1 : p.split_factor;
    std::int64_t product = 1;
    std::size_t at = 0;
    while (product != factor && at < list.size()) product *= mesh.dim_size(list[at++]);
    if (product != factor)
      return make_error(error_kind::invalid_argument, op,
                        "column {}: split_factor {} on mesh dim {} is not a product of the sizes of the higher mesh "
                        "dims that shard tensor dim {} outside it",
                        p.column, factor, m, dims[m]);
    mesh_dims inserted;
    for (std::size_t i = 0; i < at; ++i) inserted.push_back(list[i]);
    inserted.push_back(m);
    for (std::size_t i = at; i < list.size(); ++i) inserted.push_back(list[i]);
    list = inserted;
  }
  tensor_dist_attr attr(mesh, mapping);
  for (std::size_t m = 0; m < placements.size(); ++m)
    if (placements[m].what == dtensor_placement::kind::partial)
      attr.set_partial_status({static_cast<std::int64_t>(m)}, placements[m].reduce);
  return attr;
}

/// The dist attr that placements `text` give a tensor of rank `rank` on `mesh`.
constexpr result<tensor_dist_attr> try_from_placements(const process_mesh& mesh, std::string_view text, std::size_t rank) {
  auto parsed = try_parse_placements(text);
  if (!parsed) return parsed.error();
  return try_from_placements(mesh, *parsed, rank);
}
/// `try_from_placements`, raising its error (a compile error in constant evaluation).
constexpr tensor_dist_attr from_placements(const process_mesh& mesh, std::string_view text, std::size_t rank) {
  return try_from_placements(mesh, text, rank).value();
}

/// The DTensor placements of `attr`, one per mesh dim (canonical text: `Shard(d)`,
/// `_StridedShard(d, split_factor=k)`, `Replicate()`, `Partial()`, `Partial('max')`).
constexpr result<sharding_string> try_to_placements(const tensor_dist_attr& attr) {
  using namespace detail::dtensor;
  const auto& mesh = attr.process_mesh();
  sharding_string s;
  bool ok = s.append("[");
  for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
    if (m != 0) ok = ok && s.append(", ");
    if (attr.is_partial(m)) {
      const auto r = attr.partial_reduce_type(m);
      if (r == reduce_type::sum)
        ok = ok && s.append("Partial()");
      else
        ok = ok && s.append("Partial('") && s.append(name_of(r)) && s.append("')");
      continue;
    }
    const std::int64_t d = attr.sharded_tensor_dim(m);
    if (d < 0) {
      ok = ok && s.append("Replicate()");
      continue;
    }
    const auto list = attr.mesh_dims_of(static_cast<std::size_t>(d));
    std::int64_t factor = 1;
    for (std::size_t i = 0; i < list.size() && list[i] != m; ++i)
      if (list[i] > m) factor *= mesh.dim_size(list[i]);
    if (factor == 1)
      ok = ok && s.append("Shard(") && s.append(d) && s.append(")");
    else
      ok = ok && s.append("_StridedShard(") && s.append(d) && s.append(", split_factor=") && s.append(factor) &&
           s.append(")");
  }
  ok = ok && s.append("]");
  if (!ok) return detail::text::too_long(op);
  return s;
}
constexpr sharding_string to_placements(const tensor_dist_attr& attr) { return try_to_placements(attr).value(); }

}  // namespace ctspmd

#endif
