#ifndef CTSPMD_RULES_EMBEDDING_HPP
#define CTSPMD_RULES_EMBEDDING_HPP
/// \file The embedding rule (`embedding`, `lookup_table_v2`): out = weight[x].
///
/// Notation: x gets the first rank(x) letters of `abcdefghilmnopqrstuvwxyz`, the weight
/// `jk` (rows j, columns k), the output x's letters then `k`.
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

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `embedding` (Paddle's defaults).
struct embedding_attributes {
  std::int64_t padding_idx = -1;  ///< row whose lookups are zero; -1 for none
  bool sparse = false;            ///< sparse gradient of the weight
};

/// The embedding rule.
struct embedding : detail::rule_base<embedding, embedding_attributes> {
  static constexpr std::string_view name = "embedding";

  static constexpr result<spmd_info> forward(spec_span in, const attributes& attrs) {
    CTSPMD_TRY(detail::check_count(in, 2));
    const auto& x = in[0];
    const auto& w = in[1];
    CTSPMD_TRY(check_weight(w));
    const auto x_axes = try_get_broadcast_axes(x.ndim(), x.ndim(), alphabets::embedding);
    if (!x_axes) return x_axes.error();
    CTSPMD_TRY(check_output_rank(x.ndim()));

    const std::int64_t row_mesh_dim = w.dims_mapping()[0];
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

    const auto map = try_sharding_merge_for_tensors({{*x_axes, x.dims_mapping()}, {"jk", w.dims_mapping()}},
                                                    /*merge_conflicts=*/false);
    if (!map) return map.error();
    const auto out_axes = *x_axes + "k";

    spmd_info info;
    info.inputs.push_back(detail::mapped(x.dist_attr(), *x_axes, *map));
    info.inputs.push_back(detail::mapped(w.dist_attr(), "jk", *map));
    info.outputs.push_back(detail::mapped(x.dist_attr(), out_axes, *map));
    // Each device looked up only the rows it holds: the parts sum to the output.
    if (row_mesh_dim != -1) info.outputs[0].set_partial_status({row_mesh_dim});
    return info;
  }

  static constexpr result<spmd_info> backward(spec_span in, spec_span out, const attributes&) {
    CTSPMD_TRY(detail::check_count(in, 2));
    CTSPMD_TRY(detail::check_count(out, 1, /*outputs=*/true));
    const auto& x = in[0];
    const auto& w = in[1];
    const auto& o = out[0];
    CTSPMD_TRY(check_weight(w));
    if (x.ndim() != o.ndim() - 1)
      return make_error(error_kind::invalid_argument, "", "the output's rank must be x's rank + 1, but x has rank {} and the output rank {}",
                        x.ndim(), o.ndim());
    const auto x_axes = try_get_broadcast_axes(x.ndim(), x.ndim(), alphabets::embedding);
    if (!x_axes) return x_axes.error();
    const auto out_axes = *x_axes + "k";
    // Only the output's mapping is merged: the inputs' own mappings do not count backward.
    const auto map = try_sharding_merge_for_tensors({{out_axes, o.dims_mapping()}}, /*merge_conflicts=*/false);
    if (!map) return map.error();

    spmd_info info;
    info.inputs.push_back(detail::mapped(x.dist_attr(), *x_axes, *map, /*unsharded_miss_axis=*/true));
    info.inputs.push_back(detail::mapped(w.dist_attr(), "jk", *map, /*unsharded_miss_axis=*/true));
    info.outputs.push_back(o.dist_attr());
    return info;
  }

 private:
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
