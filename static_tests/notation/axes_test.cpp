#include <ctspmd/notation/axes.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd_test::constant_evaluates;

// ---- labels ------------------------------------------------------------------------------------
static_assert(axis_letter_index('a') == 0 && axis_letter_index('z') == 25 && axis_letter_index('A') == 26);
static_assert(axis_letter_index('1') == -1 && axis_letter_index(',') == -1);
static_assert(is_axis_label('1') && is_axis_label('Q') && !is_axis_label('-'));
static_assert(axes_string("ab") + "k" == "abk" && axes_string("mk").contains('k') && !axes_string("mk").contains('n'));

// ---- get_broadcast_axes: right-aligned slices of the alphabet ------------------------------------
static_assert(get_broadcast_axes(2, 4, "abcdefghijklmnopqrstuvwxyz") == "cd");
static_assert(get_broadcast_axes(4, 4, alphabets::full) == "abcd");
static_assert(get_broadcast_axes(1, 3, alphabets::matmul) == "c");
static_assert(get_broadcast_axes(0, 3, alphabets::full) == "");
static_assert(get_broadcast_axes(-1, 3, alphabets::full) == "");
static_assert(get_broadcast_axes(3, 3, alphabets::embedding) == "abc");
static_assert(get_broadcast_axes(2, 11, alphabets::embedding) == "lm");  // the hole at j, k

// ---- errors ------------------------------------------------------------------------------------------
static_assert(!try_get_broadcast_axes(3, 2, alphabets::full));      // tensor rank above the broadcast rank
static_assert(!try_get_broadcast_axes(2, 5, "abcd"));               // alphabet too short
static_assert(!try_get_broadcast_axes(10, 10, alphabets::full));    // above max_rank = 9
static_assert(try_get_broadcast_axes(3, 2, alphabets::full).kind() == error_kind::invalid_argument);
static_assert(!constant_evaluates<[] { return get_broadcast_axes(3, 2, alphabets::full); }>);

// ---- detail::letters_then: the first b letters of an alphabet, then a tail, as constants ---------
constexpr ctspmd::detail::letters_then<2> letters_mk{alphabets::matmul, "mk"};
static_assert(letters_mk(0) == "mk" && letters_mk(2) == "abmk" && letters_mk(3).substr(1) == "bcmk");
static_assert(letters_mk(max_rank).size() == max_rank + 2);
constexpr ctspmd::detail::letters_then<1> two_letters_n{"xy", "n"};
static_assert(two_letters_n(1) == "xn" && two_letters_n(2) == "xyn" && two_letters_n(5) == "xyn");  // only the letters there are
