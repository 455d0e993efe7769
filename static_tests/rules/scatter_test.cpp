#include <ctspmd/rules/scatter.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh m4({4});
constexpr process_mesh m23({2, 3});
constexpr auto phi = semantics::phi;
constexpr dist_tensor_spec s4(tensor_shape shape, dims_mapping dm) { return {shape, {m4, dm}}; }
constexpr dist_tensor_spec s23(tensor_shape shape, dims_mapping dm) { return {shape, {m23, dm}}; }
using dm = dims_mapping;

// ==== scatter ====================================================================================
// Paddle's test_scatter_rule.py (x [64,32,48], index [16]; its updates [32,32,48] has 32 rows for
// 16 indices, which we reject, so updates is [16,32,48] here), test_single_mesh_dim:
// [-1,-1,-1], [-1], [-1,0,-1] -> all [-1,0,-1], out not partial
constexpr auto f0 = scatter::infer_forward(
    {s4({64, 32, 48}, {-1, -1, -1}), s4({16}, {-1}), s4({16, 32, 48}, {-1, 0, -1})}, {.overwrite = true});
static_assert(f0.inputs[0].dims_mapping() == dm{-1, 0, -1} && f0.inputs[1].dims_mapping() == dm{-1});
static_assert(f0.inputs[2].dims_mapping() == dm{-1, 0, -1} && f0.outputs[0].dims_mapping() == dm{-1, 0, -1});
static_assert(!f0.outputs[0].is_partial());
// [0,-1,-1], [-1], [0,-1,-1]: Paddle gives index [0], updates [0,-1,-1] and out Partial(sum) on 0,
// which double-counts x's untouched rows; here dim 0 and the index stay replicated
constexpr auto f1 = scatter::infer_forward({s4({64, 32, 48}, {0, -1, -1}), s4({16}, {-1}), s4({16, 32, 48}, {0, -1, -1})});
static_assert(f1.inputs[0].dims_mapping() == dm{-1, -1, -1} && f1.inputs[1].dims_mapping() == dm{-1});
static_assert(f1.inputs[2].dims_mapping() == dm{-1, -1, -1} && f1.outputs[0].dims_mapping() == dm{-1, -1, -1});
static_assert(!f1.outputs[0].is_partial());
// [-1,0,-1], [-1], [-1,-1,-1] -> all [-1,-1,-1] (updates decides, as in Paddle)
constexpr auto f2 = scatter::infer_forward({s4({64, 32, 48}, {-1, 0, -1}), s4({16}, {-1}), s4({16, 32, 48}, {-1, -1, -1})},
                                           {.overwrite = false}, phi);
static_assert(f2.inputs[0].dims_mapping() == dm{-1, -1, -1} && f2.outputs[0].dims_mapping() == dm{-1, -1, -1});
// test_multi_mesh_dim: [1,-1,0], [-1], [-1,0,-1] -> all [-1,0,-1]
constexpr auto f3 =
    scatter::infer_forward({s23({64, 32, 48}, {1, -1, 0}), s23({16}, {-1}), s23({16, 32, 48}, {-1, 0, -1})});
static_assert(f3.inputs[0].dims_mapping() == dm{-1, 0, -1} && f3.inputs[2].dims_mapping() == dm{-1, 0, -1});
static_assert(f3.outputs[0].dims_mapping() == dm{-1, 0, -1});
// [-1,-1,-1], [0], [-1,1,-1]: Paddle index [0], updates [0,1,-1], out [-1,1,-1] partial on 0; here
// index [-1], updates [-1,1,-1], out [-1,1,-1] not partial
constexpr auto f4 =
    scatter::infer_forward({s23({64, 32, 48}, {-1, -1, -1}), s23({16}, {0}), s23({16, 32, 48}, {-1, 1, -1})});
static_assert(f4.inputs[0].dims_mapping() == dm{-1, 1, -1} && f4.inputs[1].dims_mapping() == dm{-1});
static_assert(f4.inputs[2].dims_mapping() == dm{-1, 1, -1} && f4.outputs[0].dims_mapping() == dm{-1, 1, -1});
static_assert(!f4.outputs[0].is_partial());
// phi drops a mesh dim that does not divide its dim (32 over 3), as gather does
static_assert(scatter::infer_forward({s23({64, 32, 48}, {-1, -1, -1}), s23({16}, {0}), s23({16, 32, 48}, {-1, 1, -1})},
                                     {}, phi)
                  .outputs[0]
                  .dims_mapping() == dm{-1, -1, -1});
// co-shard (both semantics): updates' co-sharded dim goes to x and out as a unit
constexpr auto c1 = scatter::infer_forward(
    {co(m23, {64, 36, 48}, {{}, {}, {}}), co(m23, {16}, {{}}), co(m23, {16, 36, 48}, {{1, 0}, {}, {}})}, {}, phi);
static_assert(is(c1.inputs[2], {{}, {}, {}}) && is(c1.outputs[0], {{}, {}, {}}));
constexpr auto c2 = scatter::infer_forward(
    {co(m23, {64, 36, 48}, {{}, {}, {}}), co(m23, {16}, {{}}), co(m23, {16, 36, 48}, {{}, {1, 0}, {}})}, {}, phi);
