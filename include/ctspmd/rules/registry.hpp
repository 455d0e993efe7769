#ifndef CTSPMD_RULES_REGISTRY_HPP
#define CTSPMD_RULES_REGISTRY_HPP
/// \file The rule registry: every operator name, as Paddle spells it, mapped to its rule.
/// It is the single list of rules; the runtime layer's by-name table is generated from it.

#include <cstddef>
#include <utility>

#include <boost/hana/at_key.hpp>
#include <boost/hana/contains.hpp>
#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/string.hpp>
#include <boost/hana/type.hpp>

#include <ctspmd/core/fixed_string.hpp>
#include <ctspmd/rules/concat.hpp>
#include <ctspmd/rules/cross_entropy_with_softmax.hpp>
#include <ctspmd/rules/einsum.hpp>
#include <ctspmd/rules/elementwise.hpp>
#include <ctspmd/rules/embedding.hpp>
#include <ctspmd/rules/layer_norm.hpp>
#include <ctspmd/rules/matmul.hpp>
#include <ctspmd/rules/reduction.hpp>
#include <ctspmd/rules/replicated.hpp>
#include <ctspmd/rules/reshape.hpp>
#include <ctspmd/rules/softmax.hpp>
#include <ctspmd/rules/split.hpp>
#include <ctspmd/rules/transpose.hpp>

