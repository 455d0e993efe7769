// The rule kit's pieces: replicating the dims labelled '1' before a merge; the grad-rule pieces:
// absent optional inputs, the grad rule's missing reverse, and the gradient of a broadcast operand
// (phi's ReduceGradBroadCastDims).
#include <ctspmd/rules/kit/labels_and_merges.hpp>

#include "../../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 2, 2});

// an absent optional input is shape [] and dims mapping []
static_assert(is_absent(dist_tensor_spec({}, tensor_dist_attr(mesh, dims_mapping{}))));
static_assert(!is_absent(dist_tensor_spec({4}, tensor_dist_attr(mesh, {-1}))));
static_assert(no_reverse_inference().kind == error_kind::unimplemented);

// with_ones_replicated: the dims labelled '1' lose their mesh dims; partial status and the
// other dims stay
constexpr dist_tensor_spec cleared = [] {
  tensor_dist_attr a(mesh, {{}, {2}, {0}});
  a.set_partial_status({1});
  return with_ones_replicated(dist_tensor_spec({8, 16, 32}, a), "ab1");
}();
static_assert(is(cleared.dist_attr(), {{}, {2}, {}}) && cleared.dist_attr().partial_dims() == mesh_dims{1});
static_assert(cleared.shape() == tensor_shape{8, 16, 32});
static_assert(is(with_ones_replicated(dist_tensor_spec({8, 32}, tensor_dist_attr(mesh, {{0, 1}, {2}})), "1b").dist_attr(),
                 {{}, {2}}));

// out_grad [4, 8, 6] on [[0], [1], [2]]: an operand [8, 1] lost the leading dim (mesh dim 0)
// and broadcast its last dim (mesh dim 2): both become partial (sum), dim 1 keeps mesh dim 1
constexpr tensor_dist_attr g(mesh, {{0}, {1}, {2}});
constexpr auto y_grad = reduce_grad_broadcast_dims(g, {4, 8, 6}, {8, 1});
static_assert(is(y_grad, {{1}, {}}) && y_grad.partial_dims() == mesh_dims{0, 2});
static_assert(y_grad.partial_reduce_type(0) == reduce_type::sum);
// an operand of the grad's shape keeps the grad's sharding and is not partial
constexpr auto x_grad = reduce_grad_broadcast_dims(g, {4, 8, 6}, {4, 8, 6});
static_assert(is(x_grad, {{0}, {1}, {2}}) && !x_grad.is_partial());
// a co-sharded broadcast dim makes both its mesh dims partial; the grad's own partial is kept
constexpr tensor_dist_attr co_g = [] {
  tensor_dist_attr a(mesh, {{0, 2}, {}});
  a.set_partial_status({1}, reduce_type::avg);
  return a;
}();
constexpr auto b_grad = reduce_grad_broadcast_dims(co_g, {8, 3}, {3});
static_assert(is(b_grad, {{}}) && b_grad.partial_dims() == mesh_dims{0, 1, 2});
static_assert(b_grad.partial_reduce_type(1) == reduce_type::avg && b_grad.partial_reduce_type(2) == reduce_type::sum);
// a size-1 grad dim is no broadcast: the operand's size-1 dim keeps it
static_assert(is(reduce_grad_broadcast_dims(tensor_dist_attr(mesh, {{}, {1}}), {1, 4}, {1, 4}), {{}, {1}}));

int main() {}
