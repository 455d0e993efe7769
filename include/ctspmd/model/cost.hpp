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
/// **Memory** (`memory()`), by category:
/// - parameters: the plan's trainable tensors as laid out (ZeRO-3: as their optimizer states,
///   sharded over the data-parallel mesh dim), in the plan's element size;
/// - gradients: one buffer per parameter, in `training_options::gradient_element_bytes` (ZeRO-2
///   and 3: sharded as the optimizer states);
/// - optimizer states: the moments and master weights the step's `adamw`s read, as laid out;
/// - activations: the forward tensors a grad operator reads, kept from forward for backward (an
///   operand a grad rule reads only for its shape, such as `add_grad`'s x and y, is not among
///   its recipe's inputs and is not kept). A grad operator reads an input as the forward
///   operator read it; where that is the input's own layout, they are one buffer, as is an
///   `assign` that moves nothing and its input. A repeated block keeps one set per run.
/// - peak: the persistent categories plus the largest sum of live tensors over the step in
///   program order (a tensor lives from the operator that writes it, or its first reader for a
///   plan input, to its last reader), with the operator and phase where it falls. A block's
///   operators are taken at their worst run: in forward its last (every earlier run's kept
///   activations live), in backward its first. The optimizer updates in place: its phase holds
///   the persistent categories only. Parameters' gradients are accumulated into their buffers
///   (not transients); flash_attention's softmax output takes no memory unless returned.
///
/// `training_options` choose what is kept:
/// - `recompute::selective`: the outputs of the plan's `recomputable` operators are not kept;
///   they live again in backward from their first reader there, and those operators' FLOPs and
///   forward collectives count again (backward phase).
/// - `recompute::full`: of a repeated forward block, only each run's input is kept; a run's
///   tensors live again in its backward run (from its start), and its forward operators' FLOPs
///   and collectives count again.
/// - Under sequence parallelism (an `assign` that all-gathers a forward input, Megatron's `f`),
///   a grad operator's read of the gathered tensor is counted as a read of the shard (kept
///   instead), gathered again in backward: the all-gather counts again, backward (not under
///   full recomputation, which gathers it again anyway). `keep_gathered_inputs` keeps the
///   gathered tensor instead.
///
/// **Collectives** (`collectives(phase, kind)`): the propagation's reshards, plus what the step
/// sends beyond them: the recomputed forward's (above); vocabulary-parallel cross entropy's
/// (`c_softmax_with_cross_entropy`: three all-reduces of a float per token over the mesh dims
/// that shard the vocabulary, the max, the target logit and the sum, in forward); and ZeRO-3's:
/// each parameter all-gathered from its shard before its forward use and again for backward,
/// and no all-gather of the updated parameter after the optimizer step (its gradient's
/// reduce-scatter stays). Local slices and local partials send nothing and take no time. An
/// all-reduce over a product group of mesh dims (`reshard::group`) counts under its first mesh
/// dim, the outermost, and takes that dim's link: in a cluster of nodes, the slowest.
///
/// **FLOPs** (`flops(phase)`), per device, are each operator's rule's (rules/kit/cost_traits.hpp), from
/// the local shapes of its inputs as it read them (after their reshards) and of its outputs: a
/// matmul or bmm 2·(x's elements)·(y's output length), which is 2mnk; flash_attention 4·(q's
/// elements)·(k's length), halved when causal; their grads twice their forward (the convention of
/// model FLOPs); views, data movement and reshard points (reshape, transpose, assign, slice,
/// concat, gathers, embeddings, ...) none; any other operator one per output element. `model_flops()` is forward + backward; `hardware_flops()` adds the
/// recomputed forward and the optimizer.
///
/// **Time** (`compute_seconds()`, `communication_seconds()`, `step_seconds()`,
/// `overlapped_step_seconds()`, `mfu()`): a `cluster` gives per mesh dim the links' bandwidth
/// (bytes a device sends a second) and latency, and the device's peak FLOP/s; a collective of
/// B bytes (the ring bytes the report gives) on mesh dim m takes latency + B / (bandwidth x
/// communication efficiency), compute takes hardware FLOPs / (peak x compute efficiency). The
/// step takes compute + communication without overlap, the larger of the two with perfect
/// overlap; MFU is model FLOPs / (step time x peak). `h100_cluster(mesh)` describes 8-GPU H100
/// nodes: NVLink (450 GB/s, 5 us) for the mesh's last dims as long as their product fits in a
/// node, InfiniBand (50 GB/s per GPU, 10 us) for the others, 989.4 dense bf16 TFLOP/s.
///
/// A size unknown until run time (-1) is an error: costs need every size. A figure that overflows
/// int64 saturates at its largest value, and so does every sum it enters (compare with
/// `std::numeric_limits<std::int64_t>::max()`; the JSON tool lists such figures under
/// "saturated").

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/model/cluster.hpp>
#include <ctspmd/model/propagate.hpp>

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
  /// Forward and backward collectives by kind and mesh dim; the optimizer's by mesh dim.
  collective_total collectives[collective_count][max_mesh_ndim] = {};
  collective_total optimizer_sends[max_mesh_ndim] = {};
  double communication_seconds = 0, optimizer_communication_seconds = 0;
};

