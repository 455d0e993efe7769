#ifndef CTSPMD_REGISTRY_RULES_BY_NAME_HPP
#define CTSPMD_REGISTRY_RULES_BY_NAME_HPP
/// \file The rule registry: every operator name, as Paddle spells it, mapped to its rule. It is
/// the single list of rules; the runtime layer's by-name table, the plans' attribute variant and
/// the fuzzer's operand counts are derived from it.
///
/// `registered_rules` lists the rule types, each once; `registry` is a constant array of
/// {name, rule} entries sorted by name, the rule given as its index in `registered_rules`.
/// `rule_for<"lookup_table_v2">` is the rule type of a name, `has_rule<"...">` whether there is
/// one, and `registry_find(name)` the entry's index (binary search, at compile or run time).
/// (An earlier registry was a `boost::hana::map` keyed by `hana::string`s: with a hundred and
/// more names it cost about a second of every including TU's compile time. This one costs a
/// constant search per lookup.) Every registered rule is checked against `SpmdRule` here, and
/// the first requirement a rule misses is named in one sentence; the runtime layer checks that
/// its attributes are adapted for reflection (registry/attribute_reflection.hpp).

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

#include <ctspmd/core/fixed_string.hpp>
#include <ctspmd/rules/add_n.hpp>
#include <ctspmd/rules/bmm.hpp>
#include <ctspmd/rules/bmm_grad.hpp>
#include <ctspmd/rules/c_embedding.hpp>
#include <ctspmd/rules/c_softmax_with_cross_entropy.hpp>
#include <ctspmd/rules/concat.hpp>
#include <ctspmd/rules/concat_grad.hpp>
#include <ctspmd/rules/cross_entropy_with_softmax.hpp>
#include <ctspmd/rules/cumsum.hpp>
#include <ctspmd/rules/default_data_parallel.hpp>
#include <ctspmd/rules/dropout.hpp>
#include <ctspmd/rules/einsum.hpp>
#include <ctspmd/rules/elementwise.hpp>
#include <ctspmd/rules/elementwise_grad.hpp>
#include <ctspmd/rules/embedding.hpp>
#include <ctspmd/rules/embedding_grad.hpp>
#include <ctspmd/rules/expand_as.hpp>
#include <ctspmd/rules/expand_as_grad.hpp>
#include <ctspmd/rules/flash_attention.hpp>
#include <ctspmd/rules/fused_linear_param_grad_add.hpp>
#include <ctspmd/rules/fused_rope.hpp>
#include <ctspmd/rules/gather.hpp>
#include <ctspmd/rules/gather_nd.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/layer_norm.hpp>
#include <ctspmd/rules/layer_norm_grad.hpp>
#include <ctspmd/rules/logsumexp.hpp>
#include <ctspmd/rules/matmul.hpp>
#include <ctspmd/rules/matmul_grad.hpp>
#include <ctspmd/rules/moe.hpp>
#include <ctspmd/rules/numel.hpp>
#include <ctspmd/rules/optimizer.hpp>
#include <ctspmd/rules/pad.hpp>
#include <ctspmd/rules/pad_grad.hpp>
#include <ctspmd/rules/reduction.hpp>
#include <ctspmd/rules/reduction_grad.hpp>
#include <ctspmd/rules/replicated.hpp>
#include <ctspmd/rules/reshape.hpp>
#include <ctspmd/rules/reshape_grad.hpp>
#include <ctspmd/rules/rms_norm.hpp>
#include <ctspmd/rules/scale.hpp>
#include <ctspmd/rules/scatter.hpp>
#include <ctspmd/rules/slice.hpp>
#include <ctspmd/rules/slice_grad.hpp>
#include <ctspmd/rules/softmax.hpp>
#include <ctspmd/rules/split.hpp>
#include <ctspmd/rules/squeeze.hpp>
#include <ctspmd/rules/stack_grad.hpp>
#include <ctspmd/rules/swiglu.hpp>
#include <ctspmd/rules/tile.hpp>
#include <ctspmd/rules/topk.hpp>
#include <ctspmd/rules/transpose.hpp>
#include <ctspmd/rules/triu.hpp>
#include <ctspmd/rules/unbind.hpp>
#include <ctspmd/rules/where.hpp>

