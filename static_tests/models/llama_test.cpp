// The Llama-family builder (include/ctspmd/models/llama.hpp): the published models' parameter
// counts, exactly, from the plans' parameters, and Megatron's vocabulary padding. (Its training
// steps' collectives are checked against Megatron's by examples/llama, built on it.)
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>
#include <ctspmd/models/llama.hpp>

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

