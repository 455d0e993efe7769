#include <ctspmd/rules/slice_grad.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::slice_grad;
using ctspmd::rules::strided_slice_grad;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh m2({2, 4});
constexpr process_mesh m3({2, 2, 2});

constexpr tensor_dist_attr partial_on(tensor_dist_attr a, std::int64_t m, reduce_type r = reduce_type::sum) {
  a.set_partial_status({m}, r);
  return a;
}

// ==== slice_grad: sliced axes replicated, out_grad then x merged ==================================
// x [16, 32, 8] sliced along dim 1 (x[:, 4:20]); out_grad [16, 16, 8]
constexpr slice_grad::attributes a1{.axes = {1}, .starts = {4}, .ends = {20}};
constexpr auto s1 = slice_grad::infer_forward({{{16, 32, 8}, {m2, {-1, 0, 1}}}, {{16, 16, 8}, {m2, {0, 1, -1}}}}, a1);
// out_grad's dim 0 takes mesh dim 0; its sliced dim 1 proposes nothing, so x's dim 2 takes mesh dim 1
static_assert(s1.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(s1.inputs[1].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(s1.outputs[0].dims_mapping() == dims_mapping{0, -1, 1} && !s1.outputs[0].is_partial());
// an unsliced dim of x is taken when out_grad does not shard it
constexpr auto s2 = slice_grad::infer_forward({{{16, 32, 8}, {m2, {-1, -1, 1}}}, {{16, 16, 8}, {m2, {0, -1, -1}}}}, a1);
static_assert(s2.outputs[0].dims_mapping() == dims_mapping{0, -1, 1} && s2.inputs[1].dims_mapping() == dims_mapping{0, -1, 1});
// two mesh dims on one axis: an error under fluid, a co-shard under phi
static_assert(slice_grad::try_infer_forward({{{16, 32, 8}, {m2, {1, -1, -1}}}, {{16, 16, 8}, {m2, {0, -1, -1}}}}, a1)
                  .kind() == error_kind::unimplemented);
// a mesh dim claimed by two axes stays with out_grad's under fluid
static_assert(slice_grad::infer_forward({{{16, 32, 8}, {m2, {-1, -1, 0}}}, {{16, 16, 8}, {m2, {0, -1, -1}}}}, a1)
                  .outputs[0]
                  .dims_mapping() == dims_mapping{0, -1, -1});
constexpr auto s3p =
    slice_grad::infer_forward({{{16, 32, 8}, {m2, {1, -1, -1}}}, {{16, 16, 8}, {m2, {0, -1, -1}}}}, a1, semantics::phi);
static_assert(is(s3p.outputs[0], {{1, 0}, {}, {}}) && is(s3p.inputs[1], {{1, 0}, {}, {}}));
// decrease_axis: x [16, 32, 8], x[:, 3, :] -> out_grad [16, 8]
constexpr slice_grad::attributes a4{.axes = {1}, .starts = {3}, .ends = {4}, .decrease_axis = {1}};
constexpr auto s4 = slice_grad::infer_forward({{{16, 32, 8}, {m2, {-1, 0, -1}}}, {{16, 8}, {m2, {0, 1}}}}, a4);
static_assert(s4.inputs[0].dims_mapping() == dims_mapping{0, -1, 1} && s4.inputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(s4.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
// a co-shard out_grad passes as a unit (both semantics)
constexpr auto s5 = slice_grad::infer_forward({co(m3, {16, 32, 8}, {{}, {}, {}}), co(m3, {16, 16, 8}, {{0, 1}, {}, {2}})}, a1);
static_assert(is(s5.outputs[0], {{0, 1}, {}, {2}}));
static_assert(slice_grad::infer_forward({co(m3, {16, 32, 8}, {{}, {}, {}}), co(m3, {16, 16, 8}, {{0, 1}, {}, {2}})}, a1,
                                        semantics::phi) == s5);

// ==== partial out_grad: kept on every reduce type where unsharded ===================================
constexpr auto p1 = slice_grad::infer_forward(
    {{{16, 32, 8}, {m2, {-1, -1, -1}}}, {{16, 16, 8}, partial_on({m2, {0, -1, -1}}, 1, reduce_type::max)}}, a1);
static_assert(p1.inputs[1].partial_dims() == mesh_dims{1} && p1.inputs[1].partial_reduce_type(1) == reduce_type::max);
static_assert(p1.outputs[0].partial_dims() == mesh_dims{1} && p1.outputs[0].partial_reduce_type(1) == reduce_type::max);
static_assert(!p1.inputs[0].is_partial());
// x shards with the mesh dim out_grad is partial on: out_grad is made whole there (phi)
constexpr auto p2 = slice_grad::infer_forward(
    {{{16, 32, 8}, {m2, {-1, -1, 1}}}, {{16, 16, 8}, partial_on({m2, {0, -1, -1}}, 1)}}, a1, semantics::phi);
static_assert(p2.outputs[0].dims_mapping() == dims_mapping{0, -1, 1} && !p2.outputs[0].is_partial());
static_assert(!p2.inputs[1].is_partial());
// x's own partial status does not count
static_assert(!slice_grad::infer_forward({{{16, 32, 8}, partial_on({m2, {-1, -1, -1}}, 1)}, {{16, 16, 8}, {m2, {0, -1, -1}}}}, a1)
                   .outputs[0]
                   .is_partial());

// ==== strided_slice_grad ===========================================================================
// x [16, 32, 8], x[:, 1:30:3] along dim 1 (10 elements), and dim 2 reversed ([::-1])
constexpr strided_slice_grad::attributes b1{.axes = {1, -1}, .starts = {1, -1}, .ends = {30, -100}, .strides = {3, -1}};
constexpr auto t1 =
    strided_slice_grad::infer_forward({{{16, 32, 8}, {m2, {0, 1, -1}}}, {{16, 10, 8}, {m2, {-1, -1, 1}}}}, b1);
static_assert(t1.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && t1.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(t1.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
// the last axis with one stride is replicated too (Paddle's grad rule does the same)
constexpr strided_slice_grad::attributes b2{.axes = {2}, .starts = {0}, .ends = {8}, .strides = {2}};
static_assert(strided_slice_grad::infer_forward({{{16, 32, 8}, {m2, {-1, -1, 1}}}, {{16, 32, 4}, {m2, {-1, -1, 1}}}}, b2)
                  .outputs[0]
                  .dims_mapping() == dims_mapping{-1, -1, -1});

// ==== errors =======================================================================================
constexpr dist_tensor_spec x({16, 32, 8}, m2), g({16, 16, 8}, m2);
static_assert(slice_grad::try_infer_forward({x, dist_tensor_spec({16, 16}, m2)}, a1).error().values[0] == 2);
static_assert(slice_grad::try_infer_forward({x, dist_tensor_spec({16, 15, 8}, m2)}, a1).error().values[1] == 15);
static_assert(slice_grad::try_infer_forward({x, dist_tensor_spec({16, -1, 8}, m2)}, a1));
static_assert(slice_grad::try_infer_forward({x, g}, {.axes = {3}, .starts = {0}, .ends = {1}}).kind() ==
              error_kind::invalid_argument);
static_assert(slice_grad::try_infer_forward({x, g}, {.axes = {1}, .starts = {0}, .ends = {}}).kind() ==
              error_kind::invalid_argument);
static_assert(strided_slice_grad::try_infer_forward({x, dist_tensor_spec({16, 10, 8}, m2)}, {.axes = {1}, .starts = {1}, .ends = {30}})
                  .kind() == error_kind::invalid_argument);
static_assert(strided_slice_grad::try_infer_forward({x, g}, {.axes = {1}, .starts = {1}, .ends = {30}, .strides = {0}})
                  .kind() == error_kind::invalid_argument);
static_assert(slice_grad::try_infer_forward({x}, a1).kind() == error_kind::invalid_argument);
static_assert(slice_grad::try_infer_backward({x, g}, {x}, a1).kind() == error_kind::unimplemented);
static_assert(strided_slice_grad::try_infer_backward({x, g}, {x}, b1).kind() == error_kind::unimplemented);
