// The elementwise grad rules (phi): unary (relu_grad, silu_grad, gelu_grad, pow_grad) and binary
// (add_grad, multiply_grad, divide_grad, ...). Cases from phi-semantics.md section 2 ("Grad(x,
// y, out_grad): out_grad's partial is cleaned; x, y and their grads take out_grad's mapping; ...
// that grad becomes Partial(sum) on those mesh dims").
#include <ctspmd/registry/rules_by_name.hpp>
#include <ctspmd/rules/elementwise_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 2, 2});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

// ==== registry ==================================================================================
static_assert(std::is_same_v<rule_for<"relu_grad">, elementwise_unary_grad>);
static_assert(std::is_same_v<rule_for<"silu_grad">, elementwise_unary_grad>);
static_assert(std::is_same_v<rule_for<"gelu_grad">, gelu_grad>);
static_assert(std::is_same_v<rule_for<"pow_grad">, pow_grad>);
static_assert(std::is_same_v<rule_for<"add_grad">, elementwise_binary_grad>);
static_assert(std::is_same_v<rule_for<"divide_grad">, elementwise_binary_grad>);

// ==== unary =====================================================================================
// relu_grad(out, out_grad): out and x_grad follow out_grad, whatever out was given as.
constexpr auto u1 = elementwise_unary_grad::infer_forward({spec({8, 4}, {1, -1}), partial_spec({8, 4}, {0, -1}, 2)});
static_assert(u1.inputs.size() == 2 && u1.outputs.size() == 1);
static_assert(u1.inputs[0].dims_mapping() == dims_mapping{0, -1} && !u1.inputs[0].is_partial());
static_assert(u1.inputs[1].dims_mapping() == dims_mapping{0, -1} && !u1.inputs[1].is_partial());  // partial cleaned
static_assert(u1.outputs[0].dims_mapping() == dims_mapping{0, -1} && !u1.outputs[0].is_partial());
// the same under phi (no merge is made)
static_assert(elementwise_unary_grad::infer_forward({spec({8, 4}, {1, -1}), partial_spec({8, 4}, {0, -1}, 2)}, {},
                                                    semantics::phi) == u1);
// silu_grad(x, out, out_grad), co-sharded out_grad: followed as it is
constexpr auto u2 = elementwise_unary_grad::infer_forward(
    {spec({8, 4}, {-1, -1}), spec({8, 4}, {-1, 0}), co(mesh, {8, 4}, {{2, 0}, {}})}, {}, semantics::phi);
static_assert(is(u2.inputs[0], {{2, 0}, {}}) && is(u2.inputs[1], {{2, 0}, {}}) && is(u2.outputs[0], {{2, 0}, {}}));
static_assert(gelu_grad::infer_forward({spec({8}, {-1}), spec({8}, {1})}, {.approximate = true}).outputs[0].dims_mapping() ==
              dims_mapping{1});
static_assert(pow_grad::infer_forward({spec({8}, {-1}), spec({8}, {1})}, {.y = 2.0}).inputs[0].dims_mapping() ==
              dims_mapping{1});
// errors: a forward tensor of another shape; reverse inference
constexpr auto ue1 = elementwise_unary_grad::try_infer_forward({spec({8}, {-1}), spec({8, 4}, {-1, -1})});
static_assert(ue1.kind() == error_kind::invalid_argument && ue1.error().values[0] == 0 && ue1.error().values[1] == 1);
constexpr auto ue2 = elementwise_unary_grad::try_infer_forward({spec({8, 3}, {-1, -1}), spec({8, 4}, {-1, -1})});
static_assert(ue2.kind() == error_kind::invalid_argument && ue2.error().values[1] == 3 && ue2.error().values[3] == 4);
static_assert(!elementwise_unary_grad::try_infer_forward({spec({8}, {-1})}));  // out_grad alone
static_assert(elementwise_unary_grad::try_infer_backward({spec({8}, {-1}), spec({8}, {0})}, {spec({8}, {0})}).kind() ==
              error_kind::unimplemented);

// ==== binary ====================================================================================
// same shapes: everything follows out_grad, nothing partial
constexpr auto b1 =
    elementwise_binary_grad::infer_forward({spec({8, 4}, {1, -1}), spec({8, 4}, {-1, 0}), spec({8, 4}, {0, 2})});