namespace detail {
template <std::size_t T, std::size_t O, std::size_t R>
class coster;
}  // namespace detail

/// The cost of a training step on a cluster (see the file comment): `cost(step, propagation, cluster)`.
class step_cost {
 public:
  constexpr const memory_report& memory() const noexcept { return memory_; }

  /// The bytes forward block `b` keeps for backward, all runs (`kept_tensors` lists them).
  constexpr std::int64_t kept_in_block(std::size_t b) const {
    if (b >= max_blocks) raise(make_error(error_kind::invalid_argument, "step_cost", "block {} is out of range", b));
    return kept_in_block_[b];
  }

  /// FLOPs a device computes in phase `ph` (backward: with the recomputed forward, see
  /// `recompute_flops`, excluded).
  constexpr std::int64_t flops(phase ph) const noexcept { return flops_[static_cast<std::size_t>(ph)]; }
  constexpr std::int64_t recompute_flops() const noexcept { return recompute_flops_; }
  constexpr std::int64_t model_flops() const noexcept {
    return detail::saturating_sum(flops(phase::forward), flops(phase::backward));
  }
  constexpr std::int64_t hardware_flops() const noexcept {
    return detail::saturating_sum(detail::saturating_sum(model_flops(), recompute_flops_), flops(phase::optimizer));
  }

  /// The collectives of phase `ph` and `kind` (on mesh dim `m`, or all).
  constexpr collective_total collectives(phase ph, collective kind, std::int64_t m) const {
    if (m < 0 || m >= static_cast<std::int64_t>(max_mesh_ndim))
      raise(make_error(error_kind::invalid_argument, "step_cost", "mesh dim {} is out of range", m));
    return table_[static_cast<std::size_t>(ph)][static_cast<std::size_t>(kind)][static_cast<std::size_t>(m)];
  }
  constexpr collective_total collectives(phase ph, collective kind) const noexcept {
    collective_total t;
    for (const auto& e : table_[static_cast<std::size_t>(ph)][static_cast<std::size_t>(kind)]) {
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
    return parts_[i];
  }
  constexpr std::int64_t boundary_bytes() const noexcept { return boundary_bytes_; }

 private:
  template <std::size_t T, std::size_t O, std::size_t R>
  friend class detail::coster;

  constexpr double utilisation(double seconds) const noexcept {
    return seconds > 0 ? static_cast<double>(model_flops()) / (seconds * peak_flops_) : 0;
  }

  memory_report memory_{};
  std::array<std::int64_t, max_blocks> kept_in_block_{};
  std::array<std::int64_t, phase_count> flops_{};
  std::int64_t recompute_flops_ = 0;
  collective_total table_[phase_count][collective_count][max_mesh_ndim] = {};
  double compute_seconds_ = 0, peak_flops_ = 0;
  std::array<split_part, 3> parts_{};
  std::int64_t boundary_bytes_ = 0;
};

namespace detail {

/// Computes a step_cost (see the file comment): a sequence of loops over the plan's operators,
/// tensors and reshard entries, which `resume` runs a budget of items at a time, so that one cost
/// can be spread over several constant expressions (`verified_cost`). A coster refers to its plan
/// and propagation: kept in a constant, they must be constants too.
template <std::size_t T, std::size_t O, std::size_t R>
class coster {
 public:
  using kept_list = kept_tensor_list<T>;
  /// A cost of step `p` propagated as `r` (and, if `kept` is given, the list of the tensors kept
  /// for backward); with `split` a forward block's index, its figures are also split into
  /// `split_part`s (before the block, the block, after it).
  constexpr coster(const plan<T, O>& p, const propagation<T, R>& r, kept_list* kept = nullptr, std::int64_t split = -1)
      : p_(p), r_(r), kept_(kept), options_(p.training()), split_(split) {
    for (auto& m : mirror_) m = -1;
    if (!r_.ok())
      raise(make_error(error_kind::precondition_not_met, "cost", "the plan's propagation failed at operator {}",
                       r_.failed_operator()));
    if (p_.tensor_count() > 0xffff)
      raise(make_error(error_kind::invalid_argument, "cost", "{} tensors: a cost handles at most 65,535",
                       p_.tensor_count()));
    for (size_t b = 0; b < p_.block_count(); ++b)
      if (const auto f = p_.block_at(b).mirror_of; f >= 0)
        mirror_[static_cast<size_t>(f)] = static_cast<std::int8_t>(b);
  }

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
    step_cost out = out_;
    times(out, c);
    return out;
  }

