#ifndef CTSPMD_RULES_MATMUL_HPP
#define CTSPMD_RULES_MATMUL_HPP
/// \file The matmul rule: out = op(x) @ op(y), op transposing the last two dims when
/// `trans_x` / `trans_y` is set, with numpy batch broadcasting.
///
/// matmul is the einsum `B mk, B kn -> B mn` (einsum.hpp), its notation built from the
/// ranks with `alphabets::matmul` (no k, m, n) for the batch letters B, right-aligned:
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

#include <algorithm>
#include <cstdint>
#include <utility>

#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/einsum.hpp>
#include <ctspmd/rules/rule_base.hpp>

#include <boost/hana/adapt_struct.hpp>

namespace ctspmd::rules {

/// Attributes of `matmul` (Paddle's defaults).
struct matmul_attributes {
  bool trans_x = false;  ///< x is used transposed (its last two dims swapped)
  bool trans_y = false;  ///< y is used transposed
};

/// The matmul rule.
struct matmul : detail::rule_base<matmul, matmul_attributes> {
  static constexpr std::string_view name = "matmul";

  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs) {
    CTSPMD_TRY(detail::check_count(in, 2));
    einsum_notation n;
    CTSPMD_TRY(build_notation(n, in[0].ndim(), in[1].ndim()));
    if (!attrs.trans_x && !attrs.trans_y) return detail::einsum_forward(info, n, in, /*merge_conflicts=*/true);
    const auto t = transposed_operands(in, attrs);
    if (!t) return t.error();
    CTSPMD_TRY(detail::einsum_forward(info, n, {t->data(), 2}, /*merge_conflicts=*/true));
    swap_back(info, attrs);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs) {
    CTSPMD_TRY(detail::check_count(in, 2));
    einsum_notation n;
    CTSPMD_TRY(build_notation(n, in[0].ndim(), in[1].ndim()));
    if (!attrs.trans_x && !attrs.trans_y) return detail::einsum_backward(info, n, in, out);
    const auto t = transposed_operands(in, attrs);
    if (!t) return t.error();
    CTSPMD_TRY(detail::einsum_backward(info, n, {t->data(), 2}, out));
    swap_back(info, attrs);
    return {};
  }

  /// The einsum notation of a matmul of ranks `x_ndim` and `y_ndim` (in (m, k) / (k, n) order).
  static constexpr result<einsum_notation> notation(std::int64_t x_ndim, std::int64_t y_ndim) {
    result<einsum_notation> r{einsum_notation{}};
    if (auto s = build_notation(*r, x_ndim, y_ndim); !s) r = s.error();
    return r;
  }

 private:
  /// Writes `notation(x_ndim, y_ndim)` into `n` (empty), where the rule reads it.
  static constexpr status build_notation(einsum_notation& n, std::int64_t x_ndim, std::int64_t y_ndim) {
    if (x_ndim < 1 || y_ndim < 1)
      return make_error(error_kind::invalid_argument, "", "x and y must have rank >= 1, but have ranks {} and {}", x_ndim,
                        y_ndim);
    const std::int64_t max_ndim = std::max(x_ndim, y_ndim);
    const std::int64_t batch = std::max<std::int64_t>(max_ndim - 2, 0);
    // Each operand's batch letters are the last of the first `batch` letters of the alphabet
    // (`get_broadcast_axes`), written here directly: this runs at every call. The one way
    // that can fail is a batch longer than the alphabet; its error is get_broadcast_axes's.
    if (static_cast<std::size_t>(batch) > alphabets::matmul.size())
      return ctspmd::detail::append_broadcast_axes(n.output, 0, batch, alphabets::matmul);
    const auto batch_letters = [&](axes_string& out, std::int64_t ndim) {
      for (std::int64_t i = batch - (ndim - 2); i < batch; ++i) out.push_back(alphabets::matmul[static_cast<std::size_t>(i)]);
    };
    axes_string& x = n.inputs.emplace_back();
    batch_letters(x, x_ndim);
    if (x_ndim > 1) x.push_back('m');
    x.push_back('k');
    axes_string& y = n.inputs.emplace_back();
    batch_letters(y, y_ndim);
    y.push_back('k');
    if (y_ndim > 1) y.push_back('n');
    batch_letters(n.output, max_ndim);  // the batch letters of the higher-rank operand
    if (x_ndim > 1) n.output.push_back('m');
    if (y_ndim > 1) n.output.push_back('n');
    return {};
  }

  static constexpr void swap_last_two(dims_mapping& dm) { std::swap(dm[dm.size() - 2], dm[dm.size() - 1]); }

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
      auto dm = in[i].dims_mapping();
      std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
      swap_last_two(dm);
      tensor_dist_attr attr = in[i].dist_attr();
      attr.set_dims_mapping(dm);
      t[i] = dist_tensor_spec(shape, attr);
    }
    return t;
  }

  /// Returns the inferred mappings of transposed operands to their stored order.
  static constexpr void swap_back(spmd_info& info, const attributes& attrs) {
    const bool trans[2] = {attrs.trans_x, attrs.trans_y};
    for (std::size_t i = 0; i < 2; ++i) {
      if (!trans[i]) continue;
      auto dm = info.inputs[i].dims_mapping();
      swap_last_two(dm);
      info.inputs[i].set_dims_mapping(dm);
    }
  }
};

}  // namespace ctspmd::rules

BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::matmul_attributes, trans_x, trans_y);

#endif
