// The README's tutorials 1 to 3 and 9, compiled and run as part of the examples (keep them in sync).
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>
#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/models/llama.hpp>

#include <cstdio>

using namespace ctspmd;
using model::collective;

// ---- Tutorial 1: verify a small plan at compile time ------------------------------------------------------
constexpr process_mesh mesh({2, 4});  // mesh dim 0: data parallel, mesh dim 1: tensor parallel

constexpr auto mlp() {
  model::plan<> p(mesh);
  auto x  = p.tensor("x", {8, 512, 1024}, {0, -1, -1}, model::float16);  // batch on mesh dim 0
  auto w1 = p.tensor("w1", {1024, 4096}, {-1, 1}, model::float16);       // column parallel
  auto w2 = p.tensor("w2", {4096, 1024}, {1, -1}, model::float16);       // row parallel
  auto h  = p.tensor("h", {8, 512, 4096}, model::float16);               // not annotated: inferred
  auto g  = p.tensor("g", {8, 512, 4096}, model::float16);
  auto y  = p.tensor("y", {8, 512, 1024}, model::float16);
  auto z  = p.tensor("z", {8, 512, 1024}, model::float16);
  p.op<"matmul">({x, w1}, {h}, {}, "up");
  p.op<"gelu">({h}, {g});
  p.op<"matmul">({g, w2}, {y}, {}, "down");   // partial (sum) over mesh dim 1
  p.op<"add">({x, y}, {z}, {}, "residual");   // needs y whole: one all-reduce
  return p;
}

constexpr auto prop = model::verified<mlp>();          // propagated during compilation
static_assert(prop.count() == 1 && prop.count(collective::all_reduce) == 1);
static_assert(prop.reshard_at(0).op == 3 && prop.reshard_at(0).mesh_dim == 1);
static_assert(prop.dims_mapping({3}) == dims_mapping{0, -1, 1});   // h: sharded on mesh dim 1

// ---- Tutorial 2: one rule, checked by the compiler -------------------------------------------------------------
constexpr dist_tensor_spec ids({32, 512}, {mesh, {0, -1}});        // batch split on mesh dim 0
constexpr dist_tensor_spec table({50304, 768}, {mesh, {1, -1}});   // vocabulary rows on mesh dim 1

constexpr spmd_info fwd = rules::embedding::infer_forward({ids, table}, {.padding_idx = -1, .sparse = false});
static_assert(fwd.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(fwd.outputs[0].partial_dims() == mesh_dims{1});      // each device looked up its rows only

// Row-wise parallelism refuses padding_idx: the result-returning twin says so ...
static_assert(!rules::embedding::try_infer_forward({ids, table}, {.padding_idx = 0}));

// A custom operator's rule in one line: letters absent from the output are contracted.
using proj = rules::einsum<"bsh,hd->bsd">;
static_assert(proj::infer_forward({dist_tensor_spec({4, 16, 32}, {mesh, {0, -1, 1}}),
                                   dist_tensor_spec({32, 64}, mesh)})
                  .outputs[0].partial_dims() == mesh_dims{1});

// ---- Tutorial 3: co-shard and the two semantics -----------------------------------------------------------------
// A tensor dim split over several mesh dims, major first: x's dim 1 over mesh dims 0 then 1.
constexpr dist_tensor_spec act({8, 1024}, {mesh, {{}, {0, 1}}});
static_assert(act.dist_attr().is_co_sharded() && act.dist_attr().mesh_dims_of(1) == mesh_dims{0, 1});
static_assert(act.dist_attr().multi_dims_mapping() == multi_dims_mapping{{}, {0, 1}});

// Merging two sharded dims: phi keeps both mesh dims, as a co-shard of the merged dim (x's
// mesh dim 1 moves to its dim 0 first: an all-to-all) ...
constexpr dist_tensor_spec heads({8, 16, 64}, {mesh, {0, 1, -1}});
constexpr auto merged = rules::reshape::infer_forward({heads}, {.shape = {128, 64}}, semantics::phi);
static_assert(merged.outputs[0].multi_dims_mapping() == multi_dims_mapping{{0, 1}, {}});
static_assert(merged.inputs[0].multi_dims_mapping() == multi_dims_mapping{{0, 1}, {}, {}});
// ... fluid (the default) keeps dim 0's mesh dim only and gathers the other.
constexpr auto first = rules::reshape::infer_forward({heads}, {.shape = {128, 64}});
static_assert(first.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(first.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});

// ---- Tutorial 9: a model from its config ----------------------------------------------------------------------
constexpr auto make_step() {
  const auto m = models::llama(models::llama3_8b, process_mesh({2, 8}),
                               {.dp = 0, .tp = 1, .sp = true},     // Megatron TP + SP over mesh dim 1
                               {.seq = 8192, .micro_batch = 1});
  return model::training_step(m.plan, m.loss);
}
static_assert(models::parameters(models::llama3_8b) == 8'030'261'248);
constexpr auto llama_cost = model::verified_cost<make_step>();  // memory, collectives, time

int main() {
  std::printf("tutorial plan: %zu reshard (%.*s on mesh dim %lld, %lld bytes per device)\n", prop.count(),
              static_cast<int>(model::to_string(prop.reshard_at(0).kind).size()),
              model::to_string(prop.reshard_at(0).kind).data(), static_cast<long long>(prop.reshard_at(0).mesh_dim),
              static_cast<long long>(prop.reshard_at(0).bytes));
  std::printf("embedding output: %s\n", to_string(fwd.outputs[0]).c_str());
  std::printf("reshape under phi: %s\n", to_string(merged.outputs[0]).c_str());
  std::printf("Llama-3-8B on [dp 2, tp 8]: %.2f GiB peak a device, %.3f s a step\n",
              static_cast<double>(llama_cost.memory().peak) / static_cast<double>(model::GiB), llama_cost.step_seconds());
}
