#include <ctspmd/rules/matmul.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::matmul;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr dist_tensor_spec spec(tensor_shape shape, dims_mapping dm) { return {shape, {mesh, dm}}; }

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
