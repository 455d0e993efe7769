#ifndef CTSPMD_RULES_DEFAULT_DATA_PARALLEL_HPP
#define CTSPMD_RULES_DEFAULT_DATA_PARALLEL_HPP
/// \file The default data-parallel rule (`default_data_parallel`): the fallback for an operator
/// whose every operand is batch-first and which treats each sample on its own, so that only
/// the batch dim (dim 0) may be sharded.
///
/// Notation: dim 0 of every operand is the batch axis `b`; every other dim is `'1'`
/// (replicated). A 0-D operand has no batch dim; a dim 0 of size 1 is read as `'1'` too (it
/// cannot be split). The known batch sizes other than 1 must agree (InvalidArgument).
///
/// Forward: dim 0 of every input is merged (fluid: first-wins, an axis on two mesh dims is
/// `unimplemented`; phi: the co-shard union, mesh dims that do not divide the batch dropped).
/// Every input comes back as `[b, -1, ...]`, not partial (a partial input is reduced first: a
/// per-sample function of a partial sum is not a partial result). The rule cannot know the
/// operator's outputs (phi's DefaultDataParallelInferSpmd is given them): like `replicated`,
/// it assumes ONE output of input 0's rank, `[b, -1, ...]`, not partial.
///
/// Backward: dim 0 of every given output is merged the same way; every input and output comes
/// back as `[b, -1, ...]`, not partial. With no outputs, everything is replicated.

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `default_data_parallel`: none.
struct default_data_parallel_attributes {};

/// The default data-parallel rule (see the file comment).
struct default_data_parallel : rule_base<default_data_parallel, default_data_parallel_attributes> {
  static constexpr std::string_view name = "default_data_parallel";
  static constexpr operand_count input_count = operand_count::at_least(1);
  static constexpr operand_count output_count = operand_count::at_least(0);

  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    axis_to_dim_map map;
    CTSPMD_TRY(merge_batch(map, in, s, false));
    for (const auto& x : in) push(info.inputs, x.dist_attr(), labels_of(x), map);
    push(info.outputs, in[0].dist_attr(), labels_of(in[0]), map);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    CTSPMD_TRY(check_batch(in, false));  // the inputs' own layouts cast no vote
    axis_to_dim_map from_outputs;
    CTSPMD_TRY(merge_batch(from_outputs, out, s, true));
    for (const auto& x : in) push(info.inputs, x.dist_attr(), labels_of(x), from_outputs);
    for (const auto& o : out) push(info.outputs, o.dist_attr(), labels_of(o), from_outputs);
    return {};
  }

 private:
  /// `b` then `'1'`s, of x's rank; `'1'` for a batch dim of size 1.
  static constexpr axes_string labels_of(const dist_tensor_spec& x) {
    axes_string l;
    for (std::int64_t d = 0; d < x.ndim(); ++d) l.push_back(d == 0 && x.shape()[0] != 1 ? 'b' : broadcast_label);
    return l;
  }
  /// Checks that the known batch sizes (other than 1) of `specs` agree.
  static constexpr status check_batch(spec_span specs, bool outputs) {
    std::int64_t batch = -1;
    std::size_t first = 0;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const auto& x = specs[i];
      if (x.ndim() > 0 && x.shape()[0] != 1 && x.shape()[0] != -1) {
        if (batch != -1 && x.shape()[0] != batch)
          return make_error(error_kind::invalid_argument, "",
                            outputs ? "output {} has batch size (dim 0) {}, but output {} has {}"
                                    : "input {} has batch size (dim 0) {}, but input {} has {}",
                            i, x.shape()[0], first, batch);
        if (batch == -1) first = i;
        batch = x.shape()[0];
      }
    }
    return {};
  }
  /// Checks the batch sizes of `specs`, then merges their dim 0.
  static constexpr status merge_batch(axis_to_dim_map& map, spec_span specs, semantics s, bool outputs) {
    CTSPMD_TRY(check_batch(specs, outputs));
    static_vector<axes_string, max_operands> labels;
    static_vector<std::string_view, max_operands> views;
    for (const auto& x : specs) labels.push_back(labels_of(x));
    for (const auto& l : labels) views.push_back(l.view());
    return merge_operands(map, std::span<const std::string_view>(views.data(), views.size()), specs, s,
                          {true, false, false, /*drop_indivisible=*/true});
  }
};

}  // namespace ctspmd::rules

#endif
