#include <ctspmd/dist/spmd_info.hpp>

using namespace ctspmd;

constexpr process_mesh mesh({4});
constexpr spmd_info info{{tensor_dist_attr(mesh, {0, -1})}, {tensor_dist_attr(mesh, {0}), tensor_dist_attr(mesh, {-1})}};
static_assert(info.inputs.size() == 1 && info.outputs.size() == 2);
static_assert(info.outputs[1].dims_mapping() == dims_mapping{-1});
static_assert(info == spmd_info{{tensor_dist_attr(mesh, {0, -1})}, {tensor_dist_attr(mesh, {0}), tensor_dist_attr(mesh, {-1})}});
static_assert(!(info == spmd_info{}));
