#include <ctspmd/merge/axis_to_dim_map.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd_test::constant_evaluates;

constexpr axis_to_dim_map map = [] {
  axis_to_dim_map m;
  m.set('a', 0);
  m.set('k', -1);
  m.set('Z', 2);
  return m;
}();
static_assert(map.contains('a') && map.contains('k') && map.contains('Z') && !map.contains('b'));
static_assert(map.at('a') == 0 && map.at('k') == -1 && map.at('Z') == 2 && map.size() == 3);
static_assert(!map.contains('1') && !map.find('b') && map.find('b').kind() == error_kind::invalid_argument);
static_assert([] {  // for_each visits the entries in letter order, a-z then A-Z
  char labels[4] = {};
  std::int64_t dims[4] = {};
  int n = 0;
  map.for_each([&](char l, std::int64_t d) { labels[n] = l, dims[n++] = d; });
  return n == 3 && labels[0] == 'a' && labels[1] == 'k' && labels[2] == 'Z' && dims[0] == 0 && dims[1] == -1 &&
         dims[2] == 2;
}());
static_assert(map.value_or('Z', -2) == 2 && map.value_or('k', -2) == -1 && map.value_or('b', -2) == -2 &&
              map.value_or('1', -2) == -2);
static_assert(!constant_evaluates<[] { return map.at('b'); }>);
static_assert(!constant_evaluates<[] { axis_to_dim_map().set('1', 0); }>);
static_assert(!constant_evaluates<[] { axis_to_dim_map().set('a', 99); }>);
