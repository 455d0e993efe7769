#ifndef CTSPMD_MODEL_COST_MEMORY_HPP
#define CTSPMD_MODEL_COST_MEMORY_HPP
/// \file What a device holds over a training step: the memory part of `model/cost.hpp`.
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
/// `memory_count` also decides which collectives run again in backward (`sent_again`): a tensor
/// an all-gather made that is kept as its shard is gathered again.

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/saturating.hpp>
#include <ctspmd/model/cost/walk.hpp>

namespace ctspmd::model::detail {

/// The memory part of a cost (see the file comment): parameters, gradients and optimizer states,
/// which tensors share a buffer, the tensors kept for backward, lifetimes and the peak.
template <std::size_t T, std::size_t O, std::size_t R>
class memory_count : public cost_walk<T, O, R> {
 public:
  using kept_list = kept_tensor_list<T>;

 protected:
  using base = cost_walk<T, O, R>;
  using typename base::size_t;
  using base::none;
  using base::p_;
  using base::r_;
  using base::options_;
  using base::split_;
  using base::out_;
  using base::bytes_;
  using base::first_entry_;
  using base::block_of_;
  using base::mirror_;
  using base::is_view;
  using base::is_reshard_point;
  using base::runs;
  using base::forward_block;
  using base::part_of_tensor;
  using base::part_of_op;
  using base::part_of;
  using base::local_elements;
  using base::recomputed;
  constexpr memory_count(const plan<T, O>& p, const propagation<T, R>& r, kept_list* kept, std::int64_t split)
      : base(p, r, split), kept_(kept) {}

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

  /// Starts tensor t's lifetime and flags (after `measure_tensor`).
  constexpr void track_tensor(size_t t) {
    const auto& info = p_.tensor_at(t);
    canon_[t] = static_cast<std::uint16_t>(t);
    state_[t] = 0xffff;
    start_[t] = last_fwd_[t] = first_bwd_[t] = last_bwd_[t] = none;
    const bool param_gradient = info.role == tensor_role::gradient && info.role_of >= 0 &&
                                p_.tensor_at(static_cast<size_t>(info.role_of)).trainable;
    const bool persistent = info.trainable || param_gradient || info.role == tensor_role::optimizer_state;
    flags_[t] = persistent || info.role == tensor_role::first_run_layout ? excluded : 0;
  }

  // ---- persistent memory: parameters, their gradients, optimizer states ----
  /// Operator i's buffers: an unreturned softmax takes no memory; an optimizer's states and its
  /// parameter's gradient.
  constexpr void op_buffers(size_t i) {
    auto& m = out_.memory;
    const std::int64_t stage = options_.stage();
    const auto& op = p_.op_at(i);
    if (is_rule<rules::flash_attention>(op) && op.outputs.size() > 1 &&
        !op.attributes.template get<rules::flash_attention_attributes>().return_softmax)
      bytes_[op.outputs[1]] = 0;
    if (split_ >= 0 && op.phase == phase::backward && is_rule<rules::add_n>(op)) {
      // A tied parameter's gradient: the sum of the last part's contributions and the first's
      const auto& g = p_.tensor_at(op.outputs[0]);
      if (g.role == tensor_role::gradient && g.role_of >= 0 && base::tied(static_cast<size_t>(g.role_of)))
        for (auto t : op.inputs)
          if (const auto at = p_.tensor_at(t).producer; at >= 0 && part_of_op(static_cast<size_t>(at)) == 2)
            out_.tied.gradient_bytes = saturating_sum(out_.tied.gradient_bytes, bytes_[t]);
    }
    if (op.phase != phase::optimizer || !is_rule<rules::adamw>(op)) return;
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
    if (base::tied(param)) {
      out_.tied.gradients = saturating_sum(out_.tied.gradients, gradients);
      out_.tied.optimizer_states = saturating_sum(out_.tied.optimizer_states, saturating_product(times, states));
    }
  }
  constexpr void parameter(size_t t) {
    const auto& info = p_.tensor_at(t);
    if (!info.trainable) return;
    const std::int64_t elements =
        options_.stage() == 3 && state_[t] != 0xffff ? local_elements(t, r_.attr({state_[t]})) : local_elements(t);
    const std::int64_t bytes = saturating_product(declared_runs(t), saturating_product(elements, info.element_bytes));
    out_.memory.parameters = saturating_sum(out_.memory.parameters, bytes);
    if (split_ >= 0) {
      auto& part = out_.parts[base::input_part(t)];
      part.parameters = saturating_sum(part.parameters, bytes);
      if (base::tied(t)) out_.tied.parameters = saturating_sum(out_.tied.parameters, bytes);
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
    auto& m = out_.memory;
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
    if (fb >= 0) out_.kept_in_block[static_cast<size_t>(fb)] = saturating_sum(out_.kept_in_block[static_cast<size_t>(fb)], kept);
    if (split_ >= 0) {
      const size_t at = fb == split_ ? 1
                        : info.producer >= 0 ? part_of_op(static_cast<size_t>(info.producer))
                                             : base::input_part(c);
      out_.parts[at].activations = saturating_sum(out_.parts[at].activations, kept);
    }
    if (kept_ != nullptr) kept_->push_back({c, w, copies, fb});
  }
  constexpr void peak(size_t i) {
    now_ = saturating_sum(now_, delta_[i]);
    if (now_ > top_) {
      top_ = now_;
      out_.memory.peak_op = i;
    }
  }
  constexpr void finish_peak() {
    auto& m = out_.memory;
    m.peak_phase = p_.op_count() > 0 ? p_.op_at(m.peak_op).phase : phase::forward;
    m.peak = saturating_sum(m.persistent(), top_ > 0 ? top_ : 0);
  }

  kept_list* kept_;
  std::int64_t now_ = 0, top_ = -1;  ///< the live bytes at the operator `peak` is at, and the largest
  cost_slots<std::uint16_t, T> canon_{}, state_{}, source_{};
  cost_slots<std::int32_t, T> start_{}, last_fwd_{}, first_bwd_{}, last_bwd_{};
  cost_slots<std::uint8_t, T> flags_{};
  cost_slots<std::int64_t, O + 1> delta_{};
  cost_slots<std::uint8_t, O> op_flags_{};
};

}  // namespace ctspmd::model::detail

#endif