 private:
  using size_t = std::size_t;
  static constexpr std::int32_t none = -1;
  /// An operator whose output is its input's buffer unless it moved data: a view, or a reshard
  /// point (`assign`), whose all-gather is Megatron's f (rules/kit/cost_traits.hpp).
  constexpr bool is_view(size_t i) const {
    const auto k = p_.op_at(i).cost.kind;
    return k == cost_kind::view || k == cost_kind::communication;
  }
  constexpr bool is_reshard_point(size_t i) const { return p_.op_at(i).cost.kind == cost_kind::communication; }
  /// True if operator i runs rule `Rule`.
  template <class Rule>
  constexpr bool runs_rule(size_t i) const {
    return p_.op_at(i).cost.rule == rules::index_of<Rule>;
  }
  enum flag : std::uint8_t {
    excluded = 1,
    read_in_mirror = 2,
    gathered_again = 4,  ///< kept as `source_`'s copy, gathered again in backward
    read_gathered = 8,   ///< a copy kept as read, after an all-gather
    read_moved = 16,     ///< a copy kept as read, after another collective
    is_kept = 32,        ///< kept from forward for backward
  };
  /// Per operator: one of its reshards sends data; one all-gathers.
  enum op_flag : std::uint8_t { moves = 1, gathers = 2 };

  // ---- where each operator runs, and how often ----
  constexpr void map_op(size_t i) {
    first_entry_[i] = -1;
    block_of_[i] = -1;
    for (size_t b = 0; b < p_.block_count(); ++b)
      if (i >= p_.block_at(b).first_op && i < p_.block_at(b).end_op) block_of_[i] = static_cast<std::int8_t>(b);
  }
  constexpr std::int64_t runs(size_t op) const {
    return block_of_[op] < 0 ? 1 : static_cast<std::int64_t>(p_.block_at(static_cast<size_t>(block_of_[op])).count);
  }
  /// The forward block operator `op` is in, or -1 (a backward block's operators: -1).
  constexpr std::int64_t forward_block(size_t op) const {
    if (block_of_[op] < 0 || p_.block_at(static_cast<size_t>(block_of_[op])).mirror_of >= 0) return -1;
    return block_of_[op];
  }

  // ---- the parts of a split step (see `split_part`) ----
  /// The part tensor t is declared in.
  constexpr size_t part_of_tensor(size_t t) const {
    const auto& b = p_.block_at(static_cast<size_t>(split_));
    return t <= b.input.index ? 0 : t < b.end_tensor ? 1 : 2;
  }
  /// The part operator i belongs to: the block's and its backward pass's operators are the
  /// block's; other forward operators before or after it; backward ones mirrored (the backward
  /// of what follows the block runs before its backward pass); an optimizer operator its
  /// parameter's (`optimizer_part`).
  constexpr size_t part_of_op(size_t i) const {
    const auto& b = p_.block_at(static_cast<size_t>(split_));
    const auto own = block_of_[i];
    if (own == split_ || (own >= 0 && p_.block_at(static_cast<size_t>(own)).mirror_of == split_)) return 1;
    const auto& op = p_.op_at(i);
    if (op.phase == phase::forward) return i < b.first_op ? 0 : 2;
    if (op.phase == phase::backward) {
      const auto m = mirror_[static_cast<size_t>(split_)];
      return m < 0 || i < p_.block_at(static_cast<size_t>(m)).first_op ? 2 : 0;
    }
    return optimizer_part(i);
  }
  /// The part of the parameter optimizer operator i updates: its first input is the parameter,
  /// its gradient or state, or what an earlier optimizer operator made of one (a ZeRO shard an
  /// `assign` sliced, the updated shard an `assign` gathers back); an operator without inputs
  /// is the last part's.
  constexpr size_t optimizer_part(size_t i) const {
    for (;;) {
      const auto& op = p_.op_at(i);
      if (op.inputs.empty()) return 2;
      const auto& x = p_.tensor_at(op.inputs[0]);
      if (!x.trainable && x.role_of >= 0 && (x.role == tensor_role::gradient || x.role == tensor_role::optimizer_state))
        return part_of_tensor(static_cast<size_t>(x.role_of));
      if (x.trainable || x.producer < 0 || p_.op_at(static_cast<size_t>(x.producer)).phase != phase::optimizer)
        return part_of_tensor(op.inputs[0]);
      i = static_cast<size_t>(x.producer);  // an earlier operator: the walk ends
    }
  }
  constexpr split_part* part_of(size_t i) { return split_ < 0 ? nullptr : &out_.parts_[part_of_op(i)]; }

