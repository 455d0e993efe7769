#include <ctspmd/core/error.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd_test::constant_evaluates;

// ---- error kinds have Paddle's names -----------------------------------------------------
static_assert(to_string(error_kind::invalid_argument) == "invalid_argument");
static_assert(to_string(error_kind::precondition_not_met) == "precondition_not_met");
static_assert(to_string(error_kind::already_exists) == "already_exists");

// ---- result and status --------------------------------------------------------------------
constexpr result<int> good = 4;
constexpr result<int> bad = make_error(error_kind::not_found, "op", "no {} here", 3);
static_assert(good && good.ok() && good.value() == 4 && *good == 4);
static_assert(!bad && bad.kind() == error_kind::not_found && bad.error().values[0] == 3);
static_assert(bad.error().op == "op");
static_assert(status{} && !status{make_error(error_kind::unimplemented, "", "x")});

// ---- value() of an error, or raise, stops constant evaluation -----------------------------
static_assert(!constant_evaluates<[] { return bad.value(); }>);
static_assert(!constant_evaluates<[] { raise(make_error(error_kind::invalid_argument, "", "x")); }>);
static_assert(constant_evaluates<[] { return good.value(); }>);

// ---- CTSPMD_TRY propagates the first failure ---------------------------------------------
constexpr status step(int i) {
  if (i == 2) return make_error(error_kind::invalid_argument, "", "step {} failed", i);
  return {};
}
constexpr result<int> steps(int n) {
  for (int i = 0; i < n; ++i) CTSPMD_TRY(step(i));
  return n;
}
static_assert(steps(2).value() == 2);
static_assert(!steps(3) && steps(3).error().values[0] == 2);
