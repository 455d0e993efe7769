#ifndef CTSPMD_MODEL_PIPELINE_HPP
#define CTSPMD_MODEL_PIPELINE_HPP
/// \file Pipeline parallelism: a training step's repeated block split over the stages of a mesh
/// dim, with its micro-batches, schedule, sends, memory per stage and bubble.
///
///     constexpr auto step = make_step();          // the plan's batch is one micro-batch
///     constexpr auto r = model::verified<make_step>();
///     constexpr auto p = model::pipeline(step, r, {.mesh_dim = 0, .micro_batches = 32});
///     static_assert(p.peak_memory() <= 80'000'000'000);
///
/// Mesh dim `mesh_dim` (p devices) holds the stages. No tensor may be split or partial over it:
/// each stage holds its layers whole, the other mesh dims shard them as the plan says. The
/// plan's first repeated forward block (its runs, the layers) is split over the stages: by
/// `stage_layers` (Llama 3 gives the first and last stages one layer fewer), or as evenly as the
/// count allows: L/p layers a stage, and one more for each of the L mod p left, the middle
/// stages first, then the last, then the first (which hold the head and the embedding too).
/// What comes before the block (the embedding) is on the first stage, what comes after it (the
/// head and the loss) on the last, their backward operators with them; a plan input (a
/// parameter, labels) is where it is read, whatever its declaration's place (on the first stage
/// if read before the block, else on the last), with its gradient's sum and optimizer
/// operators. The figures are per device of a stage, from the step's cost split into those three
/// parts (`split_part`, `<ctspmd/model/cost.hpp>`): a layer's are the block's divided by its count.
///
/// A step runs `micro_batches` (m) micro-batches, each the plan's batch, through the stages:
/// - Schedules: GPipe (every forward, then every backward: each stage keeps m micro-batches'
///   activations), 1F1B (stage r keeps min(p - r, m)), and interleaved 1F1B (each stage holds
///   `chunks` (v) chunks of the layers, stage r's j-th the (j·p + r)-th of p·v equal chunks; a
///   pass is one chunk's, in Megatron's order (`pass_chunk`), and stage r runs
///   2(p - r - 1) + (v - 1)·p forward passes before its first backward (`warmup_passes`), so
///   keeps min(m·v, 2(p - r - 1) + (v - 1)·p + 1) chunk passes in flight: `in_flight` counts
///   them as v-ths of a micro-batch (with m > p, on the first stage p + (p - 1)/v, the
///   (1 + (p - 1)/(p·v)) × p of Narayanan et al. 2021; on the last ((v - 1)·p + 1)/v).
///   Interleaving needs m to be a multiple of p and each stage to hold at least v layers: stage
///   r's n_r layers make its v chunks, the first n_r mod v of them one layer longer (the time
///   below takes a stage's chunks alike).
/// - Sends: at each stage boundary, per micro-batch, the block output's local part goes forward
///   and its gradient backward, point to point over the pipeline's mesh dim (a stage's
///   `collectives` list them as `collective::send_recv`): b·s·h elements, a t-th of them when
///   the block's output is split along the sequence over t devices. Under interleaving each
///   chunk boundary sends: v forward and v backward a micro-batch, but the first stage's first
///   chunk receives and the last stage's last chunk sends nothing further.
/// - Memory of a stage: its parameters, gradients and optimizer states, and its layers'
///   activations kept per micro-batch times the micro-batches in flight; interleaved, the most
///   its passes in flight keep at once as they run in order, each its chunk's layers' (the first
///   stage's first chunk also the embedding's, the last stage's last chunk the head's).
///   Transient buffers are not counted (the step's own peak, `step_cost::memory().peak`, has
///   them).
/// - Time: a micro-batch through stage r (forward and backward) takes its kernels (the recomputed
///   forward's too; the cluster's roofline, `cluster::work_seconds`, a layer's the block's divided
///   by its count), its collectives, and its sends (latency + bytes /
///   bandwidth of the pipeline mesh dim's link each); the step takes (m + (p − 1)/v) × the slowest
///   stage's time (v = 1 unless interleaved) plus the slowest stage's optimizer step. The bubble
///   is (p − 1)/(v·m) of the ideal m × that time: (p − 1)/m under GPipe and 1F1B.
/// - Tied parameters (a head on the last stage tied to the embedding on the first, `tied_part`):
///   the last stage holds its own copy of them, their gradients and optimizer states; each of
///   the two stages accumulates its own gradient contributions over the micro-batches, and once a
///   step, after the last backward pass, the last sends its part to the first to be summed
///   (Megatron all-reduces the embedding group's gradients once a step): `tied_gradient_bytes`,
///   timed as one send over the pipeline's mesh dim and added to both stages' optimizer step.
///   The last stage also gathers its copy as the first does under ZeRO-3 (per micro-batch) and
///   updates it (the optimizer's kernels, gradient reductions and parameter gathers). The sum's
///   additions are counted with the first stage's backward pass.
/// - The optimizer step of a stage: its kernels, and the optimizer's collectives it waits for:
///   the gradients' reductions over the data-parallel dims and the updated parameters'
///   all-gathers (ZeRO). With `overlap_grad_reduce` (Megatron's flag) the reductions run while
///   the stage's last micro-batch goes backward, and on stage r (which ends r/v backward passes
///   of the slowest stage before the first stage does) during that wait too; with
///   `overlap_param_gather` the gathers run while the next step's first micro-batch goes forward,
///   after r/v forward passes of warm-up. Only what is longer shows. With
///   `overlap_tensor_parallel` (Megatron's `tp_comm_overlap`) the collectives inside a
///   micro-batch's forward and backward (tensor, sequence and context parallelism's) run under its
///   kernels and only what is longer shows; without, they add to them. Sends overlap nothing.
/// - MFU: the step's model FLOPs (a causal attention counted whole, as published figures count
///   it) over all micro-batches, a device's share, / (step time × peak).
///
/// Each violation of the above is an `spmd_error` at run time, a compile error in a constant
/// expression, naming what is wrong. `pipeline` computes its cost on the stack; for a plan of
/// the run-time layer's capacity, use `runtime::pipeline` (`<ctspmd/runtime/plan.hpp>`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>

