#ifndef CTSPMD_MODEL_COST_WALK_HPP
#define CTSPMD_MODEL_COST_WALK_HPP
/// \file What every part of a step's cost needs to know of the step: where each operator runs
/// (its repeated block, how many runs, whether its forward is recomputed), which part of a step
/// split at a block it belongs to (`split_part`), and each tensor's local size (a dim's size
/// divided by the product of the mesh dims that shard it, rounded up: the largest device's).
/// `model/cost.hpp`'s `coster` is built on it (memory, traffic, FLOPs).

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/saturating.hpp>
#include <ctspmd/model/cost/figures.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/rules/kit/cost_traits.hpp>

namespace ctspmd::model::detail {

/// Per tensor or per operator (the first tensor_count / op_count entries are used). Built-in
/// arrays: both compilers evaluate an element's access several times faster than through
/// std::array's operator[] (a function call in constant evaluation), and the cost's loops are
/// mostly such accesses.
template <class V, std::size_t N>
using cost_slots = V[N == 0 ? 1 : N];

/// True if operator `op` runs rule `Rule`.
template <class Rule, class Op>
constexpr bool is_rule(const Op& op) {
  return op.cost.rule == rules::index_of<Rule>;
}

/// The facts of a step the cost's parts share (see the file comment), and the figures they count.
template <std::size_t T, std::size_t O, std::size_t R>
class cost_walk {
 protected:
  using size_t = std::size_t;
  static constexpr std::int32_t none = -1;
  constexpr cost_walk(const plan<T, O>& p, const propagation<T, R>& r, std::int64_t split)
      : p_(p), r_(r), options_(p.training()), split_(split) {
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
  /// An operator whose output is its input's buffer unless it moved data: a view, or a reshard
  /// point (`assign`), whose all-gather is Megatron's f (rules/kit/cost_traits.hpp).
  constexpr bool is_view(size_t i) const {
    const auto k = p_.op_at(i).cost.kind;
    return k == cost_kind::view || k == cost_kind::communication;
  }
  constexpr bool is_reshard_point(size_t i) const { return p_.op_at(i).cost.kind == cost_kind::communication; }

  // ---- where each operator runs, and how often ----
  constexpr void map_op(size_t i) {
    first_entry_[i] = -1;
    block_of_[i] = -1;
    for (size_t b = 0; b < p_.block_count(); ++b)
      if (i >= p_.block_at(b).first_op && i < p_.block_at(b).end_op) block_of_[i] = static_cast<std::int8_t>(b);
    if (split_ >= 0 && p_.op_at(i).phase == phase::forward && part_of_op(i) != 1) {
      const auto at = part_of_op(i) == 0 ? read_before : read_after;
      for (auto t : p_.op_at(i).inputs)
        if (p_.tensor_at(t).producer < 0 && part_of_tensor(t) == 0) reads_[t] = static_cast<std::int8_t>(reads_[t] | at);
    }
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
  /// of what follows the block runs before its backward pass), but a parameter's gradient sum
  /// its parameter's (`input_part`); an optimizer operator its parameter's (`optimizer_parameter`).
  constexpr size_t part_of_op(size_t i) const {
    const auto& b = p_.block_at(static_cast<size_t>(split_));
    const auto own = block_of_[i];
    if (own == split_ || (own >= 0 && p_.block_at(static_cast<size_t>(own)).mirror_of == split_)) return 1;
    const auto& op = p_.op_at(i);
    if (op.phase == phase::forward) return i < b.first_op ? 0 : 2;
    if (op.phase == phase::backward) {
      if (const auto t = summed_parameter(i); t >= 0) return input_part(static_cast<size_t>(t));
      const auto m = mirror_[static_cast<size_t>(split_)];
      return m < 0 || i < p_.block_at(static_cast<size_t>(m)).first_op ? 2 : 0;
    }
    const auto t = optimizer_parameter(i);
    return t < 0 ? 2 : input_part(static_cast<size_t>(t));
  }
  /// The tensor optimizer operator i updates: its first input is the parameter, its gradient or
  /// state, or what an earlier optimizer operator made of one (a ZeRO shard an `assign` sliced,
  /// the updated shard an `assign` gathers back); -1 for an operator without inputs.
  constexpr std::int64_t optimizer_parameter(size_t i) const {
    for (;;) {
      const auto& op = p_.op_at(i);
      if (op.inputs.empty()) return -1;
      const auto& x = p_.tensor_at(op.inputs[0]);
      if (!x.trainable && x.role_of >= 0 && (x.role == tensor_role::gradient || x.role == tensor_role::optimizer_state))
        return x.role_of;
      if (x.trainable || x.producer < 0 || p_.op_at(static_cast<size_t>(x.producer)).phase != phase::optimizer)
        return static_cast<std::int64_t>(op.inputs[0]);
      i = static_cast<size_t>(x.producer);  // an earlier operator: the walk ends
    }
  }
  /// The parameter whose gradient parts backward operator i sums (an `add_n` outside blocks,
  /// which the training step emits after the backward pass), or -1.
  constexpr std::int64_t summed_parameter(size_t i) const {
    const auto& op = p_.op_at(i);
    if (block_of_[i] >= 0 || !is_rule<rules::add_n>(op) || op.outputs.empty()) return -1;
    const auto& g = p_.tensor_at(op.outputs[0]);
    const bool sum = g.role == tensor_role::gradient && g.role_of >= 0 && p_.tensor_at(static_cast<size_t>(g.role_of)).trainable;
    return sum ? g.role_of : -1;
  }
  /// The part of tensor t, a plan input (a parameter, labels) by where it is read: one declared
  /// before the block but read only after it is the last part's (a plan may declare every tensor
  /// first).
  constexpr size_t input_part(size_t t) const {
    const auto part = part_of_tensor(t);
    return part == 0 && reads_[t] == read_after ? 2 : part;
  }
  constexpr split_part* part_of(size_t i) { return split_ < 0 ? nullptr : &out_.parts[part_of_op(i)]; }
  /// True if parameter t is read both before the split block and after it (`tied_part`; after
  /// the loop of `map_op`).
  constexpr bool tied(size_t t) const {
    return split_ >= 0 && p_.tensor_at(t).trainable && reads_[t] == (read_before | read_after);
  }
  /// True if operator i is an optimizer operator of a tied parameter: the last part runs it on
  /// its copy too.
  constexpr bool tied_update(size_t i) const {
    if (split_ < 0 || p_.op_at(i).phase != phase::optimizer) return false;
    const auto t = optimizer_parameter(i);
    return t >= 0 && tied(static_cast<size_t>(t));
  }

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
  /// Counts tensor t's local elements and bytes.
  constexpr void measure_tensor(size_t t) {
    const auto& info = p_.tensor_at(t);
    elements_[t] = -1;
    if (!info.shape.empty() && info.role != tensor_role::first_run_layout) elements_[t] = local_elements(t, r_.attr({t}));
    bytes_[t] = elements_[t] < 0 ? 0 : saturating_product(elements_[t], info.element_bytes);
    if (split_ >= 0 && t == p_.block_at(static_cast<size_t>(split_)).output.index) out_.boundary_bytes = bytes_[t];
  }
  /// True if operator i's forward runs again in backward.
  constexpr bool recomputed(size_t i) const {
    const auto& op = p_.op_at(i);
    if (op.phase != phase::forward) return false;
    if (options_.recompute == recompute::full && forward_block(i) >= 0) return true;
    return options_.recompute == recompute::selective && op.recomputable;
  }

  const plan<T, O>& p_;
  const propagation<T, R>& r_;
  training_options options_;
  std::int64_t split_ = -1;  ///< the forward block whose parts are told apart, or -1
  cost_figures out_{};
  cost_slots<std::int64_t, T> bytes_{}, elements_{};  ///< elements_: of the local part, or -1 (not counted)
  cost_slots<std::int8_t, O> block_of_{};
  /// Per plan input declared before the split block: read by forward operators before it, after it.
  enum : std::int8_t { read_before = 1, read_after = 2 };
  cost_slots<std::int8_t, T> reads_{};
  cost_slots<std::int32_t, O> first_entry_{};  ///< the operator's first reshard entry, or -1
  cost_slots<std::int8_t, max_blocks> mirror_{};
};

}  // namespace ctspmd::model::detail

#endif
