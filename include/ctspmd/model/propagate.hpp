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
/// (verified once, then by induction).
///
/// Reshards are reported per mesh dim, with the collective that performs them and the bytes
/// each device sends, by ring algorithms, for a tensor whose local part (under the layout it
/// has) is S bytes on a mesh dim of n devices: all-reduce 2(n-1)S/n, reduce-scatter (n-1)S/n,
/// all-gather (n-1)S, all-to-all (n-1)S/n, local slice 0. Sizes unknown until run time (-1)
/// give -1 bytes.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/model/plan.hpp>

namespace ctspmd::model {

/// How a reshard moves data on one mesh dim.
enum class collective : std::int8_t {
  all_reduce,      ///< partial -> replicated
  reduce_scatter,  ///< partial -> sharded
  all_gather,      ///< sharded -> replicated (or -> partial)
  all_to_all,      ///< sharded on one tensor dim -> sharded on another
  local_slice,     ///< replicated -> sharded: each device keeps its part, no communication
  local_partial,   ///< replicated -> partial: one device keeps the value, the others zero
};
/// The number of collectives (the size of every table indexed by one).
inline constexpr std::size_t collective_count = 6;
static_assert(static_cast<std::size_t>(collective::local_partial) + 1 == collective_count, "a collective is missing");

constexpr std::string_view to_string(collective c) noexcept {
  switch (c) {
    case collective::all_reduce: return "all_reduce";
    case collective::reduce_scatter: return "reduce_scatter";
    case collective::all_gather: return "all_gather";
    case collective::all_to_all: return "all_to_all";
    case collective::local_slice: return "local_slice";
    case collective::local_partial: return "local_partial";
  }
  return "unknown";
}

/// One reshard on one mesh dim.
struct reshard {
  std::size_t op = 0;          ///< operator index
  std::size_t operand = 0;     ///< the input (or, with `on_output`, output) position
  bool on_output = false;      ///< the operator's output, resharded to its annotation
  std::size_t tensor = 0;      ///< tensor index
  std::int64_t mesh_dim = 0;
  collective kind{};
  std::int64_t bytes = 0;      ///< bytes each device sends, per occurrence; -1 if unknown
  std::size_t times = 1;       ///< occurrences (runs of its block)
  std::int64_t block = -1;     ///< index of the block it is in, or -1
  tensor_dist_attr from{}, to{};
};

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

  /// The dist attributes of tensor `t` after propagation.
  constexpr const tensor_dist_attr& attr(tensor_id t) const {
    if (t.index >= tensor_count_)
      raise(make_error(error_kind::invalid_argument, "propagation", "tensor {} is not in the plan", t.index));
    return attrs_[t.index];
  }
  constexpr ctspmd::dims_mapping dims_mapping(tensor_id t) const { return attr(t).dims_mapping(); }

  /// The distinct reshards (each with its occurrence count `times`).
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

 private:
  // Messages name the collective in their text (an error's values are integers).
  static constexpr const char* unexpected_format(collective c, bool on_output) {
    constexpr const char* input[] = {
        "operator {}: input {} needs an unexpected all_reduce on mesh dim {}",
        "operator {}: input {} needs an unexpected reduce_scatter on mesh dim {}",
        "operator {}: input {} needs an unexpected all_gather on mesh dim {}",
        "operator {}: input {} needs an unexpected all_to_all on mesh dim {}",
        "operator {}: input {} needs an unexpected local_slice on mesh dim {}",
        "operator {}: input {} needs an unexpected local_partial on mesh dim {}"};
    constexpr const char* output[] = {
        "operator {}: output {} needs an unexpected all_reduce on mesh dim {}",
        "operator {}: output {} needs an unexpected reduce_scatter on mesh dim {}",
        "operator {}: output {} needs an unexpected all_gather on mesh dim {}",
        "operator {}: output {} needs an unexpected all_to_all on mesh dim {}",
        "operator {}: output {} needs an unexpected local_slice on mesh dim {}",
        "operator {}: output {} needs an unexpected local_partial on mesh dim {}"};
    static_assert(sizeof input / sizeof *input == collective_count && sizeof output / sizeof *output == collective_count,
                  "one message per collective");
    return (on_output ? output : input)[static_cast<int>(c)];
  }
  static constexpr const char* count_format(collective c) {
    constexpr const char* formats[] = {"block {} has {} all_reduce reshards, {} expected",
                                       "block {} has {} reduce_scatter reshards, {} expected",
                                       "block {} has {} all_gather reshards, {} expected",
                                       "block {} has {} all_to_all reshards, {} expected",
                                       "block {} has {} local_slice reshards, {} expected",
                                       "block {} has {} local_partial reshards, {} expected"};
    static_assert(sizeof formats / sizeof *formats == collective_count, "one message per collective");
    return formats[static_cast<int>(c)];
  }