namespace ctspmd::model {

/// How the micro-batches go through the stages (see the file comment).
enum class pipeline_schedule : std::int8_t { gpipe, one_f_one_b, interleaved };
constexpr std::string_view to_string(pipeline_schedule s) noexcept {
  switch (s) {
    case pipeline_schedule::gpipe: return "gpipe";
    case pipeline_schedule::one_f_one_b: return "1f1b";
    case pipeline_schedule::interleaved: return "interleaved";
  }
  return "unknown";
}

/// The most stages a pipeline has.
inline constexpr std::size_t max_stages = 64;

/// Options of `pipeline` (see the file comment).
struct pipeline_options {
  std::int64_t mesh_dim = -1;      ///< the mesh dim whose devices are the stages
  std::int64_t micro_batches = 1;  ///< m, each the plan's batch
  pipeline_schedule schedule = pipeline_schedule::one_f_one_b;
  std::int64_t chunks = 1;  ///< v, chunks of layers a stage holds (interleaved)
  /// The layers of each stage, or all 0: an even split.
  std::array<std::int64_t, max_stages> stage_layers{};
  /// Megatron's `overlap_grad_reduce`: a stage's gradient reductions run while its last
  /// micro-batch's backward pass does; `overlap_param_gather`: its updated parameters' all-gathers
  /// while the next step's first forward pass does (see the file comment).
  bool overlap_grad_reduce = false, overlap_param_gather = false;
  /// Megatron's `tp_comm_overlap`: the collectives inside a micro-batch's forward and backward
  /// passes (tensor and sequence parallelism's) run under its kernels; only what is longer shows.
  bool overlap_tensor_parallel = false;
};

/// One stage: per device of it. Per micro-batch: activations, FLOPs, sends and their times;
/// per step: memory and the optimizer's time.
struct stage_report {
  std::int64_t first_layer = 0, layers = 0;  ///< its first (of its first chunk) and how many
  std::int64_t parameters = 0, gradients = 0, optimizer_states = 0;
  std::int64_t activations = 0;  ///< kept for backward, per micro-batch
  double in_flight = 0;          ///< micro-batches whose activations it keeps at once
  std::int64_t memory = 0;       ///< persistent + the activations in flight keep (see the file comment)
  std::int64_t flops = 0;        ///< forward, backward and recomputed, per micro-batch
  std::int64_t sends = 0, send_bytes = 0;  ///< point-to-point sends per micro-batch, both directions
  double compute_seconds = 0, communication_seconds = 0, send_seconds = 0;  ///< per micro-batch
  double forward_seconds = 0;  ///< the forward pass's part of `compute_seconds`
  /// What of `communication_seconds` a micro-batch waits for (all of it unless overlapped).
  double exposed_communication_seconds = 0;
  /// Per step: the optimizer's gradient reductions and parameter all-gathers, what of them the
  /// step waits for (the rest overlapped), and the optimizer step: its kernels and what it waits for.
  double reduction_seconds = 0, gather_seconds = 0;
  double exposed_reduction_seconds = 0, exposed_gather_seconds = 0;
  double optimizer_seconds = 0;
  /// Per step, on the first and last stages when they share tied parameters (`tied_part`): the
  /// gradient bytes a device sends to sum them, and that send's time (part of `optimizer_seconds`).
  std::int64_t tied_gradient_bytes = 0;
  double tied_gradient_seconds = 0;
  /// Per micro-batch, forward and backward, by kind over all mesh dims: its operators'
  /// collectives (their time is `communication_seconds`) and, as `collective::send_recv`, its
  /// sends (`sends`, `send_bytes`, `send_seconds`).
  std::array<collective_total, collective_count> collectives{};

