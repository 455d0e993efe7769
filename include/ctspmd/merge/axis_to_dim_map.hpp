#ifndef CTSPMD_MERGE_AXIS_TO_DIM_MAP_HPP
#define CTSPMD_MERGE_AXIS_TO_DIM_MAP_HPP
/// \file `axis_to_dim_map`: the merged sharding of every axis label, label -> mesh dims.

#include <array>
#include <bit>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/mesh_dim_list.hpp>
#include <ctspmd/notation/axes.hpp>

namespace ctspmd {

/// For each axis letter seen by a merge, the mesh dims that shard it (major first; empty:
/// replicated). A fixed table over the 52 letters, so lookups are O(1) and nothing allocates;
/// a bit per letter says which have an entry, so iterating the entries visits only those. The
/// table reads empty for a letter without an entry, and has two more slots, read for `'1'`
/// (always empty) and for every other char.
///
/// The flat accessors (`at`, `find`, `value_or`, `entry`, `set` and `propose` with one mesh
/// dim) speak of one mesh dim per axis, as Paddle's map does; `mesh_dims_of`, `list` and the
/// `mesh_dim_list` overloads speak of co-shard lists.
class axis_to_dim_map {
  static_assert(axis_letter_count <= 64, "one bit per axis letter in a 64-bit word");

 public:
  constexpr axis_to_dim_map() noexcept = default;

  /// True if `label` is a letter the map has an entry for.
  constexpr bool contains(char label) const noexcept {
    const int i = axis_letter_index(label);
    return i >= 0 && (present_ >> i & 1u) != 0;
  }
  /// The mesh dim of `label` (-1 if replicated), or the error that it has no entry or is split
  /// over several mesh dims.
  constexpr result<std::int64_t> find(char label) const {
    if (!contains(label)) return missing(label);
    const mesh_dim_list l = list(label);
    if (l.size() > 1) return co_sharded(label);
    return l.major();
  }
  /// The (major) mesh dim of `label`, or `fallback` if it has no entry.
  constexpr std::int64_t value_or(char label, std::int64_t fallback) const noexcept {
    return contains(label) ? list(label).major() : fallback;
  }
  /// What a char that is not an axis label reads as (`entry`).
  static constexpr std::int64_t not_a_label = -2;
  /// The (major) mesh dim of `label`: -1 if replicated, and also for a letter without an entry
  /// (`contains` tells them apart) and for `'1'` (never sharded); `not_a_label` for a char that
  /// is not an axis label.
  constexpr std::int64_t entry(char label) const noexcept {
    return copy(lists_[slots[static_cast<unsigned char>(label)]]).major();  // `invalid` reads not_a_label
  }
  /// The mesh dim of `label`; a label without an entry, or split over several mesh dims, is an
  /// `invalid_argument`.
  constexpr std::int64_t at(char label) const { return find(label).value(); }
  /// The mesh dims of `label`, major first; a label without an entry is an `invalid_argument`.
  constexpr mesh_dims mesh_dims_of(char label) const {
    if (!contains(label)) raise(missing(label));
    return list(label).to_mesh_dims();
  }
  /// The mesh dims of `label`: empty for a letter without an entry, for `'1'` and for a char
  /// that is not a label.
  constexpr mesh_dim_list list(char label) const noexcept {
    const std::size_t slot = slots[static_cast<unsigned char>(label)];
    return slot == other_slot ? mesh_dim_list{} : copy(lists_[slot]);
  }
  /// What `list_or_invalid` reads for a char that is not an axis label (a list whose major mesh
  /// dim is `not_a_label`: no list can hold it).
  static constexpr mesh_dim_list invalid = mesh_dim_list::from_bits(static_cast<std::uint8_t>(not_a_label));
  /// `list(label)`, or `invalid` for a char that is not an axis label: one load.
  constexpr mesh_dim_list list_or_invalid(char label) const noexcept {
    return copy(lists_[slots[static_cast<unsigned char>(label)]]);
  }

