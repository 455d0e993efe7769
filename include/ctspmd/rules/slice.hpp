#ifndef CTSPMD_RULES_SLICE_HPP
#define CTSPMD_RULES_SLICE_HPP
/// \file The slice rules (`slice`, `strided_slice`): out = x[starts:ends(:strides)] along
/// each of `axes`; slice also drops the dims listed in `decrease_axis`.
///
/// Attributes: `axes` (each in [-rank, rank), no dim twice), and one `starts` and one `ends`
/// entry per axis (strided_slice: one `strides` entry too, non-zero). A start or end follows
/// Python's convention: negative counts from the end, then clamped to the dim (with a negative
/// stride, to [-1, size - 1]). slice's `decrease_axis` lists sliced dims (each must be in
/// `axes`) whose slice holds exactly one element (checked where the dim's size is known) and
/// that the output drops. `infer_flags` is accepted and not read (it tells Paddle's kernel
/// where starts and ends come from). Every violation is an `invalid_argument` naming the
/// attribute, the entry and the values.
///
/// Notation: x gets the first rank(x) letters of `abcdefghijklmnopqrstuvwxyz` with `'1'` at
/// every sliced axis; the output gets x's labels without the decreased dims.
///
/// Forward (Paddle's rule): a shard of a sliced dim does not hold the shard of the slice at
/// the same place, so every axis in `axes` is required replicated, whatever its range; x's
/// other dims keep their mesh dims (a co-shard list as a whole) and the output takes them.
/// (Paddle's strided_slice also keeps a last axis sharded in one special case; we replicate
/// every sliced axis, which is always correct.) Slicing only selects elements, so a partial x
/// stays partial and the output takes its partial status (Paddle clears it).
/// Backward: the output's rank must be rank(x) minus the decreased dims, and (slice) its known
/// sizes the slice's; its mapping, sliced dims replicated, is merged alone; x takes it and the
/// output comes back with it, not partial.
///
/// Both rules behave the same under both semantics except for the merge policy.
/// The round trip (forward, then backward from forward's outputs) gives back forward's x.
/// The gradients: `slice_grad` and `strided_slice_grad` (slice_grad.hpp).

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `slice`.
struct slice_attributes {
  static_vector<std::int64_t, max_rank> axes{};           ///< the sliced dims
  static_vector<std::int64_t, max_rank> starts{};         ///< per axis, the first index
  static_vector<std::int64_t, max_rank> ends{};           ///< per axis, one past the last index
  static_vector<std::int64_t, max_rank> infer_flags{};    ///< not read
  static_vector<std::int64_t, max_rank> decrease_axis{};  ///< sliced dims of one element the output drops
};

/// Attributes of `strided_slice`.
struct strided_slice_attributes {
  static_vector<std::int64_t, max_rank> axes{};     ///< the sliced dims
  static_vector<std::int64_t, max_rank> starts{};   ///< per axis, the first index
  static_vector<std::int64_t, max_rank> ends{};     ///< per axis, the bound (excluded)
  static_vector<std::int64_t, max_rank> strides{};  ///< per axis, the step (non-zero)
};

namespace detail {

/// Labels and shapes of a slice (see slice.hpp's file comment).
struct slice_notation {
  axes_string x;
  axes_string out;
  tensor_shape out_shape{};  ///< -1 where unknown
};

/// The number of elements x[start:end:step] holds along a dim of `size` (known, >= 0).
constexpr std::int64_t slice_length(std::int64_t size, std::int64_t start, std::int64_t end, std::int64_t step) {
  const auto clamp = [&](std::int64_t v) {
    if (v < 0) v += size;
    const std::int64_t lo = step > 0 ? 0 : -1;
    const std::int64_t hi = step > 0 ? size : size - 1;
    return v < lo ? lo : (v > hi ? hi : v);
  };
  const std::int64_t b = clamp(start);
  const std::int64_t e = clamp(end);
  if (step > 0) return e > b ? (e - b - 1) / step + 1 : 0;
  if (step < -size) return b > e ? 1 : 0;  // one element at most (and -step could overflow)
  return b > e ? (b - e - 1) / -step + 1 : 0;
}

/// Validates the slice attributes against `x` and labels the operands; `strides` empty = all 1.
constexpr result<slice_notation> notate_slice(const tensor_shape& x, const static_vector<std::int64_t, max_rank>& axes,
                                              const static_vector<std::int64_t, max_rank>& starts,
                                              const static_vector<std::int64_t, max_rank>& ends,
                                              const static_vector<std::int64_t, max_rank>& strides,
                                              const static_vector<std::int64_t, max_rank>& decrease) {
  const auto rank = static_cast<std::int64_t>(x.size());
  if (starts.size() != axes.size() || ends.size() != axes.size())
    return make_error(error_kind::invalid_argument, "", "axes has {} entries, but starts has {} and ends {}",
                      axes.size(), starts.size(), ends.size());
  const auto letters = first_letters(rank);
  if (!letters) return letters.error();
  slice_notation n;
  n.x = *letters;
  n.out_shape = x;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto d = normalize_axis(axes[i], rank, "axes entry {} is out of range for x of rank {}");
    if (!d) return d.error();
    if (n.x[*d] == broadcast_label)
      return make_error(error_kind::invalid_argument, "", "axes lists dim {} twice (entry {} is {})", *d, i, axes[i]);
    n.x[*d] = broadcast_label;
    const std::int64_t step = strides.empty() ? 1 : strides[i];
    if (step == 0) return make_error(error_kind::invalid_argument, "", "strides entry {} is 0", i);
    if (x[*d] >= 0) n.out_shape[*d] = slice_length(x[*d], starts[i], ends[i], step);
  }
  static_vector<bool, max_rank> dropped(x.size(), false);
  for (std::size_t i = 0; i < decrease.size(); ++i) {
    const auto d = normalize_axis(decrease[i], rank, "decrease_axis entry {} is out of range for x of rank {}");
    if (!d) return d.error();
    if (n.x[*d] != broadcast_label)
      return make_error(error_kind::invalid_argument, "", "decrease_axis entry {} is dim {}, which axes does not slice",
                        i, *d);
    if (n.out_shape[*d] != -1 && n.out_shape[*d] != 1)
      return make_error(error_kind::invalid_argument, "",
                        "decrease_axis drops dim {}, but its slice holds {} elements, not 1", *d, n.out_shape[*d]);
    dropped[*d] = true;
  }
  tensor_shape kept;
  for (std::size_t d = 0; d < x.size(); ++d)
    if (!dropped[d]) {
      n.out.push_back(n.x[d]);
      kept.push_back(n.out_shape[d]);
    }
  n.out_shape = kept;
  return n;
}

