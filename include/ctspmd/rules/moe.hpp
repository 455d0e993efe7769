#ifndef CTSPMD_RULES_MOE_HPP
#define CTSPMD_RULES_MOE_HPP
/// \file The mixture-of-experts rules: `moe_gate_dispatch` (route each token to its top-k
/// experts and copy it into the experts' capacity slots), `moe_combine` (sum each token's expert
/// outputs, weighted), and their grads `moe_gate_dispatch_grad`, `moe_combine_grad`.
///
/// Notation: tokens `s` (S), hidden `h` (H), experts `e` (E), top-k slot `k` (K), capacity `c`
/// (C); `'1'` forces a dim replicated. Every operand is checked for its rank (2-D, y and grad_y
/// of dispatch 3-D) and the sizes that must agree (InvalidArgument). Partial inputs are
/// reduced first (they come back not partial); an output is partial only where stated. Both
/// semantics behave the same except for the merge (fluid first-wins, phi co-shard union with
/// the divisibility drop). These rules exist only in phi. Output shapes (`output_shapes`) are
/// those below; y's capacity dim is `capacity`, or -1 (unknown) when that is not positive.
///
/// moe_gate_dispatch (x [S,H], gate_logits [S,E]; k, capacity, use_pad) -> y [E,C,H],
/// combine_weights [S,K], scatter_index [K,S], expert_offset [E], expert_id [S,K]: each token
/// takes its top-k experts by gate_logits (combine_weights the chosen values, expert_id the
/// experts) and gets, in each, the next free capacity slot (tokens in order, slot k-major);
/// scatter_index is the slot (e * C + c) or -1 if the expert was full; y[e, c] is the token's
/// row. phi labels x `sh`, gate `se`, y `esh`: it binds the capacity dim of y to the token axis
/// (a sharded token axis shards y's capacity). That is wrong: a token's slot depends on how many
/// earlier tokens, on every device, chose the same expert, so a device holding only its tokens
/// cannot fill its block of slots. And a token's top-k reads all its
/// experts' logits. So here: x `1h`, gate `11` (tokens and experts replicated: an all-gather
/// where they were sharded), y `11h` (only the hidden dim stays sharded, as x's), and the other
/// outputs replicated. Reverse (derived; phi has none): y's hidden dim goes to x, everything
/// else replicated.
///
/// moe_gate_dispatch_grad (combine_weights, scatter_index, expert_id, grad_y,
/// grad_combine_weights) -> x_grad [S,H], gate_logits_grad [S,E]: a token's x_grad row sums the
/// grad_y rows of its slots, and its gate_logits_grad row scatters its grad_combine_weights to
/// its experts. Each device can do that for its own tokens given the whole grad_y, so here the
/// token axis may stay sharded: combine_weights, expert_id and grad_combine_weights `s1`,
/// scatter_index `1s`, grad_y `11h`; x_grad `sh`, gate_logits_grad `s1`. (phi merges them all
/// on `esh` / `sk`, binding capacity to tokens again.) The top-k dim is replicated, as phi does.
///
/// moe_combine (x [R,H], combine_weights [S,K], scatter_index [S,K]) -> y [S,H]:
/// y[s] = sum_k combine_weights[s,k] * x[scatter_index[s,k]]. x's rows are gathered by index, so
/// they are replicated (phi labels x `sh`, binding its R = S*K rows to the tokens: wrong for the
/// same reason); x `1h`, combine_weights and scatter_index `sk`, y `sh`. A sharded k makes each
/// device sum only its slots: y is partial (sum) on k's mesh dims (phi hard-codes mesh dim 1 and
/// unshards h; h may stay sharded, on another mesh dim than k). Reverse (derived): y's mapping
/// to x's h and the tokens; k replicated.
///
/// moe_combine_grad (x, combine_weights, scatter_index, grad_y) -> x_grad [R,H],
/// combine_weights_grad [S,K], scatter_index_grad [S,K]: x_grad scatters grad_y * weight to the
/// rows of x (each device its tokens' and slots' share: partial (sum) on the mesh dims of s and
/// k), combine_weights_grad[s,k] is the dot product over h of grad_y[s] and x's row (partial
/// (sum) on h's mesh dims); scatter_index_grad (an integer input: zeros) has scatter_index's
/// layout. Labels x `1h`, combine_weights and scatter_index `sk`, grad_y `sh`. (phi forces k
/// replicated and returns no partial status; k may stay sharded here.)
/// The grad rules have no reverse inference.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit.hpp>
#include <ctspmd/rules/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `moe_gate_dispatch` and its grad (none changes a layout).
struct moe_gate_dispatch_attributes {
  std::int64_t k = 2;         ///< experts per token
  std::int64_t capacity = 0;  ///< slots per expert
  bool use_pad = true;
};

/// Attributes of `moe_combine` and its grad: none.
struct moe_combine_attributes {};