  // ---- sizes ----
  /// Elements of tensor t's largest local part under layout `a`: each dim's largest part (the
  /// cost's hottest function).
  constexpr std::int64_t local_elements(size_t t, const tensor_dist_attr& a) const {
    const auto& info = p_.tensor_at(t);
    std::int64_t n = 1;
    for (size_t d = 0; d < info.shape.size(); ++d) {
      const std::int64_t size = info.shape.data()[d], parts = a.parts(d);
      if (size < 0)
        raise(make_error(error_kind::invalid_argument, "cost",
                         "tensor {} has a size unknown until run time at dim {}: costs need every size", t, d));
      n = saturating_product(n, (size + parts - 1) / parts);
    }
    return n;
  }
  /// The same in the layout propagation gave t (counted once, by `measure_tensor`).
  constexpr std::int64_t local_elements(size_t t) const {
    return elements_[t] >= 0 ? elements_[t] : local_elements(t, r_.attr({t}));
  }
  constexpr void measure_tensor(size_t t) {
    const auto& info = p_.tensor_at(t);
    canon_[t] = static_cast<std::uint16_t>(t);
    state_[t] = 0xffff;
    start_[t] = last_fwd_[t] = first_bwd_[t] = last_bwd_[t] = none;
    const bool param_gradient = info.role == tensor_role::gradient && info.role_of >= 0 &&
                                p_.tensor_at(static_cast<size_t>(info.role_of)).trainable;
    const bool persistent = info.trainable || param_gradient || info.role == tensor_role::optimizer_state;
    flags_[t] = persistent || info.role == tensor_role::first_run_layout ? excluded : 0;
    elements_[t] = -1;
    if (!info.shape.empty() && info.role != tensor_role::first_run_layout) elements_[t] = local_elements(t, r_.attr({t}));
    bytes_[t] = elements_[t] < 0 ? 0 : saturating_product(elements_[t], info.element_bytes);
    if (split_ >= 0 && t == p_.block_at(static_cast<size_t>(split_)).output.index) out_.boundary_bytes_ = bytes_[t];
  }

  // ---- persistent memory: parameters, their gradients, optimizer states ----
  /// Operator i's buffers: an unreturned softmax takes no memory; an optimizer's states and its
  /// parameter's gradient.
  constexpr void op_buffers(size_t i) {
    auto& m = out_.memory_;
    const std::int64_t stage = options_.stage();
    const auto& op = p_.op_at(i);
    if (runs_rule<rules::flash_attention>(i) && op.outputs.size() > 1 &&
        !op.attributes.template get<rules::flash_attention_attributes>().return_softmax)
      bytes_[op.outputs[1]] = 0;
    if (op.phase != phase::optimizer || !runs_rule<rules::adamw>(i)) return;
    const auto moment = op.inputs[3];
    const auto param = static_cast<size_t>(p_.tensor_at(moment).role_of);
    state_[param] = moment;
    const std::int64_t times = runs(i);
    const std::int64_t shard = local_elements(moment);  // elements of the state's layout
    const std::int64_t whole = local_elements(param);
    const std::int64_t gradients =
        saturating_product(times, saturating_product(stage >= 2 ? shard : whole, p_.tensor_at(op.inputs[1]).element_bytes));
    m.gradients = saturating_sum(m.gradients, gradients);
    std::int64_t states = saturating_sum(bytes_[op.inputs[3]], bytes_[op.inputs[4]]);
    if (op.inputs.size() > 8) states = saturating_sum(states, bytes_[op.inputs[8]]);
    m.optimizer_states = saturating_sum(m.optimizer_states, saturating_product(times, states));
    if (auto* part = part_of(i)) {
      part->gradients = saturating_sum(part->gradients, gradients);
      part->optimizer_states = saturating_sum(part->optimizer_states, saturating_product(times, states));
    }
  }
  constexpr void parameter(size_t t) {
    const auto& info = p_.tensor_at(t);
    if (!info.trainable) return;
    const std::int64_t elements =
        options_.stage() == 3 && state_[t] != 0xffff ? local_elements(t, r_.attr({state_[t]})) : local_elements(t);
    const std::int64_t bytes = saturating_product(declared_runs(t), saturating_product(elements, info.element_bytes));
    out_.memory_.parameters = saturating_sum(out_.memory_.parameters, bytes);
    if (split_ >= 0) {
      auto& part = out_.parts_[part_of_tensor(t)];
      part.parameters = saturating_sum(part.parameters, bytes);
    }
  }
  /// Runs of the block whose body declares tensor t (1 outside blocks).
  constexpr std::int64_t declared_runs(size_t t) const {
    for (size_t b = 0; b < p_.block_count(); ++b) {
      const auto& k = p_.block_at(b);
      if (k.mirror_of < 0 && t > k.input.index && t < k.end_tensor) return static_cast<std::int64_t>(k.count);
    }
    return 1;
  }

