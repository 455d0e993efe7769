#ifndef CTSPMD_RULES_C_EMBEDDING_HPP
#define CTSPMD_RULES_C_EMBEDDING_HPP
/// \file The vocabulary-parallel embedding rules (phi): `c_embedding` (inputs weight [V, H], x;
/// output out [x..., H]) and `c_embedding_grad` (inputs weight, x, out_grad; output weight_grad).
///
/// c_embedding is embedding (embedding.hpp) with its operands in Paddle's order, weight first:
/// the same notation, merge and checks, with no padding row and no sparse gradient. The weight's
/// row (vocabulary) axis keeps its sharding: each device looks up the ids that fall in its rows
/// (the kernel's start_index is that device's first row) and writes zeros for the others, so out
/// is partial (sum) on the row's mesh dim. `start_index` and `vocab_size` describe the local
/// shard to the kernel and do not change the sharding. Backward: embedding's reverse (the
/// output's mapping alone; the weight's rows replicated, as they do not appear in the output).
///
/// c_embedding_grad is embedding_grad (embedding_grad.hpp) with the weight first, except that
/// the weight's row axis keeps its sharding: the kernel computes the gradient of the rows each
/// device holds, so weight_grad is row-sharded like the weight, and partial (sum) on the mesh dims
/// of x's (and out_grad's) leading dims. phi computes a mapping for weight_grad and never applies
/// it (weight_grad keeps the weight's own mapping, whatever out_grad's columns say, plus
/// partial); we apply the merged one. No `sparse`/`padding_idx` here. Backward (reverse): none.

#include <cstdint>

#include <ctspmd/rules/embedding.hpp>
#include <ctspmd/rules/embedding_grad.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `c_embedding` (Paddle's defaults).
struct c_embedding_attributes {
  std::int64_t start_index = 0;  ///< the first vocabulary row of the local shard (the kernel's)
  std::int64_t vocab_size = -1;  ///< the whole vocabulary's size (-1: the weight's rows)
};

/// Attributes of `c_embedding_grad` (Paddle's defaults).
struct c_embedding_grad_attributes {
  std::int64_t start_index = 0;  ///< the first vocabulary row of the local shard (the kernel's)
};

/// The c_embedding rule.
struct c_embedding : rule_base<c_embedding, c_embedding_attributes> {
  static constexpr std::string_view name = "c_embedding";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};

  /// [x..., H] from weight [V, H] and x (embedding's, operands swapped).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    const dist_tensor_spec swapped[2] = {in[1], in[0]};
    return embedding::output_shapes(out, swapped, {});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    const dist_tensor_spec swapped[2] = {in[1], in[0]};
    CTSPMD_TRY(embedding::forward(info, swapped, {}, s));
    swap_inputs(info);
    return {};
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    const dist_tensor_spec swapped[2] = {in[1], in[0]};
    CTSPMD_TRY(embedding::backward(info, swapped, out, {}, s));
    swap_inputs(info);
    return {};
  }

 private:
  static constexpr void swap_inputs(spmd_info& info) {
    const tensor_dist_attr x = info.inputs[0];
    info.inputs[0] = info.inputs[1];
    info.inputs[1] = x;
  }
};

/// The c_embedding_grad rule.
struct c_embedding_grad : rule_base<c_embedding_grad, c_embedding_grad_attributes> {
  static constexpr std::string_view name = "c_embedding_grad";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{1};

  /// weight_grad: weight's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    return detail::embedding_weight_grad(info, in[1], in[0], in[2], /*x_first=*/false, /*keep_rows=*/true, s);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