namespace detail {

/// Checks that `x` has rank `rank`, naming it.
constexpr status check_rank_of(const dist_tensor_spec& x, std::int64_t rank, std::size_t index, const char* format) {
  if (x.ndim() != rank) return make_error(error_kind::invalid_argument, "", format, index, x.ndim(), rank);
  return {};
}
inline constexpr const char* moe_rank_error = "input {} has rank {}, but must have rank {}";

/// Checks that dim `da` of input `a` and dim `db` of input `b` have the same known size.
constexpr status check_dim_match(spec_span in, std::size_t a, std::size_t da, std::size_t b, std::size_t db) {
  const auto x = in[a].shape()[da], y = in[b].shape()[db];
  if (x != -1 && y != -1 && x != y)
    return make_error(error_kind::invalid_argument, "", "input {} has size {} at dim {}, which does not match input {}",
                      a, x, da, b);
  return {};
}

/// Merges `specs` labelled `labels` with the semantics' policy (co-shard: indivisible mesh dims dropped).
template <std::size_t N>
constexpr status moe_merge(axis_to_dim_map& map, const std::array<std::string_view, N>& labels, spec_span specs,
                           semantics s) {
  return merge_operands(map, std::span<const std::string_view, N>(labels), specs, s,
                        {true, false, false, /*drop_indivisible=*/true});
}

}  // namespace detail

/// The moe_gate_dispatch rule (see the file comment).
struct moe_gate_dispatch : rule_base<moe_gate_dispatch, moe_gate_dispatch_attributes> {
  static constexpr std::string_view name = "moe_gate_dispatch";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{5};

  /// y [E, C, H] (C = capacity; -1 when it is not positive), combine_weights [S, K],
  /// scatter_index [K, S], expert_offset [E], expert_id [S, K], from x [S, H], gate_logits [S, E].
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    CTSPMD_TRY(check(in, attrs));
    const std::int64_t s = in[0].shape()[0], h = in[0].shape()[1], e = in[1].shape()[1], k = attrs.k;
    out.push_back({e, attrs.capacity > 0 ? attrs.capacity : -1, h});
    out.push_back({s, k});
    out.push_back({k, s});
    out.push_back({e});
    out.push_back({s, k});
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    CTSPMD_TRY(check(in, attrs));
    axis_to_dim_map map;
    CTSPMD_TRY(detail::moe_merge(map, std::array<std::string_view, 2>{"1h", "11"}, in, s));
    return write(info, in, map);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    CTSPMD_TRY(check(in, attrs));
    constexpr std::array<std::int64_t, 5> ranks{3, 2, 2, 1, 2};
    for (std::size_t i = 0; i < 5; ++i)
      if (out[i].ndim() != ranks[i])
        return make_error(error_kind::invalid_argument, "", "output {} has rank {}, but must have rank {}", i,
                          out[i].ndim(), ranks[i]);
    axis_to_dim_map map;
    CTSPMD_TRY(detail::moe_merge(map, std::array<std::string_view, 1>{"11h"}, out.first(1), s));
    return write(info, in, map);
  }

 private:
  static constexpr status check(spec_span in, const attributes& attrs) {
    CTSPMD_TRY(detail::check_rank_of(in[0], 2, 0, detail::moe_rank_error));
    CTSPMD_TRY(detail::check_rank_of(in[1], 2, 1, detail::moe_rank_error));
    CTSPMD_TRY(detail::check_dim_match(in, 0, 0, 1, 0));
    const auto experts = in[1].shape()[1];
    if (attrs.k < 1 || (experts != -1 && attrs.k > experts))
      return make_error(error_kind::invalid_argument, "", "k = {} must be in [1, {}] (gate_logits has {} experts)",
                        attrs.k, experts, experts);
    return {};
  }
  static constexpr status write(spmd_info& info, spec_span in, const axis_to_dim_map& map) {
    const auto& x = in[0].dist_attr();
    push(info.inputs, x, std::string_view("1h"), map);
    push(info.inputs, in[1].dist_attr(), std::string_view("11"), map);
    push(info.outputs, x, std::string_view("11h"), map);  // y
    push(info.outputs, x, std::string_view("11"), map);   // combine_weights
    push(info.outputs, x, std::string_view("11"), map);   // scatter_index
    push(info.outputs, x, std::string_view("1"), map);    // expert_offset
    push(info.outputs, x, std::string_view("11"), map);   // expert_id
    return {};
  }
};

/// The moe_gate_dispatch_grad rule (see the file comment).
struct moe_gate_dispatch_grad : rule_base<moe_gate_dispatch_grad, moe_gate_dispatch_attributes> {
  static constexpr std::string_view name = "moe_gate_dispatch_grad";
  static constexpr operand_count input_count{5};
  static constexpr operand_count output_count{2};

