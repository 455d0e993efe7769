#ifndef CTSPMD_MODEL_COST_HPP
#define CTSPMD_MODEL_COST_HPP
/// \file What a training step costs each device: memory, FLOPs and time.
///
///     constexpr auto step = make_step();                      // model::training_step(...)
///     constexpr auto r = model::verified<make_step>();
///     constexpr auto c = model::cost(step, r, model::h100_cluster(step.mesh()));
///     static_assert(c.memory().peak <= 80 * model::GiB);
///     constexpr auto same = model::verified_cost<make_step>();  // over several constant expressions
///
/// Every figure is per device, from the layouts propagation gave (a tensor's local part: each
/// dim's size divided by the product of the mesh dims that shard it, rounded up, so that uneven
/// shards count the largest device's). A repeated block's figures count all its runs.
///
/// The cost is counted in parts, each in its own file under `model/cost/`, and reported as a
/// `step_cost`:
/// - `walk.hpp`: where each operator runs (blocks, runs, recomputation, a split step's parts) and
///   each tensor's local size;
/// - `memory.hpp`: **memory** (`memory()`): parameters, gradients, optimizer states, the
///   activations kept for backward and the peak, under `training_options`' recomputation and
///   ZeRO stage;
/// - `traffic.hpp`: **collectives** (`collectives(phase, kind)`): the propagation's reshards and
///   what the step sends beyond them (recomputation, vocabulary-parallel cross entropy, ZeRO-3);
/// - `flops.hpp`: **FLOPs** (`flops(phase)`), each operator's rule's (rules/kit/cost_traits.hpp);
/// - `figures.hpp`: the figures counted; `time.hpp`: **time** (`step_seconds()`, `mfu()`, ...),
///   the figures on a `cluster` (`model/cluster.hpp`).
///
/// This file runs the parts as one sequence of loops over the plan's operators, tensors and
/// reshard entries (`detail::coster`), which can be spread over several constant expressions
/// (`verified_cost`).
///
/// A size unknown until run time (-1) is an error: costs need every size. A figure that overflows
/// int64 saturates at its largest value, and so does every sum it enters (compare with
/// `std::numeric_limits<std::int64_t>::max()`; the JSON tool lists such figures under
/// "saturated").

#include <cstddef>
#include <cstdint>
#include <limits>

#include <ctspmd/core/error.hpp>
#include <ctspmd/model/cluster.hpp>
#include <ctspmd/model/cost/figures.hpp>
#include <ctspmd/model/cost/flops.hpp>
#include <ctspmd/model/cost/time.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/staged.hpp>

namespace ctspmd::model {

namespace detail {

template <std::size_t T, std::size_t O, std::size_t R>
class coster : public flops_count<T, O, R> {
 public:
  using kept_list = kept_tensor_list<T>;
  /// A cost of step `p` propagated as `r` (and, if `kept` is given, the list of the tensors kept
  /// for backward); with `split` a forward block's index, its figures are also split into
  /// `split_part`s (before the block, the block, after it).
  constexpr coster(const plan<T, O>& p, const propagation<T, R>& r, kept_list* kept = nullptr, std::int64_t split = -1)
      : flops_count<T, O, R>(p, r, kept, split) {}

  /// Runs loop items worth about `budget` constant-evaluation steps (at least one item if
  /// `budget` > 0).
  constexpr void resume(std::size_t budget) {
    while (loop_ != done && budget > 0) {
      const size_t n = length(loop_, p_, r_), w = weight(loop_);
      for (; cursor_ < n && budget > 0; ++cursor_) {
        item(loop_, cursor_);
        budget = budget > w ? budget - w : 0;
      }
      if (cursor_ < n) return;
      finish(loop_);
      loop_ = static_cast<loop>(static_cast<int>(loop_) + 1);
      cursor_ = 0;
    }
  }
  constexpr bool finished() const noexcept { return loop_ == done; }
  /// At most how many calls `resume(budget)` takes to finish the cost of `p` propagated as `r`:
  /// each runs items weighing at least `budget`, or finishes.
  static constexpr std::size_t resumes(const plan<T, O>& p, const propagation<T, R>& r, std::size_t budget) {
    std::size_t total = 0;
    for (int l = 0; l < static_cast<int>(loop::done); ++l) total += length(loop(l), p, r) * weight(loop(l));
    return total / budget + 1;
  }
  /// The cost, its times on cluster `c` (all loops run).
  constexpr step_cost result(const cluster& c) const {
    if (!finished()) raise(make_error(error_kind::precondition_not_met, "cost", "the cost is not finished"));
    return step_cost(out_, c);
  }