  // ---- one buffer, several tensors ----
  /// A kept input is the tensor itself where it was read in its own layout; an `assign` or a
  /// reshape that moved nothing gives a view of its input. A tensor an all-gather made, by an
  /// `assign` or by resharding an operator's input, is kept as its source and gathered again in
  /// backward (unless `keep_gathered_inputs`, or a full recomputation gathers it again anyway).
  constexpr void reshard_flags(size_t e) {
    const auto& s = r_.reshard_at(e);
    if (first_entry_[s.op] < 0) first_entry_[s.op] = static_cast<std::int32_t>(e);
    if (!moves_data(s.kind)) return;
    op_flags_[s.op] |= s.kind == collective::all_gather ? moves | gathers : moves;
    const auto& op = p_.op_at(s.op);
    if (!s.on_output && s.operand < op.saved.size() && op.saved[s.operand] != 0xffff)
      flags_[op.saved[s.operand]] |= s.kind == collective::all_gather ? read_gathered : read_moved;
  }
  constexpr void alias(size_t i) {
    const auto& op = p_.op_at(i);
    if (op.phase != phase::forward) return;
    const bool regather = !options_.keep_gathered_inputs && !(options_.recompute == recompute::full && forward_block(i) >= 0);
    for (size_t k = 0; k < op.saved.size(); ++k) {
      const auto s = op.saved[k];
      if (s == 0xffff) continue;
      if (r_.attr({s}) == r_.attr({op.inputs[k]})) {
        canon_[s] = canon_[op.inputs[k]];
      } else if (regather && (flags_[s] & (read_gathered | read_moved)) == read_gathered) {
        flags_[s] |= gathered_again;
        source_[s] = canon_[op.inputs[k]];
      }
    }
    if (!is_view(i) || op.inputs.empty() || op.outputs.size() != 1) return;
    const auto in = op.inputs[0], out = op.outputs[0];
    if ((flags_[in] & excluded) != 0 || (flags_[out] & excluded) != 0) return;
    if ((op_flags_[i] & moves) == 0) {
      canon_[out] = canon_[in];
    } else if (is_reshard_point(i) && (op_flags_[i] & gathers) != 0 && regather) {
      flags_[out] |= gathered_again;
      source_[out] = canon_[in];
    }
  }
  /// True if reshard entry `e` is sent again in backward: its operator is recomputed, or it gathers
  /// a tensor kept as its source.
  constexpr bool sent_again(const reshard& e) const {
    if (!moves_data(e.kind)) return false;
    if (recomputed(e.op)) return true;
    const auto& op = p_.op_at(e.op);
    if (op.phase != phase::forward || e.kind != collective::all_gather) return false;
    if (is_reshard_point(e.op) && op.outputs.size() == 1 && (flags_[op.outputs[0]] & gathered_again) != 0) return true;
    return !e.on_output && e.operand < op.saved.size() && op.saved[e.operand] != 0xffff &&
           (flags_[op.saved[e.operand]] & gathered_again) != 0;
  }
  /// The forward block one copy of buffer c per run of which lives (written by its operators, or
  /// its input), or -1.
  constexpr std::int64_t run_block(size_t c) const {
    const auto producer = p_.tensor_at(c).producer;
    if (producer >= 0) return forward_block(static_cast<size_t>(producer));
    return start_[c] >= 0 && producer == plan<T, O>::block_input ? forward_block(static_cast<size_t>(start_[c])) : -1;
  }
  /// True if operator i's forward runs again in backward.
  constexpr bool recomputed(size_t i) const {
    const auto& op = p_.op_at(i);
    if (op.phase != phase::forward) return false;
    if (options_.recompute == recompute::full && forward_block(i) >= 0) return true;
    return options_.recompute == recompute::selective && op.recomputable;
  }

