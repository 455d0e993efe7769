// The transpose rule at run time: the static cases again, every error as a thrown
// spmd_error, and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/rules/transpose.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <span>
#include <utility>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace transpose_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::transpose;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::partial_on_mesh partial_spec{mesh};

TEST_CASE("transpose forward") {
  const auto x = spec({2, 4, 8}, {0, -1, 1});
  const auto fwd = transpose::infer_forward({x}, {.perm = {2, 0, 1}});
  CHECK(fwd.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(fwd.outputs[0].dims_mapping() == dims_mapping{1, 0, -1});
  CHECK(transpose::infer_forward({x}, {.perm = {-1, 0, -2}}) == fwd);
  CHECK(transpose::infer_forward({spec({4, 8}, {1, -1})}, {.perm = {1, 0}}).outputs[0].dims_mapping() ==
        dims_mapping{-1, 1});
  CHECK(transpose::infer_forward({spec({}, {})}, {}).outputs[0].dims_mapping() == dims_mapping{});

  const auto partial = transpose::infer_forward({partial_spec({4, 8}, {0, -1}, 1)}, {.perm = {1, 0}});
  CHECK_FALSE(partial.inputs[0].is_partial());
  CHECK_FALSE(partial.outputs[0].is_partial());
  CHECK(partial.outputs[0].dims_mapping() == dims_mapping{-1, 0});
}

TEST_CASE("transpose forward errors") {
  const auto x = spec({2, 4, 8}, {0, -1, 1});
  check_error([&] { (void)transpose::infer_forward({x}, {.perm = {1, 0}}); }, error_kind::invalid_argument,
              "transpose: perm has 2 entries, but x has rank 3");
  check_error([&] { (void)transpose::infer_forward({x}); }, error_kind::invalid_argument,
              "perm has 0 entries, but x has rank 3");
  check_error([&] { (void)transpose::infer_forward({x}, {.perm = {0, 3, 1}}); }, error_kind::invalid_argument,
              "perm entry 3 (position 1) is outside [-3, 3)");
  check_error([&] { (void)transpose::infer_forward({x}, {.perm = {0, -4, 1}}); }, error_kind::invalid_argument,
              "perm entry -4 (position 1) is outside [-3, 3)");
  check_error([&] { (void)transpose::infer_forward({x}, {.perm = {0, 2, -3}}); }, error_kind::invalid_argument,
              "perm entry -3 (position 2) repeats x dim 0");
  check_error([&] { (void)transpose::infer_forward({x, x}, {.perm = {0, 1, 2}}); }, error_kind::invalid_argument,
              "expects 1 input, got 2");
}

TEST_CASE("transpose backward") {
  const auto x = spec({2, 4, 8}, {-1, -1, -1});
  const auto back = transpose::infer_backward({x}, {spec({8, 2, 4}, {1, 0, -1})}, {.perm = {2, 0, 1}});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{1, 0, -1});
  const auto back_partial =
      transpose::infer_backward({x}, {partial_spec({8, 2, 4}, {-1, 0, -1}, 1)}, {.perm = {2, 0, 1}});
  CHECK(back_partial.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK_FALSE(back_partial.inputs[0].is_partial());
  CHECK_FALSE(back_partial.outputs[0].is_partial());

  check_error([&] { (void)transpose::infer_backward({x}, {spec({8, 2}, {-1, -1})}, {.perm = {2, 0, 1}}); },
              error_kind::invalid_argument, "the output has rank 2, but x has rank 3");
  check_error([&] { (void)transpose::infer_backward({x}, {spec({8, 4, 2}, {-1, -1, -1})}, {.perm = {2, 0, 1}}); },
              error_kind::invalid_argument, "output dim 1 has size 4, but x dim 0 (perm) has size 2");
  check_error([&] { (void)transpose::infer_backward({x}, {spec({8, 2, 4}, {-1, -1, -1})}, {.perm = {2, 0, 2}}); },
              error_kind::invalid_argument, "perm entry 2 (position 2) repeats x dim 2");
  check_error([&] { (void)transpose::infer_backward({x}, {}, {.perm = {2, 0, 1}}); }, error_kind::invalid_argument,
              "expects 1 output, got 0");
}

TEST_CASE("transpose forward -> backward round trip") {
  ctspmd_test::rng r(7);
  int checked = 0;
  constexpr int cases = 400;
  for (int n = 0; n < cases; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = static_cast<std::int64_t>(r.uniform(1, 4));
    tensor_shape shape;
    for (std::int64_t d = 0; d < rank; ++d) shape.push_back(d + 2);
    // A random permutation (Fisher-Yates), its entries negative half of the time.
    rules::transpose_attributes attrs;
    for (std::int64_t d = 0; d < rank; ++d) attrs.perm.push_back(d);
    for (std::int64_t d = rank - 1; d > 0; --d)
      std::swap(attrs.perm[static_cast<std::size_t>(d)], attrs.perm[static_cast<std::size_t>(r.uniform(0, d))]);
    tensor_shape out_shape;
    for (auto& p : attrs.perm) {
      out_shape.push_back(shape[static_cast<std::size_t>(p)]);
      if (r.coin()) p -= rank;
    }
    const std::vector<dist_tensor_spec> in{
        {shape, {m, ctspmd_test::random_dims_mapping(r, static_cast<std::size_t>(rank), m.ndim())}}};
    const std::vector<tensor_shape> out{out_shape};
    if (!ctspmd_test::check_roundtrip<transpose>(in, out, attrs)) continue;
    ++checked;
    const auto fwd = transpose::infer_forward(in, attrs);
    CHECK(transpose::infer_backward(in, ctspmd_test::with_attrs(out, fwd.outputs), attrs) == fwd);
  }
  MESSAGE("transpose round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked == cases);  // every permutation is accepted
}

}  // namespace transpose_test
