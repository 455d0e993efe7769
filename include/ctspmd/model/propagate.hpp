#ifndef CTSPMD_MODEL_PROPAGATE_HPP
#define CTSPMD_MODEL_PROPAGATE_HPP
/// \file Propagating a plan's sharding, and the reshard report.
///
/// Operators run in program order. Each one's forward rule runs on its inputs' current dist
/// attributes; what the rule requires of its inputs (`spmd_info::inputs`) is compared with
/// what they hold, and each difference is a reshard. Outputs take the inferred attributes,
/// except annotated ones: then the inputs must be what the rule's backward inference says the
/// annotation needs (so pinning a layout shows its cost upstream), and if forward from those
/// inputs still gives another layout, the output itself is resharded to the annotation.
/// A plan input nobody annotated takes, at its first consumer, what that consumer requires
/// (backward completion), so it costs no reshard.
///
/// A repeated block runs with its input set to its source, then to its previous run's output;
/// as soon as a run leaves every tensor as the run before it did, the remaining runs would
/// repeat it exactly, so its reshards are counted for all of them and propagation moves on
/// (verified once, then by induction). Runs that never settle (each lays its tensors out
/// otherwise than the run before, e.g. alternating between two layouts) are propagated one by
/// one up to `max_unsettled_runs`; a block with more runs than that is an error, so that a
/// count of 2^62 cannot keep propagation running for ever.
///
/// Reshards are reported per mesh dim, with the collective that performs them and the bytes
/// each device sends (model/collective.hpp); a collective over a product group of mesh dims is
/// listed under the first of them, with `group` the set of them all. A change of layout over a
/// group of one device (a mesh dim of size 1: split in one part, partial over one device) moves
/// nothing and is no reshard: it is not reported, counted or timed.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <ctspmd/core/error.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/model/collective.hpp>
#include <ctspmd/model/plan.hpp>
#include <ctspmd/model/staged.hpp>

namespace ctspmd::model {

/// One reshard on one mesh dim.
struct reshard {
  std::size_t op = 0;          ///< operator index
  std::size_t operand = 0;     ///< the input (or, with `on_output`, output) position
  bool on_output = false;      ///< the operator's output, resharded to its annotation
  std::size_t tensor = 0;      ///< tensor index
  std::int64_t mesh_dim = 0;
  collective kind{};
  std::int64_t bytes = 0;      ///< bytes each device sends, per occurrence; -1 if unknown
  /// The mesh dims the collective spans, a bit each (bit m: mesh dim m): `mesh_dim`'s alone, or
  /// a product group's (an all-reduce, reduce-scatter or all-gather over several: see the file
  /// comment).
  std::uint32_t group = 0;
  std::size_t times = 1;       ///< occurrences (runs of its block)
  std::int64_t block = -1;     ///< the block it is in, or -1 (a block's backward pass counts as the block)
  model::phase phase = model::phase::forward;  ///< the phase of its operator
  tensor_dist_attr from{}, to{};
};

namespace detail {
template <std::size_t T, std::size_t O, std::size_t R>
class propagator;

/// A reshard as propagation records it while it runs: its layouts are indices into the
/// propagation's table of distinct layouts (see `propagation`), so that the state copied from one
/// constant expression of `verified` to the next stays small. The `reshard`s are made from these
/// once propagation finishes.
struct reshard_record {
  std::size_t op = 0, operand = 0;
  bool on_output = false;
  std::size_t tensor = 0;
  std::int64_t mesh_dim = 0;
  collective kind{};
  std::int64_t bytes = 0;
  std::uint32_t group = 0;
  std::size_t times = 1;
  std::int64_t block = -1;
  model::phase phase = model::phase::forward;
  std::uint16_t from = 0, to = 0;
};
}  // namespace detail

/// The distinct layouts (dist attrs) a propagation of a plan of `max_tensors` tensors, with at
/// most `max_reshards` distinct reshards, holds: one per tensor and two per reshard at most while
/// every tensor keeps its first layout, at most 1,024. (A plan's tensors share a few: the 9,755
/// tensors of the flat 1,000-operator training step of bench/compile_scaling.cpp have 9.)
constexpr std::size_t max_layouts(std::size_t max_tensors, std::size_t max_reshards) noexcept {
  const std::size_t n = max_tensors + 2 * max_reshards + 1;
  return n < 1024 ? n : 1024;
}

/// The most runs of a repeated block propagated one by one while they still change (see the
/// file comment): far more layers than any model has.
inline constexpr std::size_t max_unsettled_runs = 4096;

/// Options of `propagate`.
struct propagate_options {
  /// Stop running a block once a run repeats the previous one (false: run every repetition,
  /// the cost of verifying layer by layer).
  bool induction = true;
};

/// A propagated plan: every tensor's dist attributes and the reshards, or the error that
/// stopped propagation and the operator it happened at.
template <std::size_t MaxTensors, std::size_t MaxReshards>
class propagation {
 public:
  constexpr bool ok() const noexcept { return status_.ok(); }
  constexpr const error_info& error() const noexcept { return status_.error(); }
  /// Index of the operator propagation failed at, or -1.
  constexpr std::int64_t failed_operator() const noexcept { return failed_op_; }
  /// True if the failure is traced to input `k` of that operator: were its layout replicated,
  /// the rule would run (the inputs of a sharding conflict; none for a shape error).
  constexpr bool failure_involves(std::size_t k) const noexcept { return k < 64 && ((failed_inputs_ >> k) & 1) != 0; }
  /// The first input the failure is traced to, or -1.
  constexpr std::int64_t failed_operand() const noexcept {
    for (std::size_t k = 0; k < 64; ++k)
      if (failure_involves(k)) return static_cast<std::int64_t>(k);
    return -1;
  }

  /// The dist attributes of tensor `t` after propagation.
  constexpr const tensor_dist_attr& attr(tensor_id t) const {
    if (t.index >= tensor_count_)
      raise(make_error(error_kind::invalid_argument, "propagation", "tensor {} is not in the plan", t.index));
    return layouts_[layout_[t.index]];
  }
  constexpr ctspmd::dims_mapping dims_mapping(tensor_id t) const { return attr(t).dims_mapping(); }

