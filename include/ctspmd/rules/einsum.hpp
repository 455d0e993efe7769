#ifndef CTSPMD_RULES_EINSUM_HPP
#define CTSPMD_RULES_EINSUM_HPP
/// \file Einsum rules: a sharding rule from a notation such as `"bsh,hd->bsd"`.
/// `rules::einsum<"bsh,hd->bsd">` parses and validates its notation during compilation;
/// `rules::dynamic_einsum` (registered as `"einsum"`) takes it as an attribute. matmul and
/// embedding are built on the same functions.
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
#include <ctspmd/rules/kit.hpp>
#include <ctspmd/rules/rule_base.hpp>

namespace ctspmd::rules {

namespace detail {

/// An einsum's labels as the rules read them: each of its `Inputs` inputs', then the
/// output's, as views (of a parsed notation, which must outlive them, or of constant
/// strings), so that a rule whose labels follow from its operands' ranks views them instead
/// of building a notation. The number of inputs is a constant, so the loops over them are
/// unrolled; a notation parsed at run time is read through `std::dynamic_extent` spans.
template <std::size_t Inputs>
struct einsum_labels {
  std::array<std::string_view, Inputs> inputs{};
  std::string_view output{};
  std::string_view contracted{};  ///< the inputs' letters absent from the output
};

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

/// Checks that `specs` match `labels` one to one: count and ranks.
template <std::size_t N>
constexpr status check_operands(std::span<const std::string_view, N> labels, spec_span specs, bool outputs = false) {
  if (specs.size() != labels.size())
    return make_error(error_kind::invalid_argument, "",
                      outputs ? (labels.size() == 1 ? "expects {} output, got {}" : "expects {} outputs, got {}")
                              : (labels.size() == 1 ? "expects {} input, got {}" : "expects {} inputs, got {}"),
                      labels.size(), specs.size());
  return check_ranks(labels, specs, outputs);
}

// The attrs an einsum infers need no check against the mesh: the merged map gives no two
// labels one mesh dim (forward resolves or rejects conflicts, backward rejects them), its
// mesh dims come from operands valid on the one mesh all operands share (rule_base checks
// that), and a notation has no label twice in one operand. Hence push</*Check=*/false>.

/// Appends the inputs under `map`: each input's labels, with size-1 dims and missing labels -1.
template <std::size_t N>
constexpr void push_inputs(spmd_info& info, std::span<const std::string_view, N> labels, spec_span in,
                           const axis_to_dim_map& map) {
  for (std::size_t i = 0; i < labels.size(); ++i)
    push</*Check=*/false>(info.inputs, in[i].dist_attr(), size_one_unsharded{labels[i], in[i].shape()}, map);
}

/// Forward inference of the einsum `inputs -> output` (whose contracted labels are
/// `contracted`) into `info` with `Policy` (see the file comment).
template <merge_policy Policy, std::size_t N>
constexpr status einsum_forward_with(spmd_info& info, std::span<const std::string_view, N> inputs,
                                     std::string_view output, std::string_view contracted, spec_span in,
                                     bool merge_conflicts) {
  CTSPMD_TRY(check_operands(inputs, in));
  axis_to_dim_map map;
  CTSPMD_TRY(merge_specs<Policy>(
      map, inputs, in, {merge_conflicts, /*size_one_unsharded=*/true, /*check_sizes=*/true, /*drop_indivisible=*/true}));
  push_inputs(info, inputs, in, map);
  // Labels the merge dropped from every input (size 1 everywhere) give -1. No mesh dim
  // shards two labels after the merge, so the contracted labels' mesh dims are the partial ones.
  tensor_dist_attr& out = push</*Check=*/false>(info.outputs, in[0].dist_attr(), output, map);
  if (partial_mask(map, contracted) != 0) out.set_partial_status(sharding_mesh_dims(map, contracted));
  return {};
}
// (phi's merge out of line: the common fluid call keeps a small frame.)
template <std::size_t N>
CTSPMD_NOINLINE constexpr status einsum_forward_phi(spmd_info& info, std::span<const std::string_view, N> inputs,
                                                    std::string_view output, std::string_view contracted, spec_span in,
                                                    bool merge_conflicts) {
  return einsum_forward_with<merge_policy::co_shard>(info, inputs, output, contracted, in, merge_conflicts);
}
template <std::size_t N>
constexpr status einsum_forward(spmd_info& info, std::span<const std::string_view, N> inputs, std::string_view output,
                                std::string_view contracted, spec_span in, bool merge_conflicts, semantics s) {
  if (s == semantics::phi) return einsum_forward_phi(info, inputs, output, contracted, in, merge_conflicts);
  return einsum_forward_with<merge_policy::first_wins>(info, inputs, output, contracted, in, merge_conflicts);
}
template <std::size_t N>
constexpr status einsum_forward(spmd_info& info, const einsum_labels<N>& l, spec_span in, bool merge_conflicts,
                                semantics s) {
  return einsum_forward(info, std::span<const std::string_view, N>(l.inputs), l.output, l.contracted, in,
                        merge_conflicts, s);
}

/// Backward inference of the einsum `inputs -> output` from its one output, into `info` (see
/// the file comment).
template <std::size_t N>
constexpr status einsum_backward(spmd_info& info, std::span<const std::string_view, N> inputs, std::string_view output,
                                 spec_span in, spec_span out, semantics s) {
  CTSPMD_TRY(check_operands(inputs, in));
  CTSPMD_TRY(check_operands(std::span<const std::string_view, 1>(&output, 1), out, /*outputs=*/true));
  axis_to_dim_map map;
  CTSPMD_TRY(merge_operand(map, output, out[0], s, {/*merge_conflicts=*/false, false, false, /*drop_indivisible=*/true}));
  push_inputs(info, inputs, in, map);
  info.outputs.push_back(out[0].dist_attr());
  return {};
}
template <std::size_t N>
constexpr status einsum_backward(spmd_info& info, const einsum_labels<N>& l, spec_span in, spec_span out, semantics s) {
  return einsum_backward(info, std::span<const std::string_view, N>(l.inputs), l.output, in, out, s);
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
