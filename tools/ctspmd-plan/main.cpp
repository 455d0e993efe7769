// ctspmd-plan: "how do I train this model on N GPUs?" From a Hugging Face config.json and a
// device count, every configuration of the model library's standard layouts is built and costed
// through model requests (tools/requests/model_request.cpp), and the best are printed.
//
// The grid (until the layout search covers whole configurations):
// - the mesh [pp, dp, ep, cp, tp], outermost first as Megatron orders its groups (tp innermost,
//   inside a node, where the catalogue's nodes give it NVLink; dims of size 1 left out but pp's):
//   tp in 1, 2, 4, 8 dividing the heads and key/value heads; cp in 1, 2, 4, 8 (flash attention's
//   all-gather form; not for DeepSeek); pp dividing the layers (DeepSeek: its MoE layers); for
//   Mixtral and DeepSeek, ep dividing the experts; dp what remains. The batch is split over dp x ep;
// - Megatron's tensor parallelism, with sequence parallelism when tp > 1 (not with experts: the
//   builders refuse it);
// - micro-batches of 1 or 2 sequences, global batch / (dp x ep x micro-batch size) of them (a
//   configuration the global batch does not divide among is left out), in a 1F1B pipeline over
//   pp, or interleaved with 2 chunks a stage where the layers allow it;
// - ZeRO-1 or ZeRO-3 over dp (with cp or ep as a second dim, Megatron's distributed optimizer
//   over dp x cp), fp32 gradients and master weights; the gradients' reduction and the
//   parameters' gathers overlapped (Megatron's --overlap-grad-reduce, --overlap-param-gather);
// - recomputation none, selective or full: the first that fits the device's memory, since
//   recomputing only adds work to the same configuration.
// Configurations whose peak memory exceeds the device's are left out; the rest are ranked by step
// time.
#include "requests.hpp"

#include <ctspmd/model/cluster.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace {

using ctspmd_requests::json;

constexpr std::string_view help = R"help(usage: ctspmd-plan --config FILE --devices N [--seq S] [--global-batch B]
                   [--cluster NAME] [--memory GIB] [--top K] [--json] [--svg FILE]

How to train the model of a Hugging Face config.json on N devices (8-device nodes): every
configuration of the grid below is built by the model library and costed, and the best K
(default 10) that fit the memory (default 80 GiB a device) are printed, fastest first.

  --config FILE        the model's config.json (architectures: LlamaForCausalLM, MistralForCausalLM,
                       Qwen2ForCausalLM, GPT2LMHeadModel, MixtralForCausalLM, DeepseekV3ForCausalLM)
  --devices N          the devices to train on
  --seq S              tokens a sequence (default 4096; GPT: at most n_positions)
  --global-batch B     sequences a step (default: 2 x N; a configuration it does not divide
                       among, data-parallel ranks x micro-batch size, is left out)
  --cluster NAME       the nodes: a100, h100 (default), h200, b200, mi300x
  --memory GIB         a device's memory (default 80)
  --top K              the configurations printed (default 10)
  --json               one JSON object instead of the table
  --svg FILE           the best configuration's step, drawn (the plan request's "svg")

Grid: mesh [pp, dp, ep, cp, tp] (tp innermost): tp in 1, 2, 4, 8 (heads permitting), cp in 1,
2, 4, 8 (not DeepSeek), pp dividing the layers, ep dividing the experts (Mixtral, DeepSeek), dp
the rest; Megatron TP with sequence parallelism (not with experts); micro-batches of 1 or 2
sequences; 1F1B over pp, or interleaved with 2 chunks a stage; ZeRO-1 or ZeRO-3 over dp (and cp
or ep), fp32 gradients and master weights, the gradients' reduction and the parameters' gathers
overlapped (Megatron's --overlap-grad-reduce, --overlap-param-gather); recomputation none,
selective or full, the first that fits. A progress bar goes to standard error.
)help";

