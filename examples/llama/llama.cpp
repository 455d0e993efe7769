// A Llama-3-8B training step verified at compile time: forward, backward and the optimizer,
// with every collective one step sends counted by kind and by bytes.
//
// Where the expected numbers come from:
// - Megatron-LM tensor parallelism (Shoeybi et al. 2019, section 3): each layer has two
//   tensor-parallel regions (attention, MLP), each entered through `f` (identity forward,
//   all-reduce backward) and left through `g` (all-reduce forward, identity backward): two
//   all-reduces per layer forward and two backward.
// - Sequence parallelism (Korthikanti et al. 2022, section 4.2.2): `g` becomes a reduce-scatter
//   and `f` an all-gather forward; their backward passes swap them: two all-gathers and two
//   reduce-scatters per layer forward, the same backward.
// - Data parallelism: each parameter's gradient, a sum over the dp ranks' batches, is
//   all-reduced once per step. A ring all-reduce over n devices sends 2(n-1)/n times the local
//   gradient's bytes: with dp = 2, exactly the bytes of the parameters a device holds.
// - ZeRO (Rajbhandari et al. 2020, stage 1/2): the all-reduce becomes a reduce-scatter of the
//   gradient to the device's shard of the optimizer state and an all-gather of the updated
//   parameter: (n-1)/n of the local bytes each, the same total as the all-reduce.
// If the MLP's down projection is split by columns, the step does not compile (see
// static_tests/fail/llama_down_by_columns.cpp): its weight must be moved by an all-to-all.
#include "llama_plan.hpp"

#include <cstdio>

#include "../cost_report.hpp"

using namespace ctspmd;
using model::collective;
using model::phase;

constexpr std::size_t L = llama::layers;

// ---- Megatron tensor parallelism --------------------------------------------------------------
constexpr auto& tp_step = model::plan_of<llama::make_step<L>>;
constexpr auto tp = model::verified<llama::make_step<L>>();
// In the layers: two all-reduces forward, two backward, nothing else.
static_assert(tp.expect_in_block(tp_step, 0, phase::forward, collective::all_reduce, 2 * L));
static_assert(tp.expect_in_block(tp_step, 0, phase::backward, collective::all_reduce, 2 * L));
// The optimizer: one all-reduce over dp (mesh dim 0) per parameter: 9 per layer.
static_assert(tp.expect_in_block(tp_step, 0, phase::optimizer, collective::all_reduce, 9 * L));
// Outside the layers: the embedding's partial output is all-reduced forward, the LM head's input
// gradient backward, and the embedding, final norm and LM head weights' gradients over dp.
static_assert(tp.expect_in_block(tp_step, -1, phase::forward, collective::all_reduce, 1));
static_assert(tp.expect_in_block(tp_step, -1, phase::backward, collective::all_reduce, 1));
static_assert(tp.expect_in_block(tp_step, -1, phase::optimizer, collective::all_reduce, 3));
static_assert(tp.count() == 4 * L + 2 + 9 * L + 3);

// Data-parallel gradient bytes = the bytes of the parameters a device holds (dp = 2, bf16).
constexpr std::int64_t hid = llama::hidden, kv = llama::kv_heads * llama::head_dim, ffn = llama::ffn, mp = llama::mp;
constexpr std::int64_t layer_parameter_bytes =
    2 * ((hid * hid + 2 * hid * kv + hid * hid + 3 * hid * ffn) / mp + 2 * hid);  // sharded projections, replicated norms
static_assert(tp.bytes_in_block(0, phase::optimizer, collective::all_reduce) == L * layer_parameter_bytes);

// ---- with sequence parallelism ----------------------------------------------------------------
constexpr auto sp = model::verified<llama::make_step<L, llama::variant::sequence_parallel>>();
static_assert(sp.count_in_block(0, phase::forward, collective::all_gather) == 2 * L);
static_assert(sp.count_in_block(0, phase::forward, collective::reduce_scatter) == 2 * L);
static_assert(sp.count_in_block(0, phase::forward, collective::all_reduce) == 0);
static_assert(sp.count_in_block(0, phase::backward, collective::all_gather) == 2 * L);
static_assert(sp.count_in_block(0, phase::backward, collective::reduce_scatter) == 2 * L);
static_assert(sp.count_in_block(0, phase::backward, collective::all_reduce) == 0);
// Each all-reduce sends as many bytes as the all-gather and reduce-scatter that replace it.
static_assert(tp.bytes_in_block(0, phase::forward, collective::all_reduce) ==
              sp.bytes_in_block(0, phase::forward, collective::all_gather) +
                  sp.bytes_in_block(0, phase::forward, collective::reduce_scatter));
