// The c_embedding, c_embedding_grad and embedding_grad rules at run time: by-name calls, errors
// as thrown spmd_errors, and c_embedding's forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace c_embedding_test {

using namespace ctspmd;
using ctspmd_test::check_error;

const process_mesh mesh({2, 4});
const ctspmd_test::on_mesh spec{mesh};

TEST_CASE("c_embedding: by name, vocabulary parallel") {
  const std::vector<dist_tensor_spec> in{spec({50304, 768}, {1, -1}), spec({32, 512}, {0, -1})};
  const auto f = runtime::infer_forward("c_embedding", in, {{"start_index", std::int64_t{0}}, {"vocab_size", std::int64_t{50304}}});
  CHECK(f.inputs[0].dims_mapping() == dims_mapping{1, -1});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(f.outputs[0].partial_dims() == mesh_dims{1});
  const std::vector<dist_tensor_spec> out{spec({32, 512, 768}, {0, -1, 1})};
  const auto b = runtime::infer_backward("c_embedding", in, out, {});
  CHECK(b.inputs[0].dims_mapping() == dims_mapping{-1, 1});
  CHECK(b.inputs[1].dims_mapping() == dims_mapping{0, -1});
  const std::vector<dist_tensor_spec> gin{in[0], in[1], spec({32, 512, 768}, {0, -1, -1})};
  const auto g = runtime::infer_forward("c_embedding_grad", gin, {{"start_index", std::int64_t{0}}}, semantics::phi);
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{1, -1});
  CHECK(g.outputs[0].partial_dims() == mesh_dims{0});
}

TEST_CASE("embedding_grad: by name") {
  const std::vector<dist_tensor_spec> in{spec({32, 512}, {0, -1}), spec({50304, 768}, {1, -1}), spec({32, 512, 768}, {-1, 1, -1})};
  const auto g = runtime::infer_forward("embedding_grad", in, {{"padding_idx", std::int64_t{-1}}, {"sparse", false}});
  CHECK(g.inputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(g.inputs[1].dims_mapping() == dims_mapping{-1, -1});
  CHECK(g.inputs[2].dims_mapping() == dims_mapping{0, 1, -1});
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK(g.outputs[0].partial_dims() == mesh_dims{0, 1});
}

TEST_CASE("c_embedding and embedding_grad: errors") {
  const auto w = spec({64, 16}, {-1, -1}), x = spec({8, 4}, {-1, -1}), og = spec({8, 4, 16}, {-1, -1, -1});
  check_error([&] { (void)rules::c_embedding::infer_forward({spec({64}, {-1}), x}); }, error_kind::invalid_argument,
              "c_embedding: the weight (embedding table) must be 2-D, but has rank 1");
  check_error([&] { (void)rules::embedding_grad::infer_forward({x, w, og}, {.padding_idx = -1, .sparse = true}); },
              error_kind::invalid_argument, "embedding_grad: a sparse weight gradient (sparse = 1) is not supported");
  check_error([&] { (void)rules::embedding_grad::infer_forward({x, w, spec({8, 16}, {-1, -1})}); }, error_kind::invalid_argument,
              "out_grad must have rank 3 (x's rank + 1), but has rank 2");
  check_error([&] { (void)rules::c_embedding_grad::infer_forward({w, x, spec({8, 5, 16}, {-1, -1, -1})}); },
              error_kind::invalid_argument, "c_embedding_grad: out_grad's dim 1 has size 5, but x's has size 4");
  check_error([&] { (void)rules::embedding_grad::infer_forward({x, w, spec({8, 4, 15}, {-1, -1, -1})}); },
              error_kind::invalid_argument, "out_grad's last dim has size 15, but the weight has 16 columns");
  check_error([&] { (void)rules::c_embedding_grad::infer_backward({w, x, og}, {w}); }, error_kind::unimplemented,
              "no reverse inference");
}

TEST_CASE("c_embedding: round trip") {
  ctspmd_test::rng r(0xce6bULL);
  int checked = 0;
  for (int i = 0; i < 200; ++i) {
    const auto m = ctspmd_test::random_mesh(r);
    const std::size_t rx = static_cast<std::size_t>(r.uniform(1, 3));
    tensor_shape xs;
    for (std::size_t d = 0; d < rx; ++d) xs.push_back(12);
    const std::vector<dist_tensor_spec> in{{{48, 24}, {m, ctspmd_test::random_dims_mapping(r, 2, m.ndim())}},
                                           {xs, {m, ctspmd_test::random_dims_mapping(r, rx, m.ndim())}}};
    tensor_shape os = xs;
    os.push_back(24);
    const std::vector<tensor_shape> outs{os};
    checked += ctspmd_test::check_roundtrip<rules::c_embedding>(in, outs) ? 1 : 0;
  }
  CHECK(checked > 50);
}

}  // namespace c_embedding_test
