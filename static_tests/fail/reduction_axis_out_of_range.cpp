// expect: is out of range for x of rank
// A reduction axis outside [-rank, rank) does not compile.
#include <ctspmd/rules/reduction.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec x({4, 8}, {mesh, {0, 1}});
#ifdef CTSPMD_KO
constexpr auto info = rules::reduction::infer_forward({x}, {.axis = {2}});
#else
constexpr auto info = rules::reduction::infer_forward({x}, {.axis = {-1}});
#endif
static_assert(info.outputs.size() == 1);