 private:
  using base = flops_count<T, O, R>;
  using typename base::size_t;
  using base::p_;
  using base::r_;
  using base::out_;
  using base::map_op;
  using base::measure_tensor;
  using base::track_tensor;
  using base::op_buffers;
  using base::parameter;
  using base::reshard_flags;
  using base::alias;
  using base::block_inputs;
  using base::readers;
  using base::lifetime;
  using base::peak;
  using base::finish_peak;
  using base::reshard_sends;
  using base::op_sends;
  using base::count_flops;

  // ---- the loops, in order ----
  enum class loop : std::uint8_t {
    ops,            ///< map_op
    tensors,        ///< measure_tensor, then track_tensor
    buffers,        ///< op_buffers
    parameters,     ///< parameter
    reshard_flags,  ///< reshard_flags
    aliases,        ///< alias
    readers,        ///< block_inputs, then readers
    lifetimes,      ///< lifetime
    peak,           ///< peak, then finish_peak
    reshard_sends,  ///< reshard_sends
    op_sends,       ///< op_sends
    flops,          ///< count_flops
    done
  };
  static constexpr loop done = loop::done;
  static constexpr size_t length(loop l, const plan<T, O>& p, const propagation<T, R>& r) {
    switch (l) {
      case loop::tensors:
      case loop::parameters:
      case loop::lifetimes:
        return p.tensor_count();
      case loop::reshard_flags:
      case loop::reshard_sends:
        return r.reshard_entries();
      case loop::done:
        return 0;
      default:
        return p.op_count();
    }
  }
  /// An item's cost, in about Clang's constant-evaluation steps (above them): what `resume` counts.
  static constexpr size_t weight(loop l) {
    switch (l) {
      case loop::flops:
        return 1200;
      case loop::tensors:
      case loop::readers:
      case loop::buffers:
      case loop::aliases:
        return 400;
      default:
        return 200;
    }
  }
  constexpr void item(loop l, size_t i) {
    switch (l) {
      case loop::ops: return map_op(i);
      case loop::tensors:
        measure_tensor(i);
        return track_tensor(i);
      case loop::buffers: return op_buffers(i);
      case loop::parameters: return parameter(i);
      case loop::reshard_flags: return reshard_flags(i);
      case loop::aliases: return alias(i);
      case loop::readers:
        if (i == 0) block_inputs();
        return readers(i);
      case loop::lifetimes: return lifetime(i);
      case loop::peak: return peak(i);
      case loop::reshard_sends: return reshard_sends(i);
      case loop::op_sends: return op_sends(i);
      case loop::flops: return count_flops(i);
      case loop::done: return;
    }
  }
  constexpr void finish(loop l) {
    if (l == loop::readers && p_.op_count() == 0) block_inputs();
    if (l == loop::peak) finish_peak();
  }