  // ---- lifetimes ----
  constexpr void read(size_t c, size_t i, bool backward) {
    const auto at = static_cast<std::int32_t>(i);
    // Not yet written: a copy kept as read (after a reshard) lives from its forward operator, a plan
    // input from its first reader.
    if (start_[c] == none) start_[c] = p_.tensor_at(c).producer >= 0 ? static_cast<std::int32_t>(p_.tensor_at(c).producer) : at;
    if (!backward) {
      if (at > last_fwd_[c]) last_fwd_[c] = at;
      return;
    }
    if (first_bwd_[c] == none) first_bwd_[c] = at;
    if (at > last_bwd_[c]) last_bwd_[c] = at;
    const auto fb = run_block(c);
    if (fb >= 0 && block_of_[i] >= 0 && block_of_[i] == mirror_[static_cast<size_t>(fb)]) flags_[c] |= read_in_mirror;
  }
  constexpr void block_inputs() {
    for (size_t b = 0; b < p_.block_count(); ++b) {  // a block's input lives from its first operator
      const auto& k = p_.block_at(b);
      start_[canon_[k.input.index]] = static_cast<std::int32_t>(k.first_op);
    }
  }
  constexpr void readers(size_t i) {
    const bool stage3 = options_.stage() == 3;
    const auto& op = p_.op_at(i);
    if (op.phase == phase::optimizer) return;
    const bool backward = op.phase == phase::backward;
    for (auto t : op.outputs)
      if (start_[canon_[t]] == none) start_[canon_[t]] = static_cast<std::int32_t>(i);
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const auto t = op.inputs[k];
      if (stage3 && p_.tensor_at(t).trainable) {  // ZeRO-3: the gathered parameter, while in use
        delta_[i] = saturating_sum(delta_[i], bytes_[t]);
        delta_[i + 1] = saturating_sum(delta_[i + 1], -bytes_[t]);
      }
      const auto c = canon_[t];
      if ((flags_[c] & excluded) != 0 || bytes_[c] == 0 || (k < 32 && ((op.shape_only >> k) & 1) != 0)) continue;
      read(c, i, backward);
      if (backward && (flags_[c] & gathered_again) != 0) read(source_[c], i, true);  // the shard is what was kept
    }
  }
  constexpr void live(std::int32_t from, std::int32_t to, std::int64_t bytes) {
    delta_[static_cast<size_t>(from)] = saturating_sum(delta_[static_cast<size_t>(from)], bytes);
    delta_[static_cast<size_t>(to) + 1] = saturating_sum(delta_[static_cast<size_t>(to) + 1], -bytes);
  }
  constexpr void lifetime(size_t c) {
    auto& m = out_.memory_;
    if (canon_[c] != c || (flags_[c] & excluded) != 0 || bytes_[c] == 0 || start_[c] == none) return;
    const std::int64_t w = bytes_[c];
    const auto start = start_[c];
    const std::int32_t end_fwd = last_fwd_[c] > start ? last_fwd_[c] : start;
    const auto& info = p_.tensor_at(c);
    const bool in_forward = p_.op_at(static_cast<size_t>(start)).phase == phase::forward;
    if (!in_forward || last_bwd_[c] == none) {
      live(start, last_bwd_[c] > end_fwd ? last_bwd_[c] : end_fwd, w);
      return;
    }
    const auto fb = run_block(c);
    const bool block_input = fb >= 0 && canon_[p_.block_at(static_cast<size_t>(fb)).input.index] == c;
    const bool again = (flags_[c] & gathered_again) != 0 ||
                       (info.producer >= 0 && recomputed(static_cast<size_t>(info.producer)) && !block_input);
    if (again) {  // made again in backward: live from its first reader there (a full run's start)
      live(start, end_fwd, w);
      std::int32_t from = first_bwd_[c];
      if (options_.recompute == recompute::full && (flags_[c] & read_in_mirror) != 0)
        from = static_cast<std::int32_t>(p_.block_at(static_cast<size_t>(mirror_[static_cast<size_t>(fb)])).first_op);
      live(from, last_bwd_[c], w);
      return;
    }
    // Kept: the current copy until its last backward reader; a block's other runs' copies over
    // the block's forward and backward passes. (A block's first run's input is its source: if
    // the source is kept too, that copy is the source's.)
    std::size_t copies = 1;
    if (fb >= 0 && (flags_[c] & read_in_mirror) != 0) {
      const auto& f = p_.block_at(static_cast<size_t>(fb));
      copies = f.count - (block_input && (flags_[canon_[f.source.index]] & is_kept) != 0 ? 1 : 0);
      const auto& b = p_.block_at(static_cast<size_t>(mirror_[static_cast<size_t>(fb)]));
      if (copies > 1)
        live(static_cast<std::int32_t>(f.first_op), static_cast<std::int32_t>(b.end_op) - 1,
             saturating_product(static_cast<std::int64_t>(copies - 1), w));
    }
    if (copies == 0) return;
    live(start, last_bwd_[c], w);
    flags_[c] |= is_kept;
    const std::int64_t kept = saturating_product(static_cast<std::int64_t>(copies), w);
    m.activations = saturating_sum(m.activations, kept);
    if (fb >= 0) out_.kept_in_block_[static_cast<size_t>(fb)] = saturating_sum(out_.kept_in_block_[static_cast<size_t>(fb)], kept);
    if (split_ >= 0) {
      const size_t at = fb == split_ ? 1
                        : info.producer >= 0 ? part_of_op(static_cast<size_t>(info.producer))
                                             : part_of_tensor(c);
      out_.parts_[at].activations = saturating_sum(out_.parts_[at].activations, kept);
    }
    if (kept_ != nullptr) kept_->push_back({c, w, copies, fb});
  }
  constexpr void peak(size_t i) {
    now_ = saturating_sum(now_, delta_[i]);
    if (now_ > top_) {
      top_ = now_;
      out_.memory_.peak_op = i;
    }
  }
  constexpr void finish_peak() {
    auto& m = out_.memory_;
    m.peak_phase = p_.op_count() > 0 ? p_.op_at(m.peak_op).phase : phase::forward;
    m.peak = saturating_sum(m.persistent(), top_ > 0 ? top_ : 0);
  }

