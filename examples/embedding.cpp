// Infers an embedding's sharding twice: once during compilation (checked by static_assert),
// once at run time, and prints what the rule decided.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>

#include <cstdio>

using namespace ctspmd;

// A [2, 4] mesh: mesh dim 0 for data parallelism, mesh dim 1 for the vocabulary.
constexpr process_mesh mesh({2, 4});
constexpr dist_tensor_spec ids({32, 512}, {mesh, {0, -1}});       // token ids, batch split on dim 0
constexpr dist_tensor_spec table({50304, 768}, {mesh, {1, -1}});  // vocabulary rows split on dim 1

// Vocabulary-parallel lookup: each device finds only its rows, so the output is partial (sum) on
// mesh dim 1 and needs an all-reduce there before use.
constexpr spmd_info fwd = rules::embedding::infer_forward({ids, table});
static_assert(fwd.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(fwd.outputs[0].partial_dims() == mesh_dims{1});
static_assert(fwd.outputs[0].partial_reduce_type(1) == reduce_type::sum);

// With padding_idx set, row-wise parallelism is refused (a compile error if forced).
static_assert(!rules::embedding::try_infer_forward({ids, table}, {.padding_idx = 0}));

int main() {
  std::printf("embedding on mesh [2, 4]: ids [32, 512] %s, table [50304, 768] %s\n",
              to_string(ids.dist_attr()).c_str(), to_string(table.dist_attr()).c_str());
  const spmd_info info = rules::embedding::infer_forward({ids, table});
  std::printf("  forward : ids %s, table %s -> out %s\n", to_string(info.inputs[0]).c_str(),
              to_string(info.inputs[1]).c_str(), to_string(info.outputs[0]).c_str());

  const dist_tensor_spec out({32, 512, 768}, {mesh, {0, -1, 1}});
  const spmd_info back = rules::embedding::infer_backward({ids, table}, {out});
  std::printf("  backward: out %s requires ids %s, table %s\n", to_string(back.outputs[0]).c_str(),
              to_string(back.inputs[0]).c_str(), to_string(back.inputs[1]).c_str());

  try {
    (void)rules::embedding::infer_forward({ids, table}, {.padding_idx = 0});
  } catch (const spmd_error& e) {
    std::printf("  padding_idx = 0: %s error: %s\n", to_string(e.kind()).data(), e.what());
  }
  return info == fwd ? 0 : 1;
}
