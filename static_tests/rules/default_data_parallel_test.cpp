#include <ctspmd/rules/default_data_parallel.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::default_data_parallel;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr auto phi = semantics::phi;
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

// ==== forward ====================================================================================
// dim 0 merged; every other dim replicated; one output of input 0's rank.
constexpr auto f = default_data_parallel::infer_forward({spec({8, 16, 4}, {-1, 0, 1}), spec({8, 6}, {1, -1})});
static_assert(f.inputs.size() == 2 && f.outputs.size() == 1);
static_assert(f.inputs[0].dims_mapping() == dims_mapping{1, -1, -1} && f.inputs[1].dims_mapping() == dims_mapping{1, -1});
static_assert(f.outputs[0].dims_mapping() == dims_mapping{1, -1, -1} && !f.outputs[0].is_partial());
// first-wins under fluid: input 0's batch mesh dim 0
static_assert(default_data_parallel::infer_forward({spec({8, 16}, {0, -1}), spec({8}, {0})}).outputs[0].dims_mapping() ==
              dims_mapping{0, -1});
static_assert(default_data_parallel::try_infer_forward({spec({8, 16}, {0, -1}), spec({8}, {1})}).kind() ==
              error_kind::unimplemented);
// phi: the batch co-shards (input 1 has more shards: first in the union)
static_assert(is(default_data_parallel::infer_forward({spec({8, 16}, {0, -1}), spec({8}, {1})}, {}, phi).outputs[0],
                 {{1, 0}, {}}));
// phi: a mesh dim that does not divide the batch is dropped
static_assert(is(default_data_parallel::infer_forward({spec({6, 16}, {1, 0})}, {}, phi).inputs[0], {{}, {}}));
static_assert(is(default_data_parallel::infer_forward({co(mesh, {8, 16}, {{0, 1}, {}})}, {}, phi).outputs[0],
                 {{0, 1}, {}}));
static_assert(is(default_data_parallel::infer_forward({co(mesh, {8, 16}, {{0, 1}, {}})}).outputs[0], {{0, 1}, {}}));
// size-1 batch and 0-D operands are not sharded; partial dropped
constexpr auto odd = default_data_parallel::infer_forward(
    {partial_spec({8, 2}, {0, -1}, 1), spec({1, 4}, {-1, -1}), spec({}, {})});
static_assert(odd.inputs[0].dims_mapping() == dims_mapping{0, -1} && !odd.inputs[0].is_partial());
static_assert(odd.inputs[1].dims_mapping() == dims_mapping{-1, -1} && odd.inputs[2].rank() == 0);
static_assert(!odd.outputs[0].is_partial());
// errors
constexpr auto sizes = default_data_parallel::try_infer_forward({spec({8, 2}, {0, -1}), spec({6, 2}, {-1, -1})});
static_assert(sizes.kind() == error_kind::invalid_argument && sizes.error().op == "default_data_parallel");
static_assert(sizes.error().values == std::array<std::int64_t, 4>{1, 6, 0, 8});
static_assert(!default_data_parallel::try_infer_forward(std::span<const dist_tensor_spec>{}));
static_assert(!constant_evaluates<[] {
  return default_data_parallel::infer_forward({spec({8, 2}, {0, -1}), spec({6, 2}, {-1, -1})});
}>);

// ==== backward ===================================================================================
constexpr auto b = default_data_parallel::infer_backward({spec({8, 16}, {1, 0}), spec({8}, {-1})},
                                                         {spec({8, 3}, {0, 1})});
static_assert(b.inputs[0].dims_mapping() == dims_mapping{0, -1} && b.inputs[1].dims_mapping() == dims_mapping{0});
static_assert(b.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(default_data_parallel::infer_backward({spec({8, 16}, {1, 0})}, {}).inputs[0].dims_mapping() ==
              dims_mapping{-1, -1});
static_assert(default_data_parallel::try_infer_backward({spec({8, 16}, {1, 0})}, {spec({8}, {0}), spec({4}, {0})})
                  .error()
                  .values == std::array<std::int64_t, 4>{1, 4, 0, 8});