  // ---- collectives ----
  /// Adds `times` collectives of `bytes` that operator `op` sends.
  constexpr void add(size_t op, phase ph, collective k, std::int64_t m, std::int64_t times, std::int64_t bytes) {
    const auto into = [&](collective_total& e) {
      e.count += static_cast<size_t>(times);
      e.bytes = saturating_sum(e.bytes, saturating_product(times, bytes));
    };
    into(out_.table_[static_cast<size_t>(ph)][static_cast<size_t>(k)][static_cast<size_t>(m)]);
    if (auto* part = part_of(op); part != nullptr && moves_data(k))
      into(ph == phase::optimizer ? part->optimizer_sends[static_cast<size_t>(m)]
                                  : part->collectives[static_cast<size_t>(k)][static_cast<size_t>(m)]);
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
    if (op.phase == phase::forward && runs_rule<rules::c_softmax_with_cross_entropy>(i) && op.outputs.size() == 2) {
      // max, target logit and sum over the vocabulary: a float per token
      const auto logits = op.inputs[0];
      const auto& a = r_.attr({logits});
      const std::int64_t tokens = saturating_product(local_elements(op.outputs[1]), 4);
      for (auto m : a.mesh_dims_of(p_.tensor_at(logits).shape.size() - 1)) {
        const std::int64_t n = a.process_mesh().dim_size(m);
        const std::int64_t twice = saturating_product(2, tokens);  // 2 (n - 1) tokens / n rounded up, no overflow
        add(i, phase::forward, collective::all_reduce, m, 3 * runs(i), twice - twice / n);
      }
    }
    if (stage3 && op.phase == phase::optimizer && runs_rule<rules::adamw>(i)) {
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
      if (group == 0) return;
      const std::int64_t n = group_size(p_.mesh(), group);
      const std::int64_t bytes =
          saturating_product(n - 1, saturating_product(local_elements(param, state), p_.tensor_at(param).element_bytes));
      add(i, phase::forward, collective::all_gather, first, runs(i), bytes);
      add(i, phase::backward, collective::all_gather, first, runs(i), bytes);
    }
  }

  // ---- FLOPs ----
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
  /// Operator i's FLOPs on a device: its rule's (rules/kit/cost_traits.hpp).
  constexpr std::int64_t op_flops(size_t i) const {
    local_operands in, out;
    local_operands_of(i, in, out);
    return p_.op_at(i).flops(in, out);
  }
  constexpr void count_flops(size_t i) {
    const std::int64_t f = saturating_product(op_flops(i), runs(i));
    auto& total = out_.flops_[static_cast<size_t>(p_.op_at(i).phase)];
    total = saturating_sum(total, f);
    if (recomputed(i)) out_.recompute_flops_ = saturating_sum(out_.recompute_flops_, f);
    if (auto* part = part_of(i)) {
      auto& into = p_.op_at(i).phase == phase::optimizer ? part->optimizer_flops : part->flops;
      into = saturating_sum(into, recomputed(i) ? saturating_product(2, f) : f);
    }
  }

