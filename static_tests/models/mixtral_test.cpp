// The Mixtral builder (include/ctspmd/models/mixtral.hpp): the published models' total and
// active parameter counts, exactly, from the plans' parameters; a Mixtral-8x7B training step
// with expert parallelism verifies and sends the all-to-alls Megatron's dispatcher sends.
#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>
#include <ctspmd/models/mixtral.hpp>

using namespace ctspmd;

static_assert(models::parameters(models::mixtral_8x7b) == 46'702'792'704);
static_assert(models::active_parameters(models::mixtral_8x7b) == 12'879'925'248);
static_assert(models::parameters(models::mixtral_8x22b) == 140'630'071'296);
static_assert(models::active_parameters(models::mixtral_8x22b) == 39'161'468'928);

// Mixtral-8x7B on [dp 2, ep 8]: each of the 32 layers two all-to-alls over ep forward (dispatch
// and combine), and two backward.
constexpr auto mixtral_step() {
  const auto m = models::mixtral(models::mixtral_8x7b, process_mesh({2, 8}), {.dp = 0, .ep = 1}, {.seq = 4096});
  return model::training_step(m.plan, m.loss, {.shard_optimizer_states_on = 0});
}
constexpr auto mixtral_cost = model::verified_cost<mixtral_step>();
using model::collective;
using model::phase;
static_assert(mixtral_cost.collectives(phase::forward, collective::all_to_all, 1).count == 2 * 32);
static_assert(mixtral_cost.collectives(phase::backward, collective::all_to_all, 1).count == 2 * 32);
// The experts' weights are split over ep: a device holds one expert's three weights a layer
// (45,097,156,608 / 8 parameters), beside the replicated rest (1,605,636,096), in bf16.
static_assert(mixtral_cost.memory().parameters == (1'605'636'096 + 45'097'156'608 / 8) * 2);
