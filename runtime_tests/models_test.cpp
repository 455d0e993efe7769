// The model builders at run time (include/ctspmd/models/): configs and layouts known only then,
// the same counts as at compile time, and every bad config or layout an spmd_error naming it.
#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>
#include <ctspmd/models/gpt.hpp>
#include <ctspmd/models/llama.hpp>
#include <ctspmd/models/mixtral.hpp>

#include <doctest/doctest.h>

#include "check_error.hpp"

#include <memory>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace models_test {

using namespace ctspmd;
using ctspmd_test::check_error;

TEST_CASE("models: a Llama and a GPT built at run time count as at compile time, and propagate") {
  auto llama = std::make_unique<models::built_model<models::llama_plan>>(
      models::llama(models::qwen2_7b, process_mesh({2, 4}), {.dp = 0, .tp = 1, .sp = true}, {.seq = 2048}));
  CHECK(models::parameter_count(llama->plan) == 7'615'616'512);  // 152064 is divisible by 4: no padding
  CHECK(llama->vocab_padding == 0);
  using propagation = decltype(model::try_propagate(llama->plan));
  CHECK(std::make_unique<propagation>(model::try_propagate(llama->plan))->ok());
  auto gpt = std::make_unique<models::built_model<models::gpt_plan>>(
      models::gpt(models::gpt2, process_mesh({4}), {.tp = 0}, {.seq = 512, .micro_batch = 2}));
  CHECK(gpt->vocab == 50688);
  CHECK(models::parameter_count(gpt->plan) == 124'439'808 + 431 * 768);
}

TEST_CASE("models: GPT's attention core written out (no flash attention): the same parameters, the scores materialised") {
  const process_mesh mesh({2, 4});
  const models::layout megatron{.dp = 0, .tp = 1};
  auto flash = std::make_unique<models::built_model<models::gpt_plan>>(models::gpt(models::gpt2, mesh, megatron, {.seq = 1024}));
  auto plain = std::make_unique<models::built_model<models::gpt_plan>>(
      models::gpt(models::gpt2, mesh, megatron, {.seq = 1024, .flash_attention = false}));
  CHECK(models::parameter_count(plain->plan) == models::parameter_count(flash->plan));
  std::int64_t kept_probabilities = 0;  // of the step written out, the bytes kept of "attn.softmax"
  const auto cost = [&](const models::built_model<models::gpt_plan>& m) {
    auto step = std::make_unique<decltype(model::training_step(m.plan, m.loss))>(model::training_step(m.plan, m.loss));
    auto r = std::make_unique<decltype(model::try_propagate(*step))>(model::try_propagate(*step));
    REQUIRE(r->ok());
    kept_probabilities = 0;
    const auto kept = std::make_unique<decltype(model::kept_tensors(*step, *r))>(model::kept_tensors(*step, *r));
    for (const auto& k : *kept)
      if (step->tensor_at(k.tensor).name == "attn.softmax") kept_probabilities += k.bytes * static_cast<std::int64_t>(k.copies);
    return model::cost(*step, *r, model::h100_cluster(m.plan.mesh()));
  };
  const auto with = cost(*flash);
  CHECK(kept_probabilities == 0);  // flash attention never writes them
  const auto without = cost(*plain);
  // The same collectives: the heads stay split over tp through the core either way.
  for (auto ph : {model::phase::forward, model::phase::backward})
    for (auto k : {model::collective::all_reduce, model::collective::all_gather})
      CHECK(with.collectives(ph, k).count == without.collectives(ph, k).count);
  // Q Kᵀ and the product with V whole (a causal kernel computes half), plus the softmax's and
  // scale's element-wise FLOPs; the probabilities, 12 heads / 4 x 1024² a sequence, kept for
  // backward in each of the 12 layers.
  const std::int64_t per_layer = 4 * 1 * 1024 * 768 / 4 * 1024;  // 4 b s (h/t) s: both products whole
  CHECK(without.flops(model::phase::forward) - with.flops(model::phase::forward) >= 12 * per_layer / 2);
  CHECK(kept_probabilities == 12 * (3 * 1024 * 1024 * 2));
  CHECK(without.step_seconds() > with.step_seconds());
}

TEST_CASE("models: GPT under context and sequence parallelism together verifies, the positions laid out as the tokens") {
  // [dp 2, cp 2, tp 2] with sp: the token embeddings split over cp and tp (a co-shard) between the
  // tensor-parallel regions; the position embeddings added to them must be split so too.
  const auto m = std::make_unique<models::built_model<models::gpt_plan>>(
      models::gpt(models::gpt2, process_mesh({2, 2, 2}), {.dp = 0, .tp = 2, .cp = 1, .sp = true}, {.seq = 1024}));
  auto step = std::make_unique<decltype(model::training_step(m->plan, m->loss))>(model::training_step(m->plan, m->loss));
  auto r = std::make_unique<decltype(model::try_propagate(*step))>(model::try_propagate(*step));
  REQUIRE(r->ok());
  // Each device looks up its own positions: nothing moves for them or for the sum.
  for (std::size_t i = 0; i < r->reshard_entries(); ++i) {
    const auto name = step->op_at(r->reshard_at(i).op).name();
    CHECK(name != "embed.positions");
    CHECK(name != "embed.add");
  }
}

TEST_CASE("models: a built model edited, one weight laid out otherwise (plan::tensor_named, plan::reannotate)") {
  auto m = std::make_unique<models::built_model<models::llama_plan>>(
      models::llama(models::llama3_8b, process_mesh({2, 8}), {.dp = 0, .tp = 1}, {.seq = 1024}));
  const auto w_down = m->plan.tensor_named("w_down");
  CHECK(m->plan.tensor_at(w_down.index).annotation.dims_mapping() == dims_mapping{1, -1});  // row parallel
  m->plan.reannotate(w_down, tensor_dist_attr(process_mesh({2, 8}), dims_mapping{-1, 1}));
  CHECK(m->plan.tensor_at(w_down.index).annotation.dims_mapping() == dims_mapping{-1, 1});
  // The down projection now moves its weight: an all-to-all each layer, forward.
  auto r = std::make_unique<decltype(model::try_propagate(m->plan))>(model::try_propagate(m->plan));
  REQUIRE(r->ok());
  std::size_t moved = 0;
  for (std::size_t i = 0; i < r->reshard_entries(); ++i)
    if (r->reshard_at(i).tensor == w_down.index) moved += r->reshard_at(i).times;
  CHECK(moved == 32);
  check_error([&] { (void)m->plan.tensor_named("w_dawn"); }, error_kind::not_found, "w_dawn: the plan has no tensor of this name");
  check_error([&] { m->plan.reannotate(w_down, tensor_dist_attr(process_mesh({4, 4}), dims_mapping{-1, 1})); },
              error_kind::invalid_argument, "is annotated on another process mesh");
  CHECK(m->plan.tensor_at(w_down.index).annotated);  // left as it was
  CHECK(m->plan.tensor_at(w_down.index).annotation.dims_mapping() == dims_mapping{-1, 1});
  m->plan.unannotate(w_down);
  CHECK(!m->plan.tensor_at(w_down.index).annotated);
}

TEST_CASE("models: left to the search, the data is split as the layout says, or not laid out at all") {
  const process_mesh mesh({2, 8});
  const auto with_dp = std::make_unique<models::built_model<models::llama_plan>>(
      models::llama(models::llama3_8b, mesh, {.dp = 0, .annotated = false}, {.seq = 1024}));
  const auto bare = std::make_unique<models::built_model<models::llama_plan>>(
      models::llama(models::llama3_8b, mesh, {.annotated = false}, {.seq = 1024}));
  for (const char* name : {"ids", "position_ids", "labels"}) {
    CHECK_MESSAGE(with_dp->plan.tensor_at(with_dp->plan.tensor_named(name).index).annotated, name);
    CHECK_MESSAGE(!bare->plan.tensor_at(bare->plan.tensor_named(name).index).annotated, name);
  }
  CHECK(with_dp->plan.tensor_at(with_dp->plan.tensor_named("ids").index).annotation.dims_mapping() == dims_mapping{0, -1});
  for (const char* name : {"wq", "x0", "attn.in"})
    CHECK_MESSAGE(!bare->plan.tensor_at(bare->plan.tensor_named(name).index).annotated, name);
}

TEST_CASE("models: every bad config or layout is an error naming it") {
  const auto kind = error_kind::invalid_argument;
  models::llama_config c = models::llama3_8b;
  c.hidden_size = 0;
  check_error([&] { (void)models::llama(c, process_mesh({2})); }, kind, "config field hidden_size is 0: it must be positive");
  c = models::llama3_8b;
  c.num_key_value_heads = 5;
  check_error([&] { (void)models::llama(c, process_mesh({2})); }, kind,
              "num_attention_heads (32) is not a multiple of num_key_value_heads (5)");
  check_error([&] { (void)models::llama(models::llama3_8b, process_mesh({2, 16}), {.tp = 1}); }, kind,
              "num_key_value_heads (8) is not divisible by mesh dim 1's size 16");
  check_error([&] { (void)models::llama(models::llama3_8b, process_mesh({2}), {.tp = 1}); }, kind,
              "layout tp names mesh dim 1, but the mesh has 1 dims");
  check_error([&] { (void)models::llama(models::llama3_8b, process_mesh({2, 2}), {.dp = 1, .tp = 1}); }, kind,
              "the layout names mesh dim 1 twice");
  check_error([&] { (void)models::llama(models::llama3_8b, process_mesh({2}), {.dp = 0, .sp = true}); }, kind,
              "sequence parallelism (sp) needs a tp mesh dim");
  check_error([&] { (void)models::llama(models::llama3_8b, process_mesh({2}), {.ep = 0}); }, kind,
              "layout ep names mesh dim 0, but the model has no experts");
  check_error([&] { (void)models::llama(models::llama3_8b, process_mesh({2}), {}, {.seq = 0}); }, kind,
              "seq is 0: it must be positive");
  check_error([&] { (void)models::gpt(models::gpt2, process_mesh({2}), {}, {.seq = 2048}); }, kind,
              "seq 2048 is longer than n_positions (1024)");
  models::gpt_config g = models::gpt2;
  g.n_head = 7;
  check_error([&] { (void)models::gpt(g, process_mesh({2})); }, kind, "n_embd (768) is not a multiple of n_head (7)");
  check_error([&] { (void)models::padded_vocab(50257, 0); }, kind, "each must be positive");
  check_error([&] { (void)models::gpt(models::gpt2, process_mesh({2}), {.cp = 0}, {.seq = 1024, .flash_attention = false}); },
              kind, "context parallelism (cp = mesh dim 0) needs flash attention");
  check_error([&] { (void)models::mixtral(models::mixtral_8x7b, process_mesh({2, 3}), {.dp = 0, .ep = 1}); }, kind,
              "num_local_experts (8) is not divisible by mesh dim 1's size 3");
  check_error([&] { (void)models::mixtral(models::mixtral_8x7b, process_mesh({2, 2}), {.tp = 0, .ep = 1, .sp = true}); },
              kind, "sequence parallelism with experts is not built (sp)");
  models::mixtral_config x = models::mixtral_8x7b;
  x.num_experts_per_tok = 9;
  check_error([&] { (void)models::mixtral(x, process_mesh({2})); }, kind,
              "num_experts_per_tok (9) is more than the number of experts (8)");
  check_error([&] { (void)models::mixtral(models::mixtral_8x7b, process_mesh({2}), {}, {}, 0.0); }, kind,
              "the capacity factor must be positive");
}

TEST_CASE("models: Mixtral at run time counts as at compile time") {
  CHECK(models::parameters(models::mixtral_8x7b) == 46'702'792'704);
  auto m = std::make_unique<models::built_model<models::mixtral_plan>>(
      models::mixtral(models::mixtral_8x7b, process_mesh({2, 4}), {.dp = 0, .ep = 1}, {.seq = 1024}, 1.25));
  using propagation = decltype(model::try_propagate(m->plan));
  CHECK(std::make_unique<propagation>(model::try_propagate(m->plan))->ok());
}

}  // namespace models_test
