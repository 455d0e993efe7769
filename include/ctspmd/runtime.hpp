#ifndef CTSPMD_RUNTIME_HPP
#define CTSPMD_RUNTIME_HPP
/// \file The runtime layer: rules called by operator name, with a string-keyed attribute map
/// (run time only). The by-name table is generated from `rules::registry`; each call converts
/// the map to the rule's `attributes` and runs the same constexpr rule as the typed API.
///
/// Operands are `dist_tensor_spec`s, whose constructors have already checked them (ranks up to
/// `max_rank`, dims mappings and partial dims against the mesh, sizes >= -1); the rule checks
/// operand counts, ranks and attribute values. Every failure throws `spmd_error`.
///
/// Separate compilation: the by-name table instantiates every registered rule's by-name code,
/// which each translation unit including this header compiles again (some 20 s a unit with GCC
/// at -O3). A program of many units may define `CTSPMD_RUNTIME_SEPARATE` in all of them and,
/// in exactly one, `CTSPMD_RUNTIME_IMPLEMENTATION` too, before including this header: that one
/// compiles the table and the functions below, the others see their declarations only.

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>
#include <ctspmd/registry/attribute_reflection.hpp>
#include <ctspmd/runtime/attributes.hpp>

#if defined(CTSPMD_RUNTIME_SEPARATE) && !defined(CTSPMD_RUNTIME_IMPLEMENTATION)
#define CTSPMD_RUNTIME_DECLARATIONS_ONLY
#endif
#ifdef CTSPMD_RUNTIME_SEPARATE
#define CTSPMD_RUNTIME_INLINE
#else
#define CTSPMD_RUNTIME_INLINE inline
#endif

namespace ctspmd::runtime {

/// One operator of the by-name table.
struct rule_entry {
  std::string_view name;
  spmd_info (*forward)(std::string_view op, spec_span inputs, const attribute_map& attrs, semantics s);
  spmd_info (*backward)(std::string_view op, spec_span inputs, spec_span outputs, const attribute_map& attrs,
                        semantics s);
  std::vector<attribute_info> (*attributes)();  ///< what the rule accepts, with defaults
  operand_count inputs{0};                      ///< the rule's input_count
  operand_count outputs{0};                     ///< the rule's output_count
  std::size_t rule = 0;                         ///< its rule's index in rules::registered_rules
};

namespace detail {

/// Throws `s`'s error under the name the rule was called by.
inline void check_as(std::string_view op, const status& s) {
  if (s) return;
  error_info e = s.error();
  e.op = op;
  throw spmd_error(e);
}

// The rule writes straight into the returned spmd_info (named return value): no copy.
template <class Rule>
spmd_info forward(std::string_view op, spec_span inputs, const attribute_map& attrs, semantics s) {
  spmd_info info;
  check_as(op, Rule::try_infer_forward_into(info, inputs, to_attributes<typename Rule::attributes>(op, attrs), s));
  return info;
}
template <class Rule>
spmd_info backward(std::string_view op, spec_span inputs, spec_span outputs, const attribute_map& attrs, semantics s) {
  spmd_info info;
  check_as(op,
           Rule::try_infer_backward_into(info, inputs, outputs, to_attributes<typename Rule::attributes>(op, attrs), s));
  return info;
}

template <std::size_t I>
constexpr rule_entry make_entry() {
  using rule = rules::registered_rule<rules::registry[I].rule>;
  return {rules::registry[I].name, &forward<rule>,     &backward<rule>,          &describe_attributes<typename rule::attributes>,
          rule::input_count,       rule::output_count, rules::registry[I].rule};
}
template <std::size_t... I>
constexpr std::array<rule_entry, sizeof...(I)> make_table(std::index_sequence<I...>) {
  return {make_entry<I>()...};
}

/// How often each character occurs in a string (character values folded into 32 buckets).
struct char_counts {
  std::array<std::int32_t, 32> n{};
  explicit char_counts(std::string_view s) {
    for (char c : s) ++n[static_cast<unsigned char>(c) & 31u];
  }
};

/// A lower bound of the edit distance between `a` (of counts `a_counts`) and `b`, in linear
/// time: an edit inserts and/or deletes one character, so the distance is at least the number
/// of characters of one string that the other lacks (counting by bucket can only lower that
/// number, so it stays a lower bound).
inline std::size_t bag_distance(std::string_view a, const char_counts& a_counts, std::string_view b) {
  char_counts unmatched = a_counts;
  std::size_t matched = 0;
  for (char c : b) {
    auto& n = unmatched.n[static_cast<unsigned char>(c) & 31u];
    if (n > 0) --n, ++matched;
  }
  return std::max(a.size(), b.size()) - matched;
}

/// Edit distance between `a` and `b`, or some value above `limit` if it exceeds `limit`
/// (the row minimum never decreases, so a row above `limit` ends the computation). For
/// suggesting names close to a misspelt one: this runs against every registered name, with
/// one row of the table on the stack for the short names operators have.
inline std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
  std::array<std::size_t, 64> buffer;
  std::vector<std::size_t> heap;
  std::size_t* row = buffer.data();
  if (b.size() >= buffer.size()) {
    heap.resize(b.size() + 1);
    row = heap.data();
  }
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    std::size_t row_min = row[0];
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
      row_min = std::min(row_min, row[j]);
    }
    if (row_min > limit) return limit + 1;
  }
  return row[b.size()];
}

}  // namespace detail

