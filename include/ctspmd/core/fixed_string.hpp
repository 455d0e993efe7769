#ifndef CTSPMD_CORE_FIXED_STRING_HPP
#define CTSPMD_CORE_FIXED_STRING_HPP
/// \file `fixed_string<N>`: a string literal usable as a template argument
/// (`rules::einsum<"mk,kn->mn">`, registry names).

#include <cstddef>
#include <string_view>

namespace ctspmd {

/// A structural string of N - 1 characters (N counts the literal's terminating NUL).
template <std::size_t N>
struct fixed_string {
  char chars[N] = {};

  constexpr fixed_string(const char (&literal)[N]) noexcept {  // NOLINT: implicit from a literal by design
    for (std::size_t i = 0; i < N; ++i) chars[i] = literal[i];
  }
  static constexpr std::size_t size() noexcept { return N - 1; }
  constexpr std::string_view view() const noexcept { return {chars, N - 1}; }
  constexpr operator std::string_view() const noexcept { return view(); }  // NOLINT: a string by design
  constexpr char operator[](std::size_t i) const noexcept { return chars[i]; }

  template <std::size_t M>
  friend constexpr bool operator==(const fixed_string& a, const fixed_string<M>& b) noexcept {
    return a.view() == b.view();
  }
};

template <std::size_t N>
fixed_string(const char (&)[N]) -> fixed_string<N>;

}  // namespace ctspmd

#endif
