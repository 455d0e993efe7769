// The embedding rule at run time: the static cases again, and every error as a thrown spmd_error.
#include <ctspmd/ctspmd.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <span>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace embedding_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::embedding;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};

TEST_CASE("embedding forward") {
  const auto col = embedding::infer_forward({spec({4, 16}, {0, -1}), spec({512, 768}, {-1, 1})});
  CHECK(col.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(col.inputs[1].dims_mapping() == dims_mapping{-1, 1});
  CHECK(col.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK_FALSE(col.outputs[0].is_partial());

  const auto row = embedding::infer_forward({spec({4, 16}, {1, -1}), spec({512, 768}, {0, -1})});
  CHECK(row.outputs[0].dims_mapping() == dims_mapping{1, -1, -1});
  CHECK(row.outputs[0].partial_dims() == mesh_dims{0});
  CHECK(row.outputs[0].partial_reduce_type(0) == reduce_type::sum);

  const auto ids3 = embedding::infer_forward({spec({2, 4, 8}, {0, -1, 1}), spec({512, 768}, {-1, -1})},
                                             {.padding_idx = 0, .sparse = true});
  CHECK(ids3.outputs[0].dims_mapping() == dims_mapping{0, -1, 1, -1});

  // The typed API over a span gives the same answer as over a braced list.
  const std::vector<dist_tensor_spec> inputs{spec({4, 16}, {0, -1}), spec({512, 768}, {-1, 1})};
  CHECK(embedding::infer_forward(std::span<const dist_tensor_spec>(inputs)) == col);
}

TEST_CASE("embedding forward errors") {
  check_error([] { (void)embedding::infer_forward({spec({4, 16}, {0, -1}), spec({512, 768}, {0, -1})}); },
              error_kind::precondition_not_met, "embedding: tensor axes 'a' and 'j' are sharded by the same mesh dim 0");
  check_error([] { (void)embedding::infer_forward({spec({4, 16}, {-1, 1}), spec({512, 768}, {-1, 1})}); },
              error_kind::precondition_not_met, "tensor axes 'b' and 'k' are sharded by the same mesh dim 1");
  check_error(
      [] {
        (void)embedding::infer_forward({spec({4, 16}, {-1, -1}), spec({512, 768}, {1, -1})}, {.padding_idx = 3});
      },
      error_kind::invalid_argument,
      "does not support padding_idx (padding_idx = 3), but the table's row axis is sharded by mesh dim 1");
  check_error(
      [] { (void)embedding::infer_forward({spec({4, 16}, {-1, -1}), spec({512, 768}, {1, -1})}, {.sparse = true}); },
      error_kind::invalid_argument, "does not support sparse, but the table's row axis is sharded by mesh dim 1");
  check_error([] { (void)embedding::infer_forward({spec({4}, {-1})}); }, error_kind::invalid_argument,
              "embedding: expects 2 inputs, got 1");
  check_error([] { (void)embedding::infer_forward({spec({4}, {-1}), spec({4, 5, 6}, {-1, -1, -1})}); },
              error_kind::invalid_argument, "must be 2-D, but has rank 3");
  check_error([] { (void)embedding::infer_forward({spec({4}, {-1}), dist_tensor_spec({4, 5}, process_mesh({6}))}); },
              error_kind::invalid_argument, "input 1 is on another process mesh");
}

TEST_CASE("embedding backward") {
  const auto x = spec({4, 16}, {1, -1});
  const auto w = spec({512, 768}, {0, 1});
  const auto back = embedding::infer_backward({x, w}, {spec({4, 16, 768}, {0, -1, 1})});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(back.inputs[1].dims_mapping() == dims_mapping{-1, 1});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});

  tensor_dist_attr partial(mesh, {1, -1, -1});
  partial.set_partial_status({0});
  const auto back_partial = embedding::infer_backward({x, w}, {dist_tensor_spec({4, 16, 768}, partial)});
  CHECK(back_partial.outputs[0] == partial);
  CHECK_FALSE(back_partial.inputs[0].is_partial());

  check_error([&] { (void)embedding::infer_backward({x, w}, {spec({4, 768}, {-1, -1})}); },
              error_kind::invalid_argument, "x has rank 2 and the output rank 2");
  check_error([&] { (void)embedding::infer_backward({x, w}, {}); }, error_kind::invalid_argument,
              "expects 1 output, got 0");
  check_error([&] { (void)embedding::infer_backward({x}, {spec({4, 16, 768}, {0, -1, 1})}); },
              error_kind::invalid_argument, "expects 2 inputs, got 1");
}

TEST_CASE("registry lookup gives the rule") {
  static_assert(std::is_same_v<rules::rule_for<"lookup_table_v2">, embedding>);
  const auto info = rules::rule_for<"lookup_table_v2">::infer_forward({spec({4}, {0}), spec({10, 8}, {-1, -1})});
  CHECK(info.outputs[0].dims_mapping() == dims_mapping{0, -1});
}

TEST_CASE("embedding forward -> backward round trip") {
  ctspmd_test::rng r(2);
  int checked = 0;
  for (int n = 0; n < 400; ++n) {
    const process_mesh m(r.coin() ? tensor_shape{2, 3} : tensor_shape{2, 2, 2});
    const auto rank = static_cast<std::size_t>(r.uniform(1, 4));
    tensor_shape x_shape(rank, 4);
    const std::vector<dist_tensor_spec> in{
        {x_shape, {m, ctspmd_test::random_dims_mapping(r, rank, m.ndim())}},
        {{64, 16}, {m, ctspmd_test::random_dims_mapping(r, 2, m.ndim())}}};
    tensor_shape out_shape = x_shape;
    out_shape.push_back(16);
    const std::vector<tensor_shape> out{out_shape};
    if (ctspmd_test::check_roundtrip<embedding>(in, out)) ++checked;
  }
  MESSAGE("embedding round trip: ", checked, " accepted cases of 400");
  CHECK(checked > 100);
}

}  // namespace embedding_test
