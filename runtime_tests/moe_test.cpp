// The MoE rules (moe_gate_dispatch, moe_combine and their grads) at run time: by name, error
// messages, and the forward -> backward round trip of the non-grad rules.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace moe_test {

using namespace ctspmd;
using ctspmd_test::check_error;

const process_mesh mesh({2, 4});
const ctspmd_test::on_mesh spec{mesh};
using specs = std::vector<dist_tensor_spec>;

TEST_CASE("moe_gate_dispatch and its grad") {
  const auto f = runtime::infer_forward("moe_gate_dispatch", specs{spec({16, 32}, {0, 1}), spec({16, 8}, {0, -1})},
                                        {{"k", std::int64_t{2}}, {"capacity", std::int64_t{4}}, {"use_pad", true}});
  REQUIRE(f.outputs.size() == 5);
  // each device dispatches its own tokens into its own slots: y's capacity dim follows them
  CHECK(f.inputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{-1, 0, 1});
  CHECK(f.outputs[2].dims_mapping() == dims_mapping{-1, 0});
  CHECK(f.outputs[3].partial_dims() == mesh_dims{0});
  const auto g = runtime::infer_forward("moe_gate_dispatch_grad",
                                        specs{spec({16, 2}, {0, 1}), spec({2, 16}, {-1, 0}), spec({16, 2}, {-1, -1}),
                                              spec({8, 4, 32}, {-1, 0, 1}), spec({16, 2}, {-1, -1})},
                                        {}, semantics::phi);
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(g.outputs[1].dims_mapping() == dims_mapping{0, -1});
  check_error(
      [] {
        (void)runtime::infer_forward("moe_gate_dispatch", specs{spec({16, 32, 2}, {-1, -1, -1}), spec({16, 8}, {-1, -1})});
      },
      error_kind::invalid_argument, "moe_gate_dispatch: input 0 has rank 3, but must have rank 2");
  check_error([] { (void)runtime::infer_forward("moe_gate_dispatch", specs{spec({16, 32}, {-1, -1}), spec({12, 8}, {-1, -1})}); },
              error_kind::invalid_argument, "input 0 has size 16 at dim 0, which does not match input 1");
  check_error(
      [] {
        (void)runtime::infer_forward("moe_gate_dispatch", specs{spec({16, 32}, {-1, -1}), spec({16, 8}, {-1, -1})},
                                     {{"k", std::int64_t{9}}});
      },
      error_kind::invalid_argument, "k = 9 must be in [1, 8] (gate_logits has 8 experts)");
  check_error(
      [] {
        (void)runtime::infer_forward("moe_gate_dispatch", specs{spec({16, 32}, {1, -1}), spec({16, 8}, {-1, -1})},
                                     {{"capacity", std::int64_t{6}}});
      },
      error_kind::invalid_argument,
      "moe_gate_dispatch: capacity 6 does not divide into the 4 blocks the tokens are split into (each block has "
      "capacity / blocks slots per expert)");
  check_error(
      [] {
        (void)runtime::infer_backward("moe_gate_dispatch_grad",
                                      specs{spec({16, 2}, {0, 1}), spec({2, 16}, {-1, 0}), spec({16, 2}, {-1, -1}),
                                            spec({8, 4, 32}, {-1, 0, 1}), spec({16, 2}, {-1, -1})},
                                      specs{spec({16, 32}, {-1, -1}), spec({16, 8}, {-1, -1})});
      },
      error_kind::unimplemented, "a grad rule has no reverse inference");
}

TEST_CASE("moe_combine and its grad") {
  const auto f = runtime::infer_forward("moe_combine", specs{spec({32, 16}, {-1, 1}), spec({16, 2}, {-1, 0}), spec({16, 2}, {-1, -1})});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{-1, 1});
  CHECK(f.outputs[0].partial_dims() == mesh_dims{0});
  const auto g = runtime::infer_forward("moe_combine_grad", specs{spec({32, 16}, {-1, -1}), spec({16, 2}, {0, -1}),
                                                                  spec({16, 2}, {-1, -1}), spec({16, 16}, {-1, 1})});
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(!g.outputs[0].is_partial());
  CHECK(g.outputs[1].partial_dims() == mesh_dims{1});
  const auto gk = runtime::infer_forward("moe_combine_grad", specs{spec({32, 16}, {-1, -1}), spec({16, 2}, {-1, 0}),
                                                                   spec({16, 2}, {-1, -1}), spec({16, 16}, {-1, 1})});
  CHECK(gk.outputs[0].partial_dims() == mesh_dims{0});
  check_error([] { (void)runtime::infer_forward("moe_combine", specs{spec({30, 16}, {-1, -1}), spec({16, 2}, {1, -1}), spec({16, 2}, {-1, -1})}); },
              error_kind::invalid_argument,
              "moe_combine: input 0 has size 30 at dim 0, which does not divide into the 4 blocks the tokens are split "
              "into (each block has its own part)");
  check_error([] { (void)runtime::infer_forward("moe_combine", specs{spec({32, 16}, {-1, -1}), spec({16, 2}, {-1, -1}), spec({16, 3}, {-1, -1})}); },
              error_kind::invalid_argument, "moe_combine: input 2 has size 3 at dim 1, which does not match input 1");
  check_error([] { (void)runtime::infer_forward("moe_combine", specs{spec({32}, {-1}), spec({16, 2}, {-1, -1}), spec({16, 2}, {-1, -1})}); },
              error_kind::invalid_argument, "input 0 has rank 1, but must have rank 2");
}

TEST_CASE("moe forward -> backward round trip") {
  ctspmd_test::rng r(21);
  int dispatch = 0, combine = 0;
  constexpr int cases = 200;
  for (int n = 0; n < cases; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    auto sp = [&](tensor_shape s) { return dist_tensor_spec(s, {m, ctspmd_test::random_dims_mapping(r, s.size(), m.ndim())}); };
    // 48 tokens, 24 slots and 96 rows divide into every number of token blocks these meshes make
    const specs din{sp({48, 8}), sp({48, 8})};
    const std::vector<tensor_shape> dout{{8, 24, 8}, {48, 2}, {2, 48}, {8}, {48, 2}};
    dispatch += ctspmd_test::check_roundtrip<rules::moe_gate_dispatch>(din, dout, {2, 24, true}) ? 1 : 0;
    const specs cin{sp({96, 8}), sp({48, 2}), sp({48, 2})};
    const std::vector<tensor_shape> cout{{48, 8}};
    combine += ctspmd_test::check_roundtrip<rules::moe_combine>(cin, cout) ? 1 : 0;
  }
  MESSAGE("moe round trip: moe_gate_dispatch ", dispatch, ", moe_combine ", combine, " accepted cases of ", cases);
  CHECK(dispatch == cases);
  CHECK(combine > cases / 4);
}

}  // namespace moe_test