  constexpr std::int64_t persistent() const noexcept {
    return detail::saturating_sum(detail::saturating_sum(parameters, gradients), optimizer_states);
  }
  /// A micro-batch's forward and backward through the stage.
  constexpr double micro_batch_seconds() const noexcept {
    return compute_seconds + exposed_communication_seconds + send_seconds;
  }
};

class pipeline_report;
namespace detail {
template <std::size_t T, std::size_t O, std::size_t R>
constexpr pipeline_report pipeline_of(const plan<T, O>& step, const propagation<T, R>& r, const pipeline_options& o,
                                      const cluster& c, const step_cost& cost, std::int64_t block);
}  // namespace detail

/// A pipelined step (see the file comment).
class pipeline_report {
 public:
  constexpr std::size_t stages() const noexcept { return count_; }
  constexpr const stage_report& stage(std::size_t r) const {
    if (r >= count_) raise(make_error(error_kind::invalid_argument, "pipeline", "stage {} is out of range ({})", r, count_));
    return stages_[r];
  }
  constexpr std::int64_t micro_batches() const noexcept { return micro_batches_; }
  /// The bubble: idle time as a fraction of m × the slowest stage's micro-batch time, (p − 1)/(v·m).
  constexpr double bubble_fraction() const noexcept { return bubble_; }
  /// m × the slowest stage's micro-batch time + the slowest optimizer step: no bubble.
  constexpr double ideal_seconds() const noexcept { return ideal_; }
  /// The step's time with the bubble.
  constexpr double step_seconds() const noexcept { return step_; }
  /// Model FLOPs utilisation: the step's model FLOPs (`step_cost::model_flops`, every
  /// micro-batch's, a device's share of them) / (step time x peak FLOP/s).
  constexpr double mfu() const noexcept { return mfu_; }
  /// The largest stage memory, and its stage.
  constexpr std::int64_t peak_memory() const noexcept { return stages_[peak_stage_].memory; }
  constexpr std::size_t peak_stage() const noexcept { return peak_stage_; }
  /// The bytes of one send: the block output's local part.
  constexpr std::int64_t boundary_bytes() const noexcept { return boundary_bytes_; }

