#include <ctspmd/core/static_vector.hpp>

#include "../test_support.hpp"

#include <cstdint>
#include <span>
#include <type_traits>

using ctspmd::static_vector;
using ctspmd_test::constant_evaluates;

// ---- construction, size, indexing ------------------------------------------------------
constexpr static_vector<std::int64_t, 4> v{3, -1, 7};
static_assert(v.size() == 3 && !v.empty() && v.capacity() == 4);
static_assert(v[0] == 3 && v[1] == -1 && v[2] == 7 && v.back() == 7);
static_assert(static_vector<int, 3>{}.empty());
static_assert(static_vector<int, 5>(3, 9) == static_vector<int, 5>{9, 9, 9});

// ---- equality compares sizes and the used elements only ---------------------------------
static_assert(v == static_vector<std::int64_t, 4>{3, -1, 7});
static_assert(!(v == static_vector<std::int64_t, 4>{3, -1}));
static_assert(!(v == static_vector<std::int64_t, 4>{3, -1, 8}));

// ---- mutation ---------------------------------------------------------------------------
constexpr auto mutated = [] {
  static_vector<int, 4> w{1, 2};
  w.push_back(5);
  w[0] = 4;
  w.pop_back();
  w.resize(4, 8);
  w.resize(3);
  return w;
}();
static_assert(mutated == static_vector<int, 4>{4, 2, 8});
constexpr auto emplaced = [] {
  static_vector<static_vector<int, 2>, 3> w;
  w.emplace_back().push_back(7);  // emplace_back returns the new element
  w.emplace_back(2u, 1);
  return w;
}();
static_assert(emplaced.size() == 2 && emplaced[0] == static_vector<int, 2>{7} && emplaced[1] == static_vector<int, 2>{1, 1});

// ---- copies: a small vector is trivially copyable (copied as one block), so the types that
// hold one are too; a large one copies only its used elements --------------------------------
static_assert(std::is_trivially_copyable_v<static_vector<std::int64_t, 9>>);
static_assert(!std::is_trivially_copyable_v<static_vector<std::int64_t, 32>>);
constexpr auto copied = [] {
  const static_vector<std::int64_t, 32> big{1, 2, 3};
  static_vector<std::int64_t, 32> c = big;
  c.push_back(4);
  static_vector<std::int64_t, 32> d;
  d = c;
  return d;
}();
static_assert(copied == static_vector<std::int64_t, 32>{1, 2, 3, 4});

// ---- iteration and span -----------------------------------------------------------------
constexpr std::int64_t sum(std::span<const std::int64_t> s) {
  std::int64_t t = 0;
  for (auto x : s) t += x;
  return t;
}
static_assert(sum(v) == 9);
static_assert(static_vector<char, 8>(std::string_view("abc")) == static_vector<char, 8>{'a', 'b', 'c'});

// ---- errors: exceeding the capacity or the size is not a constant expression ------------
static_assert(constant_evaluates<[] { static_vector<int, 2>{1, 2}; }>);
static_assert(!constant_evaluates<[] { static_vector<int, 2>{1, 2, 3}; }>);
static_assert(!constant_evaluates<[] {
  static_vector<int, 2> w{1, 2};
  w.push_back(3);
}>);
static_assert(!constant_evaluates<[] { return static_vector<int, 2>{1}[1]; }>);
static_assert(!constant_evaluates<[] { static_vector<int, 2>{}.pop_back(); }>);
