// expect: is sharded by two different mesh dims
// The same mis-sharded plan: the diagnostic also carries the failing rule's message.
#include "../../examples/gpt/gpt_plan.hpp"

#ifdef CTSPMD_KO
constexpr auto variant = gpt::variant::row_weight_on_dp;
#else
constexpr auto variant = gpt::variant::tensor_parallel;
#endif
constexpr auto prop = ctspmd::model::verified<gpt::make_plan<2, variant>>();
static_assert(prop.count() == 5);
