#include <ctspmd/rules/unbind.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::unbind;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};
using error_values = std::array<std::int64_t, 4>;
constexpr auto phi = semantics::phi;

// ==== Paddle's test_unbind_rule.py (mesh [2, 3], x [64, 2, 48]) ==================================
constexpr auto f0 = unbind::infer_forward({spec({64, 2, 48}, {-1, -1, -1})}, {.axis = 1});
static_assert(f0.outputs.size() == 2 && f0.outputs[0].dims_mapping() == dims_mapping{-1, -1});
constexpr auto f1 = unbind::infer_forward({spec({64, 2, 48}, {0, -1, 1})}, {.axis = 1});
static_assert(f1.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(f1.outputs[0].dims_mapping() == dims_mapping{0, 1} && f1.outputs[1].dims_mapping() == dims_mapping{0, 1});
constexpr auto f2 = unbind::infer_forward({spec({64, 2, 48}, {0, 1, -1})}, {.axis = -2}, phi);
static_assert(f2.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(f2.outputs[1].dims_mapping() == dims_mapping{0, -1});
constexpr auto axis3 = unbind::try_infer_forward({spec({64, 2, 48}, {0, 1, -1})}, {.axis = 3});
static_assert(axis3.kind() == error_kind::invalid_argument && axis3.error().op == "unbind" &&
              axis3.error().values == error_values{3, 3, 0, 0});
// reverse
constexpr auto x = spec({64, 2, 48}, {-1, -1, -1});
constexpr auto r0 = unbind::infer_backward({x}, {spec({64, 48}, {0, 1}), spec({64, 48}, {0, -1})}, {.axis = 1});
static_assert(r0.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(r0.outputs[0].dims_mapping() == dims_mapping{0, 1} && r0.outputs[1].dims_mapping() == dims_mapping{0, 1});
constexpr auto r1 = unbind::infer_backward({x}, {spec({64, 48}, {0, -1}), spec({64, 48}, {-1, 1})}, {.axis = -2});
static_assert(r1.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
// an axis sharded by two mesh dims: an error under fluid (Paddle: NotImplementedError) ...
static_assert(!unbind::try_infer_backward({x}, {spec({64, 48}, {0, 1}), spec({64, 48}, {1, 0})}, {.axis = 1}));
// ... a co-shard under phi (each axis keeps what it can; no error)
static_assert(unbind::try_infer_backward({x}, {spec({64, 48}, {0, 1}), spec({64, 48}, {1, 0})}, {.axis = 1}, phi));
// co-shard forward
static_assert(is(unbind::infer_forward({co(mesh, {12, 2}, {{1, 0}, {}})}, {.axis = 1}, phi).outputs[1], {{1, 0}}));
static_assert(is(unbind::infer_forward({co(mesh, {12, 2}, {{0, 1}, {}})}, {.axis = -1}).outputs[0], {{0, 1}}));
// partial: kept on x and on every output (Paddle drops it on the outputs)
constexpr auto partial_x = [] {
  tensor_dist_attr a(mesh, dims_mapping{0, -1});
  a.set_partial_status({1}, reduce_type::avg);
  return dist_tensor_spec({4, 3}, a);
}();
constexpr auto p = unbind::infer_forward({partial_x}, {.axis = 1});
static_assert(p.outputs.size() == 3 && p.outputs[2].partial_reduce_type(1) == reduce_type::avg);
static_assert(p.inputs[0].partial_dims() == mesh_dims{1});
// errors: the output count, a dynamic or too large axis, ranks
static_assert(unbind::try_infer_backward({x}, {spec({64, 48}, {0, 1})}, {.axis = 1}).error().values ==
              error_values{2, 1, 2, 1});
static_assert(unbind::try_infer_backward({x}, {spec({64}, {0}), spec({64}, {0})}, {.axis = 1}).error().values ==
              error_values{0, 1, 3, 0});
static_assert(unbind::try_infer_forward({spec({-1, 4}, {-1, -1})}, {.axis = 0}).error().values == error_values{-1, 0, 16, 0});
static_assert(unbind::try_infer_forward({spec({17, 4}, {-1, -1})}, {.axis = 0}).kind() == error_kind::invalid_argument);
static_assert(!constant_evaluates<[] { return unbind::infer_forward({spec({4}, {-1})}, {.axis = 1}); }>);
