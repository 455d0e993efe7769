#ifndef CTSPMD_DIST_MESH_DIM_LIST_HPP
#define CTSPMD_DIST_MESH_DIM_LIST_HPP
/// \file `mesh_dim_list`: the mesh dims that split one axis, major first, packed into one word
/// so that merges compare, copy and store them as integers.

#include <bit>
#include <cstdint>
#include <type_traits>

#include <ctspmd/core/config.hpp>
#include <ctspmd/dist/process_mesh.hpp>

namespace ctspmd {

/// An ordered list of distinct mesh dims (major first), packed in one word: the low byte is the
/// major mesh dim as a signed byte (-1, all ones, for the empty list: replicated), and entry i >= 1
/// is mesh dim + 1 in the nibble at bits [8 + 4(i - 1), 12 + 4(i - 1)), a zero nibble ending the
/// list. So a list of one mesh dim m is the word m, the empty list is 0xFF, and reading the major
/// mesh dim is one sign-extending load: what rules do for almost every dim. Two lists are equal
/// exactly when their words are. (max_mesh_ndim <= 15 keeps every mesh dim + 1 in a nibble; the
/// word is the smallest that holds a byte and max_mesh_ndim - 1 nibbles: 32 bits for the default 4.)
class mesh_dim_list {
 public:
  /// The word the entries are packed in.
  using word = std::conditional_t<max_mesh_ndim <= 2, std::uint16_t,
                                  std::conditional_t<max_mesh_ndim <= 6, std::uint32_t, std::uint64_t>>;

  constexpr mesh_dim_list() noexcept = default;
  /// The list {m}, or the empty list for m == -1.
  static constexpr mesh_dim_list single(std::int64_t m) noexcept {
    return mesh_dim_list(static_cast<word>(static_cast<std::uint8_t>(m)));
  }
  /// The list of `dims` (which must be distinct mesh dims below max_mesh_ndim).
  static constexpr mesh_dim_list of(const mesh_dims& dims) noexcept {
    mesh_dim_list l;
    for (const auto m : dims) l.push_back(m);
    return l;
  }
  static constexpr mesh_dim_list from_bits(word bits) noexcept { return mesh_dim_list(bits); }

  constexpr word bits() const noexcept { return bits_; }
  constexpr bool empty() const noexcept { return static_cast<std::uint8_t>(bits_) == 0xFFu; }
  /// True for the empty list and a list of one mesh dim (no entry after the major one).
  constexpr bool at_most_one() const noexcept { return (bits_ >> 8) == 0; }
  constexpr std::size_t size() const noexcept {
    return empty() ? 0 : 1 + (static_cast<std::size_t>(std::bit_width(static_cast<word>(bits_ >> 8))) + 3) / 4;
  }
  /// Entry i (< size()).
  constexpr std::int64_t operator[](std::size_t i) const noexcept {
    return i == 0 ? major() : static_cast<std::int64_t>((bits_ >> (8 + 4 * (i - 1))) & 0xFu) - 1;
  }
  /// The major (first) mesh dim, or -1 for the empty list.
  constexpr std::int64_t major() const noexcept { return static_cast<std::int8_t>(static_cast<std::uint8_t>(bits_)); }
  /// The last (most minor) mesh dim, or -1 for the empty list.
  constexpr std::int64_t last() const noexcept { return empty() ? -1 : (*this)[size() - 1]; }
  /// Calls `f(m)` for each mesh dim m of the list, in order.
  template <class F>
  constexpr void for_each(F f) const {
    if (empty()) return;
    f(major());
    for (word b = static_cast<word>(bits_ >> 8); b != 0; b = static_cast<word>(b >> 4))
      f(static_cast<std::int64_t>(b & 0xFu) - 1);
  }
  constexpr bool contains(std::int64_t m) const noexcept {
    bool found = false;
    for_each([&](std::int64_t e) { found = found || e == m; });
    return found;
  }
  /// A bit per mesh dim in the list.
  constexpr std::uint64_t mask() const noexcept {
    std::uint64_t out = 0;
    for_each([&](std::int64_t m) { out |= std::uint64_t{1} << m; });
    return out;
  }
  /// Appends `m` (a mesh dim below max_mesh_ndim not in the list).
  constexpr void push_back(std::int64_t m) noexcept {
    if (empty())
      bits_ = static_cast<word>(m);
    else
      bits_ = static_cast<word>(bits_ | static_cast<word>(static_cast<word>(m + 1) << (8 + 4 * (size() - 1))));
  }
  /// Drops the last entry.
  constexpr void pop_back() noexcept {
    if (at_most_one())
      bits_ = 0xFF;
    else
      bits_ = static_cast<word>(bits_ & ~(word{0xF} << (8 + 4 * (size() - 2))));
  }
  /// The list without mesh dim `m` (unchanged if absent).
  constexpr mesh_dim_list without(std::int64_t m) const noexcept {
    mesh_dim_list out;
    for_each([&](std::int64_t e) {
      if (e != m) out.push_back(e);
    });
    return out;
  }
  /// The number of shards the list splits an axis into on `mesh`: the product of its sizes.
  constexpr std::int64_t shards(const process_mesh& mesh) const {
    std::int64_t n = 1;
    for_each([&](std::int64_t m) { n *= mesh.dim_size(m); });
    return n;
  }
  /// The list as `mesh_dims`.
  constexpr mesh_dims to_mesh_dims() const {
    mesh_dims out;
    for_each([&](std::int64_t m) { out.push_back(m); });
    return out;
  }

  friend constexpr bool operator==(mesh_dim_list, mesh_dim_list) = default;

 private:
  constexpr explicit mesh_dim_list(word bits) noexcept : bits_(bits) {}
  word bits_ = 0xFF;
};

}  // namespace ctspmd

#endif
