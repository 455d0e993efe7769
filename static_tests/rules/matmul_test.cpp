#include <ctspmd/rules/matmul.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::matmul;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};

// ==== notation ====================================================================================
static_assert(matmul::notation(2, 2)->inputs[0] == "mk" && matmul::notation(2, 2)->output == "mn");
static_assert(matmul::notation(4, 2)->inputs[0] == "abmk" && matmul::notation(4, 2)->inputs[1] == "kn" &&
              matmul::notation(4, 2)->output == "abmn");
static_assert(matmul::notation(2, 3)->inputs[0] == "mk" && matmul::notation(2, 3)->inputs[1] == "akn" &&
              matmul::notation(2, 3)->output == "amn");
static_assert(matmul::notation(1, 1)->inputs[0] == "k" && matmul::notation(1, 1)->output == "");
static_assert(matmul::notation(1, 3)->inputs[1] == "akn" && matmul::notation(1, 3)->output == "an");
static_assert(matmul::notation(3, 1)->inputs[0] == "amk" && matmul::notation(3, 1)->output == "am");

// ==== forward ====================================================================================
// ---- m sharded: output rows sharded, nothing partial ---------------------------------------------------
constexpr auto rows = matmul::infer_forward({spec({64, 32}, {1, -1}), spec({32, 48}, {-1, -1})});
static_assert(rows.inputs[0].dims_mapping() == dims_mapping{1, -1} && rows.inputs[1].dims_mapping() == dims_mapping{-1, -1});
static_assert(rows.outputs.size() == 1 && rows.outputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(!rows.outputs[0].is_partial());

// ---- n sharded (column parallel) -------------------------------------------------------------------------
constexpr auto cols = matmul::infer_forward({spec({64, 32}, {-1, -1}), spec({32, 48}, {-1, 0})});
static_assert(cols.outputs[0].dims_mapping() == dims_mapping{-1, 0} && !cols.outputs[0].is_partial());

// ---- k sharded (row parallel): y resharded to match, output partial (sum) on k's mesh dim --------------
constexpr auto k_shard = matmul::infer_forward({spec({64, 32}, {1, 0}), spec({32, 48}, {-1, -1})});
static_assert(k_shard.inputs[0].dims_mapping() == dims_mapping{1, 0});
static_assert(k_shard.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(k_shard.outputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(k_shard.outputs[0].partial_dims() == mesh_dims{0});
static_assert(k_shard.outputs[0].partial_reduce_type(0) == reduce_type::sum);
constexpr auto k_from_y = matmul::infer_forward({spec({64, 32}, {-1, -1}), spec({32, 48}, {1, 0})});
static_assert(k_from_y.inputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(k_from_y.outputs[0].dims_mapping() == dims_mapping{-1, 0} && k_from_y.outputs[0].partial_dims() == mesh_dims{1});

// ---- batch dims and broadcasting ----------------------------------------------------------------------------
constexpr auto batched = matmul::infer_forward({spec({512, 48, 64, 32}, {0, 1, -1, -1}), spec({32, 48}, {-1, -1})});
static_assert(batched.outputs[0].dims_mapping() == dims_mapping{0, 1, -1, -1});
static_assert(batched.inputs[1].dims_mapping() == dims_mapping{-1, -1});
// y's only batch dim is x's second (right-aligned): its shard reaches x and the output.
constexpr auto bcast = matmul::infer_forward({spec({512, 48, 64, 32}, dims_mapping(4, -1)), spec({48, 32, 16}, {0, -1, 1})});
static_assert(bcast.inputs[0].dims_mapping() == dims_mapping{-1, 0, -1, -1});
static_assert(bcast.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1, 1});
// A size-1 batch dim is never sharded and does not shard the other operand or the output.
constexpr auto size1 = matmul::infer_forward({spec({1, 64, 32}, {0, -1, -1}), spec({4, 32, 16}, {-1, -1, -1})});
static_assert(size1.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
static_assert(size1.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
constexpr auto size1_other = matmul::infer_forward({spec({1, 64, 32}, {-1, -1, -1}), spec({4, 32, 16}, {1, -1, -1})});
static_assert(size1_other.outputs[0].dims_mapping() == dims_mapping{1, -1, -1});
static_assert(size1_other.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1});

// ---- 1-D operands ----------------------------------------------------------------------------------------------
constexpr auto dot = matmul::infer_forward({spec({32}, {0}), spec({32}, {-1})});
static_assert(dot.outputs[0].dims_mapping().size() == 0 && dot.outputs[0].partial_dims() == mesh_dims{0});
static_assert(dot.inputs[1].dims_mapping() == dims_mapping{0});
constexpr auto vec_mat = matmul::infer_forward({spec({32}, {-1}), spec({4, 32, 48}, {0, -1, 1})});
static_assert(vec_mat.outputs[0].dims_mapping() == dims_mapping{0, 1});
constexpr auto mat_vec = matmul::infer_forward({spec({4, 64, 32}, {0, 1, -1}), spec({32}, {-1})});
static_assert(mat_vec.outputs[0].dims_mapping() == dims_mapping{0, 1});

// ---- transposed operands: mappings read and written in stored order ------------------------------------------
// x stored (k, m) = [32, 64] with k on mesh dim 0, m on 1.
constexpr auto tx = matmul::infer_forward({spec({32, 64}, {0, 1}), spec({32, 48}, {-1, -1})}, {.trans_x = true});
static_assert(tx.inputs[0].dims_mapping() == dims_mapping{0, 1});
static_assert(tx.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(tx.outputs[0].dims_mapping() == dims_mapping{1, -1} && tx.outputs[0].partial_dims() == mesh_dims{0});
// y stored (n, k) = [48, 32] with n on mesh dim 1.
constexpr auto ty = matmul::infer_forward({spec({64, 32}, {0, -1}), spec({48, 32}, {1, -1})}, {.trans_y = true});
static_assert(ty.inputs[1].dims_mapping() == dims_mapping{1, -1});
static_assert(ty.outputs[0].dims_mapping() == dims_mapping{0, 1} && !ty.outputs[0].is_partial());
// The size-1 check reads the transposed shape: x stored [32, 1] is (k = 32, m = 1), so its
// sharded stored dim 1 is m, of size 1, and is dropped; its dim 0 (k, size 32) is kept.
constexpr auto t_size1 = matmul::infer_forward({spec({32, 1}, {0, 1}), spec({32, 48}, {-1, -1})}, {.trans_x = true});
static_assert(t_size1.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(t_size1.outputs[0].dims_mapping() == dims_mapping{-1, -1} && t_size1.outputs[0].partial_dims() == mesh_dims{0});
constexpr auto both = matmul::infer_forward({spec({8, 32, 64}, {0, -1, 1}), spec({8, 48, 32}, {-1, -1, -1})},
                                            {.trans_x = true, .trans_y = true});
static_assert(both.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(both.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(both.outputs[0].dims_mapping() == dims_mapping{0, 1, -1});

// ---- conflicts ------------------------------------------------------------------------------------------------
// One mesh dim on m and n: m claimed it first (x before y) and keeps it; n is replicated.
constexpr auto keep_first = matmul::infer_forward({spec({64, 32}, {0, -1}), spec({32, 48}, {-1, 0})});
static_assert(keep_first.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(keep_first.inputs[1].dims_mapping() == dims_mapping{-1, -1});
// k on two mesh dims: unimplemented.
constexpr auto two_dims = matmul::try_infer_forward({spec({64, 32}, {-1, 0}), spec({32, 48}, {1, -1})});
static_assert(two_dims.kind() == error_kind::unimplemented && two_dims.error().op == "matmul");
static_assert(two_dims.error().values == std::array<std::int64_t, 4>{'k', 1, 0, 0});

// ---- partial inputs are made whole first ------------------------------------------------------------------------
constexpr auto partial_x = [] {
  tensor_dist_attr a(mesh, {-1, -1});
  a.set_partial_status({1});
  return matmul::infer_forward({{{64, 32}, a}, spec({32, 48}, {-1, -1})});
}();
static_assert(!partial_x.inputs[0].is_partial() && !partial_x.outputs[0].is_partial());

// ---- errors ---------------------------------------------------------------------------------------------------------
static_assert(matmul::try_infer_forward({spec({4, 4}, {-1, -1})}).kind() == error_kind::invalid_argument);
static_assert(!matmul::try_infer_forward({spec({4, 4}, {-1, -1}), spec({4, 4}, {-1, -1}), spec({4, 4}, {-1, -1})}));
static_assert(!matmul::try_infer_forward({spec({}, {}), spec({4}, {-1})}));                     // rank 0
static_assert(matmul::try_infer_forward({spec({32}, {-1}), spec({32, 4}, {-1, -1})}, {.trans_x = true})
                  .error().values[0] == 1);                                                        // trans_x on 1-D
static_assert(!matmul::try_infer_forward({spec({4, 32}, {-1, -1}), spec({32}, {-1})}, {.trans_y = true}));
static_assert(!matmul::try_infer_forward({spec({4, 4}, {-1, -1}), dist_tensor_spec({4, 4}, process_mesh({6}))}));
static_assert(!constant_evaluates<[] { return matmul::infer_forward({spec({64, 32}, {-1, 0}), spec({32, 48}, {1, -1})}); }>);

// ==== backward =================================================================================
constexpr dist_tensor_spec x = spec({64, 32}, {1, 0});  // ignored backward
constexpr dist_tensor_spec y = spec({32, 48}, {-1, -1});
constexpr auto back = matmul::infer_backward({x, y}, {spec({64, 48}, {0, 1})});
static_assert(back.inputs[0].dims_mapping() == dims_mapping{0, -1});  // k is not in the output
static_assert(back.inputs[1].dims_mapping() == dims_mapping{-1, 1});
static_assert(back.outputs[0].dims_mapping() == dims_mapping{0, 1});
static_assert(!back.inputs[0].is_partial() && !back.inputs[1].is_partial());

constexpr auto back_batched = matmul::infer_backward({spec({512, 48, 64, 32}, dims_mapping(4, -1)), spec({48, 32, 16}, {-1, -1, -1})},
                                                     {spec({512, 48, 64, 16}, {0, 1, -1, -1})});
static_assert(back_batched.inputs[0].dims_mapping() == dims_mapping{0, 1, -1, -1});
static_assert(back_batched.inputs[1].dims_mapping() == dims_mapping{1, -1, -1});
constexpr auto back_size1 = matmul::infer_backward({spec({1, 64, 32}, {-1, -1, -1}), spec({4, 32, 48}, {-1, -1, -1})},
                                                   {spec({4, 64, 48}, {0, -1, 1})});
static_assert(back_size1.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
static_assert(back_size1.inputs[1].dims_mapping() == dims_mapping{0, -1, 1});
constexpr auto back_ty = matmul::infer_backward({spec({64, 32}, {-1, -1}), spec({48, 32}, {-1, -1})},
                                                {spec({64, 48}, {0, 1})}, {.trans_y = true});
static_assert(back_ty.inputs[1].dims_mapping() == dims_mapping{1, -1});
constexpr auto back_dot = matmul::infer_backward({spec({32}, {-1}), spec({32}, {-1})}, {spec({}, {})});
static_assert(back_dot.inputs[0].dims_mapping() == dims_mapping{-1});

// A partial output is returned unchanged.
constexpr auto partial_out = [] {
  tensor_dist_attr a(mesh, {1, -1});
  a.set_partial_status({0});
  return a;
}();
constexpr auto back_partial = matmul::infer_backward({x, y}, {{{64, 48}, partial_out}});
static_assert(back_partial.outputs[0] == partial_out && back_partial.inputs[0].dims_mapping() == dims_mapping{1, -1});

// Backward errors: output rank, operand counts.
constexpr auto bad_out_rank = matmul::try_infer_backward({x, y}, {spec({64, 48, 1}, {-1, -1, -1})});
static_assert(bad_out_rank.kind() == error_kind::invalid_argument && bad_out_rank.error().values[1] == 3 &&
              bad_out_rank.error().values[2] == 2);
static_assert(!matmul::try_infer_backward({x, y}, {}));
static_assert(!matmul::try_infer_backward({x}, {spec({64, 48}, {0, 1})}));

// ==== phi: the co-shard merge (Paddle's matmul_co_shard_spmd_rule_test, mesh [2, 2, 2]) ==========
namespace phi_cases {
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
constexpr process_mesh m3({2, 2, 2});
constexpr rules::matmul_attributes nn{}, tn{true, false}, nt{false, true}, tt{true, true};
constexpr auto c1 = matmul::infer_forward({co(m3, {64, 32}, {{0, 1}, {}}), co(m3, {32, 48}, {{}, {2}})}, nn, phi);
static_assert(is(c1.inputs[0], {{0, 1}, {}}) && is(c1.inputs[1], {{}, {2}}) && is(c1.outputs[0], {{0, 1}, {2}}) &&
              !c1.outputs[0].is_partial());
constexpr auto c2 = matmul::infer_forward({co(m3, {64, 32}, {{0, 1}, {2}}), co(m3, {32, 48}, {{}, {}})}, nn, phi);
static_assert(is(c2.inputs[1], {{2}, {}}) && is(c2.outputs[0], {{0, 1}, {}}) && c2.outputs[0].partial_dims() == mesh_dims{2});
constexpr auto c3 = matmul::infer_forward({co(m3, {64, 32}, {{}, {}}), co(m3, {32, 48}, {{0, 1}, {2}})}, nn, phi);
static_assert(is(c3.inputs[0], {{}, {0, 1}}) && is(c3.outputs[0], {{}, {2}}) && c3.outputs[0].partial_dims() == mesh_dims{0, 1});
// k proposed on mesh dims 1 and 2: a co-shard; mesh dim 0 on m (64) and n (48): m keeps it
constexpr auto c4 = matmul::infer_forward({co(m3, {64, 32}, {{0}, {1}}), co(m3, {32, 48}, {{2}, {0}})}, nn, phi);
static_assert(is(c4.inputs[0], {{0}, {1, 2}}) && is(c4.inputs[1], {{1, 2}, {}}) && is(c4.outputs[0], {{0}, {}}) &&
              c4.outputs[0].partial_dims() == mesh_dims{1, 2});
constexpr auto c5 = matmul::infer_forward({co(m3, {64, 32}, {{0, 1}, {2}}), co(m3, {32, 48}, {{0}, {}})}, nn, phi);
static_assert(is(c5.inputs[0], {{0, 1}, {2}}) && is(c5.inputs[1], {{2}, {}}) && is(c5.outputs[0], {{0, 1}, {}}) &&
              c5.outputs[0].partial_dims() == mesh_dims{2});
// a size-1 batch dim of y broadcasts and is never sharded
constexpr auto c6 = matmul::infer_forward(
    {co(m3, {512, 48, 64, 32}, {{0, 1}, {2}, {}, {}}), co(m3, {1, 32, 48}, {{}, {}, {}})}, nn, phi);
static_assert(is(c6.inputs[0], {{0, 1}, {2}, {}, {}}) && is(c6.inputs[1], {{}, {}, {}}) &&
              is(c6.outputs[0], {{0, 1}, {2}, {}, {}}) && !c6.outputs[0].is_partial());
constexpr auto c7 = matmul::infer_forward(
    {co(m3, {512, 48, 32, 64}, {{0}, {}, {1, 2}, {}}), co(m3, {1, 32, 48}, {{}, {}, {2}})}, tn, phi);
static_assert(is(c7.inputs[0], {{0}, {}, {1}, {}}) && is(c7.inputs[1], {{}, {1}, {2}}) &&
              is(c7.outputs[0], {{0}, {}, {}, {2}}) && c7.outputs[0].partial_dims() == mesh_dims{1});
constexpr auto c8 = matmul::infer_forward(
    {co(m3, {512, 48, 64, 32}, {{0}, {}, {1, 2}, {}}), co(m3, {1, 48, 32}, {{}, {0}, {}})}, nt, phi);
static_assert(is(c8.inputs[0], {{0}, {}, {1, 2}, {}}) && is(c8.inputs[1], {{}, {}, {}}) &&
              is(c8.outputs[0], {{0}, {}, {1, 2}, {}}) && !c8.outputs[0].is_partial());
constexpr auto c9 = matmul::infer_forward(
    {co(m3, {512, 48, 32, 64}, {{}, {}, {0, 1}, {2}}), co(m3, {1, 48, 32}, {{}, {0, 1}, {2}})}, tt, phi);
static_assert(is(c9.inputs[0], {{}, {}, {}, {2}}) && is(c9.inputs[1], {{}, {0, 1}, {}}) &&
              is(c9.outputs[0], {{}, {}, {2}, {0, 1}}) && !c9.outputs[0].is_partial());
// two mesh dims on k: an error under fluid, a co-shard under phi (the mesh dim of 3 first: more
// shards), cut back to what divides k
static_assert(!matmul::try_infer_forward({spec({64, 48}, {-1, 0}), spec({48, 48}, {1, -1})}));
static_assert(is(matmul::infer_forward({spec({64, 48}, {-1, 0}), spec({48, 48}, {1, -1})}, nn, phi).inputs[0],
                 {{}, {1, 0}}));
static_assert(is(matmul::infer_forward({spec({64, 32}, {-1, 0}), spec({32, 48}, {1, -1})}, nn, phi).inputs[0],
                 {{}, {}}));  // 32 splits neither 6 nor 3 ways
// k of two sizes does not broadcast (phi checks it; fluid does not look)
static_assert(matmul::try_infer_forward({spec({64, 32}, {-1, -1}), spec({16, 48}, {-1, -1})}, nn, phi).kind() ==
              error_kind::precondition_not_met);
static_assert(matmul::try_infer_forward({spec({64, 32}, {-1, -1}), spec({16, 48}, {-1, -1})}));
// backward: the output alone, merged without resolving conflicts; k replicated
constexpr auto back = matmul::infer_backward({co(m3, {64, 32}, {{}, {}}), co(m3, {32, 48}, {{}, {}})},
                                             {co(m3, {64, 48}, {{0, 1}, {2}})}, nn, phi);
static_assert(is(back.inputs[0], {{0, 1}, {}}) && is(back.inputs[1], {{}, {2}}) && is(back.outputs[0], {{0, 1}, {2}}));
}  // namespace phi_cases
