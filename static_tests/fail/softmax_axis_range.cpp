// expect: is outside
// A softmax axis outside [-rank, rank) does not compile.
#include <ctspmd/rules/softmax.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec x({4, 16, 32}, {mesh, {0, -1, 1}});
#ifdef CTSPMD_KO
constexpr auto info = rules::softmax::infer_forward({x}, {.axis = 3});
#else
constexpr auto info = rules::softmax::infer_forward({x}, {.axis = -3});
#endif
static_assert(info.outputs.size() == 1);
