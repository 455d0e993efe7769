#ifndef CTSPMD_RULES_EINSUM_HPP
#define CTSPMD_RULES_EINSUM_HPP
/// \file Einsum rules: a sharding rule from a notation such as `"bsh,hd->bsd"`.
/// `rules::einsum<"bsh,hd->bsd">` parses and validates its notation during compilation;
/// `rules::dynamic_einsum` (registered as `"einsum"`) takes it as an attribute. Both run the
/// einsum core (kit/einsum_core.hpp), as matmul and embedding do.
///
/// Forward: every input's dims mapping is merged over its labels (`merge_conflicts` as the
/// caller says; true for einsum rules). A dim of size 1 is treated as `'1'`: its sharding
/// is ignored and it is never sharded, since one element cannot be split across devices (so a
/// size-1 batch dim broadcasting against a larger one does not impose a sharding on it).
/// Each input then gets the merged mapping of its labels (-1 for a label the merge dropped),
/// and the output that of its labels. Each device multiplies and sums only over its shard of
/// a contracted label (one absent from the output), so the output is partial (sum) on the
/// mesh dims of the sharded contracted labels. Inputs that were partial come back without
/// partial status (they are made whole first).
///
/// Backward: only the output's mapping is merged (conflicts are `precondition_not_met`);
/// each input gets the output's mapping of its labels, -1 for contracted labels and size-1
/// dims. No partial status is inferred for the inputs; the output is returned unchanged.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/core/fixed_string.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/einsum_notation.hpp>
#include <ctspmd/rules/kit/einsum_core.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

namespace detail {

/// The letters of `n`'s inputs absent from its output, each once: its contracted labels.
constexpr static_vector<char, axis_letter_count> contracted_labels(const einsum_notation& n) {
  static_vector<char, axis_letter_count> out;
  for (const auto& in : n.inputs)
    for (char c : in.view())
      if (c != broadcast_label && !n.output.contains(c) && !has_label({out.data(), out.size()}, c)) out.push_back(c);
  return out;
}

/// The labels of `n`, which has `Inputs` inputs, as views of `n` and of `contracted` (its
/// `contracted_labels`).
template <std::size_t Inputs>
constexpr einsum_labels<Inputs> labels_of(const einsum_notation& n,
                                          const static_vector<char, axis_letter_count>& contracted) noexcept {
  einsum_labels<Inputs> l{{}, n.output, {contracted.data(), contracted.size()}};
  for (std::size_t i = 0; i < Inputs; ++i) l.inputs[i] = n.inputs[i];
  return l;
}

/// Reached only for a malformed notation during compilation: the diagnostic shows the
/// notation and the 0-based position of the bad character as this function's template
/// arguments (Clang: the position as its first argument), then the parser's message. (A
/// function rather than a failing static_assert, after which Clang drops the message.)
template <fixed_string Notation, std::int64_t Position>
constexpr void malformed_einsum_notation(std::int64_t position, const error_info& e) {
  (void)position;
  raise(e);
}
/// The parsed `Notation`, or a compile error (see `malformed_einsum_notation`).
template <fixed_string Notation>
constexpr einsum_notation parse_or_fail() {
  constexpr auto parsed = try_parse_einsum(Notation.view());
  if constexpr (!parsed.ok())
    malformed_einsum_notation<Notation, parsed.error().values[0]>(parsed.error().values[0], parsed.error());
  return *parsed;
}

}  // namespace detail

/// Attributes of `einsum<...>`: none (the notation is the rule).
struct einsum_attributes {};

/// A rule from a compile-time einsum notation, e.g. `einsum<"bsh,hd->bsd">`. A malformed
/// notation does not compile.
template <fixed_string Notation>
struct einsum : rule_base<einsum<Notation>, einsum_attributes> {
  static constexpr std::string_view name = "einsum";
  static constexpr einsum_notation notation = detail::parse_or_fail<Notation>();
  static constexpr operand_count input_count{notation.inputs.size()};
  static constexpr operand_count output_count{1};

  static constexpr status forward(spmd_info& info, spec_span in, const einsum_attributes&, semantics s) {
    return detail::einsum_forward(info, labels, in, /*merge_conflicts=*/true, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const einsum_attributes&,
                                   semantics s) {
    return detail::einsum_backward(info, labels, in, out, s);
  }

 private:
  static constexpr auto contracted = detail::contracted_labels(notation);
  static constexpr auto labels = detail::labels_of<notation.inputs.size()>(notation, contracted);
};

/// Attributes of `dynamic_einsum`: the notation, parsed at each call.
struct dynamic_einsum_attributes {
  std::string_view notation{};
};

/// The einsum rule with its notation as an attribute (registered as `"einsum"`), for
/// notations known only at run time.
struct dynamic_einsum : rule_base<dynamic_einsum, dynamic_einsum_attributes> {
  static constexpr std::string_view name = "einsum";
  static constexpr operand_count input_count = operand_count::at_least(1);
  static constexpr operand_count output_count{1};

  /// Per output label, its size in the inputs that carry it (a size 1 stretches to another; a
  /// `'1'` label is 1), each input of its labels' rank.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = try_parse_einsum(attrs.notation);
    if (!n) return n.error();
    if (n->inputs.size() != in.size())
      return make_error(error_kind::invalid_argument, "", "the notation has {} inputs, but the operator has {}",
                        n->inputs.size(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i)
      if (n->inputs[i].size() != in[i].shape().size())
        return make_error(error_kind::invalid_argument, "", "input {} has rank {}, but the notation gives it {} labels", i,
                          in[i].ndim(), n->inputs[i].size());
    // Each label's size: the one its inputs agree on, a size 1 stretching to another.
    const auto size_of = [&](char c) -> result<std::int64_t> {
      std::int64_t size = 1;
      for (std::size_t i = 0; i < in.size() && c != broadcast_label; ++i)
        for (std::size_t d = 0; d < n->inputs[i].size(); ++d) {
          const std::int64_t v = in[i].shape()[d];
          if (n->inputs[i][d] != c || v == 1) continue;
          if (size != 1 && size != -1 && v != -1 && v != size)
            return make_error(error_kind::invalid_argument, "", "label {c} has size {} in input {}, and {} before", c, v,
                              i, size);
          if (size == 1 || size == -1) size = v;
        }
      return size;
    };
    for (const auto& labels : n->inputs)
      for (const char c : labels.view()) CTSPMD_TRY(size_of(c));
    tensor_shape& o = out.emplace_back();
    for (const char c : n->output.view()) o.push_back(*size_of(c));
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto n = try_parse_einsum(attrs.notation);
    if (!n) return n.error();
    const auto views = input_views(*n);
    const auto contracted = detail::contracted_labels(*n);
    return detail::einsum_forward(info, std::span<const std::string_view>(views.data(), views.size()), n->output.view(),
                                  {contracted.data(), contracted.size()}, in, /*merge_conflicts=*/true, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs,
                                   semantics s) {
    const auto n = try_parse_einsum(attrs.notation);
    if (!n) return n.error();
    const auto views = input_views(*n);
    return detail::einsum_backward(info, std::span<const std::string_view>(views.data(), views.size()), n->output.view(),
                                   in, out, s);
  }

 private:
  /// The input labels of `n` as views of `n`.
  static constexpr static_vector<std::string_view, max_operands> input_views(const einsum_notation& n) {
    static_vector<std::string_view, max_operands> views;
    for (const auto& labels : n.inputs) views.push_back(labels.view());
    return views;
  }
};

}  // namespace ctspmd::rules

#endif
