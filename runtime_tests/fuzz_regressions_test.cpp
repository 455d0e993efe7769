// Regression tests for what fuzzing the runtime API and ctspmd-infer found (fuzz/README.md).
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "check_error.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#ifdef CTSPMD_TEST_REQUESTS
#include "requests.hpp"
#endif

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace fuzz_regressions_test {

using namespace ctspmd;
using ctspmd_test::check_error;

const process_mesh mesh({2});
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

TEST_CASE("split: sections whose sum overflows int64 are an error, not undefined behaviour") {
  const std::vector<dist_tensor_spec> known{{{4}, mesh}};
  const std::vector<dist_tensor_spec> unknown{{{-1}, mesh}};
  const runtime::attribute_map attrs{{"sections", std::vector<std::int64_t>{int64_max, int64_max}}};
  check_error([&] { (void)runtime::infer_forward("split", known, attrs); }, error_kind::invalid_argument,
              "split: the sections up to section 1 add up to more than int64 can hold");
  // The size being unknown does not make such sections valid.
  check_error([&] { (void)runtime::infer_forward("split", unknown, attrs); }, error_kind::invalid_argument,
              "the sections up to section 1 add up to more than int64 can hold");
  const runtime::attribute_map inferred{{"sections", std::vector<std::int64_t>{-1, int64_max, 1}}};
  check_error([&] { (void)runtime::infer_backward("split", known, known, inferred); }, error_kind::invalid_argument,
              "the sections up to section 2 add up to more than int64 can hold");
  // Large sections that fit are still checked against the size as before.
  check_error([&] { (void)runtime::infer_forward("split", known, {{"sections", std::vector<std::int64_t>{int64_max, 0}}}); },
              error_kind::invalid_argument, "the sections add up to 9223372036854775807, but the split axis 0 has size 4");
}

TEST_CASE("a label that is not printable ASCII is shown as \\xNN, so a NUL does not cut the message") {
  const std::vector<dist_tensor_spec> x{{{4}, mesh}};
  check_error([&] { (void)runtime::infer_forward("einsum", x, {{"notation", std::string("a\0->a", 5)}}); },
              error_kind::invalid_argument,
              "einsum: notation position 1: '\\x00' is not an axis label (a-z, A-Z, '1'), ',' before the '->', or '->'");
  check_error([&] { (void)runtime::infer_forward("einsum", x, {{"notation", std::string("\xff->a")}}); },
              error_kind::invalid_argument, "notation position 0: '\\xff' is not an axis label");
}

#ifdef CTSPMD_TEST_REQUESTS  // the tool's request reader is built (runtime_tests/CMakeLists.txt)

TEST_CASE("ctspmd-infer: a deeply nested value in a request is an error response, not a stack overflow") {
  // The handler dumped (and for "direction" copied) the offending value, both recursive.
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  const std::string lines[] = {
      R"({"op": "matmul", "direction": )" + deep + R"(, "mesh": [2], "inputs": []})",
      R"({"op": "matmul", "mesh": )" + deep + R"(, "inputs": []})",
      R"({"op": "matmul", "mesh": [2], "inputs": [{"shape": )" + deep + "}]}",
      R"({"op": "matmul", "mesh": [2], "inputs": [], "attrs": {"trans_x": [)" + deep + "]}}",
  };
  const std::string expected[] = {
      R"({"error":{"kind":"invalid_argument","message":"\"direction\" must be \"forward\" or \"backward\", not an array"}})",
      R"({"error":{"kind":"invalid_argument","message":"mesh[0] must be an integer, not an array"}})",
      R"({"error":{"kind":"invalid_argument","message":"inputs[0].shape[0] must be an integer, not an array"}})",
      R"({"error":{"kind":"invalid_argument","message":"attrs.trans_x[0] must be an integer, not an array"}})",
  };
  for (std::size_t i = 0; i < std::size(lines); ++i) {
    const auto r = ctspmd_requests::handle(lines[i]);
    CHECK_FALSE(r.ok);
    CHECK(r.line == expected[i]);
  }
  // Short flat values are still shown.
  CHECK(ctspmd_requests::handle(R"({"op": "matmul", "direction": [1, "x"], "mesh": [2], "inputs": []})").line ==
        R"({"error":{"kind":"invalid_argument","message":"\"direction\" must be \"forward\" or \"backward\", not [1,\"x\"]"}})");
}
#endif

}  // namespace fuzz_regressions_test
