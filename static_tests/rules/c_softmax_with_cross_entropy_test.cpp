#include <ctspmd/rules/c_softmax_with_cross_entropy.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::c_softmax_with_cross_entropy;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m2({2, 4});
constexpr process_mesh m3({2, 2, 2});

// ==== forward: the vocabulary shard kept on logits and softmax; loss replicated on it =============
constexpr dist_tensor_spec logits({8, 512, 50304}, {m2, {0, -1, 1}});
constexpr dist_tensor_spec label({8, 512, 1}, {m2, {-1, -1, -1}});
constexpr auto f = c_softmax_with_cross_entropy::infer_forward({logits, label});
static_assert(f.inputs[0].dims_mapping() == dims_mapping{0, -1, 1} && f.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(f.outputs[0].dims_mapping() == dims_mapping{0, -1, 1} && f.outputs[1].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(!f.outputs[0].is_partial() && !f.outputs[1].is_partial());
static_assert(c_softmax_with_cross_entropy::infer_forward({logits, label}, {}, semantics::phi) == f);
// the label's sharding merges in; its size-1 last dim is never sharded
constexpr auto l = c_softmax_with_cross_entropy::infer_forward({{{8, 512, 64}, {m2, {-1, -1, 1}}}, {{8, 512, 1}, {m2, {-1, 0, -1}}}});
static_assert(l.inputs[0].dims_mapping() == dims_mapping{-1, 0, 1} && l.outputs[1].dims_mapping() == dims_mapping{-1, 0, -1});
// phi: a co-shard from the two operands
constexpr auto cs = c_softmax_with_cross_entropy::infer_forward({co(m3, {8, 64}, {{0}, {2}}), co(m3, {8, 1}, {{1}, {}})}, {},
                                                                semantics::phi);
static_assert(is(cs.inputs[0], {{0, 1}, {2}}) && is(cs.outputs[1], {{0, 1}, {}}));
// partial inputs come back whole
constexpr auto p = [] {
  tensor_dist_attr a(m2, {-1, -1, 1});
  a.set_partial_status({0});
  return c_softmax_with_cross_entropy::infer_forward({{{8, 512, 64}, a}, label});
}();
static_assert(!p.inputs[0].is_partial() && p.outputs[0].dims_mapping() == dims_mapping{-1, -1, 1});

// ==== backward: from softmax and loss ===========================================================
constexpr auto b = c_softmax_with_cross_entropy::infer_backward(
    {logits, label}, {{{8, 512, 50304}, {m2, {-1, -1, 1}}}, {{8, 512, 1}, {m2, {0, -1, -1}}}});
static_assert(b.inputs[0].dims_mapping() == dims_mapping{0, -1, 1} && b.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(b.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});

// ==== errors ========================================================================================
static_assert(c_softmax_with_cross_entropy::try_infer_forward({logits, {{8, 512}, m2}}).kind() == error_kind::invalid_argument);
static_assert(c_softmax_with_cross_entropy::try_infer_forward({logits, {{8, 512, 2}, m2}}).error().values[0] == 2);
static_assert(c_softmax_with_cross_entropy::try_infer_forward({logits, {{8, 256, 1}, m2}}).error().values[1] == 256);
static_assert(c_softmax_with_cross_entropy::try_infer_forward({{{}, m2}, {{}, m2}}).kind() == error_kind::invalid_argument);
static_assert(c_softmax_with_cross_entropy::try_infer_backward({logits, label}, {logits, {{8, 512}, m2}}).kind() ==
              error_kind::invalid_argument);

// ==== c_softmax_with_cross_entropy_grad (softmax, label, loss_grad) -> logits_grad ================
namespace grad_cases {
using ctspmd::rules::c_softmax_with_cross_entropy_grad;
using g = c_softmax_with_cross_entropy_grad;
static_assert(g::input_count == operand_count{3} && g::output_count == operand_count{1});
// the forward's layout: the vocabulary shard kept, logits_grad = softmax's mapping
constexpr auto g1 = g::infer_forward({dist_tensor_spec({8, 512, 50304}, f.outputs[0]), dist_tensor_spec({8, 512, 1}, f.inputs[1]),
                                      dist_tensor_spec({8, 512, 1}, f.outputs[1])});
static_assert(g1.outputs[0] == f.inputs[0] && g1.inputs[0] == f.outputs[0] && g1.inputs[2].dims_mapping() == dims_mapping{0, -1, -1});
// leading dims merged across the three; the label's and loss_grad's last dim replicated
constexpr auto g2 = g::infer_forward({dist_tensor_spec({8, 512, 64}, {m2, {-1, -1, 1}}), dist_tensor_spec({8, 512, 1}, {m2, {-1, 0, -1}}),
                                      dist_tensor_spec({8, 512, 1}, {m2, {-1, -1, 1}})});
static_assert(g2.outputs[0].dims_mapping() == dims_mapping{-1, 0, 1} && g2.inputs[2].dims_mapping() == dims_mapping{-1, 0, -1});
// partial loss_grad comes back whole
constexpr auto g3 = [] {
  tensor_dist_attr a(m2, {0, -1});
  a.set_partial_status({1});
  return g::infer_forward({dist_tensor_spec({8, 64}, {m2, {0, 1}}), dist_tensor_spec({8, 1}, {m2, {0, -1}}),
                           dist_tensor_spec({8, 1}, a)});
}();
static_assert(!g3.inputs[2].is_partial() && !g3.outputs[0].is_partial() && g3.outputs[0].dims_mapping() == dims_mapping{0, 1});
// co-shard: under both semantics a list merges as a unit; phi unions differing lists
static_assert(is(g::infer_forward({co(m3, {8, 16}, {{0, 1}, {2}}), co(m3, {8, 1}, {{0, 1}, {}}), co(m3, {8, 1}, {{}, {}})}).outputs[0],
                 {{0, 1}, {2}}));
static_assert(is(g::infer_forward({co(m3, {8, 16}, {{0}, {2}}), co(m3, {8, 1}, {{1}, {}}), co(m3, {8, 1}, {{}, {}})}, {},
                                  semantics::phi)
                     .outputs[0],
                 {{0, 1}, {2}}));
static_assert(g::try_infer_forward({co(m3, {8, 16}, {{0}, {2}}), co(m3, {8, 1}, {{1}, {}}), co(m3, {8, 1}, {{}, {}})}).kind() ==
              error_kind::unimplemented);
// errors
constexpr auto e1 = g::try_infer_forward({dist_tensor_spec({8, 64}, {m2, {0, 1}}), dist_tensor_spec({8, 1}, {m2, {0, -1}}),
                                          dist_tensor_spec({8}, {m2, {0}})});
static_assert(e1.kind() == error_kind::invalid_argument && e1.error().op == "c_softmax_with_cross_entropy_grad" &&
              e1.error().values == std::array<std::int64_t, 4>{2, 1, 0, 0});
static_assert(g::try_infer_forward({dist_tensor_spec({8, 64}, {m2, {0, 1}}), dist_tensor_spec({8, 1}, {m2, {0, -1}}),
                                    dist_tensor_spec({8, 2}, {m2, {0, -1}})})
                  .error()
                  .values == std::array<std::int64_t, 4>{1, 2, 1, 0});
static_assert(!g::try_infer_forward({dist_tensor_spec({8, 64}, {m2, {0, 1}}), dist_tensor_spec({8, 3}, {m2, {0, -1}}),
                                     dist_tensor_spec({8, 1}, {m2, {0, -1}})}));
static_assert(g::try_infer_forward({dist_tensor_spec({}, {m2, {}}), dist_tensor_spec({}, {m2, {}}), dist_tensor_spec({}, {m2, {}})})
                  .error()
                  .values[0] == 0);
static_assert(g::try_infer_backward({dist_tensor_spec({8, 64}, {m2, {0, 1}}), dist_tensor_spec({8, 1}, {m2, {0, -1}}),
                                     dist_tensor_spec({8, 1}, {m2, {0, -1}})},
                                    {dist_tensor_spec({8, 64}, {m2, {0, 1}})})
                  .kind() == error_kind::unimplemented);
}  // namespace grad_cases