  /// The distinct reshards (each with its occurrence count `times`); one operand's collectives
  /// are listed in the order they run (model/collective.hpp: `execution_rank`).
  constexpr std::size_t reshard_entries() const noexcept { return reshard_count_; }
  constexpr const reshard& reshard_at(std::size_t i) const {
    if (i >= reshard_count_)
      raise(make_error(error_kind::invalid_argument, "propagation", "reshard {} is out of range ({})", i, reshard_count_));
    return reshards_[i];
  }

  /// Number of reshards (occurrences), of every kind or of `kind`.
  constexpr std::size_t count() const noexcept { return sum([](const reshard&) { return true; }); }
  constexpr std::size_t count(collective kind) const noexcept {
    return sum([&](const reshard& r) { return r.kind == kind; });
  }
  /// Reshards inside block `b` (all its runs), of every kind or of `kind`.
  constexpr std::size_t count_in_block(std::size_t b) const noexcept {
    return sum([&](const reshard& r) { return r.block == static_cast<std::int64_t>(b); });
  }
  constexpr std::size_t count_in_block(std::size_t b, collective kind) const noexcept {
    return sum([&](const reshard& r) { return r.block == static_cast<std::int64_t>(b) && r.kind == kind; });
  }
  /// Reshards of phase `ph` (of a training step): all, of `kind`, in block `b`, outside every block.
  constexpr std::size_t count(phase ph) const noexcept {
    return sum([&](const reshard& r) { return r.phase == ph; });
  }
  constexpr std::size_t count(phase ph, collective kind) const noexcept {
    return sum([&](const reshard& r) { return r.phase == ph && r.kind == kind; });
  }
  constexpr std::size_t count_in_block(std::size_t b, phase ph, collective kind) const noexcept {
    return sum([&](const reshard& r) { return r.block == static_cast<std::int64_t>(b) && r.phase == ph && r.kind == kind; });
  }
  constexpr std::size_t count_outside_blocks(phase ph, collective kind) const noexcept {
    return sum([&](const reshard& r) { return r.block == -1 && r.phase == ph && r.kind == kind; });
  }
  /// Bytes each device sends for the reshards of phase `ph` and `kind` (in block `b`).
  constexpr std::int64_t bytes(phase ph, collective kind) const noexcept {
    return bytes_where([&](const reshard& r) { return r.phase == ph && r.kind == kind; });
  }
  constexpr std::int64_t bytes_in_block(std::size_t b, phase ph, collective kind) const noexcept {
    return bytes_where([&](const reshard& r) { return r.block == static_cast<std::int64_t>(b) && r.phase == ph && r.kind == kind; });
  }
  /// Reshards outside every block, of `kind`.
  constexpr std::size_t count_outside_blocks(collective kind) const noexcept {
    return sum([&](const reshard& r) { return r.block == -1 && r.kind == kind; });
  }
  /// Bytes each device sends for all reshards of `kind` (-1 if any size is unknown).
  constexpr std::int64_t bytes(collective kind) const noexcept {
    return bytes_where([&](const reshard& r) { return r.kind == kind; });
  }
  /// The same, for the reshards in block `b`.
  constexpr std::int64_t bytes_in_block(std::size_t b, collective kind) const noexcept {
    return bytes_where([&](const reshard& r) { return r.kind == kind && r.block == static_cast<std::int64_t>(b); });
  }

