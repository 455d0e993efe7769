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

// ---- co-shard: per tensor dim a list of mesh dims, major first ---------------------------------
constexpr tensor_dist_attr cs(mesh, {{2, 0}, {}, {1}});
static_assert(cs.multi_dims_mapping() == multi_dims_mapping{{2, 0}, {}, {1}} && cs.rank() == 3 && cs.is_co_sharded());
static_assert(cs.mesh_dims_of(0) == mesh_dims{2, 0} && cs.mesh_dims_of(1).empty());
static_assert(cs.sharded_tensor_dim(0) == 0 && cs.sharded_tensor_dim(2) == 0 && cs.sharded_tensor_dim(1) == 2);
// parts(d): the product of the sizes of the mesh dims splitting dim d (1 if none, or past the rank)
static_assert(cs.parts(0) == mesh.dim_size(2) * mesh.dim_size(0) && cs.parts(1) == 1 && cs.parts(2) == mesh.dim_size(1));
static_assert(cs.parts(3) == 1 && tensor_dist_attr(mesh, {-1, 1}).parts(1) == mesh.dim_size(1));
// the order is part of the layout
static_assert(!(cs == tensor_dist_attr(mesh, {{0, 2}, {}, {1}})));
// the flat form as a view: one mesh dim per tensor dim
static_assert(tensor_dist_attr(mesh, {{0}, {}, {1}}) == tensor_dist_attr(mesh, {0, -1, 1}));
static_assert(tensor_dist_attr(mesh, {0, -1, 1}).multi_dims_mapping() == multi_dims_mapping{{0}, {}, {1}});
static_assert(!tensor_dist_attr(mesh, {0, -1, 1}).is_co_sharded());
static_assert(!constant_evaluates<[] { return cs.dims_mapping(); }>);  // a co-shard has no flat form
static_assert(tensor_dist_attr(mesh, {}).rank() == 0);
// partial beside a co-shard, on the other mesh dims only
static_assert([] {
  tensor_dist_attr t(process_mesh({2, 2, 2}), {{0, 2}, {}});
  t.set_partial_status({1});
  return t.partial_dims() == mesh_dims{1};
}());
static_assert(!constant_evaluates<[] {
  tensor_dist_attr t(process_mesh({2, 2, 2}), {{0, 2}, {}});
  t.set_partial_status({2});  // mesh dim 2 shards tensor dim 0
}>);
// replacing a co-shard by a flat mapping leaves nothing of it
static_assert([] {
  tensor_dist_attr t = cs;
  t.set_dims_mapping(dims_mapping{-1, 0, 1});
  return t == tensor_dist_attr(mesh, {-1, 0, 1}) && !t.is_co_sharded();
}());
// invalid co-shards: a mesh dim twice (in one list or two), out of range, -1 in a list
static_assert(tensor_dist_attr::check(mesh, {{0, 0}}).error().values == std::array<std::int64_t, 4>{0, 0, 0, 0});
static_assert(tensor_dist_attr::check(mesh, {{0}, {1, 0}}).error().values == std::array<std::int64_t, 4>{0, 0, 1, 0});
static_assert(!tensor_dist_attr::check(mesh, {{3}}));
static_assert(!tensor_dist_attr::check(mesh, {{-1}}));
static_assert(!constant_evaluates<[] { return tensor_dist_attr(mesh, {{1}, {1}}); }>);
// compact: the mesh, a byte per tensor dim and three per mesh dim (the lists' links, partial)
static_assert(sizeof(tensor_dist_attr) <= 48);
