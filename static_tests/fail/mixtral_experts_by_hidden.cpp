// expect: forward operator
// A Mixtral training step whose experts' first weight is split on the hidden dim instead of the
// expert dim: the check that each layer's forward pass sends only its three all-gathers fails,
// naming the phase, the operator (the experts' SwiGLU, whose input is now partial), the operand
// and the mesh dim of the first unexpected collective.
#include "../../examples/mixtral/mixtral_plan.hpp"

#ifdef CTSPMD_KO
constexpr auto variant = mixtral::variant::experts_split_by_hidden;
#else
constexpr auto variant = mixtral::variant::expert_parallel;
#endif
constexpr auto step = mixtral::make_step<2, variant>();
constexpr auto prop = ctspmd::model::propagate(step);
static_assert(prop.expect_in_block(step, 0, ctspmd::model::phase::forward, ctspmd::model::collective::all_gather, 6));
