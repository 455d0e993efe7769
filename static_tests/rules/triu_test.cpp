#include <ctspmd/rules/triu.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::triu;
using ctspmd::rules::triu_grad;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr ctspmd_test::on_mesh spec{mesh};
using error_values = std::array<std::int64_t, 4>;
constexpr auto phi = semantics::phi;

// The last two dims are replicated, the batch dims kept (Paddle's rule; both semantics).
constexpr auto x = spec({8, 16, 16}, {0, 1, -1});
static_assert(triu::infer_forward({x}, {}).inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(triu::infer_forward({x}, {}).outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(triu::infer_forward({x}, {.diagonal = -3, .lower = true}, phi).outputs[0].dims_mapping() ==
              dims_mapping{0, -1, -1});
static_assert(triu::infer_forward({spec({16, 16}, {1, 0})}, {}).outputs[0].dims_mapping() == dims_mapping{-1, -1});
static_assert(triu::infer_forward({spec({4, 8, 16, 16}, {1, 0, -1, -1})}, {}).outputs[0].dims_mapping() ==
              dims_mapping{1, 0, -1, -1});
// backward: the output's mapping with the last two dims replicated
constexpr auto b = triu::infer_backward({x}, {spec({8, 16, 16}, {1, -1, 0})}, {});
static_assert(b.inputs[0].dims_mapping() == dims_mapping{1, -1, -1} && b.outputs[0].dims_mapping() == dims_mapping{1, -1, -1});
// co-shard batch dims pass whole
static_assert(is(triu::infer_forward({co(mesh, {8, 4, 4}, {{1, 0}, {}, {}})}, {}, phi).outputs[0], {{1, 0}, {}, {}}));
static_assert(is(triu::infer_forward({co(mesh, {8, 4, 4}, {{0, 1}, {}, {}})}, {}).outputs[0], {{0, 1}, {}, {}}));
// partial of every reduce type passes through (masked elements are 0 on every device)
constexpr auto partial_x = [] {
  tensor_dist_attr a(mesh, dims_mapping{0, -1, -1});
  a.set_partial_status({1}, reduce_type::prod);
  return dist_tensor_spec({8, 16, 16}, a);
}();
static_assert(triu::infer_forward({partial_x}, {}).outputs[0].partial_reduce_type(1) == reduce_type::prod);
static_assert(triu::infer_forward({partial_x}, {}).inputs[0].partial_dims() == mesh_dims{1});
static_assert(!triu::infer_backward({partial_x}, {x}, {}).inputs[0].is_partial());
// errors
constexpr auto low = triu::try_infer_forward({spec({16}, {0})}, {});
static_assert(low.kind() == error_kind::invalid_argument && low.error().op == "triu" &&
              low.error().values == error_values{1, 2, 0, 0});
static_assert(triu::try_infer_backward({x}, {spec({8, 16}, {-1, -1})}, {}).error().values == error_values{2, 3, 0, 0});
static_assert(triu::try_infer_backward({x}, {spec({8, 16, 8}, {-1, -1, -1})}, {}).error().values ==
              error_values{2, 8, 16, 0});
static_assert(!constant_evaluates<[] { return triu::infer_forward({spec({16}, {0})}, {}); }>);

// ==== triu_grad (out_grad) -> x_grad: the same as forward ==========================================
constexpr auto g = triu_grad::infer_forward({spec({8, 16, 16}, {0, 1, -1})}, {.diagonal = 1});
static_assert(g.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && g.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(triu_grad::infer_forward({partial_x}, {}, phi).outputs[0].partial_dims() == mesh_dims{1});
static_assert(triu_grad::try_infer_forward({spec({16}, {0})}, {}).error().op == "triu_grad");
static_assert(triu_grad::try_infer_backward({x}, {x}, {}).kind() == error_kind::unimplemented);
