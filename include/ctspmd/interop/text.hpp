#ifndef CTSPMD_INTEROP_TEXT_HPP
#define CTSPMD_INTEROP_TEXT_HPP
/// \file The text machinery of the sharding languages (`<ctspmd/interop.hpp>`): `sharding_string`,
/// a fixed-capacity string that printing fills in constant expressions, and the cursor the
/// parsers read with. Every parse error names its column (1-based: the first character of
/// the text is column 1) and, where there is one, the character found there.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/config.hpp>
#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/named_mesh.hpp>
#include <ctspmd/dist/process_mesh.hpp>

namespace ctspmd {

/// A string of at most `N` characters held inline: what printing a layout returns, usable in
/// constant expressions (`static_assert(to_placements(a) == "[Shard(0), Replicate()]")`).
template <std::size_t N>
class static_string {
 public:
  constexpr static_string() noexcept = default;
  static constexpr std::size_t capacity() noexcept { return N; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr std::string_view view() const noexcept { return {chars_, size_}; }
  constexpr operator std::string_view() const noexcept { return view(); }  // NOLINT: a string by design
  constexpr const char* data() const noexcept { return chars_; }
  /// Appends `s`; false (and nothing appended) if it does not fit.
  constexpr bool append(std::string_view s) noexcept {
    if (s.size() > N - size_) return false;
    for (char c : s) chars_[size_++] = c;
    return true;
  }
  /// Appends the decimal digits of `v`.
  constexpr bool append(std::int64_t v) noexcept {
    char digits[21] = {};
    std::size_t k = 0;
    std::uint64_t u = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    do digits[k++] = static_cast<char>('0' + u % 10); while ((u /= 10) != 0);
    if (v < 0) digits[k++] = '-';
    char out[21] = {};
    for (std::size_t i = 0; i < k; ++i) out[i] = digits[k - 1 - i];
    return append(std::string_view(out, k));
  }
  friend constexpr bool operator==(const static_string& a, std::string_view b) noexcept { return a.view() == b; }
  friend constexpr bool operator==(const static_string& a, const static_string& b) noexcept {
    return a.view() == b.view();
  }

 private:
  char chars_[N] = {};
  std::size_t size_ = 0;
};

/// Room for the longest text a layout prints as, in any language, with the longest names.
inline constexpr std::size_t max_sharding_text =
    128 + max_rank * (8 + max_mesh_ndim * (max_mesh_name + 4)) + 3 * max_mesh_ndim * (max_mesh_name + 48);
/// A printed layout.
using sharding_string = static_string<max_sharding_text>;

/// The three sharding languages ctspmd speaks besides its own dims mapping.
enum class sharding_language : std::uint8_t {
  placements,      ///< PyTorch DTensor placements, "[Shard(0), Replicate()]"
  partition_spec,  ///< JAX PartitionSpec, "P('dp', None)"
  sdy              ///< OpenXLA Shardy, "#sdy.sharding<@mesh, [{\"dp\"}, {}]>"
};

/// The name of a language as the JSON tool's field says it ("placements", "partition_spec", "sdy").
constexpr std::string_view to_string(sharding_language l) noexcept {
  switch (l) {
    case sharding_language::placements: return "placements";
    case sharding_language::partition_spec: return "partition_spec";
    case sharding_language::sdy: return "sdy";
  }
  return "unknown";
}

namespace detail::text {

/// A reading position in a text; errors are built with its column.
struct cursor {
  std::string_view text;
  std::string_view op;  ///< the language, as errors name it
  std::size_t pos = 0;