// The RMSNorm weights see only a slice of the sequence on each mp rank: their gradients are
// reduced over mp as well as dp (Megatron's sequence-parallel parameters), in one all-reduce
// over the product group each.
static_assert(sp.count_in_block(0, phase::optimizer, collective::all_reduce) == 9 * L);
static_assert([] {
  std::size_t over_both = 0;
  for (std::size_t e = 0; e < sp.reshard_entries(); ++e)
    if (const auto& s = sp.reshard_at(e); s.block == 0 && s.phase == phase::optimizer && s.group == 0b11) over_both += s.times;
  return over_both;
}() == 2 * L);

// ---- ZeRO: optimizer states sharded over dp ----------------------------------------------------
constexpr auto zero = model::verified<llama::make_step<L, llama::variant::tensor_parallel, llama::zero>>();
static_assert(zero.count_in_block(0, phase::optimizer, collective::all_reduce) == 0);
static_assert(zero.count_in_block(0, phase::optimizer, collective::reduce_scatter) == 9 * L);
static_assert(zero.count_in_block(0, phase::optimizer, collective::all_gather) == 9 * L);
static_assert(zero.bytes_in_block(0, phase::optimizer, collective::reduce_scatter) +
                  zero.bytes_in_block(0, phase::optimizer, collective::all_gather) ==
              tp.bytes_in_block(0, phase::optimizer, collective::all_reduce));

// ---- what a step costs each device (<ctspmd/model/cost.hpp>), on 8-GPU H100 nodes ------------------
// The mesh [2, 8]: mp's 8 devices share a node (NVLink), dp crosses nodes (InfiniBand).
constexpr auto cluster = model::h100_cluster(llama::mesh);
constexpr auto tp_cost = model::cost(tp_step, tp, cluster);
// Parameters: each device holds its shard of every projection and the norms whole, in bf16;
// outside the layers, its vocabulary rows of the embedding and the LM head, and the final norm.
constexpr std::int64_t vocab = llama::vocab;
constexpr std::int64_t outside_parameter_bytes = 2 * (2 * vocab * hid / mp + hid);
static_assert(tp_cost.memory().parameters == L * layer_parameter_bytes + outside_parameter_bytes);
// With plain bf16 gradients and fp32 moments (no master weights): 2 + 8 bytes a parameter.
static_assert(tp_cost.memory().gradients == tp_cost.memory().parameters &&
              tp_cost.memory().optimizer_states == 4 * tp_cost.memory().parameters);
// Activations a layer keeps (b = 1 sequence a device, s, h; t = mp): its input and the attention
// block's output (RMSNorm inputs) and the two RMSNorm outputs (the projections' inputs) 2sbh each,
// the RMSNorm statistics 4sb each; q after rotary 2sbh/t, k after rotary and v 2 s b kv / t each,
// flash attention's output (the output projection's input) 2sbh/t and its log-sum-exp
// 4 b (heads/t) s and seed (16 bytes); gate, up and SwiGLU's output 2 s b ffn / t each.
constexpr std::int64_t seq = llama::seq, micro = llama::batch / llama::dp, heads = llama::heads;
constexpr std::int64_t sbh = seq * micro * hid;
constexpr std::int64_t replicated_kept = 8 * sbh + 8 * seq * micro;
constexpr std::int64_t sharded_kept =
    (2 * sbh + 4 * seq * micro * kv + 2 * sbh + 6 * seq * micro * ffn) / mp + 4 * micro * (heads / mp) * seq + 16;
// (The layers also write the last layer's output, which the final RMSNorm keeps: 2sbh more.)
static_assert(tp_cost.kept_in_block(0) == L * (replicated_kept + sharded_kept) + 2 * sbh);
// Sequence parallelism splits the rest over mp too (the projections' inputs kept as their
// sequence shards, gathered again in backward).
constexpr auto& sp_step = model::plan_of<llama::make_step<L, llama::variant::sequence_parallel>>;
constexpr auto sp_cost = model::cost(sp_step, sp, cluster);
static_assert(sp_cost.kept_in_block(0) == L * (replicated_kept / mp + sharded_kept) + 2 * sbh / mp);
// (Two a layer, and the LM head's input.)
static_assert(sp_cost.collectives(phase::backward, collective::all_gather).count ==
              sp.count(phase::backward, collective::all_gather) + 2 * L + 1);
