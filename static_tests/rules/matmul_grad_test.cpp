#include <ctspmd/rules/matmul_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::matmul_grad;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m3({2, 2, 2});
constexpr process_mesh m2({2, 4});

// ==== Paddle's matmul_co_shard_spmd_rule_test (MatmulGradInferSpmd), under phi ==================
// case 1: x_grad partial on n's mesh dim, y_grad on m's
constexpr auto g1 = matmul_grad::infer_forward(
    {co(m3, {64, 32}, {{0, 1}, {}}), co(m3, {32, 48}, {{}, {2}}), co(m3, {64, 48}, {{0, 1}, {2}})}, {}, semantics::phi);
static_assert(is(g1.inputs[0], {{0, 1}, {}}) && is(g1.inputs[1], {{}, {2}}) && is(g1.inputs[2], {{0, 1}, {2}}));
static_assert(is(g1.outputs[0], {{0, 1}, {}}) && g1.outputs[0].partial_dims() == mesh_dims{2});
static_assert(is(g1.outputs[1], {{}, {2}}) && g1.outputs[1].partial_dims() == mesh_dims{0, 1});
// case 2: y's batch dim broadcast (size 1) and missing: y_grad partial on the leading dim's mesh dim and k's
constexpr auto g2 = matmul_grad::infer_forward({co(m3, {1024, 512, 64, 32}, {{0}, {}, {1, 2}, {}}),
                                                co(m3, {1, 32, 48}, {{}, {}, {2}}),
                                                co(m3, {1024, 512, 64, 48}, {{0}, {}, {1, 2}, {}})},
                                               {}, semantics::phi);
static_assert(is(g2.inputs[0], {{0}, {}, {1, 2}, {}}) && is(g2.inputs[1], {{}, {}, {}}) &&
              is(g2.inputs[2], {{0}, {}, {1, 2}, {}}));
static_assert(is(g2.outputs[0], {{0}, {}, {1, 2}, {}}) && !g2.outputs[0].is_partial());
static_assert(is(g2.outputs[1], {{}, {}, {}}) && g2.outputs[1].partial_dims() == mesh_dims{0, 1, 2});
// case 3: the size-1 batch dim of y meets a sharded batch dim of out_grad
constexpr auto g3 = matmul_grad::infer_forward({co(m3, {1024, 512, 64, 32}, {{}, {0}, {1, 2}, {}}),
                                                co(m3, {1, 32, 48}, {{}, {}, {2}}),
                                                co(m3, {1024, 512, 64, 48}, {{}, {0}, {1, 2}, {}})},
                                               {}, semantics::phi);
static_assert(is(g3.outputs[0], {{}, {0}, {1, 2}, {}}) && !g3.outputs[0].is_partial());
static_assert(is(g3.outputs[1], {{}, {}, {}}) && g3.outputs[1].partial_dims() == mesh_dims{0, 1, 2});
// case 4: trans_x; mesh dim 2 claimed by k (32) and n (48): n keeps it
constexpr auto g4 = matmul_grad::infer_forward({co(m3, {1024, 512, 32, 64}, {{}, {0}, {1, 2}, {}}),
                                                co(m3, {1, 32, 48}, {{}, {}, {2}}),
                                                co(m3, {1024, 512, 64, 48}, {{}, {0}, {}, {2}})},
                                               {true, false}, semantics::phi);
static_assert(is(g4.inputs[0], {{}, {0}, {1}, {}}) && is(g4.inputs[1], {{}, {1}, {2}}) &&
              is(g4.inputs[2], {{}, {0}, {}, {2}}));
static_assert(is(g4.outputs[0], {{}, {0}, {1}, {}}) && g4.outputs[0].partial_dims() == mesh_dims{2});
static_assert(is(g4.outputs[1], {{}, {1}, {2}}) && g4.outputs[1].partial_dims() == mesh_dims{0});
// case 5: trans_x and trans_y; k's proposals [1, 2] and [0] co-shard to [1, 2, 0]
constexpr auto g5 = matmul_grad::infer_forward({co(m3, {1024, 512, 32, 64}, {{}, {}, {1, 2}, {}}),
                                                co(m3, {1, 48, 32}, {{}, {}, {0}}),
                                                co(m3, {1024, 512, 64, 48}, {{}, {}, {}, {}})},
                                               {true, true}, semantics::phi);