  // ---- time ----
  static constexpr void times(step_cost& out, const cluster& c) {
    c.check();
    out.peak_flops_ = c.peak_flops;
    out.compute_seconds_ = c.compute_seconds(static_cast<double>(out.hardware_flops()));
    for (size_t ph = 0; ph < phase_count; ++ph)
      for (size_t k = 0; k < collective_count; ++k)
        for (size_t m = 0; m < max_mesh_ndim; ++m) {
          auto& e = out.table_[ph][k][m];
          if (e.count == 0 || !moves_data(static_cast<collective>(k))) continue;
          e.seconds = c.seconds(static_cast<std::int64_t>(m), static_cast<double>(e.count), static_cast<double>(e.bytes));
        }
    for (auto& part : out.parts_)
      for (size_t m = 0; m < max_mesh_ndim; ++m)
        for (size_t k = 0; k <= collective_count; ++k) {  // k == collective_count: the optimizer's
          auto& e = k < collective_count ? part.collectives[k][m] : part.optimizer_sends[m];
          if (e.count == 0) continue;
          e.seconds = c.seconds(static_cast<std::int64_t>(m), static_cast<double>(e.count), static_cast<double>(e.bytes));
          (k < collective_count ? part.communication_seconds : part.optimizer_communication_seconds) += e.seconds;
        }
  }

  // ---- the loops, in order ----
  enum class loop : std::uint8_t {
    ops,            ///< map_op
    tensors,        ///< measure_tensor
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
      case loop::tensors: return measure_tensor(i);
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

  const plan<T, O>& p_;
  const propagation<T, R>& r_;
  kept_list* kept_;
  training_options options_;
  std::int64_t split_ = -1;  ///< the forward block whose parts are told apart, or -1
  step_cost out_{};
  loop loop_ = loop::ops;
  size_t cursor_ = 0;
  std::int64_t now_ = 0, top_ = -1;  ///< the live bytes at the operator `peak` is at, and the largest
  // Per tensor and per operator (the first tensor_count / op_count entries are used). Built-in
  // arrays: both compilers evaluate an element's access several times faster than through
  // std::array's operator[] (a function call in constant evaluation), and the loops are mostly
  // such accesses.
  template <class V, size_t N>
  using slots = V[N == 0 ? 1 : N];
  slots<std::int64_t, T> bytes_{}, elements_{};  ///< elements_: of the local part, or -1 (not counted)
  slots<std::uint16_t, T> canon_{}, state_{}, source_{};
  slots<std::int32_t, T> start_{}, last_fwd_{}, first_bwd_{}, last_bwd_{};
  slots<std::uint8_t, T> flags_{};
  slots<std::int64_t, O + 1> delta_{};
  slots<std::int8_t, O> block_of_{};
  slots<std::uint8_t, O> op_flags_{};
  slots<std::int32_t, O> first_entry_{};  ///< the operator's first reshard entry, or -1
  slots<std::int8_t, max_blocks> mirror_{};
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

/// The cost of the plan `verified<MakePlan, Options, MaxReshards>` propagates, after part `Part`
/// of `verified_cost` (parts of `Budget` weight): each part is its own constant expression.
template <auto MakePlan, propagate_options Options, std::size_t R, std::size_t Budget, std::size_t Part>
inline constexpr auto cost_part = [] {
  auto k = cost_part<MakePlan, Options, R, Budget, Part - 1>;
  k.resume(Budget);
  return k;
}();
template <auto MakePlan, propagate_options Options, std::size_t R, std::size_t Budget>
inline constexpr auto cost_part<MakePlan, Options, R, Budget, 0> = [] {
  constexpr auto& p = plan_value<MakePlan>;
  using plan_type = std::remove_cvref_t<decltype(p)>;
  coster<plan_type::max_tensors, plan_type::max_ops, R> k(p, finished_propagation<MakePlan, Options, R>());
  k.resume(Budget);
  return k;
}();
/// The parts `verified_cost` takes (computed before them, so that a part that fails with an
/// error does not lead to endless parts).
template <auto MakePlan, propagate_options Options, std::size_t R, std::size_t Budget>
inline constexpr std::size_t cost_parts = [] {
  constexpr auto& p = plan_value<MakePlan>;
  using plan_type = std::remove_cvref_t<decltype(p)>;
  return coster<plan_type::max_tensors, plan_type::max_ops, R>::resumes(p, finished_propagation<MakePlan, Options, R>(),
                                                                        Budget);
}();
/// The finished cost (`Budget`: each part's weight; tests make it small to take many parts).
template <auto MakePlan, propagate_options Options, std::size_t R, std::size_t Budget = cost_steps_per_part,
          std::size_t Part = 0>
constexpr const auto& finished_cost() {
  if constexpr (Part + 1 < cost_parts<MakePlan, Options, R, Budget> &&
                !cost_part<MakePlan, Options, R, Budget, Part>.finished())
    return finished_cost<MakePlan, Options, R, Budget, Part + 1>();
  else
    return cost_part<MakePlan, Options, R, Budget, Part>;
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
