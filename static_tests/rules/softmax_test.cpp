#include <ctspmd/rules/softmax.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::softmax;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

static_assert(rules::softmax_attributes{}.axis == -1);

// ==== forward ===================================================================================
// ---- the softmax axis is not sharded: nothing changes -------------------------------------------
constexpr auto keep = softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})});
static_assert(keep.inputs.size() == 1 && keep.outputs.size() == 1);
static_assert(keep.inputs[0].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(keep.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(!keep.outputs[0].is_partial() && keep.outputs[0].process_mesh() == mesh);

// ---- a sharded softmax axis is replicated (x is resharded) ----------------------------------------
constexpr auto last = softmax::infer_forward({spec({4, 16, 32}, {0, -1, 1})});
static_assert(last.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(last.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
constexpr auto mid = softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = 1});
static_assert(mid.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(mid.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = -2}) == mid);  // negative axis
static_assert(softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = -3}).outputs[0].dims_mapping() ==
              dims_mapping{-1, 1, -1});
static_assert(softmax::infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = 0}).inputs[0].dims_mapping() ==
              dims_mapping{-1, 1, -1});

// ---- a 0-D x: axis -1 or 0, empty mappings ----------------------------------------------------------
static_assert(softmax::infer_forward({spec({}, {})}).outputs[0].dims_mapping() == dims_mapping{});
static_assert(softmax::infer_forward({spec({}, {})}, {.axis = 0}).inputs[0].dims_mapping() == dims_mapping{});

// ---- a partial x must be reduced first: it comes back not partial, and so is the output --------------
constexpr auto partial = softmax::infer_forward({partial_spec({4, 32}, {0, -1}, 1)});
static_assert(!partial.inputs[0].is_partial() && partial.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(!partial.outputs[0].is_partial() && partial.outputs[0].dims_mapping() == dims_mapping{0, -1});

// ---- bad axes and operands ----------------------------------------------------------------------------
constexpr auto axis3 = softmax::try_infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = 3});
static_assert(axis3.kind() == error_kind::invalid_argument && axis3.error().op == "softmax");
static_assert(axis3.error().values == std::array<std::int64_t, 4>{3, 3, 3, 3});  // axis, bounds, rank
constexpr auto axis_m4 = softmax::try_infer_forward({spec({4, 16, 32}, {0, 1, -1})}, {.axis = -4});
static_assert(axis_m4.error().values == std::array<std::int64_t, 4>{-4, 3, 3, 3});
constexpr auto axis_0d = softmax::try_infer_forward({spec({}, {})}, {.axis = 1});
static_assert(axis_0d.kind() == error_kind::invalid_argument);
static_assert(axis_0d.error().values == std::array<std::int64_t, 4>{1, 1, 1, 0});
static_assert(!softmax::try_infer_forward({spec({}, {})}, {.axis = -2}));
static_assert(!softmax::try_infer_forward({spec({4}, {-1}), spec({4}, {-1})}));
static_assert(!softmax::try_infer_forward(std::span<const dist_tensor_spec>{}));
static_assert(!constant_evaluates<[] { return softmax::infer_forward({spec({4, 32}, {0, -1})}, {.axis = 2}); }>);

// ==== backward ==================================================================================
constexpr auto x = spec({4, 16, 32}, {-1, -1, -1});
// From the output, the softmax axis forced replicated; x takes the same; x's own mapping does not count.
constexpr auto back = softmax::infer_backward({spec({4, 16, 32}, {1, -1, 0})}, {spec({4, 16, 32}, {0, 1, -1})},
                                              {.axis = 1});
