// expect: is sharded by two different mesh dims
// Two inputs sharding one axis on different mesh dims does not compile.
#include <ctspmd/rules/elementwise.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec x({4, 8}, {mesh, {0, -1}});
constexpr dist_tensor_spec y({8}, {mesh, {1}});
#ifdef CTSPMD_KO
constexpr dist_tensor_spec z({4, 1}, {mesh, {1, -1}});  // axis 'a': mesh dim 0 in x, 1 in z
#else
constexpr dist_tensor_spec z({4, 1}, {mesh, {0, -1}});
#endif
constexpr auto info = rules::elementwise::infer_forward({x, y, z});
static_assert(info.outputs.size() == 1);
