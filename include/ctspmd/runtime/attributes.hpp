#ifndef CTSPMD_RUNTIME_ATTRIBUTES_HPP
#define CTSPMD_RUNTIME_ATTRIBUTES_HPP
/// \file Run-time attributes: a string-keyed map of values, converted to a rule's typed
/// `attributes` through Boost.Hana struct reflection (run time only).

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>
#include <boost/hana/unpack.hpp>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::runtime {

/// One attribute value.
using attribute = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>>;
/// Attributes by name.
using attribute_map = std::map<std::string, attribute, std::less<>>;

/// The name of the type an attribute value holds ("bool", "int", "float", "string", "int list").
inline std::string_view type_name(const attribute& a) {
  constexpr std::string_view names[] = {"bool", "int", "float", "string", "int list"};
  return names[a.index()];
}

/// The reduce type named `s` ("sum", "max", ...), or nothing.
inline bool parse_reduce_type(std::string_view s, reduce_type& out) {
  for (std::size_t i = 0; i < reduce_type_count; ++i)
    if (s == reduce_type_names[i]) {
      out = static_cast<reduce_type>(i);
      return true;
    }
  return false;
}

namespace detail {

/// How a member of type T is described and read. Member types are those rules use. `read`
/// returns what is wrong with the value, or an empty string.
template <class T>
struct member_traits;
template <class T>
struct scalar_traits {
  static attribute to_attribute(T v) { return v; }
  static std::string read(const attribute& a, T& out) {
    if (const auto* v = std::get_if<T>(&a)) return out = *v, std::string();
    return "must be " + std::string(member_traits<T>::type) + ", not " + std::string(type_name(a));
  }
};
template <>
struct member_traits<bool> : scalar_traits<bool> {
  static constexpr std::string_view type = "bool";
};
template <>
struct member_traits<std::int64_t> : scalar_traits<std::int64_t> {
  static constexpr std::string_view type = "int";
};
template <>
struct member_traits<double> {
  static constexpr std::string_view type = "float";
  static attribute to_attribute(double v) { return v; }
  static std::string read(const attribute& a, double& out) {  // an int is a valid float
    if (const auto* v = std::get_if<double>(&a)) return out = *v, std::string();
    if (const auto* i = std::get_if<std::int64_t>(&a)) return out = static_cast<double>(*i), std::string();
    return "must be float, not " + std::string(type_name(a));
  }
};
template <>
struct member_traits<std::string_view> {  // refers to the map's string for the call's duration
  static constexpr std::string_view type = "string";
  static attribute to_attribute(std::string_view v) { return std::string(v); }
  static std::string read(const attribute& a, std::string_view& out) {
    if (const auto* v = std::get_if<std::string>(&a)) return out = *v, std::string();
    return "must be string, not " + std::string(type_name(a));
  }
};
template <>
struct member_traits<reduce_type> {
  static constexpr std::string_view type = "reduce type (sum, max, min, prod, avg, any, all)";
  static attribute to_attribute(reduce_type v) { return std::string(to_string(v)); }
  static std::string read(const attribute& a, reduce_type& out) {
    const auto* v = std::get_if<std::string>(&a);
    if (v != nullptr && parse_reduce_type(*v, out)) return {};
    return "must be " + std::string(type) + ", not " + (v != nullptr ? "\"" + *v + "\"" : std::string(type_name(a)));
  }
};
template <std::size_t N>
struct member_traits<static_vector<std::int64_t, N>> {
  static constexpr std::string_view type = "int list";
  static attribute to_attribute(const static_vector<std::int64_t, N>& v) {
    return std::vector<std::int64_t>(v.begin(), v.end());
  }
  static std::string read(const attribute& a, static_vector<std::int64_t, N>& out) {
    const auto* v = std::get_if<std::vector<std::int64_t>>(&a);
    if (v == nullptr) return "must be int list, not " + std::string(type_name(a));
    if (v->size() > N)
      return "has " + std::to_string(v->size()) + " entries, above the " + std::to_string(N) + " it can hold";
    out = static_vector<std::int64_t, N>(*v);
    return {};
  }
};

/// The aliases `Attributes` declares (see `attribute_alias`), or none.
template <class Attributes>
constexpr std::span<const attribute_alias> aliases_of() {
  if constexpr (requires { Attributes::aliases; })
    return Attributes::aliases;
  else
    return {};
}
/// The alias of attribute `name` in `Attributes`, or "".
template <class Attributes>
constexpr std::string_view alias_of(std::string_view name) {
  for (const auto& a : aliases_of<Attributes>())
    if (a.name == name) return a.alias;
  return "";  // not a null view: GCC warns of a memcmp on one when it is compared (-Wnonnull)
}

}  // namespace detail

