#ifndef CTSPMD_RULES_MATMUL_HPP
#define CTSPMD_RULES_MATMUL_HPP
/// \file The matmul rule: out = op(x) @ op(y), op transposing the last two dims when
/// `trans_x` / `trans_y` is set, with numpy batch broadcasting.
///
/// matmul is the einsum `B mk, B kn -> B mn` (einsum.hpp), its notation given by the ranks,
/// with `alphabets::matmul` (no k, m, n) for the batch letters B, right-aligned:
///   1-D x 1-D: `k,k->`;  1-D x N-D: `k,Bkn->Bn`;  N-D x 1-D: `Bmk,k->Bm`;
///   N-D x N-D: `Bx mk, By kn -> B mn`, B the batch letters of the higher-rank operand.
/// A transposed operand is read in (m, k) / (k, n) order: its dims mapping and shape have
/// their last two entries swapped before the einsum and its inferred mapping is swapped
/// back after, so the size-1 check reads the transposed shape in both directions.
///
/// Forward: x and y are merged with `merge_conflicts` (a mesh dim claimed by two axes stays
/// with the first); the output is partial (sum) on the mesh dim of k when k is sharded
/// (each device multiplies its slice of k). Size-1 dims, e.g. a broadcast batch dim, are
/// never sharded and do not shard the other operand (Paddle merges their sharding; one
/// element cannot be split, so we ignore it).
///
/// Backward: the inputs' mappings are ignored; the output's alone is merged (conflicts are
/// `precondition_not_met`); x and y take the output's mapping of their labels, k replicated
/// (it is not in the output), size-1 dims replicated. No partial status is inferred for the
/// inputs; the output is returned unchanged.

#include <cstdint>
#include <utility>

#include <ctspmd/notation/axes.hpp>
#include <ctspmd/notation/einsum_notation.hpp>
#include <ctspmd/rules/kit/einsum_core.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `matmul` (Paddle's defaults).
struct matmul_attributes {
  bool trans_x = false;  ///< x is used transposed (its last two dims swapped)
  bool trans_y = false;  ///< y is used transposed
};

