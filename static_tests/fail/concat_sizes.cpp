// expect: only the concat axis may differ
// concat of inputs whose sizes differ off the concat axis does not compile.
#include <ctspmd/rules/concat.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec a({4, 6}, {mesh, {0, -1}});
constexpr dist_tensor_spec b({5, 6}, {mesh, {-1, 1}});
#ifdef CTSPMD_KO
constexpr auto info = rules::concat::infer_forward({a, b}, {.axis = 1});
#else
constexpr auto info = rules::concat::infer_forward({a, b}, {.axis = 0});
#endif
static_assert(info.outputs.size() == 1);
