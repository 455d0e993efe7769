#ifndef CTSPMD_RULES_EMBEDDING_GRAD_HPP
#define CTSPMD_RULES_EMBEDDING_GRAD_HPP
/// \file The embedding grad rule (`embedding_grad`, phi): inputs x (ids), weight [V, H] and
/// out_grad [x..., H]; output weight_grad [V, H], where weight_grad[r] sums out_grad over the
/// positions whose id is r (the padding row, if any, gets none).
///
/// Notation: x the first rank(x) letters X of `abcdefghilmnopqrstuvwxyz`, weight `jk`, out_grad
/// X then `k` (embedding.hpp); weight_grad is the einsum `X, Xk -> jk` of onehot(x) and out_grad.
///
/// Checks (`invalid_argument`): the weight 2-D; out_grad of rank rank(x) + 1, its leading sizes
/// x's and its last the weight's columns (-1 matches any); `sparse` is refused (phi has no
/// sharded sparse gradient).
///
/// Inference: the weight's row axis `j` is read as `'1'`, so the weight comes back with its rows
/// replicated, as phi's rule does (a row-sharded weight gradient would need every id on every
/// device of the row mesh dim; phi gives each device the whole table's gradient instead). x, the
/// weight and out_grad are then merged over their labels with the semantics' policy, without
/// resolving conflicts (a mesh dim on two axes is `precondition_not_met`, as in embedding's
/// forward); size-1 dims of x and out_grad are `'1'`. The inputs come back with the merged
/// mappings and without partial status; weight_grad takes the merged mapping of `jk` and is
/// partial (sum) on the mesh dims of X: each device sums the rows of its own positions only.
/// Backward (reverse) inference: none (a grad rule is called forward).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

namespace detail {

/// weight_grad of an embedding lookup of `x` in `w` with out_grad `g` (see the file comment):
/// appends x', w', g' to info.inputs in the order `x_first` says (x then w, or w then x), then g',
/// and weight_grad to info.outputs. `keep_rows`: the weight's row axis keeps its sharding
/// (vocabulary parallelism, c_embedding_grad) instead of being replicated.
constexpr status embedding_weight_grad(spmd_info& info, const dist_tensor_spec& x, const dist_tensor_spec& w,
                                       const dist_tensor_spec& g, bool x_first, bool keep_rows, semantics s) {
  if (w.ndim() != 2)
    return make_error(error_kind::invalid_argument, "", "the weight (embedding table) must be 2-D, but has rank {}",
                      w.ndim());
  if (x.ndim() + 1 > static_cast<std::int64_t>(max_rank) ||
      static_cast<std::size_t>(x.ndim()) > alphabets::embedding.size())
    return make_error(error_kind::invalid_argument, "", "x of rank {} gives an out_grad of rank {}, above max_rank = {}",
                      x.ndim(), x.ndim() + 1, max_rank);
  if (g.ndim() != x.ndim() + 1)
    return make_error(error_kind::invalid_argument, "", "out_grad must have rank {} (x's rank + 1), but has rank {}",
                      x.ndim() + 1, g.ndim());
  CTSPMD_TRY(check_same_sizes(g.shape(), x.shape(), "out_grad's dim {} has size {}, but x's has size {}"));
  const std::int64_t cols = g.shape()[static_cast<std::size_t>(x.ndim())];
  if (cols != -1 && w.shape()[1] != -1 && cols != w.shape()[1])
    return make_error(error_kind::invalid_argument, "",
                      "out_grad's last dim has size {}, but the weight has {} columns", cols, w.shape()[1]);

  const auto b = static_cast<std::size_t>(x.ndim());
  axes_string gl(alphabets::embedding.substr(0, b));
  gl.push_back('k');
  const std::string_view w_labels = keep_rows ? "jk" : "1k";
  const std::array<std::string_view, 3> labels{alphabets::embedding.substr(0, b), w_labels, gl.view()};
  const std::array<dist_tensor_spec, 3> ops{x, w, g};
  axis_to_dim_map map;
  CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 3>(labels), ops, s,
                            {/*merge_conflicts=*/false, /*size_one_unsharded=*/true}));
  const auto x_attr = [&] { push(info.inputs, x.dist_attr(), size_one_unsharded{labels[0], x.shape()}, map); };
  const auto w_attr = [&] { push(info.inputs, w.dist_attr(), w_labels, map); };
  if (x_first) {
    x_attr();
    w_attr();
  } else {
    w_attr();
    x_attr();
  }
  push(info.inputs, g.dist_attr(), size_one_unsharded{labels[2], g.shape()}, map);
  tensor_dist_attr& wg = push(info.outputs, w.dist_attr(), w_labels, map);
  const mesh_dims summed = sharding_mesh_dims(map, labels[0]);
  if (!summed.empty()) wg.set_partial_status(summed, reduce_type::sum);
  return {};
}

}  // namespace detail

/// Attributes of `embedding_grad` (Paddle's defaults).
struct embedding_grad_attributes {
  std::int64_t padding_idx = -1;  ///< the row whose gradient is zero; -1 for none
  bool sparse = false;            ///< a sparse weight gradient (refused)
};

/// The embedding grad rule.
struct embedding_grad : rule_base<embedding_grad, embedding_grad_attributes> {
  static constexpr std::string_view name = "embedding_grad";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{1};

  /// weight_grad: weight's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {1});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    if (attrs.sparse)
      return make_error(error_kind::invalid_argument, "", "a sparse weight gradient (sparse = {}) is not supported", 1);
    return detail::embedding_weight_grad(info, in[0], in[1], in[2], /*x_first=*/true, /*keep_rows=*/false, s);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