  /// True if block `b` has exactly `expected` reshards over all its runs, all of `kind`;
  /// otherwise an error (a compile error in a static_assert) naming the first reshard of
  /// another kind, with its operator, operand and mesh dim.
  template <class Plan>
  constexpr bool expect_in_block(const Plan& p, std::size_t b, collective kind, std::size_t expected) const {
    for (std::size_t i = 0; i < reshard_count_; ++i) {
      const auto& r = reshards_[i];
      if (r.block != static_cast<std::int64_t>(b) || r.kind == kind) continue;
      raise(make_error(error_kind::precondition_not_met, p.op_at(r.op).name(), unexpected_format(r.kind, r.on_output),
                       r.op, r.operand, r.mesh_dim));
    }
    if (count_in_block(b, kind) != expected)
      raise(make_error(error_kind::precondition_not_met, "propagation", count_format(kind), b, count_in_block(b, kind),
                       expected));
    return true;
  }
  /// The same for the reshards of phase `ph` in block `b` (b = -1: outside every block), as
  /// "this phase sends exactly `expected` collectives of `kind` and nothing else": local slices
  /// and local partials, which send nothing, are not unexpected (unless `kind` is one). The error
  /// names the phase, the operator, the operand and the mesh dim of the first reshard of another
  /// kind.
  template <class Plan>
  constexpr bool expect_in_block(const Plan& p, std::int64_t b, phase ph, collective kind, std::size_t expected) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < reshard_count_; ++i) {
      const auto& r = reshards_[i];
      if (r.block != b || r.phase != ph) continue;
      const bool sends = r.kind != collective::local_slice && r.kind != collective::local_partial;
      if (!sends && r.kind != kind) continue;
      if (r.kind != kind)
        raise(make_error(error_kind::precondition_not_met, p.op_at(r.op).name(), phase_format(ph, r.kind, r.on_output),
                         r.op, r.operand, r.mesh_dim));
      n += r.times;
    }
    if (n != expected)
      raise(make_error(error_kind::precondition_not_met, to_string(ph), count_format(kind), b, n, expected));
    return true;
  }

 private:
  // Messages name the collective in their text (an error's values are integers).
  static constexpr const char* unexpected_format(collective c, bool on_output) {
    constexpr const char* input[] = {
        "operator {}: input {} needs an unexpected all_reduce on mesh dim {}",
        "operator {}: input {} needs an unexpected reduce_scatter on mesh dim {}",
        "operator {}: input {} needs an unexpected all_gather on mesh dim {}",
        "operator {}: input {} needs an unexpected all_to_all on mesh dim {}",
        "operator {}: input {} needs an unexpected local_slice on mesh dim {}",
        "operator {}: input {} needs an unexpected local_partial on mesh dim {}",
        "operator {}: input {} needs an unexpected send_recv on mesh dim {}"};
    constexpr const char* output[] = {
        "operator {}: output {} needs an unexpected all_reduce on mesh dim {}",
        "operator {}: output {} needs an unexpected reduce_scatter on mesh dim {}",
        "operator {}: output {} needs an unexpected all_gather on mesh dim {}",
        "operator {}: output {} needs an unexpected all_to_all on mesh dim {}",
        "operator {}: output {} needs an unexpected local_slice on mesh dim {}",
        "operator {}: output {} needs an unexpected local_partial on mesh dim {}",
        "operator {}: output {} needs an unexpected send_recv on mesh dim {}"};
    static_assert(sizeof input / sizeof *input == collective_count && sizeof output / sizeof *output == collective_count,
                  "one message per collective");
    return (on_output ? output : input)[static_cast<int>(c)];
  }
  static constexpr const char* phase_format(phase ph, collective c, bool on_output) {
    // [phase][output][collective]
    constexpr const char* formats[phase_count][2][collective_count] = {
        {{"forward operator {}: input {} needs an unexpected all_reduce on mesh dim {}",
          "forward operator {}: input {} needs an unexpected reduce_scatter on mesh dim {}",
          "forward operator {}: input {} needs an unexpected all_gather on mesh dim {}",
          "forward operator {}: input {} needs an unexpected all_to_all on mesh dim {}",
          "forward operator {}: input {} needs an unexpected local_slice on mesh dim {}",
          "forward operator {}: input {} needs an unexpected local_partial on mesh dim {}",
          "forward operator {}: input {} needs an unexpected send_recv on mesh dim {}"},
         {"forward operator {}: output {} needs an unexpected all_reduce on mesh dim {}",
          "forward operator {}: output {} needs an unexpected reduce_scatter on mesh dim {}",
          "forward operator {}: output {} needs an unexpected all_gather on mesh dim {}",
          "forward operator {}: output {} needs an unexpected all_to_all on mesh dim {}",
          "forward operator {}: output {} needs an unexpected local_slice on mesh dim {}",
          "forward operator {}: output {} needs an unexpected local_partial on mesh dim {}",
          "forward operator {}: output {} needs an unexpected send_recv on mesh dim {}"}},
        {{"backward operator {}: input {} needs an unexpected all_reduce on mesh dim {}",
          "backward operator {}: input {} needs an unexpected reduce_scatter on mesh dim {}",
          "backward operator {}: input {} needs an unexpected all_gather on mesh dim {}",
          "backward operator {}: input {} needs an unexpected all_to_all on mesh dim {}",
          "backward operator {}: input {} needs an unexpected local_slice on mesh dim {}",
          "backward operator {}: input {} needs an unexpected local_partial on mesh dim {}",
          "backward operator {}: input {} needs an unexpected send_recv on mesh dim {}"},
         {"backward operator {}: output {} needs an unexpected all_reduce on mesh dim {}",
          "backward operator {}: output {} needs an unexpected reduce_scatter on mesh dim {}",
          "backward operator {}: output {} needs an unexpected all_gather on mesh dim {}",
          "backward operator {}: output {} needs an unexpected all_to_all on mesh dim {}",
          "backward operator {}: output {} needs an unexpected local_slice on mesh dim {}",
          "backward operator {}: output {} needs an unexpected local_partial on mesh dim {}",
          "backward operator {}: output {} needs an unexpected send_recv on mesh dim {}"}},
        {{"optimizer operator {}: input {} needs an unexpected all_reduce on mesh dim {}",
          "optimizer operator {}: input {} needs an unexpected reduce_scatter on mesh dim {}",
          "optimizer operator {}: input {} needs an unexpected all_gather on mesh dim {}",
          "optimizer operator {}: input {} needs an unexpected all_to_all on mesh dim {}",
          "optimizer operator {}: input {} needs an unexpected local_slice on mesh dim {}",
          "optimizer operator {}: input {} needs an unexpected local_partial on mesh dim {}",
          "optimizer operator {}: input {} needs an unexpected send_recv on mesh dim {}"},
         {"optimizer operator {}: output {} needs an unexpected all_reduce on mesh dim {}",
          "optimizer operator {}: output {} needs an unexpected reduce_scatter on mesh dim {}",
          "optimizer operator {}: output {} needs an unexpected all_gather on mesh dim {}",
          "optimizer operator {}: output {} needs an unexpected all_to_all on mesh dim {}",
          "optimizer operator {}: output {} needs an unexpected local_slice on mesh dim {}",
          "optimizer operator {}: output {} needs an unexpected local_partial on mesh dim {}",
          "optimizer operator {}: output {} needs an unexpected send_recv on mesh dim {}"}}};
    return formats[static_cast<int>(ph)][on_output ? 1 : 0][static_cast<int>(c)];
  }
  static constexpr const char* count_format(collective c) {
    constexpr const char* formats[] = {"block {} has {} all_reduce reshards, {} expected",
                                       "block {} has {} reduce_scatter reshards, {} expected",
                                       "block {} has {} all_gather reshards, {} expected",
                                       "block {} has {} all_to_all reshards, {} expected",
                                       "block {} has {} local_slice reshards, {} expected",
                                       "block {} has {} local_partial reshards, {} expected",
                                       "block {} has {} send_recv reshards, {} expected"};
    static_assert(sizeof formats / sizeof *formats == collective_count, "one message per collective");
    return formats[static_cast<int>(c)];
  }

  template <std::size_t T, std::size_t O, std::size_t R>
  friend class detail::propagator;

  template <class F>
  constexpr std::int64_t bytes_where(F f) const noexcept {
    std::int64_t total = 0;
    for (std::size_t i = 0; i < reshard_count_; ++i) {
      const auto& r = reshards_[i];
      if (!f(r)) continue;
      if (r.bytes < 0) return -1;
      total = detail::saturating_sum(total, detail::saturating_product(r.bytes, static_cast<std::int64_t>(r.times)));
    }
    return total;
  }
  template <class F>
  constexpr std::size_t sum(F f) const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < reshard_count_; ++i)
      if (f(reshards_[i])) n += reshards_[i].times;
    return n;
  }

  status status_{};
  std::int64_t failed_op_ = -1;
  std::uint64_t failed_inputs_ = 0;  ///< bit k: the failure is traced to input k
  // Every tensor's dist attrs, as an index into `layouts_`, the distinct ones propagation has met
  // (the first: the default dist attr), added to, never changed: a plan's tensors share a few
  // layouts, and a propagation is copied whole from one constant expression of `verified` to the
  // next (a table of layouts costs the compiler a fraction of a dist attr per tensor).
  static constexpr std::size_t layout_capacity = max_layouts(MaxTensors, MaxReshards);
  // (Built-in arrays: constant evaluation reaches their elements faster than through
  // std::array's operator[], a function call there.)
  tensor_dist_attr layouts_[layout_capacity]{};
  std::size_t layout_count_ = 1;
  std::uint16_t layout_[MaxTensors == 0 ? 1 : MaxTensors]{};
  bool known_[MaxTensors == 0 ? 1 : MaxTensors]{};
  detail::reshard_record records_[MaxReshards == 0 ? 1 : MaxReshards]{};  ///< the reshards while propagation runs
  reshard reshards_[MaxReshards == 0 ? 1 : MaxReshards]{};                ///< made from `records_` once it finishes
  std::size_t tensor_count_ = 0, reshard_count_ = 0;
  std::size_t block_records_ = 0;  ///< the entries before the block in progress began
  // Where propagation stands: it can stop after any operator and resume (`verified` spreads a
  // long plan over several constant expressions, each within the compiler's step limit).
  bool finished_ = false;
  std::size_t next_op_ = 0, next_block_ = 0;
  std::size_t run_ = 0;    ///< the run of block `next_block_` in progress (from 1), or 0
  bool changed_ = false;   ///< the run in progress changed a tensor's attrs from the run before
  bool wrote_outside_ = false;  ///< the run in progress laid out a tensor declared outside its block
  std::size_t touched_[MaxReshards == 0 ? 1 : MaxReshards]{};  ///< entries the run in progress added to
  std::size_t touched_count_ = 0;
  // A block whose backward pass a training step verifies: how its runs differ (0: all alike; 1:
  // only the first, whose layouts the plan's `block_info::first_run_at` tensors keep; 2: later
  // ones too), and whether a backward
  // run is using those layouts.
  std::array<std::uint8_t, max_blocks> runs_differ_{};
  bool first_run_in_use_ = false;

 public:
  /// True once propagation has run to the end of the plan or stopped at an error.
  constexpr bool finished() const noexcept { return finished_; }
};

