#ifndef CTSPMD_MODEL_COST_TRAFFIC_HPP
#define CTSPMD_MODEL_COST_TRAFFIC_HPP
/// \file The collectives of a training step: the traffic part of `model/cost.hpp`.
///
/// **Collectives** (`collectives(phase, kind)`): the propagation's reshards, plus what the step
/// sends beyond them: the recomputed forward's (`model/cost/memory.hpp`); vocabulary-parallel cross entropy's
/// (`c_softmax_with_cross_entropy`: three all-reduces of a float per token over the mesh dims
/// that shard the vocabulary, the max, the target logit and the sum, in forward); and ZeRO-3's:
/// each parameter all-gathered from its shard before its forward use and again for backward,
/// and no all-gather of the updated parameter after the optimizer step (its gradient's
/// reduce-scatter stays). Local slices and local partials send nothing and take no time. An
/// all-reduce over a product group of mesh dims (`reshard::group`) counts under its first mesh
/// dim, the outermost, and takes that dim's link: in a cluster of nodes, the slowest.

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/saturating.hpp>
#include <ctspmd/model/collective.hpp>
#include <ctspmd/model/cost/memory.hpp>
#include <ctspmd/model/plan.hpp>

namespace ctspmd::model::detail {

/// The traffic part of a cost (see the file comment): each collective by phase, kind and mesh dim.
template <std::size_t T, std::size_t O, std::size_t R>
class traffic_count : public memory_count<T, O, R> {
 protected:
  using base = memory_count<T, O, R>;
  using typename base::size_t;
  using base::p_;
  using base::r_;
  using base::options_;
  using base::out_;
  using base::runs;
  using base::part_of;
  using base::local_elements;
  using base::sent_again;
  using base::base;

  /// Adds `times` collectives of `bytes` that operator `op` sends.
  constexpr void add(size_t op, phase ph, collective k, std::int64_t m, std::int64_t times, std::int64_t bytes) {
    const auto into = [&](collective_total& e) {
      e.count += static_cast<size_t>(times);
      e.bytes = saturating_sum(e.bytes, saturating_product(times, bytes));
    };
    into(out_.table[static_cast<size_t>(ph)][static_cast<size_t>(k)][static_cast<size_t>(m)]);
    if (auto* part = part_of(op); part != nullptr && moves_data(k))
      into(ph != phase::optimizer ? part->collectives[static_cast<size_t>(k)][static_cast<size_t>(m)]
           : k == collective::reduce_scatter || k == collective::all_reduce ? part->reductions[static_cast<size_t>(m)]
                                                                             : part->gathers[static_cast<size_t>(m)]);
    if (moves_data(k) && base::tied_update(op))  // the last stage's copy: its ZeRO-3 gathers, its update
      into(ph != phase::optimizer ? out_.tied.collectives[static_cast<size_t>(k)][static_cast<size_t>(m)]
           : k == collective::reduce_scatter || k == collective::all_reduce ? out_.tied.reductions[static_cast<size_t>(m)]
                                                                             : out_.tied.gathers[static_cast<size_t>(m)]);
  }
  constexpr void reshard_sends(size_t e) {
    const bool stage3 = options_.stage() == 3;
    const auto& s = r_.reshard_at(e);
    if (s.bytes < 0)
      raise(make_error(error_kind::invalid_argument, "cost",
                       "operator {} reshards tensor {}, whose size is unknown until run time", s.op, s.tensor));
    const auto times = static_cast<std::int64_t>(s.times);
    // ZeRO-3 keeps the updated parameter sharded: no gather after the update.
    if (stage3 && s.phase == phase::optimizer && s.kind == collective::all_gather) return;
    add(s.op, s.phase, s.kind, s.mesh_dim, times, s.bytes);
    if (sent_again(s)) add(s.op, phase::backward, s.kind, s.mesh_dim, times, s.bytes);
  }
  /// Operator i's collectives inside its kernel (cross entropy) or a ZeRO-3 parameter's gathers.
  constexpr void op_sends(size_t i) {
    const bool stage3 = options_.stage() == 3;
    const auto& op = p_.op_at(i);
    if (op.phase == phase::forward && is_rule<rules::c_softmax_with_cross_entropy>(op) && op.outputs.size() == 2) {
      // max, target logit and sum over the vocabulary: a float per token
      const auto logits = op.inputs[0];
      const auto& a = r_.attr({logits});
      const std::int64_t tokens = saturating_product(local_elements(op.outputs[1]), 4);
      for (auto m : a.mesh_dims_of(p_.tensor_at(logits).shape.size() - 1)) {
        const std::int64_t n = a.process_mesh().dim_size(m);
        if (n == 1) continue;
        const std::int64_t twice = saturating_product(2, tokens);  // 2 (n - 1) tokens / n rounded up, no overflow
        add(i, phase::forward, collective::all_reduce, m, 3 * runs(i), twice - twice / n);
      }
    }
    if (stage3 && op.phase == phase::optimizer && is_rule<rules::adamw>(op)) {
      // the parameter gathered from its shard before forward and again for backward
      const auto moment = op.inputs[3];
      const auto param = static_cast<size_t>(p_.tensor_at(moment).role_of);
      // over the ZeRO group: the mesh dims the state splits and the parameter does not
      const auto &state = r_.attr({moment}), &whole = r_.attr({param});
      std::uint32_t group = 0;
      std::int64_t first = -1;
      for (std::int64_t m = p_.mesh().ndim(); m-- > 0;)
        if (state.shards(m) && !whole.shards(m)) {
          group |= std::uint32_t{1} << m;
          first = m;
        }
      const std::int64_t n = group_size(p_.mesh(), group);
      if (n == 1) return;  // no ZeRO group, or one of a single device
      const std::int64_t bytes =
          saturating_product(n - 1, saturating_product(local_elements(param, state), p_.tensor_at(param).element_bytes));
      add(i, phase::forward, collective::all_gather, first, runs(i), bytes);
      add(i, phase::backward, collective::all_gather, first, runs(i), bytes);
    }
  }
};

}  // namespace ctspmd::model::detail

#endif
