// layer_norm_grad (phi-semantics.md section 2: "Grad: AlignDimsSharding(x, mean, var, out_grad) on
// the first bna axes; scale_grad and bias_grad replicated with Partial(sum) on those mesh dims").
#include <ctspmd/registry/rules_by_name.hpp>
#include <ctspmd/rules/layer_norm_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::is;

static_assert(std::is_same_v<rule_for<"layer_norm_grad">, layer_norm_grad>);
static_assert(layer_norm_grad::attributes{}.begin_norm_axis == 1);

// ==== Paddle's C++ TEST(LayerNorm) grad cases (spmd_rule_test.cc): mesh [2, 2], x = out_grad [16, 32, 32]
namespace paddle_cases {
constexpr process_mesh mesh({2, 2});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr dist_tensor_spec x = spec({16, 32, 32}, {0, 1, -1});
template <semantics S>
constexpr bool case1() {
  const auto r = layer_norm_grad::infer_forward(
      {x, spec({32}, {0}), spec({32}, {0}), spec({16, 32}, {0, 1}), spec({16, 32}, {0, 1}), x},
      {.epsilon = 1.0, .begin_norm_axis = 2}, S);
  return r.inputs[0].dims_mapping() == dims_mapping{0, 1, -1} && r.inputs[1].dims_mapping() == dims_mapping{-1} &&
         r.inputs[2].dims_mapping() == dims_mapping{-1} && r.inputs[3].dims_mapping() == dims_mapping{0, 1} &&
         r.inputs[4].dims_mapping() == dims_mapping{0, 1} && r.inputs[5].dims_mapping() == dims_mapping{0, 1, -1} &&
         r.outputs[0].dims_mapping() == dims_mapping{0, 1, -1} && !r.outputs[0].is_partial() &&
         r.outputs[1].dims_mapping() == dims_mapping{-1} && r.outputs[1].partial_dims() == mesh_dims{0, 1} &&
         r.outputs[2].dims_mapping() == dims_mapping{-1} && r.outputs[2].partial_dims() == mesh_dims{0, 1};
}
static_assert(case1<semantics::fluid>() && case1<semantics::phi>());
template <semantics S>
constexpr bool case2() {
  const auto r = layer_norm_grad::infer_forward(
      {x, spec({32, 32}, {0, 1}), spec({32, 32}, {0, 1}), spec({16}, {0}), spec({16}, {0}), x},
      {.epsilon = 1.0, .begin_norm_axis = 1}, S);
  return r.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && r.inputs[1].dims_mapping() == dims_mapping{-1, -1} &&
         r.inputs[2].dims_mapping() == dims_mapping{-1, -1} && r.inputs[3].dims_mapping() == dims_mapping{0} &&
         r.inputs[4].dims_mapping() == dims_mapping{0} && r.inputs[5].dims_mapping() == dims_mapping{0, -1, -1} &&
         r.outputs[0].dims_mapping() == dims_mapping{0, -1, -1} &&
         r.outputs[1].dims_mapping() == dims_mapping{-1, -1} && r.outputs[1].partial_dims() == mesh_dims{0} &&
         r.outputs[2].dims_mapping() == dims_mapping{-1, -1} && r.outputs[2].partial_dims() == mesh_dims{0};
}
static_assert(case2<semantics::fluid>() && case2<semantics::phi>());
}  // namespace paddle_cases

constexpr process_mesh mesh({2, 2, 2});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr dist_tensor_spec absent = spec({}, {});
constexpr dist_tensor_spec sb = spec({16}, {-1});

// absent scale and bias come back as given, and so do their gradients
constexpr auto a1 = layer_norm_grad::infer_forward(
    {spec({8, 16}, {0, -1}), absent, absent, spec({8}, {0}), spec({8}, {0}), spec({8, 16}, {0, -1})});
static_assert(a1.inputs[1].rank() == 0 && a1.inputs[2].rank() == 0 && a1.outputs[1].rank() == 0 && a1.outputs[2].rank() == 0);
static_assert(a1.outputs[0].dims_mapping() == dims_mapping{0, -1});
// phi: disagreeing operands aligned by cost; a co-sharded leading dim kept when all agree
constexpr auto a2 = layer_norm_grad::infer_forward(
    {spec({8, 4, 16}, {-1, -1, 2}), sb, sb, spec({8, 4}, {1, -1}), spec({8, 4}, {-1, -1}), spec({8, 4, 16}, {-1, 0, -1})},
    {.begin_norm_axis = 2}, semantics::phi);
static_assert(a2.inputs[0].dims_mapping() == dims_mapping{1, 0, -1} && a2.inputs[3].dims_mapping() == dims_mapping{1, 0});
static_assert(a2.outputs[1].partial_dims() == mesh_dims{0, 1} && a2.outputs[2].partial_dims() == mesh_dims{0, 1});
constexpr auto a3 = layer_norm_grad::infer_forward({co(mesh, {8, 16}, {{0, 1}, {}}), sb, sb, co(mesh, {8}, {{0, 1}}),
                                                    co(mesh, {8}, {{0, 1}}), co(mesh, {8, 16}, {{0, 1}, {}})},
                                                   {}, semantics::phi);
static_assert(is(a3.outputs[0], {{0, 1}, {}}) && a3.outputs[1].partial_dims() == mesh_dims{0, 1});
// fluid: first-wins; two mesh dims on one axis is a conflict
static_assert(layer_norm_grad::try_infer_forward(
                  {spec({8, 16}, {0, -1}), sb, sb, spec({8}, {1}), spec({8}, {-1}), spec({8, 16}, {-1, -1})})
                  .kind() == error_kind::unimplemented);

// errors
constexpr auto e1 = layer_norm_grad::try_infer_forward(
    {spec({8, 16}, {-1, -1}), sb, sb, spec({8}, {-1}), spec({8}, {-1}), spec({8, 16}, {-1, -1})}, {.begin_norm_axis = 2});
static_assert(e1.kind() == error_kind::invalid_argument && e1.error().values[0] == 2 && e1.error().values[1] == 2);
constexpr auto e2 = layer_norm_grad::try_infer_forward(
    {spec({8, 16}, {-1, -1}), sb, sb, spec({8, 16}, {-1, -1}), spec({8}, {-1}), spec({8, 16}, {-1, -1})});
static_assert(e2.kind() == error_kind::invalid_argument && e2.error().values[0] == 2 && e2.error().values[1] == 1);
constexpr auto e3 = layer_norm_grad::try_infer_forward(
    {spec({8, 16}, {-1, -1}), sb, sb, spec({8}, {-1}), spec({4}, {-1}), spec({8, 16}, {-1, -1})});
static_assert(e3.kind() == error_kind::invalid_argument && e3.error().values[0] == 4 && e3.error().values[2] == 8);
constexpr auto e4 = layer_norm_grad::try_infer_forward(
    {spec({8, 16}, {-1, -1}), sb, sb, spec({8}, {-1}), spec({8}, {-1}), spec({8, 8}, {-1, -1})});
static_assert(e4.kind() == error_kind::invalid_argument && e4.error().values[0] == 8 && e4.error().values[1] == 1);
static_assert(layer_norm_grad::try_infer_forward(
                  {spec({8, 16}, {-1, -1}), sb, sb, spec({8}, {-1}), spec({8}, {-1}), spec({8, 16}, {-1, -1})},
                  {.begin_norm_axis = -1})
                  .ok());
static_assert(layer_norm_grad::try_infer_backward({sb, sb, sb, sb, sb, sb}, {sb, sb, sb}).kind() == error_kind::unimplemented);
