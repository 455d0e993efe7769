// dropout, dropout_grad, fused_dropout_add, fused_dropout_add_grad (phi-semantics.md section 2:
// "dropout: forward = unary, mask = out, seed_tensor must be None (InvalidArgument); grad = binary
// (mask, out_grad). fused_dropout_add: out = binary(x, y), but x and y are returned unmerged
// [we merge them]; seed_offset [2] is replicated. Grad: both grads = out_grad.").
#include <ctspmd/registry/rules_by_name.hpp>
#include <ctspmd/rules/dropout.hpp>

#include <ctspmd/registry/attribute_reflection.hpp>

#include <boost/hana/at_key.hpp>
#include <boost/hana/string.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 2});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr dist_tensor_spec absent = spec({}, {});
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

static_assert(dropout::attributes{}.p == 0.5 && dropout::attributes{}.mode == "upscale_in_train");
static_assert(boost::hana::at_key(dropout::attributes{}, BOOST_HANA_STRING("fix_seed")) == false);
static_assert(std::is_same_v<rule_for<"dropout">, dropout> && std::is_same_v<rule_for<"fused_dropout_add_grad">, fused_dropout_add_grad>);

// ==== dropout =======================================================================================
constexpr auto d1 = dropout::infer_forward({partial_spec({8, 4}, {0, -1}, 1), absent});
static_assert(d1.inputs.size() == 2 && d1.outputs.size() == 2);
static_assert(d1.inputs[0].dims_mapping() == dims_mapping{0, -1} && !d1.inputs[0].is_partial());
static_assert(d1.inputs[1].rank() == 0);
static_assert(d1.outputs[0].dims_mapping() == dims_mapping{0, -1} && d1.outputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(!d1.outputs[0].is_partial() && !d1.outputs[1].is_partial());
static_assert(dropout::infer_forward({spec({8, 4}, {0, -1})}).inputs.size() == 1);
static_assert(is(dropout::infer_forward({co(mesh, {8, 4}, {{1, 0}, {}})}, {}, semantics::phi).outputs[1], {{1, 0}, {}}));
// backward: out and mask merged
constexpr auto db = dropout::infer_backward({spec({8, 4}, {-1, -1}), absent}, {spec({8, 4}, {0, -1}), spec({8, 4}, {-1, 1})});
static_assert(db.inputs[0].dims_mapping() == dims_mapping{0, 1} && db.outputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(is(dropout::infer_backward({spec({8, 4}, {-1, -1})}, {spec({8, 4}, {0, -1}), spec({8, 4}, {1, -1})}, {},
                                         semantics::phi).inputs[0],
                 {{0, 1}, {}}));
// errors: a seed tensor; outputs of another shape
constexpr auto de1 = dropout::try_infer_forward({spec({8, 4}, {0, -1}), spec({1}, {-1})});
static_assert(de1.kind() == error_kind::invalid_argument && de1.error().values[0] == 1 && de1.error().op == "dropout");
constexpr auto de2 = dropout::try_infer_backward({spec({8, 4}, {-1, -1})}, {spec({8, 4}, {0, -1}), spec({8, 5}, {-1, -1})});
static_assert(de2.kind() == error_kind::invalid_argument && de2.error().values[0] == 1 && de2.error().values[1] == 5);

// ==== dropout_grad ==================================================================================
constexpr auto dg = dropout_grad::infer_forward({spec({8, 4}, {1, -1}), partial_spec({8, 4}, {-1, 0}, 1)});
static_assert(dg.inputs[0].dims_mapping() == dims_mapping{-1, 0} && dg.inputs[1].dims_mapping() == dims_mapping{-1, 0});
static_assert(!dg.inputs[1].is_partial() && dg.outputs[0].dims_mapping() == dims_mapping{-1, 0} && !dg.outputs[0].is_partial());
static_assert(dropout_grad::try_infer_forward({spec({8, 3}, {-1, -1}), spec({8, 4}, {-1, -1})}).kind() == error_kind::invalid_argument);

// ==== fused_dropout_add =============================================================================
constexpr auto fa = fused_dropout_add::infer_forward({spec({8, 4}, {0, -1}), spec({8, 4}, {-1, 1}), absent});
static_assert(fa.inputs.size() == 3 && fa.outputs.size() == 2);
static_assert(fa.inputs[0].dims_mapping() == dims_mapping{0, 1} && fa.inputs[1].dims_mapping() == dims_mapping{0, 1});  // merged
static_assert(fa.outputs[0].dims_mapping() == dims_mapping{0, 1} && fa.outputs[1].dims_mapping() == dims_mapping{-1});
static_assert(is(fused_dropout_add::infer_forward({spec({8, 4}, {0, -1}), spec({8, 4}, {1, -1})}, {}, semantics::phi).outputs[0],
                 {{0, 1}, {}}));
constexpr auto fb = fused_dropout_add::infer_backward({spec({8, 4}, {-1, -1}), spec({8, 4}, {-1, -1})},
                                                      {spec({8, 4}, {-1, 0}), spec({2}, {1})});
static_assert(fb.inputs[0].dims_mapping() == dims_mapping{-1, 0} && fb.inputs[1].dims_mapping() == dims_mapping{-1, 0});
static_assert(fb.outputs[1].dims_mapping() == dims_mapping{-1});
constexpr auto fe1 = fused_dropout_add::try_infer_forward({spec({8, 4}, {-1, -1}), spec({4}, {-1})});
static_assert(fe1.kind() == error_kind::invalid_argument && fe1.error().values[0] == 1 && fe1.error().values[1] == 2);
constexpr auto fe2 = fused_dropout_add::try_infer_forward({spec({8, 4}, {-1, -1}), spec({8, 4}, {-1, -1}), spec({2}, {-1})});
static_assert(fe2.kind() == error_kind::invalid_argument && fe2.error().values[0] == 1);
static_assert(fused_dropout_add::try_infer_forward({spec({8, 4}, {-1, -1}), spec({8, 2}, {-1, -1})}).error().values[0] == 2);

// ==== fused_dropout_add_grad ==========================================================================
constexpr auto fg = fused_dropout_add_grad::infer_forward({spec({2}, {0}), partial_spec({8, 4}, {1, -1}, 0)});
static_assert(fg.inputs[0].dims_mapping() == dims_mapping{-1} && fg.inputs[1].dims_mapping() == dims_mapping{1, -1});
static_assert(!fg.inputs[1].is_partial() && fg.outputs[0].dims_mapping() == dims_mapping{1, -1} && !fg.outputs[1].is_partial());
static_assert(fused_dropout_add_grad::try_infer_forward({spec({2, 1}, {-1, -1}), spec({8}, {-1})}).error().values[0] == 2);
static_assert(fused_dropout_add_grad::try_infer_backward({spec({2}, {-1}), spec({8}, {-1})}, {spec({8}, {-1}), spec({8}, {-1})})
                  .kind() == error_kind::unimplemented);

// ==== Paddle's test_fused_dropout_add_rule.py (15a488a0): mesh [2, 4], x, y [2, 4] [0, -1] ===============
namespace paddle_cases {
constexpr process_mesh m24({2, 4});
constexpr dist_tensor_spec x{{2, 4}, {m24, {0, -1}}};
constexpr auto fwd = fused_dropout_add::infer_forward({x, x});
static_assert(fwd.inputs.size() == 2 && fwd.inputs[0].dims_mapping() == dims_mapping{0, -1} &&
              fwd.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(fwd.outputs[0].dims_mapping() == dims_mapping{0, -1} && fwd.outputs[1].dims_mapping() == dims_mapping{-1});
constexpr auto rev = fused_dropout_add::infer_backward({x, x}, {x, dist_tensor_spec({2}, {m24, {-1}})});
static_assert(rev.inputs[0].dims_mapping() == dims_mapping{0, -1} && rev.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(rev.outputs[0].dims_mapping() == dims_mapping{0, -1} && rev.outputs[1].dims_mapping() == dims_mapping{-1});
}  // namespace paddle_cases
