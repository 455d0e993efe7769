// expect: are sharded by the same mesh dim
// x and the table claiming the same mesh dim does not compile (merge_conflicts = false).
#include <ctspmd/rules/embedding.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
#ifdef CTSPMD_KO
constexpr dist_tensor_spec x({4, 8}, {mesh, {0, -1}});
#else
constexpr dist_tensor_spec x({4, 8}, {mesh, {1, -1}});
#endif
constexpr dist_tensor_spec w({100, 16}, {mesh, {0, -1}});
constexpr auto info = rules::embedding::infer_forward({x, w});
static_assert(info.outputs.size() == 1);
