#ifndef CTSPMD_RULES_GATHER_HPP
#define CTSPMD_RULES_GATHER_HPP
/// \file The indexing rules along one axis: `gather` and `index_select` (out = x's slices at
/// `index` along `axis`), their grads `gather_grad` and `index_select_grad`, and `one_hot`.
///
/// gather / index_select (x, index; axis, default 0): index is 1-D [n] (gather also takes a 0-D
/// index, which removes the axis); out is x with the axis of size n (or without it).
/// Notation: x gets the first rank(x) letters with the axis `'1'` (any index may name any slice,
/// so the indexed axis is gathered first); index gets `z`; out gets x's letters with `z` at the
/// axis (or without it). x and index are merged (conflicts resolved: fluid first-wins, phi the
/// co-shard union with largest-axis-wins, ties to x); out takes the merge: an index sharded over
/// some mesh dims shards out's axis (each device looks up its indices). `axis` is in
/// [-rank, rank) and normalised; index of rank > 1 is InvalidArgument. Partial status is
/// dropped. Reverse: out's mapping goes to x's other dims and to index; x's axis replicated.
/// Matches Paddle's index_select co-shard tests (§5.8 of the notes).
///
/// gather_grad / index_select_grad (x, index, out_grad; axis) -> x_grad: out_grad's slices
/// added into x's shape at index. Labels x and x_grad as x (the axis `'1'`), index `z`, out_grad
/// as out; merged. A sharded index (and out_grad's axis with it) makes each device add only its
/// slices: x_grad is partial (sum) on the index's mesh dims (Paddle's index_select grad tests;
/// phi's gather grad replicates out_grad's axis instead, and indexes the index's mapping by x's
/// axis, a bug we do not copy). No reverse inference.
///
/// one_hot (x; num_classes) -> out = x's shape + [num_classes]: x's mapping, then the new class
/// dim replicated. Reverse: out's leading dims go to x (the class dim dropped). Partial dropped.
///
/// Both semantics behave the same except for the merge policy (these rules exist in phi only).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/cumsum.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `gather`, `index_select` and their grads (Paddle's defaults).
struct gather_attributes {
  std::int64_t axis = 0;
};

/// Attributes of `one_hot`.
struct one_hot_attributes {
  std::int64_t num_classes = -1;
};

namespace detail {

/// x's, index's and out's labels for a gather along `axis`.
struct gather_notation {
  axes_string x, index, out;
};
constexpr result<gather_notation> make_gather_notation(const dist_tensor_spec& x, const dist_tensor_spec& index,
                                                       std::int64_t axis) {
  if (x.ndim() < 1)
    return make_error(error_kind::invalid_argument, "", "x must have rank >= 1, but has rank {}", x.ndim());
  if (index.ndim() > 1)
    return make_error(error_kind::invalid_argument, "", "index must be 0-D or 1-D, but has rank {}", index.ndim());
  const auto xl = scan_labels(x.ndim(), axis, false);
  if (!xl) return xl.error();
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + x.ndim() : axis);
  gather_notation n{*xl, index.ndim() == 1 ? axes_string("z") : axes_string(), {}};
  for (std::size_t d = 0; d < n.x.size(); ++d)
    if (d != a)
      n.out.push_back(n.x[d]);
    else if (index.ndim() == 1)
      n.out.push_back('z');
  return n;
}

/// gather's and index_select's forward (from x and index) or reverse (from `out`).
/// gather's output shape (see `gather::output_shapes`).
constexpr status gather_shape(shape_list& out, spec_span in, std::int64_t axis) {
  const auto n = make_gather_notation(in[0], in[1], axis);
  if (!n) return n.error();
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + in[0].ndim() : axis);
  tensor_shape& o = out.emplace_back();
  for (std::size_t d = 0; d < in[0].shape().size(); ++d)
    if (d != a)
      o.push_back(in[0].shape()[d]);
    else if (in[1].ndim() == 1)
      o.push_back(in[1].shape()[0]);
  return {};
}

constexpr status gather_infer(spmd_info& info, spec_span in, const dist_tensor_spec& out, bool reverse,
                              std::int64_t axis, semantics s) {
  const auto n = make_gather_notation(in[0], in[1], axis);
  if (!n) return n.error();
  axis_to_dim_map map;
  if (!reverse) {
    const std::array<std::string_view, 2> labels{n->x.view(), n->index.view()};
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), in, s, scan_merge));
  } else {
    if (out.ndim() != static_cast<std::int64_t>(n->out.size()))
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but must have rank {}", out.ndim(),
                        n->out.size());
    CTSPMD_TRY(merge_operand(map, n->out, out, s, scan_merge));
  }
  push(info.inputs, in[0].dist_attr(), n->x, map);
  push(info.inputs, in[1].dist_attr(), n->index, map);
  push(info.outputs, reverse ? out.dist_attr() : in[0].dist_attr(), n->out, map);
  return {};
}

