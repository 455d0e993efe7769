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

using namespace ctspmd;
using model::collective;
using model::phase;

constexpr std::size_t L = llama::layers;

// ---- Megatron tensor parallelism --------------------------------------------------------------
constexpr auto tp_step = llama::make_step<L>();
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
// all-reduced over mp as well as dp (Megatron's sequence-parallel parameters).
static_assert(sp.count_in_block(0, phase::optimizer, collective::all_reduce) == 9 * L + 2 * L);

// ---- ZeRO: optimizer states sharded over dp ----------------------------------------------------
constexpr auto zero = model::verified<llama::make_step<L, llama::variant::tensor_parallel, true>>();
static_assert(zero.count_in_block(0, phase::optimizer, collective::all_reduce) == 0);
static_assert(zero.count_in_block(0, phase::optimizer, collective::reduce_scatter) == 9 * L);
static_assert(zero.count_in_block(0, phase::optimizer, collective::all_gather) == 9 * L);
static_assert(zero.bytes_in_block(0, phase::optimizer, collective::reduce_scatter) +
                  zero.bytes_in_block(0, phase::optimizer, collective::all_gather) ==
              tp.bytes_in_block(0, phase::optimizer, collective::all_reduce));

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
}
