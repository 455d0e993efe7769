#ifndef CTSPMD_INTEROP_PARTITION_SPEC_HPP
#define CTSPMD_INTEROP_PARTITION_SPEC_HPP
/// \file JAX `PartitionSpec` <-> `tensor_dist_attr`, in constant expressions, over a `named_mesh`.
///
/// Text: `P(...)` or `PartitionSpec(...)`, one entry per leading tensor dim: `None` (replicated),
/// a mesh axis name in quotes (`'dp'` or `"dp"`), or a tuple of names (`('mp', 'sp')`, also
/// `('dp',)` and `()`). Dims past the last entry are replicated, as in JAX (`P()` is a
/// replicated tensor of any rank). Printing writes one entry per tensor dim, names in single
/// quotes: `P('dp', None, ('mp', 'sp'))`, and `P()` for rank 0.
///
/// Co-shard order: a tuple lists the mesh axes major first, as JAX does (the dim is split over
/// the first axis, each part over the next, ...), which is ctspmd's order: ctspmd's list
/// {2, 1} on a mesh named (dp, mp, sp) is `('sp', 'mp')`.
///
/// Partial: a PartitionSpec says nothing about partial values, so a partial attr has no
/// PartitionSpec (an error naming the mesh dim), unless the caller asks to leave the partial
/// status out (`partial_policy::omit`; the JSON tool then writes a "partial" list beside the
/// spec). JAX's `unreduced=` keyword and `P.UNCONSTRAINED` are refused with that message.

#include <cstdint>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/named_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/interop/text.hpp>

