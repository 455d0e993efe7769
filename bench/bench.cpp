// Runtime benchmarks: the typed rule call, the by-name call, ctspmd-infer's request handling,
// and a baseline in the style of a runtime framework's C++ (paddle_style.hpp), side by side.
// Every benchmark reports heap allocations per call (a counting operator new).
#include <ctspmd/model/search.hpp>
#include <ctspmd/runtime.hpp>

#include "../examples/search/search_plans.hpp"
#include "requests.hpp"
#include "paddle_style.hpp"

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace {
std::atomic<std::size_t> allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace ctspmd;

/// Runs `f` for the benchmark's iterations and reports allocations per call.
template <class F>
void measure(benchmark::State& state, F f) {
  const auto before = allocations.load();
  for (auto _ : state) f();
  state.counters["allocs/call"] = benchmark::Counter(static_cast<double>(allocations.load() - before),
                                                     benchmark::Counter::kAvgIterations);
}

const process_mesh mesh({2, 3});
// matmul [512, 48, 64, 32] x [32, 48] on mesh [2, 3]: batch dims sharded, k replicated.
const dist_tensor_spec mm_x({512, 48, 64, 32}, {mesh, {0, 1, -1, -1}});
const dist_tensor_spec mm_y({32, 48}, {mesh, {-1, -1}});
const dist_tensor_spec emb_x({4, 16}, {mesh, {1, -1}});
const dist_tensor_spec emb_w({512, 768}, {mesh, {0, -1}});

// The typed calls read inputs built before the loop, as the baseline and by-name calls do
// (a span over an array); the _braced variants build them in the call, `infer_forward({x, y})`,
// which copies both specs into the list at each call.
void typed_matmul(benchmark::State& state) {
  const std::array<dist_tensor_spec, 2> in{mm_x, mm_y};
  measure(state, [&] { benchmark::DoNotOptimize(rules::matmul::infer_forward(in)); });
}
void typed_matmul_braced(benchmark::State& state) {
  measure(state, [] { benchmark::DoNotOptimize(rules::matmul::infer_forward({mm_x, mm_y})); });
}
void typed_embedding(benchmark::State& state) {
  const std::array<dist_tensor_spec, 2> in{emb_x, emb_w};
  measure(state, [&] { benchmark::DoNotOptimize(rules::embedding::infer_forward(in)); });
}
void typed_embedding_braced(benchmark::State& state) {
  measure(state, [] { benchmark::DoNotOptimize(rules::embedding::infer_forward({emb_x, emb_w})); });
}

void by_name_matmul(benchmark::State& state) {
  const std::vector<dist_tensor_spec> in{mm_x, mm_y};
  const runtime::attribute_map attrs{{"trans_x", false}, {"trans_y", false}};
  measure(state, [&] { benchmark::DoNotOptimize(runtime::infer_forward("matmul", in, attrs)); });
}
void by_name_embedding(benchmark::State& state) {
  const std::vector<dist_tensor_spec> in{emb_x, emb_w};
  const runtime::attribute_map attrs{{"padding_idx", std::int64_t{-1}}, {"sparse", false}};
  measure(state, [&] { benchmark::DoNotOptimize(runtime::infer_forward("lookup_table_v2", in, attrs)); });
}

paddle_style::spec baseline_spec(const dist_tensor_spec& s) {
  const dims_mapping dm = s.dims_mapping();  // a value: one copy for begin() and end()
  return {std::vector<std::int64_t>(s.shape().begin(), s.shape().end()),
          {{2, 3}, std::vector<std::int64_t>(dm.begin(), dm.end()), {}, 0}};
}
void baseline_matmul(benchmark::State& state) {
  const std::vector<paddle_style::spec> in{baseline_spec(mm_x), baseline_spec(mm_y)};
  const std::map<std::string, bool> attrs{{"trans_x", false}, {"trans_y", false}};
  measure(state, [&] { benchmark::DoNotOptimize(paddle_style::matmul_forward(in, attrs)); });
}
void baseline_embedding(benchmark::State& state) {
  const std::vector<paddle_style::spec> in{baseline_spec(emb_x), baseline_spec(emb_w)};
  const std::map<std::string, std::int64_t> attrs{{"padding_idx", -1}, {"sparse", 0}};
  measure(state, [&] { benchmark::DoNotOptimize(paddle_style::embedding_forward(in, attrs)); });
}

// ctspmd-infer's per-line work: parse the request, infer, write the response.
void tool_request(benchmark::State& state) {
  const std::vector<std::string> lines{
      R"({"op": "matmul", "mesh": [2, 3], "inputs": [{"shape": [512, 48, 64, 32], "dims_mapping": [0, 1, -1, -1]}, {"shape": [32, 48], "dims_mapping": [-1, -1]}]})",
      R"({"op": "lookup_table_v2", "mesh": [2, 3], "inputs": [{"shape": [4, 16], "dims_mapping": [1, -1]}, {"shape": [512, 768], "dims_mapping": [0, -1]}]})",
      R"({"op": "matmul", "direction": "backward", "mesh": [2, 3], "inputs": [{"shape": [64, 32]}, {"shape": [32, 48]}], "outputs": [{"shape": [64, 48], "dims_mapping": [0, 1]}]})",
      R"({"op": "matmull", "mesh": [2], "inputs": []})"};
  std::size_t i = 0;
  measure(state, [&] { benchmark::DoNotOptimize(ctspmd_requests::handle(lines[i++ % lines.size()])); });
  state.SetItemsProcessed(state.iterations());
}

// model::search of a forward plan with nothing annotated (examples/search/search_plans.hpp): the
// dynamic programming, then the exact cost of 17 candidates' training steps.
void search_mlp(benchmark::State& state) {
  const auto p = std::make_unique<search_plans::mlp_plan_type>(search_plans::mlp());
  for (auto _ : state) benchmark::DoNotOptimize(model::search(*p, search_plans::mlp_loss, search_plans::slow_fast()));
}
void search_llama_32_layers(benchmark::State& state) {
  const auto p = std::make_unique<search_plans::llama_plan_type>(search_plans::llama(32));
  const auto c = model::h100_cluster(search_plans::llama_mesh);
  for (auto _ : state) benchmark::DoNotOptimize(model::search(*p, search_plans::llama_loss, c));
}

BENCHMARK(typed_matmul);
BENCHMARK(typed_matmul_braced);
BENCHMARK(baseline_matmul);
BENCHMARK(typed_embedding);
BENCHMARK(typed_embedding_braced);
BENCHMARK(baseline_embedding);
BENCHMARK(by_name_matmul);
BENCHMARK(by_name_embedding);
BENCHMARK(tool_request);
BENCHMARK(search_mlp)->Unit(benchmark::kMillisecond);
BENCHMARK(search_llama_32_layers)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