namespace detail {

constexpr bool same_but_times(const reshard_record& a, const reshard_record& b) {
  return a.op == b.op && a.operand == b.operand && a.on_output == b.on_output && a.mesh_dim == b.mesh_dim &&
         a.kind == b.kind && a.group == b.group && a.block == b.block && a.from == b.from && a.to == b.to;
}

}  // namespace detail

/// The distinct reshards a propagation of a plan of `MaxOps` operators holds unless told
/// otherwise: four per operator for small plans, at most 256 more than operators for large ones
/// (a repeated block's reshards are one entry for all its runs).
constexpr std::size_t default_max_reshards(std::size_t max_ops) noexcept {
  return 4 * max_ops < max_ops + 256 ? 4 * max_ops : max_ops + 256;
}

namespace detail {

/// Runs a plan's operators in program order into a `propagation` (see the file comment); can
/// stop after a given number of operator runs and be resumed on the propagation it left.
template <std::size_t T, std::size_t O, std::size_t R>
class propagator {
 public:
  using result_type = propagation<T, R>;
  constexpr propagator(const plan<T, O>& p, result_type& out, propagate_options options) noexcept
      : p_(p), out_(out), options_(options) {}

  /// Sets up `out` to propagate the plan from its first operator.
  constexpr void start() {
    out_.tensor_count_ = p_.tensor_count();
    for (std::size_t t = 0; t < p_.tensor_count(); ++t) {
      if (!p_.tensor_at(t).annotated) continue;
      out_.layout_[t] = layout_index(p_.tensor_at(t).annotation);
      out_.known_[t] = true;
    }
    out_.finished_ = out_.finished_ || p_.op_count() == 0;
  }

  /// Runs at most `budget` operators (each run of a block's operator counts); once propagation
  /// finishes, makes its reshards.
  constexpr void resume(std::size_t budget) {
    for (; budget > 0 && !out_.finished_; --budget) step();
    if (!out_.finished_) return;
    auto& o = out_;
    for (size_t e = 0; e < o.reshard_count_; ++e) {
      const record& r = o.records_[e];
      o.reshards_[e] = {r.op,    r.operand, r.on_output, r.tensor, r.mesh_dim, r.kind,           r.bytes,
                        r.group, r.times,   r.block,     r.phase,  o.layouts_[r.from], o.layouts_[r.to]};
    }
  }

 private:
  using size_t = std::size_t;
  using record = reshard_record;

  constexpr void step() {
    auto& o = out_;
    const bool at_block = o.run_ == 0 && o.next_block_ < p_.block_count() && p_.block_at(o.next_block_).first_op == o.next_op_;
    op_ = o.next_op_;
    if (at_block) {
      const auto& b = p_.block_at(o.next_block_);
      settle(b.source.index);
      if (!o.known_[b.source.index])
        return fail(o.next_op_, make_error(error_kind::invalid_argument, "",
                                           "the block's source (tensor {}) has no dist attributes yet", b.source.index));
      o.run_ = 1;
      o.block_records_ = o.reshard_count_;
      begin_run(b);
      if (b.first_op == b.end_op) return leave_block();  // an empty body: nothing runs
    }
    if (o.run_ == 0) {
      run_op(o.next_op_++, -1);
    } else {
      const auto& b = p_.block_at(o.next_block_);
      run_op(o.next_op_++, static_cast<std::int64_t>(o.next_block_));
      if (o.ok() && o.next_op_ == b.end_op) end_run(b);
    }
    if (!o.ok() || o.next_op_ >= p_.op_count()) o.finished_ = true;
  }

