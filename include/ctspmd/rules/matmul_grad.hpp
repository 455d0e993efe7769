#ifndef CTSPMD_RULES_MATMUL_GRAD_HPP
#define CTSPMD_RULES_MATMUL_GRAD_HPP
/// \file The matmul grad rule (`matmul_grad`, phi): inputs x, y, out_grad (G); outputs x_grad
/// and y_grad, the gradients of out = op(x) @ op(y) (matmul.hpp: op transposes the last two dims
/// when `trans_x` / `trans_y` is set; batch dims broadcast).
///
/// Notation: matmul's (`B mk, B kn -> B mn`, batch letters from `abcdefghijlopqrstuvwxyz`,
/// 1-D operands as in matmul.hpp), each operand labelled in its stored order (a transposed
/// operand's last two labels swapped), G labelled as the output.
///
/// Checks (`invalid_argument`, naming the operands and sizes): x and y of rank >= 1, rank >= 2
/// where transposed; k of one size in x and y; batch sizes that broadcast; G of the output's rank
/// and sizes (-1, an unknown size, matches anything).
///
/// Inference: x, y and G are merged in that order over their labels with the semantics' policy
/// (fluid first-wins, phi the co-shard union with the divisibility drop and largest-axis-wins); a
/// size-1 dim is read as `'1'` (never sharded, proposes nothing). x, y and G are required with
/// the merged mappings of their labels and without partial status (G's partial sum would pass
/// linearly to both gradients, but phi's rule, like its forward, asks for whole operands; so do
/// we). Each gradient is an einsum of the two other tensors onto the operand's labels (dX = G
/// op(Y)ᵀ, dY = op(X)ᵀ G): it takes the operand's merged mapping, and a device sums only over
/// its shard of every label the operand lacks, so the gradient is partial (sum) on the mesh dims
/// of (1) the contracted label of that einsum (n for x_grad, m for y_grad), (2) the leading batch
/// dims the operand lacks, and (3) the batch dims where the operand has size 1 and the output
/// not (phi's ReduceGradBroadCastDims). (2) and (3) are the broadcast reduction that
/// `reduce_grad_broadcast_dims` (kit/labels_and_merges.hpp) describes; here all three read from one merged map.
///
/// Where we differ from phi: phi re-runs matmul forward on (x, y), then two more matmul forwards
/// (one per gradient, per trans case), and fails with `Unavailable` when their operand layouts
/// disagree; we merge the three tensors once, so the layouts agree by construction and the rule
/// never fails on a valid input. On every co-shard case of Paddle's
/// matmul_co_shard_spmd_rule_test (MatmulGradInferSpmd) both give the same answer under phi.
/// Backward (reverse) inference: none (a grad rule is called forward).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/policies.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/matmul.hpp>

namespace ctspmd::rules {

namespace detail {

/// The size of label `c` in the operands `labels` / `specs` (the broadcast of its known sizes),
/// or -1 if no operand knows it.
template <std::size_t N>
constexpr std::int64_t label_size(char c, std::span<const std::string_view, N> labels, spec_span specs) {
  std::int64_t size = -1;
  bool seen = false;
  for (std::size_t t = 0; t < labels.size(); ++t)
    for (std::size_t i = 0; i < labels[t].size(); ++i)
      if (labels[t][i] == c) {
        size = seen ? ctspmd::detail::broadcast_size(size, specs[t].shape()[i]) : specs[t].shape()[i];
        seen = true;
      }
  return size;
}

/// Pushes the gradient of the operand with `labels` and `shape` from `map`: its merged mapping
/// (size-1 dims replicated), partial (sum) on the mesh dims of every label of the map the operand
/// lacks or has at a size-1 dim.
constexpr void push_grad(dist_attrs& out, const tensor_dist_attr& src, std::string_view labels,
                         const tensor_shape& shape, const axis_to_dim_map& map) {
  axes_string kept;
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (shape[i] != 1) kept.push_back(labels[i]);
  tensor_dist_attr& g = push(out, src, size_one_unsharded{labels, shape}, map);
  const mesh_dims summed = resolute_output_partial_dimension(map, kept);
  if (!summed.empty()) g.set_partial_status(summed, reduce_type::sum);
}

}  // namespace detail

/// The matmul grad rule.
struct matmul_grad : rule_base<matmul_grad, matmul_attributes> {
  static constexpr std::string_view name = "matmul_grad";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{2};

