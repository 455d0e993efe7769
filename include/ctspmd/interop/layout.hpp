#ifndef CTSPMD_INTEROP_LAYOUT_HPP
#define CTSPMD_INTEROP_LAYOUT_HPP
/// \file `layout_text`: a tensor's layout written in one of the sharding languages, resolved
/// against a mesh and the tensor's rank where the tensor is declared; the language-generic
/// conversions; and the compile-time literals.
///
/// Where a layout is taken:
/// - `dist_tensor_spec({4096, 4096}, placements(mesh, "[Replicate(), Shard(0)]"))` (rules);
/// - `p.tensor("w", {4096, 4096}, partition_spec("P(None, 'mp')"))` in a plan (the plan's
///   mesh, a `named_mesh` for the named languages, resolves it);
/// - literals, checked while compiling (a malformed one does not compile, and the diagnostic
///   shows the message with its column): `"[Replicate(), Shard(0)]"_placements`,
///   `"P(None, 'mp')"_pspec`, `R"(#sdy.sharding<@mesh, [{}, {"mp"}]>)"_sdy`, in namespace
///   `ctspmd::literals`; `.on(mesh)` binds one to a mesh for a `dist_tensor_spec`.

#include <cstddef>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/fixed_string.hpp>
#include <ctspmd/dist/named_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/interop/dtensor.hpp>
#include <ctspmd/interop/partition_spec.hpp>
#include <ctspmd/interop/shardy.hpp>
#include <ctspmd/interop/text.hpp>

namespace ctspmd {

/// Checks the syntax of `text` in `language` (no mesh needed).
constexpr status check_syntax(sharding_language language, std::string_view text) {
  switch (language) {
    case sharding_language::placements: CTSPMD_TRY(try_parse_placements(text)); return {};
    case sharding_language::partition_spec: CTSPMD_TRY(try_parse_partition_spec(text)); return {};
    case sharding_language::sdy: CTSPMD_TRY(try_parse_sdy(text)); return {};
  }
  return make_error(error_kind::invalid_argument, "sharding", "unknown sharding language");
}

/// The dist attr that `text`, in `language`, gives a tensor of rank `rank` on `mesh`.
constexpr result<tensor_dist_attr> try_from_text(sharding_language language, const named_mesh& mesh, std::string_view text,
                                                 std::size_t rank) {
  switch (language) {
    case sharding_language::placements: return try_from_placements(mesh, text, rank);
    case sharding_language::partition_spec: return try_from_partition_spec(mesh, text, rank);
    case sharding_language::sdy: return try_from_sdy(mesh, text, rank);
  }
  return make_error(error_kind::invalid_argument, "sharding", "unknown sharding language");
}
constexpr tensor_dist_attr from_text(sharding_language language, const named_mesh& mesh, std::string_view text,
                                     std::size_t rank) {
  return try_from_text(language, mesh, text, rank).value();
}

/// `attr` (on `mesh`, which gives the names) written in `language`.
constexpr result<sharding_string> try_to_text(sharding_language language, const named_mesh& mesh,
                                              const tensor_dist_attr& attr, partial_policy partial = partial_policy::reject,
                                              std::string_view mesh_symbol = "mesh") {
  switch (language) {
    case sharding_language::placements:
      if (!(attr.process_mesh() == mesh.mesh()))
        return make_error(error_kind::invalid_argument, "placements", "the attr's mesh ({} dims) is not the given mesh ({} dims)",
                          attr.process_mesh().ndim(), mesh.ndim());
      return try_to_placements(attr);
    case sharding_language::partition_spec: return try_to_partition_spec(mesh, attr, partial);
    case sharding_language::sdy: return try_to_sdy(mesh, attr, partial, mesh_symbol);
  }
  return make_error(error_kind::invalid_argument, "sharding", "unknown sharding language");
}
constexpr sharding_string to_text(sharding_language language, const named_mesh& mesh, const tensor_dist_attr& attr,
                                  partial_policy partial = partial_policy::reject, std::string_view mesh_symbol = "mesh") {
  return try_to_text(language, mesh, attr, partial, mesh_symbol).value();
}

/// A layout as text in one of the languages, with the mesh it refers to if it is bound to one.
class layout_text {
 public:
  constexpr layout_text(sharding_language language, std::string_view text) noexcept : language_(language), text_(text) {}
  constexpr layout_text(sharding_language language, std::string_view text, const named_mesh& mesh) noexcept
      : language_(language), text_(text), mesh_(mesh), bound_(true) {}