  // A block's run begins: its input takes the source's attrs (first run) or the previous run's
  // output's, and the tensors the body declares, unless annotated, are laid out anew.
  constexpr void begin_run(const block_info& b) {
    auto& o = out_;
    o.touched_count_ = 0;
    o.changed_ = false;
    o.wrote_outside_ = false;
    if (b.mirror_of >= 0) {
      // A backward pass's run k reads the tensors of its forward block's run count - k + 1.
      const auto f = static_cast<size_t>(b.mirror_of);
      if (o.runs_differ_[f] == 2)
        return fail(b.first_op, make_error(error_kind::invalid_argument, "",
                                           "block {} lays out its runs differently after its second run: its backward "
                                           "pass cannot be verified run by run (annotate its input)",
                                           f));
      if (o.run_ == b.count && b.count > 1 && o.runs_differ_[f] == 1) swap_first_run(p_.block_at(f));
    }
    if (o.run_ > 1)
      for (size_t t = b.input.index + 1; t < b.end_tensor; ++t)
        if (!p_.tensor_at(t).annotated) o.known_[t] = false;
    write(b.input.index, o.layout_[o.run_ == 1 ? b.source.index : b.output.index]);
  }
  constexpr void end_run(const block_info& b) {
    auto& o = out_;
    const size_t self = o.next_block_;
    if (o.run_ == 1 && b.first_run_at != 0)  // keep the first run's layouts for the backward pass
      for (size_t k = 0; k < first_run_size(b); ++k) o.layout_[b.first_run_at + k] = o.layout_[first_run_tensor(b, k)];
    if (o.run_ > 1 && o.changed_) o.runs_differ_[self] = o.run_ == 2 ? 1 : 2;
    // A first run that ends with its source's attrs, having laid out nothing outside the block,
    // leaves the second run the state it began with: the second would repeat it exactly.
    const bool repeats_first = o.run_ == 1 && !o.wrote_outside_ && o.layout_[b.output.index] == o.layout_[b.source.index] &&
                               (b.mirror_of < 0 || o.runs_differ_[static_cast<size_t>(b.mirror_of)] == 0);
    if (options_.induction && b.count > 1 && repeats_first) {
      for (size_t t = 0; t < o.touched_count_; ++t) o.records_[o.touched_[t]].times += b.count - 1;
      return leave_block();
    }
    if (options_.induction && o.run_ > 1 && !o.changed_) {
      // This run repeated the previous one: so will the rest (but a backward pass's last run,
      // if its forward block's first run differs). Count its reshards for them.
      const bool last_differs = b.mirror_of >= 0 && o.runs_differ_[static_cast<size_t>(b.mirror_of)] == 1 &&
                                o.run_ < b.count;
      for (size_t t = 0; t < o.touched_count_; ++t)
        o.records_[o.touched_[t]].times += b.count - o.run_ - (last_differs ? 1 : 0);
      if (!last_differs) return leave_block();
      o.run_ = b.count - 1;
    }
    if (o.run_ == b.count) return leave_block();
    if (options_.induction && o.changed_ && o.run_ >= max_unsettled_runs)
      return fail(b.first_op, make_error(error_kind::invalid_argument, "",
                                         "block {} lays out each of its first {} runs otherwise than the run before (of "
                                         "{}): its layouts do not settle; annotate its input",
                                         self, o.run_, b.count));
    ++o.run_;
    o.next_op_ = b.first_op;
    begin_run(b);
  }
  constexpr void leave_block() {
    auto& o = out_;
    if (o.first_run_in_use_) swap_first_run(p_.block_at(static_cast<size_t>(p_.block_at(o.next_block_).mirror_of)));
    o.next_op_ = p_.block_at(o.next_block_).end_op;
    o.run_ = 0;
    ++o.next_block_;
    if (o.next_op_ >= p_.op_count()) o.finished_ = true;
  }

  /// Exchanges forward block f's tensors' layouts with those of its first run.
  static constexpr size_t first_run_size(const block_info& f) {
    return f.end_tensor - f.input.index + f.saved_end - f.saved_begin;
  }
  /// The k-th tensor whose first-run layout block f keeps: its own, then its saved inputs.
  static constexpr size_t first_run_tensor(const block_info& f, size_t k) {
    const size_t own = f.end_tensor - f.input.index;
    return k < own ? f.input.index + k : f.saved_begin + k - own;
  }
  constexpr void swap_first_run(const block_info& f) {
    auto& o = out_;
    for (size_t k = 0; k < first_run_size(f); ++k) {
      const size_t t = first_run_tensor(f, k);
      const std::uint16_t a = o.layout_[t];
      o.layout_[t] = o.layout_[f.first_run_at + k];
      o.layout_[f.first_run_at + k] = a;
    }
    o.first_run_in_use_ = !o.first_run_in_use_;
  }

  /// The dist attrs of tensor t (known or not).
  constexpr const tensor_dist_attr& attrs(size_t t) const { return out_.layouts_[out_.layout_[t]]; }
  /// The index of layout `a` in the propagation's table, added if new.
  constexpr std::uint16_t layout_index(const tensor_dist_attr& a) {
    auto& o = out_;
    for (size_t k = 0; k < o.layout_count_; ++k)
      if (o.layouts_[k] == a) return static_cast<std::uint16_t>(k);
    if (o.layout_count_ == o.layout_capacity) {
      if (o.ok())
        fail(op_, make_error(error_kind::invalid_argument, "", "more than {} distinct layouts in one propagation",
                             o.layout_capacity));
      return 0;
    }
    o.layouts_[o.layout_count_] = a;
    return static_cast<std::uint16_t>(o.layout_count_++);
  }

  /// Sets tensor t's attrs to layout `layout` of the table, noting whether a block run changed them.
  constexpr void write(size_t t, std::uint16_t layout) {
    auto& o = out_;
    if (o.run_ > 0 && o.layout_[t] != layout) o.changed_ = true;
    if (o.run_ > 0) {
      const auto& b = p_.block_at(o.next_block_);
      if (t < b.input.index || t >= b.end_tensor) o.wrote_outside_ = true;
    }
    o.layout_[t] = layout;
    o.known_[t] = true;
  }
  constexpr void write(size_t t, const tensor_dist_attr& a) { write(t, layout_index(a)); }

  constexpr void fail(size_t op, error_info e, std::uint64_t inputs = 0) {
    e.op = p_.op_at(op).name();
    out_.status_ = e;
    out_.failed_op_ = static_cast<std::int64_t>(op);
    out_.failed_inputs_ = inputs;
    out_.finished_ = true;
  }

