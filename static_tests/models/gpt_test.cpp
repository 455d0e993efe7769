// The GPT builder (include/ctspmd/models/gpt.hpp): GPT-2's parameter counts, exactly, from the
// plans' parameters; a GPT-2 training step under Megatron's tensor and sequence parallelism
// verifies, with its vocabulary padded as Megatron pads it and the collectives Megatron sends.
#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>
#include <ctspmd/models/gpt.hpp>

using namespace ctspmd;

// Parameter counts as OpenAI's checkpoints have them (tied head: the embedding counted once).
static_assert(models::parameters(models::gpt2) == 124'439'808);
static_assert(models::parameters(models::gpt2_xl) == 1'557'611'200);
// An untied head adds its own vocab x n_embd.
constexpr models::gpt_config untied{.n_embd = 768, .n_layer = 12, .n_head = 12, .n_positions = 1024, .vocab_size = 50257,
                                    .tie_word_embeddings = false};
static_assert(models::parameters(untied) == 124'439'808 + 50257 * 768);

// GPT-2 on [dp 2, tp 4] with sequence parallelism: the vocabulary padded to 50688 (a multiple of
// 128 x 4), each layer's two all-gathers and two reduce-scatters over tp, forward.
constexpr auto gpt2_step() {
  const auto m = models::gpt(models::gpt2, process_mesh({2, 4}), {.dp = 0, .tp = 1, .sp = true}, {.seq = 1024});
  return model::training_step(m.plan, m.loss);
}
constexpr auto gpt2_sp = models::gpt(models::gpt2, process_mesh({2, 4}), {.dp = 0, .tp = 1, .sp = true}, {.seq = 1024});
static_assert(gpt2_sp.vocab == 50688 && gpt2_sp.vocab_padding == 431);
static_assert(models::parameter_count(gpt2_sp.plan) == 124'439'808 + 431 * 768);
constexpr auto gpt2_propagation = model::verified<gpt2_step>();
constexpr auto gpt2_cost = model::verified_cost<gpt2_step>();
using model::collective;
using model::phase;
// Per layer two all-gathers and two reduce-scatters in forward (12 layers), and the head's gather.
static_assert(gpt2_cost.collectives(phase::forward, collective::all_gather, 1).count == 2 * 12 + 1);
static_assert(gpt2_cost.collectives(phase::forward, collective::reduce_scatter, 1).count == 2 * 12 + 1);
// No all-reduce over tp but the vocabulary-parallel cross entropy's three (max, target, sum).
static_assert(gpt2_cost.collectives(phase::forward, collective::all_reduce, 1).count == 3);
static_assert(gpt2_propagation.ok());

