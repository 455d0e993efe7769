#include <ctspmd/rules/tile.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::tile;
using ctspmd::rules::tile_grad;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 2});
constexpr ctspmd_test::on_mesh spec{mesh};
using error_values = std::array<std::int64_t, 4>;
constexpr auto phi = semantics::phi;

// ==== tile: Paddle's test_tile_rule.py (mesh [2, 2], x [16, 16, 16] [0, -1, 1], repeat [2, 2, 1, 1]) ==
constexpr auto x = spec({16, 16, 16}, {0, -1, 1});
constexpr auto f = tile::infer_forward({x}, {.repeat_times = {2, 2, 1, 1}});
static_assert(f.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
static_assert(f.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1, 1});
static_assert(tile::infer_forward({x}, {.repeat_times = {2, 2, 1, 1}}, phi).outputs[0].dims_mapping() ==
              dims_mapping{-1, -1, -1, 1});
constexpr auto b = tile::infer_backward({x}, {spec({2, 32, 16, 16}, {-1, -1, -1, 1})}, {.repeat_times = {2, 2, 1, 1}});
static_assert(b.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
static_assert(b.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1, 1});
// repeat_times shorter than x's rank is left-padded with 1s; all 1s keep everything
static_assert(tile::infer_forward({x}, {.repeat_times = {3}}).outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(tile::infer_forward({x}, {}).outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
// backward: a sharded new leading dim or repeated dim of the output is dropped
static_assert(tile::infer_backward({x}, {spec({2, 32, 16, 16}, {0, -1, -1, 1})}, {.repeat_times = {2, 2, 1, 1}})
                  .outputs[0]
                  .dims_mapping() == dims_mapping{-1, -1, -1, 1});
// co-shard lists pass whole
static_assert(is(tile::infer_forward({co(mesh, {8, 4}, {{1, 0}, {}})}, {.repeat_times = {2, 1, 3}}, phi).outputs[0],
                 {{}, {1, 0}, {}}));
static_assert(is(tile::infer_forward({co(mesh, {8, 4}, {{0, 1}, {}})}, {.repeat_times = {2, 1, 3}}).inputs[0],
                 {{0, 1}, {}}));
// partial passes through (tile copies elements)
constexpr auto partial_x = [] {
  tensor_dist_attr a(mesh, dims_mapping{0, -1});
  a.set_partial_status({1}, reduce_type::sum);
  return dist_tensor_spec({4, 4}, a);
}();
static_assert(tile::infer_forward({partial_x}, {.repeat_times = {2, 1}}).outputs[0].partial_dims() == mesh_dims{1});
static_assert(tile::infer_forward({partial_x}, {.repeat_times = {2, 1}}).inputs[0].partial_dims() == mesh_dims{1});
// errors
constexpr auto zero = tile::try_infer_forward({x}, {.repeat_times = {1, 0, 1}});
static_assert(zero.kind() == error_kind::invalid_argument && zero.error().op == "tile" &&
              zero.error().values == error_values{1, 0, 0, 0});
static_assert(tile::try_infer_forward({x}, {.repeat_times = {-2}}).error().values == error_values{0, -2, 0, 0});
static_assert(tile::try_infer_forward({spec({1LL << 40, 2}, {-1, -1})}, {.repeat_times = {1LL << 40, 1}}).kind() ==
              error_kind::invalid_argument);  // overflow
constexpr auto bad_out = tile::try_infer_backward({x}, {spec({32, 16, 16}, {-1, -1, -1})}, {.repeat_times = {2, 2, 1, 1}});
static_assert(bad_out.kind() == error_kind::invalid_argument && bad_out.error().values == error_values{3, 4, 0, 0});
static_assert(tile::try_infer_backward({x}, {spec({2, 32, 16, 8}, {-1, -1, -1, -1})}, {.repeat_times = {2, 2, 1, 1}})
                  .error()
                  .values == error_values{3, 8, 16, 0});
static_assert(!constant_evaluates<[] { return tile::infer_forward({x}, {.repeat_times = {0}}); }>);

// ==== tile_grad (x, out_grad) -> x_grad ==========================================================
// out_grad [2, 32, 16, 16]: the new leading dim keeps its mesh dim and x_grad is partial there
constexpr auto g = tile_grad::infer_forward({spec({16, 16, 16}, {-1, -1, -1}), spec({2, 32, 16, 16}, {0, -1, -1, 1})},
                                            {.repeat_times = {2, 2, 1, 1}});
static_assert(g.inputs.size() == 2 && g.outputs.size() == 1);
static_assert(g.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
static_assert(g.inputs[1].dims_mapping() == dims_mapping{0, -1, -1, 1});
static_assert(g.outputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
static_assert(g.outputs[0].partial_dims() == mesh_dims{0} && g.outputs[0].partial_reduce_type(0) == reduce_type::sum);
// a repeated x dim is replicated on out_grad; x's own sharding is merged in
constexpr auto g2 = tile_grad::infer_forward({spec({16, 16}, {-1, 1}), spec({32, 16}, {0, -1})}, {.repeat_times = {2, 1}});
static_assert(g2.inputs[1].dims_mapping() == dims_mapping{-1, 1});
static_assert(g2.outputs[0].dims_mapping() == dims_mapping{-1, 1} && !g2.outputs[0].is_partial());
// phi: the co-shard union of x's and out_grad's lists
constexpr auto g3 = tile_grad::infer_forward({co(mesh, {8, 4}, {{0}, {}}), co(mesh, {8, 4}, {{1}, {}})}, {}, phi);
static_assert(is(g3.outputs[0], {{0, 1}, {}}) || is(g3.outputs[0], {{1, 0}, {}}));
// fluid: one axis sharded by two mesh dims is an error (first-wins merge)
static_assert(!tile_grad::try_infer_forward({co(mesh, {8, 4}, {{0}, {}}), co(mesh, {8, 4}, {{1}, {}})}, {}));
static_assert(tile_grad::infer_forward({co(mesh, {8, 4}, {{0}, {}}), co(mesh, {8, 4}, {{}, {}})}, {})
                  .outputs[0]
                  .dims_mapping() == dims_mapping{0, -1});
// errors: out_grad not x tiled; no reverse inference
constexpr auto g_bad = tile_grad::try_infer_forward({spec({16, 16}, {-1, -1}), spec({16, 16}, {-1, -1})},
                                                    {.repeat_times = {2, 1}});
static_assert(g_bad.kind() == error_kind::invalid_argument && g_bad.error().op == "tile_grad" &&
              g_bad.error().values == error_values{0, 16, 32, 0});
static_assert(tile_grad::try_infer_forward({spec({16, 16}, {-1, -1}), spec({16}, {-1})}, {}).error().values ==
              error_values{1, 2, 0, 0});
static_assert(tile_grad::try_infer_backward({x, x}, {x}, {}).kind() == error_kind::unimplemented);
static_assert(!tile_grad::try_infer_forward({x}, {}));
