// The scan and selection rules (cumsum, argmax, argmin, topk, numel, logsumexp, p_norm and the
// grads cumsum_grad, topk_grad) at run time: by name, error messages, and the forward ->
// backward round trip of the non-grad rules.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace scans_test {

using namespace ctspmd;
using ctspmd_test::check_error;

const process_mesh mesh({2, 4});
const ctspmd_test::on_mesh spec{mesh};
using specs = std::vector<dist_tensor_spec>;

TEST_CASE("scans and selections by name") {
  const specs x{spec({64, 32, 48}, {0, 1, -1})};
  CHECK(runtime::infer_forward("cumsum", x, {{"axis", std::int64_t{-2}}}).outputs[0].dims_mapping() ==
        dims_mapping{0, -1, -1});
  CHECK(runtime::infer_forward("cumsum", x, {{"flatten", true}}).outputs[0].dims_mapping() == dims_mapping{-1});
  CHECK(runtime::infer_forward("cumsum_grad", specs{x[0], spec({64, 32, 48}, {-1, -1, 1})}, {{"axis", std::int64_t{0}}})
            .outputs[0]
            .dims_mapping() == dims_mapping{-1, 1, -1});  // mesh dim 1 stays with x's dim 1 (first wins)
  CHECK(runtime::infer_forward("argmax", x, {{"axis", std::int64_t{1}}, {"keepdims", true}}).outputs[0].dims_mapping() ==
        dims_mapping{0, -1, -1});
  CHECK(runtime::infer_forward("argmin", x, {{"axis", std::int64_t{0}}, {"dtype", std::string("int32")}})
            .outputs[0]
            .dims_mapping() == dims_mapping{1, -1});
  const auto t = runtime::infer_forward("topk", x, {{"k", std::int64_t{3}}, {"axis", std::int64_t{0}}});
  CHECK(t.outputs[1].dims_mapping() == dims_mapping{-1, 1, -1});
  CHECK(runtime::infer_forward("topk_grad", specs{x[0], spec({64, 3, 48}, {-1, -1, 1}), spec({64, 3, 48}, {-1, -1, -1})},
                               {{"k", std::int64_t{3}}, {"axis", std::int64_t{1}}})
            .outputs[0]
            .dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(runtime::infer_forward("numel", x).outputs[0].partial_dims() == mesh_dims{0, 1});
  CHECK(runtime::infer_forward("logsumexp", x, {{"axis", std::vector<std::int64_t>{1}}, {"keepdim", true}})
            .outputs[0]
            .dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(runtime::infer_forward("p_norm", x, {{"axis", std::int64_t{0}}, {"porder", 3.0}}).outputs[0].dims_mapping() ==
        dims_mapping{1, -1});

  check_error([&] { (void)runtime::infer_forward("cumsum", x, {{"axis", std::int64_t{3}}}); },
              error_kind::invalid_argument, "cumsum: axis 3 is outside [-3, 3) for x of rank 3");
  check_error([&] { (void)runtime::infer_forward("argmax", x, {{"axis", std::int64_t{-4}}}); },
              error_kind::invalid_argument, "argmax: axis -4 is outside [-3, 3) for x of rank 3");
  check_error([&] { (void)runtime::infer_forward("topk", x, {{"k", std::int64_t{50}}}); }, error_kind::invalid_argument,
              "topk: k = 50 must be in [1, 48], the size of axis -1");
  check_error([&] { (void)runtime::infer_forward("cumsum_grad", specs{x[0], spec({64, 32}, {-1, -1})}); },
              error_kind::invalid_argument, "cumsum_grad: out_grad has rank 2, but must have rank 3 (x has rank 3)");
  check_error([&] { (void)runtime::infer_backward("numel", x, specs{spec({1}, {-1})}); }, error_kind::invalid_argument,
              "numel: the output has rank 1, but numel's output is 0-D");
  check_error([&] { (void)runtime::infer_forward("logsumexp", x, {{"axis", std::vector<std::int64_t>{3}}}); },
              error_kind::invalid_argument, "logsumexp: reduction axis 3 is out of range for x of rank 3");
}

TEST_CASE("scans and selections forward -> backward round trip") {
  ctspmd_test::rng r(33);
  int checked = 0;
  constexpr int cases = 200;
  for (int n = 0; n < cases; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = r.uniform(1, 3);
    const tensor_shape shape(static_cast<std::size_t>(rank), 8);
    const specs in{{shape, {m, ctspmd_test::random_dims_mapping(r, static_cast<std::size_t>(rank), m.ndim())}}};
    const auto axis = r.uniform(-rank, rank - 1);
    const auto d = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
    tensor_shape dropped, topk_shape = shape;
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (i != d) dropped.push_back(8);
    topk_shape[d] = 2;
    bool ok = ctspmd_test::check_roundtrip<rules::cumsum>(in, std::vector<tensor_shape>{shape}, {axis});
    ok = ctspmd_test::check_roundtrip<rules::argmax>(in, std::vector<tensor_shape>{dropped}, {axis}) && ok;
    ok = ctspmd_test::check_roundtrip<rules::argmin>(in, std::vector<tensor_shape>{shape}, {axis, true}) && ok;
    ok = ctspmd_test::check_roundtrip<rules::topk>(in, std::vector<tensor_shape>{topk_shape, topk_shape}, {2, axis}) && ok;
    ok = ctspmd_test::check_roundtrip<rules::numel>(in, std::vector<tensor_shape>{tensor_shape{}}) && ok;
    ok = ctspmd_test::check_roundtrip<rules::logsumexp>(in, std::vector<tensor_shape>{dropped}, {{axis}}) && ok;
    ok = ctspmd_test::check_roundtrip<rules::p_norm>(in, std::vector<tensor_shape>{dropped}, {2.0, axis}) && ok;
    checked += ok ? 1 : 0;
  }
  MESSAGE("scans round trip: ", checked, " cases of ", cases, " accepted by all seven rules");
  CHECK(checked == cases);
}

TEST_CASE("gather, index_select, one_hot by name") {
  const specs gi{spec({16, 32, 8}, {0, -1, -1}), spec({12}, {1})};
  CHECK(runtime::infer_forward("gather", gi, {{"axis", std::int64_t{-2}}}).outputs[0].dims_mapping() ==
        dims_mapping{0, 1, -1});
  CHECK(runtime::infer_forward("index_select", gi, {{"axis", std::int64_t{1}}}).outputs[0].dims_mapping() ==
        dims_mapping{0, 1, -1});
  const auto gg = runtime::infer_forward("index_select_grad", specs{gi[0], gi[1], spec({16, 12, 8}, {0, 1, -1})},
                                         {{"axis", std::int64_t{1}}});
  CHECK(gg.outputs[0].partial_dims() == mesh_dims{1});
  CHECK(runtime::infer_forward("gather_grad", specs{gi[0], spec({}, {}), spec({16, 8}, {0, 1})}, {{"axis", std::int64_t{1}}})
            .outputs[0]
            .dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(runtime::infer_forward("one_hot", specs{spec({16, 32}, {0, 1})}, {{"num_classes", std::int64_t{10}}})
            .outputs[0]
            .dims_mapping() == dims_mapping{0, 1, -1});
  check_error([&] { (void)runtime::infer_forward("gather", specs{gi[0], spec({12, 2}, {-1, -1})}); },
              error_kind::invalid_argument, "gather: index must be 0-D or 1-D, but has rank 2");
  check_error([&] { (void)runtime::infer_forward("index_select", specs{gi[0], spec({}, {})}); },
              error_kind::invalid_argument, "index_select: index must be 1-D, but has rank 0");
  check_error([&] { (void)runtime::infer_forward("gather", gi, {{"axis", std::int64_t{3}}}); },
              error_kind::invalid_argument, "gather: axis 3 is outside [-3, 3) for x of rank 3");
  check_error([&] { (void)runtime::infer_backward("one_hot", specs{spec({16, 32}, {0, 1})}, specs{spec({16, 32}, {0, 1})}); },
              error_kind::invalid_argument, "one_hot: the output has rank 2, but must have rank 3 (x's + 1)");

  ctspmd_test::rng r(44);
  int checked = 0;
  constexpr int cases = 200;
  for (int n = 0; n < cases; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = r.uniform(1, 3);
    const tensor_shape shape(static_cast<std::size_t>(rank), 8);
    const auto axis = r.uniform(-rank, rank - 1);
    const specs in{{shape, {m, ctspmd_test::random_dims_mapping(r, static_cast<std::size_t>(rank), m.ndim())}},
                   {tensor_shape{8}, {m, ctspmd_test::random_dims_mapping(r, 1, m.ndim())}}};
    tensor_shape oh = shape;
    oh.push_back(4);
    bool ok = ctspmd_test::check_roundtrip<rules::gather>(in, std::vector<tensor_shape>{shape}, {axis});
    ok = ctspmd_test::check_roundtrip<rules::index_select>(in, std::vector<tensor_shape>{shape}, {axis}) && ok;
    ok = ctspmd_test::check_roundtrip<rules::one_hot>(specs{in[0]}, std::vector<tensor_shape>{oh}, {4}) && ok;
    checked += ok ? 1 : 0;
  }
  MESSAGE("gather round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked > cases / 4);
}

}  // namespace scans_test
