#ifndef CTSPMD_RUNTIME_TESTS_CHECK_ERROR_HPP
#define CTSPMD_RUNTIME_TESTS_CHECK_ERROR_HPP
#include <ctspmd/core/error.hpp>

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace ctspmd_test {
/// Runs f, which must throw spmd_error of `kind` whose message contains `part`.
template <class F>
void check_error(F f, ctspmd::error_kind kind, std::string_view part) {
  try {
    f();
    FAIL("no spmd_error thrown; expected: " << part);
  } catch (const ctspmd::spmd_error& e) {
    CHECK(e.kind() == kind);
    CHECK_MESSAGE(std::string_view(e.what()).find(part) != std::string_view::npos, std::string(e.what()));
  }
}
}  // namespace ctspmd_test

#endif