struct options {
  std::string config, cluster = "h100", svg;
  std::int64_t devices = 0, seq = 0, global_batch = 0, top = 10;
  double memory_gib = 80;
  bool as_json = false;
};

/// One configuration of the grid, and what it costs once evaluated.
struct configuration {
  std::int64_t pp = 1, dp = 1, ep = 1, cp = 1, tp = 1, micro_batch = 1, micro_batches = 1;
  std::int64_t zero = 1;  ///< ZeRO's stage (0 when nothing is data parallel)
  std::string schedule = "1f1b", recompute = "none";
  double step_seconds = 0, mfu = 0, tokens_per_second = 0;
  std::int64_t peak_memory = 0;
};

std::int64_t field(const json& c, const char* name, std::int64_t fallback) {
  return c.contains(name) && c.at(name).is_number_integer() ? c.at(name).get<std::int64_t>() : fallback;
}

/// The model request of configuration `c` of model `config`.
json request_of(const json& config, const configuration& c, std::int64_t seq, bool experts, const std::string& cluster) {
  json mesh = json::array(), names = json::array(), layout = json::object();
  const std::pair<const char*, std::int64_t> dims[] = {{"pp", c.pp}, {"dp", c.dp}, {"ep", c.ep}, {"cp", c.cp}, {"tp", c.tp}};
  for (const auto& [name, size] : dims) {
    if (size == 1 && std::string_view(name) != "pp") continue;
    mesh.push_back(size);
    names.push_back(name);
    layout[name] = name;
  }
  if (c.tp > 1 && !experts) layout["sp"] = true;
  json training = {{"gradient_element_bytes", 4}, {"master_weights", true}, {"recompute", c.recompute}};
  std::vector<const char*> shard;  // ZeRO's dims: dp, then cp or ep
  for (const auto& [name, size] : {std::pair{"dp", c.dp}, std::pair{"cp", c.cp}, std::pair{"ep", c.ep}})
    if (size > 1 && shard.size() < 2) shard.push_back(name);
  if (!shard.empty()) {
    training["zero_stage"] = c.zero;
    training["shard_optimizer_states_on"] = shard[0];
    if (shard.size() > 1) training["shard_optimizer_states_also_on"] = shard[1];
  }
  json pipeline = {{"mesh_dim", "pp"},           {"micro_batches", c.micro_batches}, {"schedule", c.schedule},
                   {"overlap_grad_reduce", true}, {"overlap_param_gather", true}};
  if (c.schedule == "interleaved") pipeline["chunks"] = 2;
  return {{"model", {{"config", config}, {"mesh", mesh}, {"mesh_names", names}, {"layout", layout}, {"seq", seq},
                     {"micro_batch", c.micro_batch}}},
          {"training", training},
          {"pipeline", pipeline},
          {"cluster", cluster}};
}

/// "pp2 dp16 tp2": the dims of `c` larger than 1 (or "1 device").
std::string mesh_text(const configuration& c) {
  std::string s;
  for (const auto& [name, size] : {std::pair{"pp", c.pp}, std::pair{"dp", c.dp}, std::pair{"ep", c.ep},
                                   std::pair{"cp", c.cp}, std::pair{"tp", c.tp}})
    if (size > 1) s += (s.empty() ? "" : " ") + std::string(name) + std::to_string(size);
  return s.empty() ? "1 device" : s;
}

