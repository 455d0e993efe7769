#include <ctspmd/rules/bmm.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::bmm;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m3({2, 2, 2});

// ==== forward: matmul without transposes ==========================================================
// Paddle's matmul_co_shard_spmd_rule_test (BmmInferSpmd, CoShard), under phi
constexpr auto fwd = bmm::infer_forward({co(m3, {4, 16, 8}, {{0, 1}, {2}, {}}), co(m3, {4, 8, 32}, {{0, 1}, {}, {}})}, {},
                                        semantics::phi);
static_assert(is(fwd.inputs[0], {{0, 1}, {2}, {}}) && is(fwd.inputs[1], {{0, 1}, {}, {}}) &&
              is(fwd.outputs[0], {{0, 1}, {2}, {}}) && !fwd.outputs[0].is_partial());
// fluid: k sharded gives a partial output
constexpr auto k = bmm::infer_forward({co(m3, {4, 16, 8}, {{0}, {}, {1}}), co(m3, {4, 8, 32}, {{}, {}, {}})});
static_assert(is(k.inputs[1], {{0}, {1}, {}}) && k.outputs[0].partial_dims() == mesh_dims{1});
// backward: from the output, k replicated
constexpr auto back = bmm::infer_backward({co(m3, {4, 16, 8}, {{}, {}, {}}), co(m3, {4, 8, 32}, {{}, {}, {}})},
                                          {co(m3, {4, 16, 32}, {{0}, {1}, {2}})});
static_assert(is(back.inputs[0], {{0}, {1}, {}}) && is(back.inputs[1], {{0}, {}, {2}}));

// ==== errors: 3-D operands, one batch size (no broadcasting), one k ==========================================
static_assert(bmm::try_infer_forward({co(m3, {16, 8}, {{}, {}}), co(m3, {4, 8, 32}, {{}, {}, {}})}).kind() ==
              error_kind::invalid_argument);
static_assert(bmm::try_infer_forward({co(m3, {1, 16, 8}, {{}, {}, {}}), co(m3, {4, 8, 32}, {{}, {}, {}})}).error().values[0] == 1);
static_assert(!bmm::try_infer_forward({co(m3, {4, 16, 8}, {{}, {}, {}}), co(m3, {4, 6, 32}, {{}, {}, {}})}));
static_assert(bmm::try_infer_forward({co(m3, {-1, 16, 8}, {{}, {}, {}}), co(m3, {4, -1, 32}, {{}, {}, {}})}));
