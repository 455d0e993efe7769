#ifndef CTSPMD_NOTATION_AXES_HPP
#define CTSPMD_NOTATION_AXES_HPP
/// \file Einsum-style axis labels: one character per tensor dim, the same letter in two
/// tensors being the same logical axis. Letters are `a`-`z` and `A`-`Z`; the label `'1'`
/// marks a size-1 (broadcast) dim, which is never sharded.

#include <array>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/config.hpp>
#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>

namespace ctspmd {

/// True if `labels` holds `c`. (A loop rather than string_view::find: GCC 12 cannot
/// constant-evaluate find() on a view of a temporary, comparing its address with null.)
constexpr bool has_label(std::string_view labels, char c) noexcept {
  for (char l : labels)
    if (l == c) return true;
  return false;
}

/// The label of a size-1 / broadcast dim.
inline constexpr char broadcast_label = '1';
/// Number of distinct axis letters.
inline constexpr std::size_t axis_letter_count = 52;

namespace detail {
/// `axis_letter_index` of every char value: one load instead of two range tests, on the
/// path of every label a rule reads.
inline constexpr auto axis_letter_indices = [] {
  std::array<std::int8_t, 256> table{};
  for (int c = 0; c < 256; ++c)
    table[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c >= 'a' && c <= 'z'   ? c - 'a'
                                                                  : c >= 'A' && c <= 'Z' ? 26 + (c - 'A')
                                                                                         : -1);
  return table;
}();
}  // namespace detail

/// Index of an axis letter in [0, 52), or -1 for anything else.
constexpr int axis_letter_index(char c) noexcept {
  return detail::axis_letter_indices[static_cast<unsigned char>(c)];
}
/// True for a label a tensor dim may carry: a letter or `'1'`.
constexpr bool is_axis_label(char c) noexcept { return c == broadcast_label || axis_letter_index(c) >= 0; }

/// The axis labels of one tensor (at most max_rank of them); compares with strings.
class axes_string {
 public:
  constexpr axes_string() noexcept = default;
  constexpr axes_string(std::string_view s) : chars_(s) {}  // NOLINT: a string by design
  constexpr axes_string(const char* s) : axes_string(std::string_view(s)) {}  // NOLINT: a string by design

  constexpr std::size_t size() const noexcept { return chars_.size(); }
  constexpr bool empty() const noexcept { return chars_.empty(); }
  constexpr char operator[](std::size_t i) const { return chars_[i]; }
  constexpr char& operator[](std::size_t i) { return chars_[i]; }
  constexpr const char* begin() const noexcept { return chars_.begin(); }
  constexpr const char* end() const noexcept { return chars_.end(); }
  constexpr std::string_view view() const noexcept { return {chars_.data(), chars_.size()}; }
  constexpr operator std::string_view() const noexcept { return view(); }  // NOLINT: a string by design
  constexpr void push_back(char c) { chars_.push_back(c); }
  constexpr bool contains(char c) const noexcept { return has_label(view(), c); }

  friend constexpr bool operator==(const axes_string& a, std::string_view b) noexcept { return a.view() == b; }
  friend constexpr axes_string operator+(axes_string a, std::string_view b) {
    for (char c : b) a.push_back(c);
    return a;
  }

 private:
  static_vector<char, max_rank> chars_{};
};

/// The alphabets of Paddle's rules; their holes reserve letters for the rule's own axes.
namespace alphabets {
inline constexpr std::string_view full = "abcdefghijklmnopqrstuvwxyz";
inline constexpr std::string_view matmul = "abcdefghijlopqrstuvwxyz";       ///< no k, m, n
inline constexpr std::string_view embedding = "abcdefghilmnopqrstuvwxyz";    ///< no j, k
inline constexpr std::string_view split = "abcdefghijlmnopqrstuvwxyz";       ///< no k
inline constexpr std::string_view cross_entropy = "abcdefghijlmnopqrstuvwxyz";  ///< no k
}  // namespace alphabets

namespace detail {

/// Appends to `out` the labels `try_get_broadcast_axes` gives (or returns its error), so that
/// rules can write an operand's labels where they keep them.
constexpr status append_broadcast_axes(axes_string& out, std::int64_t tensor_ndim, std::int64_t broadcast_ndim,
                                       std::string_view alphabet) {
  constexpr std::string_view op = "get_broadcast_axes";
  if (broadcast_ndim < 0 || static_cast<std::size_t>(broadcast_ndim) > alphabet.size())
    return make_error(error_kind::invalid_argument, op, "broadcast rank {} is outside [0, {}], the alphabet's length",
                      broadcast_ndim, alphabet.size());
  if (tensor_ndim > broadcast_ndim)
    return make_error(error_kind::invalid_argument, op, "tensor rank {} exceeds the broadcast rank {}", tensor_ndim,
                      broadcast_ndim);
  if (tensor_ndim > static_cast<std::int64_t>(max_rank))
    return make_error(error_kind::invalid_argument, op, "tensor rank {} exceeds max_rank = {}", tensor_ndim, max_rank);
  for (std::int64_t i = broadcast_ndim - tensor_ndim; i < broadcast_ndim && tensor_ndim > 0; ++i)
    out.push_back(alphabet[static_cast<std::size_t>(i)]);
  return {};
}

/// For each b in [0, max_rank]: the first b letters of an alphabet followed by a fixed tail,
/// as constant strings, for rules whose labels are such letters (broadcast batch dims, then
/// the operator's own): they view their labels, `(*this)(b)` or a part of it, instead of
/// building them at each call. A b beyond the alphabet has only the letters there are.
template <std::size_t TailSize>
class letters_then {
 public:
  constexpr letters_then(std::string_view alphabet, const char (&tail)[TailSize + 1]) {
    for (std::size_t b = 0; b <= max_rank; ++b) {
      auto& r = rows_[b];
      for (std::size_t i = 0; i < b && i < alphabet.size(); ++i) r.chars[r.size++] = alphabet[i];
      for (std::size_t i = 0; i < TailSize; ++i) r.chars[r.size++] = tail[i];
    }
  }
  /// The first b letters (b <= max_rank), then the tail.
  constexpr std::string_view operator()(std::size_t b) const noexcept { return {rows_[b].chars, rows_[b].size}; }

 private:
  struct row {
    char chars[max_rank + TailSize]{};
    std::size_t size = 0;
  };
  std::array<row, max_rank + 1> rows_{};
};

}  // namespace detail

/// `get_broadcast_axes`, result-returning: the labels of a rank-`tensor_ndim` tensor
/// right-aligned in a rank-`broadcast_ndim` broadcast, i.e. the last `tensor_ndim` of the
/// first `broadcast_ndim` letters of `alphabet`.
constexpr result<axes_string> try_get_broadcast_axes(std::int64_t tensor_ndim, std::int64_t broadcast_ndim,
                                                     std::string_view alphabet) {
  axes_string out;
  CTSPMD_TRY(detail::append_broadcast_axes(out, tensor_ndim, broadcast_ndim, alphabet));
  return out;
}

/// Throwing form of `try_get_broadcast_axes`, e.g. `get_broadcast_axes(2, 4, "abcd") == "cd"`.
constexpr axes_string get_broadcast_axes(std::int64_t tensor_ndim, std::int64_t broadcast_ndim,
                                         std::string_view alphabet) {
  return try_get_broadcast_axes(tensor_ndim, broadcast_ndim, alphabet).value();
}

}  // namespace ctspmd

#endif
