// expect: all_to_all reshards
// A Mixtral training step whose experts' first weight is split on the hidden dim instead of the
// expert dim: the experts' first matmul moves the weight to the expert split, a third
// all-to-all in each layer's forward pass (98 MiB a device, every step), and the check that the
// pass sends only its two fails, naming the phase, the block and the counts.
#include "../../examples/mixtral/mixtral_plan.hpp"

#ifdef CTSPMD_KO
constexpr auto variant = mixtral::variant::experts_split_by_hidden;
#else
constexpr auto variant = mixtral::variant::expert_parallel;
#endif
constexpr auto step = mixtral::make_step<2, variant>();
// (verified propagates over several constant expressions: the whole model's step in one would
// exceed Clang's default -fconstexpr-steps.)
constexpr auto prop = ctspmd::model::verified<mixtral::make_step<2, variant>>();
static_assert(prop.expect_in_block(step, 0, ctspmd::model::phase::forward, ctspmd::model::collective::all_to_all, 4));