static_assert(is(c2.inputs[0], {{}, {1, 0}, {}}) && is(c2.inputs[2], {{}, {1, 0}, {}}) && is(c2.outputs[0], {{}, {1, 0}, {}}));
static_assert(is(scatter::infer_forward({co(m23, {64, 36, 48}, {{}, {}, {}}), co(m23, {16}, {{}}),
                                         co(m23, {16, 36, 48}, {{}, {1, 0}, {}})})
                     .outputs[0],
                 {{}, {1, 0}, {}}));
// reverse: test_reverse_multi_mesh_dim, out [1,0,-1] -> x [-1,0,-1], index [-1], updates [-1,0,-1]
constexpr auto r0 = scatter::infer_backward(
    {s23({64, 32, 48}, {-1, -1, -1}), s23({16}, {-1}), s23({16, 32, 48}, {-1, -1, -1})}, {s23({64, 32, 48}, {1, 0, -1})});
static_assert(r0.inputs[0].dims_mapping() == dm{-1, 0, -1} && r0.inputs[1].dims_mapping() == dm{-1});
static_assert(r0.inputs[2].dims_mapping() == dm{-1, 0, -1} && r0.outputs[0].dims_mapping() == dm{-1, 0, -1});
// errors
static_assert(scatter::try_infer_forward({s4({64, 32}, {-1, -1}), s4({16, 1}, {-1, -1}), s4({16, 32}, {-1, -1})})
                  .error()
                  .values[0] == 2);
static_assert(scatter::try_infer_forward({s4({64, 32}, {-1, -1}), s4({16}, {-1}), s4({16, 32, 2}, {-1, -1, -1})})
                  .error()
                  .values == std::array<std::int64_t, 4>{3, 2, 0, 0});
static_assert(scatter::try_infer_forward({s4({64, 32}, {-1, -1}), s4({16}, {-1}), s4({12, 32}, {-1, -1})})
                  .error()
                  .values == std::array<std::int64_t, 4>{12, 16, 0, 0});
static_assert(scatter::try_infer_forward({s4({64, 32}, {-1, -1}), s4({16}, {-1}), s4({16, 30}, {-1, -1})})
                  .error()
                  .values == std::array<std::int64_t, 4>{30, 1, 32, 0});
static_assert(scatter::try_infer_forward({s4({}, {}), s4({16}, {-1}), s4({16}, {-1})}).kind() ==
              error_kind::invalid_argument);
static_assert(scatter::try_infer_forward({s4({}, {}), s4({16}, {-1}), s4({16}, {-1})}).error().op == "scatter");
static_assert(scatter::try_infer_backward({s4({64, 32}, {-1, -1}), s4({16}, {-1}), s4({16, 32}, {-1, -1})},
                                          {s4({64}, {0})})
                  .error()
                  .values == std::array<std::int64_t, 4>{1, 2, 0, 0});
static_assert(!constant_evaluates<[] {
  return scatter::infer_forward({s4({64, 32}, {-1, -1}), s4({16}, {-1}), s4({12, 32}, {-1, -1})});
}>);

// ==== scatter_grad ===============================================================================
// Paddle's scatter grad tests: index -> -1, dim 0 -> -1, out_grad's mapping to both grads
constexpr auto g0 = scatter_grad::infer_forward(
    {s23({16}, {0}), s23({16, 32, 48}, {0, -1, 1}), s23({64, 32, 48}, {1, 0, -1})}, {.overwrite = true});
static_assert(g0.inputs[0].dims_mapping() == dm{-1} && g0.inputs[1].dims_mapping() == dm{-1, 0, -1});
static_assert(g0.inputs[2].dims_mapping() == dm{-1, 0, -1});
static_assert(g0.outputs[0].dims_mapping() == dm{-1, 0, -1} && g0.outputs[1].dims_mapping() == dm{-1, 0, -1});
static_assert(!g0.outputs[0].is_partial() && !g0.outputs[1].is_partial());
constexpr auto g1 = scatter_grad::infer_forward(
    {co(m23, {16}, {{}}), co(m23, {16, 36}, {{}, {}}), co(m23, {64, 36}, {{}, {0, 1}})}, {.overwrite = false}, phi);
static_assert(is(g1.outputs[0], {{}, {0, 1}}) && is(g1.outputs[1], {{}, {0, 1}}) && is(g1.inputs[1], {{}, {0, 1}}));
static_assert(scatter_grad::try_infer_forward({s4({16}, {-1}), s4({16, 32}, {-1, -1}), s4({64, 30}, {-1, -1})})
                  .error()
                  .values == std::array<std::int64_t, 4>{32, 1, 30, 0});
static_assert(scatter_grad::try_infer_forward({s4({}, {}), s4({16, 32}, {-1, -1}), s4({64, 32}, {-1, -1})})
                  .error()
                  .values[0] == 0);
static_assert(scatter_grad::try_infer_forward({s4({16}, {-1}), s4({16, 32}, {-1, -1}), s4({}, {})}).kind() ==
              error_kind::invalid_argument);
static_assert(scatter_grad::try_infer_backward({s4({16}, {-1}), s4({16, 32}, {-1, -1}), s4({64, 32}, {-1, -1})},
                                               {s4({64, 32}, {-1, -1}), s4({16, 32}, {-1, -1})})
                  .kind() == error_kind::unimplemented);
