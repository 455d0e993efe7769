// ctspmd-plan: "how do I train this model on N GPUs?" From a Hugging Face config.json and a
// device count, every configuration of the model library's standard layouts is built and costed
// through model requests (tools/requests/model_request.cpp), and the best are printed.
//
// The grid (until the layout search covers whole configurations): a mesh [dp, pp, tp] (tp the
// innermost, inside a node: the catalogue's nodes give it NVLink) for every tp of 1, 2, 4, 8 that
// divides the key/value heads (and the device count), every pp that divides the layers and the
// rest, dp what remains; Mixtral and DeepSeek also ep = dp (the experts over the data-parallel
// devices). Each with Megatron's tensor and sequence parallelism (sp when tp > 1), the layers
// pipelined over pp (1F1B, one sequence a micro-batch, global batch / dp micro-batches), ZeRO-1
// over dp with fp32 gradients and master weights, the gradients' reduction and the parameters'
// gathers overlapped (Megatron's flags), and no or full recomputation. A configuration
// whose peak memory exceeds the device's (80 GiB) is left out; the rest are ranked by step time.
#include "requests.hpp"

#include <ctspmd/model/cluster.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using ctspmd_requests::json;

constexpr std::string_view help = R"help(usage: ctspmd-plan --config FILE --devices N [--seq S] [--global-batch B]
                   [--cluster NAME] [--memory GIB] [--top K] [--json]

How to train the model of a Hugging Face config.json on N devices (8-device nodes): every
configuration of the grid below is built by the model library and costed, and the best K
(default 10) that fit the memory (default 80 GiB a device) are printed, fastest first.

  --config FILE        the model's config.json (architectures: LlamaForCausalLM, MistralForCausalLM,
                       Qwen2ForCausalLM, GPT2LMHeadModel, MixtralForCausalLM, DeepseekV3ForCausalLM)
  --devices N          the devices to train on
  --seq S              tokens a sequence (default 4096; GPT: at most n_positions)
  --global-batch B     sequences a step (default: 2 x N; rounded to a multiple of dp)
  --cluster NAME       the nodes: a100, h100 (default), h200, b200, mi300x
  --memory GIB         a device's memory (default 80)
  --top K              the configurations printed (default 10)
  --json               one JSON object instead of the table

Grid: mesh [dp, pp, tp], tp in 1, 2, 4, 8 (heads permitting), pp dividing the layers, dp the
rest (experts: ep = dp); Megatron TP with sequence parallelism, 1F1B pipeline over pp with
global batch / dp micro-batches of one sequence, ZeRO-1 over dp, fp32 gradients and master
weights, the gradients' reduction and the parameters' gathers overlapped with the backward and
forward passes (Megatron's --overlap-grad-reduce, --overlap-param-gather), recomputation none or
full. Progress goes to standard error.
)help";

struct options {
  std::string config, cluster = "h100";
  std::int64_t devices = 0, seq = 0, global_batch = 0, top = 10;
  double memory_gib = 80;
  bool as_json = false;
};

struct result {
  std::int64_t dp = 1, pp = 1, tp = 1, micro_batches = 1;
  std::string recompute;
  double step_seconds = 0, tokens_per_second = 0;
  std::int64_t peak_memory = 0;
};

std::int64_t field(const json& c, const char* name, std::int64_t fallback) {
  return c.contains(name) && c.at(name).is_number_integer() ? c.at(name).get<std::int64_t>() : fallback;
}