/// gather_grad's and index_select_grad's forward.
constexpr status gather_grad_infer(spmd_info& info, spec_span in, std::int64_t axis, semantics s) {
  const auto n = make_gather_notation(in[0], in[1], axis);
  if (!n) return n.error();
  if (in[2].ndim() != static_cast<std::int64_t>(n->out.size()))
    return make_error(error_kind::invalid_argument, "", "out_grad has rank {}, but must have rank {}", in[2].ndim(),
                      n->out.size());
  // out_grad has gather's output shape: x's sizes, the index's size at the axis.
  for (std::size_t d = 0; d < n->out.size(); ++d) {
    const char l = n->out[d];
    std::int64_t want = -1;
    for (std::size_t k = 0; k < n->x.size(); ++k)
      if (n->x[k] == l) want = in[0].shape()[k];
    if (l == 'z') want = in[1].shape()[0];
    const auto got = in[2].shape()[d];
    if (got != -1 && want != -1 && got != want)
      return make_error(error_kind::invalid_argument, "", "out_grad has size {} at dim {}, but gather's output has {}",
                        got, d, want);
  }
  const std::array<std::string_view, 3> labels{n->x.view(), n->index.view(), n->out.view()};
  axis_to_dim_map map;
  CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 3>(labels), in, s, scan_merge));
  for (std::size_t i = 0; i < 3; ++i) push(info.inputs, in[i].dist_attr(), labels[i], map);
  // Each device adds only the slices of its indices.
  push(info.outputs, in[0].dist_attr(), n->x, map).set_partial_status(sharding_mesh_dims(map, "z"));
  return {};
}

}  // namespace detail

/// The gather rule (see the file comment).
struct gather : rule_base<gather, gather_attributes> {
  static constexpr std::string_view name = "gather";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};
  /// x's shape with the axis replaced by the index's size (1-D index) or dropped (0-D index).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& a) {
    return detail::gather_shape(out, in, a.axis);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    return detail::gather_infer(info, in, in[0], false, a.axis, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& a, semantics s) {
    return detail::gather_infer(info, in, out[0], true, a.axis, s);
  }
};

/// The index_select rule: gather's, with a 1-D index (see the file comment).
struct index_select : rule_base<index_select, gather_attributes> {
  static constexpr std::string_view name = "index_select";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};
  /// x's shape with the axis replaced by the index's size.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& a) {
    CTSPMD_TRY(check_index(in[1]));
    return detail::gather_shape(out, in, a.axis);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    CTSPMD_TRY(check_index(in[1]));
    return detail::gather_infer(info, in, in[0], false, a.axis, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& a, semantics s) {
    CTSPMD_TRY(check_index(in[1]));
    return detail::gather_infer(info, in, out[0], true, a.axis, s);
  }
  static constexpr status check_index(const dist_tensor_spec& index) {
    if (index.ndim() != 1)
      return make_error(error_kind::invalid_argument, "", "index must be 1-D, but has rank {}", index.ndim());
    return {};
  }
};

/// The gather_grad rule (see the file comment).
struct gather_grad : rule_base<gather_grad, gather_attributes> {
  static constexpr std::string_view name = "gather_grad";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{1};
  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    return detail::gather_grad_infer(info, in, a.axis, s);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

/// The index_select_grad rule: gather_grad's, with a 1-D index.
struct index_select_grad : rule_base<index_select_grad, gather_attributes> {
  static constexpr std::string_view name = "index_select_grad";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{1};
  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    CTSPMD_TRY(index_select::check_index(in[1]));
    return detail::gather_grad_infer(info, in, a.axis, s);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

/// The one_hot rule (see the file comment).
struct one_hot : rule_base<one_hot, one_hot_attributes> {
  static constexpr std::string_view name = "one_hot";
  static constexpr cost_kind kind = cost_kind::moves;
  /// Reads its indices, writes its output.
  static constexpr std::int64_t bytes(const local_operands& in, const local_operands& out, const attributes&) {
    return ctspmd::detail::saturating_sum(in.total_bytes(), out.total_bytes());
  }
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};
  /// x's shape, then num_classes (-1: unknown).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& a) {
    if (in[0].shape().size() + 1 > max_rank)
      return make_error(error_kind::invalid_argument, "", "x of rank {} gives an output above max_rank = {}",
                        in[0].ndim(), max_rank);
    out.emplace_back(in[0].shape()).push_back(a.num_classes < 0 ? -1 : a.num_classes);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    return infer(info, in[0], in[0], false, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    if (out[0].ndim() != in[0].ndim() + 1)
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but must have rank {} (x's + 1)",
                        out[0].ndim(), in[0].ndim() + 1);
    return infer(info, in[0], out[0], true, s);
  }

 private:
  static constexpr status infer(spmd_info& info, const dist_tensor_spec& x, const dist_tensor_spec& from, bool reverse,
                                semantics s) {
    if (x.ndim() + 1 > static_cast<std::int64_t>(max_rank))
      return make_error(error_kind::invalid_argument, "", "x of rank {} gives an output of rank {}, above max_rank = {}",
                        x.ndim(), x.ndim() + 1, max_rank);
    const auto xl = first_letters(x.ndim());
    if (!xl) return xl.error();
    const axes_string ol = axes_string(*xl) + "1";
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, reverse ? ol.view() : *xl, from, s, detail::scan_merge));
    push(info.inputs, x.dist_attr(), *xl, map);
    push(info.outputs, from.dist_attr(), ol, map);
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
