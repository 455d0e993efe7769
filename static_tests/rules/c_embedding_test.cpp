#include <ctspmd/rules/c_embedding.hpp>
#include <ctspmd/rules/embedding_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::c_embedding;
using ctspmd::rules::c_embedding_grad;
using ctspmd::rules::embedding_grad;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m2({2, 4});
constexpr process_mesh m3({2, 2, 2});

// ==== c_embedding: vocabulary parallel, weight first ================================================
// ids split over mesh dim 0 (data parallel), the vocabulary rows over mesh dim 1
constexpr dist_tensor_spec w({50304, 768}, {m2, {1, -1}});
constexpr dist_tensor_spec ids({32, 512}, {m2, {0, -1}});
constexpr auto f = c_embedding::infer_forward({w, ids}, {.start_index = 0, .vocab_size = 50304});
static_assert(f.inputs[0].dims_mapping() == dims_mapping{1, -1} && f.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(f.outputs[0].dims_mapping() == dims_mapping{0, -1, -1} && f.outputs[0].partial_dims() == mesh_dims{1});
static_assert(c_embedding::infer_forward({w, ids}, {}, semantics::phi) == f);
// the row sharded while a padding row would be refused by embedding: c_embedding has none
static_assert(c_embedding::try_infer_forward({w, ids}, {.start_index = 12576}));
// columns sharded: out's hidden dim follows
constexpr auto cols = c_embedding::infer_forward({{{64, 16}, {m2, {-1, 1}}}, {{8, 4}, {m2, {0, -1}}}});
static_assert(cols.outputs[0].dims_mapping() == dims_mapping{0, -1, 1} && !cols.outputs[0].is_partial());
// co-shard rows under phi: partial on both mesh dims
constexpr auto cs = c_embedding::infer_forward({co(m3, {64, 16}, {{1, 2}, {}}), co(m3, {8, 4}, {{0}, {}})}, {}, semantics::phi);
static_assert(is(cs.outputs[0], {{0}, {}, {}}) && cs.outputs[0].partial_dims() == mesh_dims{1, 2});
// backward: the output's mapping; the weight rows replicated
constexpr auto b = c_embedding::infer_backward({w, ids}, {{{32, 512, 768}, {m2, {0, -1, 1}}}});
static_assert(b.inputs[0].dims_mapping() == dims_mapping{-1, 1} && b.inputs[1].dims_mapping() == dims_mapping{0, -1});
// errors
static_assert(c_embedding::try_infer_forward({{{64}, {m2, {-1}}}, ids}).kind() == error_kind::invalid_argument);
static_assert(c_embedding::try_infer_forward({{{64, 16}, {m2, {0, -1}}}, {{8, 4}, {m2, {0, -1}}}}).kind() ==
              error_kind::precondition_not_met);

// ==== c_embedding_grad: the row shard kept, partial on the ids' mesh dims ===========================
constexpr auto g = c_embedding_grad::infer_forward({w, ids, {{32, 512, 768}, {m2, {0, -1, -1}}}});
static_assert(g.inputs.size() == 3 && g.outputs.size() == 1);
static_assert(g.inputs[0].dims_mapping() == dims_mapping{1, -1} && g.inputs[1].dims_mapping() == dims_mapping{0, -1} &&
              g.inputs[2].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(g.outputs[0].dims_mapping() == dims_mapping{1, -1} && g.outputs[0].partial_dims() == mesh_dims{0});
// phi's bug not copied: out_grad's columns sharded give weight_grad sharded columns (phi keeps the weight's mapping)
constexpr auto gc = c_embedding_grad::infer_forward({{{64, 16}, {m3, {0, -1}}}, {{8, 4}, {m3, {1, -1}}}, {{8, 4, 16}, {m3, {-1, -1, 2}}}},
                                                    {}, semantics::phi);
static_assert(gc.outputs[0].dims_mapping() == dims_mapping{0, 2} && gc.outputs[0].partial_dims() == mesh_dims{1});
static_assert(gc.inputs[0].dims_mapping() == dims_mapping{0, 2});
static_assert(c_embedding_grad::try_infer_backward({w, ids, w}, {w}).kind() == error_kind::unimplemented);

// ==== embedding_grad: rows replicated, partial on the ids' mesh dims ==================================
constexpr auto eg = embedding_grad::infer_forward({ids, w, {{32, 512, 768}, {m2, {0, 1, -1}}}});
static_assert(eg.inputs[0].dims_mapping() == dims_mapping{0, 1} && eg.inputs[1].dims_mapping() == dims_mapping{-1, -1});
static_assert(eg.outputs[0].dims_mapping() == dims_mapping{-1, -1} && eg.outputs[0].partial_dims() == mesh_dims{0, 1});
constexpr auto eg2 = embedding_grad::infer_forward({{{8, 1}, {m3, {0, -1}}}, {{64, 16}, {m3, {-1, 2}}}, {{8, 1, 16}, {m3, {-1, 1, -1}}}},
                                                  {}, semantics::phi);
// a size-1 dim is never sharded and gives no partial; the columns follow the weight
static_assert(eg2.inputs[2].dims_mapping() == dims_mapping{0, -1, 2});
static_assert(eg2.outputs[0].dims_mapping() == dims_mapping{-1, 2} && eg2.outputs[0].partial_dims() == mesh_dims{0});
// errors
constexpr dist_tensor_spec og({32, 512, 768}, m2);
static_assert(embedding_grad::try_infer_forward({ids, w, og}, {.padding_idx = -1, .sparse = true}).kind() == error_kind::invalid_argument);
static_assert(embedding_grad::try_infer_forward({ids, w, dist_tensor_spec({32, 768}, m2)}).error().values[1] == 2);
static_assert(embedding_grad::try_infer_forward({ids, w, dist_tensor_spec({32, 511, 768}, m2)}).error().values[1] == 511);
static_assert(embedding_grad::try_infer_forward({ids, w, dist_tensor_spec({32, 512, 767}, m2)}).error().values[0] == 767);
static_assert(embedding_grad::try_infer_forward({ids, dist_tensor_spec({768}, m2), og}).kind() == error_kind::invalid_argument);