 private:
  template <std::size_t T, std::size_t O, std::size_t R>
  friend constexpr pipeline_report detail::pipeline_of(const plan<T, O>&, const propagation<T, R>&, const pipeline_options&,
                                                       const cluster&, const step_cost&, std::int64_t);
  std::array<stage_report, max_stages> stages_{};
  std::size_t count_ = 0, peak_stage_ = 0;
  std::int64_t micro_batches_ = 0, boundary_bytes_ = 0;
  double bubble_ = 0, ideal_ = 0, step_ = 0, mfu_ = 0;
};

namespace detail {

inline constexpr void pipeline_error(const char* format, std::int64_t a = 0, std::int64_t b = 0, std::int64_t d = 0) {
  raise(make_error(error_kind::invalid_argument, "pipeline", format, a, b, d));
}

/// The block `pipeline` splits (the plan's first forward block), after checking `o` against
/// step `step` propagated as `r` (see the file comment).
template <std::size_t T, std::size_t O, std::size_t R>
constexpr std::int64_t pipeline_block(const plan<T, O>& step, const propagation<T, R>& r, const pipeline_options& o) {
  const auto bad = [](const char* format, std::int64_t a = 0, std::int64_t b = 0, std::int64_t d = 0) {
    pipeline_error(format, a, b, d);
  };
  const auto& mesh = step.mesh();
  if (o.mesh_dim < 0 || o.mesh_dim >= mesh.ndim())
    bad("mesh_dim {} is not a dim of the plan's mesh of {} dims", o.mesh_dim, mesh.ndim());
  const std::int64_t p = mesh.dim_size(o.mesh_dim);
  if (p > static_cast<std::int64_t>(max_stages)) bad("{} stages: a pipeline has at most {}", p, max_stages);
  if (!r.ok()) bad("the plan's propagation failed at operator {}", r.failed_operator());
  for (std::size_t t = 0; t < step.tensor_count(); ++t)
    if (r.attr({t}).shards(o.mesh_dim) || r.attr({t}).is_partial(o.mesh_dim))
      bad("tensor {} is split or partial over the pipeline's mesh dim {}: each stage holds its layers whole",
          static_cast<std::int64_t>(t), o.mesh_dim);
  std::int64_t block = -1;
  for (std::size_t b = 0; b < step.block_count() && block < 0; ++b)
    if (step.block_at(b).mirror_of < 0) block = static_cast<std::int64_t>(b);
  if (block < 0) bad("the plan has no repeated block to split over the stages");
  bool backward = false, mirrored = false;
  for (std::size_t i = 0; i < step.op_count(); ++i) backward = backward || step.op_at(i).phase == phase::backward;
  for (std::size_t b = 0; b < step.block_count(); ++b) mirrored = mirrored || step.block_at(b).mirror_of == block;
  if (backward && !mirrored)  // which stage a backward operator runs on follows the block's backward pass
    bad("the loss does not depend on block {}'s output: the step has no backward pass of the layers to split", block);
  const auto layers = static_cast<std::int64_t>(step.block_at(static_cast<std::size_t>(block)).count);
  const std::int64_t m = o.micro_batches;
  const bool interleaved = o.schedule == pipeline_schedule::interleaved;
  const std::int64_t v = o.chunks;
  if (m < 1) bad("micro_batches is {}: at least 1", m);
  if (v < 1 || (!interleaved && v != 1)) bad("chunks is {}: 1, or more under the interleaved schedule", v);
  bool mapped = false;
  for (auto n : o.stage_layers) mapped = mapped || n != 0;
  if (mapped) {
    std::int64_t sum = 0;
    for (std::int64_t s = 0; s < static_cast<std::int64_t>(max_stages); ++s) {
      const auto n = o.stage_layers[static_cast<std::size_t>(s)];
      if (s < p && n < 1) bad("stage_layers[{}] is {}: each of the {} stages has at least one layer", s, n, p);
      if (s < p && n < v)
        bad("stage_layers[{}] is {}: interleaved, each stage has at least a layer for each of its {} chunks", s, n, v);
      if (s >= p && n != 0) bad("stage_layers[{}] is {}, but the pipeline has {} stages", s, n, p);
      sum = saturating_sum(sum, n);
    }
    if (sum != layers) bad("stage_layers add up to {} layers, but the block has {}", sum, layers);
  } else if (layers < saturating_product(p, v)) {
    bad("the block's {} layers are fewer than {} stages x chunks: each stage has a layer for each chunk", layers,
        saturating_product(p, v));
  }
  if (interleaved && m % p != 0) bad("the interleaved schedule needs micro_batches ({}) a multiple of the stages ({})", m, p);
  return block;
}

/// The forward passes stage r of p runs before its first backward pass, of the m·v it runs (one
/// chunk's each; v = 1 but interleaved): GPipe all of them, 1F1B p - r - 1, interleaved
/// Megatron's 2(p - r - 1) + (v - 1)·p; at most all.
constexpr std::int64_t warmup_passes(pipeline_schedule s, std::int64_t p, std::int64_t r, std::int64_t m, std::int64_t v) {
  if (s != pipeline_schedule::interleaved) v = 1;
  const std::int64_t all = saturating_product(m, v);
  const std::int64_t warm = s == pipeline_schedule::gpipe ? all
                            : s == pipeline_schedule::interleaved
                                ? saturating_sum(saturating_product(2, p - r - 1), saturating_product(v - 1, p))
                                : p - r - 1;
  return warm < all ? warm : all;
}
/// The chunk of a stage's k-th forward (or backward) pass, and its micro-batch, in Megatron's
/// interleaved order: p micro-batches through one chunk, then the next (backward from the last).
constexpr std::int64_t pass_chunk(std::int64_t k, bool backward, std::int64_t p, std::int64_t v) {
  const std::int64_t c = (k / p) % v;
  return backward ? v - 1 - c : c;
}
constexpr std::int64_t pass_micro_batch(std::int64_t k, std::int64_t p, std::int64_t v) { return k / (p * v) * p + k % p; }

/// The layers of each of `p` stages when no stage map is given: `layers / p` each, and one more
/// for each of the rest, given to the middle stages first, then the last, then the first (which
/// also hold the head and loss, and the embedding).
constexpr std::array<std::int64_t, max_stages> even_stage_layers(std::int64_t layers, std::int64_t p) {
  std::array<std::int64_t, max_stages> out{};
  for (std::int64_t s = 0; s < p; ++s) out[static_cast<std::size_t>(s)] = layers / p;
  std::int64_t rest = layers % p;
  for (std::int64_t s = 1; s + 1 < p && rest > 0; ++s, --rest) ++out[static_cast<std::size_t>(s)];
  if (rest > 0) ++out[static_cast<std::size_t>(p - 1)], --rest;
  if (rest > 0) ++out[0];
  return out;
}

/// The report of the pipeline `o` describes (checked by `pipeline_block`, which gave `block`),
/// from the step's `cost` split at that block (a `coster` given the block).
template <std::size_t T, std::size_t O, std::size_t R>
constexpr pipeline_report pipeline_of(const plan<T, O>& step, const propagation<T, R>&, const pipeline_options& o,
                                      const cluster& c, const step_cost& cost, std::int64_t block) {
  const auto bad = [](const char* format, std::int64_t a = 0, std::int64_t b = 0, std::int64_t d = 0) {
    pipeline_error(format, a, b, d);
  };
  const std::int64_t p = step.mesh().dim_size(o.mesh_dim);
  const auto layers = static_cast<std::int64_t>(step.block_at(static_cast<std::size_t>(block)).count);
  const std::int64_t m = o.micro_batches, v = o.chunks;
  const bool interleaved = o.schedule == pipeline_schedule::interleaved;
  bool mapped = false;
  for (auto n : o.stage_layers) mapped = mapped || n != 0;
  const std::array<std::int64_t, max_stages> per_stage = mapped ? o.stage_layers : even_stage_layers(layers, p);
  const split_part &before = cost.part(0), &body = cost.part(1), &after = cost.part(2);
  const tied_part& tied = cost.tied();

  pipeline_report out;
  out.count_ = static_cast<std::size_t>(p);
  out.micro_batches_ = m;
  out.boundary_bytes_ = cost.boundary_bytes();
  const auto share = [&](std::int64_t total, std::int64_t n) {  // a saturated total stays saturated
    return total == std::numeric_limits<std::int64_t>::max() ? total : total / layers * n;
  };
  // floor(total × l / layers) for 0 <= l <= layers, without overflow
  const auto up_to = [&](std::int64_t total, std::int64_t upto) -> std::int64_t {
    if (upto == layers) return total;
    const std::int64_t q = total / layers, rest = total % layers;
    if (rest == 0 || upto <= std::numeric_limits<std::int64_t>::max() / rest) return q * upto + rest * upto / layers;
    const double x = static_cast<double>(rest) * (static_cast<double>(upto) / static_cast<double>(layers));
    return q * upto + (x < static_cast<double>(rest) ? static_cast<std::int64_t>(x) : rest - 1);
  };
  // The part of `total` in layers [from, to): a saturated total stays saturated on each stage
  const auto between = [&](std::int64_t total, std::int64_t from, std::int64_t to) -> std::int64_t {
    if (total == std::numeric_limits<std::int64_t>::max()) return to > from ? total : 0;
    return up_to(total, to) - up_to(total, from);
  };
  const auto sum3 = [](std::int64_t a, std::int64_t b, std::int64_t d) {
    return detail::saturating_sum(detail::saturating_sum(a, b), d);
  };
  std::int64_t first = 0, done = 0;  // done: the layers of the stages before
  double slowest = 0, slowest_optimizer = 0;
  for (std::int64_t s = 0; s < p; ++s) {
    auto& st = out.stages_[static_cast<std::size_t>(s)];
    const std::int64_t n = per_stage[static_cast<std::size_t>(s)];
    const bool head = s == 0, tail = s == p - 1;
    const auto extra = [&](std::int64_t split_part::*f) {
      return detail::saturating_sum(head ? before.*f : 0, tail ? after.*f : 0);
    };
    const auto extra_seconds = [&](double split_part::*f) { return (head ? before.*f : 0.0) + (tail ? after.*f : 0.0); };
    st.first_layer = first;  // interleaved: its first chunk's first layer, after the stages' first chunks before it
    st.layers = n;
    first += interleaved ? n / v + (n % v != 0) : n;
    const bool copy = tail && p > 1;  // the last stage's copy of the tied parameters
    st.parameters = sum3(share(body.parameters, n), extra(&split_part::parameters), copy ? tied.parameters : 0);
    st.gradients = sum3(share(body.gradients, n), extra(&split_part::gradients), copy ? tied.gradients : 0);
    st.optimizer_states =
        sum3(share(body.optimizer_states, n), extra(&split_part::optimizer_states), copy ? tied.optimizer_states : 0);
    st.activations = sum3(share(body.activations, n), extra(&split_part::activations), 0);
    st.flops = sum3(share(body.flops, n), extra(&split_part::flops), 0);
    const double per_layer = body.communication_seconds / static_cast<double>(layers);
    st.communication_seconds = per_layer * static_cast<double>(n) + extra_seconds(&split_part::communication_seconds) +
                               (copy ? tied.communication_seconds : 0.0);
    const std::int64_t forward_sends = v - (tail ? 1 : 0), backward_sends = v - (head ? 1 : 0);
    st.sends = p == 1 ? 0 : forward_sends + backward_sends;  // one stage sends to no other device
    st.send_bytes = detail::saturating_product(st.sends, cost.boundary_bytes());
    if (st.sends > 0 && !c.can_send(o.mesh_dim))
      bad("the pipeline's mesh dim {} sends between stages, but its link has no bandwidth", o.mesh_dim);
    st.send_seconds =
        st.sends > 0 ? c.seconds(o.mesh_dim, static_cast<double>(st.sends), static_cast<double>(st.send_bytes)) : 0.0;
    if (p > 1 && (head || tail) && tied.gradient_bytes > 0) {
      st.tied_gradient_bytes = tied.gradient_bytes;
      st.tied_gradient_seconds = c.seconds(o.mesh_dim, 1.0, static_cast<double>(tied.gradient_bytes));
    }
    st.compute_seconds = c.work_seconds(body.work) / static_cast<double>(layers) * static_cast<double>(n) +
                         (head ? c.work_seconds(before.work) : 0.0) + (tail ? c.work_seconds(after.work) : 0.0);
    st.exposed_communication_seconds =
        !o.overlap_tensor_parallel ? st.communication_seconds
        : st.communication_seconds > st.compute_seconds ? st.communication_seconds - st.compute_seconds : 0.0;
    for (std::size_t k = 0; k < collective_count; ++k) {
      auto& e = st.collectives[k];
      for (std::size_t d = 0; d < max_mesh_ndim; ++d) {
        const auto &in = body.collectives[k][d], &first_part = before.collectives[k][d], &last_part = after.collectives[k][d];
        // The block's by layers up to this stage's end, less those before it: the stages' counts
        // and bytes add up to the block's (a reshard of one run only, such as the first run's
        // entry, is spread over the layers like the rest, its count in whole collectives).
        const auto count = static_cast<std::int64_t>(in.count);
        e.count += static_cast<std::size_t>(between(count, done, done + n)) + (head ? first_part.count : 0) +
                   (tail ? last_part.count : 0);
        e.bytes = sum3(e.bytes, between(in.bytes, done, done + n),
                       detail::saturating_sum(head ? first_part.bytes : 0, tail ? last_part.bytes : 0));
        e.seconds += in.seconds / static_cast<double>(layers) * static_cast<double>(n) + (head ? first_part.seconds : 0.0) +
                     (tail ? last_part.seconds : 0.0);
        if (copy) {
          e.count += tied.collectives[k][d].count;
          e.bytes = detail::saturating_sum(e.bytes, tied.collectives[k][d].bytes);
          e.seconds += tied.collectives[k][d].seconds;
        }
      }
    }
    done += n;
    st.collectives[static_cast<std::size_t>(collective::send_recv)] = {static_cast<std::size_t>(st.sends), st.send_bytes,
                                                                       st.send_seconds};
    st.forward_seconds = c.work_seconds(body.forward_work) / static_cast<double>(layers) * static_cast<double>(n) +
                         (head ? c.work_seconds(before.forward_work) : 0.0) + (tail ? c.work_seconds(after.forward_work) : 0.0);
    st.reduction_seconds = body.reduction_seconds / static_cast<double>(layers) * static_cast<double>(n) +
                           extra_seconds(&split_part::reduction_seconds) + (copy ? tied.reduction_seconds : 0.0);
    st.gather_seconds = body.gather_seconds / static_cast<double>(layers) * static_cast<double>(n) +
                        extra_seconds(&split_part::gather_seconds) + (copy ? tied.gather_seconds : 0.0);
    st.optimizer_seconds = c.work_seconds(body.optimizer_work) / static_cast<double>(layers) * static_cast<double>(n) +
                           (head ? c.work_seconds(before.optimizer_work) : 0.0) +
                           (tail ? c.work_seconds(after.optimizer_work) : 0.0) +
                           (copy ? c.work_seconds(tied.optimizer_work) : 0.0);
    // The passes in flight, and the activations they keep: the stage's passes in their order,
    // each keeping its chunk's (the embedding's with the first stage's first chunk, the head's
    // with the last stage's last)
    const std::int64_t all = detail::saturating_product(m, v), warm = warmup_passes(o.schedule, p, s, m, v);
    st.in_flight = static_cast<double>(warm < all ? warm + 1 : all) / static_cast<double>(v);
    const auto chunk_bytes = [&](std::int64_t j) {
      const std::int64_t in_chunk = n / v + (j < n % v ? 1 : 0);
      return sum3(share(body.activations, in_chunk), head && j == 0 ? before.activations : 0,
                  tail && j == v - 1 ? after.activations : 0);
    };
    // After the warm-up, what the passes keep repeats every p·v passes (each adds and frees
    // every chunk p times): the peak falls in the first such period. A saturated sum ends it.
    constexpr std::int64_t saturated = std::numeric_limits<std::int64_t>::max();
    const std::int64_t period = detail::saturating_product(p, v), until = warm < all - period ? warm + period : all;
    std::int64_t held = 0, kept_bytes = 0;
    for (std::int64_t k = 0; k < until && v > 1 && kept_bytes < saturated; ++k) {  // forward k, then backward k - warm
      held = detail::saturating_sum(held, chunk_bytes(pass_chunk(k, false, p, v)));
      if (held > kept_bytes) kept_bytes = held;
      if (k >= warm) held -= chunk_bytes(pass_chunk(k - warm, true, p, v));
    }
    if (v == 1) kept_bytes = detail::saturating_product(st.activations, static_cast<std::int64_t>(st.in_flight));
    st.memory = detail::saturating_sum(st.persistent(), kept_bytes);
    if (st.memory > out.stages_[out.peak_stage_].memory) out.peak_stage_ = static_cast<std::size_t>(s);
    if (st.micro_batch_seconds() > slowest) slowest = st.micro_batch_seconds();
  }
  // What each stage's optimizer step waits for: its reductions and gathers less what overlaps
  // (the last backward pass and the cool-down before the first stage's ends; the first forward
  // pass and the warm-up before it), then its kernels.
  double slowest_forward = 0, slowest_backward = 0;
  for (std::int64_t s = 0; s < p; ++s) {
    const auto& st = out.stages_[static_cast<std::size_t>(s)];
    if (st.micro_batch_seconds() == slowest) {
      slowest_forward = st.forward_seconds;
      slowest_backward = st.compute_seconds - st.forward_seconds;
    }
  }
  for (std::int64_t s = 0; s < p; ++s) {
    auto& st = out.stages_[static_cast<std::size_t>(s)];
    const double wait = static_cast<double>(s) / static_cast<double>(v);
    const double behind_backward = o.overlap_grad_reduce ? st.compute_seconds - st.forward_seconds + wait * slowest_backward : 0;
    const double behind_forward = o.overlap_param_gather ? st.forward_seconds + wait * slowest_forward : 0;
    st.exposed_reduction_seconds = st.reduction_seconds > behind_backward ? st.reduction_seconds - behind_backward : 0;
    st.exposed_gather_seconds = st.gather_seconds > behind_forward ? st.gather_seconds - behind_forward : 0;
    st.optimizer_seconds += st.exposed_reduction_seconds + st.exposed_gather_seconds + st.tied_gradient_seconds;
    if (st.optimizer_seconds > slowest_optimizer) slowest_optimizer = st.optimizer_seconds;
  }
  out.bubble_ = static_cast<double>(p - 1) / (static_cast<double>(v) * static_cast<double>(m));
  out.ideal_ = static_cast<double>(m) * slowest + slowest_optimizer;
  out.step_ = (static_cast<double>(m) + static_cast<double>(p - 1) / static_cast<double>(v)) * slowest + slowest_optimizer;
  if (out.step_ > 0)
    out.mfu_ = static_cast<double>(cost.model_flops()) * static_cast<double>(m) / static_cast<double>(p) /
               (out.step_ * c.peak_flops);
  return out;
}

}  // namespace detail

/// Step `step` propagated as `r`, its repeated block split over the stages of `o.mesh_dim`, on
/// cluster `c` (see the file comment).
template <std::size_t T, std::size_t O, std::size_t R>
constexpr pipeline_report pipeline(const plan<T, O>& step, const propagation<T, R>& r, const pipeline_options& o,
                                   const cluster& c) {
  const std::int64_t block = detail::pipeline_block(step, r, o);
  detail::coster<T, O, R> k(step, r, nullptr, block);
  k.resume(static_cast<std::size_t>(-1));
  return detail::pipeline_of(step, r, o, c, k.result(c), block);
}

/// The same on 8-GPU H100 nodes (`h100_cluster` of the plan's mesh).
template <std::size_t T, std::size_t O, std::size_t R>
constexpr pipeline_report pipeline(const plan<T, O>& step, const propagation<T, R>& r, const pipeline_options& o) {
  return pipeline(step, r, o, h100_cluster(step.mesh()));
}

}  // namespace ctspmd::model

#endif
