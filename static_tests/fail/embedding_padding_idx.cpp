// expect: does not support padding_idx
// A row-sharded embedding table with padding_idx != -1 does not compile.
#include <ctspmd/rules/embedding.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec x({4, 8}, {mesh, {-1, -1}});
constexpr dist_tensor_spec w({100, 16}, {mesh, {1, -1}});
#ifdef CTSPMD_KO
constexpr auto info = rules::embedding::infer_forward({x, w}, {.padding_idx = 0});
#else
constexpr auto info = rules::embedding::infer_forward({x, w}, {.padding_idx = -1});
#endif
static_assert(info.outputs.size() == 1);
