// The reflection of every registered rule's attributes (registry/attribute_reflection.hpp) lists every member of
// the struct: a member left out would be unknown to the runtime layer, the JSON tool and Python.
// The members are counted as the most initializers the aggregate takes (one braced value each).
#include <ctspmd/registry/attribute_reflection.hpp>

#include <boost/hana/accessors.hpp>
#include <boost/hana/length.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

using namespace ctspmd;

namespace {

/// Converts to any member's type (declared only: it is never evaluated).
struct any_member {
  template <class T>
  constexpr operator T() const noexcept;  // NOLINT: converts to anything by design
};

template <class T, std::size_t... I>
constexpr bool takes(std::index_sequence<I...>) {
  return requires { T{((void)I, any_member{})...}; };
}
/// The members of aggregate T: the most initializers it takes.
template <class T, std::size_t N = 0>
constexpr std::size_t member_count() {
  if constexpr (N > 32 || !takes<T>(std::make_index_sequence<N + 1>{}))
    return N;
  else
    return member_count<T, N + 1>();
}

template <class T>
constexpr bool reflects_every_member() {
  constexpr bool every = member_count<T>() == decltype(boost::hana::length(boost::hana::accessors<T>()))::value;
  // The struct named in this instantiation has a member its BOOST_HANA_ADAPT_STRUCT does not list.
  static_assert(every, "an attributes struct has a member registry/attribute_reflection.hpp does not list");
  return every;
}
template <class... Rules>
constexpr bool every_rule_reflected(rules::rule_list<Rules...>) {
  return (reflects_every_member<typename Rules::attributes>() && ...);
}

// The counting itself, on structs of known size.
struct three {
  int a = 0;
  bool b = false;
  static_vector<std::int64_t, 4> c{};
};
struct none {};
static_assert(member_count<three>() == 3 && member_count<none>() == 0);
static_assert(member_count<rules::matmul_attributes>() == 2 && member_count<rules::slice_attributes>() == 5);
static_assert(member_count<rules::flash_attention_attributes>() == 6 && member_count<rules::flash_attention_grad_attributes>() == 3);

static_assert(every_rule_reflected(rules::registered_rules{}));

}  // namespace
