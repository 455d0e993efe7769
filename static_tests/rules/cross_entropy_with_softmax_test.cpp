#include <ctspmd/rules/cross_entropy_with_softmax.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd_test::constant_evaluates;
using ce = ctspmd::rules::cross_entropy_with_softmax;
using vals = std::array<std::int64_t, 4>;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

// ==== forward ===================================================================================
// ---- data parallel: x "abk", label and loss "ab1", softmax_out "abk" -----------------------------
constexpr auto dp = ce::infer_forward({spec({8, 16, 1000}, {0, -1, -1}), spec({8, 16, 1}, {-1, -1, -1})});
static_assert(dp.inputs.size() == 2 && dp.outputs.size() == 2);
static_assert(dp.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(dp.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(dp.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});  // softmax_out
static_assert(dp.outputs[1].dims_mapping() == dims_mapping{0, -1, -1});  // loss
static_assert(!dp.outputs[0].is_partial() && !dp.outputs[1].is_partial() && dp.outputs[1].process_mesh() == mesh);

// ---- the label contributes its dims too ------------------------------------------------------------------
constexpr auto both = ce::infer_forward({spec({8, 16, 1000}, {-1, 1, -1}), spec({8, 16, 1}, {0, -1, -1})});
static_assert(both.inputs[0].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(both.inputs[1].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(both.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(both.outputs[1].dims_mapping() == dims_mapping{0, 1, -1});

// ---- vocabulary parallel: the class axis sharded; the loss is complete, not partial ----------------------
constexpr auto vocab = ce::infer_forward({spec({8, 1000}, {0, 1}), spec({8, 1}, {-1, -1})});
static_assert(vocab.inputs[0].dims_mapping() == dims_mapping{0, 1});
static_assert(vocab.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(vocab.outputs[0].dims_mapping() == dims_mapping{0, 1});
static_assert(vocab.outputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(!vocab.outputs[1].is_partial());

// ---- class axis first (replicated); the label's size-1 class dim is never sharded -------------------------
constexpr auto first = ce::infer_forward({spec({1000, 8}, {-1, 0}), spec({1, 8}, {1, -1})}, {.axis = 0});
static_assert(first.inputs[0].dims_mapping() == dims_mapping{-1, 0});
static_assert(first.inputs[1].dims_mapping() == dims_mapping{-1, 0});
static_assert(first.outputs[0].dims_mapping() == dims_mapping{-1, 0});
static_assert(first.outputs[1].dims_mapping() == dims_mapping{-1, 0});
constexpr auto middle = ce::infer_forward({spec({4, 10, 8}, {1, -1, 0}), spec({4, -1, 8}, {-1, -1, -1})}, {.axis = -2});
static_assert(middle.inputs[1].dims_mapping() == dims_mapping{1, -1, 0});
static_assert(middle.outputs[1].dims_mapping() == dims_mapping{1, -1, 0});

// ---- soft labels: the label has x's letters ------------------------------------------------------------
constexpr auto soft = ce::infer_forward({spec({8, 10}, {-1, -1}), spec({8, 10}, {0, -1})}, {.soft_label = true});
static_assert(soft.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(soft.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(soft.outputs[0].dims_mapping() == dims_mapping{0, -1});

// ---- without softmax: softmax_out is rank 0 ---------------------------------------------------------------
constexpr auto no_softmax = ce::infer_forward({spec({8, 10}, {0, -1}), spec({8, 1}, {-1, -1})}, {.use_softmax = false});
static_assert(no_softmax.outputs[0].dims_mapping().empty());
static_assert(no_softmax.outputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(no_softmax.inputs[0].dims_mapping() == dims_mapping{0, -1});

// ---- partial inputs must be reduced first -------------------------------------------------------------------
constexpr auto from_partial =
    ce::infer_forward({partial_spec({8, 10}, {-1, 1}, {0}), partial_spec({8, 1}, {-1, -1}, {1})});
static_assert(!from_partial.inputs[0].is_partial() && !from_partial.inputs[1].is_partial());
static_assert(from_partial.inputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(!from_partial.outputs[0].is_partial() && !from_partial.outputs[1].is_partial());

// ---- conflicts (merge_conflicts = true) -----------------------------------------------------------------------
constexpr auto x_first = ce::infer_forward({spec({8, 16, 10}, {0, -1, -1}), spec({8, 16, 1}, {-1, 0, -1})});
static_assert(x_first.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});  // the label's 'b' loses mesh dim 0
static_assert(x_first.outputs[1].dims_mapping() == dims_mapping{0, -1, -1});
constexpr auto two_dims = ce::try_infer_forward({spec({8, 16, 10}, {0, -1, -1}), spec({8, 16, 1}, {1, -1, -1})});
static_assert(two_dims.kind() == error_kind::unimplemented && two_dims.error().op == "cross_entropy_with_softmax");
static_assert(two_dims.error().values == vals{'a', 1, 0, 0});

// ---- errors: a sharded class axis outside the c_softmax_with_cross_entropy layout ------------------------------
constexpr auto soft_sharded =
    ce::try_infer_forward({spec({8, 10}, {0, 1}), spec({8, 10}, {-1, -1})}, {.soft_label = true});
static_assert(soft_sharded.kind() == error_kind::invalid_argument && soft_sharded.error().values == vals{1, 1, 0, 0});
// A soft label sharded on the class axis is caught as well (it would shard x's class axis).
constexpr auto soft_label_sharded =
    ce::try_infer_forward({spec({8, 10}, {-1, -1}), spec({8, 10}, {-1, 0})}, {.soft_label = true});
static_assert(soft_label_sharded.kind() == error_kind::invalid_argument &&
              soft_label_sharded.error().values == vals{1, 0, 0, 0});
constexpr auto not_last = ce::try_infer_forward({spec({10, 8}, {1, -1}), spec({1, 8}, {-1, -1})}, {.axis = 0});
static_assert(not_last.kind() == error_kind::invalid_argument && not_last.error().values == vals{0, 1, 1, 0});
constexpr auto without_softmax =
    ce::try_infer_forward({spec({8, 10}, {-1, 1}), spec({8, 1}, {-1, -1})}, {.use_softmax = false});
static_assert(without_softmax.kind() == error_kind::invalid_argument &&
              without_softmax.error().values == vals{1, 1, 0, 0});

// ---- errors: operands and attributes --------------------------------------------------------------------------
constexpr auto label_rank = ce::try_infer_forward({spec({8, 10}, {-1, -1}), spec({8}, {-1})});
static_assert(label_rank.kind() == error_kind::invalid_argument && label_rank.error().values == vals{2, 1, 0, 0});
constexpr auto label_classes = ce::try_infer_forward({spec({8, 10}, {-1, -1}), spec({8, 2}, {-1, -1})});
static_assert(label_classes.kind() == error_kind::invalid_argument && label_classes.error().values == vals{1, 2, 0, 0});
static_assert(ce::try_infer_forward({spec({8, 10}, {-1, -1}), spec({8, -1}, {-1, -1})}).ok());  // unknown size
constexpr auto axis_high = ce::try_infer_forward({spec({8, 10}, {-1, -1}), spec({8, 1}, {-1, -1})}, {.axis = 2});
static_assert(axis_high.kind() == error_kind::invalid_argument && axis_high.error().values == vals{2, 2, 0, 0});
constexpr auto axis_low = ce::try_infer_forward({spec({8, 10}, {-1, -1}), spec({8, 1}, {-1, -1})}, {.axis = -3});
static_assert(axis_low.kind() == error_kind::invalid_argument && axis_low.error().values == vals{-3, 2, 0, 0});
static_assert(ce::try_infer_forward({spec({}, {}), spec({}, {})}).error().values == vals{-1, 0, 0, 0});  // rank 0
constexpr auto one_input = ce::try_infer_forward({spec({8, 10}, {-1, -1})});
static_assert(one_input.kind() == error_kind::invalid_argument && one_input.error().values == vals{2, 1, 0, 0});
static_assert(!ce::try_infer_forward({spec({8, 10}, {-1, -1}), spec({8, 1}, {-1, -1}), spec({8, 1}, {-1, -1})}));
static_assert(!ce::try_infer_forward({spec({8, 10}, {-1, -1}), dist_tensor_spec({8, 1}, process_mesh({6}))}));
static_assert(!constant_evaluates<[] {
  return ce::infer_forward({spec({10, 8}, {1, -1}), spec({1, 8}, {-1, -1})}, {.axis = 0});
}>);

// ==== backward ==================================================================================
constexpr dist_tensor_spec x = spec({8, 16, 1000}, {-1, -1, -1});
constexpr dist_tensor_spec label = spec({8, 16, 1}, {-1, -1, -1});

// ---- softmax_out and loss are merged; x and the label take the merged map -------------------------------------
constexpr auto back = ce::infer_backward({x, label}, {spec({8, 16, 1000}, {0, -1, 1}), spec({8, 16, 1}, {-1, -1, -1})});
static_assert(back.inputs.size() == 2 && back.outputs.size() == 2);
static_assert(back.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(back.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(back.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(back.outputs[1].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(!back.inputs[0].is_partial() && !back.inputs[1].is_partial());

constexpr auto from_loss = ce::infer_backward({spec({8, 16, 1000}, {0, 1, -1}), label},
                                              {spec({8, 16, 1000}, {-1, -1, -1}), spec({8, 16, 1}, {1, 0, -1})});
static_assert(from_loss.inputs[0].dims_mapping() == dims_mapping{1, 0, -1});  // x's own mapping does not count
static_assert(from_loss.inputs[1].dims_mapping() == dims_mapping{1, 0, -1});
static_assert(from_loss.outputs[0].dims_mapping() == dims_mapping{1, 0, -1});

// ---- conflicts --------------------------------------------------------------------------------------------------
constexpr auto softmax_first =
    ce::infer_backward({x, label}, {spec({8, 16, 1000}, {0, -1, -1}), spec({8, 16, 1}, {-1, 0, -1})});
static_assert(softmax_first.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(softmax_first.outputs[1].dims_mapping() == dims_mapping{0, -1, -1});
constexpr auto back_two_dims =
    ce::try_infer_backward({x, label}, {spec({8, 16, 1000}, {0, -1, -1}), spec({8, 16, 1}, {1, -1, -1})});
static_assert(back_two_dims.kind() == error_kind::unimplemented && back_two_dims.error().values == vals{'a', 1, 0, 0});

// ---- without softmax: the class axis is absent from the outputs, so replicated -------------------------------
constexpr auto back_no_softmax = ce::infer_backward({spec({8, 10}, {-1, 1}), spec({8, 1}, {-1, -1})},
                                                    {spec({}, {}), spec({8, 1}, {0, -1})}, {.use_softmax = false});
static_assert(back_no_softmax.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(back_no_softmax.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(back_no_softmax.outputs[0].dims_mapping().empty());
static_assert(back_no_softmax.outputs[1].dims_mapping() == dims_mapping{0, -1});

// ---- soft labels, a negative non-last axis, a partial loss -----------------------------------------------------
constexpr auto back_soft = ce::infer_backward({spec({8, 10}, {-1, -1}), spec({8, 10}, {-1, -1})},
                                              {spec({8, 10}, {1, -1}), spec({8, 1}, {-1, -1})}, {.soft_label = true});
static_assert(back_soft.inputs[1].dims_mapping() == dims_mapping{1, -1});
constexpr auto back_axis0 = ce::infer_backward({spec({10, 8}, {-1, -1}), spec({1, 8}, {-1, -1})},
                                               {spec({10, 8}, {-1, 1}), spec({1, 8}, {-1, -1})}, {.axis = -2});
static_assert(back_axis0.inputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(back_axis0.inputs[1].dims_mapping() == dims_mapping{-1, 1});
static_assert(back_axis0.outputs[1].dims_mapping() == dims_mapping{-1, 1});
constexpr auto back_partial =
    ce::infer_backward({x, label}, {spec({8, 16, 1000}, {-1, -1, 1}), partial_spec({8, 16, 1}, {-1, -1, -1}, {0})});
static_assert(!back_partial.outputs[1].is_partial() && !back_partial.inputs[0].is_partial());
static_assert(back_partial.outputs[1].dims_mapping() == dims_mapping{-1, -1, -1});
static_assert(back_partial.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1});

// ---- forward then backward gives forward's inputs ----------------------------------------------------------------
constexpr auto vocab_back =
    ce::infer_backward({spec({8, 1000}, {0, 1}), spec({8, 1}, {-1, -1})},
                       {dist_tensor_spec({8, 1000}, vocab.outputs[0]), dist_tensor_spec({8, 1}, vocab.outputs[1])});
static_assert(vocab_back.inputs[0] == vocab.inputs[0] && vocab_back.inputs[1] == vocab.inputs[1]);

// ---- errors -------------------------------------------------------------------------------------------------
constexpr auto back_not_last = ce::try_infer_backward({spec({10, 8}, {-1, -1}), spec({1, 8}, {-1, -1})},
                                                      {spec({10, 8}, {1, -1}), spec({1, 8}, {-1, -1})}, {.axis = 0});
static_assert(back_not_last.kind() == error_kind::invalid_argument && back_not_last.error().values == vals{0, 1, 1, 0});
constexpr auto back_soft_sharded =
    ce::try_infer_backward({spec({8, 10}, {-1, -1}), spec({8, 10}, {-1, -1})},
                           {spec({8, 10}, {-1, 0}), spec({8, 1}, {-1, -1})}, {.soft_label = true});
static_assert(back_soft_sharded.kind() == error_kind::invalid_argument &&
              back_soft_sharded.error().values == vals{1, 0, 0, 0});
constexpr auto one_output = ce::try_infer_backward({x, label}, {spec({8, 16, 1000}, {-1, -1, -1})});
static_assert(one_output.kind() == error_kind::invalid_argument && one_output.error().values == vals{2, 1, 0, 0});
constexpr auto softmax_rank =
    ce::try_infer_backward({x, label}, {spec({8, 16}, {-1, -1}), spec({8, 16, 1}, {-1, -1, -1})});
static_assert(softmax_rank.kind() == error_kind::invalid_argument && softmax_rank.error().values == vals{3, 2, 0, 0});
constexpr auto softmax_rank0 = ce::try_infer_backward(
    {x, label}, {spec({8, 16, 1000}, {-1, -1, -1}), spec({8, 16, 1}, {-1, -1, -1})}, {.use_softmax = false});
static_assert(softmax_rank0.kind() == error_kind::invalid_argument && softmax_rank0.error().values == vals{0, 3, 0, 0});
constexpr auto loss_rank =
    ce::try_infer_backward({x, label}, {spec({8, 16, 1000}, {-1, -1, -1}), spec({8, 16}, {-1, -1})});
static_assert(loss_rank.kind() == error_kind::invalid_argument && loss_rank.error().values == vals{3, 2, 0, 0});
static_assert(!ce::try_infer_backward({x}, {spec({8, 16, 1000}, {-1, -1, -1}), spec({8, 16, 1}, {-1, -1, -1})}));
static_assert(!ce::try_infer_backward({x, spec({8, 16}, {-1, -1})},
                                      {spec({8, 16, 1000}, {-1, -1, -1}), spec({8, 16, 1}, {-1, -1, -1})}));
static_assert(!constant_evaluates<[] { return ce::infer_backward({x, label}, {spec({8, 16, 1000}, {-1, -1, -1})}); }>);

// ==== phi ============================================================================================
namespace phi_cases {
constexpr auto phi = semantics::phi;
constexpr process_mesh m24({2, 4});
constexpr dist_tensor_spec s24(tensor_shape shape, dims_mapping dm) { return {shape, {m24, dm}}; }
// Paddle's test_cross_entropy_with_softmax_rule (mesh [2, 4]) agrees under phi
constexpr auto f1 = ce::infer_forward({s24({8, 1024, 50304}, {1, -1, -1}), s24({8, 1024, 1}, {-1, 0, -1})}, {}, phi);
static_assert(f1.inputs[0].dims_mapping() == dims_mapping{1, 0, -1} && f1.outputs[1].dims_mapping() == dims_mapping{1, 0, -1});
constexpr auto f2 = ce::infer_forward({s24({8, 1024, 50304}, {-1, -1, 0}), s24({8, 1024, 1}, {1, -1, -1})}, {}, phi);
static_assert(f2.inputs[0].dims_mapping() == dims_mapping{1, -1, 0} && f2.outputs[0].dims_mapping() == dims_mapping{1, -1, 0} &&
              f2.outputs[1].dims_mapping() == dims_mapping{1, -1, -1});
static_assert(!ce::try_infer_forward({s24({8, 1024, 50304}, {-1, -1, 0}), s24({8, 1024, 50304}, {1, -1, -1})},
                                     {.soft_label = true}, phi));
// backward: a class axis the layout cannot keep sharded is replicated under phi (an error under fluid)
constexpr auto soft_back = ce::try_infer_backward({s24({8, 1024, 50304}, {-1, -1, -1}), s24({8, 1024, 50304}, {-1, -1, -1})},
                                                  {s24({8, 1024, 50304}, {1, -1, 0}), s24({8, 1024, 1}, {1, -1, -1})},
                                                  {.soft_label = true}, phi);
static_assert(soft_back && soft_back->inputs[0].dims_mapping() == dims_mapping{1, -1, -1} &&
              soft_back->outputs[0].dims_mapping() == dims_mapping{1, -1, -1});
static_assert(!ce::try_infer_backward({s24({8, 1024, 50304}, {-1, -1, -1}), s24({8, 1024, 50304}, {-1, -1, -1})},
                                      {s24({8, 1024, 50304}, {1, -1, 0}), s24({8, 1024, 1}, {1, -1, -1})},
                                      {.soft_label = true}));
constexpr auto hard_back = ce::infer_backward({s24({8, 1024, 50304}, {-1, -1, -1}), s24({8, 1024, 1}, {-1, -1, -1})},
                                              {s24({8, 1024, 50304}, {-1, -1, 0}), s24({8, 1024, 1}, {1, -1, -1})}, {}, phi);
static_assert(hard_back.inputs[0].dims_mapping() == dims_mapping{1, -1, 0} &&
              hard_back.inputs[1].dims_mapping() == dims_mapping{1, -1, -1});
}  // namespace phi_cases

// ==== cross_entropy_with_softmax_grad (label, softmax, loss_grad) -> x_grad =======================
namespace grad_cases {
using ceg = ctspmd::rules::cross_entropy_with_softmax_grad;
using ctspmd_test::co;
using ctspmd_test::is;
static_assert(ceg::input_count == operand_count{3} && ceg::output_count == operand_count{1});
// data parallel: hard labels, the batch dims merged
constexpr auto g1 = ceg::infer_forward({spec({8, 16, 1}, {0, -1, -1}), spec({8, 16, 1000}, {-1, 1, -1}),
                                        spec({8, 16, 1}, {-1, -1, -1})});
static_assert(g1.inputs[0].dims_mapping() == dims_mapping{0, 1, -1} && g1.inputs[1].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(g1.inputs[2].dims_mapping() == dims_mapping{0, 1, -1} && g1.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});
// vocabulary parallel (hard labels, the class axis last, use_softmax): softmax's class shard kept
constexpr auto gv = ceg::infer_forward({spec({8, 16, 1}, {0, -1, -1}), spec({8, 16, 1002}, {-1, -1, 1}),
                                        spec({8, 16, 1}, {0, -1, -1})});
static_assert(gv.inputs[1].dims_mapping() == dims_mapping{0, -1, 1} && gv.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
// ... the grad of forward's vocabulary-parallel layout has that layout
constexpr auto fv = ce::infer_forward({spec({8, 16, 1002}, {0, -1, 1}), spec({8, 16, 1}, {-1, -1, -1})});
static_assert(ceg::infer_forward({dist_tensor_spec({8, 16, 1}, fv.inputs[1]), dist_tensor_spec({8, 16, 1002}, fv.outputs[0]),
                                  dist_tensor_spec({8, 16, 1}, fv.outputs[1])})
                  .outputs[0] == fv.inputs[0]);
// the class axis replicated elsewhere: soft labels, a class axis not last, no softmax
constexpr auto gs = ceg::infer_forward({spec({8, 1002}, {0, 1}), spec({8, 1002}, {-1, 1}), spec({8, 1}, {-1, -1})},
                                       {.soft_label = true});
static_assert(gs.inputs[0].dims_mapping() == dims_mapping{0, -1} && gs.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(gs.outputs[0].dims_mapping() == dims_mapping{0, -1});
constexpr auto ga = ceg::infer_forward({spec({1, 8}, {-1, 0}), spec({1002, 8}, {1, -1}), spec({1, 8}, {-1, -1})},
                                       {.axis = 0});
static_assert(ga.outputs[0].dims_mapping() == dims_mapping{-1, 0} && ga.inputs[1].dims_mapping() == dims_mapping{-1, 0});
constexpr auto gu = ceg::infer_forward({spec({8, 1}, {0, -1}), spec({8, 1002}, {-1, 1}), spec({8, 1}, {-1, -1})},
                                       {.use_softmax = false});
static_assert(gu.outputs[0].dims_mapping() == dims_mapping{0, -1});
// without use_softmax, softmax may be absent: it comes back as given
constexpr auto gn = ceg::infer_forward({spec({8, 1002}, {0, 1}), spec({}, {}), spec({8, 1}, {-1, -1})},
                                       {.use_softmax = false, .soft_label = true});
static_assert(gn.inputs[1].rank() == 0 && gn.outputs[0].dims_mapping() == dims_mapping{0, -1});
// partial inputs come back whole; x_grad is not partial
constexpr auto gp = ceg::infer_forward({spec({8, 1}, {0, -1}), spec({8, 6}, {0, -1}), partial_spec({8, 1}, {0, -1}, {1})});
static_assert(!gp.inputs[2].is_partial() && !gp.outputs[0].is_partial());
// fluid refuses one axis on two mesh dims; phi co-shards it (dropping what does not divide)
static_assert(ceg::try_infer_forward({spec({12, 1}, {0, -1}), spec({12, 6}, {1, -1}), spec({12, 1}, {-1, -1})}).kind() ==
              error_kind::unimplemented);
static_assert(is(ceg::infer_forward({spec({12, 1}, {0, -1}), spec({12, 6}, {1, -1}), spec({12, 1}, {-1, -1})}, {},
                                    semantics::phi)
                     .outputs[0],
                 {{1, 0}, {}}));  // the union puts the mesh dim with more shards first
constexpr process_mesh m3({2, 2, 2});
static_assert(is(ceg::infer_forward({co(m3, {8, 1}, {{}, {}}), co(m3, {8, 16}, {{1, 0}, {2}}), co(m3, {8, 1}, {{1, 0}, {}})})
                     .outputs[0],
                 {{1, 0}, {2}}));
// errors
constexpr auto ge = ceg::try_infer_forward({spec({8, 1}, {0, -1}), spec({8, 6, 2}, {0, -1, -1}), spec({8, 1}, {0, -1})});
static_assert(ge.kind() == error_kind::invalid_argument && ge.error().op == "cross_entropy_with_softmax_grad" &&
              ge.error().values == vals{2, 2, 3, 0});
static_assert(ceg::try_infer_forward({spec({8, 2}, {0, -1}), spec({8, 6}, {0, -1}), spec({8, 1}, {0, -1})}).error().values ==
              vals{1, 2, 0, 0});  // a hard label of size 2
static_assert(ceg::try_infer_forward({spec({8, 1}, {0, -1}), spec({8, 6}, {0, -1}), spec({8, 6}, {0, -1})}).error().values ==
              vals{6, 1, 0, 0});  // loss_grad's class dim
static_assert(ceg::try_infer_forward({spec({8, 1}, {0, -1}), spec({4, 6}, {0, -1}), spec({8, 1}, {0, -1})}).error().values ==
              vals{0, 4, 8, 0});
static_assert(ceg::try_infer_forward({spec({8, 5}, {0, -1}), spec({8, 6}, {0, -1}), spec({8, 1}, {0, -1})},
                                     {.soft_label = true})
                  .error()
                  .values == vals{1, 6, 5, 0});
static_assert(!ceg::try_infer_forward({spec({8, 1}, {0, -1}), spec({8, 6}, {0, -1}), spec({8, 1}, {0, -1})}, {.axis = 2}));
static_assert(!ceg::try_infer_forward({spec({8, 1}, {0, -1}), spec({}, {}), spec({8, 1}, {0, -1})}));  // softmax needed
static_assert(!ceg::try_infer_forward({spec({}, {}), spec({}, {}), spec({}, {})}, {.use_softmax = false}));
static_assert(ceg::try_infer_backward({spec({8, 1}, {0, -1}), spec({8, 6}, {0, -1}), spec({8, 1}, {0, -1})},
                                      {spec({8, 6}, {0, -1})})
                  .kind() == error_kind::unimplemented);
}  // namespace grad_cases
