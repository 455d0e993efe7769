// A GPT-style decoder verified at compile time: with Megatron-LM's tensor parallelism the
// forward pass needs exactly two all-reduces per layer and nothing else inside the layers;
// with sequence parallelism, two all-gathers and two reduce-scatters per layer instead. If a
// matmul is mis-sharded, this file does not compile. At run time it prints the propagated
// plans and their reshard reports.
#include "gpt_plan.hpp"

#include <ctspmd/dist/format.hpp>

#include <cstdio>
#include <string>

#include "../cost_report.hpp"

using namespace ctspmd;
using model::collective;

constexpr std::size_t layers = 24;

// ---- Megatron tensor parallelism: 2 all-reduces per layer, nothing else in the layers ------------------
constexpr auto tp_plan = gpt::make_plan<layers>();
constexpr auto tp = model::verified<gpt::make_plan<layers>>();
static_assert(tp.count_in_block(0, collective::all_reduce) == 2 * layers);
static_assert(tp.count_in_block(0) == 2 * layers);
static_assert(tp.expect_in_block(tp_plan, 0, collective::all_reduce, 2 * layers));
// Outside the layers: the vocabulary-parallel embedding's partial output is all-reduced once.
static_assert(tp.count() == 2 * layers + 1 && tp.count_outside_blocks(collective::all_reduce) == 1);

// ---- with sequence parallelism: 2 all-gathers and 2 reduce-scatters per layer instead ----------------
constexpr auto sp_plan = gpt::make_plan<layers, gpt::variant::sequence_parallel>();
constexpr auto sp = model::verified<gpt::make_plan<layers, gpt::variant::sequence_parallel>>();
static_assert(sp.count_in_block(0, collective::all_gather) == 2 * layers);
static_assert(sp.count_in_block(0, collective::reduce_scatter) == 2 * layers);
static_assert(sp.count_in_block(0) == 4 * layers);
// Outside: a reduce-scatter after the embedding, an all-gather before the LM head.
static_assert(sp.count_outside_blocks(collective::reduce_scatter) == 1 &&
              sp.count_outside_blocks(collective::all_gather) == 1 && sp.count() == 4 * layers + 2);
// In the layers, each all-reduce sends as many bytes as the all-gather and reduce-scatter
// that replace it.
static_assert(tp.bytes_in_block(0, collective::all_reduce) ==
              sp.bytes_in_block(0, collective::all_gather) + sp.bytes_in_block(0, collective::reduce_scatter));
static_assert(tp.bytes_in_block(0, collective::all_reduce) > 0);

// ---- the whole training step: forward, backward and adamw (<ctspmd/model/training.hpp>) ------------
// Megatron's backward pass mirrors the forward one (Shoeybi et al. 2019; Korthikanti et al. 2022):
// 2 all-reduces per layer, or with sequence parallelism 2 all-gathers and 2 reduce-scatters.
// The optimizer all-reduces each of a layer's 12 parameters' gradients over dp (two LayerNorms'
// weights and biases, and the four projections' weights and biases).
constexpr auto& tp_step = model::plan_of<gpt::make_step<layers>>;
constexpr auto tp_train = model::verified<gpt::make_step<layers>>();
static_assert(tp_train.expect_in_block(tp_step, 0, model::phase::forward, collective::all_reduce, 2 * layers));
static_assert(tp_train.expect_in_block(tp_step, 0, model::phase::backward, collective::all_reduce, 2 * layers));
static_assert(tp_train.expect_in_block(tp_step, 0, model::phase::optimizer, collective::all_reduce, 12 * layers));
constexpr auto sp_train = model::verified<gpt::make_step<layers, gpt::variant::sequence_parallel>>();
static_assert(sp_train.count_in_block(0, model::phase::backward, collective::all_gather) == 2 * layers);
static_assert(sp_train.count_in_block(0, model::phase::backward, collective::reduce_scatter) == 2 * layers);
static_assert(sp_train.count_in_block(0, model::phase::backward, collective::all_reduce) == 0);