/// Forward of a slice labelled `n`: x's unsliced dims pass to the output, partial kept.
constexpr status slice_forward(spmd_info& info, const dist_tensor_spec& x, const slice_notation& n, semantics s) {
  axis_to_dim_map map;
  CTSPMD_TRY(merge_operand(map, n.x, x, s));
  add_partial_of(push(info.inputs, x.dist_attr(), n.x, map), x.dist_attr());
  add_partial_of(push(info.outputs, x.dist_attr(), n.out, map), x.dist_attr());
  return {};
}

/// Backward of a slice labelled `n` from the output `o`.
constexpr status slice_backward(spmd_info& info, const dist_tensor_spec& x, const dist_tensor_spec& o,
                                const slice_notation& n, semantics s) {
  if (o.shape().size() != n.out.size())
    return make_error(error_kind::invalid_argument, "", "the output has rank {}, but the slice of x has rank {}",
                      o.ndim(), n.out.size());
  CTSPMD_TRY(check_same_sizes(o.shape(), n.out_shape, "output dim {} has size {}, but the slice gives {}"));
  axis_to_dim_map map;
  CTSPMD_TRY(merge_operand(map, n.out, o, s));
  push(info.inputs, x.dist_attr(), n.x, map);
  push(info.outputs, o.dist_attr(), n.out, map);
  return {};
}

}  // namespace detail

/// The slice rule.
struct slice : rule_base<slice, slice_attributes> {
  static constexpr std::string_view name = "slice";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape with each sliced dim's length, the decreased dims dropped.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& a) {
    const auto n = detail::notate_slice(in[0].shape(), a.axes, a.starts, a.ends, {}, a.decrease_axis);
    if (!n) return n.error();
    out.push_back(n->out_shape);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    const auto n = detail::notate_slice(in[0].shape(), a.axes, a.starts, a.ends, {}, a.decrease_axis);
    if (!n) return n.error();
    return detail::slice_forward(info, in[0], *n, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& a, semantics s) {
    const auto n = detail::notate_slice(in[0].shape(), a.axes, a.starts, a.ends, {}, a.decrease_axis);
    if (!n) return n.error();
    return detail::slice_backward(info, in[0], out[0], *n, s);
  }
};

/// The strided_slice rule.
struct strided_slice : rule_base<strided_slice, strided_slice_attributes> {
  static constexpr std::string_view name = "strided_slice";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape with each sliced dim's length.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& a) {
    const auto n = notate(in[0].shape(), a);
    if (!n) return n.error();
    out.push_back(n->out_shape);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    const auto n = notate(in[0].shape(), a);
    if (!n) return n.error();
    return detail::slice_forward(info, in[0], *n, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& a, semantics s) {
    const auto n = notate(in[0].shape(), a);
    if (!n) return n.error();
    return detail::slice_backward(info, in[0], out[0], *n, s);
  }

 private:
  static constexpr result<detail::slice_notation> notate(const tensor_shape& x, const attributes& a) {
    if (a.strides.size() != a.axes.size())
      return make_error(error_kind::invalid_argument, "", "axes has {} entries, but strides has {}", a.axes.size(),
                        a.strides.size());
    return detail::notate_slice(x, a.axes, a.starts, a.ends, a.strides, {});
  }
};

}  // namespace ctspmd::rules

#endif
