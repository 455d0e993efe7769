// expect: needs an unexpected local_slice on mesh dim
// The GPT plan with the MLP's first weight split by rows instead of columns propagates, but
// the report's check that each layer has only its two all-reduces fails, naming the operator
// ("mlp.fc"), the operand and the mesh dim of the first unexpected reshard.
#include "../../examples/gpt/gpt_plan.hpp"

#ifdef CTSPMD_KO
constexpr auto variant = gpt::variant::up_weight_by_rows;
#else
constexpr auto variant = gpt::variant::tensor_parallel;
#endif
constexpr auto plan = gpt::make_plan<2, variant>();
constexpr auto prop = ctspmd::model::propagate(plan);
static_assert(prop.expect_in_block(plan, 0, ctspmd::model::collective::all_reduce, 4));
