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
/// **Each device dispatches its own tokens** (Paddle's layouts, and Megatron's all-to-all
/// dispatcher): the token dim may stay sharded, and each block of tokens is routed into its own
/// capacity slots, as the kernel does on each device. In the global view a dim bound to the
/// tokens holds the blocks in order: y's capacity dim C is the blocks' slots one after the other,
/// so `capacity` counts an expert's slots over all P token blocks, and each block has C / P of
/// them (⌈T·k·cf/E⌉ for its T tokens). Every size bound to the tokens (S, C of y or grad_y, R of
/// combine's x) must divide into the P blocks: under phi the tokens' last mesh dim is dropped
/// until each does (phi's divisibility rule); under fluid one that does not is InvalidArgument.
/// The values
/// of scatter_index are slots of the block (e · C/P + c), the kernel's; expert_offset [E] is a
/// block's running count of filled slots, so the count over all tokens is their sum: it is
/// partial (sum) on the tokens' mesh dims. Moving the slots to the device that holds their
/// expert is a reshard of y from C to E, an all-to-all (in Paddle, a reshard of y to Shard(0)
/// before the experts), and the experts' output comes back the same way.
///
/// Decision (issue 38): expert_offset stays partial (sum) on the tokens' mesh dims under both
/// semantics, though Paddle's rule leaves it not partial (an `e`-labelled output, replicated
/// here since e is). Paddle's kernel, like ours, writes on each device the cumulative counts of
/// its own block's filled slots (entry e: the slots of experts 0..e), used there to index that
/// block's slots. When the tokens are split these differ from device to device, so "not
/// partial" would say replicated, the same value everywhere, which is false: a reshard of it
/// (a slice, an all-gather) would move values that are not the tensor's. Partial is the layout
/// that is true of each device's value: a cumulative count is linear in the counts, so the sum
/// over the blocks is the cumulative count over every token (each expert's load in the step),
/// a meaningful value, and the oracle (its expert_offset the sum of the blocks') holds each
/// device to it. A consumer that indexes its own block's slots reads each device's part as it
/// is, before any reshard; one that asks for it replicated gets the all-reduced counts over all
/// tokens and must index the global slots with them. No rule here takes expert_offset as input.
///
/// moe_gate_dispatch (x [S,H], gate_logits [S,E]; k, capacity, use_pad) -> y [E,C,H],
/// combine_weights [S,K], scatter_index [K,S], expert_offset [E], expert_id [S,K]: each token
/// takes its top-k experts by gate_logits (combine_weights the chosen values, expert_id the
/// experts) and gets, in each, the next free slot of its block (tokens in order, slot k-major);
/// scatter_index is the slot or -1 if the expert was full; y[e, c] is the token's row. Labels
/// x `sh`, gate `s1` (phi labels it `se` and lets a sharded expert dim through to y; but a
/// token's top-k reads all its experts' logits, so here e is replicated), y `1sh`,
/// combine_weights and expert_id `s1`, scatter_index `1s`, expert_offset `1` (partial, see
/// the decision above). The top-k dim is replicated, as phi does. Reverse (derived; phi has none): the
/// outputs' token dims (y's capacity dim among them) and y's h merge to x and the gate.
///
/// moe_gate_dispatch_grad (combine_weights, scatter_index, expert_id, grad_y,
/// grad_combine_weights) -> x_grad [S,H], gate_logits_grad [S,E]: a token's x_grad row sums the
/// grad_y rows of its slots, and its gate_logits_grad row scatters its grad_combine_weights to
/// its experts; each block of tokens reads its own slots. Labels combine_weights, expert_id and
/// grad_combine_weights `s1`, scatter_index `1s`, grad_y `1sh`; x_grad `sh`, gate_logits_grad
/// `s1`.
///
/// moe_combine (x [R,H], combine_weights [S,K], scatter_index [S,K]) -> y [S,H]:
/// y[s] = sum_k combine_weights[s,k] * x[scatter_index[s,k]], the index a row of the token's
/// block of x: x's rows are bound to the tokens (x `sh`, as phi), combine_weights and scatter_index `sk`, y `sh`. A sharded k makes each device sum
/// only its slots: y is partial (sum) on k's mesh dims (phi hard-codes mesh dim 1 and unshards
/// h; h may stay sharded, on another mesh dim than k). Reverse (derived): y's mapping to the
/// tokens and x's h; k replicated.
///
/// moe_combine_grad (x, combine_weights, scatter_index, grad_y) -> x_grad [R,H],
/// combine_weights_grad [S,K], scatter_index_grad [S,K]: x_grad scatters grad_y * weight to the
/// rows of x (each device its slots' share: partial (sum) on k's mesh dims),
/// combine_weights_grad[s,k] is the dot product over h of grad_y[s] and x's row (partial (sum)
/// on h's mesh dims); scatter_index_grad (an integer input: zeros) has scatter_index's layout.
/// Labels x `sh`, combine_weights and scatter_index `sk`, grad_y `sh`. (phi forces k
/// replicated and returns no partial status; k may stay sharded here.)
/// The grad rules have no reverse inference.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

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

