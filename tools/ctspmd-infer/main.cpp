// ctspmd-infer: sharding inference by operator name, JSON Lines in, JSON Lines out. The requests
// are read and answered by the library ctspmd_requests (tools/requests/requests.hpp), which the
// Python module shares; this file has the options and the line loop.
#include "requests.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

namespace {

constexpr std::string_view help = R"help(usage: ctspmd-infer [FILE]      read requests from FILE, or standard input
       ctspmd-infer --list       every operator name with its attributes
       ctspmd-infer --help       this text

Each input line is one JSON request; each gets one JSON response line, in order.

Request:
  {"op": "matmul",                      operator name (see --list)
   "direction": "forward",              "forward" (default) or "backward"
   "semantics": "fluid",                "fluid" (default: Paddle's 2023 rules) or "phi" (2025: co-shard merges)
   "mesh": [2, 3],                      the process mesh's shape
   "mesh_names": ["dp", "mp"],          optional: a name per mesh dim ([A-Za-z_][A-Za-z0-9_]*, at most 32
                                        characters), needed by "partition_spec" and "sdy"
   "inputs": [OPERAND, ...],            the operator's inputs
   "outputs": [OPERAND, ...],           backward only: the outputs' wanted dist attributes
   "attrs": {"trans_x": false}}         optional; absent attributes take their defaults
OPERAND:
  {"shape": [64, 32],                   sizes; -1 for a size known only at run time
   "dims_mapping": [1, -1],             optional (default all -1): mesh dim per tensor dim, -1 = replicated;
                                        or nested, [[0, 1], []]: per tensor dim its mesh dims, major first
   "partial": [0],                      optional: mesh dims on which the tensor is partial
   "partial_reduce": ["sum"]}           optional: their reductions (sum, max, min, prod, avg, any, all)
  Instead of "dims_mapping", an operand's layout may be written in another framework's language,
  as that language's text in one JSON string (one form for all the operands of a request):
   "placements": "[Shard(0), Replicate()]"       PyTorch DTensor, one placement per mesh dim: Shard(d),
                                        Shard(dim=d), Replicate(), Partial() (sum), Partial('max') (also
                                        avg, product, min, band = all, bor = any), _StridedShard(d, split_factor=k);
                                        no "partial" beside it. Co-shard: Shard(d) on several mesh dims is
                                        split major first in mesh dim order; another order takes
                                        _StridedShard, k = the product of the sizes of the mesh dims that
                                        split d outside this one but have a higher index.
   "partition_spec": "P('dp', None)"             JAX (also PartitionSpec(...)), over "mesh_names": per
                                        leading tensor dim None, 'name' or ('major', 'minor'); missing
                                        trailing dims replicated; "partial" may be given beside it.
   "sdy": "#sdy.sharding<@mesh, [{\"dp\"}, {}]>"  OpenXLA Shardy, over "mesh_names": one {...} per tensor dim,
                                        names major first; {"x", ?} open dims read as closed;
                                        replicated={...}; unreduced={...} = partial sum.
  A text error names its column (1-based), e.g. "inputs[1]: partition_spec: column 9: no dim of the
  mesh (2 dims) has this name".
Response:
  {"inputs": [ATTR, ...], "outputs": [ATTR, ...]}
  ATTR: {"dims_mapping": [1, -1], "partial": [0], "partial_reduce": ["sum"]}
  (dims_mapping is nested when a tensor dim is split over several mesh dims)
  A request in a language is answered in it, every operand, outputs included, as canonical text:
  ATTR: {"placements": "[Shard(0), Partial()]"}
        {"partition_spec": "P('dp', None)", "partial": [1], "partial_reduce": ["sum"]}
        {"sdy": "#sdy.sharding<@mesh, [{\"dp\"}, {}], unreduced={\"mp\"}>"}  (the request's @symbol;
        "partial" and "partial_reduce" beside it, listing every partial dim, if one is not a sum)
  forward: the inputs as the operator needs them (a difference from the request is a reshard)
  and the inferred outputs; backward: the inputs the outputs require, and the outputs.
Error (for that line; processing continues with the next):
  {"error": {"kind": "invalid_argument", "message": "..."}}
  kinds: invalid_argument, unimplemented, precondition_not_met, not_found, already_exists.
  Malformed JSON, unknown fields, wrong types and bad values are errors, never ignored.

Plan request (a whole model: every tensor's layout, the reshard report, a training step's cost):
  {"plan": {"mesh": [2, 4], "mesh_names": ["dp", "mp"], "semantics": "fluid",
   "tensors": [TENSOR, ...],            declared in order; the answer lists them (and a training step's) in order
   "operators": [OPERATOR | {"repeat": BLOCK}, ...],   in program order
   "training": TRAINING,                optional: verify the training step (backward, optimizer) instead
   "cluster": "h100" | CLUSTER,         optional: the step's cost on it (default "h100" with "training");
                                        "a100", "h100", "h200", "b200", "mi300x": the catalogue's nodes
   "pipeline": PIPELINE,                optional: its first repeated block split over a mesh dim's stages
   "search": SEARCH},                   optional (with "training"): lay out the unannotated plan inputs,
                                        and choose the step's options, as model::search finds best
   "svg": true,                         optional: the answer's "svg" is a picture of it, an SVG document
                                        (collectives by phase and mesh dim, memory by category, step time;
                                        each bar's exact figure in data-bytes, data-count, data-seconds)
   "simulate": true                     optional: run it on a simulated mesh (float64, random inputs)
                                        with exactly its reshards, and compare with one device (at
                                        most 262,144 elements and 64 devices); {"load_balanced_context":
                                        true}: the same, each device of a context-parallel sequence
                                        holding chunks i and 2n-1-i of 2n (a causal mask by those positions)}
  TENSOR: {"name": "x", "shape": [8, 1024], "dtype": "bfloat16" (bool, int8, uint8, int16, float16, int32,
           float32 (default), int64, float64) or "element_bytes": 2, "parameter": true (trained),
           and optionally a layout as an OPERAND gives it (its presence annotates the tensor)}
  OPERATOR: {"op": "matmul", "inputs": ["x", "w"], "outputs": ["y"],   tensors by name or plan index
             "attrs": {...}, "label": "attn.q", "recomputable": true (selective recomputation's region)}
  BLOCK: {"count": 4, "source": "x0", "input": "x", "tensors": [...], "operators": [...], "output": "x2"}
         runs count times: "input" names, in the body, the source (first run) or the previous run's
         output; "output" (a body tensor) keeps its name after the block. Body names hide outer ones.
  TRAINING: {"loss": "loss", "shard_optimizer_states_on": "dp" (or a mesh dim),
             "shard_optimizer_states_also_on": "cp" (ZeRO over the product group dp x cp), "zero_stage": 1..3,
             "state_element_bytes": 4, "gradient_element_bytes": 4, "master_weights": false,
             "recompute": "none" | "selective" | "full", "keep_gathered_inputs": false}
  CLUSTER: {"links": [{"bandwidth": 5e10, "latency": 1e-5}, ...one per mesh dim], "peak_flops": 9.894e14,
            "compute_efficiency": 1, "communication_efficiency": 1, "memory_bandwidth": 3.35e12 (bytes/s;
            0: time FLOPs alone), "memory_efficiency": 1, "memory_capacity": 8e10 (bytes; 0: not given)}
  SEARCH: {"memory_limit": bytes a device (0: none), "candidates": 16, "keep": 3, "max_states": 64,
           "max_work": 1000000000 (the layout search's budget, 0: none: a search that would take more is
           an error), "zero_dim": "dp" (also try ZeRO stages 1-3 over it), "try_recompute": false, "co_shard": false,
           "improve": true (then move one input's layout at a time while the exact step time drops;
           the answer's "improvements" lists the moves), "improve_budget": 256 (its exact evaluations)}
  PIPELINE: {"mesh_dim": "pp" (or a mesh dim: no tensor split over it), "micro_batches": 1,
             "schedule": "1f1b" | "gpipe" | "interleaved", "chunks": 1, "stage_layers": [7, 8, ..., 7],
             "overlap_grad_reduce": false, "overlap_param_gather": false, "overlap_tensor_parallel": false}
Plan response:
  {"tensors": [{"name": "x", ATTR..., "parameter": true, "role": "gradient", "of": 3}, ...],
   "reshards": [{"op": 2, "name": "fc2", "rule": "matmul", "input": 0 (or "output": 0), "tensor": 4,
                 "tensor_name": "y", "mesh_dim": 1, "collective": "all_reduce", "bytes": 24576 (per device,
                 one occurrence; -1 if a size is unknown), "times": 1, "block": -1, "phase": "forward",
                 "from": ATTR, "to": ATTR, and for a collective over several mesh dims at once
                 "mesh_dims": [0, 1] ("mesh_dim" the first)}, ...],
   "totals": {"forward": {"all_reduce": {"count": 1, "bytes": 24576}}, ...},
   "cost": {"memory": {"parameters", "gradients", "optimizer_states", "activations", "peak", "peak_op",
                       "peak_op_name", "peak_phase"},
            "flops": {"forward", "backward", "optimizer", "recompute", "model", "hardware"},
            "collectives": {PHASE: {COLLECTIVE: {"count", "bytes", "seconds",
                                                 "mesh_dims": [{"mesh_dim", "count", "bytes", "seconds"}, ...]}}},
            "compute_seconds", "communication_seconds", "step_seconds", "overlapped_step_seconds",
            "mfu", "overlapped_mfu",
            "saturated": ["flops.forward", ...] (only when a figure overflowed int64: it is listed,
            with the times and rates derived from it, and is not to be trusted)},
           (with "training", "cluster" or "pipeline"; figures per device)
   "pipeline": {"stages": [{"first_layer", "layers", "parameters", "gradients", "optimizer_states",
                            "activations" (per micro-batch), "in_flight", "memory", "flops", "sends",
                            "send_bytes", "compute_seconds", "forward_seconds", "communication_seconds",
                            "exposed_communication_seconds", "send_seconds" (per micro-batch), "reduction_seconds", "gather_seconds",
                            "exposed_reduction_seconds", "exposed_gather_seconds", "optimizer_seconds",
                            "tied_gradient_bytes", "tied_gradient_seconds" (per step), "collectives": {COLLECTIVE:
                            {"count", "bytes", "seconds"}} (per micro-batch, the sends as
                            "send_recv")}, ...],
                "micro_batches", "boundary_bytes", "bubble_fraction", "ideal_seconds", "step_seconds", "mfu",
                "peak_memory", "peak_stage", "memory_capacity" (the cluster's; 0: not given)},   (with "pipeline")
   "search": {"plans": [{"layouts": {"w1": ATTR, ...}, "zero_stage", "recompute", "step_seconds",
                         "peak_memory", "estimate_seconds", "greedy"}, ...] (best first: the answer's plan;
                         a name two chosen tensors share: each keyed by its index),
              "greedy": {...}, "states", "work", "evaluations", "infeasible"},   (with "search")
   "svg": "<svg ...>...</svg>",   (with "svg": true)
   "simulation": {"matches", "max_relative_error", "gradient_error", "mismatch", "bytes_match", "byte_mismatches",
                  "unnecessary": [reshards whose removal changes no result], "devices", "collectives"}}
                                  (with "simulate")
  ATTR as above, in the plan's layout form. A failing plan's error names where:
  {"error": {"kind": ..., "message": "operators[3] (operator 3 'fc2'): ...", "at": "operators[3]",
             "operator": 3, "name": "fc2", "rule": "matmul", "operand": "inputs", "phase": ..., "inputs": [0, 1]}}

Model request (a Hugging Face config.json in, its plan built by <ctspmd/models/...>, answered as a plan):
  {"model": {"config": {...config.json...},   "architectures": LlamaForCausalLM, MistralForCausalLM,
                                             Qwen2ForCausalLM, GPT2LMHeadModel, MixtralForCausalLM
                                             or DeepseekV3ForCausalLM
             "mesh": [2, 8], "mesh_names": ["dp", "tp"],   optional: without a mesh, the counts alone
             "layout": {"dp": "dp", "tp": "tp", "sp": true, "cp": ..., "ep": ..., "pp": ...,
                        "annotated": true},    mesh dims by name or index; "annotated": false for "search"
             "seq": 4096 (GPT: at most n_positions), "micro_batch": 1, "capacity_factor": 1.0 (experts),
             "flash_attention": true (GPT: false writes the attention core out)},
   "training": TRAINING ("loss" defaults to the model's), "cluster", "pipeline", "search", "svg", "simulate": as a plan's}
Model response: the plan response, and
  "model": {"architecture", "parameters", "active_parameters" (a token's, experts routed), "vocab_padding"}

Example:
  $ echo '{"op": "matmul", "mesh": [2, 3], "inputs": [{"shape": [64, 32], "dims_mapping": [1, 0]}, {"shape": [32, 48]}]}' | ctspmd-infer
  {"inputs":[{"dims_mapping":[1,0],"partial":[],"partial_reduce":[]},{"dims_mapping":[0,-1],"partial":[],"partial_reduce":[]}],"outputs":[{"dims_mapping":[1,-1],"partial":[0],"partial_reduce":["sum"]}]}

  $ echo '{"op": "matmul", "mesh": [2, 4], "inputs": [{"shape": [8, 1024], "placements": "[Shard(0), Replicate()]"}, {"shape": [1024, 4096], "placements": "[Replicate(), Shard(1)]"}]}' | ctspmd-infer
  {"inputs":[{"placements":"[Shard(0), Replicate()]"},{"placements":"[Replicate(), Shard(1)]"}],"outputs":[{"placements":"[Shard(0), Shard(1)]"}]}

Exit status: 0 if every request succeeded, 1 if any got an error response, 2 for a usage or I/O error.
)help";

void list() {
  for (const auto& e : ctspmd::runtime::rule_table) {
    std::cout << e.name;
    const auto attrs = e.attributes();
    if (attrs.empty()) std::cout << "  (no attributes)";
    for (const auto& a : attrs) {
      const auto value =
          std::visit([](const auto& v) { return ctspmd_requests::dump(ctspmd_requests::json(v)); }, a.default_value);
      std::cout << "  " << a.name << (a.alias.empty() ? "" : " (or " + std::string(a.alias) + ")") << ": " << a.type
                << " = " << value;
    }
    std::cout << '\n';
  }
}

int run(std::istream& in) {
  std::ios::sync_with_stdio(false);
  bool all_ok = true;
  std::string line, out;
  while (std::getline(in, line)) {
    const auto r = ctspmd_requests::handle(line);
    all_ok = all_ok && r.ok;
    out += r.line;
    out += '\n';
    if (out.size() > (1u << 16)) {
      std::cout << out;
      out.clear();
    }
  }
  std::cout << out << std::flush;
  if (in.bad() || !std::cout) {
    std::cerr << "ctspmd-infer: I/O error\n";
    return 2;
  }
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2) {
    std::cerr << "ctspmd-infer: too many arguments\n" << help;
    return 2;
  }
  const std::string_view arg = argc == 2 ? argv[1] : "";
  if (arg == "--help" || arg == "-h") {
    std::cout << help;
    return 0;
  }
  if (arg == "--list") {
    list();
    return 0;
  }
  if (arg.starts_with("-") && arg != "-") {
    std::cerr << "ctspmd-infer: unknown option " << arg << "\n" << help;
    return 2;
  }
  if (arg.empty() || arg == "-") return run(std::cin);
  std::ifstream file{std::string(arg)};
  if (!file) {
    std::cerr << "ctspmd-infer: cannot open " << arg << "\n";
    return 2;
  }
  return run(file);
}