namespace ctspmd::rules {

namespace detail {
template <fixed_string Name, std::size_t... I>
constexpr auto hana_name_impl(std::index_sequence<I...>) {
  return boost::hana::string_c<Name.chars[I]...>;
}
}  // namespace detail

/// The compile-time string `Name` as a `boost::hana::string` (a registry key).
template <fixed_string Name>
inline constexpr auto hana_name = detail::hana_name_impl<Name>(std::make_index_sequence<Name.size()>{});

namespace detail {
template <fixed_string Name, class Rule>
constexpr auto entry() {
  return boost::hana::make_pair(hana_name<Name>, boost::hana::type_c<Rule>);
}
}  // namespace detail

/// Operator name -> rule type (`boost::hana::type`), e.g. `registry[hana_name<"embedding">]`:
/// every operator name of Paddle's rules (sorted here by name), plus `"einsum"`.
// clang-format off
inline constexpr auto registry = boost::hana::make_map(
    detail::entry<"acos", elementwise>(),
    detail::entry<"acosh", elementwise>(),
    detail::entry<"add", elementwise>(),
    detail::entry<"all", reduction_with<reduce_type::all>>(),
    detail::entry<"amax", reduction_with<reduce_type::max>>(),
    detail::entry<"amin", reduction_with<reduce_type::min>>(),
    detail::entry<"any", reduction_with<reduce_type::any>>(),
    detail::entry<"asin", elementwise>(),
    detail::entry<"asinh", elementwise>(),
    detail::entry<"assign", elementwise>(),
    detail::entry<"assign_out_", elementwise>(),
    detail::entry<"atan", elementwise>(),
    detail::entry<"atanh", elementwise>(),
    detail::entry<"bernoulli", elementwise>(),
    detail::entry<"bitwise_and", elementwise>(),
    detail::entry<"bitwise_not", elementwise>(),
    detail::entry<"bitwise_or", elementwise>(),
    detail::entry<"bitwise_xor", elementwise>(),
    detail::entry<"ceil", elementwise>(),
    detail::entry<"celu", elementwise>(),
    detail::entry<"clip", elementwise>(),
    detail::entry<"concat", concat>(),
    detail::entry<"conj", elementwise>(),
    detail::entry<"cos", elementwise>(),
    detail::entry<"cosh", elementwise>(),
    detail::entry<"cross_entropy_with_softmax", cross_entropy_with_softmax>(),
    detail::entry<"det", elementwise>(),
    detail::entry<"digamma", elementwise>(),
    detail::entry<"divide", elementwise>(),
    detail::entry<"einsum", dynamic_einsum>(),
    detail::entry<"elementwise_pow", elementwise>(),
    detail::entry<"elu", elementwise>(),
    detail::entry<"embedding", embedding>(),
    detail::entry<"erf", elementwise>(),
    detail::entry<"erfinv", elementwise>(),
    detail::entry<"exp", elementwise>(),
    detail::entry<"expm1", elementwise>(),
    detail::entry<"exponential_", elementwise>(),
    detail::entry<"fill", elementwise>(),
    detail::entry<"floor", elementwise>(),
    detail::entry<"floor_divide", elementwise>(),
    detail::entry<"fmax", elementwise>(),
    detail::entry<"fmin", elementwise>(),
    detail::entry<"frobenius_norm", frobenius_norm>(),
    detail::entry<"gelu", elementwise>(),
    detail::entry<"hardshrink", elementwise>(),
    detail::entry<"hardsigmoid", elementwise>(),
    detail::entry<"hardswish", elementwise>(),
    detail::entry<"hardtanh", elementwise>(),
    detail::entry<"heaviside", elementwise>(),
    detail::entry<"label_smooth", elementwise>(),
    detail::entry<"layer_norm", layer_norm>(),
    detail::entry<"leaky_relu", elementwise>(),
    detail::entry<"lgamma", elementwise>(),
    detail::entry<"log", elementwise>(),
    detail::entry<"log10", elementwise>(),
    detail::entry<"log1p", elementwise>(),
    detail::entry<"log2", elementwise>(),
    detail::entry<"log_softmax", softmax>(),
    detail::entry<"logical_and", elementwise>(),
    detail::entry<"logical_not", elementwise>(),
    detail::entry<"logical_or", elementwise>(),
    detail::entry<"logical_xor", elementwise>(),
    detail::entry<"logit", elementwise>(),
    detail::entry<"logsigmoid", elementwise>(),
    detail::entry<"lookup_table_v2", embedding>(),
    detail::entry<"matmul", matmul>(),
    detail::entry<"max", reduction_with<reduce_type::max>>(),
    detail::entry<"maximum", elementwise>(),
    detail::entry<"mean", reduction_with<reduce_type::avg>>(),
    detail::entry<"min", reduction_with<reduce_type::min>>(),
    detail::entry<"minimum", elementwise>(),
    detail::entry<"mish", elementwise>(),
    detail::entry<"multiply", elementwise>(),
    detail::entry<"poisson", elementwise>(),
    detail::entry<"pow", elementwise>(),
    detail::entry<"prod", reduction_with<reduce_type::prod>>(),
    detail::entry<"reciprocal", elementwise>(),
    detail::entry<"relu", elementwise>(),
    detail::entry<"relu6", elementwise>(),
    detail::entry<"remainder", elementwise>(),
    detail::entry<"replicated", replicated>(),
    detail::entry<"reshape", reshape>(),
    detail::entry<"round", elementwise>(),
    detail::entry<"rsqrt", elementwise>(),
    detail::entry<"scale", elementwise>(),
    detail::entry<"selu", elementwise>(),
    detail::entry<"sigmoid", elementwise>(),
    detail::entry<"sign", elementwise>(),
    detail::entry<"silu", elementwise>(),
    detail::entry<"sin", elementwise>(),
    detail::entry<"sinh", elementwise>(),
    detail::entry<"softmax", softmax>(),
    detail::entry<"softmax_with_cross_entropy", cross_entropy_with_softmax>(),
    detail::entry<"softplus", elementwise>(),
    detail::entry<"softshrink", elementwise>(),
    detail::entry<"softsign", elementwise>(),
    detail::entry<"split", split>(),
    detail::entry<"split_with_num", split>(),
    detail::entry<"sqrt", elementwise>(),
    detail::entry<"square", elementwise>(),
    detail::entry<"stanh", elementwise>(),
    detail::entry<"subtract", elementwise>(),
    detail::entry<"sum", reduction>(),
    detail::entry<"swish", elementwise>(),
    detail::entry<"tan", elementwise>(),
    detail::entry<"tanh", elementwise>(),
    detail::entry<"tanh_shrink", elementwise>(),
    detail::entry<"thresholded_relu", elementwise>(),
    detail::entry<"transpose", transpose>(),
    detail::entry<"trunc", elementwise>());
// clang-format on

/// True if a rule is registered under `Name`.
template <fixed_string Name>
inline constexpr bool has_rule = decltype(boost::hana::contains(registry, hana_name<Name>))::value;

namespace detail {
template <fixed_string Name>
struct rule_lookup {
  static_assert(has_rule<Name>, "no rule is registered under this operator name (see ctspmd::rules::registry)");
  using type = typename std::remove_cvref_t<decltype(registry[hana_name<Name>])>::type;
};
}  // namespace detail

/// The rule registered under `Name`: `rule_for<"lookup_table_v2">` is `embedding`.
template <fixed_string Name>
using rule_for = typename detail::rule_lookup<Name>::type;

}  // namespace ctspmd::rules

#endif
