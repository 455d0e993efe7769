#ifndef CTSPMD_RULES_KIT_LABELS_AND_MERGES_HPP
#define CTSPMD_RULES_KIT_LABELS_AND_MERGES_HPP
/// \file The rule kit: the pieces every rule is written with.
///
/// A rule labels its operands (one axis letter per dim, the same letter for the same logical
/// axis, `'1'` for a dim that must not be sharded), merges the operands' shardings per label
/// with a named merge policy, and writes each inferred attr as the merged sharding of its
/// labels. Small steps around that: relabel a dim `'1'` to replicate it, carry partial status
/// from an input, make an output partial on the mesh dims of its contracted labels. A new rule
/// copies a sibling: labels, a policy, the steps.
///
/// Merge policies (one function each; a rule names the one it uses):
/// - `merge_first_wins` (fluid): an axis takes the first non-empty proposal; a different one
///   is an error; a mesh dim claimed by two axes stays with the first (merge/sharding_merge.hpp).
/// - `merge_co_shard` (phi's vector ShardingMergeForTensors): proposals for an axis are unioned
///   into a co-shard, mesh dims that do not divide the axis are dropped, and a mesh dim claimed
///   by two axes stays with the larger axis (merge/policies.hpp).
/// - `align_least_cost` (phi's AlignDimsSharding) and `agree_or_drop` (phi's optimizer rules), in
///   merge/policies.hpp.
/// `merge_operands` picks first-wins under `fluid` and the co-shard union under `phi`, which is
/// what most rules do.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/dist_tensor_spec.hpp>
#include <ctspmd/dist/mesh_dim_list.hpp>
#include <ctspmd/dist/spmd_info.hpp>
#include <ctspmd/merge/axis_to_dim_map.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/policies.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// The first `n` letters of `alphabet`, as a view of it (the labels of a rank-n tensor), or
/// `get_broadcast_axes`'s error when the alphabet is too short.
constexpr result<std::string_view> first_letters(std::int64_t n, std::string_view alphabet = alphabets::full) {
  if (n < 0 || static_cast<std::size_t>(n) > alphabet.size() || n > static_cast<std::int64_t>(max_rank))
    return try_get_broadcast_axes(n, n, alphabet).error();
  return alphabet.substr(0, static_cast<std::size_t>(n));
}

/// `axis` (negative: counted from the end) as a dim of a rank-`rank` tensor, or an
/// `invalid_argument` with `format`, whose values are the axis and the rank.
constexpr result<std::size_t> normalize_axis(std::int64_t axis, std::int64_t rank, const char* format) {
  if (axis < -rank || axis >= rank) return make_error(error_kind::invalid_argument, "", format, axis, rank);
  return static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
}

/// An operand's labels as a merge reads them: `'1'` at each dim of size 1 (a view of the labels
/// and the operand's shape, so nothing is copied). For rules where a size-1 dim is a broadcast
/// dim that must not be sharded.
struct size_one_unsharded {
  std::string_view axes;
  const tensor_shape& shape;
  constexpr std::size_t size() const noexcept { return axes.size(); }
  // i < size(), as every reader loops; the ranks match (check_ranks).
  constexpr char operator[](std::size_t i) const { return shape.data()[i] == 1 ? broadcast_label : axes.begin()[i]; }
};

/// `spec` with every dim that `labels` labels `'1'` replicated (its partial status and batch dim
/// kept): for a rule that clears dims before it merges, so that the merge policy does not see
/// their mesh dims at all (phi's element-wise merge counts every dim when it picks the operand
/// it follows). `labels` has `spec`'s rank.
constexpr dist_tensor_spec with_ones_replicated(const dist_tensor_spec& spec, std::string_view labels) {
  multi_dims_mapping mapping = spec.dist_attr().multi_dims_mapping();
  for (std::size_t d = 0; d < mapping.size(); ++d)
    if (labels[d] == broadcast_label) mapping[d] = mesh_dims{};
  tensor_dist_attr a = spec.dist_attr();
  a.set_dims_mapping(mapping);
  return {spec.shape(), a};
}

