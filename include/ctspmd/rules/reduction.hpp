#ifndef CTSPMD_RULES_REDUCTION_HPP
#define CTSPMD_RULES_REDUCTION_HPP
/// \file The reduction rule (`sum`, `mean`, `max`, `amax`, `min`, `amin`, `prod`, `any`,
/// `all`, `frobenius_norm`): out = reduce(x) over `axis`.
///
/// One rule type per reduce type: `reduction_with<R>` is the rule whose attributes default
/// `reduce` to R, the reduce type its operator implies (sum -> sum, mean -> avg, max/amax ->
/// max, min/amin -> min, prod -> prod, any -> any, all -> all). `reduction` is
/// `reduction_with<reduce_type::sum>`, the rule DESIGN.md lists with `reduction {axis = {},
/// keep_dim = false, reduce = reduce_type::sum}`. Every `reduction_with<R>` is named
/// "reduction" in error messages. `frobenius_norm` has a rule of its own (below).
///
/// `frobenius_norm` (sqrt of the sum of squares over `axis`; same attributes, `reduce` is
/// checked but has no effect). Paddle registers it with the reduction rule and reduce type
/// sum: a sharded reduced axis makes the output partial (sum), and a partial-sum x stays
/// partial. The numerical oracle (runtime_tests/oracle/) shows both are wrong: with x = [1, 0,
/// 0, 1] sharded on a mesh dim of 2 and every dim reduced, the devices compute the norms of
/// their halves, 1 and 1, whose sum 2 is not the norm sqrt(2) (the norm of a concatenation is
/// the root of the sum of the squared norms, which no reduce type expresses); and for x
/// partial (sum) with parts a + b, norm(a) + norm(b) is not norm(a + b). We do: x is required
/// with its reduced dims replicated (an all-gather where they were sharded) and without
/// partial status (an all-reduce first); its kept dims keep their shardings, which the output
/// takes; the output is never partial. Backward is reduction's, with the output returned not
/// partial. Regression cases: runtime_tests/oracle/regression_test.cpp.
///
/// Notation: x gets the first rank(x) letters of `abcdefghijklmnopqrstuvwxyz`. `axis` entries
/// may be negative (+rank); an entry out of [-rank, rank), or naming a dim twice, is
/// `invalid_argument`. An empty `axis` reduces every dim (Paddle's reduce_all). A 0-d x
/// accepts the entries 0 and -1 (Paddle's 0-d convention), which reduce nothing. The output
/// gets x's letters with each reduced position dropped (`keep_dim == false`) or labelled
/// `'1'` (`keep_dim == true`); reducing every dim without keep_dim gives a 0-d output.
///
/// Forward: x alone is merged (conflicts resolved; a valid mapping has none). The output
/// takes the kept dims' shardings. Each device reduced only its shard of a sharded reduced
/// axis, so the output is partial, with `reduce`, on the mesh dims of the reduced sharded
/// axes. x is returned with its own mapping: a reduced axis stays sharded (no reshard).
///
/// A partial x (the value being the combination, by some reduce type P, of the devices'
/// parts on a mesh dim): reducing the parts and then combining them gives the right answer
/// only when the reduction commutes with the combination, i.e. when P equals `reduce`, or both
/// are linear (sum or avg). Then x keeps that partial status and the output is partial on the
/// same mesh dim with P. Otherwise (a partial sum reduced by max, say) the rule requires x
/// without that partial status, a reshard (an all-reduce) before the operator, and the output
/// is not partial there.
///
/// Under `phi`: the merges are co-shard unions (a co-sharded reduced axis makes the output
/// partial on all its mesh dims), and a partial x is always required whole (phi's "partial
/// stage I": x comes back without partial status, reduced before the operator), even where the
/// reduction commutes with it. The reduce type is the operator's, as under `fluid` (phi's
/// static registry makes every reduction's output partial sum, even for max: we do not copy
/// that). phi spells the attribute `keepdim`; the runtime layer accepts both names.
///
/// Backward (from the output): the output's mapping alone is merged; x takes the output's
/// shardings on the kept dims, and its reduced dims (absent from the output, or `'1'` there)
/// are replicated. The output must have rank(x) minus the number of reduced dims, or rank(x)
/// with keep_dim. No partial status is inferred for x; the output is returned as merged (a
/// sharded keep_dim `'1'` dim becomes -1) with its partial status.
///
/// Round trip: forward then backward gives x's kept dims as forward had them and -1 on the
/// reduced ones, and forward from there gives the same output mapping.

