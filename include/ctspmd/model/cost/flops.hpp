#ifndef CTSPMD_MODEL_COST_FLOPS_HPP
#define CTSPMD_MODEL_COST_FLOPS_HPP
/// \file The FLOPs of a training step: the FLOPs part of `model/cost.hpp`.
///
/// **FLOPs** (`flops(phase)`), per device, are each operator's rule's (rules/kit/cost_traits.hpp),
/// from the local shapes of its inputs as it read them (after their reshards) and of its outputs:
/// a matmul or bmm 2·(x's elements)·(y's output length), which is 2mnk; flash_attention 4·(q's
/// elements)·(k's length), halved when causal; their grads twice their forward (the convention
/// of model FLOPs); views, data movement and reshard points (reshape, transpose, assign, slice,
/// concat, gathers, embeddings, ...) none; any other operator one per output element.
/// `hardware_flops()` is what a device computes: forward, backward, the recomputed forward
/// (`model/cost/memory.hpp`: which operators are recomputed) and the optimizer. `model_flops()`
/// is forward + backward as utilisation (MFU) figures count them: each rule's `model_flops`, a
/// causal attention's whole product, though the kernel computes half of it. **Work**
/// (`work_profile`): the same FLOPs with the bytes each operator reads and writes (its rule's
/// `bytes`), which a cluster's roofline times.

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/saturating.hpp>
#include <ctspmd/model/cost/traffic.hpp>
#include <ctspmd/rules/kit/cost_traits.hpp>

namespace ctspmd::model::detail {

/// The FLOPs part of a cost (see the file comment): each operator's, from its rule's traits.
template <std::size_t T, std::size_t O, std::size_t R>
class flops_count : public traffic_count<T, O, R> {
 protected:
  using base = traffic_count<T, O, R>;
  using typename base::size_t;
  using base::p_;
  using base::r_;
  using base::out_;
  using base::elements_;
  using base::first_entry_;
  using base::runs;
  using base::part_of;
  using base::recomputed;
  using base::base;

  /// The reshard entry of operator i's input k (the entries of an operator follow its first), or
  /// -1: read as propagated.
  constexpr std::int64_t input_reshard(size_t i, size_t k) const {
    if (first_entry_[i] >= 0)
      for (auto e = static_cast<size_t>(first_entry_[i]); e < r_.reshard_entries() && r_.reshard_at(e).op == i; ++e)
        if (const auto& s = r_.reshard_at(e); !s.on_output && s.operand == k) return static_cast<std::int64_t>(e);
    return -1;
  }
  /// Operator i's operands as a device holds them: its inputs as it read them (after their
  /// reshards), its outputs as propagated.
  constexpr void local_operands_of(size_t i, local_operands& in, local_operands& out) const {
    const auto& op = p_.op_at(i);
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const auto t = op.inputs[k];
      const auto e = input_reshard(i, k);
      if (e >= 0)
        in.push_back(p_.tensor_at(t).shape, r_.reshard_at(static_cast<size_t>(e)).to, p_.tensor_at(t).element_bytes);
      else
        in.push_back(p_.tensor_at(t).shape, r_.attr({t}), p_.tensor_at(t).element_bytes, elements_[t]);
    }
    for (auto t : op.outputs) out.push_back(p_.tensor_at(t).shape, r_.attr({t}), p_.tensor_at(t).element_bytes, elements_[t]);
  }
  /// Counts operator i's FLOPs, and with them the bytes it reads and writes: its rule's
  /// (rules/kit/cost_traits.hpp).
  constexpr void count_flops(size_t i) {
    local_operands in, out;
    local_operands_of(i, in, out);
    const auto& op = p_.op_at(i);
    const std::int64_t once = op.flops(in, out), bytes = op.bytes(in, out), n = runs(i);
    const std::int64_t f = saturating_product(once, n);
    auto& total = out_.flops[static_cast<size_t>(op.phase)];
    total = saturating_sum(total, f);
    if (op.phase != phase::optimizer)
      out_.model_flops = saturating_sum(out_.model_flops, saturating_product(op.model_flops(in, out), n));
    const std::int64_t times = recomputed(i) ? saturating_product(2, n) : n;
    out_.work.add(once, bytes, times);
    if (recomputed(i)) out_.recompute_flops = saturating_sum(out_.recompute_flops, f);
    if (auto* part = part_of(i)) {
      const bool optimizer = op.phase == phase::optimizer;
      auto& into = optimizer ? part->optimizer_flops : part->flops;
      into = saturating_sum(into, saturating_product(once, times));
      (optimizer ? part->optimizer_work : part->work).add(once, bytes, times);
      if (op.phase == phase::forward) part->forward_work.add(once, bytes, n);
      if (base::tied_update(i)) out_.tied.optimizer_work.add(once, bytes, times);
    }
  }
};

}  // namespace ctspmd::model::detail

#endif
