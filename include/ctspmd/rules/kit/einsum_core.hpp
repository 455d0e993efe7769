#ifndef CTSPMD_RULES_KIT_EINSUM_CORE_HPP
#define CTSPMD_RULES_KIT_EINSUM_CORE_HPP
/// \file The einsum core the einsum rules (einsum.hpp), matmul and embedding are built on: an
/// einsum given as label strings, one per operand (a notation is parsed by einsum.hpp; matmul
/// and embedding view constant strings).
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
#include <span>
#include <string_view>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules::detail {

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

}  // namespace ctspmd::rules::detail

#endif
