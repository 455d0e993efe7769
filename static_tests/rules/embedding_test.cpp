#include <ctspmd/rules/embedding.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::embedding;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};

// ==== forward ===================================================================================
// ---- column-parallel table: out takes x's dims and the table's column dim ----------------------
constexpr auto col = embedding::infer_forward({spec({4, 16}, {0, -1}), spec({512, 768}, {-1, 1})});
static_assert(col.inputs.size() == 2 && col.outputs.size() == 1);
static_assert(col.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(col.inputs[1].dims_mapping() == dims_mapping{-1, 1});
static_assert(col.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(!col.outputs[0].is_partial() && col.outputs[0].process_mesh() == mesh);

// ---- row-parallel table: output partial (sum) on the row mesh dim --------------------------------
constexpr auto row = embedding::infer_forward({spec({4, 16}, {-1, -1}), spec({512, 768}, {0, -1})});
static_assert(row.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
static_assert(row.outputs[0].partial_dims() == mesh_dims{0});
static_assert(row.outputs[0].partial_reduce_type(0) == reduce_type::sum);
static_assert(row.inputs[1].dims_mapping() == dims_mapping{0, -1});
constexpr auto row_dp = embedding::infer_forward({spec({4, 16}, {1, -1}), spec({512, 768}, {0, -1})});
static_assert(row_dp.outputs[0].dims_mapping() == dims_mapping{1, -1, -1});
static_assert(row_dp.outputs[0].partial_dims() == mesh_dims{0});

// ---- rank-3 ids, and attributes that do not restrict a replicated row axis ------------------------
constexpr auto ids3 = embedding::infer_forward({spec({2, 4, 8}, {0, -1, 1}), spec({512, 768}, {-1, -1})},
                                               {.padding_idx = 0, .sparse = true});
static_assert(ids3.outputs[0].dims_mapping() == dims_mapping{0, -1, 1, -1});
static_assert(ids3.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(!ids3.outputs[0].is_partial());

// ---- conflicts: x and the table claim one mesh dim (merge_conflicts = false) ----------------------
constexpr auto x_and_rows = embedding::try_infer_forward({spec({4, 16}, {0, -1}), spec({512, 768}, {0, -1})});
static_assert(x_and_rows.kind() == error_kind::precondition_not_met);
static_assert(x_and_rows.error().op == "embedding");
static_assert(x_and_rows.error().values == std::array<std::int64_t, 4>{'a', 'j', 0, 0});
constexpr auto x_and_cols = embedding::try_infer_forward({spec({4, 16}, {-1, 1}), spec({512, 768}, {-1, 1})});
static_assert(x_and_cols.kind() == error_kind::precondition_not_met);

// ---- row-wise parallel restrictions ----------------------------------------------------------------
constexpr auto padding = embedding::try_infer_forward({spec({4, 16}, {-1, -1}), spec({512, 768}, {1, -1})},
                                                      {.padding_idx = 3});
static_assert(padding.kind() == error_kind::invalid_argument && padding.error().values[0] == 3 &&
              padding.error().values[1] == 1);  // the message prints padding_idx and the row mesh dim
constexpr auto sparse = embedding::try_infer_forward({spec({4, 16}, {-1, -1}), spec({512, 768}, {1, -1})},
                                                     {.sparse = true});
static_assert(sparse.kind() == error_kind::invalid_argument && sparse.error().values[0] == 1);

// ---- bad operands ----------------------------------------------------------------------------------
static_assert(embedding::try_infer_forward({spec({4}, {-1})}).kind() == error_kind::invalid_argument);
static_assert(!embedding::try_infer_forward({spec({4}, {-1}), spec({4, 5, 6}, {-1, -1, -1})}));  // 3-d table
static_assert(!embedding::try_infer_forward({spec({4}, {-1}), dist_tensor_spec({4, 5}, process_mesh({6}))}));
static_assert(!embedding::try_infer_forward({spec({1, 1, 1, 1, 1, 1, 1, 1, 1}, dims_mapping(9, -1)),
                                             spec({4, 5}, {-1, -1})}));  // output rank 10 > max_rank
static_assert(!constant_evaluates<[] {
  return embedding::infer_forward({spec({4, 16}, {-1, -1}), spec({512, 768}, {1, -1})}, {.padding_idx = 0});
}>);

// ==== backward ==================================================================================
constexpr dist_tensor_spec x = spec({4, 16}, {-1, -1});
constexpr dist_tensor_spec w = spec({512, 768}, {-1, -1});
constexpr auto back = embedding::infer_backward({x, w}, {spec({4, 16, 768}, {0, -1, 1})});
static_assert(back.inputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(back.inputs[1].dims_mapping() == dims_mapping{-1, 1});  // row axis j is not in the output
static_assert(back.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(!back.inputs[0].is_partial() && !back.inputs[1].is_partial());

// The inputs' own mappings do not count backward.
constexpr auto ignores_inputs =
    embedding::infer_backward({spec({4, 16}, {1, -1}), spec({512, 768}, {0, 1})}, {spec({4, 16, 768}, {-1, 1, -1})});
static_assert(ignores_inputs.inputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(ignores_inputs.inputs[1].dims_mapping() == dims_mapping{-1, -1});

// A partial output is returned unchanged; nothing partial is inferred for the inputs.
constexpr dist_tensor_spec partial_out = [] {
  tensor_dist_attr a(mesh, {1, -1, -1});
  a.set_partial_status({0});
  return dist_tensor_spec({4, 16, 768}, a);
}();
constexpr auto back_partial = embedding::infer_backward({x, w}, {partial_out});
static_assert(back_partial.outputs[0] == partial_out.dist_attr());
static_assert(back_partial.inputs[0].dims_mapping() == dims_mapping{1, -1} && !back_partial.inputs[0].is_partial());
static_assert(back_partial.inputs[1].dims_mapping() == dims_mapping{-1, -1});

// Forward then backward agree on the inputs' non-row dims.
static_assert(embedding::infer_backward({x, w}, {dist_tensor_spec({4, 16, 768}, col.outputs[0])}).inputs[0] ==
              col.inputs[0]);

// ---- bad operands ----------------------------------------------------------------------------------
static_assert(embedding::try_infer_backward({x, w}, {spec({4, 768}, {-1, -1})}).kind() == error_kind::invalid_argument);
static_assert(embedding::try_infer_backward({x, w}, {spec({4, 768}, {-1, -1})}).error().values[0] == 2);  // x rank
static_assert(!embedding::try_infer_backward({x, w}, {}));
static_assert(!embedding::try_infer_backward({x, w}, {spec({4, 16, 768}, {0, -1, 1}), spec({4}, {-1})}));
static_assert(!embedding::try_infer_backward({x}, {spec({4, 16, 768}, {0, -1, 1})}));
static_assert(!embedding::try_infer_backward({x, spec({5}, {-1})}, {spec({4, 16, 768}, {0, -1, 1})}));

// ==== phi and co-shard ===============================================================================
namespace phi_cases {
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
constexpr process_mesh m3({2, 2, 2});
constexpr process_mesh m24({2, 4});
// rows over two mesh dims: the output is partial on both (either semantics: a list merges as a unit)
constexpr auto rows = embedding::infer_forward({co(m3, {4, 1024}, {{1}, {}}), co(m3, {512, 768}, {{0, 2}, {}})});
static_assert(is(rows.outputs[0], {{1}, {}, {}}) && rows.outputs[0].partial_dims() == mesh_dims{0, 2});
static_assert(embedding::infer_forward({co(m3, {4, 1024}, {{1}, {}}), co(m3, {512, 768}, {{0, 2}, {}})}, {}, phi)
                  .outputs[0]
                  .partial_dims() == mesh_dims{0, 2});
// Paddle's test_embedding_rule (mesh [2, 4]) under phi
constexpr auto cols = embedding::infer_forward({co(m24, {4, 1024}, {{1}, {}}), co(m24, {512, 768}, {{}, {0}})}, {}, phi);
static_assert(is(cols.outputs[0], {{1}, {}, {0}}) && !cols.outputs[0].is_partial());
static_assert(!embedding::try_infer_forward({co(m24, {4, 1024}, {{1}, {}}), co(m24, {512, 768}, {{0}, {}})},
                                            {.padding_idx = 128}, phi));
constexpr auto back = embedding::infer_backward({co(m24, {4, 1024}, {{}, {}}), co(m24, {512, 768}, {{}, {}})},
                                                {co(m24, {4, 1024, 768}, {{1}, {0}, {}})}, {}, phi);
static_assert(is(back.inputs[0], {{1}, {0}}) && is(back.inputs[1], {{}, {}}));
// x and the weight on one mesh dim: refused under either semantics
static_assert(embedding::try_infer_forward({co(m24, {4, 1024}, {{0}, {}}), co(m24, {512, 768}, {{}, {0}})}, {}, phi).kind() ==
              error_kind::precondition_not_met);
}  // namespace phi_cases