// ---- what the step costs each device (<ctspmd/model/cost.hpp>), on one 8-GPU H100 node ----------
constexpr auto tp_cost = model::cost(tp_step, tp_train);
constexpr auto& sp_step = model::plan_of<gpt::make_step<layers, gpt::variant::sequence_parallel>>;
constexpr auto sp_cost = model::cost(sp_step, sp_train);
// The layers' matmuls: per token 24 h^2 FLOPs forward (QKV 6h^2, output 2h^2, MLP 16h^2) and 4 s h for
// the attention scores and their product with V, split over mp; backward twice that.
constexpr std::int64_t tokens = gpt::batch / gpt::dp * gpt::seq, h = gpt::hidden;
constexpr std::int64_t layer_matmul_flops = tokens * (24 * h * h + 4 * gpt::seq * h) / gpt::mp;
static_assert(tp_cost.flops(model::phase::forward) > layers * layer_matmul_flops &&
              tp_cost.flops(model::phase::backward) > 2 * layers * layer_matmul_flops);
// Sequence parallelism keeps less (the activations outside the regions split over mp) and sends
// the same forward, more backward (the projections' inputs, kept as their shards, gathered again).
static_assert(sp_cost.memory().activations < tp_cost.memory().activations);
static_assert(sp_cost.collectives(model::phase::backward, collective::all_gather).count ==
              sp_train.count(model::phase::backward, collective::all_gather) + 2 * layers + 1);

namespace {

// "[0, -1, -1]", with " P1" for each mesh dim the tensor is partial (sum) on.
std::string layout(const tensor_dist_attr& a) {
  std::string s = to_string(a.dims_mapping());
  for (auto m : a.partial_dims()) s += " P" + std::to_string(m);
  return s;
}

template <class Plan, class Propagation>
void print(const char* title, const Plan& plan, const Propagation& prop) {
  std::printf("== %s: %zu operators (%zu in the repeated layer), %zu layers\n\n", title, plan.op_count(),
              plan.block_at(0).end_op - plan.block_at(0).first_op, plan.block_at(0).count);
  std::printf("%-4s %-16s %-28s %-28s %s\n", "op", "name", "inputs", "outputs", "output layouts (dims mapping, P = partial on a mesh dim)");
  for (std::size_t i = 0; i < plan.op_count(); ++i) {
    const auto& o = plan.op_at(i);
    std::string ins, outs, maps;
    for (auto t : o.inputs) ins += std::string(ins.empty() ? "" : ", ") + std::string(plan.tensor_at(t).name);
    for (auto t : o.outputs) {
      outs += std::string(outs.empty() ? "" : ", ") + std::string(plan.tensor_at(t).name);
      maps += std::string(maps.empty() ? "" : ", ") + layout(prop.attr({t}));
    }
    std::printf("%-4zu %-16.*s %-28s %-28s %s\n", i, static_cast<int>(o.name().size()), o.name().data(), ins.c_str(),
                outs.c_str(), maps.c_str());
  }
  std::printf("\nreshards: %zu\n%-4s %-16s %-14s %-4s %-15s %-24s %-24s %12s %6s\n", prop.count(), "op", "name",
              "tensor", "mesh", "collective", "from", "to", "bytes/device", "times");
  for (std::size_t i = 0; i < prop.reshard_entries(); ++i) {
    const auto& r = prop.reshard_at(i);
    const auto name = plan.op_at(r.op).name();
    const auto tensor = plan.tensor_at(r.tensor).name;
    std::printf("%-4zu %-16.*s %-14.*s %-4lld %-15.*s %-24s %-24s %12lld %6zu\n", r.op, static_cast<int>(name.size()),
                name.data(), static_cast<int>(tensor.size()), tensor.data(), static_cast<long long>(r.mesh_dim),
                static_cast<int>(to_string(r.kind).size()), to_string(r.kind).data(),
                layout(r.from).c_str(), layout(r.to).c_str(),
                static_cast<long long>(r.bytes), r.times);
  }
  std::printf("\n");
}

}  // namespace

int main() {
  std::printf("GPT decoder, mesh [dp = %lld, mp = %lld], batch %lld, seq %lld, hidden %lld, %lld heads\n\n",
              static_cast<long long>(gpt::dp), static_cast<long long>(gpt::mp), static_cast<long long>(gpt::batch),
              static_cast<long long>(gpt::seq), static_cast<long long>(gpt::hidden), static_cast<long long>(gpt::heads));
  print("Megatron tensor parallelism", tp_plan, tp);
  print("tensor + sequence parallelism", sp_plan, sp);
  std::printf("The training step's cost, each device, on one H100 node:\n");
  example::print_cost("Megatron tensor parallelism", tp_step, tp_cost);
  example::print_cost("tensor + sequence parallelism", sp_step, sp_cost);
}
