#include <ctspmd/dist/dist_tensor_spec.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});

// ---- accessors ---------------------------------------------------------------------------------
constexpr dist_tensor_spec x({64, 32}, {mesh, {1, -1}});
static_assert(x.shape() == tensor_shape{64, 32} && x.ndim() == 2);
static_assert(x.dims_mapping() == dims_mapping{1, -1} && x.process_mesh() == mesh);
static_assert(x.dist_attr() == tensor_dist_attr(mesh, {1, -1}));
constexpr dist_tensor_spec replicated({-1, 8, 1}, mesh);  // -1: size known at run time
static_assert(replicated.dims_mapping() == dims_mapping{-1, -1, -1});

// ---- invalid specs --------------------------------------------------------------------------------
static_assert(!dist_tensor_spec::check({64, 32}, {mesh, {1}}));  // rank 2, one mapping entry
static_assert(dist_tensor_spec::check({64, 32}, {mesh, {1}}).error().values[0] == 1);
static_assert(!dist_tensor_spec::check({64, -2}, {mesh, {1, -1}}));  // sizes are >= 0 or -1
static_assert(dist_tensor_spec::check({0, -1}, {mesh, {1, -1}}));
static_assert(!constant_evaluates<[] { return dist_tensor_spec({4}, {mesh, {0, 1}}); }>);
