// expect: forward operator
// A Llama training step whose MLP down projection is split by columns instead of rows: the
// step still propagates, but the check that each layer's forward pass sends only its two
// all-reduces fails, naming the phase, the operator ("mlp.down", whose weight must be moved
// by an all-to-all), the operand and the mesh dim of the first unexpected collective.
#include "../../examples/llama/llama_plan.hpp"

#ifdef CTSPMD_KO
constexpr auto variant = llama::variant::down_weight_by_columns;
#else
constexpr auto variant = llama::variant::tensor_parallel;
#endif
constexpr auto step = llama::make_step<2, variant>();
// (verified propagates over several constant expressions: the whole step in one would exceed
// Clang's default -fconstexpr-steps.)
constexpr auto prop = ctspmd::model::verified<llama::make_step<2, variant>>();
static_assert(prop.expect_in_block(step, 0, ctspmd::model::phase::forward, ctspmd::model::collective::all_reduce, 4));
