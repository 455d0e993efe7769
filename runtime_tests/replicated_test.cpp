// The replicated rule at run time: the static cases again, every error as a thrown
// spmd_error, and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/rules/replicated.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <span>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace replicated_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::replicated;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};
dist_tensor_spec partial_spec(tensor_shape shape, dims_mapping dm, std::int64_t partial_dim) {
  tensor_dist_attr a(mesh, dm);
  a.set_partial_status({partial_dim});
  a.set_batch_dim(1);
  return {shape, a};
}

TEST_CASE("replicated forward") {
  const auto fwd = replicated::infer_forward({spec({4, 8}, {0, 1}), partial_spec({3}, {-1}, 0), spec({}, {})});
  REQUIRE(fwd.inputs.size() == 3);
  REQUIRE(fwd.outputs.size() == 1);
  CHECK(fwd.inputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK(fwd.inputs[1].dims_mapping() == dims_mapping{-1});
  CHECK_FALSE(fwd.inputs[1].is_partial());
  CHECK(fwd.inputs[1].batch_dim() == 1);
  CHECK(fwd.inputs[2].dims_mapping() == dims_mapping{});
  CHECK(fwd.outputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK_FALSE(fwd.outputs[0].is_partial());
  CHECK(replicated::infer_forward({spec({5}, {1}), spec({2, 3, 4}, {0, -1, 1})}).outputs[0].dims_mapping() ==
        dims_mapping{-1});

  check_error([] { (void)replicated::infer_forward(std::span<const dist_tensor_spec>{}); },
              error_kind::invalid_argument, "replicated: expects at least 1 input, got 0");
  check_error([] { (void)replicated::infer_forward({spec({4}, {-1}), dist_tensor_spec({4}, process_mesh({6}))}); },
              error_kind::invalid_argument, "input 1 is on another process mesh");
}

TEST_CASE("replicated backward") {
  const auto back = replicated::infer_backward({spec({4, 8}, {0, -1}), spec({8}, {1})},
                                               {partial_spec({4, 8}, {-1, 1}, 0), spec({2, 4}, {1, 0})});
  REQUIRE(back.inputs.size() == 2);
  REQUIRE(back.outputs.size() == 2);
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK(back.inputs[1].dims_mapping() == dims_mapping{-1});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK_FALSE(back.outputs[0].is_partial());
  CHECK(back.outputs[1].dims_mapping() == dims_mapping{-1, -1});

  const auto back_none = replicated::infer_backward({spec({4}, {0})}, {});
  CHECK(back_none.outputs.size() == 0);
  CHECK(back_none.inputs[0].dims_mapping() == dims_mapping{-1});

  check_error([] { (void)replicated::infer_backward({spec({4}, {-1})}, {dist_tensor_spec({4}, process_mesh({6}))}); },
              error_kind::invalid_argument, "output 0 is on another process mesh");
}

TEST_CASE("replicated forward -> backward round trip") {
  ctspmd_test::rng r(5);
  int checked = 0;
  constexpr int cases = 300;
  for (int n = 0; n < cases; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    std::vector<dist_tensor_spec> in;
    const auto count = r.uniform(1, 3);
    for (std::int64_t i = 0; i < count; ++i) {
      const auto rank = static_cast<std::size_t>(r.uniform(1, 4));
      in.emplace_back(tensor_shape(rank, 6), tensor_dist_attr(m, ctspmd_test::random_dims_mapping(r, rank, m.ndim())));
    }
    const std::vector<tensor_shape> out{in[0].shape()};
    if (!ctspmd_test::check_roundtrip<replicated>(in, out)) continue;
    ++checked;
    const auto fwd = replicated::infer_forward(in);
    CHECK(replicated::infer_backward(in, ctspmd_test::with_attrs(out, fwd.outputs)) == fwd);
  }
  MESSAGE("replicated round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked == cases);  // forward accepts every non-empty input list
}

}  // namespace replicated_test
