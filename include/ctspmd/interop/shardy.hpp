#ifndef CTSPMD_INTEROP_SHARDY_HPP
#define CTSPMD_INTEROP_SHARDY_HPP
/// \file OpenXLA Shardy's sharding attribute <-> `tensor_dist_attr`, in constant expressions,
/// over a `named_mesh`.
///
/// Text: `#sdy.sharding<@mesh, [{"dp"}, {}, {"mp", "sp"}]>`, one dim sharding per tensor dim
/// (exactly rank of them, as Shardy requires), each the mesh axis names that split the dim,
/// major first (Shardy's order, which is ctspmd's: ctspmd's list {2, 1} is `{"sp", "mp"}`),
/// then optionally `replicated={"x"}` (axes said to be replicated: checked, and replicated
/// anyway) and `unreduced={"y"}` (axes over which the value is a pending sum: ctspmd's partial
/// sum on those mesh dims).
/// - Open dims (`{"dp", ?}`, `{?}`) are read as the closed ones: they let Shardy's propagation
///   add axes, and a rule's input in ctspmd is a fixed layout. Dim priorities (`{"dp"}p1`) are
///   read and ignored. Printing writes closed dims, without priorities.
/// - Sub-axes (`"x":(1)2`) and inline meshes (`mesh<["x"=2]>`) are refused with a clear error.
/// - `@name` is the mesh symbol, which names the mesh in the module; it is read and not checked
///   (the mesh is the one given), and printing writes `@mesh` unless told otherwise.
/// - A partial status other than sum has no Shardy form (unreduced axes are sums): printing it
///   is an error naming the mesh dim, unless asked to omit it (`partial_policy::omit`: partial
///   sums are still printed as unreduced axes, the other partial dims left out).
/// Printing lists unreduced axes in mesh order, as Shardy does.

#include <cstdint>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/named_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/interop/partition_spec.hpp>
#include <ctspmd/interop/text.hpp>

