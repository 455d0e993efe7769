// expect: needs it to be the last axis
// A sharded class axis that is not the last one (outside the c_softmax_with_cross_entropy
// layout) does not compile.
#include <ctspmd/rules/cross_entropy_with_softmax.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
#ifdef CTSPMD_KO
constexpr dist_tensor_spec x({1000, 8}, {mesh, {1, 0}});
#else
constexpr dist_tensor_spec x({1000, 8}, {mesh, {-1, 0}});
#endif
constexpr dist_tensor_spec label({1, 8}, {mesh, {-1, -1}});
constexpr auto info = rules::cross_entropy_with_softmax::infer_forward({x, label}, {.axis = 0});
static_assert(info.outputs.size() == 2);
