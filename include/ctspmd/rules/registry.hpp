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
#include <ctspmd/rules/einsum.hpp>
#include <ctspmd/rules/embedding.hpp>
#include <ctspmd/rules/matmul.hpp>

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

/// Operator name -> rule type (`boost::hana::type`), e.g. `registry[hana_name<"embedding">]`.
inline constexpr auto registry = boost::hana::make_map(  //
    detail::entry<"einsum", dynamic_einsum>(),         //
    detail::entry<"embedding", embedding>(),           //
    detail::entry<"lookup_table_v2", embedding>(),     //
    detail::entry<"matmul", matmul>());

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