#include <array>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of a reduction whose operator implies the reduce type `R` (Paddle's defaults).
template <reduce_type R>
struct basic_reduction_attributes {
  static_vector<std::int64_t, max_rank> axis = {};  ///< dims to reduce (negative: from the end); empty: all
  bool keep_dim = false;                            ///< keep reduced dims as size 1
  reduce_type reduce = R;                           ///< how a partial output's parts combine
  /// phi spells keep_dim `keepdim`.
  static constexpr std::array<attribute_alias, 1> aliases{{{"keepdim", "keep_dim"}}};
};

/// Attributes of `reduction` (reduce type sum by default).
using reduction_attributes = basic_reduction_attributes<reduce_type::sum>;

namespace detail {

/// x's and the output's axis labels for a reduction, and how many dims it reduces.
struct reduction_notation {
  axes_string x;
  axes_string out;
  std::int64_t reduced = 0;
};

/// Checks `axis` against x's rank and labels x and the output.
constexpr result<reduction_notation> make_reduction_notation(std::int64_t ndim,
                                                             const static_vector<std::int64_t, max_rank>& axis,
                                                             bool keep_dim) {
  const auto x_axes = try_get_broadcast_axes(ndim, ndim, alphabets::full);
  if (!x_axes) return x_axes.error();
  const std::int64_t bound = ndim > 0 ? ndim : 1;  // a 0-d tensor accepts 0 and -1
  static_vector<bool, max_rank> reduced(x_axes->size(), axis.empty());
  std::array<bool, max_rank> seen{};
  for (const std::int64_t a : axis) {
    if (a < -bound || a >= bound)
      return make_error(error_kind::invalid_argument, "", "reduction axis {} is out of range for x of rank {}", a,
                        ndim);
    const std::int64_t d = a < 0 ? a + bound : a;
    if (seen[static_cast<std::size_t>(d)])
      return make_error(error_kind::invalid_argument, "", "reduction axis {} names dim {} a second time", a, d);
    seen[static_cast<std::size_t>(d)] = true;
    if (d < ndim) reduced[static_cast<std::size_t>(d)] = true;
  }
  reduction_notation n{*x_axes, {}, 0};
  for (std::size_t i = 0; i < n.x.size(); ++i) {
    if (!reduced[i])
      n.out.push_back(n.x[i]);
    else if (keep_dim)
      n.out.push_back(broadcast_label);
    n.reduced += reduced[i] ? 1 : 0;
  }
  return n;
}

/// True if reducing the parts of a tensor partial with `part` and then combining them gives
/// the reduction `op` of the whole: the same reduce type, or two linear ones (sum, avg).
/// The shape of reducing x (shape `x`) over `axis` (empty: every dim), as `make_reduction_notation`
/// checks them: a reduced dim is dropped, or kept as 1 with `keep_dim`.
constexpr status push_reduced_shape(shape_list& out, const tensor_shape& x,
                                    const static_vector<std::int64_t, max_rank>& axis, bool keep_dim) {
  const auto n = make_reduction_notation(static_cast<std::int64_t>(x.size()), axis, keep_dim);
  if (!n) return n.error();
  tensor_shape& o = out.emplace_back();
  for (std::size_t i = 0; i < x.size(); ++i) {
    bool reduced = axis.empty();
    for (const std::int64_t a : axis) reduced = reduced || (a < 0 ? a + static_cast<std::int64_t>(x.size()) : a) == static_cast<std::int64_t>(i);
    if (!reduced)
      o.push_back(x[i]);
    else if (keep_dim)
      o.push_back(1);
  }
  return {};
}

constexpr bool reduction_commutes(reduce_type part, reduce_type op) noexcept {
  const auto linear = [](reduce_type r) { return r == reduce_type::sum || r == reduce_type::avg; };
  return part == op || (linear(part) && linear(op));
}

}  // namespace detail