#ifdef CTSPMD_RUNTIME_DECLARATIONS_ONLY
extern const std::array<rule_entry, rules::registry.size()> rule_table;
const rule_entry* find_rule(std::string_view op) noexcept;
bool has_rule(std::string_view op) noexcept;
const rule_entry& rule(std::string_view op);
spmd_info infer_forward(std::string_view op, std::span<const dist_tensor_spec> inputs, const attribute_map& attrs = {},
                        semantics s = semantics::fluid);
spmd_info infer_backward(std::string_view op, std::span<const dist_tensor_spec> inputs,
                         std::span<const dist_tensor_spec> outputs, const attribute_map& attrs = {},
                         semantics s = semantics::fluid);
#else
/// Every registered operator, sorted by name (the registry's order).
#ifdef CTSPMD_RUNTIME_SEPARATE
extern const std::array<rule_entry, rules::registry.size()> rule_table;
constexpr std::array<rule_entry, rules::registry.size()> rule_table =
    detail::make_table(std::make_index_sequence<rules::registry.size()>{});
#else
inline constexpr auto rule_table = detail::make_table(std::make_index_sequence<rules::registry.size()>{});
#endif

/// The entry of `op`, or null.
CTSPMD_RUNTIME_INLINE const rule_entry* find_rule(std::string_view op) noexcept {
  const auto it = std::lower_bound(rule_table.begin(), rule_table.end(), op,
                                   [](const rule_entry& e, std::string_view name) { return e.name < name; });
  return it != rule_table.end() && it->name == op ? &*it : nullptr;
}

/// True if a rule is registered under `op`.
CTSPMD_RUNTIME_INLINE bool has_rule(std::string_view op) noexcept { return find_rule(op) != nullptr; }

/// The entry of `op`; an unknown name is `not_found`, with the closest known names.
CTSPMD_RUNTIME_INLINE const rule_entry& rule(std::string_view op) {
  if (const auto* e = find_rule(op)) return *e;
  std::size_t best = op.size() / 3 + 2;  // farther than this is no suggestion
  std::string closest;
  const detail::char_counts op_counts(op);
  for (const auto& e : rule_table) {
    // Skip the names that cannot be close: the distance is at least the difference in length,
    // and at least the bag distance.
    const std::size_t length_gap = op.size() > e.name.size() ? op.size() - e.name.size() : e.name.size() - op.size();
    if (length_gap > best || detail::bag_distance(op, op_counts, e.name) > best) continue;
    const auto d = detail::edit_distance(op, e.name, best);
    if (d < best) {
      best = d;
      closest = std::string(e.name);
    } else if (d == best && !closest.empty()) {
      closest += ", " + std::string(e.name);
    }
  }
  throw spmd_error(error_kind::not_found, "no rule is registered for operator '" + std::string(op) + "'" +
                                              (closest.empty() ? "" : "; closest: " + closest));
}

/// Forward inference of operator `op` from its inputs, under semantics `s`.
CTSPMD_RUNTIME_INLINE spmd_info infer_forward(std::string_view op, std::span<const dist_tensor_spec> inputs,
                                              const attribute_map& attrs = {}, semantics s = semantics::fluid) {
  return rule(op).forward(op, inputs, attrs, s);
}

/// Backward inference of operator `op`: the inputs its outputs require, under semantics `s`.
CTSPMD_RUNTIME_INLINE spmd_info infer_backward(std::string_view op, std::span<const dist_tensor_spec> inputs,
                                               std::span<const dist_tensor_spec> outputs,
                                               const attribute_map& attrs = {}, semantics s = semantics::fluid) {
  return rule(op).backward(op, inputs, outputs, attrs, s);
}
#endif

}  // namespace ctspmd::runtime

#undef CTSPMD_RUNTIME_INLINE
#undef CTSPMD_RUNTIME_DECLARATIONS_ONLY

#endif