/// Checks that `specs` have the ranks of `labels` (as many specs as labels).
template <std::size_t N>
constexpr status check_ranks(std::span<const std::string_view, N> labels, spec_span specs, bool outputs = false) {
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (specs[i].ndim() != static_cast<std::int64_t>(labels[i].size()))
      return make_error(error_kind::invalid_argument, "",
                        outputs ? "output {} has rank {} but the notation gives it {} labels"
                                : "input {} has rank {} but the notation gives it {} labels",
                        i, specs[i].ndim(), labels[i].size());
  return {};
}

/// The merge policies a rule can name (see the file comment).
enum class merge_policy : std::uint8_t {
  first_wins,   ///< fluid: `detail::merge_first_wins`
  co_shard,     ///< phi: `merge_co_shard`
  elementwise,  ///< phi: `merge_elementwise`
};
/// What most rules use: first-wins under `fluid`, the co-shard union under `phi`.
constexpr merge_policy default_policy(semantics s) noexcept {
  return s == semantics::phi ? merge_policy::co_shard : merge_policy::first_wins;
}

/// How `merge_specs` reads and merges.
struct merge_options {
  bool merge_conflicts = true;      ///< resolve a mesh dim claimed by two axes (else an error)
  bool size_one_unsharded = false;  ///< read a size-1 dim as `'1'`
  bool check_sizes = false;         ///< (phi policies) sizes of one axis must broadcast
  bool drop_indivisible = false;    ///< (co_shard) drop mesh dims that do not divide their axis
};

/// Merges into `map` the shardings of `specs` labelled `labels` (one label string per spec, of
/// its rank, e.g. checked by `check_ranks`) with `Policy`. Only sharded dims are proposed under
/// first-wins, so a label absent from the map is replicated.
template <merge_policy Policy, std::size_t N>
constexpr status merge_specs(axis_to_dim_map& map, std::span<const std::string_view, N> labels, spec_span specs,
                             merge_options o = {}) {
  const auto list = [&](std::size_t t, std::size_t i) { return ctspmd::detail::dim_list(specs[t].dist_attr(), i); };
  const auto label = [&](std::size_t t) { return labels[t]; };
  if constexpr (Policy == merge_policy::first_wins) {
    if (o.size_one_unsharded)
      return ctspmd::detail::merge_first_wins</*Validate=*/false, /*RecordReplicated=*/false>(
          map, labels.size(), [&](std::size_t t) { return size_one_unsharded{labels[t], specs[t].shape()}; }, list,
          o.merge_conflicts);
    return ctspmd::detail::merge_first_wins</*Validate=*/false, /*RecordReplicated=*/false>(map, labels.size(), label,
                                                                                           list, o.merge_conflicts);
  } else {
    const auto size = [&](std::size_t t, std::size_t i) { return specs[t].shape()[i]; };
    const process_mesh& mesh = specs.empty() ? process_mesh::empty() : specs[0].process_mesh();
    const co_shard_options co{o.merge_conflicts, o.size_one_unsharded, o.check_sizes, o.drop_indivisible};
    if constexpr (Policy == merge_policy::co_shard)
      return merge_co_shard(map, labels.size(), label, list, size, mesh, co);
    else
      return merge_elementwise(map, labels.size(), label, list, size, mesh, co);
  }
}
/// `merge_specs` with a policy chosen at run time.
template <std::size_t N>
constexpr status merge_specs(axis_to_dim_map& map, std::span<const std::string_view, N> labels, spec_span specs,
                             merge_policy policy, merge_options o = {}) {
  switch (policy) {
    case merge_policy::co_shard: return merge_specs<merge_policy::co_shard>(map, labels, specs, o);
    case merge_policy::elementwise: return merge_specs<merge_policy::elementwise>(map, labels, specs, o);
    case merge_policy::first_wins: break;
  }
  return merge_specs<merge_policy::first_wins>(map, labels, specs, o);
}
/// `merge_specs` with the semantics' default policy (`default_policy`).
template <std::size_t N>
constexpr status merge_operands(axis_to_dim_map& map, std::span<const std::string_view, N> labels, spec_span specs,
                                semantics s, merge_options o = {}) {
  return merge_specs(map, labels, specs, default_policy(s), o);
}
/// `merge_operands` for one operand.
constexpr status merge_operand(axis_to_dim_map& map, std::string_view labels, const dist_tensor_spec& spec,
                               semantics s, merge_options o = {}) {
  return merge_operands(map, std::span<const std::string_view, 1>(&labels, 1), spec_span(&spec, 1), s, o);
}

