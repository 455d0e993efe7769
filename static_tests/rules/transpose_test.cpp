#include <ctspmd/rules/transpose.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::transpose;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

static_assert(rules::transpose_attributes{}.perm.empty());

// ==== forward ===================================================================================
// out dim i is x dim perm[i]: "abc" -> "cab".
constexpr auto x = spec({2, 4, 8}, {0, -1, 1});
constexpr auto fwd = transpose::infer_forward({x}, {.perm = {2, 0, 1}});
static_assert(fwd.inputs.size() == 1 && fwd.outputs.size() == 1);
static_assert(fwd.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});  // x as merged: unchanged
static_assert(fwd.outputs[0].dims_mapping() == dims_mapping{1, 0, -1});
static_assert(!fwd.outputs[0].is_partial() && fwd.outputs[0].process_mesh() == mesh);

// Negative perm entries count from the end.
static_assert(transpose::infer_forward({x}, {.perm = {-1, 0, -2}}) == fwd);
static_assert(transpose::infer_forward({x}, {.perm = {-1, -3, 1}}) == fwd);

// The 2-D transpose, the identity, a 0-D x.
static_assert(transpose::infer_forward({spec({4, 8}, {1, -1})}, {.perm = {1, 0}}).outputs[0].dims_mapping() ==
              dims_mapping{-1, 1});