  // Reshards identical but for their count (the same operand in every run of a block) are one
  // entry; `touched_` lists the entries the current block run added to.
  constexpr void add_reshards(size_t op, size_t operand, bool on_output, size_t tensor, const tensor_dist_attr& from,
                              const tensor_dist_attr& to, std::int64_t block) {
    auto& o = out_;
    if (from == to) return;  // the common case: nothing moves
    const auto& mesh = p_.mesh();
    // The collectives, one per mesh dim or product group, then each one's bytes on the local part
    // the collectives run before it leave (model/collective.hpp: `execution_rank`).
    struct pending {
      std::int64_t m = 0;
      collective kind{};
      std::uint32_t group = 0;
      std::int64_t n = 0, bytes = 0;
    };
    std::array<pending, max_mesh_ndim> todo{};
    std::size_t count = 0;
    std::uint32_t grouped = 0;  // mesh dims an earlier all-reduce's group took
    for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
      const auto a = state_on(from, m), b = state_on(to, m);
      if (a == b || ((grouped >> m) & 1) != 0) continue;
      const auto kind = classify(a, b);
      const std::uint32_t group = product_group(from, to, m, kind);
      const std::int64_t n = group_size(mesh, group);
      grouped |= group;
      if (n == 1) continue;  // one device: nothing to move (a mesh dim of size 1)
      todo[count++] = {m, kind, group, n, 0};
    }
    // Run them as they can (model/collective.hpp: `execution_rank`), each charged on what the
    // ones before it left; those that none of can run alone are one all-to-all over their group.
    tensor_dist_attr cur = from, next;
    std::uint32_t done = 0;
    std::array<bool, max_mesh_ndim> ran{};
    std::array<size_t, max_mesh_ndim> order{};  // todo's indices as they run: the report's order
    size_t ordered = 0;
    for (size_t left = count; left > 0; --left) {
      size_t pick = count;
      for (int rank = 0; rank <= 5 && pick == count; ++rank)
        for (size_t k = 0; k < count && pick == count; ++k)
          if (!ran[k] && execution_rank(todo[k].kind) == rank && layout_after(from, to, done | todo[k].group, next) &&
              !(next == cur && moves_data(todo[k].kind)) && reachable(cur, next, todo[k].group))
            pick = k;
      if (pick == count) {
        size_t first = count;
        std::uint32_t all = 0;
        for (size_t k = 0; k < count; ++k)
          if (!ran[k]) {
            if (first == count) first = k;
            all |= todo[k].group;
            ran[k] = true;
          }
        todo[first] = {todo[first].m, collective::all_to_all, all, group_size(mesh, all), 0};
        todo[first].bytes = received_bytes(p_.tensor_at(tensor).shape, p_.tensor_at(tensor).element_bytes, cur, to);
        order[ordered++] = first;
        break;
      }
      todo[pick].bytes = reshard_bytes(todo[pick].kind, p_.tensor_at(tensor).shape, p_.tensor_at(tensor).element_bytes,
                                       cur, todo[pick].n);
      ran[pick] = true;
      done |= todo[pick].group;
      cur = next;
      order[ordered++] = pick;
    }
    for (size_t k = 0; k < ordered; ++k) {
      const auto [m, kind, group, n, bytes] = todo[order[k]];
      const std::int64_t number =
          block < 0 ? -1 : static_cast<std::int64_t>(p_.block_at(static_cast<size_t>(block)).number(static_cast<size_t>(block)));
      const record r{op,    operand, on_output, tensor, m,         kind, bytes, group, 1, number, p_.op_at(op).phase,
                     layout_index(from), layout_index(to)};
      // Only a block's runs repeat a reshard (an operator outside blocks runs once): look among
      // the entries since the block began.
      size_t e = block < 0 ? o.reshard_count_ : o.block_records_;
      while (e < o.reshard_count_ && !same_but_times(o.records_[e], r)) ++e;
      if (e < o.reshard_count_) {
        ++o.records_[e].times;
      } else if (o.reshard_count_ == R) {
        return fail(op, make_error(error_kind::invalid_argument, "",
                                   "more than {} distinct reshards (raise the MaxReshards argument of "
                                   "verified or try_propagate)",
                                   R));
      } else {
        o.records_[o.reshard_count_++] = r;
      }
      if (block >= 0) o.touched_[o.touched_count_++] = e;
    }
  }

  /// A plan input pinned to another tensor's layout takes it when first read.
  constexpr void settle(size_t t) {
    if (!out_.known_[t] && p_.tensor_at(t).producer == -1 && is_pinned(t)) write(t, pinned_attr(t));
  }
  /// An output is pinned by its annotation, or to the layout its `layout_of` tensor has.
  constexpr bool is_pinned(size_t t) const {
    const auto& info = p_.tensor_at(t);
    return info.annotated || (info.layout_of >= 0 && out_.known_[static_cast<size_t>(info.layout_of)]);
  }
  constexpr tensor_dist_attr pinned_attr(size_t t) const {
    const auto& info = p_.tensor_at(t);
    if (info.annotated) return info.annotation;
    tensor_dist_attr a = attrs(static_cast<size_t>(info.layout_of));
    a.clean_partial_status();
    return a;
  }

  using specs = static_vector<dist_tensor_spec, max_operands>;
  /// Fills `out` with the specs of tensors `ids`: with the attrs in `use` if given, else the
  /// current ones.
  constexpr status specs_of(specs& out, const static_vector<std::uint16_t, max_operands>& ids,
                            const dist_attrs* use) const {
    out.clear();
    for (size_t k = 0; k < ids.size(); ++k) {
      const auto t = ids[k];
      const auto& info = p_.tensor_at(t);
      if (use == nullptr && !out_.known_[t] && info.producer >= 0)
        return make_error(error_kind::invalid_argument, "", "input {} (tensor {}) is read before operator {} writes it", k,
                          t, info.producer);
      const tensor_dist_attr& a = use != nullptr ? (*use)[k] : out_.known_[t] ? attrs(t) : replicated(info.shape);
      CTSPMD_TRY(dist_tensor_spec::check(info.shape, a));
      out.emplace_back(info.shape, a);
    }
    return {};
  }
  constexpr tensor_dist_attr replicated(const tensor_shape& shape) const {
    return tensor_dist_attr(p_.mesh(), ctspmd::dims_mapping(shape.size(), -1));
  }
  static constexpr spec_span span(const specs& s) noexcept { return {s.data(), s.size()}; }
  static constexpr spmd_info& cleared(spmd_info& info) noexcept {
    info.inputs.clear();
    info.outputs.clear();
    return info;
  }