  template <std::size_t T, std::size_t O, std::size_t R>
  friend constexpr propagation<T, R> try_propagate_impl(const plan<T, O>&, propagate_options);

  template <class F>
  constexpr std::int64_t bytes_where(F f) const noexcept {
    std::int64_t total = 0;
    for (std::size_t i = 0; i < reshard_count_; ++i) {
      const auto& r = reshards_[i];
      if (!f(r)) continue;
      if (r.bytes < 0) return -1;
      total += r.bytes * static_cast<std::int64_t>(r.times);
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
  std::array<tensor_dist_attr, MaxTensors> attrs_{};
  std::array<bool, MaxTensors> known_{};
  std::array<reshard, MaxReshards> reshards_{};
  std::size_t tensor_count_ = 0, reshard_count_ = 0;
};

namespace detail {

constexpr bool same_but_times(const reshard& a, const reshard& b) {
  return a.op == b.op && a.operand == b.operand && a.on_output == b.on_output && a.mesh_dim == b.mesh_dim &&
         a.kind == b.kind && a.block == b.block && a.from == b.from && a.to == b.to;
}

/// What a dist attr holds on one mesh dim.
struct mesh_dim_state {
  enum kind_t : std::int8_t { replicate, shard, partial } kind = replicate;
  std::int64_t value = 0;  ///< the tensor dim (shard) or the reduce type (partial)
  std::int64_t order = 0;  ///< (shard) the mesh dim's place in its tensor dim's list, 0 = major
  friend constexpr bool operator==(const mesh_dim_state&, const mesh_dim_state&) = default;
};
/// A co-sharded tensor dim is split over its mesh dims major first, so a mesh dim that moves in
/// the list moves data too: its state carries its place there.
constexpr mesh_dim_state state_on(const tensor_dist_attr& a, std::int64_t m) {
  if (a.is_partial(m)) return {mesh_dim_state::partial, static_cast<std::int64_t>(a.partial_reduce_type(m)), 0};
  const std::int64_t d = a.sharded_tensor_dim(m);
  if (d < 0) return {};
  const mesh_dims list = a.mesh_dims_of(static_cast<std::size_t>(d));
  std::int64_t order = 0;
  while (list[static_cast<std::size_t>(order)] != m) ++order;
  return {mesh_dim_state::shard, d, order};
}
constexpr collective classify(mesh_dim_state from, mesh_dim_state to) {
  using s = mesh_dim_state;
  if (from.kind == s::partial) return to.kind == s::shard ? collective::reduce_scatter : collective::all_reduce;
  if (from.kind == s::shard) return to.kind == s::shard ? collective::all_to_all : collective::all_gather;
  return to.kind == s::shard ? collective::local_slice : collective::local_partial;
}
/// Bytes each device sends (see the file comment).
constexpr std::int64_t reshard_bytes(collective c, const tensor_info& t, const tensor_dist_attr& from,
                                     std::int64_t mesh_dim) {
  std::int64_t local = t.element_bytes;
  for (auto s : t.shape) {
    if (s < 0) return -1;
    local *= s;
  }
  for (std::int64_t m = 0; m < from.process_mesh().ndim(); ++m)  // every mesh dim that shards it
    if (from.sharded_tensor_dim(m) >= 0) local /= from.process_mesh().dim_size(m);
  const std::int64_t n = from.process_mesh().dim_size(mesh_dim);
  switch (c) {
    case collective::all_reduce: return 2 * (n - 1) * local / n;
    case collective::reduce_scatter:
    case collective::all_to_all: return (n - 1) * local / n;
    case collective::all_gather: return (n - 1) * local;
    case collective::local_slice:
    case collective::local_partial: return 0;
  }
  return 0;
}

}  // namespace detail

/// Propagates `p`; check `ok()` on the result. `MaxReshards` bounds the distinct reshards.
template <std::size_t T, std::size_t O, std::size_t R = 4 * O>
constexpr propagation<T, R> try_propagate_impl(const plan<T, O>& p, propagate_options options) {
  propagation<T, R> out;
  out.tensor_count_ = p.tensor_count();
  auto& attrs = out.attrs_;
  auto& known = out.known_;
  for (std::size_t t = 0; t < p.tensor_count(); ++t) {
    if (p.tensor_at(t).annotated) {
      attrs[t] = p.tensor_at(t).annotation;
      known[t] = true;
    }
  }
  auto fail = [&](std::size_t op, error_info e) {
    e.op = p.op_at(op).name();
    out.status_ = e;
    out.failed_op_ = static_cast<std::int64_t>(op);
  };
  // Reshards identical but for their count (the same operand in every run of a block) are
  // one entry; `touched` lists the entries the current block run added to.
  std::array<std::size_t, R> touched{};
  std::size_t touched_count = 0;
  auto add_reshards = [&](std::size_t op, std::size_t operand, bool on_output, std::size_t tensor,
                          const tensor_dist_attr& from, const tensor_dist_attr& to, std::int64_t block) {
    for (std::int64_t m = 0; m < p.mesh().ndim(); ++m) {
      const auto a = detail::state_on(from, m), b = detail::state_on(to, m);
      if (a == b) continue;
      const auto kind = detail::classify(a, b);
      const reshard r{op, operand, on_output, tensor, m, kind, detail::reshard_bytes(kind, p.tensor_at(tensor), from, m),
                      1,  block,   from,      to};
      std::size_t e = 0;
      while (e < out.reshard_count_ && !detail::same_but_times(out.reshards_[e], r)) ++e;
      if (e < out.reshard_count_) {
        ++out.reshards_[e].times;
      } else if (out.reshard_count_ == R) {
        return fail(op, make_error(error_kind::invalid_argument, "", "more than {} distinct reshards (raise MaxReshards)", R));
      } else {
        out.reshards_[out.reshard_count_++] = r;
      }
      if (block >= 0) touched[touched_count++] = e;
    }
  };
  auto specs_of = [&](const auto& ids, const dist_attrs* use) -> result<static_vector<dist_tensor_spec, max_operands>> {
    static_vector<dist_tensor_spec, max_operands> specs;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const auto t = ids[k];
      const auto& info = p.tensor_at(t);
      if (use == nullptr && !known[t] && info.producer >= 0)
        return make_error(error_kind::invalid_argument, "", "input {} (tensor {}) is read before operator {} writes it", k,
                          t, info.producer);
      const tensor_dist_attr a = use != nullptr ? (*use)[k]
                                 : known[t]     ? attrs[t]
                                                : tensor_dist_attr(p.mesh(), ctspmd::dims_mapping(info.shape.size(), -1));
      CTSPMD_TRY(dist_tensor_spec::check(info.shape, a));
      specs.push_back(dist_tensor_spec(info.shape, a));
    }
    return specs;
  };
  // Runs operator i once (in block `block`, or -1).
  auto run_op = [&](std::size_t i, std::int64_t block) {
    const auto& o = p.op_at(i);
    const auto in = specs_of(o.inputs, nullptr);
    if (!in) return fail(i, in.error());
    auto fwd = o.forward(spec_span(in->data(), in->size()), o.attributes, p.semantics());
    if (!fwd) return fail(i, fwd.error());
    if (fwd->outputs.size() != o.outputs.size())
      return fail(i, make_error(error_kind::invalid_argument, "", "the operator has {} outputs, but its rule infers {}",
                                o.outputs.size(), fwd->outputs.size()));
    dist_attrs need = fwd->inputs;
    dist_attrs result_attrs = fwd->outputs;
    bool pinned = false;
    for (auto t : o.outputs) pinned = pinned || p.tensor_at(t).annotated;
    if (pinned) {
      dist_attrs wanted = fwd->outputs;
      for (std::size_t j = 0; j < o.outputs.size(); ++j)
        if (p.tensor_at(o.outputs[j]).annotated) wanted[j] = p.tensor_at(o.outputs[j]).annotation;
      const auto outs = specs_of(o.outputs, &wanted);
      if (!outs) return fail(i, outs.error());
      const auto bwd = o.backward(spec_span(in->data(), in->size()), spec_span(outs->data(), outs->size()), o.attributes,
                                  p.semantics());
      if (!bwd) return fail(i, bwd.error());
      need = bwd->inputs;
      const auto needed = specs_of(o.inputs, &need);
      if (!needed) return fail(i, needed.error());
      const auto again = o.forward(spec_span(needed->data(), needed->size()), o.attributes, p.semantics());
      if (!again) return fail(i, again.error());
      for (std::size_t j = 0; j < o.outputs.size(); ++j) {
        result_attrs[j] = p.tensor_at(o.outputs[j]).annotated ? wanted[j] : again->outputs[j];
        add_reshards(i, j, true, o.outputs[j], again->outputs[j], result_attrs[j], block);
      }
    }
    for (std::size_t k = 0; k < o.inputs.size(); ++k) {
      const auto t = o.inputs[k];
      if (!known[t]) {  // a plan input nobody annotated: it takes what its first consumer needs
        attrs[t] = need[k];
        known[t] = true;
      } else {
        add_reshards(i, k, false, t, attrs[t], need[k], block);
      }
    }
    for (std::size_t j = 0; j < o.outputs.size(); ++j) {
      attrs[o.outputs[j]] = result_attrs[j];
      known[o.outputs[j]] = true;
    }
  };

  std::size_t i = 0;
  std::size_t next_block = 0;
  while (i < p.op_count() && out.ok()) {
    if (next_block < p.block_count() && p.block_at(next_block).first_op == i) {
      const auto& b = p.block_at(next_block);
      const auto block = static_cast<std::int64_t>(next_block);
      if (!known[b.source.index]) {
        fail(i, make_error(error_kind::invalid_argument, "", "the block's source (tensor {}) has no dist attributes yet",
                           b.source.index));
        break;
      }
      auto previous = attrs;
      for (std::size_t run = 1; run <= b.count && out.ok(); ++run) {
        attrs[b.input.index] = run == 1 ? attrs[b.source.index] : attrs[b.output.index];
        known[b.input.index] = true;
        touched_count = 0;
        for (std::size_t j = b.first_op; j < b.end_op && out.ok(); ++j) run_op(j, block);
        if (options.induction && run > 1 && attrs == previous) {
          // This run repeated the previous one: so will the rest. Count its reshards for them.
          for (std::size_t t = 0; t < touched_count; ++t) out.reshards_[touched[t]].times += b.count - run;
          break;
        }
        previous = attrs;
      }
      i = b.end_op;
      ++next_block;
    } else {
      run_op(i, -1);
      ++i;
    }
  }
  return out;
}

/// Propagates `p`, result-returning: check `ok()`; `failed_operator()` and `error()` say why not.
template <std::size_t T, std::size_t O>
constexpr auto try_propagate(const plan<T, O>& p, propagate_options options = {}) {
  return try_propagate_impl<T, O, 4 * O>(p, options);
}

/// Propagates `p`; a plan that cannot be propagated is a compile error in constant evaluation
/// (an `spmd_error` at run time) whose message is the failing rule's, under the operator's name.
template <std::size_t T, std::size_t O>
constexpr auto propagate(const plan<T, O>& p, propagate_options options = {}) {
  auto r = try_propagate(p, options);
  if (!r.ok()) raise(r.error());
  return r;
}

/// Reached only when a plan cannot be propagated during compilation: the diagnostic shows
/// the failing operator's index and name as this function's template arguments (and, with
/// Clang, its first argument), then the rule's message.
template <std::int64_t OperatorIndex, fixed_string OperatorName>
constexpr void plan_fails_at_operator(std::int64_t operator_index, const error_info& e) {
  (void)operator_index;
  raise(e);
}

namespace detail {
template <std::size_t N>
constexpr fixed_string<N + 1> to_fixed_string(std::string_view s) {
  char chars[N + 1] = {};
  for (std::size_t i = 0; i < N; ++i) chars[i] = s[i];
  return fixed_string<N + 1>(chars);
}
}  // namespace detail

/// The propagation of the plan `MakePlan()` returns, verified during compilation: a plan that
/// cannot be propagated does not compile, and the diagnostic names the operator (in
/// `plan_fails_at_operator<index, "name">`) and shows the failing rule's message.
template <auto MakePlan, propagate_options Options = propagate_options{}>
constexpr auto verified() {
  constexpr auto r = try_propagate(MakePlan(), Options);
  if constexpr (!r.ok()) {
    plan_fails_at_operator<r.failed_operator(), detail::to_fixed_string<r.error().op.size()>(r.error().op)>(
        r.failed_operator(), r.error());
  }
  return r;
}

}  // namespace ctspmd::model

#endif
