#include <ctspmd/rules/expand_as_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::expand_as_grad;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m23({2, 3});
constexpr process_mesh m3({2, 2, 2});

constexpr tensor_dist_attr partial_on(tensor_dist_attr a, std::int64_t m, reduce_type r = reduce_type::sum) {
  a.set_partial_status({m}, r);
  return a;
}

// ==== Paddle's expand_as test (test/cpp/auto_parallel, ExpandAsGradInferSpmd) =====================
// mesh [2, 3], x [1, 48] replicated, out_grad [2, 32, 48] [0, 1, -1], target_shape [2, 32, 48]
constexpr expand_as_grad::attributes t1{.target_shape = {2, 32, 48}};
constexpr auto g1 = expand_as_grad::infer_forward({{{1, 48}, {m23, {-1, -1}}}, {{2, 32, 48}, {m23, {0, 1, -1}}}}, t1);
static_assert(g1.inputs[0].dims_mapping() == dims_mapping{-1, -1});
static_assert(g1.inputs[1].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(g1.outputs[0].dims_mapping() == dims_mapping{-1, -1} && g1.outputs[0].partial_dims() == mesh_dims{0, 1});
static_assert(expand_as_grad::infer_forward({{{1, 48}, {m23, {-1, -1}}}, {{2, 32, 48}, {m23, {0, 1, -1}}}}, t1,
                                            semantics::phi) == g1);

// ==== x follows out_grad at its non-broadcast dims =================================================
// x [32, 48] sharded its own way: it is resharded to out_grad's mapping (its values are not read)
constexpr auto g2 = expand_as_grad::infer_forward({{{32, 48}, {m23, {-1, 0}}}, {{2, 32, 48}, {m23, {0, 1, -1}}}});
static_assert(g2.inputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(g2.outputs[0].dims_mapping() == dims_mapping{1, -1} && g2.outputs[0].partial_dims() == mesh_dims{0});
// no broadcast: x_grad = out_grad; a co-shard passes as a unit
constexpr auto g3 = expand_as_grad::infer_forward({co(m3, {8, 4}, {{}, {}}), co(m3, {8, 4}, {{0, 1}, {2}})});
static_assert(is(g3.inputs[0], {{0, 1}, {2}}) && is(g3.outputs[0], {{0, 1}, {2}}) && !g3.outputs[0].is_partial());
// a 0-D x: x_grad is partial on every mesh dim of out_grad
constexpr auto g4 = expand_as_grad::infer_forward({co(m3, {}, {}), co(m3, {8, 4}, {{0, 1}, {2}})});
static_assert(g4.outputs[0].rank() == 0 && g4.outputs[0].partial_dims() == mesh_dims{0, 1, 2});

// ==== partial out_grad: sum and avg pass, other types are reduced first ============================
constexpr auto p1 = expand_as_grad::infer_forward(
    {{{1, 48}, {m23, {-1, -1}}}, {{4, 48}, partial_on({m23, {0, -1}}, 1, reduce_type::avg)}});
static_assert(p1.inputs[1].partial_dims() == mesh_dims{1} && p1.inputs[1].partial_reduce_type(1) == reduce_type::avg);
static_assert(p1.outputs[0].partial_dims() == mesh_dims{0, 1} && p1.outputs[0].partial_reduce_type(0) == reduce_type::sum &&
              p1.outputs[0].partial_reduce_type(1) == reduce_type::avg);
constexpr auto p2 = expand_as_grad::infer_forward(
    {{{1, 48}, {m23, {-1, -1}}}, {{4, 48}, partial_on({m23, {0, -1}}, 1, reduce_type::max)}});
static_assert(!p2.inputs[1].is_partial() && p2.outputs[0].partial_dims() == mesh_dims{0});

// ==== errors =======================================================================================
static_assert(expand_as_grad::try_infer_forward({{{2, 32, 48}, m23}, {{32, 48}, m23}}).error().values[0] == 3);
static_assert(expand_as_grad::try_infer_forward({{{3, 48}, m23}, {{2, 32, 48}, m23}}).error().values[1] == 3);
static_assert(expand_as_grad::try_infer_forward({{{-1, 48}, m23}, {{2, 32, -1}, m23}}));
static_assert(expand_as_grad::try_infer_forward({{{1, 48}, m23}, {{2, 32, 48}, m23}}, {.target_shape = {32, 48}})
                  .error()
                  .values[1] == 2);
static_assert(expand_as_grad::try_infer_forward({{{1, 48}, m23}, {{2, 32, 48}, m23}}, {.target_shape = {2, 16, 48}})
                  .error()
                  .values[2] == 16);
static_assert(expand_as_grad::try_infer_backward({{{1, 48}, m23}, {{2, 32, 48}, m23}}, {{{1, 48}, m23}}).kind() ==
              error_kind::unimplemented);