namespace ctspmd {

/// One dim sharding of a Shardy attribute.
struct sdy_dim {
  axis_names axes{};
  bool open = false;
  std::int64_t column = 0;
  friend constexpr bool operator==(const sdy_dim&, const sdy_dim&) = default;
};
/// A parsed Shardy sharding.
struct parsed_sdy {
  std::string_view mesh_symbol;
  static_vector<sdy_dim, max_rank> dims;
  axis_names replicated, unreduced;
  friend constexpr bool operator==(const parsed_sdy&, const parsed_sdy&) = default;
};

namespace detail::sdy {
inline constexpr std::string_view op = "sdy";

/// A double-quoted axis name, added to `axes`.
constexpr status name(text::cursor& c, axis_names& axes) {
  const std::int64_t at = c.column();
  std::string_view n;
  bool found = false;
  CTSPMD_TRY(c.quoted(n, found, /*single_allowed=*/false));
  if (!found)
    return c.expected("column {}: expected a mesh axis name in double quotes, found '{c}'",
                      "column {}: expected a mesh axis name in double quotes, found the end of the text");
  if (c.peek() == ':')
    return make_error(error_kind::invalid_argument, op, "column {}: sub-axes (\"x\":(k)n) are not supported", at);
  if (axes.size() == max_mesh_ndim)
    return make_error(error_kind::invalid_argument, op, "column {}: more than {} axis names (max_mesh_ndim)", at,
                      max_mesh_ndim);
  axes.push_back({n, at});
  return {};
}

/// `{...}` of axis names; `open` set by a `?` (allowed only if `open` is non-null).
constexpr status braces(text::cursor& c, axis_names& axes, bool* open) {
  if (!c.eat('{'))
    return c.expected("column {}: expected '{' to open a list of axes, found '{c}'",
                      "column {}: expected '{' to open a list of axes, found the end of the text");
  if (c.eat('}')) return {};
  while (true) {
    if (open != nullptr && c.eat('?')) {
      *open = true;
      if (!c.eat('}'))
        return c.expected("column {}: expected '}' after '?', found '{c}'", "column {}: expected '}' after '?', found the end of the text");
      return {};
    }
    CTSPMD_TRY(name(c, axes));
    if (c.eat('}')) return {};
    if (!c.eat(','))
      return c.expected("column {}: expected ',' or '}', found '{c}'",
                        "column {}: expected ',' or '}' (the list of axes is not closed), found the end of the text");
  }
}
}  // namespace detail::sdy

/// Parses Shardy sharding text (syntax only: no mesh needed).
constexpr result<parsed_sdy> try_parse_sdy(std::string_view text) {
  using namespace detail::sdy;
  detail::text::cursor c{text, op};
  if (!c.eat_text("#sdy.sharding"))
    return c.expected("column {}: expected #sdy.sharding<, found '{c}'", "column {}: expected #sdy.sharding<, found the end of the text");
  if (c.pos < text.size() && named_mesh::is_name_char(text[c.pos]))
    return c.expected("column {}: expected '<' after #sdy.sharding, found '{c}'", "");
  if (!c.eat('<'))
    return c.expected("column {}: expected '<' after #sdy.sharding, found '{c}'",
                      "column {}: expected '<' after #sdy.sharding, found the end of the text");
  parsed_sdy out;
  if (!c.eat('@')) {
    const std::int64_t at = c.column();
    if (c.eat_word("mesh"))
      return make_error(error_kind::invalid_argument, op, "column {}: inline meshes are not supported: refer to the mesh as @name", at);
    return c.expected("column {}: expected '@' and the mesh's symbol, found '{c}'",
                      "column {}: expected '@' and the mesh's symbol, found the end of the text");
  }
  if (c.pos < text.size() && (text[c.pos] == ' ' || text[c.pos] == '\t'))
    return c.expected("column {}: expected the mesh's symbol right after '@', found '{c}'", "");
  const std::int64_t symbol_column = c.column();
  out.mesh_symbol = c.identifier();
  if (out.mesh_symbol.empty())
    return c.expected("column {}: expected the mesh's symbol after '@', found '{c}'",
                      "column {}: expected the mesh's symbol after '@', found the end of the text");
  if (out.mesh_symbol.size() > max_mesh_name)
    return make_error(error_kind::invalid_argument, op, "column {}: the mesh's symbol has {} characters, above {}",
                      symbol_column, out.mesh_symbol.size(), max_mesh_name);
  if (!c.eat(','))
    return c.expected("column {}: expected ',' after the mesh, found '{c}'", "column {}: expected ',' after the mesh, found the end of the text");
  if (!c.eat('['))
    return c.expected("column {}: expected '[' to open the dim shardings, found '{c}'",
                      "column {}: expected '[' to open the dim shardings, found the end of the text");
  if (!c.eat(']')) {
    while (true) {
      if (out.dims.size() == max_rank)
        return make_error(error_kind::invalid_argument, op, "column {}: more than {} dim shardings (max_rank)", c.column(),
                          max_rank);
      sdy_dim d;
      d.column = c.column();
      CTSPMD_TRY(braces(c, d.axes, &d.open));
      if (c.pos < text.size() && text[c.pos] == 'p') {  // a priority: p<digits>, ignored
        std::size_t p = c.pos + 1;
        while (p < text.size() && text[p] >= '0' && text[p] <= '9') ++p;
        if (p == c.pos + 1) return c.expected("column {}: expected digits after the priority 'p', found '{c}'", "");
        c.pos = p;
      }
      out.dims.push_back(d);
      if (c.eat(']')) break;
      if (!c.eat(','))
        return c.expected("column {}: expected ',' or ']', found '{c}'",
                          "column {}: expected ',' or ']' (the dim shardings are not closed), found the end of the text");
    }
  }
  bool has_replicated = false, has_unreduced = false;
  while (c.eat(',')) {
    const std::int64_t at = c.column();
    const auto key = c.identifier();
    const bool replicated = key == "replicated";
    if (!replicated && key != "unreduced")
      return make_error(error_kind::invalid_argument, op, "column {}: expected replicated= or unreduced=", at);
    if ((replicated && has_replicated) || (!replicated && has_unreduced))
      return make_error(error_kind::invalid_argument, op, "column {}: this list is given twice", at);
    (replicated ? has_replicated : has_unreduced) = true;
    if (!c.eat('=')) return c.expected("column {}: expected '=', found '{c}'", "column {}: expected '=', found the end of the text");
    CTSPMD_TRY(braces(c, replicated ? out.replicated : out.unreduced, nullptr));
  }
  if (!c.eat('>'))
    return c.expected("column {}: expected ',' or '>' to close the sharding, found '{c}'",
                      "column {}: expected '>' (the sharding is not closed), found the end of the text");
  if (!c.at_end()) return c.expected("column {}: unexpected '{c}' after the sharding", "");
  return out;
}

/// The dist attr that `sharding` gives a tensor of rank `rank` on `mesh` (whose dims must have names).
constexpr result<tensor_dist_attr> try_from_sdy(const named_mesh& mesh, const parsed_sdy& sharding, std::size_t rank) {
  using namespace detail::sdy;
  if (sharding.dims.size() != rank)
    return make_error(error_kind::invalid_argument, op, "{} dim shardings for a tensor of rank {}: one per dim",
                      sharding.dims.size(), rank);
  multi_dims_mapping mapping(rank, mesh_dims{});
  std::uint64_t seen = 0;
  for (std::size_t d = 0; d < rank; ++d)
    for (const auto& a : sharding.dims[d].axes) {
      const auto m = detail::text::lookup(op, a.column, a.name, mesh, seen);
      if (!m) return m.error();
      mapping[d].push_back(*m);
    }
  for (const auto& a : sharding.replicated) CTSPMD_TRY(detail::text::lookup(op, a.column, a.name, mesh, seen));
  mesh_dims partial;
  for (const auto& a : sharding.unreduced) {
    const auto m = detail::text::lookup(op, a.column, a.name, mesh, seen);
    if (!m) return m.error();
    partial.push_back(*m);
  }
  tensor_dist_attr attr(mesh, mapping);
  attr.set_partial_status(partial, reduce_type::sum);
  return attr;
}
constexpr result<tensor_dist_attr> try_from_sdy(const named_mesh& mesh, std::string_view text, std::size_t rank) {
  auto parsed = try_parse_sdy(text);
  if (!parsed) return parsed.error();
  return try_from_sdy(mesh, *parsed, rank);
}
constexpr tensor_dist_attr from_sdy(const named_mesh& mesh, std::string_view text, std::size_t rank) {
  return try_from_sdy(mesh, text, rank).value();
}

/// The Shardy sharding of `attr` on `mesh` (the attr's mesh with names), naming the mesh
/// `@mesh_symbol`.
constexpr result<sharding_string> try_to_sdy(const named_mesh& mesh, const tensor_dist_attr& attr,
                                             partial_policy partial = partial_policy::reject,
                                             std::string_view mesh_symbol = "mesh") {
  using namespace detail::sdy;
  if (!(attr.process_mesh() == mesh.mesh()))
    return make_error(error_kind::invalid_argument, op, "the attr's mesh ({} dims) is not the named mesh ({} dims)",
                      attr.process_mesh().ndim(), mesh.ndim());
  if (!mesh.has_names())
    return make_error(error_kind::invalid_argument, op, "the mesh's dims have no names: a Shardy sharding needs them");
  bool symbol_ok = !mesh_symbol.empty() && mesh_symbol.size() <= max_mesh_name;
  for (char ch : mesh_symbol) symbol_ok = symbol_ok && named_mesh::is_name_char(ch);
  if (!symbol_ok)
    return make_error(error_kind::invalid_argument, op, "the mesh symbol must be 1 to {} characters of [A-Za-z0-9_]",
                      max_mesh_name);
  if (partial == partial_policy::reject)
    for (std::int64_t m = 0; m < mesh.ndim(); ++m)
      if (attr.is_partial(m) && attr.partial_reduce_type(m) != reduce_type::sum)
        return make_error(error_kind::invalid_argument, op,
                          "the tensor is partial on mesh dim {} with reduce type {} (0 = sum, 1 = max, 2 = min, 3 = prod, 4 = "
                          "avg, 5 = any, 6 = all); Shardy's unreduced axes are sums only",
                          m, static_cast<std::int64_t>(attr.partial_reduce_type(m)));
  sharding_string s;
  bool ok = s.append("#sdy.sharding<@") && s.append(mesh_symbol) && s.append(", [");
  for (std::size_t d = 0; d < attr.rank(); ++d) {
    ok = ok && s.append(d ? ", {" : "{");
    const auto list = attr.mesh_dims_of(d);
    for (std::size_t i = 0; i < list.size(); ++i)
      ok = ok && s.append(i ? ", \"" : "\"") && s.append(mesh.name(list[i])) && s.append("\"");
    ok = ok && s.append("}");
  }
  ok = ok && s.append("]");
  bool any_sum = false;
  for (std::int64_t m = 0; m < mesh.ndim(); ++m) any_sum = any_sum || (attr.is_partial(m) && attr.partial_reduce_type(m) == reduce_type::sum);
  if (any_sum) {
    ok = ok && s.append(", unreduced={");
    bool first = true;
    for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
      if (!attr.is_partial(m) || attr.partial_reduce_type(m) != reduce_type::sum) continue;
      ok = ok && s.append(first ? "\"" : ", \"") && s.append(mesh.name(m)) && s.append("\"");
      first = false;
    }
    ok = ok && s.append("}");
  }
  ok = ok && s.append(">");
  if (!ok) return detail::text::too_long(op);
  return s;
}
constexpr sharding_string to_sdy(const named_mesh& mesh, const tensor_dist_attr& attr,
                                 partial_policy partial = partial_policy::reject, std::string_view mesh_symbol = "mesh") {
  return try_to_sdy(mesh, attr, partial, mesh_symbol).value();
}

}  // namespace ctspmd

#endif
