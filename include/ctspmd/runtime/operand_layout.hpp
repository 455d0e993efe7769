#ifndef CTSPMD_RUNTIME_OPERAND_LAYOUT_HPP
#define CTSPMD_RUNTIME_OPERAND_LAYOUT_HPP
/// \file An operand's layout as a by-name request writes it (run time only): ctspmd's dims
/// mapping, or the text of one of the sharding languages (`<ctspmd/interop.hpp>`), in one form
/// for all the operands of a request, which the answer uses too. The steps of the request reader
/// that `ctspmd-infer` and the Python module share (`tools/requests/`), apart from its JSON.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/named_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/interop.hpp>

namespace ctspmd::runtime {

/// The fields that give an operand's layout, one per form: ctspmd's own dims mapping, then the
/// sharding languages in `sharding_language` order.
inline constexpr std::array<std::string_view, 4> layout_keys = {"dims_mapping", "placements", "partition_spec", "sdy"};

/// The language of `layout_keys[key]`; none for the dims mapping.
constexpr std::optional<sharding_language> language_of_key(std::size_t key) noexcept {
  if (key == 0) return std::nullopt;
  return static_cast<sharding_language>(key - 1);
}

/// The layout form of a request: fixed by the first operand that gives a layout, the same for
/// every other. Answers use it.
struct layout_form {
  std::optional<sharding_language> language;  ///< none: dims_mapping
  std::string first;                          ///< the operand that fixed the form, for errors
  bool fixed = false;
  std::string mesh_symbol = "mesh";  ///< Shardy: the first operand's @symbol

  /// Operand `what` gives its layout as `layout_keys[key]`: fixes the form, or checks that it is
  /// the form already fixed (`invalid_argument` otherwise).
  void use(std::size_t key, const std::string& what) {
    const auto l = language_of_key(key);
    if (fixed && language != l)
      throw spmd_error(error_kind::invalid_argument,
                       what + " gives \"" + std::string(layout_keys[key]) + "\", but " + first + " gave \"" +
                           std::string(layout_keys[language ? static_cast<std::size_t>(*language) + 1 : 0]) +
                           "\": a request uses one layout form for all its operands");
    if (!fixed) language = l, first = what, fixed = true;
  }
};

/// Which of `layout_keys` operand `what` gives (`has(key)` says whether it gives `key`), or none;
/// two are an `invalid_argument`.
template <class Has>
std::optional<std::size_t> layout_key(const Has& has, const std::string& what) {
  std::optional<std::size_t> key;
  for (std::size_t k = 0; k < layout_keys.size(); ++k) {
    if (!has(layout_keys[k])) continue;
    if (key)
      throw spmd_error(error_kind::invalid_argument, what + " gives both \"" + std::string(layout_keys[*key]) +
                                                         "\" and \"" + std::string(layout_keys[k]) +
                                                         "\": one layout per operand");
    key = k;
  }
  return key;
}

/// The dist attr of operand `what`, of rank `rank`, whose layout is `text` in `language` on
/// `mesh`. `partial_given`: the operand gives "partial" or "partial_reduce" too, which
/// placements say themselves. The operand that fixed a Shardy form fixes its @symbol.
inline tensor_dist_attr attr_from_text(sharding_language language, std::string_view text, std::size_t rank,
                                       const named_mesh& mesh, bool partial_given, layout_form& form,
                                       const std::string& what) {
  if (language == sharding_language::placements && partial_given)
    throw spmd_error(error_kind::invalid_argument,
                     what + " gives \"partial\" beside \"placements\", which say partial themselves (Partial())");
  if (language == sharding_language::sdy && form.first == what) {
    if (const auto parsed = try_parse_sdy(text)) form.mesh_symbol = std::string(parsed->mesh_symbol);
  }
  return try_from_text(language, mesh, text, rank).value();
}

/// Runs `f()`; an `spmd_error` whose message does not name operand `what` gets its name in front
/// ("inputs[0]: dist_tensor_spec: ...").
template <class F>
decltype(auto) naming_operand(const std::string& what, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const spmd_error& e) {
    const std::string_view message = e.what();
    if (message.find(what) != std::string_view::npos) throw;
    throw spmd_error(e.kind(), what + ": " + std::string(message));
  }
}

/// An answer's operand in a sharding language: the canonical text, and whether the partial
/// status is listed beside it ("partial", "partial_reduce"): always for a PartitionSpec, which
/// cannot say partial; for Shardy, which says partial sums as unreduced axes, when one is not a
/// sum; never for placements (`Partial('max')`).
struct text_answer {
  sharding_string text;
  bool partial_beside = false;
};

/// `attr` (on `mesh`) as an answer in `form`'s language (which must have one) writes it.
inline text_answer to_text_answer(const tensor_dist_attr& attr, const named_mesh& mesh, const layout_form& form) {
  const auto language = form.language.value();
  bool sums_only = true;
  for (auto m : attr.partial_dims()) sums_only = sums_only && attr.partial_reduce_type(m) == reduce_type::sum;
  return {try_to_text(language, mesh, attr, partial_policy::omit, form.mesh_symbol).value(),
          language == sharding_language::partition_spec || (language == sharding_language::sdy && !sums_only)};
}

}  // namespace ctspmd::runtime

#endif