  /// The inputs (a bit each, input k as 1 << k for k < 64) whose layout, replicated, lets the
  /// failed forward rule run: the operands in conflict.
  constexpr std::uint64_t blame(const operator_info& op) {
    std::uint64_t inputs = 0;
    for (size_t k = 0; k < in_.size() && k < 64; ++k) {
      needed_ = in_;
      needed_[k] = dist_tensor_spec(in_[k].shape(), replicated(in_[k].shape()));
      if (op.forward(cleared(again_), span(needed_), op.attributes, p_.semantics())) inputs |= std::uint64_t{1} << k;
    }
    return inputs;
  }

  // Runs operator i once (in block `block`, or -1).
  constexpr void run_op(size_t i, std::int64_t block) {
    auto& o = out_;
    op_ = i;
    const auto& op = p_.op_at(i);
    for (auto t : op.inputs) settle(t);
    if (auto st = specs_of(in_, op.inputs, nullptr); !st) return fail(i, st.error());
    if (auto st = op.forward(cleared(fwd_), span(in_), op.attributes, p_.semantics()); !st)
      return fail(i, st.error(), blame(op));
    if (fwd_.outputs.size() != op.outputs.size())
      return fail(i, make_error(error_kind::invalid_argument, "", "the operator has {} outputs, but its rule infers {}",
                                op.outputs.size(), fwd_.outputs.size()));
    // What the rule infers must fit what the plan declares. (A rule with `output_shapes` was
    // checked, shapes and all, when the plan was built: this catches the others' ranks.)
    for (size_t j = 0; j < op.outputs.size(); ++j) {
      const auto declared = p_.tensor_at(op.outputs[j]).shape.size(), inferred = fwd_.outputs[j].rank();
      if (declared != inferred)
        return fail(i, make_error(error_kind::invalid_argument, "",
                                  "output {} (tensor {}) is declared with rank {}, but the rule infers rank {}", j,
                                  op.outputs[j], declared, inferred));
    }
    const dist_attrs* need = &fwd_.inputs;
    dist_attrs* result_attrs = &fwd_.outputs;
    bool pinned = false;
    for (auto t : op.outputs) pinned = pinned || is_pinned(t);
    if (pinned) {
      // The outputs must be their annotations: the inputs must be what backward inference says
      // those need, and what forward then gives is resharded to the annotations.
      for (size_t j = 0; j < op.outputs.size(); ++j)
        if (is_pinned(op.outputs[j])) fwd_.outputs[j] = pinned_attr(op.outputs[j]);
      if (auto st = specs_of(outs_, op.outputs, &fwd_.outputs); !st) return fail(i, st.error());
      if (auto st = op.backward(cleared(bwd_), span(in_), span(outs_), op.attributes, p_.semantics()); !st)
        return fail(i, st.error());
      need = &bwd_.inputs;
      if (auto st = specs_of(needed_, op.inputs, need); !st) return fail(i, st.error());
      if (auto st = op.forward(cleared(again_), span(needed_), op.attributes, p_.semantics()); !st)
        return fail(i, st.error());
      for (size_t j = 0; j < op.outputs.size(); ++j) {
        if (!is_pinned(op.outputs[j])) fwd_.outputs[j] = again_.outputs[j];
        add_reshards(i, j, true, op.outputs[j], again_.outputs[j], fwd_.outputs[j], block);
      }
    }
    for (size_t k = 0; k < op.inputs.size() && o.ok(); ++k) {
      const auto t = op.inputs[k];
      if (!o.known_[t])  // a tensor nobody annotated or wrote: it takes what its first consumer needs
        write(t, (*need)[k]);
      else if (k >= 32 || ((op.shape_only >> k) & 1) == 0)  // (one read for its shape alone moves nothing)
        add_reshards(i, k, false, t, attrs(t), (*need)[k], block);
      if (k < op.saved.size() && op.saved[k] != 0xffff) write(op.saved[k], (*need)[k]);  // as read
    }
    for (size_t j = 0; j < op.outputs.size(); ++j) write(op.outputs[j], (*result_attrs)[j]);
  }

  const plan<T, O>& p_;
  result_type& out_;
  propagate_options options_;
  size_t op_ = 0;  ///< the operator running (or whose block begins), for errors
  // Buffers reused by every operator (built once: an spmd_info is a large object to build).
  specs in_, outs_, needed_;
  spmd_info fwd_, bwd_, again_;
};

}  // namespace detail

/// Propagates `p`, result-returning: check `ok()`; `failed_operator()` and `error()` say why not.
/// `MaxReshards` bounds the distinct reshards (0: `default_max_reshards(O)`).
template <std::size_t MaxReshards = 0, std::size_t T, std::size_t O>
constexpr auto try_propagate(const plan<T, O>& p, propagate_options options = {}) {
  constexpr std::size_t R = MaxReshards == 0 ? default_max_reshards(O) : MaxReshards;
  propagation<T, R> out;
  detail::propagator<T, O, R> run(p, out, options);
  run.start();
  run.resume(static_cast<std::size_t>(-1));
  return out;
}

/// Propagates `p`; a plan that cannot be propagated is a compile error in constant evaluation
/// (an `spmd_error` at run time) whose message is the failing rule's, under the operator's name.
template <std::size_t MaxReshards = 0, std::size_t T, std::size_t O>
constexpr auto propagate(const plan<T, O>& p, propagate_options options = {}) {
  auto r = try_propagate<MaxReshards>(p, options);
  if (!r.ok()) raise(r.error());
  return r;
}

/// Reached only when a plan cannot be propagated during compilation. GCC shows the failing
/// operator's index and name and the whole message (the inputs the failure is traced to, the
/// rule's message with its values) as this function's template arguments; Clang shows its
/// arguments: the operator's index and the first input the failure is traced to (or -1). Both
/// then show the rule's message and its values as `raise` reports them.
template <std::int64_t OperatorIndex, fixed_string OperatorName, fixed_string Message>
constexpr void plan_fails_at_operator(std::int64_t operator_index, std::int64_t input, const error_info& e) {
  (void)operator_index, (void)input;
  raise(e);
}

