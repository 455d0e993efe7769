#include <ctspmd/rules/gather_nd.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr auto phi = semantics::phi;
constexpr ctspmd_test::on_mesh spec{mesh};
using dm = dims_mapping;

// ==== gather_nd ==================================================================================
// Paddle's test_gather_nd_rule.py, test_forward_mesh_dim: x [10,20], index [2,4,1] -> out [2,4,20]
constexpr auto f0 = gather_nd::infer_forward({spec({10, 20}, {-1, -1}), spec({2, 4, 1}, {0, -1, -1})}, {});
static_assert(f0.inputs[0].dims_mapping() == dm{-1, -1} && f0.inputs[1].dims_mapping() == dm{0, -1, -1});
static_assert(f0.outputs[0].dims_mapping() == dm{0, -1, -1});
static_assert(gather_nd::infer_forward({spec({10, 20}, {-1, -1}), spec({2, 4, 1}, {0, -1, -1})}, {}, phi).outputs[0]
                  .dims_mapping() == dm{0, -1, -1});
// x's indexed dim replicated, its trailing dim goes to out's trailing dim
constexpr auto f1 = gather_nd::infer_forward({spec({10, 20}, {0, 1}), spec({2, 4, 1}, {-1, -1, -1})}, {});
static_assert(f1.inputs[0].dims_mapping() == dm{-1, 1} && f1.outputs[0].dims_mapping() == dm{-1, -1, 1});
// Paddle's test_forward_mesh_dim_diff_shape: x [10], index [8,1] [0,-1] -> out [8] [0]
constexpr auto f2 = gather_nd::infer_forward({spec({10}, {-1}), spec({8, 1}, {0, -1})}, {});
static_assert(f2.inputs[1].dims_mapping() == dm{0, -1} && f2.outputs[0].dims_mapping() == dm{0});
// K = 0: every index row takes the whole x
constexpr auto f3 = gather_nd::infer_forward({spec({10, 20}, {0, -1}), spec({3, 0}, {1, -1})}, {});
static_assert(f3.inputs[0].dims_mapping() == dm{0, -1} && f3.outputs[0].dims_mapping() == dm{1, 0, -1});
// index's last dim (the coordinates) is replicated; K = rank(x) gives out = index's leading dims
constexpr auto f4 = gather_nd::infer_forward({spec({10, 20}, {-1, -1}), spec({4, 2}, {0, 1})}, {});
static_assert(f4.inputs[1].dims_mapping() == dm{0, -1} && f4.outputs[0].dims_mapping() == dm{0});
// index's leading dim and x's trailing dim both on mesh dim 0: fluid keeps x's (seen first)
constexpr auto f5 = gather_nd::infer_forward({spec({10, 4}, {-1, 0}), spec({8, 1}, {0, -1})}, {});
static_assert(f5.inputs[0].dims_mapping() == dm{-1, 0} && f5.inputs[1].dims_mapping() == dm{-1, -1});
static_assert(f5.outputs[0].dims_mapping() == dm{-1, 0});
// co-shards (phi): x's trailing dim and index's leading dim as units
constexpr process_mesh m3({2, 2, 2});
constexpr auto c1 = gather_nd::infer_forward({co(m3, {10, 8}, {{2}, {0, 1}}), co(m3, {4, 1}, {{}, {}})}, {}, phi);
static_assert(is(c1.inputs[0], {{}, {0, 1}}) && is(c1.outputs[0], {{}, {0, 1}}));
constexpr auto c2 = gather_nd::infer_forward({co(m3, {10, 8}, {{}, {2}}), co(m3, {8, 1}, {{1, 0}, {}})}, {}, phi);
static_assert(is(c2.inputs[1], {{1, 0}, {}}) && is(c2.outputs[0], {{1, 0}, {2}}));
static_assert(is(gather_nd::infer_forward({co(m3, {10, 8}, {{}, {2}}), co(m3, {8, 1}, {{1, 0}, {}})}, {}).outputs[0],
                 {{1, 0}, {2}}));
// reverse: Paddle's test_reverse_mesh_dim, out [2,4,20] [0,-1,-1]
constexpr auto r0 = gather_nd::infer_backward({spec({10, 20}, {-1, -1}), spec({2, 4, 1}, {-1, -1, -1})},
                                              {spec({2, 4, 20}, {0, -1, -1})}, {});
