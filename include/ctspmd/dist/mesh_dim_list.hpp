#ifndef CTSPMD_DIST_MESH_DIM_LIST_HPP
#define CTSPMD_DIST_MESH_DIM_LIST_HPP
/// \file `mesh_dim_list`: the mesh dims that split one axis, major first, packed into one word
/// so that merges compare, copy and store them as integers.

#include <cstdint>

#include <ctspmd/core/config.hpp>
#include <ctspmd/dist/process_mesh.hpp>

namespace ctspmd {

/// An ordered list of distinct mesh dims (major first): entry i is stored as mesh dim + 1 in
/// bits [4i, 4i + 4), and the first zero nibble ends the list, so the empty list (replicated) is
/// 0 and a one-entry list {m} is m + 1. Two lists are equal exactly when their words are.
/// (max_mesh_ndim <= 15 keeps every mesh dim + 1 in a nibble and every list in 64 bits.)
class mesh_dim_list {
 public:
  constexpr mesh_dim_list() noexcept = default;
  /// The list {m}, or the empty list for m == -1.
  static constexpr mesh_dim_list single(std::int64_t m) noexcept {
    return mesh_dim_list(m >= 0 ? static_cast<std::uint64_t>(m + 1) : 0u);
  }
  /// The list of `dims` (which must be distinct mesh dims below max_mesh_ndim).
  static constexpr mesh_dim_list of(const mesh_dims& dims) noexcept {
    mesh_dim_list l;
    for (const auto m : dims) l.push_back(m);
    return l;
  }
  static constexpr mesh_dim_list from_bits(std::uint64_t bits) noexcept { return mesh_dim_list(bits); }

  constexpr std::uint64_t bits() const noexcept { return bits_; }
  constexpr bool empty() const noexcept { return bits_ == 0; }
  constexpr std::size_t size() const noexcept {
    std::size_t n = 0;
    for (std::uint64_t b = bits_; b != 0; b >>= 4) ++n;
    return n;
  }
  /// Entry i (< size()).
  constexpr std::int64_t operator[](std::size_t i) const noexcept {
    return static_cast<std::int64_t>((bits_ >> (4 * i)) & 0xFu) - 1;
  }
  /// The major (first) mesh dim, or -1 for the empty list.
  constexpr std::int64_t major() const noexcept { return static_cast<std::int64_t>(bits_ & 0xFu) - 1; }
  /// The last (most minor) mesh dim, or -1 for the empty list.
  constexpr std::int64_t last() const noexcept { return empty() ? -1 : (*this)[size() - 1]; }
  constexpr bool contains(std::int64_t m) const noexcept {
    for (std::uint64_t b = bits_; b != 0; b >>= 4)
      if (static_cast<std::int64_t>(b & 0xFu) - 1 == m) return true;
    return false;
  }
  /// A bit per mesh dim in the list.
  constexpr std::uint64_t mask() const noexcept {
    std::uint64_t out = 0;
    for (std::uint64_t b = bits_; b != 0; b >>= 4) out |= std::uint64_t{1} << ((b & 0xFu) - 1);
    return out;
  }
  /// Appends `m` (a mesh dim below max_mesh_ndim not in the list).
  constexpr void push_back(std::int64_t m) noexcept { bits_ |= static_cast<std::uint64_t>(m + 1) << (4 * size()); }
  /// Drops the last entry.
  constexpr void pop_back() noexcept {
    if (!empty()) bits_ &= ~(std::uint64_t{0xF} << (4 * (size() - 1)));
  }
  /// The list without mesh dim `m` (unchanged if absent).
  constexpr mesh_dim_list without(std::int64_t m) const noexcept {
    mesh_dim_list out;
    for (std::size_t i = 0; i < size(); ++i)
      if ((*this)[i] != m) out.push_back((*this)[i]);
    return out;
  }
  /// The number of shards the list splits an axis into on `mesh`: the product of its sizes.
  constexpr std::int64_t shards(const process_mesh& mesh) const {
    std::int64_t n = 1;
    for (std::size_t i = 0; i < size(); ++i) n *= mesh.dim_size((*this)[i]);
    return n;
  }
  /// The list as `mesh_dims`.
  constexpr mesh_dims to_mesh_dims() const {
    mesh_dims out;
    for (std::size_t i = 0; i < size(); ++i) out.push_back((*this)[i]);
    return out;
  }

  friend constexpr bool operator==(mesh_dim_list, mesh_dim_list) = default;

 private:
  constexpr explicit mesh_dim_list(std::uint64_t bits) noexcept : bits_(bits) {}
  std::uint64_t bits_ = 0;
};

}  // namespace ctspmd

#endif
