// swiglu(x, y?) and swiglu_grad (phi-semantics.md section 2: "y None -> unary rule on x (only warns
// if x's last dim is sharded ...); else binary"; we replicate x's last dim without y).
#include <ctspmd/registry/rules_by_name.hpp>
#include <ctspmd/rules/swiglu.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 2});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr dist_tensor_spec absent = spec({}, {});

static_assert(std::is_same_v<rule_for<"swiglu">, swiglu> && std::is_same_v<rule_for<"swiglu_grad">, swiglu_grad>);

// ==== with y: binary elementwise ====================================================================
constexpr auto f1 = swiglu::infer_forward({spec({8, 16}, {0, -1}), spec({8, 16}, {-1, 1})});
static_assert(f1.inputs[0].dims_mapping() == dims_mapping{0, 1} && f1.inputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(f1.outputs[0].dims_mapping() == dims_mapping{0, 1});
static_assert(is(swiglu::infer_forward({spec({8, 16}, {0, -1}), spec({8, 16}, {1, -1})}, {}, semantics::phi).outputs[0],
                 {{0, 1}, {}}));
static_assert(swiglu::try_infer_forward({spec({8, 16}, {0, -1}), spec({8, 16}, {1, -1})}).kind() == error_kind::unimplemented);

// ==== without y: x's last dim replicated (phi would keep it and compute a wrong result) =================
constexpr auto f2 = swiglu::infer_forward({spec({8, 16}, {0, 1}), absent});
static_assert(f2.inputs.size() == 2 && f2.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(f2.inputs[1].dims_mapping() == dims_mapping{} && f2.inputs[1].rank() == 0);  // absent, as given
static_assert(f2.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(swiglu::infer_forward({spec({8, 16}, {0, 1})}) == swiglu::infer_forward({spec({8, 16}, {0, 1})}, {}, semantics::phi));
static_assert(swiglu::infer_forward({spec({8, 16}, {0, 1})}).inputs.size() == 1);
static_assert(is(swiglu::infer_forward({co(mesh, {8, 4, 16}, {{}, {1, 0}, {}}), absent}, {}, semantics::phi).outputs[0],
                 {{}, {1, 0}, {}}));
// backward without y: out [8, 8] from x [8, 16]
constexpr auto b2 = swiglu::infer_backward({spec({8, 16}, {-1, -1}), absent}, {spec({8, 8}, {1, 0})});
static_assert(b2.inputs[0].dims_mapping() == dims_mapping{1, -1} && b2.outputs[0].dims_mapping() == dims_mapping{1, -1});
// backward with y
static_assert(swiglu::infer_backward({spec({8, 16}, {-1, -1}), spec({8, 16}, {-1, -1})}, {spec({8, 16}, {1, 0})})
                  .inputs[1].dims_mapping() == dims_mapping{1, 0});

// ==== errors ========================================================================================
constexpr auto e1 = swiglu::try_infer_forward({spec({8, 15}, {-1, -1})});
static_assert(e1.kind() == error_kind::invalid_argument && e1.error().values[0] == 15);
static_assert(swiglu::try_infer_forward({absent}).kind() == error_kind::invalid_argument);
constexpr auto e2 = swiglu::try_infer_backward({spec({8, 16}, {-1, -1})}, {spec({8, 16}, {-1, -1})});
static_assert(e2.kind() == error_kind::invalid_argument && e2.error().values[0] == 16 && e2.error().values[2] == 8);
static_assert(swiglu::try_infer_backward({spec({8, 16}, {-1, -1})}, {spec({8}, {-1})}).kind() == error_kind::invalid_argument);

// ==== grad ==========================================================================================
// with y: binary grad, everything follows out_grad
constexpr auto g1 = swiglu_grad::infer_forward({spec({8, 16}, {-1, -1}), spec({8, 16}, {1, -1}), spec({8, 16}, {0, 1})});
static_assert(g1.inputs[0].dims_mapping() == dims_mapping{0, 1} && g1.inputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(g1.outputs[0].dims_mapping() == dims_mapping{0, 1} && g1.outputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(!g1.outputs[0].is_partial() && !g1.outputs[1].is_partial());
// without y: out_grad [8, 8], its last dim replicated; y and y_grad absent
constexpr auto g2 = swiglu_grad::infer_forward({spec({8, 16}, {-1, -1}), absent, spec({8, 8}, {1, 0})});
static_assert(g2.inputs[0].dims_mapping() == dims_mapping{1, -1} && g2.inputs[2].dims_mapping() == dims_mapping{1, -1});
static_assert(g2.outputs[0].dims_mapping() == dims_mapping{1, -1} && g2.outputs[1].rank() == 0);
static_assert(swiglu_grad::try_infer_forward({spec({8, 16}, {-1, -1}), absent, spec({8, 16}, {-1, -1})}).error().values[0] == 16);
static_assert(swiglu_grad::try_infer_backward({spec({8}, {-1}), absent, spec({4}, {-1})}, {spec({8}, {-1}), absent}).kind() ==
              error_kind::unimplemented);