/// The matmul rule.
struct matmul : rule_base<matmul, matmul_attributes> {
  static constexpr std::string_view name = "matmul";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};

  /// [..., m, n] from x [..., m, k] and y [..., k, n] (each after its transpose, if any), the
  /// batch dims broadcast; a 1-D x is [k] (no m in the output), a 1-D y is [k] (no n), as in
  /// numpy's matmul. Transposing a 1-D operand is an error, as in forward.
  /// 2mnk: 2 x (x's local elements) x (y's local output length) (rules/kit/cost_traits.hpp).
  static constexpr std::int64_t flops(const local_operands& in, const local_operands&, const attributes& a) {
    return matmul_flops(in, a.trans_y);
  }
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const tensor_shape &x = in[0].shape(), &y = in[1].shape();
    if (x.empty() || y.empty())
      return make_error(error_kind::invalid_argument, "", "x and y must have rank >= 1, but have ranks {} and {}",
                        x.size(), y.size());
    if ((attrs.trans_x && x.size() < 2) || (attrs.trans_y && y.size() < 2))  // forward's messages
      return make_error(error_kind::invalid_argument, "",
                        attrs.trans_x && x.size() < 2 ? "trans_x needs x of rank >= 2, but x has rank {}"
                                                      : "trans_y needs y of rank >= 2, but y has rank {}",
                        attrs.trans_x && x.size() < 2 ? x.size() : y.size());
    // The last two dims as used: x [m, k], y [k, n] (a 1-D operand has only its k).
    const std::size_t xl = x.size() - 1, yl = y.size() - 1;
    const std::int64_t kx = x[attrs.trans_x ? xl - 1 : xl];
    const std::int64_t ky = y.size() == 1 ? y[0] : y[attrs.trans_y ? yl : yl - 1];
    if (kx != ky && kx != -1 && ky != -1)
      return make_error(error_kind::invalid_argument, "", "x's k size {} differs from y's {}", kx, ky);
    const std::size_t bx = x.size() > 2 ? x.size() - 2 : 0, by = y.size() > 2 ? y.size() - 2 : 0;
    tensor_shape& o = out.emplace_back();
    for (std::size_t d = 0; d < bx; ++d) o.push_back(x[d]);
    CTSPMD_TRY(broadcast_into(o, {y.data(), by}));
    if (x.size() >= 2) o.push_back(x[attrs.trans_x ? xl : xl - 1]);
    if (y.size() >= 2) o.push_back(y[attrs.trans_y ? yl - 1 : yl]);
    return {};
  }

  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    detail::einsum_labels<2> l;
    CTSPMD_TRY(labels_of(l, in[0].ndim(), in[1].ndim()));
    if (!attrs.trans_x && !attrs.trans_y) return detail::einsum_forward(info, l, in, /*merge_conflicts=*/true, s);
    return forward_transposed(info, l, in, attrs, s);
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs,
                                   semantics s) {
    detail::einsum_labels<2> l;
    CTSPMD_TRY(labels_of(l, in[0].ndim(), in[1].ndim()));
    if (!attrs.trans_x && !attrs.trans_y) return detail::einsum_backward(info, l, in, out, s);
    return backward_transposed(info, l, in, out, attrs, s);
  }

  /// The einsum notation of a matmul of ranks `x_ndim` and `y_ndim` (in (m, k) / (k, n) order).
  static constexpr result<einsum_notation> notation(std::int64_t x_ndim, std::int64_t y_ndim) {
    detail::einsum_labels<2> l;
    if (auto s = labels_of(l, x_ndim, y_ndim); !s) return s.error();
    einsum_notation n;
    n.inputs.push_back(l.inputs[0]);
    n.inputs.push_back(l.inputs[1]);
    n.output = l.output;
    return n;
  }

 private:
  // For each batch length B, its letters (the first B of the alphabet) then the labels after
  // them in x, y and the output: every operand's labels are a view of one of these.
  static constexpr ctspmd::detail::letters_then<2> batch_mk{alphabets::matmul, "mk"};
  static constexpr ctspmd::detail::letters_then<2> batch_kn{alphabets::matmul, "kn"};
  static constexpr ctspmd::detail::letters_then<2> batch_mn{alphabets::matmul, "mn"};
  static constexpr ctspmd::detail::letters_then<1> batch_n{alphabets::matmul, "n"};

  /// Sets `l` to the labels of `notation(x_ndim, y_ndim)`, as views of the strings above
  /// (this runs at every call).
  static constexpr status labels_of(detail::einsum_labels<2>& l, std::int64_t x_ndim, std::int64_t y_ndim) {
    if (x_ndim < 1 || y_ndim < 1)
      return make_error(error_kind::invalid_argument, "", "x and y must have rank >= 1, but have ranks {} and {}", x_ndim,
                        y_ndim);
    const std::int64_t longer = x_ndim > y_ndim ? x_ndim : y_ndim;
    const std::int64_t batch = longer > 2 ? longer - 2 : 0;
    // Each operand's batch letters are the last of the first `batch` letters of the alphabet
    // (`get_broadcast_axes`). The one way that can fail is a batch longer than the alphabet
    // (only with a max_rank above Paddle's); its error is get_broadcast_axes's.
    if (static_cast<std::size_t>(batch) > alphabets::matmul.size())
      return try_get_broadcast_axes(0, batch, alphabets::matmul).error();
    const auto b = static_cast<std::size_t>(batch);  // <= max_rank - 2: the ranks are those of specs
    const auto batch_of = [&](std::int64_t ndim) { return b - static_cast<std::size_t>(ndim - 2); };
    l.contracted = "k";
    l.inputs[0] = x_ndim == 1 ? "k" : batch_mk(b).substr(batch_of(x_ndim));
    l.inputs[1] = y_ndim == 1 ? "k" : batch_kn(b).substr(batch_of(y_ndim));
    l.output = x_ndim == 1 && y_ndim == 1 ? ""
               : x_ndim == 1              ? batch_n(b)
               : y_ndim == 1              ? batch_mn(b).substr(0, b + 1)  // the batch letters, then m
                                          : batch_mn(b);
    return {};
  }

  // With a transposed operand: the einsum over x and y as it reads them, its inferred input
  // mappings swapped back. Apart, so that the copies of the operands they make do not weigh
  // on the untransposed call.
  CTSPMD_NOINLINE static constexpr status forward_transposed(spmd_info& info, const detail::einsum_labels<2>& l,
                                                             spec_span in, const attributes& attrs, semantics s) {
    const auto t = transposed_operands(in, attrs);
    if (!t) return t.error();
    CTSPMD_TRY(detail::einsum_forward(info, l, {t->data(), 2}, /*merge_conflicts=*/true, s));
    swap_back(info, attrs);
    return {};
  }
  CTSPMD_NOINLINE static constexpr status backward_transposed(spmd_info& info, const detail::einsum_labels<2>& l,
                                                              spec_span in, spec_span out, const attributes& attrs,
                                                              semantics s) {
    const auto t = transposed_operands(in, attrs);
    if (!t) return t.error();
    CTSPMD_TRY(detail::einsum_backward(info, l, {t->data(), 2}, out, s));
    swap_back(info, attrs);
    return {};
  }

  /// `a` with the lists of its last two dims swapped.
  static constexpr void swap_last_two(tensor_dist_attr& a) {
    using access = ctspmd::detail::tensor_dist_attr_access;
    const std::size_t n = a.rank();
    const mesh_dim_list last = access::list(a, n - 1), before = access::list(a, n - 2);
    access::replace(a, n - 2, mesh_dim_list{});
    access::replace(a, n - 1, before);
    access::replace(a, n - 2, last);
  }

  /// x and y as the einsum reads them: a transposed operand with its last two dims swapped.
  static constexpr result<static_vector<dist_tensor_spec, 2>> transposed_operands(spec_span in, const attributes& attrs) {
    static_vector<dist_tensor_spec, 2> t{in[0], in[1]};
    const bool trans[2] = {attrs.trans_x, attrs.trans_y};
    for (std::size_t i = 0; i < 2; ++i) {
      if (!trans[i]) continue;
      if (in[i].ndim() < 2)
        return make_error(error_kind::invalid_argument, "", i == 0 ? "trans_x needs x of rank >= 2, but x has rank {}"
                                                                   : "trans_y needs y of rank >= 2, but y has rank {}",
                          in[i].ndim());
      auto shape = in[i].shape();
      std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
      tensor_dist_attr attr = in[i].dist_attr();
      swap_last_two(attr);
      t[i] = dist_tensor_spec(shape, attr);
    }
    return t;
  }

  /// Returns the inferred mappings of transposed operands to their stored order.
  static constexpr void swap_back(spmd_info& info, const attributes& attrs) {
    const bool trans[2] = {attrs.trans_x, attrs.trans_y};
    for (std::size_t i = 0; i < 2; ++i)
      if (trans[i]) swap_last_two(info.inputs[i]);
  }
};

}  // namespace ctspmd::rules

#endif
