#include <ctspmd/rules/pad_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::pad_grad;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m2({2, 4});
constexpr process_mesh m3({2, 2, 2});

constexpr tensor_dist_attr partial_on(tensor_dist_attr a, std::int64_t m, reduce_type r = reduce_type::sum) {
  a.set_partial_status({m}, r);
  return a;
}

// ==== padded dims replicated, the others kept ======================================================
// x [16, 8, 6] padded by 1 and 2 along dim 2: out_grad [16, 8, 9]
constexpr pad_grad::attributes a1{.paddings = {0, 0, 0, 0, 1, 2}};
constexpr auto g1 = pad_grad::infer_forward({{{16, 8, 9}, {m2, {0, -1, 1}}}}, a1);
static_assert(g1.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(g1.outputs[0].dims_mapping() == dims_mapping{0, -1, -1} && !g1.outputs[0].is_partial());
static_assert(pad_grad::infer_forward({{{16, 8, 9}, {m2, {0, -1, 1}}}}, a1, semantics::phi) == g1);
// no padding: everything kept; a co-shard list as a unit
constexpr auto g2 = pad_grad::infer_forward({co(m3, {16, 8, 4}, {{0, 1}, {2}, {}})}, {.paddings = {0, 0, 0, 0, 0, 0}});
static_assert(is(g2.inputs[0], {{0, 1}, {2}, {}}) && is(g2.outputs[0], {{0, 1}, {2}, {}}));
// pad_value is not read
static_assert(pad_grad::infer_forward({{{16, 8, 9}, {m2, {0, -1, 1}}}}, {.paddings = {0, 0, 0, 0, 1, 2}, .pad_value = 3.0}) == g1);

// ==== partial out_grad kept (slicing commutes with every reduction) ================================
constexpr auto p1 = pad_grad::infer_forward({{{16, 8, 9}, partial_on({m2, {0, -1, -1}}, 1, reduce_type::min)}}, a1);
static_assert(p1.inputs[0].partial_dims() == mesh_dims{1} && p1.inputs[0].partial_reduce_type(1) == reduce_type::min);
static_assert(p1.outputs[0].partial_dims() == mesh_dims{1} && p1.outputs[0].partial_reduce_type(1) == reduce_type::min);

// ==== errors =======================================================================================
static_assert(pad_grad::try_infer_forward({{{16, 8, 9}, m2}}, {.paddings = {0, 0, 1, 2}}).error().values[0] == 4);
static_assert(pad_grad::try_infer_forward({{{16, 8, 9}, m2}}, {.paddings = {0, 0, 0, -1, 0, 0}}).error().values[0] == 1);
static_assert(pad_grad::try_infer_forward({{{16, 8, 2}, m2}}, a1).error().values[1] == 2);  // x would have size -1
static_assert(pad_grad::try_infer_forward({{{16, 8, -1}, m2}}, a1));
static_assert(pad_grad::try_infer_forward({{{16, 8, 9}, m2}}, {.paddings = {0, 0, 0, 0, 0x4000000000000000, 1}}).kind() ==
              error_kind::invalid_argument);
static_assert(pad_grad::try_infer_backward({{{16, 8, 9}, m2}}, {{{16, 8, 6}, m2}}, a1).kind() == error_kind::unimplemented);
