// gather_nd, scatter and their grads at run time: by name, error messages, and the forward ->
// backward round trip of gather_nd and scatter.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace indexing_nd_test {

using namespace ctspmd;
using ctspmd_test::check_error;

const process_mesh mesh({2, 4});
const ctspmd_test::on_mesh spec{mesh};
using specs = std::vector<dist_tensor_spec>;

TEST_CASE("gather_nd and gather_nd_grad by name") {
  const specs in{spec({10, 20}, {0, 1}), spec({2, 4, 1}, {-1, 0, -1})};
  const auto f = runtime::infer_forward("gather_nd", in);
  CHECK(f.inputs[0].dims_mapping() == dims_mapping{-1, 1});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{-1, 0, 1});
  const auto p = runtime::infer_forward("gather_nd", in, {}, semantics::phi);
  CHECK(p.outputs[0].dims_mapping() == dims_mapping{-1, 0, 1});
  const auto b = runtime::infer_backward("gather_nd", in, specs{spec({2, 4, 20}, {1, -1, 0})});
  CHECK(b.inputs[0].dims_mapping() == dims_mapping{-1, 0});
  CHECK(b.inputs[1].dims_mapping() == dims_mapping{1, -1, -1});
  const auto g = runtime::infer_forward("gather_nd_grad", specs{in[0], in[1], spec({2, 4, 20}, {-1, 0, 1})});
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{-1, 1});
  CHECK(g.outputs[0].partial_dims() == mesh_dims{0});
  check_error([&] { (void)runtime::infer_forward("gather_nd", specs{spec({10}, {-1}), spec({4}, {0})}); },
              error_kind::invalid_argument,
              "gather_nd: index's last dim (of size 4) must be static and at most x's rank 1");
  check_error([&] { (void)runtime::infer_forward("gather_nd", specs{in[0], spec({}, {})}); },
              error_kind::invalid_argument, "gather_nd: index must have rank >= 1, but has rank 0");
  check_error([&] { (void)runtime::infer_backward("gather_nd", in, specs{spec({2, 4}, {-1, -1})}); },
              error_kind::invalid_argument, "gather_nd: the output has rank 2, but must have rank 3");
  check_error(
      [&] { (void)runtime::infer_forward("gather_nd_grad", specs{in[0], in[1], spec({2, 5, 20}, {-1, -1, -1})}); },
      error_kind::invalid_argument, "gather_nd_grad: out_grad has size 5 at dim 1, but gather_nd's output has 4");
  check_error([&] { (void)runtime::infer_forward("gather_nd_grad", specs{in[0], in[1], spec({2, 4}, {-1, -1})}); },
              error_kind::invalid_argument, "gather_nd_grad: out_grad has rank 2, but gather_nd's output has rank 3");
  check_error(
      [&] {
        (void)runtime::infer_backward("gather_nd_grad", specs{in[0], in[1], spec({2, 4, 20}, {-1, -1, -1})},
                                      specs{in[0]});
      },
      error_kind::unimplemented, "gather_nd_grad: a grad rule has no reverse inference");

  ctspmd_test::rng r(12);
  int checked = 0;
  constexpr int cases = 200;
  for (int n = 0; n < cases; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = r.uniform(1, 3), irank = r.uniform(1, 3), k = r.uniform(0, rank);
    const tensor_shape xs(static_cast<std::size_t>(rank), 12);
    tensor_shape is(static_cast<std::size_t>(irank), 6);
    is.back() = k;
    tensor_shape os;
    for (std::int64_t d = 0; d + 1 < irank; ++d) os.push_back(6);
    for (std::int64_t d = k; d < rank; ++d) os.push_back(12);
    const specs sp{{xs, {m, ctspmd_test::random_dims_mapping(r, xs.size(), m.ndim())}},
                   {is, {m, ctspmd_test::random_dims_mapping(r, is.size(), m.ndim())}}};
    checked += ctspmd_test::check_roundtrip<rules::gather_nd>(sp, std::vector<tensor_shape>{os}) ? 1 : 0;
  }
  MESSAGE("gather_nd round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked == cases);
}

TEST_CASE("scatter and scatter_grad by name") {
  const specs in{spec({64, 32, 48}, {0, 1, -1}), spec({16}, {1}), spec({16, 32, 48}, {-1, -1, 1})};
  const auto f = runtime::infer_forward("scatter", in, {{"overwrite", true}});
  CHECK(f.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
  CHECK(f.inputs[1].dims_mapping() == dims_mapping{-1});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
  CHECK(!f.outputs[0].is_partial());
  const auto b = runtime::infer_backward("scatter", in, specs{spec({64, 32, 48}, {1, 0, -1})}, {{"overwrite", false}});
  CHECK(b.inputs[2].dims_mapping() == dims_mapping{-1, 0, -1});
  const auto g = runtime::infer_forward("scatter_grad", specs{in[1], in[2], spec({64, 32, 48}, {1, 0, -1})},
                                        {{"overwrite", true}}, semantics::phi);
  CHECK(g.outputs.size() == 2);
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
  CHECK(g.outputs[1].dims_mapping() == dims_mapping{-1, 0, -1});
  check_error([&] { (void)runtime::infer_forward("scatter", specs{in[0], spec({16, 1}, {-1, -1}), in[2]}); },
              error_kind::invalid_argument, "scatter: index must be 1-D, but has rank 2");
  check_error([&] { (void)runtime::infer_forward("scatter", specs{in[0], in[1], spec({8, 32, 48}, {-1, -1, -1})}); },
              error_kind::invalid_argument, "scatter: updates has 8 rows, but index has 16 entries");
  check_error([&] { (void)runtime::infer_forward("scatter", specs{in[0], in[1], spec({16, 32, 40}, {-1, -1, -1})}); },
              error_kind::invalid_argument, "scatter: updates has size 40 at dim 2, but x has 48");
  check_error([&] { (void)runtime::infer_forward("scatter", specs{in[0], in[1], spec({16, 32}, {-1, -1})}); },
              error_kind::invalid_argument, "scatter: updates has rank 2, but x has rank 3");
  check_error([&] { (void)runtime::infer_backward("scatter", in, specs{spec({64, 32}, {-1, -1})}); },
              error_kind::invalid_argument, "scatter: the output has rank 2, but must have rank 3 (x's)");
  check_error(
      [&] { (void)runtime::infer_forward("scatter_grad", specs{in[1], in[2], spec({64, 30, 48}, {-1, -1, -1})}); },
      error_kind::invalid_argument, "scatter_grad: updates has size 32 at dim 1, but out_grad has 30");

  ctspmd_test::rng r(13);
  int checked = 0;
  constexpr int cases = 200;
  for (int n = 0; n < cases; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = r.uniform(1, 3);
    tensor_shape xs(static_cast<std::size_t>(rank), 12), us = xs;
    xs[0] = 24;
    const specs sp{{xs, {m, ctspmd_test::random_dims_mapping(r, xs.size(), m.ndim())}},
                   {tensor_shape{12}, {m, ctspmd_test::random_dims_mapping(r, 1, m.ndim())}},
                   {us, {m, ctspmd_test::random_dims_mapping(r, us.size(), m.ndim())}}};
    checked += ctspmd_test::check_roundtrip<rules::scatter>(sp, std::vector<tensor_shape>{xs}, {r.coin()}) ? 1 : 0;
  }
  MESSAGE("scatter round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked == cases);
}

}  // namespace indexing_nd_test