static_assert(transpose::infer_forward({x}, {.perm = {0, 1, 2}}).outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(transpose::infer_forward({spec({}, {})}, {.perm = {}}).outputs[0].dims_mapping() == dims_mapping{});

// A partial x is not propagated (as Paddle): it comes back not partial, and so is the output.
constexpr auto partial = transpose::infer_forward({partial_spec({4, 8}, {0, -1}, 1)}, {.perm = {1, 0}});
static_assert(!partial.inputs[0].is_partial() && partial.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(!partial.outputs[0].is_partial() && partial.outputs[0].dims_mapping() == dims_mapping{-1, 0});

// ---- bad perms and operands -------------------------------------------------------------------------
constexpr auto short_perm = transpose::try_infer_forward({x}, {.perm = {1, 0}});
static_assert(short_perm.kind() == error_kind::invalid_argument && short_perm.error().op == "transpose");
static_assert(short_perm.error().values[0] == 2 && short_perm.error().values[1] == 3);
static_assert(transpose::try_infer_forward({x}).error().values[0] == 0);  // perm is required
constexpr auto too_big = transpose::try_infer_forward({x}, {.perm = {0, 3, 1}});
static_assert(too_big.kind() == error_kind::invalid_argument);
static_assert(too_big.error().values == std::array<std::int64_t, 4>{3, 1, 3, 3});  // entry, position, rank
constexpr auto too_small = transpose::try_infer_forward({x}, {.perm = {0, -4, 1}});
static_assert(too_small.error().values == std::array<std::int64_t, 4>{-4, 1, 3, 3});
constexpr auto repeat = transpose::try_infer_forward({x}, {.perm = {0, 2, -3}});
static_assert(repeat.kind() == error_kind::invalid_argument);
static_assert(repeat.error().values == std::array<std::int64_t, 4>{-3, 2, 0, 0});  // entry, position, dim
static_assert(!transpose::try_infer_forward({x, x}, {.perm = {0, 1, 2}}));
static_assert(!transpose::try_infer_forward(std::span<const dist_tensor_spec>{}, {}));
static_assert(!constant_evaluates<[] { return transpose::infer_forward({x}, {.perm = {0, 0, 1}}); }>);

// ==== backward ==================================================================================
constexpr auto x_repl = spec({2, 4, 8}, {-1, -1, -1});
constexpr auto back = transpose::infer_backward({x_repl}, {spec({8, 2, 4}, {1, 0, -1})}, {.perm = {2, 0, 1}});
static_assert(back.inputs.size() == 1 && back.outputs.size() == 1);
static_assert(back.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});  // x's own mapping does not count
static_assert(back.outputs[0].dims_mapping() == dims_mapping{1, 0, -1});
static_assert(transpose::infer_backward({x_repl}, {spec({8, 2, 4}, {-1, 1, 0})}, {.perm = {-1, 0, 1}})
                  .inputs[0]
                  .dims_mapping() == dims_mapping{1, 0, -1});

// A partial output: x is not partial, nor is the output as x produces it.
constexpr auto back_partial =
    transpose::infer_backward({x_repl}, {partial_spec({8, 2, 4}, {-1, 0, -1}, 1)}, {.perm = {2, 0, 1}});
static_assert(back_partial.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && !back_partial.inputs[0].is_partial());
static_assert(back_partial.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
static_assert(!back_partial.outputs[0].is_partial());

// Forward then backward agree; forward of the inferred x gives the returned output.
static_assert(transpose::infer_backward({x}, {dist_tensor_spec({8, 2, 4}, fwd.outputs[0])}, {.perm = {2, 0, 1}}) ==
              fwd);
static_assert(transpose::infer_forward({dist_tensor_spec({2, 4, 8}, back.inputs[0])}, {.perm = {2, 0, 1}}).outputs[0] ==
              back.outputs[0]);

// ---- bad operands ----------------------------------------------------------------------------------
constexpr auto back_rank = transpose::try_infer_backward({x_repl}, {spec({8, 2}, {-1, -1})}, {.perm = {2, 0, 1}});
static_assert(back_rank.kind() == error_kind::invalid_argument);
static_assert(back_rank.error().values[0] == 2 && back_rank.error().values[1] == 3);
constexpr auto back_size =
    transpose::try_infer_backward({x_repl}, {spec({8, 4, 2}, {-1, -1, -1})}, {.perm = {2, 0, 1}});
static_assert(back_size.kind() == error_kind::invalid_argument);
static_assert(back_size.error().values == std::array<std::int64_t, 4>{1, 4, 0, 2});  // out dim, size, x dim, size
static_assert(transpose::try_infer_backward({x_repl}, {spec({-1, 2, 4}, {-1, -1, -1})}, {.perm = {2, 0, 1}}));
static_assert(transpose::try_infer_backward({x_repl}, {spec({8, 2, 4}, {-1, -1, -1})}, {.perm = {2, 0, 2}})
                  .error()
                  .values[2] == 2);  // the perm is checked backward too
static_assert(!transpose::try_infer_backward({x_repl}, {}, {.perm = {2, 0, 1}}));
static_assert(!transpose::try_infer_backward({x_repl, x_repl}, {spec({8, 2, 4}, {-1, -1, -1})}, {.perm = {2, 0, 1}}));
static_assert(!constant_evaluates<[] {
  return transpose::infer_backward({x_repl}, {spec({8, 2}, {-1, -1})}, {.perm = {2, 0, 1}});
}>);

// ==== phi: co-shard lists move with their dims; partial status carried forward ===================
namespace phi_cases {
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
constexpr process_mesh m22({2, 2});
// Paddle's transpose_co_shard_spmd_rule_test
constexpr auto t1 = transpose::infer_forward({co(m22, {64, 48, 36, 24}, {{0, 1}, {}, {}, {}})}, {.perm = {1, 0, 2, 3}}, phi);
static_assert(is(t1.inputs[0], {{0, 1}, {}, {}, {}}) && is(t1.outputs[0], {{}, {0, 1}, {}, {}}));
static_assert(is(transpose::infer_forward({co(m22, {64, 48, 36, 24}, {{}, {}, {0, 1}, {}})}, {.perm = {0, 2, 3, 1}}, phi)
                     .outputs[0],
                 {{}, {0, 1}, {}, {}}));
static_assert(is(transpose::infer_forward({co(m22, {64, 48, 36, 24}, {{}, {}, {0, 1}, {}})}, {.perm = {-1, 0, -2, 1}}, phi)
                     .outputs[0],
                 {{}, {}, {0, 1}, {}}));
// partial x: phi keeps it on x and the output; fluid requires x whole
constexpr auto p_phi = transpose::infer_forward({partial_spec({4, 6}, {0, -1}, 1)}, {.perm = {1, 0}}, phi);
static_assert(p_phi.inputs[0].partial_dims() == mesh_dims{1} && p_phi.outputs[0].partial_dims() == mesh_dims{1} &&
              p_phi.outputs[0].dims_mapping() == dims_mapping{-1, 0});
static_assert(!transpose::infer_forward({partial_spec({4, 6}, {0, -1}, 1)}, {.perm = {1, 0}}).outputs[0].is_partial());
// backward infers no partial status
static_assert(!transpose::infer_backward({spec({4, 6}, {-1, -1})}, {partial_spec({6, 4}, {-1, 0}, 1)}, {.perm = {1, 0}}, phi)
                   .inputs[0]
                   .is_partial());
}  // namespace phi_cases

// ==== transpose_grad (out_grad) -> x_grad ========================================================
namespace grad_cases {
using ctspmd::rules::transpose_grad;
using ctspmd_test::co;
using ctspmd_test::is;
// out_grad [8, 2, 4] = x [2, 4, 8] transposed by {2, 0, 1}: x_grad takes the mapping back
constexpr auto t1 = transpose_grad::infer_forward({spec({8, 2, 4}, {1, 0, -1})}, {.perm = {2, 0, 1}});
static_assert(t1.inputs[0].dims_mapping() == dims_mapping{1, 0, -1});
static_assert(t1.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
// the inverse of the forward's inference: transpose then transpose_grad gives x's mapping back
static_assert(transpose_grad::infer_forward({dist_tensor_spec({8, 2, 4}, fwd.outputs[0])}, {.perm = {2, 0, 1}}).outputs[0] ==
              x.dist_attr());
// negative perm entries
static_assert(transpose_grad::infer_forward({spec({8, 2, 4}, {1, 0, -1})}, {.perm = {-1, 0, -2}}) == t1);
// a partial out_grad stays partial, and x_grad takes it (phi clears it)
constexpr auto tp = transpose_grad::infer_forward({partial_spec({8, 2}, {0, -1}, 1)}, {.perm = {1, 0}});
static_assert(tp.inputs[0].partial_dims() == mesh_dims{1} && tp.outputs[0].partial_dims() == mesh_dims{1});
static_assert(tp.outputs[0].dims_mapping() == dims_mapping{-1, 0});
// co-shard lists move with their dim, under both semantics
constexpr process_mesh m3({2, 2, 2});
static_assert(is(transpose_grad::infer_forward({co(m3, {8, 4}, {{2, 0}, {1}})}, {.perm = {1, 0}}).outputs[0], {{1}, {2, 0}}));
static_assert(is(transpose_grad::infer_forward({co(m3, {8, 4}, {{2, 0}, {1}})}, {.perm = {1, 0}}, semantics::phi).outputs[0],
                 {{1}, {2, 0}}));
// errors: perm must permute out_grad's dims
static_assert(transpose_grad::try_infer_forward({spec({8, 2}, {0, -1})}, {.perm = {0}}).kind() == error_kind::invalid_argument);
static_assert(transpose_grad::try_infer_forward({spec({8, 2}, {0, -1})}, {.perm = {1, 1}}).error().op == "transpose_grad");
static_assert(!transpose_grad::try_infer_forward({spec({8, 2}, {0, -1})}, {.perm = {0, 2}}));
static_assert(transpose_grad::try_infer_backward({spec({8, 2}, {0, -1})}, {spec({2, 8}, {-1, 0})}, {.perm = {1, 0}}).kind() ==
              error_kind::unimplemented);
}  // namespace grad_cases
