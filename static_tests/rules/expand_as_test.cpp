#include <ctspmd/rules/expand_as.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::expand_as;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr dist_tensor_spec absent{{}, {mesh, dims_mapping{}}};
using error_values = std::array<std::int64_t, 4>;
constexpr auto phi = semantics::phi;

// y decides: an x dim of y's size takes y's mapping, a broadcast (size-1) dim is replicated
constexpr auto f = expand_as::infer_forward({spec({1, 16}, {-1, 1}), spec({4, 8, 16}, {1, 0, -1})}, {});
static_assert(f.inputs.size() == 2 && f.outputs.size() == 1);
static_assert(f.inputs[0].dims_mapping() == dims_mapping{-1, -1});  // x's dim 1 follows y: replicated
static_assert(f.inputs[1].dims_mapping() == dims_mapping{1, 0, -1});  // y as given
static_assert(f.outputs[0].dims_mapping() == dims_mapping{1, 0, -1});
static_assert(expand_as::infer_forward({spec({8, 16}, {-1, -1}), spec({4, 8, 16}, {-1, 0, 1})}, {}, phi)
                  .inputs[0]
                  .dims_mapping() == dims_mapping{0, 1});
// y absent: target_shape, x's own mapping, new leading dims replicated
constexpr auto tgt = expand_as::infer_forward({spec({8, 1}, {0, -1}), absent}, {.target_shape = {3, 8, 5}});
static_assert(tgt.inputs[0].dims_mapping() == dims_mapping{0, -1} && tgt.inputs[1].dims_mapping() == dims_mapping{});
static_assert(tgt.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
// backward: the output's mapping to x (not at broadcast dims) and y
constexpr auto b = expand_as::infer_backward({spec({1, 16}, {-1, -1}), spec({4, 8, 16}, {-1, -1, -1})},
                                             {spec({4, 8, 16}, {-1, 0, 1})}, {});
static_assert(b.inputs[0].dims_mapping() == dims_mapping{-1, 1} && b.inputs[1].dims_mapping() == dims_mapping{-1, 0, 1});
static_assert(b.outputs[0].dims_mapping() == dims_mapping{-1, 0, 1});
static_assert(expand_as::infer_backward({spec({8, 1}, {-1, -1}), absent}, {spec({3, 8, 5}, {1, 0, -1})},
                                        {.target_shape = {3, 8, 5}})
                  .inputs[1]
                  .dims_mapping() == dims_mapping{});
// co-shard lists of y pass whole
static_assert(is(expand_as::infer_forward({co(mesh, {8, 1}, {{}, {}}), co(mesh, {8, 4}, {{1, 0}, {}})}, {}, phi).inputs[0],
                 {{1, 0}, {}}));
static_assert(is(expand_as::infer_forward({co(mesh, {8, 1}, {{}, {}}), co(mesh, {8, 4}, {{0, 1}, {}})}, {}).outputs[0],
                 {{0, 1}, {}}));
// partial x stays partial except where y makes x shard
constexpr auto partial_x = [] {
  tensor_dist_attr a(mesh, dims_mapping{-1, -1});
  a.set_partial_status({0, 1}, reduce_type::sum);
  return dist_tensor_spec({8, 16}, a);
}();
constexpr auto p = expand_as::infer_forward({partial_x, spec({8, 16}, {0, -1})}, {});
static_assert(p.inputs[0].dims_mapping() == dims_mapping{0, -1} && p.inputs[0].partial_dims() == mesh_dims{1});
static_assert(p.outputs[0].partial_dims() == mesh_dims{1});
// found by the oracle: a 0-D partial x expanded along a dim y shards must be reduced there
constexpr auto scalar_partial = [] {
  tensor_dist_attr a(mesh, dims_mapping{});
  a.set_partial_status({0}, reduce_type::sum);
  return dist_tensor_spec({}, a);
}();
constexpr auto sp = expand_as::infer_forward({scalar_partial, spec({4}, {0})}, {});
static_assert(!sp.inputs[0].is_partial() && sp.outputs[0].dims_mapping() == dims_mapping{0} && !sp.outputs[0].is_partial());
// errors
constexpr auto size = expand_as::try_infer_forward({spec({3, 16}, {-1, -1}), spec({4, 8, 16}, {-1, -1, -1})}, {});
static_assert(size.kind() == error_kind::invalid_argument && size.error().op == "expand_as" &&
              size.error().values == error_values{0, 3, 1, 8});
constexpr auto rank = expand_as::try_infer_forward({spec({2, 3, 16}, {-1, -1, -1}), spec({3, 16}, {-1, -1})}, {});
static_assert(rank.kind() == error_kind::invalid_argument && rank.error().values == error_values{3, 2, 2, 0});
static_assert(expand_as::try_infer_forward({spec({8}, {-1}), absent}, {}).error().values == error_values{1, 0, 0, 0});
static_assert(expand_as::try_infer_backward({spec({1, 16}, {-1, -1}), spec({4, 8, 16}, {-1, -1, -1})},
                                            {spec({4, 8, 8}, {-1, -1, -1})}, {})
                  .error()
                  .values == error_values{2, 8, 16, 0});
static_assert(!constant_evaluates<[] { return expand_as::infer_forward({spec({3}, {-1}), spec({4}, {-1})}, {}); }>);
