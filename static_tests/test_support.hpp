#ifndef CTSPMD_STATIC_TESTS_TEST_SUPPORT_HPP
#define CTSPMD_STATIC_TESTS_TEST_SUPPORT_HPP
// For static tests of throwing calls: `constant_evaluates<[] { ... }>` is false when
// evaluating the lambda's body fails (a raised error is not a constant expression).
#include <type_traits>

namespace ctspmd_test {
template <auto F>
inline constexpr bool constant_evaluates = requires { typename std::bool_constant<(F(), true)>; };
}  // namespace ctspmd_test

#endif
