#include <ctspmd/dist/tensor_dist_attr.hpp>

#include <type_traits>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3, 4});

// ---- construction and accessors ------------------------------------------------------------
constexpr tensor_dist_attr a(mesh, {1, -1, 0});
static_assert(a.process_mesh() == mesh && a.dims_mapping() == dims_mapping{1, -1, 0});
static_assert(!a.is_partial() && a.partial_dims().empty() && a.batch_dim() == 0);
static_assert(tensor_dist_attr().dims_mapping().empty() && tensor_dist_attr().process_mesh().ndim() == 0);
// Copied as one block (rules' results hold several; see static_vector).
static_assert(std::is_trivially_copyable_v<tensor_dist_attr>);

// ---- partial status: ascending dims, reduce types, cleaning --------------------------------
constexpr tensor_dist_attr partial = [] {
  tensor_dist_attr t(mesh, {-1, 1});
  t.set_partial_status({2}, reduce_type::max);
  t.set_partial_status({0});
  return t;
}();
static_assert(partial.partial_dims() == mesh_dims{0, 2});
static_assert(partial.is_partial() && partial.is_partial(0) && !partial.is_partial(1) && partial.is_partial(2));
static_assert(partial.partial_reduce_type(0) == reduce_type::sum && partial.partial_reduce_type(2) == reduce_type::max);
static_assert(!partial.is_partial(7) && !partial.is_partial(-5));
constexpr tensor_dist_attr cleaned = [] {
  tensor_dist_attr t = partial;
  t.clean_partial_dims({2});
  return t;
}();
static_assert(cleaned.partial_dims() == mesh_dims{0});
static_assert([] {
  tensor_dist_attr t = partial;
  t.clean_partial_status();
  return !t.is_partial();
}());

// ---- equality sees dims mapping, partial status and batch dim -------------------------------
static_assert(a == tensor_dist_attr(mesh, {1, -1, 0}));
static_assert(!(a == tensor_dist_attr(mesh, {1, 0, -1})));
static_assert(!(partial == tensor_dist_attr(mesh, {-1, 1})));
static_assert([] {
  tensor_dist_attr t = a;
  t.set_batch_dim(1);
  return !(t == a) && t.batch_dim() == 1;
}());

// ---- invalid dims mappings --------------------------------------------------------------------
static_assert(tensor_dist_attr::check(mesh, {2, 1, 0, -1}));
static_assert(!tensor_dist_attr::check(mesh, {3}));    // mesh dim out of range
static_assert(!tensor_dist_attr::check(mesh, {-2}));   // below -1
static_assert(!tensor_dist_attr::check(mesh, {0, 0}));  // one mesh dim shards two tensor dims
static_assert(tensor_dist_attr::check(mesh, {0, 0}).error().values == std::array<std::int64_t, 4>{0, 0, 1, 0});
static_assert(!constant_evaluates<[] { return tensor_dist_attr(mesh, {1, 1}); }>);
static_assert(!constant_evaluates<[] {
  tensor_dist_attr t(mesh, {-1});
  t.set_dims_mapping({5});
}>);

// ---- invalid partial status -------------------------------------------------------------------
static_assert(!constant_evaluates<[] {
  tensor_dist_attr t(mesh, {-1});
  t.set_partial_status({3});  // not a mesh dim of a 3-d mesh
}>);
static_assert(!constant_evaluates<[] {
  tensor_dist_attr t(mesh, {1});
  t.set_partial_status({1});  // mesh dim 1 already shards tensor dim 0
}>);
static_assert(!constant_evaluates<[] {
  tensor_dist_attr t(mesh, {-1});
  t.set_partial_status({0});
  t.set_partial_status({0});  // already partial
}>);
static_assert(!constant_evaluates<[] {
  tensor_dist_attr t(mesh, {-1});
  t.set_partial_status({0});
  t.set_dims_mapping({0});  // a partial mesh dim cannot shard
}>);
static_assert(!constant_evaluates<[] {
  tensor_dist_attr t(mesh, {-1});
  t.clean_partial_dims({1});  // not partial
}>);
static_assert(!constant_evaluates<[] { return tensor_dist_attr(mesh, {-1}).partial_reduce_type(0); }>);
