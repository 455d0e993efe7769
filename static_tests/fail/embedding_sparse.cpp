// expect: does not support sparse
// A row-sharded embedding table with sparse = true does not compile.
#include <ctspmd/rules/embedding.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec x({4, 8}, {mesh, {-1, -1}});
constexpr dist_tensor_spec w({100, 16}, {mesh, {1, -1}});
#ifdef CTSPMD_KO
constexpr auto info = rules::embedding::infer_forward({x, w}, {.sparse = true});
#else
constexpr auto info = rules::embedding::infer_forward({x, w}, {.sparse = false});
#endif
static_assert(info.outputs.size() == 1);
