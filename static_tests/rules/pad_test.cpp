#include <ctspmd/rules/pad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::pad;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr ctspmd_test::on_mesh spec{mesh};
using error_values = std::array<std::int64_t, 4>;
constexpr auto phi = semantics::phi;

// a padded dim is replicated, the others kept (both semantics)
constexpr auto x = spec({8, 16, 4}, {0, 1, -1});
constexpr auto f = pad::infer_forward({x}, {.paddings = {0, 0, 1, 2, 0, 0}});
static_assert(f.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && f.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(pad::infer_forward({x}, {.paddings = {0, 0, 0, 0, 0, 0}}, phi).outputs[0].dims_mapping() ==
              dims_mapping{0, 1, -1});
static_assert(pad::infer_forward({x}, {.paddings = {1, 0, 0, 0, 0, 3}}).outputs[0].dims_mapping() ==
              dims_mapping{-1, 1, -1});
// backward
constexpr auto b = pad::infer_backward({x}, {spec({8, 19, 4}, {0, 1, -1})}, {.paddings = {0, 0, 1, 2, 0, 0}});
static_assert(b.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && b.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
// co-shard
static_assert(is(pad::infer_forward({co(mesh, {8, 4}, {{1, 0}, {}})}, {.paddings = {0, 0, 1, 1}}, phi).outputs[0],
                 {{1, 0}, {}}));
static_assert(is(pad::infer_forward({co(mesh, {8, 4}, {{}, {0, 1}})}, {.paddings = {0, 0, 1, 1}}).inputs[0], {{}, {}}));
// partial: kept where copies of pad_value combine to pad_value
constexpr auto partial = [](reduce_type r) {
  tensor_dist_attr a(mesh, dims_mapping{0, -1});
  a.set_partial_status({1}, r);
  return dist_tensor_spec({8, 4}, a);
};
constexpr bool keeps(reduce_type r, double v) {
  return pad::infer_forward({partial(r)}, {.paddings = {0, 0, 1, 0}, .pad_value = v}).outputs[0].is_partial(1);
}
static_assert(keeps(reduce_type::sum, 0.0) && !keeps(reduce_type::sum, 1.0));
static_assert(keeps(reduce_type::avg, 2.5) && keeps(reduce_type::max, -1.0) && keeps(reduce_type::min, 3.0));
static_assert(keeps(reduce_type::prod, 1.0) && !keeps(reduce_type::prod, 2.0));
static_assert(keeps(reduce_type::any, 0.0) && !keeps(reduce_type::all, 0.5));
static_assert(pad::infer_forward({partial(reduce_type::sum)}, {.paddings = {0, 0, 0, 0}, .pad_value = 5.0})
                  .outputs[0]
                  .is_partial(1));  // nothing written
static_assert(!pad::infer_forward({partial(reduce_type::sum)}, {.paddings = {0, 0, 1, 0}, .pad_value = 5.0})
                   .inputs[0]
                   .is_partial());  // x must be reduced
// errors
constexpr auto count = pad::try_infer_forward({x}, {.paddings = {0, 0, 1, 2}});
static_assert(count.kind() == error_kind::invalid_argument && count.error().op == "pad" &&
              count.error().values == error_values{4, 3, 6, 0});
static_assert(pad::try_infer_forward({x}, {.paddings = {0, 0, -1, 2, 0, 0}}).error().values == error_values{1, -1, 2, 0});
static_assert(pad::try_infer_backward({x}, {spec({8, 18, 4}, {-1, -1, -1})}, {.paddings = {0, 0, 1, 2, 0, 0}})
                  .error()
                  .values == error_values{1, 18, 19, 0});
static_assert(!constant_evaluates<[] { return pad::infer_forward({x}, {}); }>);
