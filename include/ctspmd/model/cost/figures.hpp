#ifndef CTSPMD_MODEL_COST_FIGURES_HPP
#define CTSPMD_MODEL_COST_FIGURES_HPP
/// \file The figures a step's cost counts per device, before they are timed: memory by category,
/// the tensors kept for backward, collectives by phase, kind and mesh dim, FLOPs by phase, and
/// the parts of a step split at a repeated block. `model/cost.hpp` counts them
/// (`model/cost/memory.hpp`, `traffic.hpp`, `flops.hpp`); `model/cost/time.hpp` times them.

#include <array>
#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/saturating.hpp>
#include <ctspmd/model/cluster.hpp>
#include <ctspmd/model/collective.hpp>
#include <ctspmd/model/plan.hpp>

namespace ctspmd::model {

inline constexpr std::int64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

/// What a device holds (see the file comment), in bytes.
struct memory_report {
  std::int64_t parameters = 0, gradients = 0, optimizer_states = 0;
  std::int64_t activations = 0;  ///< kept from forward for backward, all blocks' runs
  std::int64_t peak = 0;         ///< persistent + the largest live transients
  std::size_t peak_op = 0;       ///< the operator where the peak falls
  model::phase peak_phase = model::phase::forward;
  constexpr std::int64_t persistent() const noexcept {
    return detail::saturating_sum(detail::saturating_sum(parameters, gradients), optimizer_states);
  }
};

/// A tensor kept from forward for backward: `bytes` per copy, `copies` (one per run of its block).
struct kept_tensor {
  std::size_t tensor = 0;
  std::int64_t bytes = 0;
  std::size_t copies = 1;
  std::int64_t block = -1;  ///< the forward block writing it, or -1
};

/// Collectives of one kind on one mesh dim: how many, the bytes a device sends, and their time.
struct collective_total {
  std::size_t count = 0;
  std::int64_t bytes = 0;
  double seconds = 0;
};

/// At most N kept tensors (`kept_tensors`): `size()`, `[i]`, `begin()`, `end()`.
template <std::size_t N>
class kept_tensor_list {
 public:
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr const kept_tensor& operator[](std::size_t i) const {
    if (i >= size_) raise(make_error(error_kind::invalid_argument, "kept_tensors", "entry {} is out of range ({})", i, size_));
    return items_[i];
  }
  constexpr const kept_tensor* begin() const noexcept { return items_.data(); }
  constexpr const kept_tensor* end() const noexcept { return items_.data() + size_; }
  constexpr void push_back(const kept_tensor& k) { items_[size_++] = k; }  // one per tensor: never more than N

 private:
  std::array<kept_tensor, N> items_{};
  std::size_t size_ = 0;
};

/// One part of a step that `pipeline` (`<ctspmd/model/pipeline.hpp>`) splits: the operators and
/// tensors before the repeated block it splits over the stages, the block (all its runs), or
/// after it. Forward and backward figures (FLOPs with the recomputed forward's) apart from the
/// optimizer's.
struct split_part {
  std::int64_t parameters = 0, gradients = 0, optimizer_states = 0, activations = 0;
  std::int64_t flops = 0, optimizer_flops = 0;
  work_profile work{}, optimizer_work{};  ///< the same FLOPs with their bytes
  work_profile forward_work{};            ///< the forward pass's (its first run, not recomputed)
  /// Forward and backward collectives by kind and mesh dim.
  collective_total collectives[collective_count][max_mesh_ndim] = {};
  /// The optimizer's by mesh dim: its gradients' reductions (reduce-scatters, all-reduces), and
  /// the rest (the updated parameters' all-gathers).
  collective_total reductions[max_mesh_ndim] = {}, gathers[max_mesh_ndim] = {};
  double communication_seconds = 0, reduction_seconds = 0, gather_seconds = 0;
};

/// The parameters read both before the split block and after it (a head tied to the embedding).
/// Counted in the first part; a pipeline's last stage holds its own copy of them, of their
/// gradients and optimizer states, gathers it as the first stage does under ZeRO-3, and updates
/// it as the first stage does (the same optimizer kernels, gradient reductions and parameter
/// gathers), as Megatron's does. The two stages'
/// gradients are summed once a step: `gradient_bytes`, the last part's contributions as the
/// gradient's sum reads them (one for a head that reads the weight once).
struct tied_part {
  std::int64_t parameters = 0, gradients = 0, optimizer_states = 0;
  std::int64_t gradient_bytes = 0;
  work_profile optimizer_work{};
  /// The copy's ZeRO-3 gathers in forward and backward (per micro-batch), and its optimizer's
  /// gradient reductions and parameter gathers.
  collective_total collectives[collective_count][max_mesh_ndim] = {};
  collective_total reductions[max_mesh_ndim] = {}, gathers[max_mesh_ndim] = {};
  double communication_seconds = 0, reduction_seconds = 0, gather_seconds = 0;
};

namespace detail {
/// Everything a cost counts (see the members' types), as `step_cost` reports it before timing.
struct cost_figures {
  memory_report memory{};
  std::array<std::int64_t, max_blocks> kept_in_block{};  ///< the bytes each forward block keeps
  std::array<std::int64_t, phase_count> flops{};
  std::int64_t recompute_flops = 0;
  std::int64_t model_flops = 0;  ///< forward and backward, as utilisation figures count them
  work_profile work{};  ///< the hardware FLOPs (recomputed forward and optimizer included) with their bytes
  collective_total table[phase_count][collective_count][max_mesh_ndim] = {};
  std::array<split_part, 3> parts{};
  tied_part tied{};
  std::int64_t boundary_bytes = 0;  ///< the split block output's local bytes
};
}  // namespace detail

}  // namespace ctspmd::model

#endif
