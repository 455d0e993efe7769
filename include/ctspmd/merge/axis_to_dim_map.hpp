#ifndef CTSPMD_MERGE_AXIS_TO_DIM_MAP_HPP
#define CTSPMD_MERGE_AXIS_TO_DIM_MAP_HPP
/// \file `axis_to_dim_map`: the merged sharding of every axis label, label -> mesh dim.

#include <array>
#include <bit>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/notation/axes.hpp>

namespace ctspmd {

/// For each axis letter seen by a merge: -1 (replicated) or the mesh dim that shards it.
/// A fixed table over the 52 letters, so lookups are O(1) and nothing allocates; a bit per
/// letter says which have an entry, so iterating the entries visits only those. The table
/// reads -1 for a letter without an entry, and has two more slots, read for `'1'` (-1) and
/// for every other char (`not_a_label`), so that `entry` is one load.
class axis_to_dim_map {
  static_assert(axis_letter_count <= 64, "one bit per axis letter in a 64-bit word");

 public:
  constexpr axis_to_dim_map() noexcept = default;

  /// True if `label` is a letter the map has an entry for.
  constexpr bool contains(char label) const noexcept {
    const int i = axis_letter_index(label);
    return i >= 0 && (present_ >> i & 1u) != 0;
  }
  /// The mesh dim of `label` (-1 if replicated), or the error that it has no entry.
  constexpr result<std::int64_t> find(char label) const {
    if (!contains(label)) return missing(label);
    return std::int64_t{dims_[static_cast<std::size_t>(axis_letter_index(label))]};
  }
  /// The mesh dim of `label`, or `fallback` if it has no entry.
  constexpr std::int64_t value_or(char label, std::int64_t fallback) const noexcept {
    const int i = axis_letter_index(label);
    return i >= 0 && (present_ >> i & 1u) != 0 ? std::int64_t{dims_[static_cast<std::size_t>(i)]} : fallback;
  }
  /// What a char that is not an axis label reads as (`entry`).
  static constexpr std::int64_t not_a_label = -2;
  /// The mesh dim of `label`: -1 if replicated, and also for a letter without an entry
  /// (`contains` tells them apart) and for `'1'` (never sharded); `not_a_label` for a char
  /// that is not an axis label.
  constexpr std::int64_t entry(char label) const noexcept {
    return dims_[static_cast<std::size_t>(slots[static_cast<unsigned char>(label)])];
  }
  /// The mesh dim of `label`; a label without an entry is an `invalid_argument`.
  constexpr std::int64_t at(char label) const {
    if (!contains(label)) raise(missing(label));
    return dims_[static_cast<std::size_t>(axis_letter_index(label))];
  }
  /// Sets the entry of the letter `label` to `mesh_dim` (-1 or a mesh dim below max_mesh_ndim).
  constexpr void set(char label, std::int64_t mesh_dim) {
    const int i = axis_letter_index(label);
    if (i < 0)
      raise(make_error(error_kind::invalid_argument, "axis_to_dim_map", "'{c}' is not an axis letter (a-z, A-Z)", label));
    if (mesh_dim < -1 || mesh_dim >= static_cast<std::int64_t>(max_mesh_ndim))
      raise(make_error(error_kind::invalid_argument, "axis_to_dim_map", "mesh dim {} of axis '{c}' is out of range",
                       mesh_dim, label));
    dims_[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(mesh_dim);
    present_ |= std::uint64_t{1} << i;
  }
  /// One proposal of a merge (`sharding_merge_for_tensors`): the letter `label` sharded by
  /// `mesh_dim` (-1 or a mesh dim below max_mesh_ndim; neither is checked: the merge checks
  /// its input first). A letter without an entry, or replicated, takes `mesh_dim`; otherwise
  /// the entry stays. Returns the entry before (-1 if none), from which the caller knows the
  /// outcome: a conflict when both are different mesh dims.
  constexpr std::int64_t propose(char label, std::int64_t mesh_dim) noexcept {
    const std::size_t i = slots[static_cast<unsigned char>(label)];
    const std::int64_t before = dims_[i];
    if (before == -1) {
      dims_[i] = static_cast<std::int8_t>(mesh_dim);
      present_ |= std::uint64_t{1} << i;
    }
    return before;
  }
  /// Number of labels with an entry.
  constexpr std::size_t size() const noexcept { return static_cast<std::size_t>(std::popcount(present_)); }
  /// Calls `f(label, mesh_dim)` for every entry, in letter order (a-z, then A-Z); with
  /// `except`, not for the letters of those labels.
  template <class F>
  constexpr void for_each(F&& f, std::string_view except = {}) const {
    std::uint64_t skipped = 0;  // bit i: letter i is in `except`
    for (char c : except)
      if (const int i = axis_letter_index(c); i >= 0) skipped |= std::uint64_t{1} << i;
    for (std::uint64_t rest = present_ & ~skipped; rest != 0; rest &= rest - 1) {
      const auto i = static_cast<std::size_t>(std::countr_zero(rest));
      f(label_of(i), std::int64_t{dims_[i]});
    }
  }

  // Equal maps have the same entries: a letter without one keeps its initial -1 in dims_.
  friend constexpr bool operator==(const axis_to_dim_map&, const axis_to_dim_map&) = default;

 private:
  static constexpr error_info missing(char label) {
    return make_error(error_kind::invalid_argument, "axis_to_dim_map", "tensor axis '{c}' is not in the axis-to-dim map",
                      label);
  }
  static constexpr char label_of(std::size_t i) noexcept {
    return static_cast<char>(i < 26 ? 'a' + i : 'A' + (i - 26));
  }
  // The slot of every char in dims_: a letter's index, then one slot for '1', one for the rest.
  static constexpr std::size_t broadcast_slot = axis_letter_count;
  static constexpr std::size_t other_slot = axis_letter_count + 1;
  static constexpr auto slots = [] {
    std::array<std::uint8_t, 256> table{};
    for (int c = 0; c < 256; ++c) {
      const int i = axis_letter_index(static_cast<char>(c));
      table[static_cast<std::size_t>(c)] =
          static_cast<std::uint8_t>(i >= 0 ? static_cast<std::size_t>(i) : c == broadcast_label ? broadcast_slot : other_slot);
    }
    return table;
  }();
  static constexpr std::array<std::int8_t, axis_letter_count + 2> no_entries() noexcept {
    std::array<std::int8_t, axis_letter_count + 2> a{};
    for (auto& d : a) d = -1;
    a[other_slot] = not_a_label;
    return a;
  }
  std::array<std::int8_t, axis_letter_count + 2> dims_ = no_entries();  ///< -1 where there is no entry
  std::uint64_t present_ = 0;  ///< bit i: letter i has an entry
};

}  // namespace ctspmd

#endif
