// where(condition, x, y) and where_grad (phi-semantics.md section 2: "cond letters; x and y are
// right-aligned suffixes (cond rank must be >= both ...). Merge uses x's mapping for y (bug) [we
// use y's]; out = cond. Grad: x_grad and y_grad Partial(sum) on the mesh dims of cond's leading
// dims that they lack.").
#include <ctspmd/registry/rules_by_name.hpp>
#include <ctspmd/rules/where.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 2, 2});
constexpr ctspmd_test::on_mesh spec{mesh};

static_assert(std::is_same_v<rule_for<"where">, where> && std::is_same_v<rule_for<"where_grad">, where_grad>);

// ==== forward =======================================================================================
// y's own mapping is merged (phi would merge x's mapping in y's place and lose y's [-1, 2])
constexpr auto f1 = where::infer_forward({spec({4, 8, 6}, {0, -1, -1}), spec({8, 6}, {1, -1}), spec({6}, {2})});
static_assert(f1.inputs[0].dims_mapping() == dims_mapping{0, 1, 2});
static_assert(f1.inputs[1].dims_mapping() == dims_mapping{1, 2} && f1.inputs[2].dims_mapping() == dims_mapping{2});
static_assert(f1.outputs[0].dims_mapping() == dims_mapping{0, 1, 2} && !f1.outputs[0].is_partial());
static_assert(where::infer_forward({spec({4, 8, 6}, {0, -1, -1}), spec({8, 6}, {1, -1}), spec({6}, {2})}, {}, semantics::phi) == f1);
// a size-1 dim is broadcast: never sharded
constexpr auto f2 = where::infer_forward({spec({4, 6}, {-1, -1}), spec({1, 6}, {0, -1}), spec({4, 6}, {-1, 1})});
static_assert(f2.inputs[1].dims_mapping() == dims_mapping{-1, 1} && f2.outputs[0].dims_mapping() == dims_mapping{-1, 1});
// two mesh dims on one axis: fluid conflict, phi co-shard
static_assert(where::try_infer_forward({spec({8}, {0}), spec({8}, {1}), spec({8}, {-1})}).kind() == error_kind::unimplemented);
static_assert(is(where::infer_forward({spec({8}, {0}), spec({8}, {1}), spec({8}, {-1})}, {}, semantics::phi).outputs[0],
                 {{0, 1}}));
static_assert(is(where::infer_forward({co(mesh, {8}, {{0, 1}}), spec({8}, {-1}), spec({8}, {-1})}).inputs[2], {{0, 1}}));
// backward: out's mapping
constexpr auto b1 = where::infer_backward({spec({4, 8}, {-1, -1}), spec({8}, {-1}), spec({1, 8}, {-1, -1})},
                                          {spec({4, 8}, {0, 1})});
static_assert(b1.inputs[0].dims_mapping() == dims_mapping{0, 1} && b1.inputs[1].dims_mapping() == dims_mapping{1});
static_assert(b1.inputs[2].dims_mapping() == dims_mapping{-1, 1});
// errors: x or y of a higher rank than condition
constexpr auto e1 = where::try_infer_forward({spec({8}, {-1}), spec({4, 8}, {-1, -1}), spec({8}, {-1})});
static_assert(e1.kind() == error_kind::invalid_argument && e1.error().values[0] == 'x' && e1.error().values[1] == 2);
static_assert(where::try_infer_forward({spec({8}, {-1}), spec({8}, {-1}), spec({4, 8}, {-1, -1})}).error().values[0] == 'y');
static_assert(where::try_infer_forward({spec({8}, {-1}), spec({8}, {-1}), spec({3}, {-1})}).kind() == error_kind::invalid_argument);

// ==== grad ==========================================================================================
constexpr auto g1 = where_grad::infer_forward(
    {spec({4, 8, 6}, {-1, -1, -1}), spec({8, 6}, {-1, -1}), spec({6}, {-1}), spec({4, 8, 6}, {0, 1, 2})});
static_assert(g1.inputs.size() == 4 && g1.outputs.size() == 2);
static_assert(g1.inputs[0].dims_mapping() == dims_mapping{0, 1, 2} && g1.inputs[1].dims_mapping() == dims_mapping{1, 2});
static_assert(g1.inputs[2].dims_mapping() == dims_mapping{2});
static_assert(g1.outputs[0].dims_mapping() == dims_mapping{1, 2} && g1.outputs[0].partial_dims() == mesh_dims{0});
static_assert(g1.outputs[1].dims_mapping() == dims_mapping{2} && g1.outputs[1].partial_dims() == mesh_dims{0, 1});
static_assert(where_grad::infer_forward({spec({4, 8, 6}, {-1, -1, -1}), spec({8, 6}, {-1, -1}), spec({6}, {-1}),
                                         spec({4, 8, 6}, {0, 1, 2})},
                                        {}, semantics::phi) == g1);
static_assert(where_grad::try_infer_forward({spec({8}, {-1}), spec({4, 8}, {-1, -1}), spec({8}, {-1}), spec({4, 8}, {-1, -1})})
                  .kind() == error_kind::invalid_argument);
static_assert(where_grad::try_infer_backward({spec({8}, {-1}), spec({8}, {-1}), spec({8}, {-1}), spec({8}, {-1})},
                                             {spec({8}, {-1}), spec({8}, {-1})})
                  .kind() == error_kind::unimplemented);

// ==== Paddle's test_where_rule.py (0ab6998c): mesh [2, 2] =================================================
namespace paddle_cases {
constexpr process_mesh m22({2, 2});
constexpr dist_tensor_spec cond{{16, 16, 16}, {m22, {-1, 0, -1}}};
constexpr dist_tensor_spec x{{16, 16}, {m22, {-1, 0}}};
constexpr dist_tensor_spec y{{16}, {m22, {0}}};
constexpr auto fwd = where::infer_forward({cond, x, y});
static_assert(fwd.inputs[0].dims_mapping() == dims_mapping{-1, 0, -1} && fwd.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(fwd.inputs[2].dims_mapping() == dims_mapping{-1} && fwd.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
static_assert(where::infer_forward({cond, x, y}, {}, semantics::phi) == fwd);
constexpr auto rev = where::infer_backward({cond, x, y}, {cond});
static_assert(rev.inputs[0].dims_mapping() == dims_mapping{-1, 0, -1} && rev.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(rev.inputs[2].dims_mapping() == dims_mapping{-1} && rev.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
}  // namespace paddle_cases
