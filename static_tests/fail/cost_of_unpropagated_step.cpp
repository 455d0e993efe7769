// expect: is sharded by two different mesh dims
// verified_cost of a step whose propagation fails: verified's error, with the failing rule's
// message (not an error from inside the cost's parts).
#include <ctspmd/model/cost.hpp>

#include "../../examples/gpt/gpt_plan.hpp"

#ifdef CTSPMD_KO
constexpr auto variant = gpt::variant::row_weight_on_dp;
#else
constexpr auto variant = gpt::variant::tensor_parallel;
#endif
constexpr auto c = ctspmd::model::verified_cost<gpt::make_step<2, variant>>();
static_assert(c.memory().peak > 0);