/// Appends to `out` an attr on `src`'s mesh (with its batch dim, no partial status) whose
/// mapping is the merged sharding of `labels` under `map`; a label missing from the map is
/// replicated. The attr is checked against the mesh unless `Check` is false (see `push_mapped`).
template <bool Check = true, class Labels>
constexpr tensor_dist_attr& push(dist_attrs& out, const tensor_dist_attr& src, const Labels& labels,
                                 const axis_to_dim_map& map) {
  return push_mapped<Check>(out, src, labels, map, /*unsharded_miss_axis=*/true);
}

/// `a` with the partial status (mesh dims and reduce types) of `src` added.
constexpr tensor_dist_attr& add_partial_of(tensor_dist_attr& a, const tensor_dist_attr& src) {
  for (auto m : src.partial_dims()) a.set_partial_status({m}, src.partial_reduce_type(m));
  return a;
}

/// The partial status on which every spec of `specs` is partial with the same reduce type, as
/// an attr (on the first spec's mesh) holding only that.
constexpr tensor_dist_attr common_partial(spec_span specs) {
  tensor_dist_attr common(specs.empty() ? process_mesh() : specs[0].process_mesh());
  if (specs.empty()) return common;
  for (auto m : specs[0].dist_attr().partial_dims()) {
    const reduce_type r = specs[0].dist_attr().partial_reduce_type(m);
    bool shared = true;
    for (const auto& x : specs) shared = shared && x.dist_attr().is_partial(m) && x.dist_attr().partial_reduce_type(m) == r;
    if (shared) common.set_partial_status({m}, r);
  }
  return common;
}

/// Checks that `got` has the known sizes of `want` (-1 on either side matches anything), or an
/// `invalid_argument` naming dim, `what` and the sizes.
constexpr status check_same_sizes(const tensor_shape& got, const tensor_shape& want, const char* format) {
  for (std::size_t d = 0; d < got.size() && d < want.size(); ++d)
    if (got[d] != -1 && want[d] != -1 && got[d] != want[d])
      return make_error(error_kind::invalid_argument, "", format, d, got[d], want[d]);
  return {};
}

// ---- output shapes (the optional `output_shapes` of the rule contract) ----------------------------

/// Appends to `out` the shapes of inputs `which`, in order: for outputs shaped as an input (a
/// unary op's output, a gradient of its forward operand). Every index is < in.size().
constexpr status shapes_of(shape_list& out, spec_span in, std::initializer_list<std::size_t> which) {
  for (const auto k : which) out.push_back(in[k].shape());
  return {};
}

/// Broadcasts `b` into `acc` numpy-style (right-aligned; a size 1 stretches; -1, unknown, takes
/// the other's size unless that is 1, where it stays unknown), or an `invalid_argument` naming
/// the two sizes and the dim of the result where they clash.
constexpr status broadcast_into(tensor_shape& acc, std::span<const std::int64_t> b) {
  if (b.size() > acc.size()) {  // acc gains b's leading dims
    tensor_shape longer;
    for (std::size_t d = 0; d < b.size() - acc.size(); ++d) longer.push_back(b[d]);
    for (const auto v : acc) longer.push_back(v);
    acc = longer;
  }
  const std::size_t lead = acc.size() - b.size();
  for (std::size_t d = 0; d < b.size(); ++d) {
    std::int64_t& x = acc[lead + d];
    const std::int64_t y = b[d];
    if (x != y && x != 1 && y != 1 && x != -1 && y != -1)
      return make_error(error_kind::invalid_argument, "", "cannot broadcast size {} against size {} (at dim {} of the result)",
                        x, y, lead + d);
    x = x == 1 ? y : y == 1 ? x : x == -1 ? y : x;
  }
  return {};
}

