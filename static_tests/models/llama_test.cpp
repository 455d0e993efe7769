// The Llama-family builder (include/ctspmd/models/llama.hpp): the published models' parameter
// counts, exactly, from the plans' parameters; and Llama-3-8B's training step, built by the
// library, propagates to the same reshard report as the hand-written plan of examples/llama.
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>
#include <ctspmd/models/llama.hpp>

#include "../../examples/llama/llama_plan.hpp"

using namespace ctspmd;

// Parameter counts as the models' publishers give them.
static_assert(models::parameters(models::llama3_8b) == 8'030'261'248);
static_assert(models::parameters(models::llama3_70b) == 70'553'706'496);
static_assert(models::parameters(models::llama3_1_405b) == 405'853'388'800);
static_assert(models::parameters(models::qwen2_7b) == 7'615'616'512);
static_assert(models::parameters(models::qwen2_72b) == 72'706'203'648);
// Tied embeddings count the embedding once (Llama-3.2-1B: 1,235,814,400).
constexpr models::llama_config llama3_2_1b{.hidden_size = 2048, .intermediate_size = 8192, .num_hidden_layers = 16,
                                           .num_attention_heads = 32, .num_key_value_heads = 8, .head_dim = 64,
                                           .vocab_size = 128256, .max_position_embeddings = 131072,
                                           .tie_word_embeddings = true};
static_assert(models::parameters(llama3_2_1b) == 1'235'814'400);

// Megatron's vocabulary padding: 128256 is divisible by 8; 152064 by 8 too; 50257 by nothing.
static_assert(models::padded_vocab(128256, 8) == 128256);
static_assert(models::padded_vocab(50257, 1) == 50257 && models::padded_vocab(50257, 2) == 50432);
constexpr auto padded = models::llama(
    {.hidden_size = 64, .intermediate_size = 128, .num_hidden_layers = 2, .num_attention_heads = 4, .vocab_size = 1001},
    process_mesh({2}), {.tp = 0}, {.seq = 16});
static_assert(padded.vocab == 1024 && padded.vocab_padding == 23);

// The library's Llama-3-8B with Megatron's tensor and sequence parallelism on [dp 2, tp 8], and
// the hand-written plan of examples/llama: the same training step's reshards, entry by entry.
constexpr auto library_step() {
  const auto m = models::llama(models::llama3_8b, process_mesh({2, 8}), {.dp = 0, .tp = 1, .sp = true},
                               {.seq = 8192, .micro_batch = 1});
  return model::training_step(m.plan, m.loss);
}
constexpr auto example_step() { return llama::make_step<32, llama::variant::sequence_parallel>(); }
constexpr auto library = model::verified<library_step>();
constexpr auto example = model::verified<example_step>();
constexpr bool same_reshards() {
  if (library.reshard_entries() != example.reshard_entries()) return false;
  for (std::size_t e = 0; e < library.reshard_entries(); ++e) {
    const auto &a = library.reshard_at(e), &b = example.reshard_at(e);
    if (!(a.op == b.op && a.operand == b.operand && a.on_output == b.on_output && a.tensor == b.tensor &&
          a.mesh_dim == b.mesh_dim && a.kind == b.kind && a.bytes == b.bytes && a.group == b.group && a.times == b.times &&
          a.phase == b.phase && a.from == b.from && a.to == b.to))
      return false;
  }
  return true;
}
static_assert(library.reshard_entries() > 20);
static_assert(same_reshards());