  loop loop_ = loop::ops;
  size_t cursor_ = 0;
};

}  // namespace detail

/// The cost of training step `step` (a plan `training_step` built; a forward plan works too)
/// whose propagation is `r`, on cluster `c` (see the file comment).
template <std::size_t T, std::size_t O, std::size_t R>
constexpr step_cost cost(const plan<T, O>& step, const propagation<T, R>& r, const cluster& c) {
  detail::coster<T, O, R> k(step, r);
  k.resume(static_cast<std::size_t>(-1));
  return k.result(c);
}
/// The same on 8-GPU H100 nodes (`h100_cluster`).
template <std::size_t T, std::size_t O, std::size_t R>
constexpr step_cost cost(const plan<T, O>& step, const propagation<T, R>& r) {
  return cost(step, r, h100_cluster(step.mesh()));
}

namespace detail {
/// The budget (in `coster::weight`'s units) of one constant expression of `verified_cost`. The
/// weights overestimate Clang's steps: the cost of a flat 80-operator training step weighs
/// 1,176,000 and takes Clang 693,000 steps and GCC 2,200,000 operations. So a part stays
/// within Clang's default limit of 1,048,576 steps and GCC's of 33,554,432 operations. GCC gets
/// bigger parts: a split costs it memory and time (the flat 1,000-operator step's cost weighs
/// 16,450,000: in one part it would take GCC 28 to 29 million operations and add 190 MB to
/// the step's verification; in the two it takes, 280 MB). The parts keep a margin for plans
/// whose operations per unit of weight exceed the 1.7 to 1.9 measured.
#if defined(__clang__)
inline constexpr std::size_t cost_steps_per_part = 800000;
#else
inline constexpr std::size_t cost_steps_per_part = 12000000;
#endif

/// The parts `verified_cost` takes (computed before them, so that a part that fails with an
/// error does not lead to endless parts).
template <auto MakePlan, propagate_options Options, std::size_t R, std::size_t Budget>
inline constexpr std::size_t cost_parts = [] {
  constexpr auto& p = plan_value<MakePlan>;
  using plan_type = std::remove_cvref_t<decltype(p)>;
  return coster<plan_type::max_tensors, plan_type::max_ops, R>::resumes(p, finished_propagation<MakePlan, Options, R>(),
                                                                        Budget);
}();
/// `verified_cost`'s cost as a staged work (model/staged.hpp): parts of `Budget` weight.
template <auto MakePlan, propagate_options Options, std::size_t R, std::size_t Budget>
struct cost_work {
  static constexpr auto& p = plan_value<MakePlan>;
  using plan_type = std::remove_cvref_t<decltype(p)>;
  using state = coster<plan_type::max_tensors, plan_type::max_ops, R>;
  static constexpr state start() {
    state k(p, finished_propagation<MakePlan, Options, R>());
    k.resume(Budget);
    return k;
  }
  static constexpr void resume(state& k) { k.resume(Budget); }
  static constexpr bool finished(const state& k, std::size_t part) {
    return part + 1 >= cost_parts<MakePlan, Options, R, Budget> || k.finished();
  }
};
/// The finished cost (`Budget`: each part's weight; tests make it small to take many parts).
template <auto MakePlan, propagate_options Options, std::size_t R, std::size_t Budget = cost_steps_per_part>
constexpr const auto& finished_cost() {
  return staged_result<cost_work<MakePlan, Options, R, Budget>>;
}
}  // namespace detail

/// The cost of the training step `MakePlan()` returns, as `verified<MakePlan, Options,
/// MaxReshards>()` propagates it, on cluster `c`: `cost(plan_of<MakePlan>, verified<MakePlan>(),
/// c)`, computed over several constant expressions (as `verified` propagates), so that a long
/// step's cost stays within the compilers' default limits. Use it in constant evaluation:
///
///     constexpr auto c = model::verified_cost<make_step>(model::h100_cluster(mesh));
template <auto MakePlan, propagate_options Options = propagate_options{}, std::size_t MaxReshards = 0>
constexpr step_cost verified_cost(const cluster& c) {
  using plan_type = std::remove_cvref_t<decltype(detail::plan_value<MakePlan>)>;
  constexpr std::size_t R = MaxReshards == 0 ? default_max_reshards(plan_type::max_ops) : MaxReshards;
  if constexpr (!detail::finished_propagation<MakePlan, Options, R>().ok()) {
    (void)verified<MakePlan, Options, MaxReshards>();  // verified's error
    return step_cost{};
  } else {
    return detail::finished_cost<MakePlan, Options, R>().result(c);
  }
}
/// The same on 8-GPU H100 nodes (`h100_cluster`).
template <auto MakePlan, propagate_options Options = propagate_options{}, std::size_t MaxReshards = 0>
constexpr step_cost verified_cost() {
  return verified_cost<MakePlan, Options, MaxReshards>(h100_cluster(detail::plan_value<MakePlan>.mesh()));
}

/// The tensors training step `step` keeps from forward for backward (see the file comment), in
/// the order of their index: `memory().activations` is the sum of their `bytes * copies`.
template <std::size_t T, std::size_t O, std::size_t R>
constexpr kept_tensor_list<T> kept_tensors(const plan<T, O>& step, const propagation<T, R>& r) {
  kept_tensor_list<T> kept;
  detail::coster<T, O, R>(step, r, &kept).resume(static_cast<std::size_t>(-1));
  return kept;
}

}  // namespace ctspmd::model

#endif
