// expect: elements \(besides dynamic dims copied by 0\) but the target shape
// A reshape whose target shape holds another number of elements does not compile.
#include <ctspmd/rules/reshape.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
constexpr dist_tensor_spec x({2, 3, 4}, {mesh, {0, -1, -1}});
#ifdef CTSPMD_KO
constexpr auto info = rules::reshape::infer_forward({x}, {.shape = {5, 5}});
#else
constexpr auto info = rules::reshape::infer_forward({x}, {.shape = {6, 4}});
#endif
static_assert(info.outputs[0].dims_mapping() == dims_mapping{0, -1});
