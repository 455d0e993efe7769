#ifndef CTSPMD_RULES_REGISTRY_HPP
#define CTSPMD_RULES_REGISTRY_HPP
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
/// its attributes are adapted for reflection (rules/reflection.hpp).

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

#include <ctspmd/core/fixed_string.hpp>
#include <ctspmd/rules/bmm.hpp>
#include <ctspmd/rules/c_embedding.hpp>
#include <ctspmd/rules/c_softmax_with_cross_entropy.hpp>
#include <ctspmd/rules/concat.hpp>
#include <ctspmd/rules/cross_entropy_with_softmax.hpp>
#include <ctspmd/rules/einsum.hpp>
#include <ctspmd/rules/elementwise.hpp>
#include <ctspmd/rules/embedding.hpp>
#include <ctspmd/rules/embedding_grad.hpp>
#include <ctspmd/rules/flash_attention.hpp>
#include <ctspmd/rules/fused_linear_param_grad_add.hpp>
#include <ctspmd/rules/layer_norm.hpp>
#include <ctspmd/rules/matmul.hpp>
#include <ctspmd/rules/matmul_grad.hpp>
#include <ctspmd/rules/reduction.hpp>
#include <ctspmd/rules/replicated.hpp>
#include <ctspmd/rules/reshape.hpp>
#include <ctspmd/rules/rule_base.hpp>
#include <ctspmd/rules/softmax.hpp>
#include <ctspmd/rules/split.hpp>
#include <ctspmd/rules/transpose.hpp>

