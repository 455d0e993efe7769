// expect: expects at least 1 input
// The replicated rule needs an input to give its output a rank.
#include <ctspmd/rules/replicated.hpp>

#include <array>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2});
#ifdef CTSPMD_KO
constexpr std::array<dist_tensor_spec, 0> inputs{};
#else
constexpr std::array<dist_tensor_spec, 1> inputs{dist_tensor_spec({4, 8}, {mesh, {0, 1}})};
#endif
constexpr auto info = rules::replicated::infer_forward(std::span<const dist_tensor_spec>(inputs));
static_assert(info.outputs.size() == 1);
