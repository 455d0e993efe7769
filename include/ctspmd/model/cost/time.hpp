#ifndef CTSPMD_MODEL_COST_TIME_HPP
#define CTSPMD_MODEL_COST_TIME_HPP
/// \file A step's time: its counted figures (`model/cost/figures.hpp`) on a cluster, as `step_cost`.
///
/// A collective of B bytes (the ring bytes the report gives) on mesh dim m takes its cluster's
/// `seconds(m, count, B)`: latency + B / (bandwidth x communication efficiency); compute, the
/// hardware FLOPs' kernels timed by the cluster's roofline (`work_seconds`: FLOPs / (peak x compute
/// efficiency) or bytes / (memory bandwidth x memory efficiency), whichever is longer, by
/// arithmetic intensity; `model/cluster.hpp` owns the formulas). The
/// step takes compute + communication without overlap, the larger of the two with perfect
/// overlap; MFU is model FLOPs / (step time x peak). Local slices and local partials send
/// nothing and take no time.

#include <array>
#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/saturating.hpp>
#include <ctspmd/model/cluster.hpp>
#include <ctspmd/model/collective.hpp>
#include <ctspmd/model/cost/figures.hpp>

namespace ctspmd::model {

/// The cost of a training step on a cluster (`model/cost.hpp`): `cost(step, propagation, cluster)`.
class step_cost {
 public:
  constexpr step_cost() = default;
  /// Counted figures `f` timed on cluster `c` (what `cost` returns).
  constexpr step_cost(const detail::cost_figures& f, const cluster& c) : f_(f) {
    c.check();
    peak_flops_ = c.peak_flops;
    compute_seconds_ = c.work_seconds(f_.work);
    for (auto& by_kind : f_.table)
      for (std::size_t k = 0; k < collective_count; ++k)
        for (std::size_t m = 0; m < max_mesh_ndim; ++m) {
          auto& e = by_kind[k][m];
          if (e.count == 0 || !moves_data(static_cast<collective>(k))) continue;
          e.seconds = seconds_of(c, m, e.count, e.bytes);
        }
    for (auto& part : f_.parts) {
      part.communication_seconds = part.reduction_seconds = part.gather_seconds = 0;
      for (std::size_t m = 0; m < max_mesh_ndim; ++m) {
        for (std::size_t k = 0; k < collective_count; ++k)
          part.communication_seconds += time(c, m, part.collectives[k][m]);
        part.reduction_seconds += time(c, m, part.reductions[m]);
        part.gather_seconds += time(c, m, part.gathers[m]);
      }
    }
    auto& t = f_.tied;
    t.communication_seconds = t.reduction_seconds = t.gather_seconds = 0;
    for (std::size_t m = 0; m < max_mesh_ndim; ++m) {
      for (std::size_t k = 0; k < collective_count; ++k) t.communication_seconds += time(c, m, t.collectives[k][m]);
      t.reduction_seconds += time(c, m, t.reductions[m]);
      t.gather_seconds += time(c, m, t.gathers[m]);
    }
  }
  /// The same step timed on cluster `c`: its figures counted once, timed on many clusters
  /// (`model::cost(step, r, h100_cluster(mesh)).on(a100_cluster(mesh))`).
  constexpr step_cost on(const cluster& c) const { return step_cost(f_, c); }

  constexpr const memory_report& memory() const noexcept { return f_.memory; }

  /// The bytes forward block `b` keeps for backward, all runs (`kept_tensors` lists them).
  constexpr std::int64_t kept_in_block(std::size_t b) const {
    if (b >= max_blocks) raise(make_error(error_kind::invalid_argument, "step_cost", "block {} is out of range", b));
    return f_.kept_in_block[b];
  }