/// One attribute a rule accepts: its name, type and default, and a second name it is accepted
/// under ("" if none).
struct attribute_info {
  std::string_view name;
  std::string_view type;
  attribute default_value;
  std::string_view alias{};
};

/// True if `Attributes` can be read by name: adapted with BOOST_HANA_ADAPT_STRUCT.
template <class Attributes>
inline constexpr bool reflectable = boost::hana::Struct<Attributes>::value;

/// The attributes `Attributes` accepts, in declaration order, with their defaults.
template <class Attributes>
std::vector<attribute_info> describe_attributes() {
  // A rule's attributes struct, not adapted, stops here: adapt it with BOOST_HANA_ADAPT_STRUCT at
  // global scope (the built-in rules' adaptations are in ctspmd/registry/attribute_reflection.hpp).
  static_assert(reflectable<Attributes>, "the runtime layer reads a rule's attributes by name: adapt them with "
                                         "BOOST_HANA_ADAPT_STRUCT (see ctspmd/registry/attribute_reflection.hpp)");
  std::vector<attribute_info> out;
  const Attributes defaults{};
  boost::hana::for_each(boost::hana::accessors<Attributes>(), [&](auto member) {
    const auto& value = boost::hana::second(member)(defaults);
    using traits = detail::member_traits<std::remove_cvref_t<decltype(value)>>;
    const std::string_view name = boost::hana::to<const char*>(boost::hana::first(member));
    out.push_back({name, traits::type, traits::to_attribute(value), detail::alias_of<Attributes>(name)});
  });
  return out;
}

/// The names of the attributes `Attributes` accepts, in declaration order (no allocation).
template <class Attributes>
constexpr auto attribute_names() {
  return boost::hana::unpack(boost::hana::accessors<Attributes>(), [](auto... member) {
    return std::array<std::string_view, sizeof...(member)>{
        std::string_view(boost::hana::to<const char*>(boost::hana::first(member)))...};
  });
}

/// `map` as `Attributes`: absent keys keep their defaults; an unknown key, a value of the wrong
/// type or too long a list, or an attribute given under both its names, is an
/// `invalid_argument` naming `op`, the key and what is accepted.
template <class Attributes>
Attributes to_attributes(std::string_view op, const attribute_map& map) {
  static_assert(reflectable<Attributes>, "the runtime layer reads a rule's attributes by name: adapt them with "
                                         "BOOST_HANA_ADAPT_STRUCT (see ctspmd/registry/attribute_reflection.hpp)");
  const auto fail = [&](std::string_view key, const std::string& what) {
    throw spmd_error(error_kind::invalid_argument, std::string(op) + ": attribute '" + std::string(key) + "' " + what);
  };
  Attributes attrs{};
  std::size_t matched = 0;
  boost::hana::for_each(boost::hana::accessors<Attributes>(), [&](auto member) {
    const std::string_view name = boost::hana::to<const char*>(boost::hana::first(member));
    const std::string_view alias = detail::alias_of<Attributes>(name);
    auto it = map.find(name);
    if (!alias.empty()) {
      const auto by_alias = map.find(alias);
      if (it != map.end() && by_alias != map.end()) fail(name, "is also given as '" + std::string(alias) + "'");
      if (it == map.end()) it = by_alias;
    }
    if (it == map.end()) return;
    ++matched;
    auto& field = boost::hana::second(member)(attrs);
    using traits = detail::member_traits<std::remove_cvref_t<decltype(field)>>;
    if (const std::string wrong = traits::read(it->second, field); !wrong.empty()) fail(it->first, wrong);
  });
  if (matched == map.size()) return attrs;
  constexpr auto names = attribute_names<Attributes>();
  for (const auto& [key, value] : map) {
    bool known = false;
    for (const std::string_view name : names) known = known || name == key || detail::alias_of<Attributes>(name) == key;
    if (known) continue;
    std::string accepted;
    for (const std::string_view name : names) (accepted += accepted.empty() ? "" : ", ") += name;
    throw spmd_error(error_kind::invalid_argument, std::string(op) + ": unknown attribute '" + key + "'; " +
                                                       (accepted.empty() ? "it accepts none" : "accepted: " + accepted));
  }
  return attrs;
}

}  // namespace ctspmd::runtime

#endif
