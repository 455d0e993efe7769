#ifndef CTSPMD_RULES_SCATTER_HPP
#define CTSPMD_RULES_SCATTER_HPP
/// \file `scatter` (x, index, updates; overwrite) -> out and its grad `scatter_grad` (index,
/// updates, out_grad; overwrite) -> x_grad, updates_grad.
///
/// scatter: index is 1-D [n]; updates has x's rank, n rows and x's sizes elsewhere; out is x with
/// its rows index[i] replaced by updates[i] (overwrite) or by the sum of the updates naming them
/// (overwrite = false). Notation: x, updates and out get `'1'` at dim 0 and the letters `b`, `c`,
/// ... elsewhere; index gets `'1'`. As in Paddle's tests, updates decides: its mapping (merged
/// alone, fluid first-wins or phi's co-shard policy) is given to x, updates and out; x's own
/// mapping is not consulted (x is resharded to updates' layout; both are correct). Dim 0 stays
/// replicated everywhere: any index may name any row, and neither mode is a sum over devices
/// holding parts of the index (rows not named keep x on every device), so a sharded index cannot
/// make out partial. Paddle keeps a sharded index (and updates' dim 0 with it) and makes out
/// Partial(sum) on its mesh dims (its test `[0,-1,-1], [-1], [0,-1,-1]` -> index `[0]`, out
/// partial {0}): summing the devices' outs counts x's untouched rows once per device, so we do
/// not copy it. Partial status is dropped. Reverse: out's mapping (dim 0 replicated) goes to x,
/// updates and out; index replicated (Paddle's reverse test agrees).
///
/// scatter_grad (index, updates, out_grad) -> x_grad (out_grad with the named rows zeroed, in
/// both modes), updates_grad (out_grad's rows at index): labelled as above, out_grad as out;
/// out_grad decides (its mapping, dim 0 replicated, goes to updates, x_grad and updates_grad;
/// index replicated), as in Paddle's grad tests. Shapes: updates' rows = index's size, updates
/// and out_grad agree beyond dim 0. No reverse inference.
///
/// Index ranks other than 1 (Paddle's kernel also takes [n, 1] and 0-D) are InvalidArgument.
/// `overwrite` does not change the layouts. Both semantics behave the same except for the merge
/// policy (these rules exist in phi only).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/cumsum.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `scatter` and `scatter_grad` (Paddle's defaults).
struct scatter_attributes {
  bool overwrite = true;
};

namespace detail {

/// The labels of a scatter's row-indexed operand `x`: `'1'` then `b`, `c`, ... (`what`: the
/// rank error's format).
constexpr result<axes_string> scatter_labels(const dist_tensor_spec& x, const char* what) {
  if (x.ndim() < 1) return make_error(error_kind::invalid_argument, "", what, x.ndim());
  const auto l = first_letters(x.ndim());
  if (!l) return l.error();
  return axes_string(std::string_view(&broadcast_label, 1)) + l->substr(1);
}

/// Checks index (1-D) and `updates` against the row-indexed operand `x` (x or out_grad, named
/// in the two formats): same rank, index's size rows, x's sizes beyond dim 0.
constexpr status check_scatter_shapes(const dist_tensor_spec& x, const dist_tensor_spec& index,
                                      const dist_tensor_spec& updates, const char* rank_format,
                                      const char* size_format) {
  if (index.ndim() != 1)
    return make_error(error_kind::invalid_argument, "", "index must be 1-D, but has rank {}", index.ndim());
  if (updates.ndim() != x.ndim())
    return make_error(error_kind::invalid_argument, "", rank_format, updates.ndim(), x.ndim());
  const auto n = index.shape()[0], rows = updates.shape()[0];
  if (n != -1 && rows != -1 && n != rows)
    return make_error(error_kind::invalid_argument, "", "updates has {} rows, but index has {} entries", rows, n);
  for (std::size_t d = 1; d < x.shape().size(); ++d) {
    const auto got = updates.shape()[d], want = x.shape()[d];
    if (got != -1 && want != -1 && got != want)
      return make_error(error_kind::invalid_argument, "", size_format, got, d, want);
  }
  return {};
}

/// scatter's forward (from x, index, updates) or reverse (from `out`).
constexpr status scatter_infer(spmd_info& info, spec_span in, const dist_tensor_spec& out, bool reverse, semantics s) {
  const auto xl = scatter_labels(in[0], "x must have rank >= 1, but has rank {}");
  if (!xl) return xl.error();
  CTSPMD_TRY(check_scatter_shapes(in[0], in[1], in[2], "updates has rank {}, but x has rank {}",
                                  "updates has size {} at dim {}, but x has {}"));
  axis_to_dim_map map;
  if (!reverse) {
    CTSPMD_TRY(merge_operand(map, *xl, in[2], s, scan_merge));
  } else {
    if (out.ndim() != in[0].ndim())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but must have rank {} (x's)",
                        out.ndim(), in[0].ndim());
    CTSPMD_TRY(merge_operand(map, *xl, out, s, scan_merge));
  }
  push(info.inputs, in[0].dist_attr(), *xl, map);
  push(info.inputs, in[1].dist_attr(), std::string_view("1"), map);
  push(info.inputs, in[2].dist_attr(), *xl, map);
  push(info.outputs, reverse ? out.dist_attr() : in[0].dist_attr(), *xl, map);
  return {};
}

}  // namespace detail

/// The scatter rule (see the file comment).
struct scatter : rule_base<scatter, scatter_attributes> {
  static constexpr std::string_view name = "scatter";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{1};
  /// x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    return detail::scatter_infer(info, in, in[0], false, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    return detail::scatter_infer(info, in, out[0], true, s);
  }
};

/// The scatter_grad rule (see the file comment).
struct scatter_grad : rule_base<scatter_grad, scatter_attributes> {
  static constexpr std::string_view name = "scatter_grad";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{2};
  /// x_grad: out_grad's shape (x's); updates_grad: updates' shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {2, 1});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    const auto l = detail::scatter_labels(in[2], "out_grad must have rank >= 1, but has rank {}");
    if (!l) return l.error();
    CTSPMD_TRY(detail::check_scatter_shapes(in[2], in[0], in[1], "updates has rank {}, but out_grad has rank {}",
                                            "updates has size {} at dim {}, but out_grad has {}"));
    const std::array<std::string_view, 3> labels{"1", l->view(), l->view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, *l, in[2], s, detail::scan_merge));
    for (std::size_t i = 0; i < 3; ++i) push(info.inputs, in[i].dist_attr(), labels[i], map);
    push(info.outputs, in[2].dist_attr(), *l, map);
    push(info.outputs, in[1].dist_attr(), *l, map);
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
