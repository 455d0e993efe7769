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

// entry: one load; -1 also for a letter without an entry and for '1', not_a_label otherwise
static_assert(map.entry('a') == 0 && map.entry('k') == -1 && map.entry('Z') == 2 && map.entry('b') == -1 &&
              map.entry('1') == -1 && map.entry('-') == axis_to_dim_map::not_a_label &&
              map.entry('\0') == axis_to_dim_map::not_a_label);
// for_each(f, except) skips the letters of `except`
static_assert([] {
  int n = 0;
  char last = 0;
  map.for_each([&](char l, std::int64_t) { ++n, last = l; }, "aZ");
  return n == 1 && last == 'k';
}());
// propose: a letter without an entry, or replicated, takes the proposal; a mesh dim stays.
// It returns the entry before, -1 when there was none.
static_assert([] {
  axis_to_dim_map m;
  const bool first = m.propose('x', -1) == -1 && m.contains('x') && m.entry('x') == -1;
  const bool shard = m.propose('x', 1) == -1 && m.entry('x') == 1;
  const bool stays = m.propose('x', -1) == 1 && m.propose('x', 0) == 1 && m.entry('x') == 1;
  return first && shard && stays && m.size() == 1 && !m.contains('y');
}());
// an entry that went back to -1 and one never set still compare by presence
static_assert([] {
  axis_to_dim_map with, without;
  with.set('q', -1);
  return !(with == without) && with.entry('q') == without.entry('q');
}());
