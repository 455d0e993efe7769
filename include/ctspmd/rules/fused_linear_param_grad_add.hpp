#ifndef CTSPMD_RULES_FUSED_LINEAR_PARAM_GRAD_ADD_HPP
#define CTSPMD_RULES_FUSED_LINEAR_PARAM_GRAD_ADD_HPP
/// \file The fused_linear_param_grad_add rule (phi): inputs x [..., M], dout [..., N] (the
/// output gradient of a linear layer whose input is x), dweight [M, N] and dbias [N] (both
/// optional: gradients accumulated so far); outputs dweight_out = dweight + xᵀ dout (summed over
/// every leading dim) and dbias_out = dbias + dout summed over its leading dims (when has_bias).
///
/// Notation: the leading dims L are the first rank - 1 letters of `abcdefghijlopqrstuvwxyz`; x is
/// `Lm`, dout `Ln`, dweight `mn`, dbias `n`.
///
/// Checks (`invalid_argument`, naming operands and sizes): x and dout of one rank >= 2 and equal
/// leading sizes; a given dweight [M, N] and dbias [N]. -1 matches any size.
///
/// Inference: x and dout are merged over their labels with the semantics' policy (fluid
/// first-wins, phi the co-shard union); x and dout come back with the merged mappings and no
/// partial status. The new gradient xᵀ dout takes the mapping of `mn` and is partial (sum) on
/// the mesh dims of L (each device sums over its own rows: phi's matmul with trans_x and its
/// ReduceGradBroadCastDims); the bias gradient takes `n` and is partial on the same mesh dims.
/// dweight_out and dbias_out are those attrs; a given dweight / dbias is required in exactly that
/// layout (partial included: adding a partial accumulator to a partial new gradient sums right).
/// phi refuses a dweight / dbias whose attrs differ (InvalidArgument); we ask for the reshard
/// instead, as a rule does for any input. Without has_bias, dbias_out is absent (shape [],
/// mapping []) and an absent dbias comes back as given. Backward (reverse) inference: none; phi's
/// reverse is empty (the operator is itself a gradient).

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

/// Attributes of `fused_linear_param_grad_add` (Paddle's defaults).
struct fused_linear_param_grad_add_attributes {
  bool multi_precision = true;  ///< accumulate in float32 (does not change the sharding)
  bool has_bias = true;         ///< dbias_out is computed
};

/// The fused_linear_param_grad_add rule.
struct fused_linear_param_grad_add : rule_base<fused_linear_param_grad_add, fused_linear_param_grad_add_attributes> {
  static constexpr std::string_view name = "fused_linear_param_grad_add";
  static constexpr operand_count input_count{2, 4};
  static constexpr operand_count output_count{2};

  /// dweight_out [M, N] from x [..., M] and dout [..., N]; dbias_out [N] (has_bias), else [].
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto &x = in[0].shape(), &dout = in[1].shape();
    if (x.size() < 2 || dout.size() != x.size())
      return make_error(error_kind::invalid_argument, "", "x and dout must have one rank >= 2, but have ranks {} and {}",
                        x.size(), dout.size());
    const std::int64_t m = x[x.size() - 1], n = dout[dout.size() - 1];
    out.push_back({m, n});
    out.push_back(attrs.has_bias ? tensor_shape{n} : tensor_shape{});
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& dout = in[1];
    if (x.ndim() < 2 || x.ndim() != dout.ndim())
      return make_error(error_kind::invalid_argument, "", "x and dout must have one rank >= 2, but have ranks {} and {}",
                        x.ndim(), dout.ndim());
    const auto lead = static_cast<std::size_t>(x.ndim() - 1);
    if (lead > alphabets::matmul.size()) return try_get_broadcast_axes(0, x.ndim() - 1, alphabets::matmul).error();
    for (std::size_t d = 0; d < lead; ++d)
      if (x.shape()[d] != -1 && dout.shape()[d] != -1 && x.shape()[d] != dout.shape()[d])
        return make_error(error_kind::invalid_argument, "", "x's dim {} has size {}, but dout's has size {}", d,
                          x.shape()[d], dout.shape()[d]);
    const std::int64_t m = x.shape()[lead], n = dout.shape()[lead];
    const dist_tensor_spec none;
    const dist_tensor_spec& dw = in.size() > 2 ? in[2] : none;
    const dist_tensor_spec& db = in.size() > 3 ? in[3] : none;
    if (!is_absent(dw) && (dw.ndim() != 2 || differ(dw.shape()[0], m) || differ(dw.shape()[1], n)))
      return make_error(error_kind::invalid_argument, "",
                        "dweight must be [{}, {}] (x's and dout's last dims), but has rank {} and dim 0 of size {}", m, n,
                        dw.ndim(), dw.ndim() > 0 ? dw.shape()[0] : 0);
    if (!is_absent(db) && (db.ndim() != 1 || differ(db.shape()[0], n)))
      return make_error(error_kind::invalid_argument, "", "dbias must be [{}] (dout's last dim), but has rank {}", n,
                        db.ndim());

    axes_string xl(alphabets::matmul.substr(0, lead)), dl(alphabets::matmul.substr(0, lead));
    xl.push_back('m');
    dl.push_back('n');
    const std::array<std::string_view, 2> labels{xl.view(), dl.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), in.first(2), s,
                              {/*merge_conflicts=*/true, /*size_one_unsharded=*/true}));
    push(info.inputs, x.dist_attr(), size_one_unsharded{labels[0], x.shape()}, map);
    push(info.inputs, dout.dist_attr(), size_one_unsharded{labels[1], dout.shape()}, map);

    const mesh_dims summed = sharding_mesh_dims(map, alphabets::matmul.substr(0, lead));
    tensor_dist_attr w = copy_tensor_dist_attr_for_output(x.dist_attr());
    {
      dist_attrs tmp;
      push(tmp, x.dist_attr(), std::string_view("mn"), map);
      w = tmp[0];
    }
    if (!summed.empty()) w.set_partial_status(summed, reduce_type::sum);
    tensor_dist_attr b = copy_tensor_dist_attr_for_output(x.dist_attr());
    if (attrs.has_bias) {
      dist_attrs tmp;
      push(tmp, x.dist_attr(), std::string_view("n"), map);
      b = tmp[0];
      if (!summed.empty()) b.set_partial_status(summed, reduce_type::sum);
    }
    if (in.size() > 2) info.inputs.push_back(is_absent(dw) ? dw.dist_attr() : w);
    if (in.size() > 3) info.inputs.push_back(is_absent(db) ? db.dist_attr() : b);
    info.outputs.push_back(w);
    info.outputs.push_back(b);
    return {};
  }

  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }

 private:
  static constexpr bool differ(std::int64_t a, std::int64_t b) noexcept { return a != -1 && b != -1 && a != b; }
};

}  // namespace ctspmd::rules

#endif
