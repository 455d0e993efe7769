#ifndef CTSPMD_CORE_SATURATING_HPP
#define CTSPMD_CORE_SATURATING_HPP
/// \file Integer arithmetic that saturates at int64's bounds instead of overflowing: sizes,
/// bytes and FLOPs of huge (or hostile) plans stay defined, and compare as "at least this".

#include <cstdint>
#include <limits>

namespace ctspmd::detail {

/// a * b for a, b >= 0, or int64's largest value if that overflows.
constexpr std::int64_t saturating_product(std::int64_t a, std::int64_t b) noexcept {
  return b != 0 && a > std::numeric_limits<std::int64_t>::max() / b ? std::numeric_limits<std::int64_t>::max() : a * b;
}

/// a + b, or int64's largest (smallest) value if that overflows.
constexpr std::int64_t saturating_sum(std::int64_t a, std::int64_t b) noexcept {
  constexpr std::int64_t most = std::numeric_limits<std::int64_t>::max(), least = std::numeric_limits<std::int64_t>::min();
  if (b > 0 && a > most - b) return most;
  if (b < 0 && a < least - b) return least;
  return a + b;
}

}  // namespace ctspmd::detail

#endif
