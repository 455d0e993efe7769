#include <ctspmd/rules/layer_norm.hpp>

#include <ctspmd/registry/attribute_reflection.hpp>

#include <boost/hana/at_key.hpp>
#include <boost/hana/string.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::layer_norm;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};
constexpr dist_tensor_spec x = spec({4, 8, 16}, {0, 1, -1});
constexpr dist_tensor_spec scale = spec({16}, {1});
constexpr dist_tensor_spec bias = spec({16}, {-1});
constexpr dist_tensor_spec scale2 = spec({128}, {-1});  // spans x's last two dims
constexpr dist_tensor_spec bias2 = spec({128}, {0});

// ==== attributes ================================================================================
static_assert(layer_norm::attributes{}.begin_norm_axis == 1 && layer_norm::attributes{}.epsilon == 1e-5);
static_assert(boost::hana::at_key(layer_norm::attributes{}, BOOST_HANA_STRING("begin_norm_axis")) == 1);

// ==== forward ===================================================================================
// ---- begin_norm_axis 1: only the first dim stays sharded; scale and bias replicated ---------------
constexpr auto f1 = layer_norm::infer_forward({x, scale2, bias2});
static_assert(f1.inputs.size() == 3 && f1.outputs.size() == 3);
static_assert(f1.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});  // x's normalised dim 1 resharded
static_assert(f1.inputs[1].dims_mapping() == dims_mapping{-1} && f1.inputs[2].dims_mapping() == dims_mapping{-1});
static_assert(f1.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(f1.outputs[1].dims_mapping() == dims_mapping{0});
static_assert(f1.outputs[2].dims_mapping() == dims_mapping{0});
static_assert(!f1.outputs[0].is_partial() && !f1.outputs[1].is_partial() && !f1.outputs[2].is_partial());
static_assert(f1.outputs[1].process_mesh() == mesh);

// ---- begin_norm_axis 2: leading dims on different mesh dims carry over to mean and variance -------
constexpr auto f2 = layer_norm::infer_forward({x, scale, bias}, {.begin_norm_axis = 2, .epsilon = 1e-6});
static_assert(f2.inputs[0].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(f2.inputs[1].dims_mapping() == dims_mapping{-1} && f2.inputs[2].dims_mapping() == dims_mapping{-1});
static_assert(f2.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(f2.outputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(f2.outputs[2].dims_mapping() == dims_mapping{0, 1});

// ---- a sharded last dim is resharded; replicated leading dims stay replicated -------------------------
constexpr auto f3 = layer_norm::infer_forward({spec({4, 8, 16}, {-1, 0, 1}), scale, bias}, {.begin_norm_axis = 2});
static_assert(f3.inputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
static_assert(f3.outputs[1].dims_mapping() == dims_mapping{-1, 0});

// ---- negative begin_norm_axis counts from the end ------------------------------------------------------
static_assert(layer_norm::infer_forward({x, scale, bias}, {.begin_norm_axis = -1}) == f2);
static_assert(layer_norm::infer_forward({x, scale2, bias2}, {.begin_norm_axis = -2}) == f1);
static_assert(layer_norm::infer_forward({spec({4, 16}, {1, 0}), scale, bias}).outputs[2].dims_mapping() ==
              dims_mapping{1});

// ---- a partial x is combined first (a reshard); nothing is partial after ----------------------------
constexpr auto fp = layer_norm::infer_forward({partial_spec({4, 16}, {-1, 0}, 1), partial_spec({16}, {-1}, 0), bias});
static_assert(!fp.inputs[0].is_partial() && fp.inputs[0].dims_mapping() == dims_mapping{-1, -1});
static_assert(!fp.inputs[1].is_partial());
static_assert(!fp.outputs[0].is_partial() && !fp.outputs[1].is_partial());

// ---- errors -----------------------------------------------------------------------------------------------
constexpr auto bna0 = layer_norm::try_infer_forward({x, scale, bias}, {.begin_norm_axis = 0});
static_assert(bna0.kind() == error_kind::invalid_argument && bna0.error().op == "layer_norm");
static_assert(bna0.error().values[0] == 0 && bna0.error().values[1] == 3);
static_assert(layer_norm::try_infer_forward({x, scale, bias}, {.begin_norm_axis = 3}).error().values[0] == 3);
static_assert(layer_norm::try_infer_forward({x, scale, bias}, {.begin_norm_axis = -3}).error().values[0] == -3);
static_assert(layer_norm::try_infer_forward({spec({16}, {0}), scale, bias}).error().values[1] == 1);  // rank-1 x
constexpr auto bad_scale = layer_norm::try_infer_forward({x, spec({8, 16}, {-1, -1}), bias});
static_assert(bad_scale.kind() == error_kind::invalid_argument && bad_scale.error().values[0] == 2);
static_assert(layer_norm::try_infer_forward({x, scale, spec({}, {})}).error().values[0] == 0);
static_assert(layer_norm::try_infer_forward({x, scale}).error().values == std::array<std::int64_t, 4>{3, 2, 0, 0});
static_assert(!layer_norm::try_infer_forward({x, scale, bias, bias}));
static_assert(!constant_evaluates<[] { return layer_norm::infer_forward({x, scale, bias}, {.begin_norm_axis = 5}); }>);

// ==== backward ==================================================================================
constexpr dist_tensor_spec x_rep = spec({4, 8, 16}, {-1, -1, -1});
// ---- out's leading dims, mean and variance merge; normalised dims replicated ------------------------------
constexpr auto b1 = layer_norm::infer_backward(
    {x_rep, scale, bias}, {spec({4, 8, 16}, {-1, -1, 1}), spec({4, 8}, {0, -1}), spec({4, 8}, {-1, -1})},
    {.begin_norm_axis = 2});
static_assert(b1.inputs.size() == 3 && b1.outputs.size() == 3);
static_assert(b1.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(b1.inputs[1].dims_mapping() == dims_mapping{-1} && b1.inputs[2].dims_mapping() == dims_mapping{-1});
static_assert(b1.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(b1.outputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(b1.outputs[2].dims_mapping() == dims_mapping{0, -1});

constexpr auto b2 = layer_norm::infer_backward(
    {x, scale, bias}, {spec({4, 8, 16}, {-1, 1, -1}), spec({4, 8}, {-1, -1}), spec({4, 8}, {0, -1})},
    {.begin_norm_axis = -1});
static_assert(b2.inputs[0].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(b2.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(b2.outputs[1].dims_mapping() == dims_mapping{0, 1} && b2.outputs[2].dims_mapping() == dims_mapping{0, 1});

// ---- conflicts: a mesh dim claimed by two axes stays with the first (out's) ---------------------------------
constexpr auto first_wins = layer_norm::infer_backward(
    {x_rep, scale, bias}, {spec({4, 8, 16}, {0, -1, -1}), spec({4, 8}, {-1, 0}), spec({4, 8}, {-1, -1})},
    {.begin_norm_axis = 2});
static_assert(first_wins.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(first_wins.outputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(first_wins.outputs[2].dims_mapping() == dims_mapping{0, -1});
// ... and one axis on two mesh dims is unimplemented.
constexpr auto two_dims = layer_norm::try_infer_backward(
    {x_rep, scale, bias}, {spec({4, 8, 16}, {0, -1, -1}), spec({4}, {1}), spec({4}, {-1})});
static_assert(two_dims.kind() == error_kind::unimplemented && two_dims.error().op == "layer_norm");
static_assert(two_dims.error().values == std::array<std::int64_t, 4>{'a', 1, 0, 0});

// ---- partial outputs are returned as merged, without partial status -------------------------------------------
constexpr auto bp = layer_norm::infer_backward(
    {x_rep, scale, bias}, {partial_spec({4, 8, 16}, {-1, -1, -1}, 0), spec({4}, {0}), partial_spec({4}, {-1}, 1)});
static_assert(bp.outputs[0].dims_mapping() == dims_mapping{0, -1, -1} && !bp.outputs[0].is_partial());
static_assert(bp.outputs[2].dims_mapping() == dims_mapping{0} && !bp.outputs[2].is_partial());
static_assert(bp.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && !bp.inputs[0].is_partial());

// Forward then backward gives forward's inputs back.
constexpr auto round =
    layer_norm::infer_backward({x, scale, bias},
                               {dist_tensor_spec({4, 8, 16}, f2.outputs[0]), dist_tensor_spec({4, 8}, f2.outputs[1]),
                                dist_tensor_spec({4, 8}, f2.outputs[2])},
                               {.begin_norm_axis = 2});
static_assert(round.inputs == f2.inputs && round.outputs == f2.outputs);

// ---- errors -----------------------------------------------------------------------------------------------
constexpr dist_tensor_spec out3 = spec({4, 8, 16}, {-1, -1, -1});
constexpr dist_tensor_spec stat = spec({4}, {-1});
constexpr auto bad_out = layer_norm::try_infer_backward({x, scale, bias}, {spec({4, 8}, {-1, -1}), stat, stat});
static_assert(bad_out.kind() == error_kind::invalid_argument && bad_out.error().values[0] == 3 &&
              bad_out.error().values[1] == 2);
constexpr auto bad_mean = layer_norm::try_infer_backward({x, scale, bias}, {out3, spec({4, 8}, {-1, -1}), stat});
static_assert(bad_mean.error().values[0] == 1 && bad_mean.error().values[1] == 2);
constexpr auto bad_var = layer_norm::try_infer_backward({x, scale, bias}, {out3, stat, spec({}, {})});
static_assert(bad_var.error().values[0] == 1 && bad_var.error().values[1] == 0);
static_assert(
    layer_norm::try_infer_backward({x, scale, bias}, {out3, stat, stat}, {.begin_norm_axis = 4}).error().values[0] ==
    4);
static_assert(layer_norm::try_infer_backward({x, scale, bias}, {out3, stat}).error().values[1] == 2);
static_assert(!layer_norm::try_infer_backward({x, scale}, {out3, stat, stat}));
static_assert(!layer_norm::try_infer_backward({x, spec({4, 4}, {-1, -1}), bias}, {out3, stat, stat}));
static_assert(!constant_evaluates<[] { return layer_norm::infer_backward({x, scale, bias}, {out3, stat, out3}); }>);

// ==== phi: the normalised dims' mesh dims move to x's first dim ======================================
namespace phi_cases {
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
constexpr process_mesh m22({2, 2});
// Paddle's test_op_co_shard_rule: [[0], [1], [], []] with begin_norm_axis 1 -> [[0, 1], [], [], []]
constexpr auto moved = layer_norm::infer_forward(
    {co(m22, {64, 32, 128, 128}, {{0}, {1}, {}, {}}), co(m22, {524288}, {{}}), co(m22, {524288}, {{}})}, {}, phi);
static_assert(is(moved.inputs[0], {{0, 1}, {}, {}, {}}) && is(moved.outputs[0], {{0, 1}, {}, {}, {}}) &&
              is(moved.outputs[1], {{0, 1}}) && is(moved.outputs[2], {{0, 1}}));
// fluid drops it
static_assert(is(layer_norm::infer_forward({co(m22, {64, 32, 128, 128}, {{0}, {1}, {}, {}}), co(m22, {524288}, {{}}),
                                           co(m22, {524288}, {{}})})
                     .inputs[0],
                 {{0}, {}, {}, {}}));
// only while the first dim stays divisible
static_assert(is(layer_norm::infer_forward({co(m22, {2, 32, 8}, {{0}, {1}, {}}), co(m22, {256}, {{}}), co(m22, {256}, {{}})},
                                           {}, phi)
                     .inputs[0],
                 {{0}, {}, {}}));
// Paddle's test_layer_norm_rule (flat, mesh [2, 3]) agrees under phi
constexpr auto flat = layer_norm::infer_forward({spec({64, 32, 1024}, {1, 0, -1}), spec({1024}, {0}), spec({1024}, {0})},
                                                {.begin_norm_axis = 2}, phi);
static_assert(flat.inputs[0].dims_mapping() == dims_mapping{1, 0, -1} && flat.inputs[1].dims_mapping() == dims_mapping{-1} &&
              flat.outputs[1].dims_mapping() == dims_mapping{1, 0});
// backward merges out, mean and variance with the co-shard union
constexpr auto back = layer_norm::infer_backward(
    {spec({64, 32, 1024}, {-1, -1, -1}), spec({1024}, {-1}), spec({1024}, {-1})},
    {spec({64, 32, 1024}, {-1, -1, -1}), spec({64, 32}, {0, -1}), spec({64, 32}, {-1, 1})}, {.begin_norm_axis = 2}, phi);
static_assert(back.inputs[0].dims_mapping() == dims_mapping{0, 1, -1} && back.outputs[1].dims_mapping() == dims_mapping{0, 1});
}  // namespace phi_cases