  /// Sets the entry of the letter `label` to `mesh_dim` (-1 or a mesh dim below max_mesh_ndim).
  constexpr void set(char label, std::int64_t mesh_dim) {
    if (mesh_dim < -1 || mesh_dim >= static_cast<std::int64_t>(max_mesh_ndim))
      raise(make_error(error_kind::invalid_argument, "axis_to_dim_map", "mesh dim {} of axis '{c}' is out of range",
                       mesh_dim, label));
    set(label, mesh_dim_list::single(mesh_dim));
  }
  /// Sets the entry of the letter `label` to the list `dims`.
  constexpr void set(char label, mesh_dim_list dims) {
    const int i = axis_letter_index(label);
    if (i < 0)
      raise(make_error(error_kind::invalid_argument, "axis_to_dim_map", "'{c}' is not an axis letter (a-z, A-Z)", label));
    lists_[static_cast<std::size_t>(i)] = dims.bits();
    present_ |= std::uint64_t{1} << i;
  }
  /// One proposal of a merge: the axis `label` (a letter or '1', unchecked) sharded by `dims`. An
  /// axis without an entry, or replicated, takes `dims` (and gets an entry); otherwise the entry
  /// stays. Returns the entry before (empty if none), from which the caller knows the outcome:
  /// a conflict when both are different non-empty lists.
  constexpr mesh_dim_list propose(char label, mesh_dim_list dims) noexcept {
    const std::size_t i = slots[static_cast<unsigned char>(label)];
    const mesh_dim_list before = copy(lists_[i]);
    if (before.empty() && i < axis_letter_count) {
      lists_[i] = dims.bits();
      present_ |= std::uint64_t{1} << i;
    }
    return before;
  }
  /// `propose` with one mesh dim (-1: replicated); returns the (major) mesh dim before.
  constexpr std::int64_t propose(char label, std::int64_t mesh_dim) noexcept {
    return propose(label, mesh_dim_list::single(mesh_dim)).major();
  }
  /// Number of labels with an entry.
  constexpr std::size_t size() const noexcept { return static_cast<std::size_t>(std::popcount(present_)); }
  /// Calls `f(label, dims)` for every entry, in letter order (a-z, then A-Z), `dims` being a
  /// `mesh_dim_list` if `f` takes one and the (major) mesh dim otherwise; with `except`, not for
  /// the letters of those labels.
  template <class F>
  constexpr void for_each(F&& f, std::string_view except = {}) const {
    std::uint64_t skipped = 0;  // bit i: letter i is in `except`
    for (char c : except)
      if (const int i = axis_letter_index(c); i >= 0) skipped |= std::uint64_t{1} << i;
    for (std::uint64_t rest = present_ & ~skipped; rest != 0; rest &= rest - 1) {
      const auto i = static_cast<std::size_t>(std::countr_zero(rest));
      if constexpr (std::is_invocable_v<F&, char, mesh_dim_list>)
        f(label_of(i), copy(lists_[i]));
      else
        f(label_of(i), copy(lists_[i]).major());
    }
  }
  /// The label whose entry holds mesh dim `m`, or 0 if none.
  constexpr char label_of_mesh_dim(std::int64_t m) const noexcept {
    for (std::uint64_t rest = present_; rest != 0; rest &= rest - 1) {
      const auto i = static_cast<std::size_t>(std::countr_zero(rest));
      if (copy(lists_[i]).contains(m)) return label_of(i);
    }
    return 0;
  }

  // Equal maps have the same entries: a letter without one keeps its empty list.
  friend constexpr bool operator==(const axis_to_dim_map&, const axis_to_dim_map&) = default;

 private:
  // The lists are kept as their bits: GCC 12 rejects reading an element of a constexpr map's
  // std::array of class objects that the map never wrote ("modification of ... is not a
  // constant expression"), as if reading value-initialised it anew.
  static constexpr mesh_dim_list copy(mesh_dim_list::word bits) noexcept { return mesh_dim_list::from_bits(bits); }
  static constexpr error_info missing(char label) {
    return make_error(error_kind::invalid_argument, "axis_to_dim_map", "tensor axis '{c}' is not in the axis-to-dim map",
                      label);
  }
  static constexpr error_info co_sharded(char label) {
    return make_error(error_kind::invalid_argument, "axis_to_dim_map",
                      "tensor axis '{c}' is split over several mesh dims: use mesh_dims_of", label);
  }
  static constexpr char label_of(std::size_t i) noexcept {
    return static_cast<char>(i < 26 ? 'a' + i : 'A' + (i - 26));
  }
  // The slot of every char in lists_: a letter's index, then one slot for '1', one for the rest.
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
  static constexpr std::array<mesh_dim_list::word, axis_letter_count + 2> no_entries() noexcept {
    std::array<mesh_dim_list::word, axis_letter_count + 2> a{};
    for (auto& w : a) w = mesh_dim_list().bits();
    a[other_slot] = invalid.bits();
    return a;
  }
  /// The lists' bits: empty where there is no entry, and `invalid` in the slot of non-labels.
  std::array<mesh_dim_list::word, axis_letter_count + 2> lists_ = no_entries();
  std::uint64_t present_ = 0;  ///< bit i: letter i has an entry
};

}  // namespace ctspmd

#endif
