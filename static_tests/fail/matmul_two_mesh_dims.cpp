// expect: is sharded by two different mesh dims
// matmul's contracted axis k sharded on mesh dim 0 by x and on mesh dim 1 by y does not compile.
#include <ctspmd/rules/matmul.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec x({64, 32}, {mesh, {-1, 0}});
#ifdef CTSPMD_KO
constexpr dist_tensor_spec y({32, 48}, {mesh, {1, -1}});
#else
constexpr dist_tensor_spec y({32, 48}, {mesh, {0, -1}});
#endif
constexpr auto info = rules::matmul::infer_forward({x, y});
static_assert(info.outputs[0].partial_dims() == mesh_dims{0});
