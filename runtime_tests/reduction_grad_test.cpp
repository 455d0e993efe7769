// The reduction grads (sum_grad, mean_grad: x, out_grad; max_grad, min_grad, amax_grad,
// amin_grad, prod_grad: x, out, out_grad) at run time: by name, attributes by name, error kinds
// and messages. Grad rules have no reverse inference, so no round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"

#include <string>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace reduction_grad_test {

using namespace ctspmd;
using ctspmd_test::check_error;

const process_mesh mesh({2, 4});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::partial_on_mesh partial_spec{mesh};
using specs = std::vector<dist_tensor_spec>;
using axes = std::vector<std::int64_t>;

TEST_CASE("reduction grads by name") {
  const auto x = spec({8, 16, 32}, {0, -1, 1});
  for (const char* op : {"sum_grad", "mean_grad"}) {
    CAPTURE(op);
    const auto r = runtime::infer_forward(op, specs{x, spec({8, 32}, {0, 1})}, {{"axis", axes{1}}});
    CHECK(r.inputs.size() == 2);
    CHECK(r.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
    // keepdim (and fluid's spelling keep_dim), reduce_all
    CHECK(runtime::infer_forward(op, specs{x, spec({8, 1, 32}, {0, -1, 1})}, {{"axis", axes{1}}, {"keepdim", true}})
              .outputs[0]
              .dims_mapping() == dims_mapping{0, -1, 1});
    CHECK(runtime::infer_forward(op, specs{x, spec({8, 1, 32}, {0, -1, 1})}, {{"axis", axes{-2}}, {"keep_dim", true}})
              .outputs[0]
              .dims_mapping() == dims_mapping{0, -1, 1});
    CHECK(runtime::infer_forward(op, specs{x, spec({}, {})}, {{"axis", axes{1}}, {"reduce_all", true}})
              .outputs[0]
              .dims_mapping() == dims_mapping{-1, -1, -1});
  }
  for (const char* op : {"max_grad", "min_grad", "amax_grad", "amin_grad", "prod_grad"}) {
    CAPTURE(op);
    // Paddle's ReduceMaxRule case: out (partial max) comes back whole, x_grad replicated
    const process_mesh m2({2});
    tensor_dist_attr o(m2, {-1, -1});
    o.set_partial_status({0}, reduce_type::max);
    const dist_tensor_spec px({4, 6, 8}, {m2, {-1, 0, -1}}), po({4, 8}, o);
    const auto p = runtime::infer_forward(op, specs{px, po, po}, {{"axis", axes{1}}});
    CHECK(p.inputs.size() == 3);
    CHECK(to_string(p.inputs[1]) == "dims_mapping [-1, -1]");
    CHECK(to_string(p.outputs[0]) == "dims_mapping [-1, -1, -1]");
    const auto r = runtime::infer_forward(op, specs{x, spec({8, 32}, {-1, 1}), spec({8, 32}, {0, -1})}, {{"axis", axes{1}}});
    CHECK(r.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
    CHECK(r.inputs[1].dims_mapping() == dims_mapping{0, 1});
  }
  // partial inputs come back whole, under both semantics
  for (const auto s : {semantics::fluid, semantics::phi}) {
    const auto r = runtime::infer_forward(
        "mean_grad", specs{partial_spec({8, 16}, {0, -1}, 1, reduce_type::sum), partial_spec({8}, {0}, 1, reduce_type::avg)},
        {{"axis", axes{1}}}, s);
    CHECK(to_string(r.inputs[0]) == "dims_mapping [0, -1]");
    CHECK(to_string(r.inputs[1]) == "dims_mapping [0]");
    CHECK(to_string(r.outputs[0]) == "dims_mapping [0, -1]");
  }
  // disagreeing layouts: a co-shard under phi
  const auto phi = runtime::infer_forward("sum_grad", specs{spec({8, 16}, {0, -1}), spec({8}, {1})}, {{"axis", axes{1}}},
                                          semantics::phi);
  CHECK(phi.outputs[0].multi_dims_mapping() == multi_dims_mapping{{1, 0}, {}});
}

TEST_CASE("reduction grads: errors") {
  const auto x = spec({8, 16}, {0, -1});
  check_error([&] { (void)runtime::infer_forward("sum_grad", specs{x, spec({8, 16}, {0, -1})}, {{"axis", axes{1}}}); },
              error_kind::invalid_argument,
              "sum_grad: out_grad has rank 2, but must have rank 1 (x has rank 2 and 1 reduced dims)");
  check_error([&] { (void)runtime::infer_forward("mean_grad", specs{x, spec({4}, {0})}, {{"axis", axes{1}}}); },
              error_kind::invalid_argument, "mean_grad: out_grad dim 0 has size 4, but reducing x gives 8");
  check_error(
      [&] {
        (void)runtime::infer_forward("max_grad", specs{x, spec({8, 2}, {0, -1}), spec({8}, {0})}, {{"axis", axes{1}}});
      },
      error_kind::invalid_argument,
      "max_grad: out has rank 2, but must have rank 1 (x has rank 2 and 1 reduced dims)");
  check_error(
      [&] {
        (void)runtime::infer_forward("prod_grad", specs{x, spec({8, 2}, {0, -1}), spec({8, 16}, {0, -1})},
                                     {{"axis", axes{1}}, {"keepdim", true}});
      },
      error_kind::invalid_argument, "prod_grad: out dim 1 has size 2, but reducing x gives 1");
  check_error([&] { (void)runtime::infer_forward("amax_grad", specs{x, spec({8}, {0})}, {{"axis", axes{1}}}); },
              error_kind::invalid_argument, "amax_grad: expects 3 inputs, got 2");
  check_error([&] { (void)runtime::infer_forward("sum_grad", specs{x, spec({8}, {0}), spec({8}, {0})}); },
              error_kind::invalid_argument, "sum_grad: expects 2 inputs, got 3");
  check_error([&] { (void)runtime::infer_forward("sum_grad", specs{x, spec({8}, {0})}, {{"axis", axes{2}}}); },
              error_kind::invalid_argument, "sum_grad: reduction axis 2 is out of range for x of rank 2");
  check_error([&] { (void)runtime::infer_forward("sum_grad", specs{x, spec({8}, {1})}, {{"axis", axes{1}}}); },
              error_kind::unimplemented, "sum_grad: tensor axis 'a' is sharded by two different mesh dims, 1 and 0");
  check_error([&] { (void)runtime::infer_forward("amin_grad", specs{x, spec({8}, {0}), spec({8}, {0})}, {{"dim", axes{1}}}); },
              error_kind::invalid_argument, "axis");
  check_error(
      [&] {
        (void)runtime::infer_backward("min_grad", specs{x, spec({8}, {0}), spec({8}, {0})}, specs{x}, {{"axis", axes{1}}});
      },
      error_kind::unimplemented, "min_grad: a grad rule has no reverse inference");
}

TEST_CASE("logsumexp_grad and p_norm_grad by name") {
  const auto x = spec({8, 16, 32}, {0, 1, -1});
  const auto l = runtime::infer_forward("logsumexp_grad", specs{x, spec({8, 32}, {0, -1}), spec({8, 32}, {-1, 1})},
                                        {{"axis", axes{1}}, {"keepdim", false}, {"reduce_all", false}});
  CHECK(to_string(l.outputs[0]) == "dims_mapping [0, -1, 1]");
  CHECK(to_string(l.inputs[0]) == "dims_mapping [0, -1, 1]");
  const auto p = runtime::infer_forward("p_norm_grad", specs{x, spec({8, 16}, {0, 1}), spec({8, 16}, {0, 1})},
                                        {{"porder", 3.0}, {"axis", std::int64_t{-1}}, {"epsilon", 1e-6}});
  CHECK(to_string(p.outputs[0]) == "dims_mapping [0, 1, -1]");
  CHECK(runtime::infer_forward("p_norm_grad", specs{x, spec({}, {}), spec({}, {})}, {{"asvector", true}})
            .outputs[0]
            .dims_mapping() == dims_mapping{-1, -1, -1});
  check_error(
      [&] { (void)runtime::infer_forward("p_norm_grad", specs{x, spec({8, 16}, {0, 1}), spec({8}, {0})}); },
      error_kind::invalid_argument,
      "p_norm_grad: out_grad has rank 1, but must have rank 2 (x has rank 3 and 1 reduced dims)");
  check_error(
      [&] { (void)runtime::infer_forward("logsumexp_grad", specs{x, spec({8, 32}, {0, -1}), spec({8, 32}, {0, -1})}, {{"axis", axes{3}}}); },
      error_kind::invalid_argument, "logsumexp_grad: reduction axis 3 is out of range for x of rank 3");
  check_error([&] { (void)runtime::infer_forward("logsumexp_grad", specs{x, x}); }, error_kind::invalid_argument,
              "logsumexp_grad: expects 3 inputs, got 2");
}

}  // namespace reduction_grad_test
