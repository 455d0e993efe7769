#include <ctspmd/rules/gather.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr process_mesh m3({2, 2, 2});
constexpr auto phi = semantics::phi;
constexpr ctspmd_test::on_mesh spec{mesh};

// ==== gather / index_select ======================================================================
constexpr auto g0 = gather::infer_forward({spec({16, 32, 8}, {0, 1, -1}), spec({12}, {-1})}, {.axis = 1});
static_assert(g0.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && g0.inputs[1].dims_mapping() == dims_mapping{-1});
static_assert(g0.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
constexpr auto g1 = gather::infer_forward({spec({16, 32, 8}, {0, -1, -1}), spec({12}, {1})}, {.axis = -2});
static_assert(g1.outputs[0].dims_mapping() == dims_mapping{0, 1, -1} && g1.inputs[1].dims_mapping() == dims_mapping{1});
// a 0-D index removes the axis
constexpr auto g2 = gather::infer_forward({spec({16, 32, 8}, {0, 1, -1}), spec({}, {})});
static_assert(g2.inputs[0].dims_mapping() == dims_mapping{-1, 1, -1} && g2.outputs[0].dims_mapping() == dims_mapping{1, -1});
// fluid: x's dim 0 and the index both on mesh dim 0: x (seen first) keeps it
static_assert(gather::infer_forward({spec({16, 32}, {0, -1}), spec({12}, {0})}, {.axis = 1}).outputs[0].dims_mapping() ==
              dims_mapping{0, -1});
// Paddle's index_select_co_shard_spmd_rule_test (axis 1, mesh [2,2,2])
constexpr auto is1 = index_select::infer_forward({co(m3, {8, 16, 32}, {{0, 1}, {2}, {}}), co(m3, {8}, {{}})}, {.axis = 1}, phi);
static_assert(is(is1.inputs[0], {{0, 1}, {}, {}}) && is(is1.inputs[1], {{}}) && is(is1.outputs[0], {{0, 1}, {}, {}}));
constexpr auto is2 = index_select::infer_forward({co(m3, {8, 16, 32}, {{0, 1}, {2}, {}}), co(m3, {8}, {{2}})}, {.axis = 1}, phi);
static_assert(is(is2.inputs[1], {{2}}) && is(is2.outputs[0], {{0, 1}, {2}, {}}));
constexpr auto is3 = index_select::infer_forward({co(m3, {8, 16, 32}, {{0, 1}, {2}, {}}), co(m3, {8}, {{0}})}, {.axis = 1}, phi);
static_assert(is(is3.inputs[0], {{0, 1}, {}, {}}) && is(is3.inputs[1], {{}}) && is(is3.outputs[0], {{0, 1}, {}, {}}));
constexpr auto is4 = index_select::infer_forward({co(m3, {8, 16, 32}, {{2}, {}, {}}), co(m3, {8}, {{0, 1}})}, {.axis = 1}, phi);
static_assert(is(is4.inputs[1], {{0, 1}}) && is(is4.outputs[0], {{2}, {0, 1}, {}}));
constexpr auto is5 = index_select::infer_forward({co(m3, {8, 16, 32}, {{0}, {}, {}}), co(m3, {8}, {{0, 1}})}, {.axis = 1}, phi);
static_assert(is(is5.inputs[0], {{0}, {}, {}}) && is(is5.inputs[1], {{1}}) && is(is5.outputs[0], {{0}, {1}, {}}));
// reverse
constexpr auto gb = gather::infer_backward({spec({16, 32, 8}, {-1, -1, -1}), spec({12}, {-1})}, {spec({16, 12, 8}, {1, 0, -1})},
                                           {.axis = 1});
static_assert(gb.inputs[0].dims_mapping() == dims_mapping{1, -1, -1} && gb.inputs[1].dims_mapping() == dims_mapping{0});
static_assert(gb.outputs[0].dims_mapping() == dims_mapping{1, 0, -1});
// errors
static_assert(gather::try_infer_forward({spec({16, 32}, {0, -1}), spec({12, 2}, {-1, -1})}).error().values[0] == 2);
static_assert(gather::try_infer_forward({spec({16, 32}, {0, -1}), spec({12}, {-1})}, {.axis = 2}).error().op == "gather");
static_assert(index_select::try_infer_forward({spec({16, 32}, {0, -1}), spec({}, {})}).error().values[0] == 0);
static_assert(gather::try_infer_backward({spec({16, 32}, {0, -1}), spec({12}, {-1})}, {spec({12}, {-1})}).error().values ==
              std::array<std::int64_t, 4>{1, 2, 0, 0});
static_assert(!constant_evaluates<[] { return gather::infer_forward({spec({}, {}), spec({12}, {-1})}); }>);

// ==== gather_grad / index_select_grad ============================================================
// Paddle's index_select_co_shard grad tests: x_grad partial on the index's mesh dims
constexpr auto ig2 = index_select_grad::infer_forward(
    {co(m3, {8, 16, 32}, {{0, 1}, {2}, {}}), co(m3, {8}, {{2}}), co(m3, {8, 8, 32}, {{0, 1}, {2}, {}})}, {.axis = 1}, phi);
static_assert(is(ig2.inputs[0], {{0, 1}, {}, {}}) && is(ig2.inputs[2], {{0, 1}, {2}, {}}));
static_assert(is(ig2.outputs[0], {{0, 1}, {}, {}}) && ig2.outputs[0].partial_dims() == mesh_dims{2});
constexpr auto ig4 = index_select_grad::infer_forward(
    {co(m3, {8, 16, 32}, {{2}, {}, {}}), co(m3, {8}, {{0, 1}}), co(m3, {8, 8, 32}, {{2}, {0, 1}, {}})}, {.axis = 1}, phi);
static_assert(is(ig4.outputs[0], {{2}, {}, {}}) && ig4.outputs[0].partial_dims() == mesh_dims{0, 1});
constexpr auto ig5 = index_select_grad::infer_forward(
    {co(m3, {8, 16, 32}, {{0}, {}, {}}), co(m3, {8}, {{0, 1}}), co(m3, {8, 8, 32}, {{0}, {1}, {}})}, {.axis = 1}, phi);
static_assert(is(ig5.inputs[1], {{1}}) && ig5.outputs[0].partial_dims() == mesh_dims{1});
constexpr auto gg = gather_grad::infer_forward({spec({16, 32}, {-1, -1}), spec({}, {}), spec({32}, {1})});
static_assert(gg.outputs[0].dims_mapping() == dims_mapping{-1, 1} && !gg.outputs[0].is_partial());
static_assert(gather_grad::try_infer_forward({spec({16, 32}, {-1, -1}), spec({4}, {-1}), spec({32}, {1})}).error().values ==
              std::array<std::int64_t, 4>{1, 2, 0, 0});
static_assert(gather_grad::try_infer_forward({spec({16, 32}, {-1, -1}), spec({4}, {-1}), spec({4, 30}, {-1, -1})})
                  .error()
                  .values == std::array<std::int64_t, 4>{30, 1, 32, 0});
static_assert(gather_grad::try_infer_forward({spec({16, 32}, {-1, -1}), spec({4}, {-1}), spec({5, 32}, {-1, -1})})
                  .error()
                  .values == std::array<std::int64_t, 4>{5, 0, 4, 0});
static_assert(gather_grad::try_infer_backward({spec({16, 32}, {-1, -1}), spec({4}, {-1}), spec({4, 32}, {1, -1})},
                                              {spec({16, 32}, {-1, -1})})
                  .kind() == error_kind::unimplemented);

// ==== one_hot ====================================================================================
constexpr auto oh = one_hot::infer_forward({spec({16, 32}, {0, 1})}, {.num_classes = 10});
static_assert(oh.inputs[0].dims_mapping() == dims_mapping{0, 1} && oh.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});
constexpr auto ohb = one_hot::infer_backward({spec({16, 32}, {-1, -1})}, {spec({16, 32, 10}, {1, -1, 0})});
static_assert(ohb.inputs[0].dims_mapping() == dims_mapping{1, -1} && ohb.outputs[0].dims_mapping() == dims_mapping{1, -1, -1});
static_assert(one_hot::try_infer_backward({spec({16, 32}, {-1, -1})}, {spec({16, 32}, {1, -1})}).error().values ==
              std::array<std::int64_t, 4>{2, 3, 0, 0});
static_assert(is(one_hot::infer_forward({co(mesh, {16, 32}, {{0, 1}, {}})}, {}, phi).outputs[0], {{0, 1}, {}, {}}));