  /// FLOPs a device computes in phase `ph` (backward: with the recomputed forward, see
  /// `recompute_flops`, excluded).
  constexpr std::int64_t flops(phase ph) const noexcept { return f_.flops[static_cast<std::size_t>(ph)]; }
  constexpr std::int64_t recompute_flops() const noexcept { return f_.recompute_flops; }
  /// Forward and backward as utilisation figures count them (a causal attention's whole product:
  /// `model/cost/flops.hpp`), what `mfu()` divides.
  constexpr std::int64_t model_flops() const noexcept { return f_.model_flops; }
  /// What a device computes: forward, backward, the recomputed forward and the optimizer.
  constexpr std::int64_t hardware_flops() const noexcept {
    const auto passes = detail::saturating_sum(flops(phase::forward), flops(phase::backward));
    return detail::saturating_sum(detail::saturating_sum(passes, f_.recompute_flops), flops(phase::optimizer));
  }

  /// The collectives of phase `ph` and `kind` (on mesh dim `m`, or all).
  constexpr collective_total collectives(phase ph, collective kind, std::int64_t m) const {
    if (m < 0 || m >= static_cast<std::int64_t>(max_mesh_ndim))
      raise(make_error(error_kind::invalid_argument, "step_cost", "mesh dim {} is out of range", m));
    return f_.table[static_cast<std::size_t>(ph)][static_cast<std::size_t>(kind)][static_cast<std::size_t>(m)];
  }
  constexpr collective_total collectives(phase ph, collective kind) const noexcept {
    collective_total t;
    for (const auto& e : f_.table[static_cast<std::size_t>(ph)][static_cast<std::size_t>(kind)]) {
      t.count += e.count;
      t.bytes = detail::saturating_sum(t.bytes, e.bytes);
      t.seconds += e.seconds;
    }
    return t;
  }
  /// The collectives' time in phase `ph`, or in the whole step.
  constexpr double communication_seconds(phase ph) const noexcept {
    double s = 0;
    for (std::size_t k = 0; k < collective_count; ++k) s += collectives(ph, static_cast<collective>(k)).seconds;
    return s;
  }
  constexpr double communication_seconds() const noexcept {
    return communication_seconds(phase::forward) + communication_seconds(phase::backward) +
           communication_seconds(phase::optimizer);
  }
  constexpr double compute_seconds() const noexcept { return compute_seconds_; }
  /// The step's time without overlap, and with compute and communication overlapped perfectly.
  constexpr double step_seconds() const noexcept { return compute_seconds_ + communication_seconds(); }
  constexpr double overlapped_step_seconds() const noexcept {
    const double c = communication_seconds();
    return compute_seconds_ > c ? compute_seconds_ : c;
  }
  /// Model FLOPs utilisation: model FLOPs / (time x peak FLOP/s), without and with overlap.
  constexpr double mfu() const noexcept { return utilisation(step_seconds()); }
  constexpr double overlapped_mfu() const noexcept { return utilisation(overlapped_step_seconds()); }

  /// With a cost split at a repeated block (`pipeline`'s): part 0 before the block, 1 the block,
  /// 2 after it; all zero otherwise. `boundary_bytes()`: the block output's local bytes.
  constexpr const split_part& part(std::size_t i) const {
    if (i >= 3) raise(make_error(error_kind::invalid_argument, "step_cost", "part {} is out of range (3)", i));
    return f_.parts[i];
  }
  constexpr std::int64_t boundary_bytes() const noexcept { return f_.boundary_bytes; }
  /// With a cost split at a repeated block: the parameters read both before and after it.
  constexpr const tied_part& tied() const noexcept { return f_.tied; }

 private:
  /// Times collectives `e` on mesh dim m, and returns their seconds.
  static constexpr double time(const cluster& c, std::size_t m, collective_total& e) {
    if (e.count > 0) e.seconds = seconds_of(c, m, e.count, e.bytes);
    return e.seconds;
  }
  /// The time of `count` collectives of `bytes` on mesh dim m.
  static constexpr double seconds_of(const cluster& c, std::size_t m, std::size_t count, std::int64_t bytes) {
    return c.seconds(static_cast<std::int64_t>(m), static_cast<double>(count), static_cast<double>(bytes));
  }
  constexpr double utilisation(double seconds) const noexcept {
    return seconds > 0 ? static_cast<double>(model_flops()) / (seconds * peak_flops_) : 0;
  }

  detail::cost_figures f_{};
  double compute_seconds_ = 0, peak_flops_ = 0;
};

}  // namespace ctspmd::model

#endif