  constexpr void skip_space() noexcept {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')) ++pos;
  }
  constexpr bool at_end() noexcept {
    skip_space();
    return pos >= text.size();
  }
  /// The next character after spaces, or '\0' at the end.
  constexpr char peek() noexcept { return at_end() ? '\0' : text[pos]; }
  /// Consumes `c` (after spaces) if it is next.
  constexpr bool eat(char c) noexcept {
    if (peek() != c) return false;
    ++pos;
    return true;
  }
  /// Consumes the word `w` (after spaces) if it is next and not followed by a name character.
  constexpr bool eat_word(std::string_view w) noexcept {
    skip_space();
    if (text.substr(pos, w.size()) != w) return false;
    const std::size_t end = pos + w.size();
    if (end < text.size() && named_mesh::is_name_char(text[end])) return false;
    pos = end;
    return true;
  }
  /// Consumes `s` exactly (after spaces) if it is next.
  constexpr bool eat_text(std::string_view s) noexcept {
    skip_space();
    if (text.substr(pos, s.size()) != s) return false;
    pos += s.size();
    return true;
  }
  /// The 1-based column of the next character (after spaces).
  constexpr std::int64_t column() noexcept {
    skip_space();
    return static_cast<std::int64_t>(pos) + 1;
  }
  /// "column {}: expected <what>, found '{c}'" (or "found the end of the text") at the next character.
  constexpr error_info expected(const char* at_char, const char* at_end_of_text) noexcept {
    const std::int64_t col = column();
    if (pos >= text.size()) return make_error(error_kind::invalid_argument, op, at_end_of_text, col);
    return make_error(error_kind::invalid_argument, op, at_char, col, text[pos]);
  }
  /// An identifier ([A-Za-z0-9_]+) after spaces, or empty.
  constexpr std::string_view identifier() noexcept {
    skip_space();
    std::size_t end = pos;
    while (end < text.size() && named_mesh::is_name_char(text[end])) ++end;
    const auto out = text.substr(pos, end - pos);
    pos = end;
    return out;
  }
  /// A decimal integer (optionally negative) after spaces; false if none or out of range.
  constexpr bool integer(std::int64_t& out) noexcept {
    skip_space();
    std::size_t p = pos;
    const bool negative = p < text.size() && text[p] == '-';
    if (negative) ++p;
    if (p >= text.size() || text[p] < '0' || text[p] > '9') return false;
    std::int64_t v = 0;
    for (; p < text.size() && text[p] >= '0' && text[p] <= '9'; ++p) {
      if (v > (INT64_MAX - (text[p] - '0')) / 10) return false;
      v = v * 10 + (text[p] - '0');
    }
    out = negative ? -v : v;
    pos = p;
    return true;
  }
  /// A quoted string ('...' or "..."): its contents in `out`. Returns an error for a missing
  /// closing quote; ok with `found == false` if no quote is next.
  constexpr status quoted(std::string_view& out, bool& found, bool single_allowed = true) noexcept {
    skip_space();
    found = false;
    if (pos >= text.size() || !(text[pos] == '"' || (single_allowed && text[pos] == '\''))) return {};
    const char q = text[pos];
    const std::size_t start = pos;
    std::size_t end = pos + 1;
    while (end < text.size() && text[end] != q) ++end;
    if (end >= text.size())
      return make_error(error_kind::invalid_argument, op, "column {}: the quote opened here is never closed",
                        static_cast<std::int64_t>(start) + 1);
    out = text.substr(start + 1, end - start - 1);
    found = true;
    pos = end + 1;
    return {};
  }
};

/// The error of a mesh dim name that the mesh does not have, or of a mesh without names.
constexpr error_info unknown_name(std::string_view op, std::int64_t column, const named_mesh& mesh) {
  if (!mesh.has_names())
    return make_error(error_kind::invalid_argument, op,
                      "column {}: a mesh axis name, but the mesh's dims have no names (give a named_mesh, or "
                      "\"mesh_names\" to the tool)",
                      column);
  return make_error(error_kind::invalid_argument, op, "column {}: no dim of the mesh ({} dims) has this name", column,
                    mesh.ndim());
}

/// Looks up a name of the text at `column`; also rejects a name already used (`seen` holds a
/// bit per mesh dim used so far, and gets this one's).
constexpr result<std::int64_t> lookup(std::string_view op, std::int64_t column, std::string_view name,
                                      const named_mesh& mesh, std::uint64_t& seen) {
  const std::int64_t m = mesh.find(name);
  if (m < 0) return unknown_name(op, column, mesh);
  const std::uint64_t bit = std::uint64_t{1} << m;
  if ((seen & bit) != 0)
    return make_error(error_kind::invalid_argument, op, "column {}: mesh dim {} is named a second time", column, m);
  seen |= bit;
  return m;
}

/// The print error of a text longer than `sharding_string` holds (cannot happen with valid names).
constexpr error_info too_long(std::string_view op) {
  return make_error(error_kind::invalid_argument, op, "the text exceeds {} characters", max_sharding_text);
}

}  // namespace detail::text
}  // namespace ctspmd

#endif