/// The reduction rule whose reduce type defaults to `R` (see the file comment).
template <reduce_type R>
struct reduction_with : rule_base<reduction_with<R>, basic_reduction_attributes<R>> {
  using attributes = basic_reduction_attributes<R>;
  static constexpr std::string_view name = "reduction";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape without the reduced dims (size 1 with keep_dim).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    return detail::push_reduced_shape(out, in[0].shape(), attrs.axis, attrs.keep_dim);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    CTSPMD_TRY(check_reduce(attrs.reduce));
    const auto& x = in[0];
    const auto n = detail::make_reduction_notation(x.ndim(), attrs.axis, attrs.keep_dim);
    if (!n) return n.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->x, x, s));

    info.inputs.push_back(x.dist_attr());  // as merged: a single valid mapping is unchanged
    tensor_dist_attr& out = push(info.outputs, x.dist_attr(), n->out, map);
    // Each device reduced only its shard of a sharded reduced axis: the parts combine by `reduce`.
    out.set_partial_status(resolute_output_partial_dimension(map, n->out), attrs.reduce);
    for (const std::int64_t p : x.dist_attr().partial_dims()) {
      const reduce_type part = x.dist_attr().partial_reduce_type(p);
      if (s == semantics::fluid && detail::reduction_commutes(part, attrs.reduce))
        out.set_partial_status({p}, part);
      else
        info.inputs[0].clean_partial_dims({p});  // the parts must be combined before reducing
    }
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    CTSPMD_TRY(check_reduce(attrs.reduce));
    const auto& x = in[0];
    const auto& o = out[0];
    const auto n = detail::make_reduction_notation(x.ndim(), attrs.axis, attrs.keep_dim);
    if (!n) return n.error();
    const std::int64_t expected = attrs.keep_dim ? x.ndim() : x.ndim() - n->reduced;
    if (o.ndim() != expected)
      return make_error(error_kind::invalid_argument, "",
                        "the output must have rank {} (x has rank {} and {} reduced dims), but has rank {}", expected,
                        x.ndim(), n->reduced, o.ndim());
    // Only the output's mapping is merged: x's own mapping does not count backward.
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->out, o, s));
    push(info.inputs, x.dist_attr(), n->x, map);
    // The output as merged (a sharded keep_dim '1' dim becomes replicated), with its partial status.
    add_partial_of(push(info.outputs, o.dist_attr(), n->out, map), o.dist_attr());
    return {};
  }

 private:
  static constexpr status check_reduce(reduce_type r) {
    const auto v = static_cast<std::int64_t>(r);
    if (v < 0 || v > static_cast<std::int64_t>(reduce_type::all))
      return make_error(error_kind::invalid_argument, "", "reduce {} is not a reduce_type", v);
    return {};
  }
};

/// The reduction rule with reduce type sum by default (`sum`).
using reduction = reduction_with<reduce_type::sum>;

/// The frobenius_norm rule: reduced dims replicated, x not partial, the output never
/// partial (see the file comment for why the reduction rule is wrong for a norm).
struct frobenius_norm : rule_base<frobenius_norm, reduction_attributes> {
  static constexpr std::string_view name = "frobenius_norm";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape without the reduced dims (size 1 with keep_dim).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    return detail::push_reduced_shape(out, in[0].shape(), attrs.axis, attrs.keep_dim);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto n = detail::make_reduction_notation(x.ndim(), attrs.axis, attrs.keep_dim);
    if (!n) return n.error();
    // The norm of a shard, or of a part, is no part of the norm: the reduced dims are gathered
    // and the parts combined before the operator.
    tensor_dist_attr whole = x.dist_attr();
    whole.clean_partial_status();
    for (std::size_t i = 0; i < whole.rank(); ++i)
      if (!has_label(n->out.view(), n->x[i]))  // a reduced dim (absent, or '1' with keep_dim)
        ctspmd::detail::tensor_dist_attr_access::replace(whole, i, mesh_dim_list{});
    const dist_tensor_spec required(x.shape(), whole);
    // No sharded reduced dim and no partial x: the output is not partial.
    return reduction::forward(info, {&required, 1}, attrs, s);
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    CTSPMD_TRY(reduction::backward(info, in, out, attrs, s));
    info.outputs[0].clean_partial_status();  // the norm is never partial
    return {};
  }
};

/// Attributes of `det`: none.
struct det_attributes {};

/// The det rule: the determinant of each matrix of x's last two dims (x of rank >= 2; the output
/// has x's leading dims). A determinant needs its whole matrix and is no sum of parts, so it is
/// `frobenius_norm` over the last two dims: those dims replicated, x not partial, the output
/// never partial. (Paddle registers det with the elementwise rule, whose output keeps x's rank.)
struct det : rule_base<det, det_attributes> {
  static constexpr std::string_view name = "det";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape without its last two dims.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    CTSPMD_TRY(check(in[0]));
    return detail::push_reduced_shape(out, in[0].shape(), matrices.axis, false);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    CTSPMD_TRY(check(in[0]));
    return frobenius_norm::forward(info, in, matrices, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    CTSPMD_TRY(check(in[0]));
    return frobenius_norm::backward(info, in, out, matrices, s);
  }

 private:
  static constexpr reduction_attributes matrices{{-2, -1}, false, reduce_type::sum};
  static constexpr status check(const dist_tensor_spec& x) {
    if (x.ndim() < 2) return make_error(error_kind::invalid_argument, "", "x must have rank >= 2, but has rank {}", x.ndim());
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
