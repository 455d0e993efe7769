// expect: is outside .1, .* for x of rank .* .negative values count from the end.
// A begin_norm_axis outside [1, rank) does not compile.
#include <ctspmd/rules/layer_norm.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec x({4, 8, 16}, {mesh, {0, 1, -1}});
constexpr dist_tensor_spec scale({16}, mesh);
constexpr dist_tensor_spec bias({16}, mesh);
#ifdef CTSPMD_KO
constexpr auto info = rules::layer_norm::infer_forward({x, scale, bias}, {.begin_norm_axis = 0});
#else
constexpr auto info = rules::layer_norm::infer_forward({x, scale, bias}, {.begin_norm_axis = 2});
#endif
static_assert(info.outputs.size() == 3);
