// The optimizer rules (adam, adamw, sgd) and default_data_parallel at run time: the static
// cases again, by name, every error as a thrown spmd_error, and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <span>
#include <string>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace optimizer_test {

using namespace ctspmd;
using ctspmd_test::check_error;

const process_mesh mesh({2, 4});
const ctspmd_test::on_mesh spec{mesh};
const dist_tensor_spec absent = spec({}, {});
const dist_tensor_spec scalar = spec({1}, {-1});
std::vector<dist_tensor_spec> adam_in(dims_mapping p, dims_mapping g, dims_mapping m1, dims_mapping m2) {
  return {spec({8, 16}, p), spec({8, 16}, g), scalar, spec({8, 16}, m1), spec({8, 16}, m2), absent, scalar, scalar};
}

TEST_CASE("adam / adamw forward and backward") {
  const auto agree = runtime::infer_forward("adam", adam_in({0, 1}, {0, 1}, {0, 1}, {0, 1}));
  REQUIRE(agree.inputs.size() == 8);
  REQUIRE(agree.outputs.size() == 7);
  CHECK(agree.outputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(agree.outputs[6].rank() == 0);  // no master_param
  const auto dis = runtime::infer_forward("adamw", adam_in({-1, 1}, {-1, 1}, {-1, -1}, {-1, 0}),
                                          {{"coeff", 0.1}, {"with_decay", true}, {"lr_ratio", 0.5}});
  CHECK(dis.inputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK(dis.inputs[4].dims_mapping() == dims_mapping{-1, -1});
  CHECK(rules::adam::infer_forward(adam_in({0, -1}, {-1, -1}, {-1, -1}, {-1, -1})) ==
        runtime::infer_forward("adam", adam_in({0, -1}, {-1, -1}, {-1, -1}, {-1, -1}), {{"beta1", 0.8}, {"amsgrad", true}}));
  const auto phi = runtime::infer_forward("adam", adam_in({0, -1}, {1, -1}, {-1, -1}, {-1, -1}), {}, semantics::phi);
  CHECK(phi.inputs[3].multi_dims_mapping() == multi_dims_mapping{{1, 0}, {}});

  auto in = adam_in({-1, -1}, {-1, -1}, {-1, -1}, {-1, -1});
  const std::vector<dist_tensor_spec> out{spec({8, 16}, {0, -1}), spec({8, 16}, {-1, 1}), spec({8, 16}, {-1, -1}),
                                          absent, scalar, scalar, absent};
  const auto back = rules::adam::infer_backward(in, out);
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(back.outputs[2].dims_mapping() == dims_mapping{0, 1});
  CHECK(back.outputs[6].rank() == 0);

  check_error([] { (void)runtime::infer_forward("adam", adam_in({0, 1}, {0, 1}, {0, 1}, {0, 1}), {{"beta3", 0.1}}); },
              error_kind::invalid_argument, "beta3");
  check_error(
      [] {
        auto bad = adam_in({-1, -1}, {-1, -1}, {-1, -1}, {-1, -1});
        bad[1] = spec({8}, {-1});
        (void)rules::adam::infer_forward(bad);
      },
      error_kind::invalid_argument, "adam: input 1 has rank 1, but param (input 0) has rank 2");
  check_error(
      [] {
        auto bad = adam_in({-1, -1}, {-1, -1}, {-1, -1}, {-1, -1});
        bad[4] = spec({8, 12}, {-1, -1});
        (void)rules::adamw::infer_forward(bad);
      },
      error_kind::invalid_argument, "adamw: input 4 has size 12 at dim 1, but param has size 16");
  check_error(
      [] {
        auto bad = adam_in({-1, -1}, {-1, -1}, {-1, -1}, {-1, -1});
        bad.push_back(absent);
        bad.push_back(spec({2}, {1}));
        (void)rules::adam::infer_forward(bad);
      },
      error_kind::invalid_argument, "skip_update (input 9) must be replicated, but its dim 0 is sharded by mesh dim 1");
  check_error([] { (void)rules::adam::infer_forward(adam_in({0, -1}, {1, -1}, {-1, -1}, {-1, -1})); },
              error_kind::unimplemented, "");
  check_error(
      [&] {
        auto o = out;
        o[6] = spec({8, 16}, {-1, -1});
        (void)rules::adam::infer_backward(in, o);
      },
      error_kind::invalid_argument, "output 6 (master_param_out) has rank 2, but master_param (input 8) is left out");
  check_error([] { (void)runtime::infer_forward("adam", std::vector<dist_tensor_spec>{scalar, scalar}); },
              error_kind::invalid_argument, "expects 8 to 10 inputs, got 2");
}

TEST_CASE("sgd forward and backward") {
  const std::vector<dist_tensor_spec> in{spec({8, 16}, {0, -1}), scalar, spec({8, 16}, {-1, 1}), spec({8, 16}, {-1, -1})};
  const auto f = runtime::infer_forward("sgd", in, {{"multi_precision", true}});
  CHECK(f.inputs[3].dims_mapping() == dims_mapping{0, 1});
  CHECK(f.outputs[1].dims_mapping() == dims_mapping{0, 1});
  const auto b = rules::sgd::infer_backward(in, std::vector<dist_tensor_spec>{spec({8, 16}, {1, -1}), spec({8, 16}, {-1, -1})});
  CHECK(b.inputs[0].dims_mapping() == dims_mapping{1, -1});
  check_error([] { (void)rules::sgd::infer_forward({spec({8, 16}, {0, -1}), scalar, spec({8, 4}, {-1, -1})}); },
              error_kind::invalid_argument, "sgd: input 2 has size 4 at dim 1, but param has size 16");
}

TEST_CASE("default_data_parallel forward and backward") {
  const std::vector<dist_tensor_spec> in{spec({8, 16, 4}, {-1, 0, 1}), spec({8, 6}, {1, -1})};
  const auto f = runtime::infer_forward("default_data_parallel", in);
  CHECK(f.inputs[0].dims_mapping() == dims_mapping{1, -1, -1});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{1, -1, -1});
  const auto b = runtime::infer_backward("default_data_parallel", in, std::vector<dist_tensor_spec>{spec({8, 2}, {0, 1})});
  CHECK(b.inputs[1].dims_mapping() == dims_mapping{0, -1});
  check_error(
      [] {
        (void)runtime::infer_forward("default_data_parallel",
                                     std::vector<dist_tensor_spec>{spec({8, 2}, {0, -1}), spec({6, 2}, {-1, -1})});
      },
      error_kind::invalid_argument, "default_data_parallel: input 1 has batch size (dim 0) 6, but input 0 has 8");
}

TEST_CASE("optimizer and default_data_parallel forward -> backward round trip") {
  ctspmd_test::rng r(12);
  int adam_checked = 0, sgd_checked = 0, dp_checked = 0;
  constexpr int cases = 300;
  for (int n = 0; n < cases; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = static_cast<std::size_t>(r.uniform(1, 3));
    const tensor_shape shape(rank, 8);
    auto full = [&] { return dist_tensor_spec(shape, {m, ctspmd_test::random_dims_mapping(r, rank, m.ndim())}); };
    const dist_tensor_spec one({1}, {m, dims_mapping{-1}});
    const dist_tensor_spec none({}, {m, dims_mapping{}});
    const std::vector<dist_tensor_spec> ain{full(), full(), one, full(), full(), r.coin() ? full() : none, one, one,
                                            full()};
    const std::vector<tensor_shape> aout{shape, shape, shape, ain[5].shape(), {1}, {1}, shape};
    adam_checked += ctspmd_test::check_roundtrip<rules::adam>(ain, aout) ? 1 : 0;
    const std::vector<dist_tensor_spec> sin{full(), one, full()};
    const std::vector<tensor_shape> sout{shape, {}};
    sgd_checked += ctspmd_test::check_roundtrip<rules::sgd>(sin, sout) ? 1 : 0;
    const std::vector<dist_tensor_spec> din{full(), full()};
    const std::vector<tensor_shape> dout{shape};
    dp_checked += ctspmd_test::check_roundtrip<rules::default_data_parallel>(din, dout) ? 1 : 0;
  }
  MESSAGE("optimizer round trip: adam ", adam_checked, ", sgd ", sgd_checked, ", default_data_parallel ", dp_checked,
          " accepted cases of ", cases, " each");
  CHECK(adam_checked > cases / 4);
  CHECK(sgd_checked > cases / 4);
  CHECK(dp_checked > cases / 4);
}

}  // namespace optimizer_test