/// The progress bar on standard error, redrawn on a terminal; elsewhere only its last state.
void progress(std::size_t done, std::size_t total) {
  static const bool terminal = isatty(STDERR_FILENO) != 0;
  if (!terminal && done < total) return;
  constexpr std::size_t width = 30;
  const std::size_t filled = total == 0 ? width : done * width / total;
  std::cerr << "\rctspmd-plan: [" << std::string(filled, '#') << std::string(width - filled, ' ') << "] " << done << "/"
            << total << " configurations" << std::flush;
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
  const bool gpt = arch == "GPT2LMHeadModel", deepseek = arch == "DeepseekV3ForCausalLM";
  const bool experts = arch == "MixtralForCausalLM" || deepseek;
  const std::int64_t layers = gpt ? field(config, "n_layer", 1) : field(config, "num_hidden_layers", 1);
  const std::int64_t heads = gpt ? field(config, "n_head", 1) : field(config, "num_attention_heads", 1);
  const std::int64_t kv_heads = gpt ? heads : field(config, "num_key_value_heads", heads);
  // The pipeline splits the (first) repeated block: DeepSeek's MoE layers follow its dense ones.
  const std::int64_t split = layers - (deepseek ? field(config, "first_k_dense_replace", 0) : 0);
  const std::int64_t routed = experts ? field(config, "num_local_experts", field(config, "n_routed_experts", 1)) : 1;
  const std::int64_t seq = o.seq > 0 ? o.seq : gpt ? std::min<std::int64_t>(4096, field(config, "n_positions", 4096)) : 4096;
  const std::int64_t global_batch = o.global_batch > 0 ? o.global_batch : 2 * o.devices;

  std::vector<configuration> grid;
  for (std::int64_t tp : {1, 2, 4, 8}) {
    if (o.devices % tp != 0 || kv_heads % tp != 0 || heads % tp != 0) continue;
    for (std::int64_t cp : {1, 2, 4, 8}) {
      if ((cp > 1 && deepseek) || (o.devices / tp) % cp != 0) continue;
      for (std::int64_t pp = 1; pp <= split && pp * tp * cp <= o.devices; ++pp) {
        if ((o.devices / tp / cp) % pp != 0 || split % pp != 0) continue;
        const std::int64_t data = o.devices / tp / cp / pp;  // dp x ep
        for (std::int64_t ep = 1; ep <= (experts ? data : 1); ++ep) {
          if (data % ep != 0 || routed % ep != 0) continue;
          for (std::int64_t micro_batch : {1, 2}) {
            // Every configuration runs the whole global batch: those it does not divide among
            // are left out, so that step times compare like with like.
            if (global_batch % (data * micro_batch) != 0) continue;
            const std::int64_t micro_batches = global_batch / (data * micro_batch);
            for (const char* schedule : {"1f1b", "interleaved"}) {
              if (std::string_view(schedule) == "interleaved" && (pp == 1 || split % (2 * pp) != 0 || micro_batches % pp != 0))
                continue;
              for (std::int64_t zero : {1, 3}) {
                if (zero == 3 && data * cp == 1) continue;  // nothing to shard over
                grid.push_back({pp, data / ep, ep, cp, tp, micro_batch, micro_batches, data * cp == 1 ? 0 : zero, schedule, "none",
                                0, 0, 0, 0});
              }
            }
          }
        }
      }
    }
  }
  std::vector<configuration> fitting;
  std::map<std::string, std::size_t> refusals;  // why, and how many times
  std::size_t refused = 0, too_large = 0;
  const double limit = o.memory_gib * 1024.0 * 1024.0 * 1024.0;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    progress(i, grid.size());
    configuration c = grid[i], tried = c;
    bool built = false;
    for (const char* recompute : {"none", "selective", "full"}) {
      tried.recompute = recompute;
      try {
        const json p = ctspmd_requests::model_answer(request_of(config, tried, seq, experts, o.cluster)).at("pipeline");
        tried.step_seconds = p.at("step_seconds").get<double>();
        tried.mfu = p.at("mfu").get<double>();
        tried.peak_memory = p.at("peak_memory").get<std::int64_t>();
        c = tried;
        built = true;
      } catch (const std::exception& e) {
        if (!built) {  // a layout the model's sizes (or the mesh's dims) do not allow
          ++refusals[e.what()];
          break;
        }
        continue;  // (one recomputation refused: the next may do)
      }
      if (static_cast<double>(c.peak_memory) <= limit) break;
    }
    if (!built) {
      ++refused;
    } else if (static_cast<double>(c.peak_memory) > limit) {
      ++too_large;
    } else {
      c.tokens_per_second = static_cast<double>(c.micro_batches * c.micro_batch * c.dp * c.ep * seq) / c.step_seconds;
      fitting.push_back(c);
    }
  }
  progress(grid.size(), grid.size());
  std::cerr << "\n";
  std::stable_sort(fitting.begin(), fitting.end(),
                   [](const configuration& a, const configuration& b) { return a.step_seconds < b.step_seconds; });
  if (!fitting.empty() && !o.svg.empty()) {
    json request = request_of(config, fitting.front(), seq, experts, o.cluster);
    request["svg"] = true;
    std::ofstream out(o.svg);
    out << ctspmd_requests::model_answer(request).at("svg").get<std::string>();
    if (!out) {
      std::cerr << "ctspmd-plan: cannot write " << o.svg << "\n";
      return 2;
    }
  }
  if (fitting.size() > static_cast<std::size_t>(o.top)) fitting.resize(static_cast<std::size_t>(o.top));
  if (o.as_json) {
    json out = {{"model", counts},       {"devices", o.devices},  {"seq", seq},
                {"global_batch", global_batch}, {"evaluated", grid.size()}, {"refused", refused},
                {"too_large", too_large}, {"refusals", json::array()}, {"configurations", json::array()}};
    for (const auto& [reason, count] : refusals) out["refusals"].push_back({{"reason", reason}, {"count", count}});
    for (const auto& c : fitting)
      out["configurations"].push_back({{"pp", c.pp},
                                       {"dp", c.dp},
                                       {"ep", c.ep},
                                       {"cp", c.cp},
                                       {"tp", c.tp},
                                       {"micro_batch", c.micro_batch},
                                       {"micro_batches", c.micro_batches},
                                       {"schedule", c.schedule},
                                       {"zero_stage", c.zero},
                                       {"recompute", c.recompute},
                                       {"peak_memory", c.peak_memory},
                                       {"step_seconds", c.step_seconds},
                                       {"mfu", c.mfu},
                                       {"tokens_per_second", c.tokens_per_second}});
    std::cout << ctspmd_requests::dump(out) << "\n";
    return fitting.empty() ? 1 : 0;
  }
  std::printf("%s, %lld parameters (%lld active), %lld devices, %lld tokens a sequence, %lld sequences a step\n",
              arch.c_str(), static_cast<long long>(counts.at("parameters").get<std::int64_t>()),
              static_cast<long long>(counts.at("active_parameters").get<std::int64_t>()),
              static_cast<long long>(o.devices), static_cast<long long>(seq), static_cast<long long>(global_batch));
  std::printf("%zu configurations costed: %zu refused by the model's sizes or the mesh's dims, %zu over %.0f GiB; the fastest:\n",
              grid.size(), refused, too_large, o.memory_gib);
  std::printf("%-22s %5s %7s %-11s %4s %-9s %10s %8s %6s %11s\n", "mesh", "micro", "batches", "schedule", "zero",
              "recompute", "memory GiB", "step s", "MFU %", "tokens/s");
  for (const auto& c : fitting)
    std::printf("%-22s %5lld %7lld %-11s %4lld %-9s %10.2f %8.3f %6.1f %11.0f\n", mesh_text(c).c_str(),
                static_cast<long long>(c.micro_batch), static_cast<long long>(c.micro_batches), c.schedule.c_str(),
                static_cast<long long>(c.zero), c.recompute.c_str(),
                static_cast<double>(c.peak_memory) / (1024.0 * 1024.0 * 1024.0), c.step_seconds, 100 * c.mfu,
                c.tokens_per_second);
  if (fitting.empty()) std::printf("(none fits)\n");
  for (const auto& [reason, count] : refusals) std::printf("refused %zu: %s\n", count, reason.c_str());
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
    } else if (a == "--svg") {
      o.svg = v;
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
