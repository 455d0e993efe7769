#ifndef CTSPMD_RULES_CUMSUM_HPP
#define CTSPMD_RULES_CUMSUM_HPP
/// \file The cumsum rules (`cumsum`, `cumsum_grad`): out = the running sum of x along `axis`
/// (`exclusive`: without the element itself; `reverse`: from the end); `flatten`: of x
/// flattened, out 1-D.
///
/// Notation: x gets the first rank(x) letters; the scan axis is `'1'` (every element needs all
/// the elements before it on that axis, so a sharded scan axis is gathered first). `axis` is in
/// [-rank, rank) and normalised (phi reads a negative axis unnormalised, indexing out of
/// bounds: we do not copy that); a 0-D x takes -1 or 0. With `flatten`, every dim of x is
/// `'1'` and the output [numel] is replicated.
///
/// Forward: x is merged alone (the scan axis replicated); the output takes x's mapping. Partial
/// status is dropped (x comes back whole, the output not partial), as phi does; cumsum is
/// linear, so a partial sum could have stayed partial, but phi reshards it and so do we.
/// Backward: the output's mapping (the scan axis replicated) goes to x; with `flatten`, x is
/// replicated.
///
/// cumsum_grad (x, out_grad) -> x_grad: the reverse running sum of out_grad along the axis, of
/// x's shape: x and out_grad are merged on the same labels (the axis replicated) and x_grad
/// takes the merge; with `flatten`, out_grad is 1-D and everything is replicated. Both
/// semantics behave the same except for the merge policy. No reverse inference.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `cumsum` and `cumsum_grad` (Paddle's defaults).
struct cumsum_attributes {
  std::int64_t axis = -1;
  bool flatten = false;
  bool exclusive = false;
  bool reverse = false;
};

namespace detail {

/// x's labels for a scan along `axis` (flatten: all `'1'`).
constexpr result<axes_string> scan_labels(std::int64_t rank, std::int64_t axis, bool flatten) {
  const auto letters = first_letters(rank);
  if (!letters) return letters.error();
  const std::int64_t bound = rank > 0 ? rank : 1;  // a 0-D x takes -1 and 0
  if (axis < -bound || axis >= bound)
    return make_error(error_kind::invalid_argument, "", "axis {} is outside [-{}, {}) for x of rank {}", axis, bound,
                      bound, rank);
  axes_string l(*letters);
  for (std::size_t d = 0; d < l.size(); ++d)
    if (flatten || static_cast<std::int64_t>(d) == (axis < 0 ? axis + rank : axis)) l[d] = broadcast_label;
  return l;
}
constexpr merge_options scan_merge{true, false, false, /*drop_indivisible=*/true};

}  // namespace detail

/// The cumsum rule (see the file comment).
struct cumsum : rule_base<cumsum, cumsum_attributes> {
  static constexpr std::string_view name = "cumsum";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape; flatten: 1-D, x's element count (-1 when a size is unknown).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    CTSPMD_TRY(detail::scan_labels(in[0].ndim(), attrs.axis, attrs.flatten));
    if (!attrs.flatten) return shapes_of(out, in, {0});
    std::int64_t n = 1;
    for (const auto v : in[0].shape()) {
      if (n == -1 || v == -1) {
        n = -1;
      } else if (v != 0 && n > std::numeric_limits<std::int64_t>::max() / v) {
        return make_error(error_kind::invalid_argument, "", "x's element count overflows int64");
      } else {
        n *= v;
      }
    }
    out.emplace_back().push_back(n);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    return infer(info, in[0], in[0], false, attrs, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const std::int64_t want = attrs.flatten ? 1 : in[0].ndim();
    if (out[0].ndim() != want)
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but must have rank {} (x has rank {})",
                        out[0].ndim(), want, in[0].ndim());
    return infer(info, in[0], out[0], true, attrs, s);
  }

 private:
  /// x and the output from `from`'s mapping (x's forward, the output's backward).
  static constexpr status infer(spmd_info& info, const dist_tensor_spec& x, const dist_tensor_spec& from, bool reverse,
                                const attributes& attrs, semantics s) {
    const auto l = detail::scan_labels(x.ndim(), attrs.axis, attrs.flatten);
    if (!l) return l.error();
    const axes_string out = attrs.flatten ? axes_string("1") : *l;
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, reverse ? out.view() : l->view(), from, s, detail::scan_merge));
    push(info.inputs, x.dist_attr(), *l, map);
    push(info.outputs, from.dist_attr(), out, map);
    return {};
  }
};

/// The cumsum_grad rule (see the file comment).
struct cumsum_grad : rule_base<cumsum_grad, cumsum_attributes> {
  static constexpr std::string_view name = "cumsum_grad";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& g = in[1];
    const auto l = detail::scan_labels(x.ndim(), attrs.axis, attrs.flatten);
    if (!l) return l.error();
    const axes_string gl = attrs.flatten ? axes_string("1") : *l;
    if (g.ndim() != static_cast<std::int64_t>(gl.size()))
      return make_error(error_kind::invalid_argument, "", "out_grad has rank {}, but must have rank {} (x has rank {})",
                        g.ndim(), gl.size(), x.ndim());
    if (!attrs.flatten) CTSPMD_TRY(check_same_sizes(g.shape(), x.shape(), "out_grad's dim {} has size {}, but x's has size {}"));
    const std::array<std::string_view, 2> labels{l->view(), gl.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), in, s, detail::scan_merge));
    push(info.inputs, x.dist_attr(), *l, map);
    push(info.inputs, g.dist_attr(), gl, map);
    push(info.outputs, x.dist_attr(), *l, map);  // x_grad
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