namespace ctspmd::rules {

/// A list of rule types.
template <class... Rules>
struct rule_list {
  static constexpr std::size_t size = sizeof...(Rules);
};

/// Every registered rule type, each once.
using registered_rules =
    rule_list<bmm, c_embedding, c_embedding_grad, c_softmax_with_cross_entropy, cast, concat, cross_entropy_with_softmax, det, dynamic_einsum, elementwise, embedding, embedding_grad, flash_attention, flash_attention_grad, flatten, fused_linear_param_grad_add,
              frobenius_norm, full_like, layer_norm, matmul, matmul_grad, reduction_with<reduce_type::all>,
              reduction_with<reduce_type::any>, reduction_with<reduce_type::avg>, reduction_with<reduce_type::max>,
              reduction_with<reduce_type::min>, reduction_with<reduce_type::prod>, reduction_with<reduce_type::sum>,
              replicated, reshape, softmax, split, stack, transpose>;

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

/// The I-th registered rule type.
template <std::size_t I>
using registered_rule = typename detail::type_at<I, registered_rules>::type;

/// One registered operator name and its rule (an index into `registered_rules`).
struct registry_entry {
  std::string_view name;
  std::size_t rule = 0;
};

namespace detail {
template <class Rule>
constexpr registry_entry entry(std::string_view name) noexcept {
  static_assert(rule_index<Rule, registered_rules> < registered_rules::size, "list the rule in registered_rules");
  return {name, rule_index<Rule, registered_rules>};
}
}  // namespace detail

/// Every operator name of Paddle's rules (fluid's and phi's), plus `"einsum"`, sorted by name.
// clang-format off
inline constexpr std::array registry = {
    detail::entry<elementwise>("acos"),
    detail::entry<elementwise>("acosh"),
    detail::entry<elementwise>("add"),
    detail::entry<reduction_with<reduce_type::all>>("all"),
    detail::entry<reduction_with<reduce_type::max>>("amax"),
    detail::entry<reduction_with<reduce_type::min>>("amin"),
    detail::entry<reduction_with<reduce_type::any>>("any"),
    detail::entry<elementwise>("asin"),
    detail::entry<elementwise>("asinh"),
    detail::entry<elementwise>("assign"),
    detail::entry<elementwise>("assign_out_"),
    detail::entry<elementwise>("atan"),
    detail::entry<elementwise>("atanh"),
    detail::entry<elementwise>("bernoulli"),
    detail::entry<elementwise>("bitwise_and"),
    detail::entry<elementwise>("bitwise_not"),
    detail::entry<elementwise>("bitwise_or"),
    detail::entry<elementwise>("bitwise_xor"),
    detail::entry<bmm>("bmm"),
    detail::entry<c_embedding>("c_embedding"),
    detail::entry<c_embedding_grad>("c_embedding_grad"),
    detail::entry<c_softmax_with_cross_entropy>("c_softmax_with_cross_entropy"),
    detail::entry<cast>("cast"),
    detail::entry<elementwise>("ceil"),
    detail::entry<elementwise>("celu"),
    detail::entry<elementwise>("clip"),
    detail::entry<concat>("concat"),
    detail::entry<elementwise>("conj"),
    detail::entry<elementwise>("cos"),
    detail::entry<elementwise>("cosh"),
    detail::entry<cross_entropy_with_softmax>("cross_entropy_with_softmax"),
    detail::entry<det>("det"),
    detail::entry<elementwise>("digamma"),
    detail::entry<elementwise>("divide"),
    detail::entry<dynamic_einsum>("einsum"),
    detail::entry<elementwise>("elementwise_pow"),
    detail::entry<elementwise>("elu"),
    detail::entry<embedding>("embedding"),
    detail::entry<embedding_grad>("embedding_grad"),
    detail::entry<elementwise>("equal"),
    detail::entry<elementwise>("erf"),
    detail::entry<elementwise>("erfinv"),
    detail::entry<elementwise>("exp"),
    detail::entry<elementwise>("expm1"),
    detail::entry<elementwise>("exponential_"),
    detail::entry<elementwise>("fill"),
    detail::entry<flash_attention>("flash_attention"),
    detail::entry<flash_attention_grad>("flash_attention_grad"),
    detail::entry<flatten>("flatten"),
    detail::entry<elementwise>("floor"),
    detail::entry<elementwise>("floor_divide"),
    detail::entry<elementwise>("fmax"),
    detail::entry<elementwise>("fmin"),
    detail::entry<frobenius_norm>("frobenius_norm"),
    detail::entry<full_like>("full_like"),
    detail::entry<fused_linear_param_grad_add>("fused_linear_param_grad_add"),
    detail::entry<elementwise>("gelu"),
    detail::entry<elementwise>("greater_equal"),
    detail::entry<elementwise>("greater_than"),
    detail::entry<elementwise>("hardshrink"),
    detail::entry<elementwise>("hardsigmoid"),
    detail::entry<elementwise>("hardswish"),
    detail::entry<elementwise>("hardtanh"),
    detail::entry<elementwise>("heaviside"),
    detail::entry<elementwise>("label_smooth"),
    detail::entry<layer_norm>("layer_norm"),
    detail::entry<elementwise>("leaky_relu"),
    detail::entry<elementwise>("less_equal"),
    detail::entry<elementwise>("less_than"),
    detail::entry<elementwise>("lgamma"),
    detail::entry<elementwise>("log"),
    detail::entry<elementwise>("log10"),
    detail::entry<elementwise>("log1p"),
    detail::entry<elementwise>("log2"),
    detail::entry<softmax>("log_softmax"),
    detail::entry<elementwise>("logical_and"),
    detail::entry<elementwise>("logical_not"),
    detail::entry<elementwise>("logical_or"),
    detail::entry<elementwise>("logical_xor"),
    detail::entry<elementwise>("logit"),
    detail::entry<elementwise>("logsigmoid"),
    detail::entry<embedding>("lookup_table_v2"),
    detail::entry<matmul>("matmul"),
    detail::entry<matmul_grad>("matmul_grad"),
    detail::entry<matmul>("matmul_v2"),
    detail::entry<reduction_with<reduce_type::max>>("max"),
    detail::entry<elementwise>("maximum"),
    detail::entry<reduction_with<reduce_type::avg>>("mean"),
    detail::entry<reduction_with<reduce_type::min>>("min"),
    detail::entry<elementwise>("minimum"),
    detail::entry<elementwise>("mish"),
    detail::entry<elementwise>("multiply"),
    detail::entry<elementwise>("not_equal"),
    detail::entry<elementwise>("poisson"),
    detail::entry<elementwise>("pow"),
    detail::entry<reduction_with<reduce_type::prod>>("prod"),
    detail::entry<elementwise>("reciprocal"),
    detail::entry<elementwise>("relu"),
    detail::entry<elementwise>("relu6"),
    detail::entry<elementwise>("remainder"),
    detail::entry<replicated>("replicated"),
    detail::entry<reshape>("reshape"),
    detail::entry<reshape>("reshape2"),
    detail::entry<elementwise>("round"),
    detail::entry<elementwise>("rsqrt"),
    detail::entry<elementwise>("scale"),
    detail::entry<elementwise>("selu"),
    detail::entry<elementwise>("sigmoid"),
    detail::entry<elementwise>("sign"),
    detail::entry<elementwise>("silu"),
    detail::entry<elementwise>("sin"),
    detail::entry<elementwise>("sinh"),
    detail::entry<softmax>("softmax"),
    detail::entry<cross_entropy_with_softmax>("softmax_with_cross_entropy"),
    detail::entry<elementwise>("softplus"),
    detail::entry<elementwise>("softshrink"),
    detail::entry<elementwise>("softsign"),
    detail::entry<split>("split"),
    detail::entry<split>("split_with_num"),
    detail::entry<elementwise>("sqrt"),
    detail::entry<elementwise>("square"),
    detail::entry<reduction_with<reduce_type::sum>>("squared_l2_norm"),
    detail::entry<stack>("stack"),
    detail::entry<elementwise>("stanh"),
    detail::entry<elementwise>("subtract"),
    detail::entry<reduction_with<reduce_type::sum>>("sum"),
    detail::entry<elementwise>("swish"),
    detail::entry<elementwise>("tan"),
    detail::entry<elementwise>("tanh"),
    detail::entry<elementwise>("tanh_shrink"),
    detail::entry<elementwise>("thresholded_relu"),
    detail::entry<transpose>("transpose"),
    detail::entry<transpose>("transpose2"),
    detail::entry<elementwise>("trunc"),
};
// clang-format on

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
  // A misspelt operator name stops here (the registry is in ctspmd/rules/registry.hpp).
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