  constexpr sharding_language language() const noexcept { return language_; }
  constexpr std::string_view text() const noexcept { return text_; }
  constexpr bool bound() const noexcept { return bound_; }
  /// This layout on `mesh`.
  constexpr layout_text on(const named_mesh& mesh) const noexcept { return {language_, text_, mesh}; }
  constexpr layout_text on(const process_mesh& mesh) const noexcept { return on(named_mesh(mesh)); }

  /// The dist attr of a tensor of rank `rank`: on the bound mesh, else on `context` (a plan's mesh).
  constexpr result<tensor_dist_attr> try_resolve(const named_mesh& context, std::size_t rank) const {
    return try_from_text(language_, bound_ ? mesh_ : context, text_, rank);
  }
  constexpr tensor_dist_attr resolve(const named_mesh& context, std::size_t rank) const {
    return try_resolve(context, rank).value();
  }
  /// The dist attr of a tensor of rank `rank` on the bound mesh (what `dist_tensor_spec` calls).
  constexpr tensor_dist_attr resolve(std::size_t rank) const {
    if (!bound_)
      raise(make_error(error_kind::invalid_argument, to_string(language_),
                       "the layout is not bound to a mesh: write placements(mesh, text) or literal.on(mesh)"));
    return try_resolve(mesh_, rank).value();
  }

 private:
  sharding_language language_;
  std::string_view text_;
  named_mesh mesh_{};
  bool bound_ = false;
};

/// DTensor placements text, resolved on the mesh where the tensor is declared.
constexpr layout_text placements(std::string_view text) noexcept { return {sharding_language::placements, text}; }
constexpr layout_text placements(const named_mesh& mesh, std::string_view text) noexcept {
  return {sharding_language::placements, text, mesh};
}
constexpr layout_text placements(const process_mesh& mesh, std::string_view text) noexcept {
  return {sharding_language::placements, text, named_mesh(mesh)};
}
/// JAX PartitionSpec text.
constexpr layout_text partition_spec(std::string_view text) noexcept { return {sharding_language::partition_spec, text}; }
constexpr layout_text partition_spec(const named_mesh& mesh, std::string_view text) noexcept {
  return {sharding_language::partition_spec, text, mesh};
}
/// Shardy sharding text.
constexpr layout_text sdy(std::string_view text) noexcept { return {sharding_language::sdy, text}; }
constexpr layout_text sdy(const named_mesh& mesh, std::string_view text) noexcept { return {sharding_language::sdy, text, mesh}; }

namespace detail {
template <sharding_language Language, fixed_string Text>
consteval layout_text checked_literal() {
  check_syntax(Language, Text.view()).check();  // a malformed literal stops compilation here
  return {Language, Text.view()};
}
}  // namespace detail

namespace literals {
/// `"[Shard(0), Replicate()]"_placements`: DTensor placements, syntax checked while compiling.
template <fixed_string Text>
consteval layout_text operator""_placements() {
  return detail::checked_literal<sharding_language::placements, Text>();
}
/// `"P('dp', None)"_pspec`: a JAX PartitionSpec, syntax checked while compiling.
template <fixed_string Text>
consteval layout_text operator""_pspec() {
  return detail::checked_literal<sharding_language::partition_spec, Text>();
}
/// `R"(#sdy.sharding<@mesh, [{"dp"}, {}]>)"_sdy`: a Shardy sharding, syntax checked while compiling.
template <fixed_string Text>
consteval layout_text operator""_sdy() {
  return detail::checked_literal<sharding_language::sdy, Text>();
}
}  // namespace literals

}  // namespace ctspmd

#endif