namespace ctspmd::rules {

/// A list of rule types.
template <class... Rules>
struct rule_list {
  static constexpr std::size_t size = sizeof...(Rules);
};

/// Every registered rule type, each once.
using registered_rules =
    rule_list<adam, adamw, add_n, argmax, argmin, bmm, bmm_grad, c_embedding, c_embedding_grad,
              c_softmax_with_cross_entropy, c_softmax_with_cross_entropy_grad, cast, concat, concat_grad,
              cross_entropy_with_softmax, cross_entropy_with_softmax_grad, cumsum, cumsum_grad, default_data_parallel,
              det, dropout, dropout_grad, dynamic_einsum, elementwise, elementwise_binary_grad,
              elementwise_unary_grad, embedding, embedding_grad, expand_as, expand_as_grad, flash_attention,
              flash_attention_grad, flatten, frobenius_norm, full_like, fused_dropout_add, fused_dropout_add_grad,
              fused_linear_param_grad_add, fused_rope, fused_rope_grad, gather, gather_grad, gather_nd,
              gather_nd_grad, gelu_grad, index_select, index_select_grad, layer_norm, layer_norm_grad, logsumexp,
              logsumexp_grad, matmul, matmul_grad, moe_combine, moe_combine_grad, moe_gate_dispatch,
              moe_gate_dispatch_grad, numel, one_hot, p_norm, p_norm_grad, pad, pad_grad, pow_grad, power,
              reduction_grad, reduction_grad_with_out, reduction_with<reduce_type::all>,
              reduction_with<reduce_type::any>, reduction_with<reduce_type::avg>, reduction_with<reduce_type::max>,
              reduction_with<reduce_type::min>, reduction_with<reduce_type::prod>, reduction_with<reduce_type::sum>,
              replicated, reshape, reshape_grad, rms_norm, rms_norm_grad, scale, scatter, scatter_grad, sgd, slice,
              slice_grad, softmax, softmax_grad, split, squeeze, stack, stack_grad, strided_slice, strided_slice_grad,
              swiglu, swiglu_grad, tile, tile_grad, topk, topk_grad, transpose, transpose_grad, triu, triu_grad,
              unbind, unsqueeze, where, where_grad>;

namespace detail {

/// The position of `Rule` in `List`, or List::size if absent.
template <class Rule, class List>
inline constexpr std::size_t rule_index = 0;
template <class Rule, class... Rules>
inline constexpr std::size_t rule_index<Rule, rule_list<Rules...>> = [] {
  constexpr bool same[] = {std::is_same_v<Rule, Rules>...};
  std::size_t i = 0;
  while (i < sizeof...(Rules) && !same[i]) ++i;
  return i;
}();

/// The I-th type of `List` (constant-depth: one overload set, no recursion).
template <std::size_t I, class T>
struct indexed {
  using type = T;
};
template <class Seq, class... T>
struct indexer;
template <std::size_t... I, class... T>
struct indexer<std::index_sequence<I...>, T...> : indexed<I, T>... {};
template <std::size_t I, class T>
indexed<I, T> select(indexed<I, T>);
template <std::size_t I, class List>
struct type_at;
template <std::size_t I, class... Rules>
struct type_at<I, rule_list<Rules...>> {
  using type = typename decltype(select<I>(indexer<std::index_sequence_for<Rules...>, Rules...>{}))::type;
};

}  // namespace detail

/// The index of rule type `Rule` in `registered_rules` (a compile error if it is not listed).
template <class Rule>
inline constexpr std::size_t index_of = [] {
  static_assert(detail::rule_index<Rule, registered_rules> < registered_rules::size, "list the rule in registered_rules");
  return detail::rule_index<Rule, registered_rules>;
}();

/// The I-th registered rule type.
template <std::size_t I>
using registered_rule = typename detail::type_at<I, registered_rules>::type;

/// One registered operator name, its rule (an index into `registered_rules`) and its cost kind
/// (rules/kit/cost_traits.hpp): its rule's, unless the entry sets the name apart.
struct registry_entry {
  std::string_view name;
  std::size_t rule = 0;
  cost_kind kind = cost_kind::compute;
};

namespace detail {
template <class Rule>
constexpr registry_entry entry(std::string_view name) noexcept {
  static_assert(rule_index<Rule, registered_rules> < registered_rules::size, "list the rule in registered_rules");
  return {name, rule_index<Rule, registered_rules>, cost_kind_of<Rule>};
}
/// A name whose cost kind differs from its rule's.
template <class Rule>
constexpr registry_entry entry(std::string_view name, cost_kind kind) noexcept {
  return {name, entry<Rule>(name).rule, kind};
}
}  // namespace detail

namespace detail {
// Clang 14: deducing `std::array` from more than 256 initializers exceeds the fold-expression
// nesting limit (its deduction guide folds over them), so the entries are a built-in array first.
// clang-format off
inline constexpr registry_entry registry_entries[] = {
    detail::entry<elementwise>("acos"),
    detail::entry<elementwise_unary_grad>("acos_grad"),
    detail::entry<elementwise>("acosh"),
    detail::entry<elementwise_unary_grad>("acosh_grad"),
    detail::entry<adam>("adam"),
    detail::entry<adamw>("adamw"),
    detail::entry<elementwise>("add"),
    detail::entry<elementwise_binary_grad>("add_grad"),
    detail::entry<add_n>("add_n"),
    detail::entry<reduction_with<reduce_type::all>>("all"),
    detail::entry<reduction_with<reduce_type::max>>("amax"),
    detail::entry<reduction_grad_with_out>("amax_grad"),
    detail::entry<reduction_with<reduce_type::min>>("amin"),
    detail::entry<reduction_grad_with_out>("amin_grad"),
    detail::entry<reduction_with<reduce_type::any>>("any"),
    detail::entry<argmax>("argmax"),
    detail::entry<argmin>("argmin"),
    detail::entry<elementwise>("asin"),
    detail::entry<elementwise_unary_grad>("asin_grad"),
    detail::entry<elementwise>("asinh"),
    detail::entry<elementwise_unary_grad>("asinh_grad"),
    detail::entry<elementwise>("assign", cost_kind::communication),  // a reshard point
    detail::entry<elementwise>("assign_out_", cost_kind::moves),     // a copy into its output
    detail::entry<elementwise>("atan"),
    detail::entry<elementwise_unary_grad>("atan_grad"),
    detail::entry<elementwise>("atanh"),
    detail::entry<elementwise_unary_grad>("atanh_grad"),
    detail::entry<elementwise>("bernoulli"),
    detail::entry<elementwise>("bitwise_and"),
    detail::entry<elementwise>("bitwise_not"),
    detail::entry<elementwise>("bitwise_or"),
    detail::entry<elementwise>("bitwise_xor"),
    detail::entry<bmm>("bmm"),
    detail::entry<bmm_grad>("bmm_grad"),
    detail::entry<c_embedding>("c_embedding"),
    detail::entry<c_embedding_grad>("c_embedding_grad"),
    detail::entry<c_softmax_with_cross_entropy>("c_softmax_with_cross_entropy"),
    detail::entry<c_softmax_with_cross_entropy_grad>("c_softmax_with_cross_entropy_grad"),
    detail::entry<cast>("cast"),
    detail::entry<elementwise>("ceil"),
    detail::entry<elementwise>("celu"),
    detail::entry<elementwise_unary_grad>("celu_grad"),
    detail::entry<elementwise>("clip"),
    detail::entry<elementwise_unary_grad>("clip_grad"),
    detail::entry<concat>("concat"),
    detail::entry<concat_grad>("concat_grad"),
    detail::entry<elementwise>("conj"),
    detail::entry<elementwise>("cos"),
    detail::entry<elementwise_unary_grad>("cos_grad"),
    detail::entry<elementwise>("cosh"),
    detail::entry<elementwise_unary_grad>("cosh_grad"),
    detail::entry<cross_entropy_with_softmax>("cross_entropy_with_softmax"),
    detail::entry<cross_entropy_with_softmax_grad>("cross_entropy_with_softmax_grad"),
    detail::entry<cumsum>("cumsum"),
    detail::entry<cumsum_grad>("cumsum_grad"),
    detail::entry<default_data_parallel>("default_data_parallel"),
    detail::entry<det>("det"),
    detail::entry<elementwise>("digamma"),
    detail::entry<elementwise_unary_grad>("digamma_grad"),
    detail::entry<elementwise>("divide"),
    detail::entry<elementwise_binary_grad>("divide_grad"),
    detail::entry<dropout>("dropout"),
    detail::entry<dropout_grad>("dropout_grad"),
    detail::entry<dynamic_einsum>("einsum"),
    detail::entry<elementwise>("elementwise_pow"),
    detail::entry<elementwise_binary_grad>("elementwise_pow_grad"),
    detail::entry<elementwise>("elu"),
    detail::entry<elementwise_unary_grad>("elu_grad"),
    detail::entry<embedding>("embedding"),
    detail::entry<embedding_grad>("embedding_grad"),
    detail::entry<elementwise>("equal"),
    detail::entry<elementwise>("erf"),
    detail::entry<elementwise_unary_grad>("erf_grad"),
    detail::entry<elementwise>("erfinv"),
    detail::entry<elementwise_unary_grad>("erfinv_grad"),
    detail::entry<elementwise>("exp"),
    detail::entry<elementwise_unary_grad>("exp_grad"),
    detail::entry<expand_as>("expand_as"),
    detail::entry<expand_as_grad>("expand_as_grad"),
    detail::entry<elementwise>("expm1"),
    detail::entry<elementwise_unary_grad>("expm1_grad"),
    detail::entry<elementwise>("exponential_"),
    detail::entry<elementwise>("fill"),
    detail::entry<flash_attention>("flash_attention"),
    detail::entry<flash_attention_grad>("flash_attention_grad"),
    detail::entry<flatten>("flatten"),
    detail::entry<reshape_grad>("flatten_grad"),
    detail::entry<elementwise>("floor"),
    detail::entry<elementwise>("floor_divide"),
    detail::entry<elementwise>("fmax"),
    detail::entry<elementwise_binary_grad>("fmax_grad"),
    detail::entry<elementwise>("fmin"),
    detail::entry<elementwise_binary_grad>("fmin_grad"),
    detail::entry<frobenius_norm>("frobenius_norm"),
    detail::entry<full_like>("full_like"),
    detail::entry<fused_dropout_add>("fused_dropout_add"),
    detail::entry<fused_dropout_add_grad>("fused_dropout_add_grad"),
    detail::entry<fused_linear_param_grad_add>("fused_linear_param_grad_add"),
    detail::entry<rms_norm>("fused_rms_norm"),
    detail::entry<fused_rope>("fused_rope"),
    detail::entry<fused_rope_grad>("fused_rope_grad"),
    detail::entry<fused_rope>("fused_rotary_position_embedding"),
    detail::entry<gather>("gather"),
    detail::entry<gather_grad>("gather_grad"),
    detail::entry<gather_nd>("gather_nd"),
    detail::entry<gather_nd_grad>("gather_nd_grad"),
    detail::entry<elementwise>("gelu"),
    detail::entry<gelu_grad>("gelu_grad"),
    detail::entry<elementwise>("greater_equal"),
    detail::entry<elementwise>("greater_than"),
    detail::entry<elementwise>("hardshrink"),
    detail::entry<elementwise_unary_grad>("hardshrink_grad"),
    detail::entry<elementwise>("hardsigmoid"),
    detail::entry<elementwise_unary_grad>("hardsigmoid_grad"),
    detail::entry<elementwise>("hardswish"),
    detail::entry<elementwise_unary_grad>("hardswish_grad"),
    detail::entry<elementwise>("hardtanh"),
    detail::entry<elementwise_unary_grad>("hardtanh_grad"),
    detail::entry<elementwise>("heaviside"),
    detail::entry<elementwise_binary_grad>("heaviside_grad"),
    detail::entry<index_select>("index_select"),
    detail::entry<index_select_grad>("index_select_grad"),
    detail::entry<elementwise>("label_smooth"),
    detail::entry<elementwise_unary_grad>("label_smooth_grad"),
    detail::entry<layer_norm>("layer_norm"),
    detail::entry<layer_norm_grad>("layer_norm_grad"),
    detail::entry<elementwise>("leaky_relu"),
    detail::entry<elementwise_unary_grad>("leaky_relu_grad"),
    detail::entry<elementwise>("less_equal"),
    detail::entry<elementwise>("less_than"),
    detail::entry<elementwise>("lgamma"),
    detail::entry<elementwise_unary_grad>("lgamma_grad"),
    detail::entry<elementwise>("log"),
    detail::entry<elementwise>("log10"),
    detail::entry<elementwise_unary_grad>("log10_grad"),
    detail::entry<elementwise>("log1p"),
    detail::entry<elementwise_unary_grad>("log1p_grad"),
    detail::entry<elementwise>("log2"),
    detail::entry<elementwise_unary_grad>("log2_grad"),
    detail::entry<elementwise_unary_grad>("log_grad"),
    detail::entry<softmax>("log_softmax"),
    detail::entry<softmax_grad>("log_softmax_grad"),
    detail::entry<elementwise>("logical_and"),
    detail::entry<elementwise>("logical_not"),
    detail::entry<elementwise>("logical_or"),
    detail::entry<elementwise>("logical_xor"),
    detail::entry<elementwise>("logit"),
    detail::entry<elementwise_unary_grad>("logit_grad"),
    detail::entry<elementwise>("logsigmoid"),
    detail::entry<elementwise_unary_grad>("logsigmoid_grad"),
    detail::entry<logsumexp>("logsumexp"),
    detail::entry<logsumexp_grad>("logsumexp_grad"),
    detail::entry<embedding>("lookup_table_v2"),
    detail::entry<matmul>("matmul"),
    detail::entry<matmul_grad>("matmul_grad"),
    detail::entry<matmul>("matmul_v2"),
    detail::entry<reduction_with<reduce_type::max>>("max"),
    detail::entry<reduction_grad_with_out>("max_grad"),
    detail::entry<elementwise>("maximum"),
    detail::entry<elementwise_binary_grad>("maximum_grad"),
    detail::entry<reduction_with<reduce_type::avg>>("mean"),
    detail::entry<reduction_grad>("mean_grad"),
    detail::entry<reduction_with<reduce_type::min>>("min"),
    detail::entry<reduction_grad_with_out>("min_grad"),
    detail::entry<elementwise>("minimum"),
    detail::entry<elementwise_binary_grad>("minimum_grad"),
    detail::entry<elementwise>("mish"),
    detail::entry<elementwise_unary_grad>("mish_grad"),
    detail::entry<moe_combine>("moe_combine"),
    detail::entry<moe_combine_grad>("moe_combine_grad"),
    detail::entry<moe_gate_dispatch>("moe_gate_dispatch"),
    detail::entry<moe_gate_dispatch_grad>("moe_gate_dispatch_grad"),
    detail::entry<elementwise>("multiply"),
    detail::entry<elementwise_binary_grad>("multiply_grad"),
    detail::entry<elementwise>("not_equal"),
    detail::entry<numel>("numel"),
    detail::entry<one_hot>("one_hot"),
    detail::entry<p_norm>("p_norm"),
    detail::entry<p_norm_grad>("p_norm_grad"),
    detail::entry<pad>("pad"),
    detail::entry<pad_grad>("pad_grad"),
    detail::entry<elementwise>("poisson"),
    detail::entry<power>("pow"),
    detail::entry<pow_grad>("pow_grad"),
    detail::entry<reduction_with<reduce_type::prod>>("prod"),
    detail::entry<reduction_grad_with_out>("prod_grad"),
    detail::entry<elementwise>("reciprocal"),
    detail::entry<elementwise_unary_grad>("reciprocal_grad"),
    detail::entry<elementwise>("relu"),
    detail::entry<elementwise>("relu6"),
    detail::entry<elementwise_unary_grad>("relu6_grad"),
    detail::entry<elementwise_unary_grad>("relu_grad"),
    detail::entry<elementwise>("remainder"),
    detail::entry<replicated>("replicated"),
    detail::entry<reshape>("reshape"),
    detail::entry<reshape>("reshape2"),
    detail::entry<reshape_grad>("reshape_grad"),
    detail::entry<rms_norm>("rms_norm"),
    detail::entry<rms_norm_grad>("rms_norm_grad"),
    detail::entry<elementwise>("round"),
    detail::entry<elementwise>("rsqrt"),
    detail::entry<elementwise_unary_grad>("rsqrt_grad"),
    detail::entry<scale>("scale"),
    detail::entry<scatter>("scatter"),
    detail::entry<scatter_grad>("scatter_grad"),
    detail::entry<elementwise>("selu"),
    detail::entry<elementwise_unary_grad>("selu_grad"),
    detail::entry<sgd>("sgd"),
    detail::entry<elementwise>("sigmoid"),
    detail::entry<elementwise_unary_grad>("sigmoid_grad"),
    detail::entry<elementwise>("sign"),
    detail::entry<elementwise>("silu"),
    detail::entry<elementwise_unary_grad>("silu_grad"),
    detail::entry<elementwise>("sin"),
    detail::entry<elementwise_unary_grad>("sin_grad"),
    detail::entry<elementwise>("sinh"),
    detail::entry<elementwise_unary_grad>("sinh_grad"),
    detail::entry<slice>("slice"),
    detail::entry<slice_grad>("slice_grad"),
    detail::entry<softmax>("softmax"),
    detail::entry<softmax_grad>("softmax_grad"),
    detail::entry<cross_entropy_with_softmax>("softmax_with_cross_entropy"),
    detail::entry<cross_entropy_with_softmax_grad>("softmax_with_cross_entropy_grad"),
    detail::entry<elementwise>("softplus"),
    detail::entry<elementwise_unary_grad>("softplus_grad"),
    detail::entry<elementwise>("softshrink"),
    detail::entry<elementwise_unary_grad>("softshrink_grad"),
    detail::entry<elementwise>("softsign"),
    detail::entry<elementwise_unary_grad>("softsign_grad"),
    detail::entry<split>("split"),
    detail::entry<split>("split_with_num"),
    detail::entry<elementwise>("sqrt"),
    detail::entry<elementwise_unary_grad>("sqrt_grad"),
    detail::entry<elementwise>("square"),
    detail::entry<elementwise_unary_grad>("square_grad"),
    detail::entry<reduction_with<reduce_type::sum>>("squared_l2_norm"),
    detail::entry<squeeze>("squeeze"),
    detail::entry<reshape_grad>("squeeze_grad"),
    detail::entry<stack>("stack"),
    detail::entry<stack_grad>("stack_grad"),
    detail::entry<elementwise>("stanh"),
    detail::entry<elementwise_unary_grad>("stanh_grad"),
    detail::entry<strided_slice>("strided_slice"),
    detail::entry<strided_slice_grad>("strided_slice_grad"),
    detail::entry<elementwise>("subtract"),
    detail::entry<elementwise_binary_grad>("subtract_grad"),
    detail::entry<reduction_with<reduce_type::sum>>("sum"),
    detail::entry<reduction_grad>("sum_grad"),
    detail::entry<swiglu>("swiglu"),
    detail::entry<swiglu_grad>("swiglu_grad"),
    detail::entry<elementwise>("swish"),
    detail::entry<elementwise_unary_grad>("swish_grad"),
    detail::entry<elementwise>("tan"),
    detail::entry<elementwise_unary_grad>("tan_grad"),
    detail::entry<elementwise>("tanh"),
    detail::entry<elementwise_unary_grad>("tanh_grad"),
    detail::entry<elementwise>("tanh_shrink"),
    detail::entry<elementwise_unary_grad>("tanh_shrink_grad"),
    detail::entry<elementwise>("thresholded_relu"),
    detail::entry<elementwise_unary_grad>("thresholded_relu_grad"),
    detail::entry<tile>("tile"),
    detail::entry<tile_grad>("tile_grad"),
    detail::entry<topk>("topk"),
    detail::entry<topk_grad>("topk_grad"),
    detail::entry<transpose>("transpose"),
    detail::entry<transpose>("transpose2"),
    detail::entry<transpose_grad>("transpose_grad"),
    detail::entry<triu>("tril_triu"),
    detail::entry<triu>("triu"),
    detail::entry<triu_grad>("triu_grad"),
    detail::entry<elementwise>("trunc"),
    detail::entry<unbind>("unbind"),
    detail::entry<stack>("unbind_grad"),
    detail::entry<unsqueeze>("unsqueeze"),
    detail::entry<unsqueeze>("unsqueeze2"),
    detail::entry<reshape_grad>("unsqueeze_grad"),
    detail::entry<where>("where"),
    detail::entry<where_grad>("where_grad"),
};
// clang-format on
}  // namespace detail

/// Every operator name of Paddle's rules (fluid's and phi's), plus `"einsum"`, sorted by name.
inline constexpr std::array registry = std::to_array(detail::registry_entries);

namespace detail {
constexpr bool sorted_and_unique(const auto& entries) {
  for (std::size_t i = 1; i < entries.size(); ++i)
    if (!(entries[i - 1].name < entries[i].name)) return false;
  return true;
}
}  // namespace detail
static_assert(detail::sorted_and_unique(registry), "keep the registry sorted by name, each name once");

/// The index in `registry` of the entry named `name`, or `registry.size()`.
constexpr std::size_t registry_find(std::string_view name) noexcept {
  std::size_t lo = 0, hi = registry.size();  // binary search for the first name >= `name`
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (registry[mid].name < name)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < registry.size() && registry[lo].name == name ? lo : registry.size();
}

/// True if a rule is registered under `Name`.
template <fixed_string Name>
inline constexpr bool has_rule = registry_find(Name.view()) < registry.size();

namespace detail {

/// Checks `Rule` against `SpmdRule`, one requirement at a time, so that a rule that misses one
/// gets one sentence naming it (and no cascade: the later checks are not instantiated).
template <class Rule>
constexpr bool check_rule() {
  if constexpr (!requires { typename Rule::attributes; }) {
    static_assert(requires { typename Rule::attributes; },
                  "a rule has a member type `attributes` (derive from ctspmd::rule_base<Rule, Attributes>)");
    return false;
  } else if constexpr (!std::is_aggregate_v<typename Rule::attributes>) {
    static_assert(std::is_aggregate_v<typename Rule::attributes>, "a rule's attributes are an aggregate");
    return false;
  } else if constexpr (!requires { { Rule::name } -> std::convertible_to<std::string_view>; }) {
    static_assert(!sizeof(Rule), "a rule has `static constexpr std::string_view name`");
    return false;
  } else if constexpr (!requires { { Rule::input_count } -> std::convertible_to<operand_count>; } ||
                       !requires { { Rule::output_count } -> std::convertible_to<operand_count>; }) {
    static_assert(!sizeof(Rule), "a rule has `static constexpr operand_count input_count` and `output_count`");
    return false;
  } else if constexpr (!SpmdRule<Rule>) {
    static_assert(SpmdRule<Rule>,
                  "a rule has `static constexpr status forward(spmd_info&, spec_span, const attributes&, semantics)` "
                  "and `backward(spmd_info&, spec_span, spec_span, const attributes&, semantics)`");
    return false;
  } else {
    return true;
  }
}
template <class... Rules>
constexpr bool check_rules(rule_list<Rules...>) {
  return (check_rule<Rules>() && ...);
}
static_assert(check_rules(registered_rules{}));

/// What `rule_for` gives for a name nothing is registered under (after its static_assert): a
/// rule that accepts nothing, so that the use does not add errors of its own.
struct no_such_rule : rule_base<no_such_rule, replicated_attributes> {
  static constexpr std::string_view name = "no such rule";
  static constexpr operand_count input_count{0, max_operands};
  static constexpr operand_count output_count{0, max_operands};
  static constexpr status forward(spmd_info&, spec_span, const attributes&, semantics) {
    return make_error(error_kind::not_found, "", "no rule is registered under this operator name");
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return make_error(error_kind::not_found, "", "no rule is registered under this operator name");
  }
};

template <fixed_string Name>
struct rule_lookup {
  static constexpr std::size_t at = registry_find(Name.view());
  // A misspelt operator name stops here (the registry is in ctspmd/registry/rules_by_name.hpp).
  static_assert(at < registry.size(), "no rule is registered under this operator name (see ctspmd::rules::registry)");
  using type = typename std::conditional_t<(at < registry.size()), type_at<(at < registry.size() ? registry[at].rule : 0),
                                                                           registered_rules>,
                                           std::type_identity<no_such_rule>>::type;
};

}  // namespace detail

/// The rule registered under `Name`: `rule_for<"lookup_table_v2">` is `embedding`.
template <fixed_string Name>
using rule_for = typename detail::rule_lookup<Name>::type;

}  // namespace ctspmd::rules

#endif
