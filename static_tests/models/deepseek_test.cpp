// The DeepSeek-V3 builder (include/ctspmd/models/deepseek.hpp): the published model's total
// parameter count (without the multi-token prediction layer) and its active count a token,
// exactly, from the plan's parameters; a small DeepSeek training step with tensor and expert
// parallelism verifies, with the collectives its layout implies.
#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>
#include <ctspmd/models/deepseek.hpp>

using namespace ctspmd;

static_assert(models::parameters(models::deepseek_v3) == 671'026'419'200);
static_assert(models::active_parameters(models::deepseek_v3) == 37'552'297'472);

// A DeepSeek of the same form, small: 3 layers (1 dense), 8 routed experts of which 2 a token,
// one shared, on [dp 2, tp 2, ep 2].
constexpr models::deepseek_config small{.hidden_size = 64, .intermediate_size = 128, .moe_intermediate_size = 32,
                                        .num_hidden_layers = 3, .num_attention_heads = 4, .q_lora_rank = 24,
                                        .kv_lora_rank = 16, .qk_nope_head_dim = 8, .qk_rope_head_dim = 4,
                                        .v_head_dim = 8, .n_routed_experts = 8, .n_shared_experts = 1,
                                        .num_experts_per_tok = 2, .first_k_dense_replace = 1, .vocab_size = 256};
constexpr auto small_step() {
  const auto m = models::deepseek(small, process_mesh({2, 2, 2}), {.dp = 0, .tp = 1, .ep = 2}, {.seq = 16});
  return model::training_step(m.plan, m.loss);
}
constexpr auto small_cost = model::verified_cost<small_step>();
using model::collective;
using model::phase;
// Each MoE layer's two all-to-alls over ep (mesh dim 2), forward.
static_assert(small_cost.collectives(phase::forward, collective::all_to_all, 2).count == 2 * 2);
// Over tp (mesh dim 1), forward: each layer's attention output and MLP (dense or shared) reduced,
// the embedding's partial sums too: all-reduces, as Megatron's tensor parallelism sends, and the
// cross entropy's three.
static_assert(small_cost.collectives(phase::forward, collective::all_reduce, 1).count == 1 + 2 * 3 + 3);