  /// x_grad [S, H] and gate_logits_grad [S, E], from combine_weights [S, K] and grad_y [E, C, H].
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    constexpr std::array<std::int64_t, 5> ranks{2, 2, 2, 3, 2};
    for (std::size_t i = 0; i < 5; ++i) CTSPMD_TRY(detail::check_rank_of(in[i], ranks[i], i, detail::moe_rank_error));
    const std::int64_t s = in[0].shape()[0], e = in[3].shape()[0], h = in[3].shape()[2];
    out.push_back({s, h});
    out.push_back({s, e});
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    constexpr std::array<std::int64_t, 5> ranks{2, 2, 2, 3, 2};
    for (std::size_t i = 0; i < 5; ++i) CTSPMD_TRY(detail::check_rank_of(in[i], ranks[i], i, detail::moe_rank_error));
    // combine_weights [S,K], scatter_index [K,S], expert_id [S,K], grad_combine_weights [S,K]
    CTSPMD_TRY(detail::check_dim_match(in, 1, 1, 0, 0));
    CTSPMD_TRY(detail::check_dim_match(in, 1, 0, 0, 1));
    for (const std::size_t i : {std::size_t{2}, std::size_t{4}}) {
      CTSPMD_TRY(detail::check_dim_match(in, i, 0, 0, 0));
      CTSPMD_TRY(detail::check_dim_match(in, i, 1, 0, 1));
    }
    constexpr std::array<std::string_view, 5> labels{"s1", "1s", "s1", "11h", "s1"};
    axis_to_dim_map map;
    CTSPMD_TRY(detail::moe_merge(map, labels, in, s));
    for (std::size_t i = 0; i < 5; ++i) push(info.inputs, in[i].dist_attr(), labels[i], map);
    push(info.outputs, in[3].dist_attr(), std::string_view("sh"), map);  // x_grad
    push(info.outputs, in[0].dist_attr(), std::string_view("s1"), map);  // gate_logits_grad
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

/// The moe_combine rule (see the file comment).
struct moe_combine : rule_base<moe_combine, moe_combine_attributes> {
  static constexpr std::string_view name = "moe_combine";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{1};

  /// y [S, H] from x [R, H] and combine_weights [S, K].
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    CTSPMD_TRY(check(in));
    out.push_back({in[1].shape()[0], in[0].shape()[1]});
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    CTSPMD_TRY(check(in));
    axis_to_dim_map map;
    CTSPMD_TRY(detail::moe_merge(map, labels, in, s));
    write_inputs(info, in, map);
    // Each device sums only the slots k it holds: the parts add up.
    push(info.outputs, in[0].dist_attr(), std::string_view("sh"), map).set_partial_status(sharding_mesh_dims(map, "k"));
    return {};
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    CTSPMD_TRY(check(in));
    if (out[0].ndim() != 2)
      return make_error(error_kind::invalid_argument, "", "output {} has rank {}, but must have rank {}", 0,
                        out[0].ndim(), 2);
    axis_to_dim_map map;
    CTSPMD_TRY(detail::moe_merge(map, std::array<std::string_view, 1>{"sh"}, out, s));
    write_inputs(info, in, map);
    push(info.outputs, out[0].dist_attr(), std::string_view("sh"), map);
    return {};
  }

 private:
  static constexpr std::array<std::string_view, 3> labels{"1h", "sk", "sk"};
  static constexpr status check(spec_span in) {
    for (std::size_t i = 0; i < 3; ++i) CTSPMD_TRY(detail::check_rank_of(in[i], 2, i, detail::moe_rank_error));
    CTSPMD_TRY(detail::check_dim_match(in, 2, 0, 1, 0));
    return detail::check_dim_match(in, 2, 1, 1, 1);
  }
  static constexpr void write_inputs(spmd_info& info, spec_span in, const axis_to_dim_map& map) {
    for (std::size_t i = 0; i < 3; ++i) push(info.inputs, in[i].dist_attr(), labels[i], map);
  }
  friend struct moe_combine_grad;
};

/// The moe_combine_grad rule (see the file comment).
struct moe_combine_grad : rule_base<moe_combine_grad, moe_combine_attributes> {
  static constexpr std::string_view name = "moe_combine_grad";
  static constexpr operand_count input_count{4};
  static constexpr operand_count output_count{3};

  /// x_grad, combine_weights_grad, scatter_index_grad: x's, combine_weights' and scatter_index's shapes.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0, 1, 2});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    CTSPMD_TRY(moe_combine::check(in.first(3)));
    CTSPMD_TRY(detail::check_rank_of(in[3], 2, 3, detail::moe_rank_error));
    CTSPMD_TRY(detail::check_dim_match(in, 3, 0, 1, 0));  // grad_y [S,H]
    CTSPMD_TRY(detail::check_dim_match(in, 3, 1, 0, 1));
    constexpr std::array<std::string_view, 4> labels{"1h", "sk", "sk", "sh"};
    axis_to_dim_map map;
    CTSPMD_TRY(detail::moe_merge(map, labels, in, s));
    for (std::size_t i = 0; i < 4; ++i) push(info.inputs, in[i].dist_attr(), labels[i], map);
    // x_grad: each device scatters its tokens' and slots' share into every row.
    push(info.outputs, in[0].dist_attr(), std::string_view("1h"), map).set_partial_status(sharding_mesh_dims(map, "sk"));
    // combine_weights_grad: each device sums over its block of h.
    push(info.outputs, in[1].dist_attr(), std::string_view("sk"), map).set_partial_status(sharding_mesh_dims(map, "h"));
    push(info.outputs, in[2].dist_attr(), std::string_view("sk"), map);  // scatter_index_grad
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
