// Model requests: {"model": {"config": {...config.json...}, "mesh": [...], "mesh_names": [...],
// "layout": {...}, "seq": N, "micro_batch": N, "capacity_factor": x, "flash_attention": b}, "training": ..., "pipeline":
// ..., "cluster": ..., "search": ..., "svg": true, "simulate": true}. The config's "architectures" picks the
// builder of <ctspmd/models/...> (Llama, Mistral and Qwen2; GPT-2; Mixtral; DeepSeek-V3), whose plan is then
// answered as a plan request answers it (plan_write.hpp writes it as one), with the model's
// counts beside: "model": {"architecture", "parameters", "active_parameters", "vocab_padding"}.
// Without a "mesh" only the counts are answered. A missing config field, an unknown
// architecture or a layout naming no mesh dim is an error naming it.

#include "plan_write.hpp"
#include "reader.hpp"
#include "requests.hpp"

#include <ctspmd/models/deepseek.hpp>
#include <ctspmd/models/gpt.hpp>
#include <ctspmd/models/llama.hpp>
#include <ctspmd/models/mixtral.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <tuple>

namespace ctspmd_requests {
namespace {

using namespace ctspmd;

/// The config.json (`config`) of architecture `arch`, read field by field.
class config_reader {
 public:
  config_reader(const json& config, std::string arch) : config_(config), arch_(std::move(arch)) {}

  /// Integer field `name`; absent (or null): `fallback`, or an error if it has none.
  std::int64_t integer(const char* name, std::optional<std::int64_t> fallback = std::nullopt) const {
    if (!config_.contains(name) || config_.at(name).is_null()) {
      if (fallback) return *fallback;
      bad_request("the config (" + arch_ + ") has no \"" + name + "\"");
    }
    return to_int(config_.at(name), std::string("config.") + name);
  }
  /// Boolean field `name`; absent (or null): `fallback`.
  bool flag(const char* name, bool fallback) const {
    if (!config_.contains(name) || config_.at(name).is_null()) return fallback;
    if (!config_.at(name).is_boolean()) bad_request(std::string("config.") + name + " must be true or false");
    return config_.at(name).get<bool>();
  }

  models::llama_config llama(bool qkv_bias) const {
    if (flag("attention_bias", false))
      bad_request("the config (" + arch_ + ") has \"attention_bias\": true, which the Llama builder does not build");
    return {.hidden_size = integer("hidden_size"),
            .intermediate_size = integer("intermediate_size"),
            .num_hidden_layers = integer("num_hidden_layers"),
            .num_attention_heads = integer("num_attention_heads"),
            .num_key_value_heads = integer("num_key_value_heads", 0),
            .head_dim = integer("head_dim", 0),
            .vocab_size = integer("vocab_size"),
            .max_position_embeddings = integer("max_position_embeddings", 0),
            .tie_word_embeddings = flag("tie_word_embeddings", false),
            .qkv_bias = qkv_bias};
  }
  models::gpt_config gpt() const {
    return {.n_embd = integer("n_embd"),
            .n_layer = integer("n_layer"),
            .n_head = integer("n_head"),
            .n_positions = integer("n_positions"),
            .vocab_size = integer("vocab_size"),
            .n_inner = integer("n_inner", 0),
            .tie_word_embeddings = flag("tie_word_embeddings", true)};
  }
  models::deepseek_config deepseek() const {
    if (integer("moe_layer_freq", 1) != 1)
      bad_request("the config (" + arch_ + ") has a \"moe_layer_freq\" other than 1, which the DeepSeek builder does not build");
    if (config_.contains("topk_method") && !config_.at("topk_method").is_string())
      bad_request("config.topk_method must be a string");
    return {.hidden_size = integer("hidden_size"),
            .intermediate_size = integer("intermediate_size"),
            .moe_intermediate_size = integer("moe_intermediate_size"),
            .num_hidden_layers = integer("num_hidden_layers"),
            .num_attention_heads = integer("num_attention_heads"),
            .q_lora_rank = integer("q_lora_rank"),
            .kv_lora_rank = integer("kv_lora_rank"),
            .qk_nope_head_dim = integer("qk_nope_head_dim"),
            .qk_rope_head_dim = integer("qk_rope_head_dim"),
            .v_head_dim = integer("v_head_dim"),
            .n_routed_experts = integer("n_routed_experts"),
            .n_shared_experts = integer("n_shared_experts", 0),
            .num_experts_per_tok = integer("num_experts_per_tok"),
            .first_k_dense_replace = integer("first_k_dense_replace", 0),
            .vocab_size = integer("vocab_size"),
            .max_position_embeddings = integer("max_position_embeddings", 0),
            .tie_word_embeddings = flag("tie_word_embeddings", false),
            .score_correction_bias = config_.value("topk_method", std::string()) == "noaux_tc"};
  }
  models::mixtral_config mixtral() const {
    return {llama(false), integer("num_local_experts"), integer("num_experts_per_tok")};
  }