/// A size bound to the tokens: dim `dim` of input `input`, or (input -1) the capacity attribute.
struct token_bound {
  std::int64_t size = -1;
  std::int64_t input = -1, dim = 0;
};
/// Makes every token block (the tokens, label `s` of `map`, are split into `map.list('s').shards(mesh)`
/// blocks, one per device that routes its own) hold an equal part of each size in `bound`: under
/// phi, the tokens' last mesh dim is dropped until each divides (phi's divisibility rule); under fluid, a size
/// that does not divide is InvalidArgument.
template <std::size_t N>
constexpr status fit_token_blocks(axis_to_dim_map& map, const process_mesh& mesh, const std::array<token_bound, N>& bound,
                                  semantics s) {
  for (const auto& b : bound)
    for (auto blocks = map.list('s').shards(mesh); b.size > 0 && b.size % blocks != 0;
         blocks = map.list('s').shards(mesh)) {
      if (s == semantics::phi) {
        auto list = map.list('s');
        list.pop_back();
        map.set('s', list);
        continue;
      }
      if (b.input < 0)
        return make_error(error_kind::invalid_argument, "",
                          "capacity {} does not divide into the {} blocks the tokens are split into (each block has "
                          "capacity / blocks slots per expert)",
                          b.size, blocks);
      return make_error(error_kind::invalid_argument, "",
                        "input {} has size {} at dim {}, which does not divide into the {} blocks the tokens are split "
                        "into (each block has its own part)",
                        b.input, b.size, b.dim, blocks);
    }
  return {};
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
    CTSPMD_TRY(detail::moe_merge(map, std::array<std::string_view, 2>{"sh", "s1"}, in, s));
    CTSPMD_TRY(fit(map, in, attrs, s));
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
    CTSPMD_TRY(detail::moe_merge(map, output_labels, out, s));
    CTSPMD_TRY(fit(map, in, attrs, s));
    return write(info, in, map);
  }

 private:
  static constexpr std::array<std::string_view, 5> output_labels{"1sh", "s1", "1s", "1", "s1"};
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
  static constexpr status fit(axis_to_dim_map& map, spec_span in, const attributes& attrs, semantics s) {
    return detail::fit_token_blocks(map, in[0].process_mesh(),
                                    std::array<detail::token_bound, 2>{{{in[0].shape()[0], 0, 0}, {attrs.capacity, -1, 0}}}, s);
  }
  static constexpr status write(spmd_info& info, spec_span in, const axis_to_dim_map& map) {
    const auto& x = in[0].dist_attr();
    push(info.inputs, x, std::string_view("sh"), map);
    push(info.inputs, in[1].dist_attr(), std::string_view("s1"), map);
    for (std::size_t i = 0; i < 5; ++i) {
      auto& out = push(info.outputs, x, output_labels[i], map);
      // expert_offset: each block counts its own slots; their sum is the count over all tokens.
      if (i == 3) out.set_partial_status(sharding_mesh_dims(map, "s"));
    }
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
    constexpr std::array<std::string_view, 5> labels{"s1", "1s", "s1", "1sh", "s1"};
    axis_to_dim_map map;
    CTSPMD_TRY(detail::moe_merge(map, labels, in, s));
    CTSPMD_TRY(detail::fit_token_blocks(
        map, in[0].process_mesh(), std::array<detail::token_bound, 2>{{{in[0].shape()[0], 0, 0}, {in[3].shape()[1], 3, 1}}}, s));
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
    CTSPMD_TRY(fit(map, in, s));
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
    CTSPMD_TRY(fit(map, in, s));
    write_inputs(info, in, map);
    push(info.outputs, out[0].dist_attr(), std::string_view("sh"), map);
    return {};
  }

 private:
  static constexpr std::array<std::string_view, 3> labels{"sh", "sk", "sk"};
  static constexpr status check(spec_span in) {
    for (std::size_t i = 0; i < 3; ++i) CTSPMD_TRY(detail::check_rank_of(in[i], 2, i, detail::moe_rank_error));
    CTSPMD_TRY(detail::check_dim_match(in, 2, 0, 1, 0));
    return detail::check_dim_match(in, 2, 1, 1, 1);
  }
  /// The tokens (S of combine_weights) and x's rows (R) divide into the token blocks.
  static constexpr status fit(axis_to_dim_map& map, spec_span in, semantics s) {
    return detail::fit_token_blocks(
        map, in[0].process_mesh(), std::array<detail::token_bound, 2>{{{in[1].shape()[0], 1, 0}, {in[0].shape()[0], 0, 0}}}, s);
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
    constexpr std::array<std::string_view, 4> labels{"sh", "sk", "sk", "sh"};
    axis_to_dim_map map;
    CTSPMD_TRY(detail::moe_merge(map, labels, in, s));
    CTSPMD_TRY(moe_combine::fit(map, in, s));
    for (std::size_t i = 0; i < 4; ++i) push(info.inputs, in[i].dist_attr(), labels[i], map);
    // x_grad: each device scatters its slots' share into its block's rows.
    push(info.outputs, in[0].dist_attr(), std::string_view("sh"), map).set_partial_status(sharding_mesh_dims(map, "k"));
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
