// expect: repeats x dim
// A perm that is not a permutation of x's dims does not compile.
#include <ctspmd/rules/transpose.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec x({2, 4, 8}, {mesh, {0, -1, 1}});
#ifdef CTSPMD_KO
constexpr auto info = rules::transpose::infer_forward({x}, {.perm = {2, 0, -1}});
#else
constexpr auto info = rules::transpose::infer_forward({x}, {.perm = {2, 0, -2}});
#endif
static_assert(info.outputs.size() == 1);