 private:
  const json& config_;
  std::string arch_;
};

enum class family { llama, qwen2, gpt, mixtral, deepseek };

/// The architecture `config` names (its "architectures"' first entry) and its family.
std::pair<std::string, family> architecture_of(const json& config) {
  if (!config.contains("architectures")) bad_request("the config has no \"architectures\"");
  const json& a = config.at("architectures");
  if (!a.is_array() || a.empty() || !a[0].is_string())
    bad_request("config.architectures must be a non-empty array of strings");
  const auto name = a[0].get<std::string>();
  if (name == "LlamaForCausalLM" || name == "MistralForCausalLM") return {name, family::llama};
  if (name == "Qwen2ForCausalLM") return {name, family::qwen2};
  if (name == "GPT2LMHeadModel") return {name, family::gpt};
  if (name == "MixtralForCausalLM") return {name, family::mixtral};
  if (name == "DeepseekV3ForCausalLM") return {name, family::deepseek};
  bad_request("unknown architecture \"" + name +
              "\" in config.architectures; known: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
              "GPT2LMHeadModel, MixtralForCausalLM, DeepseekV3ForCausalLM");
}

/// The request's "layout": each kind of parallelism's mesh dim, by name (of "mesh_names") or
/// index; "sp" and "annotated" true or false.
models::layout read_model_layout(const json& v, const named_mesh& mesh) {
  check_fields(v, "\"layout\"", {"dp", "tp", "cp", "ep", "pp", "sp", "annotated"});
  models::layout l;
  const auto dim = [&](const char* key, std::int64_t& into) {
    if (!v.contains(key)) return;
    const json& d = v.at(key);
    const std::string what = std::string("layout.") + key;
    if (d.is_string()) {
      const auto name = d.get<std::string>();
      into = mesh.find(name);
      if (into < 0) bad_request(what + " names mesh dim \"" + name + "\", which \"mesh_names\" does not have");
      return;
    }
    into = to_int(d, what);
  };
  dim("dp", l.dp);
  dim("tp", l.tp);
  dim("cp", l.cp);
  dim("ep", l.ep);
  dim("pp", l.pp);
  for (const char* key : {"sp", "annotated"})
    if (v.contains(key) && !v.at(key).is_boolean()) bad_request(std::string("layout.") + key + " must be true or false");
  l.sp = v.value("sp", false);
  l.annotated = v.value("annotated", true);
  return l;
}

/// The plan model `m` builds, as a plan request's "plan" (with "mesh_names"), and where its loss
/// is in it.
template <class Built>
std::pair<json, std::size_t> written_plan(const Built& m, const named_mesh& mesh) {
  auto w = plan_write::write(m.plan);
  json plan = std::move(w.request);
  if (mesh.has_names()) {
    json names = json::array();
    for (std::int64_t d = 0; d < mesh.ndim(); ++d) names.push_back(std::string(mesh.name(d)));
    plan["mesh_names"] = names;
  }
  return {std::move(plan), w.index[m.loss.index]};
}

/// A model request's "model" read and built: its counts, and with a "mesh" its plan (a plan
/// request's "plan") and where its loss is in it.
struct built_request {
  json counts;
  json plan;
  std::size_t loss = 0;
  bool built = false;
};

built_request build(const json& m) {
  check_fields(m, "\"model\"",
               {"config", "mesh", "mesh_names", "layout", "seq", "micro_batch", "capacity_factor", "flash_attention"});
  if (!m.contains("config")) bad_request("\"model\" has no \"config\" (a Hugging Face config.json)");
  const json& config = m.at("config");
  if (!config.is_object()) throw type_error("\"config\" must be an object", "config", expected_type::object, config);
  const auto [arch, kind] = architecture_of(config);
  const config_reader read(config, arch);

  built_request out;
  out.counts = {{"architecture", arch}};
  std::int64_t padding = 0;
  const bool built = out.built = m.contains("mesh");
  if (!built)
    for (const char* key : {"mesh_names", "layout", "seq", "micro_batch", "capacity_factor", "flash_attention"})
      if (m.contains(key)) bad_request(std::string("\"model\" has \"") + key + "\" but no \"mesh\" to build on");
  const named_mesh mesh = built ? read_mesh(m) : named_mesh(process_mesh({1}));
  const models::layout l = built && m.contains("layout") ? read_model_layout(m.at("layout"), mesh) : models::layout{};
  // Counts only: a plan of one token. Otherwise "seq" defaults to 4096 tokens (GPT: at most
  // n_positions), "micro_batch" to 1.
  models::run_shape r{.seq = built ? 4096 : 1};
  if (built && kind == family::gpt) r.seq = std::min<std::int64_t>(r.seq, read.integer("n_positions"));
  if (m.contains("seq")) r.seq = to_int(m.at("seq"), "model.seq");
  if (m.contains("micro_batch")) r.micro_batch = to_int(m.at("micro_batch"), "model.micro_batch");
  if (m.contains("flash_attention")) {
    if (!m.at("flash_attention").is_boolean()) bad_request("model.flash_attention must be true or false");
    r.flash_attention = m.at("flash_attention").get<bool>();
    if (!r.flash_attention && kind != family::gpt)
      bad_request("model.flash_attention false: only GPT2LMHeadModel writes the attention core out");
  }
  double capacity_factor = 1;
  if (m.contains("capacity_factor")) {
    if (!m.at("capacity_factor").is_number()) bad_request("model.capacity_factor must be a number");
    capacity_factor = m.at("capacity_factor").get<double>();
  }
  const auto take = [&](const auto& built_model) {
    padding = built_model.vocab_padding;
    if (built) std::tie(out.plan, out.loss) = written_plan(built_model, mesh);
  };
  switch (kind) {
    case family::llama:
    case family::qwen2: {
      const auto c = read.llama(kind == family::qwen2);
      out.counts["parameters"] = out.counts["active_parameters"] = models::parameters(c);
      take(*std::make_unique<models::built_model<models::llama_plan>>(models::llama(c, mesh, l, r)));
      break;
    }
    case family::gpt: {
      const auto c = read.gpt();
      out.counts["parameters"] = out.counts["active_parameters"] = models::parameters(c);
      take(*std::make_unique<models::built_model<models::gpt_plan>>(models::gpt(c, mesh, l, r)));
      break;
    }
    case family::mixtral: {
      const auto c = read.mixtral();
      out.counts["parameters"] = models::parameters(c);
      out.counts["active_parameters"] = models::active_parameters(c);
      take(*std::make_unique<models::built_model<models::mixtral_plan>>(models::mixtral(c, mesh, l, r, capacity_factor)));
      break;
    }
    case family::deepseek: {
      const auto c = read.deepseek();
      out.counts["parameters"] = models::parameters(c);
      out.counts["active_parameters"] = models::active_parameters(c);
      take(*std::make_unique<models::built_model<models::deepseek_plan>>(models::deepseek(c, mesh, l, r, capacity_factor)));
      break;
    }
  }
  out.counts["vocab_padding"] = padding;
  return out;
}

}  // namespace

json model_plan(const json& model) {
  if (model.is_object() && !model.contains("mesh")) bad_request("\"model\" has no \"mesh\" to build the plan on");
  return build(model).plan;
}

json model_counts(const json& model) { return build(model).counts; }

json model_answer(const json& request) {
  check_fields(request, "the request", {"model", "training", "pipeline", "cluster", "search", "svg", "simulate"});
  auto m = build(request.at("model"));
  if (!m.built) {
    for (const char* key : {"training", "pipeline", "cluster", "search", "svg", "simulate"})
      if (request.contains(key)) bad_request(std::string("the request has \"") + key + "\", but \"model\" has no \"mesh\"");
    return {{"model", m.counts}};
  }
  json& plan = m.plan;
  for (const char* key : {"training", "pipeline", "cluster", "search"})
    if (request.contains(key)) plan[key] = request.at(key);
  // The training step's loss is the model's, unless the request names another.
  if (plan.contains("training") && plan.at("training").is_object() && !plan.at("training").contains("loss"))
    plan["training"]["loss"] = m.loss;
  json plan_request = {{"plan", plan}};
  for (const char* key : {"svg", "simulate"})
    if (request.contains(key)) plan_request[key] = request.at(key);
  json answer = verify_plan_request(plan_request);
  answer["model"] = m.counts;
  return answer;
}

}  // namespace ctspmd_requests