// Megatron's precision and distributed optimizer: 6 + 12/dp = 12 bytes a parameter.
constexpr auto& megatron_step = model::plan_of<llama::make_step<L, llama::variant::sequence_parallel, llama::megatron>>;
constexpr auto megatron_cost =
    model::cost(megatron_step, model::verified<llama::make_step<L, llama::variant::sequence_parallel, llama::megatron>>(),
                cluster);
static_assert(megatron_cost.memory().persistent() == 12 * (tp_cost.memory().parameters / 2));
// Each fits an 80 GB H100; the peak falls at the end of the forward pass, in the loss (the
// vocabulary-parallel softmax, fp32, kept for backward, with every layer's activations).
static_assert(tp_cost.memory().peak < 80'000'000'000 && megatron_cost.memory().peak < tp_cost.memory().peak);
static_assert(tp_cost.memory().peak_phase == phase::forward && tp_step.op_at(tp_cost.memory().peak_op).label == "loss");
// The loss's own all-reduces (max, target logit, sum over the vocabulary) are counted too.
static_assert(tp_cost.collectives(phase::forward, collective::all_reduce).count == 2 * L + 1 + 3);
// Full recomputation keeps each layer's input only: 2sbh a layer; the forward runs again.
constexpr auto& full_step = model::plan_of<llama::make_step<L, llama::variant::tensor_parallel, llama::full_recompute>>;
constexpr auto full_cost = model::cost(
    full_step, model::verified<llama::make_step<L, llama::variant::tensor_parallel, llama::full_recompute>>(), cluster);
static_assert(full_cost.kept_in_block(0) == L * 2 * sbh);
static_assert(full_cost.collectives(phase::backward, collective::all_reduce).count ==
              tp_cost.collectives(phase::backward, collective::all_reduce).count + 2 * L);

namespace {

template <class Propagation>
void report(const char* title, const Propagation& r) {
  constexpr collective kinds[] = {collective::all_reduce, collective::reduce_scatter, collective::all_gather,
                                  collective::all_to_all};
  constexpr phase phases[] = {phase::forward, phase::backward, phase::optimizer};
  std::printf("== %s\n%-10s %-15s %14s %18s %14s %18s\n", title, "phase", "collective", "in layers", "bytes/device",
              "outside", "bytes/device");
  for (auto ph : phases)
    for (auto k : kinds) {
      const auto in = r.count_in_block(0, ph, k), out = r.count_outside_blocks(ph, k);
      if (in + out == 0) continue;
      std::printf("%-10.*s %-15.*s %14zu %18lld %14zu %18lld\n", static_cast<int>(to_string(ph).size()),
                  to_string(ph).data(), static_cast<int>(to_string(k).size()), to_string(k).data(), in,
                  static_cast<long long>(r.bytes_in_block(0, ph, k)), out,
                  static_cast<long long>(r.bytes(ph, k) - r.bytes_in_block(0, ph, k)));
    }
  std::printf("\n");
}

}  // namespace

int main() {
  std::printf("Llama-3-8B training step, %zu layers, mesh [dp = %lld, mp = %lld], batch %lld x %lld tokens\n"
              "(%zu operators in the step, %zu in a layer's forward and %zu in its backward and update)\n\n",
              L, static_cast<long long>(llama::dp), static_cast<long long>(llama::mp),
              static_cast<long long>(llama::batch), static_cast<long long>(llama::seq), tp_step.op_count(),
              tp_step.block_at(0).end_op - tp_step.block_at(0).first_op,
              tp_step.block_at(1).end_op - tp_step.block_at(1).first_op);
  report("Megatron tensor parallelism", tp);
  report("tensor + sequence parallelism", sp);
  report("tensor parallelism, ZeRO-sharded optimizer states", zero);
  std::printf("What a step costs each device on H100 nodes (mp in a node, dp across):\n");
  example::print_cost("Megatron tensor parallelism (bf16 parameters and gradients, fp32 moments)", tp_step, tp_cost);
  example::print_cost("tensor + sequence parallelism", sp_step, sp_cost);
  example::print_cost("tensor + sequence parallelism, Megatron's precision and distributed optimizer", megatron_step,
                      megatron_cost);
  example::print_cost("tensor parallelism, full recomputation", full_step, full_cost);
}