static_assert(b1.inputs.size() == 3 && b1.outputs.size() == 2);
static_assert(b1.inputs[0].dims_mapping() == dims_mapping{0, 2} && b1.inputs[1].dims_mapping() == dims_mapping{0, 2});
static_assert(b1.outputs[0].dims_mapping() == dims_mapping{0, 2} && !b1.outputs[0].is_partial());
static_assert(b1.outputs[1].dims_mapping() == dims_mapping{0, 2} && !b1.outputs[1].is_partial());
// y [4] broadcast over out_grad [8, 4] sharded [0, 1]: y_grad [1], partial sum on mesh dim 0
constexpr auto b2 = elementwise_binary_grad::infer_forward({spec({8, 4}, {-1, -1}), spec({4}, {-1}), spec({8, 4}, {0, 1})});
static_assert(b2.inputs[1].dims_mapping() == dims_mapping{1} && !b2.inputs[1].is_partial());
static_assert(b2.outputs[0].dims_mapping() == dims_mapping{0, 1} && !b2.outputs[0].is_partial());
static_assert(b2.outputs[1].dims_mapping() == dims_mapping{1} && b2.outputs[1].partial_dims() == mesh_dims{0});
static_assert(b2.outputs[1].partial_reduce_type(0) == reduce_type::sum);
// x [8, 1] broadcast on the last dim (sharded 1): x replicated there, x_grad partial on 1
constexpr auto b3 = elementwise_binary_grad::infer_forward({spec({8, 1}, {-1, -1}), spec({8, 4}, {-1, -1}), spec({8, 4}, {0, 1})});
static_assert(b3.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(b3.outputs[0].dims_mapping() == dims_mapping{0, -1} && b3.outputs[0].partial_dims() == mesh_dims{1});
// a partial out_grad is cleaned: no partial on the grads but the broadcast ones
constexpr auto b4 = elementwise_binary_grad::infer_forward({spec({8, 4}, {-1, -1}), spec({4}, {-1}), partial_spec({8, 4}, {0, -1}, 2)});
static_assert(!b4.inputs[2].is_partial() && !b4.outputs[0].is_partial());
static_assert(b4.outputs[1].partial_dims() == mesh_dims{0});
// co-sharded broadcast dim: both mesh dims partial; phi and fluid agree
constexpr auto b5 = elementwise_binary_grad::infer_forward(
    {spec({8, 4}, {-1, -1}), spec({4}, {-1}), co(mesh, {8, 4}, {{2, 0}, {1}})}, {}, semantics::phi);
static_assert(is(b5.outputs[0], {{2, 0}, {1}}) && is(b5.outputs[1], {{1}}) && b5.outputs[1].partial_dims() == mesh_dims{0, 2});
static_assert(elementwise_binary_grad::infer_forward({spec({8, 4}, {-1, -1}), spec({4}, {-1}), co(mesh, {8, 4}, {{2, 0}, {1}})}) ==
              b5);
// divide_grad(x, y, out, out_grad): out follows out_grad
constexpr auto b6 = elementwise_binary_grad::infer_forward(
    {spec({8, 4}, {-1, -1}), spec({8, 4}, {-1, -1}), spec({8, 4}, {1, -1}), spec({8, 4}, {-1, 0})});
static_assert(b6.inputs.size() == 4 && b6.inputs[2].dims_mapping() == dims_mapping{-1, 0});
static_assert(b6.outputs[0].dims_mapping() == dims_mapping{-1, 0} && b6.outputs[1].dims_mapping() == dims_mapping{-1, 0});
// errors
constexpr auto be1 = elementwise_binary_grad::try_infer_forward({spec({8, 4}, {-1, -1}), spec({3}, {-1}), spec({8, 4}, {-1, -1})});
static_assert(be1.kind() == error_kind::invalid_argument && be1.error().values[0] == 1 && be1.error().values[1] == 3);
constexpr auto be2 = elementwise_binary_grad::try_infer_forward({spec({2, 8, 4}, {-1, -1, -1}), spec({4}, {-1}), spec({8, 4}, {-1, -1})});
static_assert(be2.kind() == error_kind::invalid_argument && be2.error().values[1] == 3 && be2.error().values[2] == 2);
constexpr auto be3 = elementwise_binary_grad::try_infer_forward({spec({8}, {-1}), spec({8}, {-1}), spec({8}, {-1})}, {.axis = 0});
static_assert(be3.kind() == error_kind::invalid_argument && be3.error().values[0] == 0);
constexpr auto be4 = elementwise_binary_grad::try_infer_forward(
    {spec({8}, {-1}), spec({8}, {-1}), spec({4}, {-1}), spec({8}, {-1})});  // out of another shape
static_assert(be4.kind() == error_kind::invalid_argument && be4.error().values[0] == 2);
static_assert(!elementwise_binary_grad::try_infer_forward({spec({8}, {-1}), spec({8}, {-1})}));
static_assert(!constant_evaluates<[] {
  return elementwise_binary_grad::infer_forward({spec({8}, {-1}), spec({3}, {-1}), spec({8}, {-1})});
}>);
