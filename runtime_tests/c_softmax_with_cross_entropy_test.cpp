// The c_softmax_with_cross_entropy rule at run time: by name, errors, and the round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace c_softmax_with_cross_entropy_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::c_softmax_with_cross_entropy;

const process_mesh mesh({2, 4});
const ctspmd_test::on_mesh spec{mesh};

TEST_CASE("c_softmax_with_cross_entropy: by name") {
  const std::vector<dist_tensor_spec> in{spec({8, 512, 50304}, {0, -1, 1}), spec({8, 512, 1}, {-1, -1, -1})};
  const auto f = runtime::infer_forward("c_softmax_with_cross_entropy", in,
                                        {{"ignore_index", std::int64_t{-100}}, {"rank", std::int64_t{0}}, {"nranks", std::int64_t{4}}});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(f.outputs[1].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(!f.outputs[1].is_partial());
  const std::vector<dist_tensor_spec> out{spec({8, 512, 50304}, {-1, 0, 1}), spec({8, 512, 1}, {-1, -1, -1})};
  const auto b = runtime::infer_backward("c_softmax_with_cross_entropy", in, out, {}, semantics::phi);
  CHECK(b.inputs[0].dims_mapping() == dims_mapping{-1, 0, 1});
  CHECK(b.inputs[1].dims_mapping() == dims_mapping{-1, 0, -1});
}

TEST_CASE("c_softmax_with_cross_entropy: errors") {
  const auto x = spec({8, 64}, {-1, -1});
  check_error([&] { (void)c_softmax_with_cross_entropy::infer_forward({x, spec({8}, {-1})}); }, error_kind::invalid_argument,
              "c_softmax_with_cross_entropy: the label must have logits' rank 2, but has rank 1");
  check_error([&] { (void)c_softmax_with_cross_entropy::infer_forward({x, spec({8, 2}, {-1, -1})}); }, error_kind::invalid_argument,
              "its last dim must have size 1, but has 2");
  check_error([&] { (void)c_softmax_with_cross_entropy::infer_forward({x, spec({4, 1}, {-1, -1})}); }, error_kind::invalid_argument,
              "the label's dim 0 has size 4, but logits' has size 8");
}

TEST_CASE("c_softmax_with_cross_entropy: round trip") {
  ctspmd_test::rng r(0xc5ceULL);
  int checked = 0;
  for (int i = 0; i < 200; ++i) {
    const auto m = ctspmd_test::random_mesh(r);
    const std::size_t rank = static_cast<std::size_t>(r.uniform(1, 3));
    tensor_shape xs(rank, 12), ls(rank, 12);
    ls[rank - 1] = 1;
    const std::vector<dist_tensor_spec> in{{xs, {m, ctspmd_test::random_dims_mapping(r, rank, m.ndim())}},
                                           {ls, {m, ctspmd_test::random_dims_mapping(r, rank, m.ndim())}}};
    const std::vector<tensor_shape> outs{xs, ls};
    checked += ctspmd_test::check_roundtrip<c_softmax_with_cross_entropy>(in, outs) ? 1 : 0;
  }
  CHECK(checked > 50);
}

}  // namespace c_softmax_with_cross_entropy_test
