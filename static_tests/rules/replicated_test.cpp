#include <ctspmd/rules/replicated.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::replicated;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr dist_tensor_spec partial_spec(tensor_shape shape, dims_mapping dm, std::int64_t partial_dim) {
  tensor_dist_attr a(mesh, dm);
  a.set_partial_status({partial_dim});
  a.set_batch_dim(1);
  return {shape, a};
}

// ==== forward ===================================================================================
// Every input replicated (a partial one too); one output of input 0's rank, replicated.
constexpr auto fwd = replicated::infer_forward({spec({4, 8}, {0, 1}), partial_spec({3}, {-1}, 0), spec({}, {})});
static_assert(fwd.inputs.size() == 3 && fwd.outputs.size() == 1);
static_assert(fwd.inputs[0].dims_mapping() == dims_mapping{-1, -1});
static_assert(fwd.inputs[1].dims_mapping() == dims_mapping{-1} && !fwd.inputs[1].is_partial());
static_assert(fwd.inputs[1].batch_dim() == 1 && fwd.inputs[1].process_mesh() == mesh);
static_assert(fwd.inputs[2].dims_mapping() == dims_mapping{});
static_assert(fwd.outputs[0].dims_mapping() == dims_mapping{-1, -1} && !fwd.outputs[0].is_partial());
static_assert(fwd.outputs[0].process_mesh() == mesh);

// The output follows input 0, whatever the others' ranks.
constexpr auto fwd1 = replicated::infer_forward({spec({5}, {1}), spec({2, 3, 4}, {0, -1, 1})});
static_assert(fwd1.outputs[0].dims_mapping() == dims_mapping{-1});
static_assert(fwd1.inputs[1].dims_mapping() == dims_mapping{-1, -1, -1});
static_assert(replicated::infer_forward({spec({}, {})}).outputs[0].dims_mapping() == dims_mapping{});

// ---- bad operands ----------------------------------------------------------------------------------
constexpr auto none = replicated::try_infer_forward(std::span<const dist_tensor_spec>{});
static_assert(none.kind() == error_kind::invalid_argument && none.error().op == "replicated");
static_assert(none.error().values[0] == 0);
static_assert(!replicated::try_infer_forward({spec({4}, {-1}), dist_tensor_spec({4}, process_mesh({6}))}));
static_assert(!constant_evaluates<[] { return replicated::infer_forward(std::span<const dist_tensor_spec>{}); }>);

// ==== backward ==================================================================================
// Every input and every output replicated, not partial.
constexpr auto back = replicated::infer_backward({spec({4, 8}, {0, -1}), spec({8}, {1})},
                                                 {partial_spec({4, 8}, {-1, 1}, 0), spec({2, 4}, {1, 0})});
static_assert(back.inputs.size() == 2 && back.outputs.size() == 2);
static_assert(back.inputs[0].dims_mapping() == dims_mapping{-1, -1});
static_assert(back.inputs[1].dims_mapping() == dims_mapping{-1});
static_assert(back.outputs[0].dims_mapping() == dims_mapping{-1, -1} && !back.outputs[0].is_partial());
static_assert(back.outputs[0].batch_dim() == 1);
static_assert(back.outputs[1].dims_mapping() == dims_mapping{-1, -1});

// Any counts are accepted backward, none included.
constexpr auto back_none = replicated::infer_backward({spec({4}, {0})}, {});
static_assert(back_none.inputs.size() == 1 && back_none.outputs.size() == 0);
static_assert(back_none.inputs[0].dims_mapping() == dims_mapping{-1});

// Forward of the inferred inputs gives the returned output (the batch dim aside: it follows input 0).
static_assert(
    replicated::infer_forward({dist_tensor_spec({4, 8}, back.inputs[0]), dist_tensor_spec({8}, back.inputs[1])})
        .outputs[0] == replicated_on_mesh(spec({4, 8}, {-1, 1}).dist_attr()));

// ---- bad operands ----------------------------------------------------------------------------------
static_assert(!replicated::try_infer_backward({spec({4}, {-1})}, {dist_tensor_spec({4}, process_mesh({6}))}));

// ==== phi and co-shard: everything replicated alike ===================================================
static_assert(replicated::infer_forward({dist_tensor_spec({8, 8}, {process_mesh({2, 2}), {{0, 1}, {}}})}, {}, semantics::phi)
                  .inputs[0]
                  .dims_mapping() == dims_mapping{-1, -1});
