// expect: plan_fails_at_operator[<(]19,
// The GPT plan with attention's row-parallel weight split on the dp mesh dim does not compile:
// operator 19 ("attn.o") sees its contracted axis sharded on mesh dim 1 by the activations
// and on mesh dim 0 by the weight. The diagnostic names the operator's index and the conflict.
#include "../../examples/gpt/gpt_plan.hpp"

#ifdef CTSPMD_KO
constexpr auto variant = gpt::variant::row_weight_on_dp;
#else
constexpr auto variant = gpt::variant::tensor_parallel;
#endif
constexpr auto prop = ctspmd::model::verified<gpt::make_plan<2, variant>>();
static_assert(prop.count() == 5);
