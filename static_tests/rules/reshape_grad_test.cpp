#include <ctspmd/rules/reshape_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::reshape_grad;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr ctspmd_test::on_mesh spec{mesh};
using error_values = std::array<std::int64_t, 4>;
constexpr auto phi = semantics::phi;

// x_grad = out_grad reshaped to x's shape; x comes back as given
// flatten_grad: x [8, 16, 8, 24], out_grad [8, 128, 24] (test_flatten_rule.py's shapes)
constexpr auto x = spec({8, 16, 8, 24}, {1, -1, -1, -1});
constexpr auto fl = reshape_grad::infer_forward({x, spec({8, 128, 24}, {0, 1, -1})}, {});
static_assert(fl.inputs.size() == 2 && fl.outputs.size() == 1);
static_assert(fl.inputs[0] == x.dist_attr());
static_assert(fl.inputs[1].dims_mapping() == dims_mapping{0, 1, -1});
static_assert(fl.outputs[0].dims_mapping() == dims_mapping{0, 1, -1, -1});  // 16 % 4 == 0
// the split's first piece must divide: 16 % ... [8, 3072] -> [8, 16, 8, 24]
static_assert(reshape_grad::infer_forward({x, spec({8, 3072}, {0, 1})}, {}).outputs[0].dims_mapping() ==
              dims_mapping{0, 1, -1, -1});
// squeeze_grad / unsqueeze_grad: size-1 dims
constexpr auto sq = reshape_grad::infer_forward({spec({1, 8, 1, 16}, {-1, -1, -1, -1}), spec({8, 16}, {0, 1})}, {});
static_assert(sq.inputs[1].dims_mapping() == dims_mapping{0, 1} && sq.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1, 1});
constexpr auto usq = reshape_grad::infer_forward({spec({8, 16}, {-1, -1}), spec({1, 8, 16, 1}, {1, 0, -1, -1})}, {});
static_assert(usq.inputs[1].dims_mapping() == dims_mapping{-1, 0, -1, -1} && usq.outputs[0].dims_mapping() == dims_mapping{0, -1});
// phi: the co-shard dim transformation
static_assert(is(reshape_grad::infer_forward({co(mesh, {192}, {{}}), co(mesh, {4, 6, 8}, {{0}, {}, {1}})}, {}, phi).outputs[0],
                 {{0}}));
static_assert(is(reshape_grad::infer_forward({co(mesh, {8, 4, 6}, {{}, {}, {}}), co(mesh, {192}, {{0, 1}})}, {}, phi)
                     .outputs[0],
                 {{0, 1}, {}, {}}));
// out_grad's partial passes to x_grad
constexpr auto partial_g = [] {
  tensor_dist_attr a(mesh, dims_mapping{0, -1});
  a.set_partial_status({1}, reduce_type::sum);
  return dist_tensor_spec({8, 16}, a);
}();
static_assert(reshape_grad::infer_forward({spec({8, 4, 4}, {-1, -1, -1}), partial_g}, {}).outputs[0].partial_dims() ==
              mesh_dims{1});
// a 0-D x
static_assert(reshape_grad::infer_forward({spec({}, {}), spec({1, 1}, {-1, -1})}, {}).outputs[0].dims_mapping() == dims_mapping{});
// errors
constexpr auto count = reshape_grad::try_infer_forward({x, spec({8, 16}, {-1, -1})}, {});
static_assert(count.kind() == error_kind::invalid_argument && count.error().op == "reshape_grad" &&
              count.error().values == error_values{128, 2, 24576, 4});
static_assert(reshape_grad::try_infer_backward({x, x}, {x}, {}).kind() == error_kind::unimplemented);
static_assert(!reshape_grad::try_infer_forward({x}, {}));