int run(const options& o) {
  std::ifstream file(o.config);
  if (!file) {
    std::cerr << "ctspmd-plan: cannot open " << o.config << "\n";
    return 2;
  }
  const json config = json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    std::cerr << "ctspmd-plan: " << o.config << " is not a JSON object\n";
    return 2;
  }
  json counts;
  try {
    counts = ctspmd_requests::model_counts({{"config", config}});
  } catch (const std::exception& e) {
    std::cerr << "ctspmd-plan: " << e.what() << "\n";
    return 1;
  }
  const std::string arch = counts.at("architecture").get<std::string>();
  const bool gpt = arch == "GPT2LMHeadModel";
  const bool experts = arch == "MixtralForCausalLM" || arch == "DeepseekV3ForCausalLM";
  const std::int64_t layers = gpt ? field(config, "n_layer", 1) : field(config, "num_hidden_layers", 1);
  const std::int64_t heads = gpt ? field(config, "n_head", 1) : field(config, "num_attention_heads", 1);
  const std::int64_t kv_heads = gpt ? heads : field(config, "num_key_value_heads", heads);
  const std::int64_t dense = field(config, "first_k_dense_replace", 0);
  const std::int64_t routed = experts ? field(config, "num_local_experts", field(config, "n_routed_experts", 1)) : 1;
  const std::int64_t seq = o.seq > 0 ? o.seq : gpt ? std::min<std::int64_t>(4096, field(config, "n_positions", 4096)) : 4096;

  std::vector<json> requests;
  std::vector<result> shapes;
  for (std::int64_t tp : {1, 2, 4, 8}) {
    if (o.devices % tp != 0 || kv_heads % tp != 0 || heads % tp != 0) continue;
    for (std::int64_t pp = 1; pp <= layers && pp * tp <= o.devices; ++pp) {
      // The pipeline splits the (first) repeated block: DeepSeek's MoE layers follow its dense ones.
      const std::int64_t split = layers - (arch == "DeepseekV3ForCausalLM" ? dense : 0);
      if ((o.devices / tp) % pp != 0 || split % pp != 0) continue;
      const std::int64_t dp = o.devices / tp / pp;
      if (experts && routed % dp != 0) continue;  // the experts over the data-parallel devices
      const std::int64_t batch = o.global_batch > 0 ? std::max<std::int64_t>(1, o.global_batch / dp) : 2 * tp * pp;
      for (const char* recompute : {"none", "full"}) {
        // Experts: the data-parallel devices hold the experts (ep over the dp dim); otherwise
        // sequence parallelism with tp.
        json layout = {{experts ? "ep" : "dp", "dp"}, {"pp", "pp"}, {"tp", "tp"}};
        if (tp > 1 && !experts) layout["sp"] = true;
        json model = {{"config", config},
                      {"mesh", {dp, pp, tp}},
                      {"mesh_names", {"dp", "pp", "tp"}},
                      {"layout", layout},
                      {"seq", seq}};
        json request = {{"model", model},
                        {"training",
                         {{"zero_stage", 1},
                          {"shard_optimizer_states_on", "dp"},
                          {"gradient_element_bytes", 4},
                          {"master_weights", true},
                          {"recompute", recompute}}},
                        {"pipeline",
                         {{"mesh_dim", "pp"},
                          {"micro_batches", batch},
                          {"schedule", "1f1b"},
                          {"overlap_grad_reduce", true},
                          {"overlap_param_gather", true}}},
                        {"cluster", o.cluster}};
        requests.push_back(std::move(request));
        shapes.push_back({dp, pp, tp, batch, recompute, 0, 0, 0});
      }
    }
  }
  std::vector<result> fitting;
  std::size_t failed = 0;
  const double limit = o.memory_gib * 1024.0 * 1024.0 * 1024.0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    std::cerr << "\rctspmd-plan: " << i + 1 << " of " << requests.size() << " configurations" << std::flush;
    try {
      const json answer = ctspmd_requests::model_answer(requests[i]);
      const json& p = answer.at("pipeline");
      result r = shapes[i];
      r.step_seconds = p.at("step_seconds").get<double>();
      r.peak_memory = p.at("peak_memory").get<std::int64_t>();
      r.tokens_per_second = static_cast<double>(r.micro_batches * r.dp * seq) / r.step_seconds;
      if (static_cast<double>(r.peak_memory) <= limit) fitting.push_back(r);
    } catch (const std::exception&) {
      ++failed;  // a layout the model's sizes do not allow
    }
  }
  std::cerr << "\n";
  std::sort(fitting.begin(), fitting.end(), [](const result& a, const result& b) { return a.step_seconds < b.step_seconds; });
  if (fitting.size() > static_cast<std::size_t>(o.top)) fitting.resize(static_cast<std::size_t>(o.top));
  if (o.as_json) {
    json out = {{"model", counts}, {"devices", o.devices}, {"seq", seq}, {"evaluated", requests.size()},
                {"refused", failed}, {"configurations", json::array()}};
    for (const auto& r : fitting)
      out["configurations"].push_back({{"dp", r.dp},
                                       {"pp", r.pp},
                                       {"tp", r.tp},
                                       {"micro_batches", r.micro_batches},
                                       {"recompute", r.recompute},
                                       {"peak_memory", r.peak_memory},
                                       {"step_seconds", r.step_seconds},
                                       {"tokens_per_second", r.tokens_per_second}});
    std::cout << ctspmd_requests::dump(out) << "\n";
    return fitting.empty() ? 1 : 0;
  }
  std::printf("%s, %lld parameters (%lld active), %lld devices, %lld tokens a sequence\n", arch.c_str(),
              static_cast<long long>(counts.at("parameters").get<std::int64_t>()),
              static_cast<long long>(counts.at("active_parameters").get<std::int64_t>()),
              static_cast<long long>(o.devices), static_cast<long long>(seq));
  std::printf("%zu configurations costed, %zu refused by the model's sizes; the best that fit %.0f GiB:\n",
              requests.size(), failed, o.memory_gib);
  std::printf("%6s %4s %4s %8s %10s %12s %10s %14s\n", "dp", "pp", "tp", "micro", "recompute", "memory GiB", "step s",
              "tokens/s");
  for (const auto& r : fitting)
    std::printf("%6lld %4lld %4lld %8lld %10s %12.2f %10.3f %14.0f\n", static_cast<long long>(r.dp),
                static_cast<long long>(r.pp), static_cast<long long>(r.tp), static_cast<long long>(r.micro_batches),
                r.recompute.c_str(), static_cast<double>(r.peak_memory) / (1024.0 * 1024.0 * 1024.0), r.step_seconds,
                r.tokens_per_second);
  if (fitting.empty()) std::printf("(none fits)\n");
  return fitting.empty() ? 1 : 0;
}