static_assert(r0.inputs[0].dims_mapping() == dm{-1, -1} && r0.inputs[1].dims_mapping() == dm{0, -1, -1});
static_assert(r0.outputs[0].dims_mapping() == dm{0, -1, -1});
constexpr auto r1 = gather_nd::infer_backward({spec({10, 20}, {0, -1}), spec({2, 4, 1}, {-1, -1, -1})},
                                              {spec({2, 4, 20}, {-1, 1, 0})}, {}, phi);
static_assert(r1.inputs[0].dims_mapping() == dm{-1, 0} && r1.inputs[1].dims_mapping() == dm{-1, 1, -1});
// errors
static_assert(gather_nd::try_infer_forward({spec({10, 20}, {-1, -1}), spec({}, {})}).error().values[0] == 0);
// Paddle's test_forward_mesh_dim_same_shape (x [10], index [4]) has 4 coordinates for a rank-1 x
static_assert(gather_nd::try_infer_forward({spec({10}, {-1}), spec({4}, {0})}).error().values ==
              std::array<std::int64_t, 4>{4, 1, 0, 0});
static_assert(gather_nd::try_infer_forward({spec({10}, {-1}), spec({4}, {0})}).kind() == error_kind::invalid_argument);
static_assert(gather_nd::try_infer_forward({spec({10, 20}, {-1, -1}), spec({4, -1}, {0, -1})}).error().values[0] == -1);
static_assert(gather_nd::try_infer_forward({spec({10}, {-1}), spec({4}, {0})}).error().op == "gather_nd");
static_assert(gather_nd::try_infer_backward({spec({10, 20}, {-1, -1}), spec({2, 4, 1}, {-1, -1, -1})},
                                            {spec({2, 4}, {0, -1})})
                  .error()
                  .values == std::array<std::int64_t, 4>{2, 3, 0, 0});
static_assert(!constant_evaluates<[] { return gather_nd::infer_forward({spec({10}, {-1}), spec({4}, {0})}); }>);

// ==== gather_nd_grad =============================================================================
// each device adds its index rows' slices: x_grad partial on the index's mesh dims
constexpr auto g0 = gather_nd_grad::infer_forward(
    {spec({10, 20}, {-1, 1}), spec({2, 4, 1}, {0, -1, -1}), spec({2, 4, 20}, {-1, -1, 1})}, {});
static_assert(g0.inputs[2].dims_mapping() == dm{0, -1, 1} && g0.outputs[0].dims_mapping() == dm{-1, 1});
static_assert(g0.outputs[0].partial_dims() == mesh_dims{0});
constexpr auto g1 = gather_nd_grad::infer_forward(
    {co(m3, {10, 20}, {{}, {}}), co(m3, {8, 1}, {{0, 1}, {}}), co(m3, {8, 20}, {{0, 1}, {2}})}, {}, phi);
static_assert(is(g1.outputs[0], {{}, {2}}) && g1.outputs[0].partial_dims() == mesh_dims{0, 1});
constexpr auto g2 = gather_nd_grad::infer_forward(
    {spec({10, 20}, {0, -1}), spec({2, 4, 1}, {-1, -1, -1}), spec({2, 4, 20}, {-1, -1, -1})}, {});
static_assert(g2.outputs[0].dims_mapping() == dm{-1, -1} && !g2.outputs[0].is_partial());
static_assert(gather_nd_grad::try_infer_forward(
                  {spec({10, 20}, {-1, -1}), spec({2, 4, 1}, {-1, -1, -1}), spec({2, 4, 21}, {-1, -1, -1})})
                  .error()
                  .values == std::array<std::int64_t, 4>{21, 2, 20, 0});
static_assert(gather_nd_grad::try_infer_forward(
                  {spec({10, 20}, {-1, -1}), spec({2, 4, 1}, {-1, -1, -1}), spec({2, 20}, {-1, -1})})
                  .error()
                  .values == std::array<std::int64_t, 4>{2, 3, 0, 0});
static_assert(gather_nd_grad::try_infer_backward(
                  {spec({10, 20}, {-1, -1}), spec({2, 4, 1}, {-1, -1, -1}), spec({2, 4, 20}, {-1, -1, -1})},
                  {spec({10, 20}, {-1, -1})})
                  .kind() == error_kind::unimplemented);
