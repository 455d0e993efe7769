// expect: does not divide the size
// split_with_num whose num does not divide the (known) size of the split axis does not compile.
#include <ctspmd/rules/split.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec x({6, 8}, {mesh, {0, -1}});
#ifdef CTSPMD_KO
constexpr auto info = rules::split::infer_forward({x}, {.num = 4, .axis = 0});
#else
constexpr auto info = rules::split::infer_forward({x}, {.num = 3, .axis = 0});
#endif
static_assert(info.outputs.size() == 3);