static_assert(back.inputs.size() == 1 && back.outputs.size() == 1);
static_assert(back.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(back.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});  // the axis replicated
constexpr auto back_last = softmax::infer_backward({x}, {spec({4, 16, 32}, {-1, 0, 1})});
static_assert(back_last.inputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
static_assert(back_last.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
static_assert(softmax::infer_backward({spec({}, {})}, {spec({}, {})}).inputs[0].dims_mapping() == dims_mapping{});

// A partial output: x is not partial, nor is the output as x produces it.
constexpr auto back_partial = softmax::infer_backward({x}, {partial_spec({4, 16, 32}, {0, -1, -1}, 1)});
static_assert(back_partial.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && !back_partial.inputs[0].is_partial());
static_assert(back_partial.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(!back_partial.outputs[0].is_partial());

// Forward then backward agree; forward of the inferred x gives the returned output.
static_assert(
    softmax::infer_backward({spec({4, 16, 32}, {0, -1, 1})}, {dist_tensor_spec({4, 16, 32}, last.outputs[0])}) == last);
static_assert(softmax::infer_forward({dist_tensor_spec({4, 16, 32}, back.inputs[0])}, {.axis = 1}).outputs[0] ==
              back.outputs[0]);

// ---- bad operands ----------------------------------------------------------------------------------
constexpr auto back_rank = softmax::try_infer_backward({x}, {spec({4, 16}, {-1, -1})});
static_assert(back_rank.kind() == error_kind::invalid_argument);
static_assert(back_rank.error().values[0] == 2 && back_rank.error().values[1] == 3);
constexpr auto back_size = softmax::try_infer_backward({x}, {spec({4, 16, 30}, {-1, -1, -1})});
static_assert(back_size.error().values == std::array<std::int64_t, 4>{2, 30, 32, 0});  // dim, size, x's size
static_assert(softmax::try_infer_backward({x}, {spec({-1, 16, 32}, {-1, -1, -1})}));  // unknown size: ok
static_assert(softmax::try_infer_backward({x}, {spec({4, 16, 32}, {-1, -1, -1})}, {.axis = 5}).error().values[0] == 5);
static_assert(!softmax::try_infer_backward({x}, {}));
static_assert(!softmax::try_infer_backward({x, x}, {x}));
static_assert(!constant_evaluates<[] { return softmax::infer_backward({x}, {spec({4, 16}, {-1, -1})}); }>);

// ==== phi =======================================================================================
namespace phi_cases {
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
constexpr process_mesh m3({2, 2, 2});
constexpr process_mesh m24({2, 4});
// Paddle's softmax_co_shard_spmd_rule_test: the axis' whole list goes, a co-shard elsewhere stays
constexpr auto a0 = softmax::infer_forward({co(m3, {32, 48, 128}, {{0, 1}, {2}, {}})}, {.axis = 0}, phi);
static_assert(is(a0.inputs[0], {{}, {2}, {}}) && is(a0.outputs[0], {{}, {2}, {}}));
constexpr auto am3 = softmax::infer_forward({co(m3, {32, 48, 128}, {{0, 1}, {2}, {}})}, {.axis = -3}, phi);
static_assert(is(am3.outputs[0], {{}, {2}, {}}));
constexpr auto a1 = softmax::infer_forward({co(m3, {32, 48, 128}, {{0, 1}, {2}, {}})}, {.axis = 1}, phi);
static_assert(is(a1.inputs[0], {{0, 1}, {}, {}}) && is(a1.outputs[0], {{0, 1}, {}, {}}));
// Paddle's test_softmax_rule (flat mappings, mesh [2, 4])
static_assert(is(softmax::infer_forward({co(m24, {8, 16, 48}, {{1}, {}, {0}})}, {.axis = -1}, phi).outputs[0],
                 {{1}, {}, {}}));
static_assert(is(softmax::infer_forward({co(m24, {8, 16, 48}, {{}, {1}, {0}})}, {.axis = 1}, phi).outputs[0],
                 {{}, {}, {0}}));
constexpr auto rev = softmax::infer_backward({co(m24, {8, 16, 48}, {{}, {}, {}})}, {co(m24, {8, 16, 48}, {{}, {1}, {0}})},
                                             {.axis = -2}, phi);
static_assert(is(rev.inputs[0], {{}, {}, {0}}) && is(rev.outputs[0], {{}, {}, {0}}));
// a shard that does not divide its dim is dropped under phi (kept under fluid)
static_assert(is(softmax::infer_forward({co(m24, {6, 8}, {{1}, {}})}, {}, phi).inputs[0], {{}, {}}));
static_assert(is(softmax::infer_forward({co(m24, {6, 8}, {{1}, {}})}).inputs[0], {{1}, {}}));
}  // namespace phi_cases

// ==== softmax_grad (out, out_grad) -> x_grad =====================================================
namespace grad_cases {
using ctspmd::rules::softmax_grad;
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
static_assert(softmax_grad::input_count == operand_count{2} && softmax_grad::output_count == operand_count{1});
// the axis is replicated in all three; the other dims are merged
constexpr auto g1 = softmax_grad::infer_forward({spec({4, 16, 32}, {0, -1, 1}), spec({4, 16, 32}, {-1, 1, -1})});
static_assert(g1.inputs[0].dims_mapping() == dims_mapping{0, 1, -1} && g1.inputs[1].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(g1.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});
constexpr auto g2 = softmax_grad::infer_forward({spec({4, 16, 32}, {0, -1, 1}), spec({4, 16, 32}, {0, -1, 1})}, {.axis = 0});
static_assert(g2.outputs[0].dims_mapping() == dims_mapping{-1, -1, 1} && g2.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
// partial inputs come back whole; x_grad is not partial
constexpr auto gp = softmax_grad::infer_forward({spec({4, 16}, {0, -1}), partial_spec({4, 16}, {0, -1}, 1)});
static_assert(!gp.inputs[1].is_partial() && !gp.outputs[0].is_partial());
// a 0-D softmax (axis -1 or 0)
static_assert(softmax_grad::infer_forward({spec({}, {}), spec({}, {})}).outputs[0].rank() == 0);
// fluid: one dim on two mesh dims is refused; phi follows the co-sharded operand and fills in
static_assert(softmax_grad::try_infer_forward({spec({6, 16}, {0, -1}), spec({6, 16}, {1, -1})}).kind() ==
              error_kind::unimplemented);
constexpr process_mesh m3({2, 2, 2});
constexpr auto gc = softmax_grad::infer_forward({co(m3, {8, 4, 16}, {{0, 1}, {}, {}}), co(m3, {8, 4, 16}, {{}, {2}, {}})},
                                                {.axis = -1}, phi);
static_assert(is(gc.outputs[0], {{0, 1}, {2}, {}}) && is(gc.inputs[1], {{0, 1}, {2}, {}}));
// phi clears the softmax axis before the merge picks the operand it follows: out's co-sharded
// axis does not make out's layout win (Paddle: [[], [1, 2], []]; following out gave [2, 1])
constexpr tensor_shape s3{8, 16, 32};
constexpr auto gx = softmax_grad::infer_forward({co(m3, s3, {{}, {2}, {0, 1}}), co(m3, s3, {{}, {1, 2}, {}})}, {}, phi);
static_assert(is(gx.inputs[0], {{}, {1, 2}, {}}) && is(gx.inputs[1], {{}, {1, 2}, {}}) && is(gx.outputs[0], {{}, {1, 2}, {}}));
// the same with the operands' roles swapped
static_assert(is(softmax_grad::infer_forward({co(m3, s3, {{}, {1, 2}, {}}), co(m3, s3, {{}, {2}, {0, 1}})}, {}, phi).outputs[0],
                 {{}, {1, 2}, {}}));
// without a co-shard elsewhere: the shard counts after clearing pick out_grad (4 against 2)
static_assert(is(softmax_grad::infer_forward({co(m3, s3, {{}, {2}, {0, 1}}), co(m3, s3, {{0}, {1}, {}})}, {}, phi).outputs[0],
                 {{0}, {1, 2}, {}}));
// a middle axis: out_grad's co-shard of dim 0 is followed, out's dim 2 gets nothing left
static_assert(is(softmax_grad::infer_forward({co(m3, s3, {{}, {0, 1}, {2}}), co(m3, s3, {{1, 2}, {}, {}})}, {.axis = 1}, phi)
                     .outputs[0],
                 {{1, 2}, {}, {}}));
// fluid: out's axis is ignored too, and the two lists of dim 1 conflict
static_assert(softmax_grad::try_infer_forward({co(m3, s3, {{}, {2}, {0, 1}}), co(m3, s3, {{}, {1, 2}, {}})}).kind() ==
              error_kind::unimplemented);
static_assert(is(softmax_grad::infer_forward({co(m3, s3, {{}, {1, 2}, {0}}), co(m3, s3, {{}, {1, 2}, {}})}).outputs[0],
                 {{}, {1, 2}, {}}));
// co-shard under fluid: the lists merge as units
constexpr auto gf = softmax_grad::infer_forward({co(m3, {8, 4, 16}, {{0, 1}, {}, {}}), co(m3, {8, 4, 16}, {{0, 1}, {}, {2}})});
static_assert(is(gf.outputs[0], {{0, 1}, {}, {}}));
// phi: a mesh dim that does not divide its dim is dropped
static_assert(is(softmax_grad::infer_forward({co(mesh, {3, 16}, {{0}, {}}), co(mesh, {3, 16}, {{1}, {}})}, {}, phi).outputs[0],
                 {{1}, {}}));
// errors
constexpr auto ge1 = softmax_grad::try_infer_forward({spec({4, 16}, {0, -1}), spec({4}, {0})});
static_assert(ge1.kind() == error_kind::invalid_argument && ge1.error().op == "softmax_grad" &&
              ge1.error().values == std::array<std::int64_t, 4>{1, 2, 0, 0});
static_assert(softmax_grad::try_infer_forward({spec({4, 16}, {0, -1}), spec({4, 8}, {0, -1})}).error().values ==
              std::array<std::int64_t, 4>{1, 8, 16, 0});
static_assert(softmax_grad::try_infer_forward({spec({4, 16}, {0, -1}), spec({4, 16}, {0, -1})}, {.axis = 2}).kind() ==
              error_kind::invalid_argument);
static_assert(!softmax_grad::try_infer_forward({spec({4, 16}, {0, -1})}));
static_assert(softmax_grad::try_infer_backward({spec({4, 16}, {0, -1}), spec({4, 16}, {0, -1})}, {spec({4, 16}, {0, -1})})
                  .kind() == error_kind::unimplemented);
}  // namespace grad_cases
