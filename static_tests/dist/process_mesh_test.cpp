#include <ctspmd/dist/process_mesh.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd_test::constant_evaluates;

// ---- shape, ndim, size --------------------------------------------------------------------
constexpr process_mesh mesh({2, 3});
static_assert(mesh.ndim() == 2 && mesh.size() == 6 && mesh.dim_size(1) == 3);
static_assert(mesh.shape() == process_mesh::shape_type{2, 3});
static_assert(process_mesh().ndim() == 0 && process_mesh().size() == 1);
static_assert(process_mesh({4}) == process_mesh({4}) && !(process_mesh({4}) == process_mesh({2, 2})));

// ---- reduce type names --------------------------------------------------------------------
static_assert(std::string_view(to_string(reduce_type::sum)) == "sum");
static_assert(std::string_view(to_string(reduce_type::all)) == "all");

// ---- invalid meshes -------------------------------------------------------------------------
static_assert(!process_mesh::check({2, 0}) && process_mesh::check({2, 0}).error().values[1] == 0);
static_assert(!process_mesh::check({2, -3}));
static_assert(!process_mesh::check({1, 1, 1, 1, 1}));  // more dims than max_mesh_ndim = 4
static_assert(process_mesh::check({1, 1, 1, 1}));
static_assert(!constant_evaluates<[] { return process_mesh({0}); }>);
static_assert(!process_mesh::check({}));  // a mesh has a dim at least (process_mesh() is "no mesh")
static_assert(!constant_evaluates<[] { return process_mesh(tensor_shape{}); }>);