/// `text` as a positive integer, or 0.
std::int64_t positive(std::string_view text) {
  std::int64_t n = 0;
  for (const char ch : text) {
    if (ch < '0' || ch > '9' || n > (std::int64_t{1} << 40)) return 0;
    n = n * 10 + (ch - '0');
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << help;
      return 0;
    }
    if (a == "--json") {
      o.as_json = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "ctspmd-plan: " << (a.starts_with("--") ? "option " + std::string(a) + " needs a value" : "unknown argument " + std::string(a))
                << "\n" << help;
      return 2;
    }
    const std::string_view v = argv[++i];
    if (a == "--config") {
      o.config = v;
    } else if (a == "--cluster") {
      if (ctspmd::model::system_named(v) == nullptr) {
        std::cerr << "ctspmd-plan: --cluster " << v << " is not in the catalogue: a100, h100, h200, b200, mi300x\n";
        return 2;
      }
      o.cluster = v;
    } else if (a == "--devices" || a == "--seq" || a == "--global-batch" || a == "--top" || a == "--memory") {
      const std::int64_t n = positive(v);
      if (n == 0) {
        std::cerr << "ctspmd-plan: " << a << " needs a positive integer, not " << v << "\n";
        return 2;
      }
      if (a == "--memory")
        o.memory_gib = static_cast<double>(n);
      else
        (a == "--devices" ? o.devices : a == "--seq" ? o.seq : a == "--global-batch" ? o.global_batch : o.top) = n;
    } else {
      std::cerr << "ctspmd-plan: unknown option " << a << "\n" << help;
      return 2;
    }
  }
  if (o.config.empty() || o.devices == 0) {
    std::cerr << "ctspmd-plan: --config and --devices are needed\n" << help;
    return 2;
  }
  return run(o);
}