namespace detail {
template <std::size_t N>
constexpr fixed_string<N + 1> to_fixed_string(std::string_view s) {
  char chars[N + 1] = {};
  for (std::size_t i = 0; i < N; ++i) chars[i] = s[i];
  return fixed_string<N + 1>(chars);
}

/// The text of a failed propagation: "operator 15 'attn.out' (matmul), input 0 'ctx.flat' and
/// input 1 'w_o': tensor axis 'k' is sharded by two different mesh dims, 0 and 1"; in a training
/// step "operator 40 'attn.out' (matmul_grad, backward), input 2 the gradient of 'attn.out': ...".
struct failure_text {
  std::array<char, 480> chars{};
  std::size_t size = 0;
  constexpr void put(std::string_view s) {
    for (const char c : s)
      if (size < chars.size()) chars[size++] = c;
  }
  constexpr void put(std::int64_t v) {  // printed as error messages print their values
    char digits[24] = {};
    put(std::string_view(digits, error_info{error_kind::invalid_argument, "", "{}", {v}}.format_to(digits, sizeof digits)));
  }
  constexpr std::string_view view() const { return {chars.data(), size}; }
};
template <class Plan, class Propagation>
constexpr failure_text describe_failure(const Plan& p, const Propagation& r) {
  failure_text t;
  const auto op = static_cast<std::size_t>(r.failed_operator());
  t.put("operator ");
  t.put(r.failed_operator());
  t.put(" '");
  t.put(p.op_at(op).name());
  t.put("' (");
  t.put(p.op_at(op).rule);
  if (p.op_at(op).phase != phase::forward) {  // a training step's backward or optimizer operator
    t.put(", ");
    t.put(to_string(p.op_at(op).phase));
  }
  t.put(")");
  const char* separator = ", input ";
  for (std::size_t k = 0; k < p.op_at(op).inputs.size(); ++k) {
    if (!r.failure_involves(k)) continue;
    t.put(separator);
    separator = " and input ";
    t.put(static_cast<std::int64_t>(k));
    const auto& info = p.tensor_at(p.op_at(op).inputs[k]);
    t.put(info.role == tensor_role::gradient ? " the gradient of '" : info.role == tensor_role::optimizer_state ? " the optimizer state of '" : " '");
    t.put(info.name);
    t.put("'");
  }
  t.put(": ");
  char message[400] = {};
  error_info e = r.error();
  e.op = {};  // named above
  e.format_to(message, sizeof message);
  std::size_t n = 0;
  while (message[n] != '\0') ++n;
  t.put(std::string_view(message, n));
  return t;
}

/// The plan `MakePlan()` returns, as a constant (built once for all the steps of `verified`).
template <auto MakePlan>
inline constexpr auto plan_value = MakePlan();

/// Operator runs per constant expression in `verified`: each stays well within Clang's default
/// limit of 1,048,576 evaluation steps (an operator costs some thousands, an optimizer's update
/// some ten thousands: 32 runs of adamw, each looking its layouts up, come close to the limit).
/// GCC keeps every step's constant and allocates for every copy of the propagation: it is given
/// fewer, longer steps (its limit is 33,554,432 operations).
#if defined(__clang__)
inline constexpr std::size_t runs_per_step = 24;
#else
inline constexpr std::size_t runs_per_step = 96;
#endif

/// `verified`'s propagation as a staged work (model/staged.hpp): parts of `runs_per_step` runs.
template <auto MakePlan, propagate_options Options, std::size_t R>
struct propagation_work {
  static constexpr auto& p = plan_value<MakePlan>;
  using plan_type = std::remove_cvref_t<decltype(p)>;
  using runner = propagator<plan_type::max_tensors, plan_type::max_ops, R>;
  static constexpr auto start() {
    propagation<plan_type::max_tensors, R> out;
    runner run(p, out, Options);
    run.start();
    run.resume(runs_per_step);
    return out;
  }
  static constexpr void resume(propagation<plan_type::max_tensors, R>& out) { runner(p, out, Options).resume(runs_per_step); }
  static constexpr bool finished(const propagation<plan_type::max_tensors, R>& out, std::size_t) { return out.finished(); }
};
/// The finished propagation of `verified`.
template <auto MakePlan, propagate_options Options, std::size_t R>
constexpr const auto& finished_propagation() {
  return staged_result<propagation_work<MakePlan, Options, R>>;
}
}  // namespace detail

/// The propagation of the plan `MakePlan()` returns, verified during compilation: a plan that
/// cannot be propagated does not compile, and the diagnostic names the operator (index and
/// name), the input the failure is traced to, and the failing rule's message with its values
/// (in `plan_fails_at_operator<index, "name", "message">`). The work is split over several
/// constant expressions of `detail::runs_per_step` operator runs each, so that a plan of any
/// length stays within the compilers' per-expression limits. `MaxReshards` as in `try_propagate`.
template <auto MakePlan, propagate_options Options = propagate_options{}, std::size_t MaxReshards = 0>
constexpr auto verified() {
  using plan_type = std::remove_cvref_t<decltype(detail::plan_value<MakePlan>)>;
  constexpr std::size_t R = MaxReshards == 0 ? default_max_reshards(plan_type::max_ops) : MaxReshards;
  constexpr auto& r = detail::finished_propagation<MakePlan, Options, R>();
  if constexpr (!r.ok()) {
    constexpr auto text = detail::describe_failure(detail::plan_value<MakePlan>, r);
    constexpr auto message = detail::to_fixed_string<text.size>(text.view());
    plan_fails_at_operator<r.failed_operator(), detail::to_fixed_string<r.error().op.size()>(r.error().op), message>(
        r.failed_operator(), r.failed_operand(), r.error());
  }
  return r;
}

/// The plan `MakePlan()` returns, the constant `verified<MakePlan>` propagates: use it rather
/// than building the plan again (`model::cost(model::plan_of<make_step>, model::verified<make_step>())`).
template <auto MakePlan>
inline constexpr const auto& plan_of = detail::plan_value<MakePlan>;

}  // namespace ctspmd::model

#endif
