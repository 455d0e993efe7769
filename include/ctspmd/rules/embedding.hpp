#ifndef CTSPMD_RULES_EMBEDDING_HPP
#define CTSPMD_RULES_EMBEDDING_HPP
/// \file The embedding rule (`embedding`, `lookup_table_v2`): out = weight[x].
///
/// The embedding is the einsum `X,jk->Xk` (einsum.hpp): x gets the first rank(x) letters X
/// of `abcdefghilmnopqrstuvwxyz`, the weight `jk` (rows j, columns k), the output X then k;
/// the looked-up row j is the contracted label. As in every einsum, a size-1 dim of x is
/// never sharded.
///
/// Forward: the weight must be 2-D. A weight whose row axis is sharded (row-wise, or
/// vocabulary, parallelism) supports neither `padding_idx != -1` nor `sparse`. x and the
/// weight are merged without resolving conflicts (x sharded on a mesh dim that also shards
/// a weight axis is `precondition_not_met`). Each device then looks up only the rows it
/// holds, so the output is partial (sum) on the weight's row mesh dim.
///
/// Backward (from the output): the output's mapping alone is merged; x takes the output's
/// leading dims, the weight's column dim the output's last dim, and the weight's row dim
/// (absent from the output) is replicated. No partial status is inferred for the inputs;
/// the output is returned unchanged.

#include <cstdint>

#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/einsum_core.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `embedding` (Paddle's defaults).
struct embedding_attributes {
  std::int64_t padding_idx = -1;  ///< row whose lookups are zero; -1 for none
  bool sparse = false;            ///< sparse gradient of the weight
};

/// The embedding rule.
struct embedding : rule_base<embedding, embedding_attributes> {
  static constexpr std::string_view name = "embedding";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};

  /// x's shape, then the weight's row size (weight [V, H]: out [x..., H]).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    CTSPMD_TRY(check_weight(in[1]));
    CTSPMD_TRY(check_output_rank(in[0].ndim()));
    out.emplace_back(in[0].shape()).push_back(in[1].shape()[1]);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& w = in[1];
    CTSPMD_TRY(check_weight(w));
    detail::einsum_labels<2> l;
    CTSPMD_TRY(labels_of(l, x.ndim()));

    const std::int64_t row_mesh_dim = ctspmd::detail::dim_list(w.dist_attr(), 0).major();
    if (attrs.padding_idx != -1 && row_mesh_dim != -1)
      return make_error(error_kind::invalid_argument, "",
                        "row-wise parallel of the embedding table does not support padding_idx (padding_idx = {}), but "
                        "the table's row axis is sharded by mesh dim {}",
                        attrs.padding_idx, row_mesh_dim);
    if (attrs.sparse && row_mesh_dim != -1)
      return make_error(error_kind::invalid_argument, "",
                        "row-wise parallel of the embedding table does not support sparse, but the table's row axis is "
                        "sharded by mesh dim {}",
                        row_mesh_dim);

    // Each device looks up only the rows it holds (the contracted j), so the output is partial
    // (sum) on the row mesh dim.
    return detail::einsum_forward(info, l, in, /*merge_conflicts=*/false, s);
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    const auto& x = in[0];
    const auto& w = in[1];
    const auto& o = out[0];
    CTSPMD_TRY(check_weight(w));
    if (x.ndim() != o.ndim() - 1)
      return make_error(error_kind::invalid_argument, "", "the output's rank must be x's rank + 1, but x has rank {} and the output rank {}",
                        x.ndim(), o.ndim());
    detail::einsum_labels<2> l;
    CTSPMD_TRY(labels_of(l, x.ndim()));
    return detail::einsum_backward(info, l, in, out, s);
  }

 private:
  // For each rank b, its letters then k: the output's labels.
  static constexpr ctspmd::detail::letters_then<1> letters_k{alphabets::embedding, "k"};

  /// Sets `l` to `X,jk->Xk`, X being the first `x_ndim` letters of the alphabet (checking
  /// first that they exist, then that the output's rank is within max_rank), as views.
  static constexpr status labels_of(detail::einsum_labels<2>& l, std::int64_t x_ndim) {
    if (static_cast<std::size_t>(x_ndim) > alphabets::embedding.size())  // get_broadcast_axes's error
      return try_get_broadcast_axes(x_ndim, x_ndim, alphabets::embedding).error();
    CTSPMD_TRY(check_output_rank(x_ndim));
    const auto b = static_cast<std::size_t>(x_ndim);  // < max_rank
    l.inputs = {alphabets::embedding.substr(0, b), "jk"};
    l.output = letters_k(b);
    l.contracted = "j";
    return {};
  }
  static constexpr status check_weight(const dist_tensor_spec& w) {
    if (w.ndim() != 2)
      return make_error(error_kind::invalid_argument, "", "the weight (embedding table) must be 2-D, but has rank {}",
                        w.ndim());
    return {};
  }
  static constexpr status check_output_rank(std::int64_t x_ndim) {
    if (x_ndim + 1 > static_cast<std::int64_t>(max_rank))
      return make_error(error_kind::invalid_argument, "", "x of rank {} gives an output of rank {}, above max_rank = {}",
                        x_ndim, x_ndim + 1, max_rank);
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