  /// x_grad and y_grad: x's and y's shapes.
  /// Twice the forward matmul's (x's and y's gradients, one matmul each).
  static constexpr std::int64_t flops(const local_operands& in, const local_operands&, const attributes& a) {
    return ctspmd::detail::saturating_product(2, matmul_flops(in, a.trans_y));
  }
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0, 1});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& y = in[1];
    const auto n = matmul::notation(x.ndim(), y.ndim());
    if (!n) return n.error();
    axes_string xl = n->inputs[0], yl = n->inputs[1];
    if (attrs.trans_x) {
      if (x.ndim() < 2)
        return make_error(error_kind::invalid_argument, "", "trans_x needs x of rank >= 2, but x has rank {}", x.ndim());
      swap_last_two(xl);
    }
    if (attrs.trans_y) {
      if (y.ndim() < 2)
        return make_error(error_kind::invalid_argument, "", "trans_y needs y of rank >= 2, but y has rank {}", y.ndim());
      swap_last_two(yl);
    }
    const std::array<std::string_view, 3> labels{xl.view(), yl.view(), n->output.view()};
    const std::span<const std::string_view, 3> ls(labels);
    CTSPMD_TRY(check_shapes(ls, in));

    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, ls, in, s, {/*merge_conflicts=*/true, /*size_one_unsharded=*/true, false,
                                               /*drop_indivisible=*/true}));
    for (std::size_t i = 0; i < 3; ++i) push(info.inputs, in[i].dist_attr(), size_one_unsharded{labels[i], in[i].shape()}, map);
    detail::push_grad(info.outputs, x.dist_attr(), labels[0], x.shape(), map);
    detail::push_grad(info.outputs, y.dist_attr(), labels[1], y.shape(), map);
    return {};
  }

  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }

 private:
  static constexpr void swap_last_two(axes_string& l) {
    const std::size_t r = l.size();
    const char c = l[r - 1];
    l[r - 1] = l[r - 2];
    l[r - 2] = c;
  }

  /// k of one size, batch sizes that broadcast, out_grad of the output's rank and sizes.
  static constexpr status check_shapes(std::span<const std::string_view, 3> l, spec_span in) {
    const auto& x = in[0];
    const auto& y = in[1];
    const auto& g = in[2];
    for (std::size_t i = 0; i < l[0].size(); ++i)
      for (std::size_t j = 0; j < l[1].size(); ++j) {
        if (l[0][i] != l[1][j]) continue;
        const std::int64_t a = x.shape()[i], b = y.shape()[j];
        if (a == -1 || b == -1 || a == b) continue;
        if (l[0][i] == 'k')
          return make_error(error_kind::invalid_argument, "",
                            "the contracted dim of x (dim {}, size {}) and of y (dim {}, size {}) differ", i, a, j, b);
        if (a != 1 && b != 1)
          return make_error(error_kind::invalid_argument, "",
                            "batch dim {} of x (size {}) and dim {} of y (size {}) do not broadcast", i, a, j, b);
      }
    if (g.ndim() != static_cast<std::int64_t>(l[2].size()))
      return make_error(error_kind::invalid_argument, "",
                        "out_grad has rank {}, but the output of x (rank {}) and y (rank {}) has rank {}", g.ndim(),
                        x.ndim(), y.ndim(), l[2].size());
    for (std::size_t d = 0; d < l[2].size(); ++d) {
      const std::int64_t want = detail::label_size(l[2][d], l.first<2>(), in.first(2));
      const std::int64_t got = g.shape()[d];
      if (want != -1 && got != -1 && want != got)
        return make_error(error_kind::invalid_argument, "",
                          "out_grad's dim {} has size {}, but the output of x and y has size {} there", d, got, want);
    }
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