static_assert(is(g5.inputs[0], {{}, {}, {1, 2, 0}, {}}) && is(g5.inputs[1], {{}, {}, {1, 2, 0}}));
static_assert(is(g5.outputs[0], {{}, {}, {1, 2, 0}, {}}) && !g5.outputs[0].is_partial());
static_assert(is(g5.outputs[1], {{}, {}, {1, 2, 0}}) && !g5.outputs[1].is_partial());
// case 6: trans_y; mesh dim 0 claimed by m (64) and k (32): m keeps it
constexpr auto g6 = matmul_grad::infer_forward({co(m3, {1024, 512, 64, 32}, {{}, {}, {0}, {1, 2}}),
                                                co(m3, {1, 48, 32}, {{}, {}, {0}}),
                                                co(m3, {1024, 512, 64, 48}, {{}, {}, {0}, {}})},
                                               {false, true}, semantics::phi);
static_assert(is(g6.inputs[0], {{}, {}, {0}, {1, 2}}) && is(g6.inputs[1], {{}, {}, {1, 2}}));
static_assert(is(g6.outputs[0], {{}, {}, {0}, {1, 2}}) && !g6.outputs[0].is_partial());
static_assert(is(g6.outputs[1], {{}, {}, {1, 2}}) && g6.outputs[1].partial_dims() == mesh_dims{0});

// ==== fluid: first-wins, partial inputs made whole ==============================================
constexpr auto f1 = [] {
  tensor_dist_attr g(m2, {-1, 1});
  g.set_partial_status({0});
  return matmul_grad::infer_forward({{{8, 16}, {m2, {0, -1}}}, {{16, 12}, {m2, {1, -1}}}, {{8, 12}, g}});
}();
// x proposes m:0 and k:1; y's k:1 agrees; out_grad's n:1 loses mesh dim 1 to k (first wins)
static_assert(f1.inputs[0].dims_mapping() == dims_mapping{0, 1} && f1.inputs[1].dims_mapping() == dims_mapping{1, -1});
static_assert(f1.inputs[2].dims_mapping() == dims_mapping{0, -1} && !f1.inputs[2].is_partial());
static_assert(f1.outputs[0].dims_mapping() == dims_mapping{0, 1} && !f1.outputs[0].is_partial());
static_assert(f1.outputs[1].dims_mapping() == dims_mapping{1, -1} && f1.outputs[1].partial_dims() == mesh_dims{0});
// fluid: two mesh dims on one axis conflict
static_assert(matmul_grad::try_infer_forward({{{8, 16}, {m2, {-1, 0}}}, {{16, 12}, {m2, {1, -1}}}, {{8, 12}, {m2, {-1, -1}}}})
                  .kind() == error_kind::unimplemented);
// 1-D x: x_grad is partial on every mesh dim of the output's labels
constexpr auto v1 = matmul_grad::infer_forward({{{16}, {m2, {-1}}}, {{3, 16, 12}, {m2, {0, -1, 1}}}, {{3, 12}, {m2, {0, 1}}}});
static_assert(v1.outputs[0].dims_mapping() == dims_mapping{-1} && v1.outputs[0].partial_dims() == mesh_dims{0, 1});
static_assert(v1.outputs[1].dims_mapping() == dims_mapping{0, -1, 1} && !v1.outputs[1].is_partial());
// co-shard input under fluid: the list merges as a unit
constexpr auto c1 = matmul_grad::infer_forward(
    {co(m3, {64, 32}, {{0, 1}, {}}), co(m3, {32, 48}, {{}, {}}), co(m3, {64, 48}, {{}, {2}})});
static_assert(is(c1.outputs[0], {{0, 1}, {}}) && c1.outputs[0].partial_dims() == mesh_dims{2});
static_assert(is(c1.outputs[1], {{}, {2}}) && c1.outputs[1].partial_dims() == mesh_dims{0, 1});

// ==== errors ========================================================================================
constexpr dist_tensor_spec x8({8, 16}, m2), y8({16, 12}, m2), g8({8, 12}, m2);
static_assert(matmul_grad::try_infer_forward({x8, dist_tensor_spec({15, 12}, m2), g8}).kind() == error_kind::invalid_argument);
static_assert(matmul_grad::try_infer_forward({x8, y8, dist_tensor_spec({8, 13}, m2)}).error().values[1] == 13);
static_assert(matmul_grad::try_infer_forward({x8, y8, dist_tensor_spec({8, 12, 1}, m2)}).kind() == error_kind::invalid_argument);
static_assert(matmul_grad::try_infer_forward({dist_tensor_spec({16}, m2), y8, g8}, {true, false}).kind() == error_kind::invalid_argument);
static_assert(matmul_grad::try_infer_forward({dist_tensor_spec({2, 8, 16}, m2), dist_tensor_spec({3, 16, 12}, m2),
                                              dist_tensor_spec({2, 8, 12}, m2)}).kind() == error_kind::invalid_argument);
static_assert(matmul_grad::try_infer_forward({x8, y8}).kind() == error_kind::invalid_argument);
static_assert(matmul_grad::try_infer_backward({x8, y8, g8}, {x8, y8}).kind() == error_kind::unimplemented);
