// The matmul rule at run time: the static cases again, every error as a thrown spmd_error, and
// the forward -> backward round trip over generated cases.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/rules/matmul.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace matmul_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::matmul;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};

TEST_CASE("matmul forward") {
  const auto k_shard = matmul::infer_forward({spec({64, 32}, {1, 0}), spec({32, 48}, {-1, -1})});
  CHECK(k_shard.inputs[0].dims_mapping() == dims_mapping{1, 0});
  CHECK(k_shard.inputs[1].dims_mapping() == dims_mapping{0, -1});
  CHECK(k_shard.outputs[0].dims_mapping() == dims_mapping{1, -1});
  CHECK(k_shard.outputs[0].partial_dims() == mesh_dims{0});
  CHECK(k_shard.outputs[0].partial_reduce_type(0) == reduce_type::sum);

  const auto bcast = matmul::infer_forward({spec({512, 48, 64, 32}, dims_mapping(4, -1)), spec({48, 32, 16}, {0, -1, 1})});
  CHECK(bcast.inputs[0].dims_mapping() == dims_mapping{-1, 0, -1, -1});
  CHECK(bcast.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1, 1});

  const auto size1 = matmul::infer_forward({spec({1, 64, 32}, {0, -1, -1}), spec({4, 32, 16}, {-1, -1, -1})});
  CHECK(size1.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
  CHECK(size1.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1});

  const auto dot = matmul::infer_forward({spec({32}, {0}), spec({32}, {-1})});
  CHECK(dot.outputs[0].dims_mapping().size() == 0);
  CHECK(dot.outputs[0].partial_dims() == mesh_dims{0});

  const auto tx = matmul::infer_forward({spec({32, 64}, {0, 1}), spec({32, 48}, {-1, -1})}, {.trans_x = true});
  CHECK(tx.inputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(tx.inputs[1].dims_mapping() == dims_mapping{0, -1});
  CHECK(tx.outputs[0].dims_mapping() == dims_mapping{1, -1});
  const auto t_size1 = matmul::infer_forward({spec({32, 1}, {0, 1}), spec({32, 48}, {-1, -1})}, {.trans_x = true});
  CHECK(t_size1.inputs[0].dims_mapping() == dims_mapping{0, -1});
  const auto ty = matmul::infer_forward({spec({64, 32}, {0, -1}), spec({48, 32}, {1, -1})}, {.trans_y = true});
  CHECK(ty.outputs[0].dims_mapping() == dims_mapping{0, 1});

  const auto keep_first = matmul::infer_forward({spec({64, 32}, {0, -1}), spec({32, 48}, {-1, 0})});
  CHECK(keep_first.outputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(keep_first.inputs[1].dims_mapping() == dims_mapping{-1, -1});
}

TEST_CASE("matmul errors") {
  check_error([] { (void)matmul::infer_forward({spec({64, 32}, {-1, 0}), spec({32, 48}, {1, -1})}); },
              error_kind::unimplemented, "matmul: tensor axis 'k' is sharded by two different mesh dims, 1 and 0");
  check_error([] { (void)matmul::infer_forward({spec({4, 4}, {-1, -1})}); }, error_kind::invalid_argument,
              "matmul: expects 2 inputs, got 1");
  check_error([] { (void)matmul::infer_forward({spec({}, {}), spec({4}, {-1})}); }, error_kind::invalid_argument,
              "x and y must have rank >= 1, but have ranks 0 and 1");
  check_error([] { (void)matmul::infer_forward({spec({32}, {-1}), spec({32, 4}, {-1, -1})}, {.trans_x = true}); },
              error_kind::invalid_argument, "trans_x needs x of rank >= 2, but x has rank 1");
  check_error([] { (void)matmul::infer_forward({spec({4, 32}, {-1, -1}), spec({32}, {-1})}, {.trans_y = true}); },
              error_kind::invalid_argument, "trans_y needs y of rank >= 2, but y has rank 1");
  check_error(
      [] { (void)matmul::infer_backward({spec({64, 32}, {-1, -1}), spec({32, 48}, {-1, -1})}, {spec({64, 48, 1}, {-1, -1, -1})}); },
      error_kind::invalid_argument, "output 0 has rank 3 but the notation gives it 2 labels");
  check_error([] { (void)matmul::infer_backward({spec({64, 32}, {-1, -1}), spec({32, 48}, {-1, -1})}, {}); },
              error_kind::invalid_argument, "expects 1 output, got 0");
}

TEST_CASE("matmul backward") {
  const auto back = matmul::infer_backward({spec({64, 32}, {1, 0}), spec({32, 48}, {-1, -1})}, {spec({64, 48}, {0, 1})});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(back.inputs[1].dims_mapping() == dims_mapping{-1, 1});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{0, 1});
  const auto back_ty = matmul::infer_backward({spec({64, 32}, {-1, -1}), spec({48, 32}, {-1, -1})},
                                              {spec({64, 48}, {0, 1})}, {.trans_y = true});
  CHECK(back_ty.inputs[1].dims_mapping() == dims_mapping{1, -1});
}

TEST_CASE("matmul forward -> backward round trip") {
  ctspmd_test::rng r(3);
  int checked = 0;
  constexpr int cases = 600;
  for (int n = 0; n < cases; ++n) {
    const auto mesh_ndim = r.uniform(1, 3);
    const process_mesh m(tensor_shape(static_cast<std::size_t>(mesh_ndim), 2));
    const auto x_rank = static_cast<std::size_t>(r.uniform(1, 4));
    const auto y_rank = static_cast<std::size_t>(r.uniform(1, 4));
    const matmul::attributes attrs{.trans_x = x_rank >= 2 && r.coin(), .trans_y = y_rank >= 2 && r.coin()};
    // Sizes: batch dims 4 or (sometimes) 1, m = 6, k = 8, n = 10, stored in transposed order
    // when the operand is transposed.
    const auto batch = std::max(x_rank, y_rank) - std::min<std::size_t>(2, std::max(x_rank, y_rank));
    tensor_shape out_batch(batch, 4);
    auto shape_of = [&](std::size_t rank, std::int64_t row, std::int64_t col, bool trans) {
      tensor_shape s;
      for (std::size_t i = 0; i + 2 < rank; ++i) s.push_back(r.uniform(0, 3) == 0 ? 1 : 4);
      if (rank == 1) return tensor_shape{8};
      s.push_back(trans ? col : row);
      s.push_back(trans ? row : col);
      return s;
    };
    const auto xs = shape_of(x_rank, 6, 8, attrs.trans_x);
    const auto ys = shape_of(y_rank, 8, 10, attrs.trans_y);
    tensor_shape out = out_batch;
    if (x_rank > 1) out.push_back(6);
    if (y_rank > 1) out.push_back(10);
    const std::vector<dist_tensor_spec> in{{xs, {m, ctspmd_test::random_dims_mapping(r, x_rank, mesh_ndim)}},
                                           {ys, {m, ctspmd_test::random_dims_mapping(r, y_rank, mesh_ndim)}}};
    const std::vector<tensor_shape> outs{out};
    if (ctspmd_test::check_roundtrip<matmul>(in, outs, attrs)) ++checked;
  }
  MESSAGE("matmul round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked > cases / 2);
}

}  // namespace matmul_test