namespace ctspmd {

/// What printing does with a partial attr in a language that cannot say it.
enum class partial_policy : std::uint8_t {
  reject,  ///< an error naming the partial mesh dim
  omit     ///< print the mapping alone (the caller says the partial status some other way)
};

/// A mesh axis name as read from text, with its column.
struct axis_name {
  std::string_view name;
  std::int64_t column = 0;
  friend constexpr bool operator==(const axis_name&, const axis_name&) = default;
};
/// The axis names of one tensor dim, major first.
using axis_names = static_vector<axis_name, max_mesh_ndim>;
/// One entry of a PartitionSpec: the names that split a tensor dim (none: `None`).
struct spec_entry {
  axis_names axes{};
  std::int64_t column = 0;
  friend constexpr bool operator==(const spec_entry&, const spec_entry&) = default;
};
/// A parsed PartitionSpec.
using parsed_partition_spec = static_vector<spec_entry, max_rank>;

namespace detail::pspec {
inline constexpr std::string_view op = "partition_spec";

/// A quoted name, added to `axes`.
constexpr status name(text::cursor& c, axis_names& axes) {
  const std::int64_t at = c.column();
  std::string_view n;
  bool found = false;
  CTSPMD_TRY(c.quoted(n, found));
  if (!found)
    return c.expected("column {}: expected a mesh axis name in quotes, found '{c}'",
                      "column {}: expected a mesh axis name in quotes, found the end of the text");
  if (axes.size() == max_mesh_ndim)
    return make_error(error_kind::invalid_argument, op, "column {}: more than {} names for one dim (max_mesh_ndim)", at,
                      max_mesh_ndim);
  axes.push_back({n, at});
  return {};
}

constexpr status entry(text::cursor& c, spec_entry& e) {
  e.column = c.column();
  if (c.eat_word("None")) return {};
  if (c.peek() == '\'' || c.peek() == '"') return name(c, e.axes);
  if (c.eat('(')) {
    if (c.eat(')')) return {};
    while (true) {
      CTSPMD_TRY(name(c, e.axes));
      if (c.eat(')')) return {};
      if (!c.eat(','))
        return c.expected("column {}: expected ',' or ')' in the tuple of names, found '{c}'",
                          "column {}: expected ',' or ')' (the tuple is not closed), found the end of the text");
      if (c.eat(')')) return {};
    }
  }
  const std::size_t save = c.pos;
  const auto word = c.identifier();
  if (!word.empty() && c.eat('=')) {
    c.pos = save;
    return make_error(error_kind::invalid_argument, op,
                      "column {}: PartitionSpec keyword arguments (unreduced=...) are not supported: a PartitionSpec "
                      "cannot say partial here",
                      e.column);
  }
  c.pos = save;
  return c.expected("column {}: expected None, a mesh axis name in quotes or a tuple of names, found '{c}'",
                    "column {}: expected None, a mesh axis name or a tuple of names, found the end of the text");
}
}  // namespace detail::pspec

/// Parses PartitionSpec text (syntax only: no mesh needed).
constexpr result<parsed_partition_spec> try_parse_partition_spec(std::string_view text) {
  using namespace detail::pspec;
  detail::text::cursor c{text, op};
  if (!c.eat_word("PartitionSpec") && !c.eat_word("P"))
    return c.expected("column {}: expected P( or PartitionSpec(, found '{c}'",
                      "column {}: expected P( or PartitionSpec(, found the end of the text");
  if (!c.eat('('))
    return c.expected("column {}: expected '(' after P, found '{c}'", "column {}: expected '(' after P, found the end of the text");
  parsed_partition_spec out;
  if (!c.eat(')')) {
    while (true) {
      if (out.size() == max_rank)
        return make_error(error_kind::invalid_argument, op, "column {}: more than {} entries (max_rank)", c.column(),
                          max_rank);
      spec_entry e;
      CTSPMD_TRY(entry(c, e));
      out.push_back(e);
      if (c.eat(')')) break;
      if (!c.eat(','))
        return c.expected("column {}: expected ',' or ')', found '{c}'",
                          "column {}: expected ',' or ')' (the spec is not closed), found the end of the text");
      if (c.eat(')')) break;
    }
  }
  if (!c.at_end()) return c.expected("column {}: unexpected '{c}' after the PartitionSpec", "");
  return out;
}

/// The dist attr that `spec` gives a tensor of rank `rank` on `mesh` (whose dims must have names).
constexpr result<tensor_dist_attr> try_from_partition_spec(const named_mesh& mesh, const parsed_partition_spec& spec,
                                                           std::size_t rank) {
  using namespace detail::pspec;
  if (rank > max_rank)
    return make_error(error_kind::invalid_argument, op, "a tensor of rank {} exceeds max_rank = {}", rank, max_rank);
  if (spec.size() > rank)
    return make_error(error_kind::invalid_argument, op, "column {}: the spec has {} entries, but the tensor has rank {}",
                      spec[rank].column, spec.size(), rank);
  multi_dims_mapping mapping(rank, mesh_dims{});
  std::uint64_t seen = 0;
  for (std::size_t d = 0; d < spec.size(); ++d)
    for (const auto& a : spec[d].axes) {
      const auto m = detail::text::lookup(op, a.column, a.name, mesh, seen);
      if (!m) return m.error();
      mapping[d].push_back(*m);
    }
  return tensor_dist_attr(mesh, mapping);
}
constexpr result<tensor_dist_attr> try_from_partition_spec(const named_mesh& mesh, std::string_view text, std::size_t rank) {
  auto parsed = try_parse_partition_spec(text);
  if (!parsed) return parsed.error();
  return try_from_partition_spec(mesh, *parsed, rank);
}
constexpr tensor_dist_attr from_partition_spec(const named_mesh& mesh, std::string_view text, std::size_t rank) {
  return try_from_partition_spec(mesh, text, rank).value();
}

/// The PartitionSpec of `attr` on `mesh` (the attr's mesh with names).
constexpr result<sharding_string> try_to_partition_spec(const named_mesh& mesh, const tensor_dist_attr& attr,
                                                        partial_policy partial = partial_policy::reject) {
  using namespace detail::pspec;
  if (!(attr.process_mesh() == mesh.mesh()))
    return make_error(error_kind::invalid_argument, op, "the attr's mesh ({} dims) is not the named mesh ({} dims)",
                      attr.process_mesh().ndim(), mesh.ndim());
  if (!mesh.has_names())
    return make_error(error_kind::invalid_argument, op, "the mesh's dims have no names: a PartitionSpec needs them");
  if (partial == partial_policy::reject)
    for (std::int64_t m = 0; m < mesh.ndim(); ++m)
      if (attr.is_partial(m))
        return make_error(error_kind::invalid_argument, op,
                          "the tensor is partial on mesh dim {}, which a PartitionSpec cannot say", m);
  sharding_string s;
  bool ok = s.append("P(");
  for (std::size_t d = 0; d < attr.rank(); ++d) {
    if (d != 0) ok = ok && s.append(", ");
    const auto list = attr.mesh_dims_of(d);
    if (list.empty()) {
      ok = ok && s.append("None");
      continue;
    }
    if (list.size() > 1) ok = ok && s.append("(");
    for (std::size_t i = 0; i < list.size(); ++i)
      ok = ok && s.append(i ? ", '" : "'") && s.append(mesh.name(list[i])) && s.append("'");
    if (list.size() > 1) ok = ok && s.append(")");
  }
  ok = ok && s.append(")");
  if (!ok) return detail::text::too_long(op);
  return s;
}
constexpr sharding_string to_partition_spec(const named_mesh& mesh, const tensor_dist_attr& attr,
                                            partial_policy partial = partial_policy::reject) {
  return try_to_partition_spec(mesh, attr, partial).value();
}

}  // namespace ctspmd

#endif