// ---- grad rules (phi): operators `<name>_grad`, called forward ------------------------------------

/// True if `spec` is an absent optional input: phi's grad and attention rules take one as shape
/// `[]` and dims mapping `[]`, and give it back as given. (A 0-D tensor in such a position reads
/// the same way, which is harmless: it comes back as given.)
constexpr bool is_absent(const dist_tensor_spec& spec) noexcept { return spec.ndim() == 0; }

/// The `backward` of a grad rule: a grad rule is called forward (its inputs include the output
/// gradients) and has no reverse inference.
constexpr error_info no_reverse_inference() {
  return make_error(error_kind::unimplemented, "",
                    "a grad rule has no reverse inference: call it forward, with the output gradients among its inputs");
}

/// `a` with the partial status of `src` added on the mesh dims `a` does not shard (a mesh dim is
/// never both; where `a` shards it, `src` must be reduced first) and, when `linear_only`, only
/// where it is of reduce type sum or avg (what an operator that adds elements commutes with).
/// For a gradient that moves, selects or sums elements of a partial out_grad.
constexpr tensor_dist_attr& add_unsharded_partial_of(tensor_dist_attr& a, const tensor_dist_attr& src,
                                                     bool linear_only = false) {
  for (auto m : src.partial_dims()) {
    // (m >= 0 always; without the test GCC 12 assumes m may be -1 and warns of reading the
    // reduce-type table at index -1: a false -Warray-bounds.)
    if (m < 0 || a.shards(m)) continue;
    const reduce_type r = src.partial_reduce_type(m);
    if (linear_only && r != reduce_type::sum && r != reduce_type::avg) continue;
    a.set_partial_status({m}, r);
  }
  return a;
}

/// The gradient of an operand of shape `operand` that was broadcast (numpy-style, right-aligned)
/// to `grad_shape`, from the gradient `grad` of the broadcast result (phi's
/// ReduceGradBroadCastDims): `grad`'s sharding without the leading dims the operand lacks, the
/// dims where the operand has size 1 and `grad_shape` does not replicated, and partial (sum) on
/// the mesh dims those dropped or replicated dims were sharded by: each device holds a partial
/// sum of the operand's gradient over its shard of the broadcast dims. `grad`'s own partial
/// status is kept. The operand's rank must not exceed `grad`'s (the caller checks).
constexpr tensor_dist_attr reduce_grad_broadcast_dims(const tensor_dist_attr& grad, const tensor_shape& grad_shape,
                                                      const tensor_shape& operand) {
  const std::size_t lead = grad.rank() - operand.size();
  multi_dims_mapping mapping;
  mesh_dims summed;
  for (std::size_t d = 0; d < grad.rank(); ++d) {
    const mesh_dims list = grad.mesh_dims_of(d);
    const bool broadcast = d < lead || (operand[d - lead] == 1 && grad_shape[d] != 1);
    if (broadcast)
      for (auto m : list) summed.push_back(m);
    if (d >= lead) mapping.push_back(broadcast ? mesh_dims{} : list);
  }
  tensor_dist_attr out(grad.process_mesh(), mapping);
  out.set_batch_dim(grad.batch_dim());
  add_partial_of(out, grad);
  if (!summed.empty()) out.set_partial_status(summed, reduce_type::sum);
  return out;
}

}  // namespace ctspmd::rules

#endif
