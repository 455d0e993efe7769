#ifndef CTSPMD_RULES_ADD_N_HPP
#define CTSPMD_RULES_ADD_N_HPP
/// \file The add_n rule: out = x1 + x2 + ... + xn, inputs of one shape (no broadcasting).
///
/// Notation: every input and the output get the first r letters of
/// `abcdefghijklmnopqrstuvwxyz` (r the common rank). The inputs must have one rank and the same
/// sizes (-1, unknown, agrees with anything): an `invalid_argument` names the input otherwise.
///
/// Forward (phi's AddNInferSpmd): all inputs are merged (fluid: first-wins, one axis on two
/// mesh dims is `unimplemented`; phi: the co-shard union, conflicting proposals become a
/// co-shard, mesh dims that do not divide their axis are dropped); every input comes back with
/// the merged mapping, and so does the output. A size-1 dim is never sharded. Partial status: a
/// mesh dim on which every input is partial with one reduce type, sum or avg, stays partial on
/// every input and on the output (a sum of partial sums is the partial sum of the sums; phi keeps
/// the partial status all inputs share, Paddle's test_add_n_rule.py); any other partial status is
/// dropped (those inputs are reduced first). phi keeps a shared max / min / prod partial too,
/// which is wrong (a sum of maxima is not the maximum of sums); we do not.
///
/// Backward (phi has none; derived): the output's rank and sizes must be the inputs'. The
/// output's mapping alone is merged; every input and the output take it, without partial status
/// (as every reverse rule), which is what forward from those inputs gives. add_n exists only in phi; it behaves the same under both semantics
/// except for the merge policy.

#include <cstddef>
#include <cstdint>
#include <span>

#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `add_n`: none.
struct add_n_attributes {};

/// The add_n rule (see the file comment).
struct add_n : rule_base<add_n, add_n_attributes> {
  static constexpr std::string_view name = "add_n";
  static constexpr operand_count input_count = operand_count::at_least(1);
  static constexpr operand_count output_count{1};

  /// The inputs' shape (they have one shape).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    CTSPMD_TRY(check_shapes(in, in[0], false));
    tensor_shape& o = out.emplace_back(in[0].shape());
    for (const auto& x : in)
      for (std::size_t d = 0; d < o.size(); ++d)
        if (o[d] == -1) o[d] = x.shape()[d];  // a size another input knows
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    CTSPMD_TRY(check_shapes(in, in[0], false));
    const auto letters = first_letters(in[0].ndim());
    if (!letters) return letters.error();
    static_vector<std::string_view, max_operands> labels(in.size(), *letters);
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view>(labels.data(), labels.size()), in, s,
                              {true, /*size_one_unsharded=*/true, false, /*drop_indivisible=*/true}));
    // The partial status every input shares, if it is a sum or an average.
    tensor_dist_attr partial = common_partial(in);
    for (auto m : partial.partial_dims()) {
      const reduce_type r = partial.partial_reduce_type(m);
      if (r != reduce_type::sum && r != reduce_type::avg) partial.clean_partial_dims({m});
    }
    for (const auto& x : in) add_partial_of(push(info.inputs, x.dist_attr(), *letters, map), partial);
    add_partial_of(push(info.outputs, in[0].dist_attr(), *letters, map), partial);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    CTSPMD_TRY(check_shapes(in, in[0], false));
    CTSPMD_TRY(check_shapes(out, in[0], true));
    const auto letters = first_letters(in[0].ndim());
    if (!letters) return letters.error();
    // Only the output's mapping is merged: the inputs' own mappings do not count backward.
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, *letters, out[0], s, {true, true, false, true}));
    for (const auto& x : in) push(info.inputs, x.dist_attr(), *letters, map);
    push(info.outputs, out[0].dist_attr(), *letters, map);
    return {};
  }

 private:
  /// Checks that every spec of `specs` has `ref`'s rank and sizes.
  static constexpr status check_shapes(spec_span specs, const dist_tensor_spec& ref, bool output) {
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].ndim() != ref.ndim())
        return make_error(error_kind::invalid_argument, "",
                          output ? "the output has rank {1}, but input 0 has rank {2}"
                                 : "input {} has rank {}, but input 0 has rank {}",
                          i, specs[i].ndim(), ref.ndim());
      for (std::size_t d = 0; d < ref.shape().size(); ++d) {
        const std::int64_t a = specs[i].shape()[d], b = ref.shape()[d];
        if (a != -1 && b != -1 && a != b)
          return make_error(error_kind::invalid_argument, "",
                            output ? "the output has size {1} at dim {2}, but input 0 has size {3}"
                                   : "input {} has size {} at dim {}, but input 0 has size {}",
                            i, a, d, b);
      }
    }
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
