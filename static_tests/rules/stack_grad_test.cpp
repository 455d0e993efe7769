#include <ctspmd/rules/stack_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::stack_grad;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m22({2, 2});
constexpr process_mesh m3({2, 2, 2});

constexpr tensor_dist_attr partial_on(tensor_dist_attr a, std::int64_t m, reduce_type r = reduce_type::sum) {
  a.set_partial_status({m}, r);
  return a;
}

// ==== Paddle's spmd_rule_test.cc (StackGradInferSpmd) ============================================
// mesh [2, 2], out_grad [3, 16, 8, 4] [-1, -1, 1, 0], axis 0: three gradients [-1, 1, 0]
constexpr auto g1 = stack_grad::infer_forward({{{3, 16, 8, 4}, {m22, {-1, -1, 1, 0}}}}, {.axis = 0});
static_assert(g1.inputs.size() == 1 && g1.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1, 0});
static_assert(g1.outputs.size() == 3);
static_assert(g1.outputs[0].dims_mapping() == dims_mapping{-1, 1, 0} && g1.outputs[1] == g1.outputs[0] &&
              g1.outputs[2] == g1.outputs[0] && !g1.outputs[0].is_partial());
static_assert(stack_grad::infer_forward({{{3, 16, 8, 4}, {m22, {-1, -1, 1, 0}}}}, {.axis = 0}, semantics::phi) == g1);

// ==== the stacked axis is replicated; negative axes; co-shard ======================================
constexpr auto g2 = stack_grad::infer_forward({{{16, 2, 8}, {m22, {0, 1, -1}}}}, {.axis = -2});
static_assert(g2.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && g2.outputs.size() == 2 &&
              g2.outputs[1].dims_mapping() == dims_mapping{0, -1});
constexpr auto g3 = stack_grad::infer_forward({co(m3, {8, 4}, {{0, 1}, {2}})}, {.axis = 1});
static_assert(is(g3.inputs[0], {{0, 1}, {}}) && g3.outputs.size() == 4 && is(g3.outputs[3], {{0, 1}}));

// ==== partial out_grad kept on every gradient ======================================================
constexpr auto p1 = stack_grad::infer_forward({{{2, 8}, partial_on({m22, {-1, 0}}, 1, reduce_type::prod)}}, {.axis = 0});
static_assert(p1.inputs[0].partial_dims() == mesh_dims{1} && p1.outputs[1].partial_dims() == mesh_dims{1} &&
              p1.outputs[1].partial_reduce_type(1) == reduce_type::prod);

// ==== errors =======================================================================================
static_assert(stack_grad::try_infer_forward({{{3, 16}, m22}}, {.axis = 2}).error().values[0] == 2);
static_assert(stack_grad::try_infer_forward({{{}, m22}}, {.axis = 0}).kind() == error_kind::invalid_argument);
static_assert(stack_grad::try_infer_forward({{{-1, 16}, m22}}, {.axis = 0}).error().values[0] == -1);
static_assert(stack_grad::try_infer_forward({{{17, 16}, m22}}, {.axis = 0}).error().values[0] == 17);  // > max_operands
static_assert(stack_grad::try_infer_forward({{{0, 16}, m22}}, {.axis = 0}).kind() == error_kind::invalid_argument);
static_assert(stack_grad::try_infer_backward({{{3, 16}, m22}}, {{{16}, m22}}, {}).kind() == error_kind::unimplemented);
