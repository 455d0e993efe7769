#ifndef CTSPMD_MODEL_TRAINING_HPP
#define CTSPMD_MODEL_TRAINING_HPP
/// \file Training steps: a forward plan's backward pass and optimizer step, derived as a plan.
///
///     auto step = model::training_step(forward, loss);            // a plan of three phases
///     constexpr auto r = model::verified<[] { return model::training_step(make_forward(), ...); }>();
///     static_assert(r.count(model::phase::backward, model::collective::all_reduce) == 2 * layers);
///
/// `training_step(p, loss)` returns a plan holding `p`'s operators (phase `forward`), then:
/// - **backward**: the operators in reverse order, each through its grad operator (the recipes of
///   registry/grad_recipes.hpp: `matmul` through `matmul_grad`, `split` through `concat`, ...). The loss's
///   gradient is a plan input laid out as the loss, without its partial status (each device
///   makes its ones).
///   A grad operator reads a forward input as the forward operator read it: after its reshard,
///   if it needed one (`operator_info::saved`: frameworks keep that resharded copy), so the
///   backward pass does not pay a forward reshard again.
///   A tensor read by several operators gets one gradient part from each; the parts are summed by
///   an `add_n` (which keeps a partial status all of them share: the sum stays partial until
///   reduced). A gradient nothing gives (an output no later operator reads) is zeros, laid out as
///   that output (partial status aside). Gradients flow only where they can reach a parameter:
///   an operator none of whose inputs is a parameter or computed from one has no grad operator,
///   and an output whose gradient the recipe's grad operator does not read (an index, a
///   statistic such as rms_norm's invvar or flash_attention's softmax_lse, a seed) passes none,
///   as do the outputs of operators with an empty recipe (argmax, numel, comparisons, ...). An
///   operator with no recipe on the gradient's path is an error naming it.
/// - **optimizer**: `adamw` on every parameter the loss reaches (param, grad, learning_rate,
///   moment1, moment2, -, beta1_pow, beta2_pow, and master_param with `master_weights`), its
///   updated value pinned to the parameter's layout (`tensor_info::layout_of`). The data-parallel
///   synchronisation is what the rules then require: a gradient partial over the data-parallel
///   mesh dim is all-reduced before the update; with `shard_optimizer_states_on = m` (ZeRO), the
///   moments are sharded on mesh dim m, so the gradient is reduce-scattered to each device's shard
///   and the updated shard all-gathered back to the parameter's layout (with
///   `shard_optimizer_states_also_on`, over the product group of two mesh dims, dp x cp: one
///   reduce-scatter and one all-gather each). The moments are sharded
///   on the parameter's first dim not sharded by its annotation whose size m divides; else
///   co-sharded (m minor) on its first dim whose shard m divides, else on its first dim of at least
///   m's size, unevenly: every parameter's state is sharded, as frameworks shard one flat buffer.
///   (A parameter smaller than m, or already sharded over m, keeps its own layout.) Where the
///   state co-shards a dim the parameter shards, adamw's vote would replicate that dim, so the
///   update runs on the shard: `assign`s reduce-scatter the gradient and slice the parameter, and
///   a third gathers the updated shard back.
/// - `training_options` (plan.hpp) also say in which precision the step keeps its state
///   (`gradient_element_bytes`: a parameter's gradient tensors take it; `state_element_bytes`;
///   `master_weights`), ZeRO's stage (1 to 3) and the recomputation policy: the step's operators
///   are the same for each stage and policy; what they change is what the step costs
///   (`<ctspmd/model/cost.hpp>`). The step keeps its options (`plan::training()`).
///
/// A repeated block's backward pass is a repeated block too (`block_info::mirror_of`), whose runs
/// read the forward runs' tensors last run first; its parameters are updated in its body (per
/// run, as the forward body declares them). A block's first run may lay out its tensors unlike
/// the others (its source is not its output); the backward pass's last run then reads those
/// layouts. Tensors of the training step are named after the forward tensor whose gradient or
/// optimizer state they are (`tensor_info::role`).
///
/// Limits (errors naming the tensor or operator): a parameter declared outside a block may not
/// be read inside it (every run would add to one gradient); a block's input must receive a
/// gradient. The derived plan's capacities are template arguments (0: 6 x the forward plan's
/// tensors, 3 x its operators: a parameter's update alone adds 9 tensors, and each input a grad
/// operator reads is saved; a plan dense in parameters may need 8 x), and exceeding them is the usual plan error.
///
/// Building a step costs Clang about 1,500 evaluation steps per forward operator, so one constant
/// expression (at most 1,048,576 steps by default) holds the step of some hundreds of operators.
/// `training_step_of<forward, loss>`, for a forward plan that is a constant, builds the same plan
/// over several constant expressions (`step_builder`'s `start`, `resume` and `finish`, its state
/// kept in a `step_state` between them).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <ctspmd/core/error.hpp>
#include <ctspmd/model/plan.hpp>
#include <ctspmd/model/staged.hpp>

namespace ctspmd::model {

namespace detail {

inline constexpr std::uint16_t no_tensor = 0xffff;

/// What a step_builder knows besides the plan it builds, so that it can stop and resume.
template <std::size_t T, std::size_t T2>
struct step_state {
  std::array<bool, T> requires_grad{};
  // Per forward tensor: its gradient parts (a list through next_part, newest first) and its
  // gradient once summed; no_tensor if it has none.
  std::array<std::uint16_t, T> part_head{}, grad{};
  std::array<std::uint16_t, T2> next_part{};
  std::uint16_t absent = no_tensor, learning_rate = no_tensor, beta1_pow = no_tensor, beta2_pow = no_tensor;
  /// The forward operators [0, pending) and blocks [0, pending_blocks) still to run backwards.
  std::size_t pending = 0, pending_blocks = 0;
};

/// Builds the training step of plan `f` into `p` (see the file comment): `build` at once, or
/// `start`, `resume` as often as needed, then `finish`.
template <std::size_t T, std::size_t O, std::size_t T2, std::size_t O2>
class step_builder {
 public:
  constexpr step_builder(const plan<T, O>& f, plan<T2, O2>& p, step_state<T, T2>& s, const training_options& options)
      : f_(f), p_(p), s_(s), options_(options) {}

  constexpr void build(tensor_id loss) {
    start(loss);
    resume(f_.op_count_);
    finish();
  }

  /// Copies the forward plan and seeds the loss's gradient.
  constexpr void start(tensor_id loss) {
    static_assert(T2 >= T && O2 >= O, "a training step holds its forward plan");
    if (loss.index >= f_.tensor_count_)
      raise(make_error(error_kind::invalid_argument, "training_step", "the loss (tensor {}) is not a tensor of the plan",
                       loss.index));
    check_options();
    copy_forward();
    mark_requires_grad();
    // Plan inputs every part of the step shares.
    s_.absent = add_absent();
    s_.learning_rate = add({"learning_rate", {1}, 4, false, {}, -1});
    s_.beta1_pow = add({"beta1_pow", {1}, 4, false, {}, -1});
    s_.beta2_pow = add({"beta2_pow", {1}, 4, false, {}, -1});
    const auto seed = gradient_of(loss.index);
    p_.tensors_[seed].layout_of = static_cast<std::int64_t>(loss.index);
    add_part(loss.index, seed);
    s_.pending = f_.op_count_;
    s_.pending_blocks = f_.block_count_;
  }

  /// Runs about `ops` more forward operators backwards, in reverse order (a block's as its
  /// backward block, whole).
  constexpr void resume(std::size_t ops) {
    for (std::size_t done = 0; s_.pending > 0 && done < ops;) {
      const std::size_t i = s_.pending - 1;
      if (s_.pending_blocks > 0 && i + 1 == f_.blocks_[s_.pending_blocks - 1].end_op) {
        const auto& b = f_.blocks_[--s_.pending_blocks];
        backward_block(s_.pending_blocks);
        done += b.end_op - b.first_op;
        s_.pending = b.first_op;
        continue;
      }
      backward_op(i);
      ++done;
      --s_.pending;
    }
  }
  constexpr bool finished_backward() const noexcept { return s_.pending == 0; }

  /// The optimizer on the parameters declared outside blocks.
  constexpr void finish() {
    for (std::size_t t = 0; t < f_.tensor_count_; ++t)
      if (f_.tensors_[t].trainable && !in_block_body(t)) update(t);
  }

 private:
  using size_t = std::size_t;
  static constexpr std::uint16_t none = no_tensor;

  constexpr void check_options() const {
    const auto& o = options_;
    const auto bad = [](const char* format, std::int64_t v, std::int64_t w = 0) {
      raise(make_error(error_kind::invalid_argument, "training_step", format, v, w));
    };
    if (o.shard_optimizer_states_on >= f_.mesh_.ndim())
      raise(make_error(error_kind::invalid_argument, "training_step",
                       "shard_optimizer_states_on is mesh dim {}, but the mesh has {} dims", o.shard_optimizer_states_on,
                       f_.mesh_.ndim()));
    if (o.shard_optimizer_states_on < -1) bad("shard_optimizer_states_on is {}: a mesh dim, or -1", o.shard_optimizer_states_on);
    if (o.shard_optimizer_states_also_on >= f_.mesh_.ndim() || o.shard_optimizer_states_also_on < -1)
      raise(make_error(error_kind::invalid_argument, "training_step",
                       "shard_optimizer_states_also_on is {}: a mesh dim (the mesh has {} dims), or -1", o.shard_optimizer_states_also_on,
                       f_.mesh_.ndim()));
    if (o.shard_optimizer_states_also_on >= 0 && o.shard_optimizer_states_on < 0)
      bad("shard_optimizer_states_also_on is mesh dim {}, but shard_optimizer_states_on is not set",
          o.shard_optimizer_states_also_on);
    if (o.shard_optimizer_states_also_on >= 0 && o.shard_optimizer_states_also_on == o.shard_optimizer_states_on)
      bad("shard_optimizer_states_also_on is mesh dim {}, the same as shard_optimizer_states_on",
          o.shard_optimizer_states_also_on);
    if (o.zero_stage < 0 || o.zero_stage > 3) bad("zero_stage is {}: ZeRO's stages are 1, 2 and 3", o.zero_stage);
    if (o.zero_stage > 0 && o.shard_optimizer_states_on < 0)
      bad("zero_stage {} shards over a data-parallel mesh dim: set shard_optimizer_states_on", o.zero_stage);
    constexpr std::int64_t most = element_size::max_bytes;
    if (o.state_element_bytes <= 0 || o.state_element_bytes > most)
      bad("state_element_bytes is {}: a dtype's element has 1 to {} bytes", o.state_element_bytes, most);
    if (o.gradient_element_bytes < 0 || o.gradient_element_bytes > most)
      bad("gradient_element_bytes is {}: a dtype's element has 1 to {} bytes (0: the parameter's)",
          o.gradient_element_bytes, most);
  }

  constexpr void copy_forward() {
    p_.mesh_ = f_.mesh_;
    p_.training_ = options_;
    p_.semantics_ = f_.semantics_;
    for (size_t t = 0; t < f_.tensor_count_; ++t) p_.tensors_[t] = f_.tensors_[t];
    for (size_t i = 0; i < f_.op_count_; ++i) p_.ops_[i] = f_.ops_[i];
    for (size_t b = 0; b < f_.block_count_; ++b) p_.blocks_[b] = f_.blocks_[b];
    p_.tensor_count_ = f_.tensor_count_;
    p_.op_count_ = f_.op_count_;
    p_.block_count_ = f_.block_count_;
    if (2 * f_.block_count_ > max_blocks)
      raise(make_error(error_kind::invalid_argument, "training_step", "more than {} repeated blocks in a training step",
                       max_blocks));
    for (size_t t = 0; t < T; ++t) s_.part_head[t] = s_.grad[t] = none;
    for (size_t t = 0; t < T2; ++t) s_.next_part[t] = none;
  }

  // A tensor requires a gradient if it is a parameter or computed from one by an operator that
  // passes gradients. A block's input does if its source does or its output does (runs after the
  // first read the previous run's output).
  constexpr void mark_requires_grad() {
    for (size_t t = 0; t < f_.tensor_count_; ++t) s_.requires_grad[t] = f_.tensors_[t].trainable;
    size_t block = 0;
    for (size_t i = 0; i < f_.op_count_;) {
      if (block < f_.block_count_ && i == f_.blocks_[block].first_op) {
        const auto& b = f_.blocks_[block++];
        s_.requires_grad[b.input.index] = s_.requires_grad[b.source.index];
        mark_ops(b.first_op, b.end_op);
        if (s_.requires_grad[b.output.index] && !s_.requires_grad[b.input.index]) {
          s_.requires_grad[b.input.index] = true;
          mark_ops(b.first_op, b.end_op);
        }
        i = b.end_op;
        continue;
      }
      mark_ops(i, i + 1);
      ++i;
    }
  }
  constexpr void mark_ops(size_t first, size_t end) {
    for (size_t i = first; i < end; ++i) {
      const auto& op = f_.ops_[i];
      bool any = false;
      for (auto t : op.inputs) any = any || s_.requires_grad[t];
      if (!any) continue;
      if (op.grad == nullptr) {  // no recipe: every output would need one (an error if reached)
        for (auto t : op.outputs) s_.requires_grad[t] = true;
        continue;
      }
      // The outputs whose gradients the grad operator does not read (indices, statistics such as
      // invvar or softmax_lse, a seed) pass no gradient.
      const auto g = op.grad(op);
      for (size_t j = 0; j < op.outputs.size(); ++j)
        if (g.operands != nullptr && g.operands->reads_gradient(j)) s_.requires_grad[op.outputs[j]] = true;
    }
  }

  constexpr bool in_block_body(size_t t) const {
    for (size_t b = 0; b < f_.block_count_; ++b)
      if (t > f_.blocks_[b].input.index && t < f_.blocks_[b].end_tensor) return true;
    return false;
  }
  static constexpr bool absent(const tensor_info& t) { return t.shape.empty(); }

  constexpr std::uint16_t add(const tensor_info& t) {
    if (p_.tensor_count_ == T2)
      raise(make_error(error_kind::invalid_argument, "training_step",
                       "more than {} tensors (raise training_step's MaxTensors)", T2));
    return static_cast<std::uint16_t>(p_.add_tensor(t).index);
  }
  /// An absent operand (shape []): an optional input left out, or its output.
  constexpr std::uint16_t add_absent() { return add({"", {}, 4, false, {}, -1}); }
  /// A tensor of t's name, shape and element size, holding `role` of tensor `of`.
  constexpr std::uint16_t add_like(const tensor_info& t, tensor_role role, std::size_t of, std::int64_t producer = -1) {
    return add({t.name, t.shape, t.element_bytes, false, {}, producer, false, role, static_cast<std::int64_t>(of)});
  }
  /// A new gradient tensor of forward tensor t (written by the operator being built); a
  /// parameter's has `gradient_element_bytes` elements, if set.
  constexpr std::uint16_t gradient_of(size_t t) {
    const auto g = add_like(p_.tensors_[t], tensor_role::gradient, t);
    if (p_.tensors_[t].trainable && options_.gradient_element_bytes > 0)
      p_.tensors_[g].element_bytes = options_.gradient_element_bytes;
    return g;
  }
  constexpr void add_part(size_t t, std::uint16_t part) {
    s_.next_part[part] = s_.part_head[t];
    s_.part_head[t] = part;
  }

  /// The gradient of forward tensor t: its one part, or the sum of its parts (an add_n, built
  /// now), or `none`.
  constexpr std::uint16_t gradient(size_t t) {
    if (s_.grad[t] != none || s_.part_head[t] == none) return s_.grad[t];
    if (s_.next_part[s_.part_head[t]] == none) return s_.grad[t] = s_.part_head[t];
    const auto producer = p_.tensors_[t].producer >= 0 ? static_cast<size_t>(p_.tensors_[t].producer) : 0;
    operator_info sum = operator_of<"add_n">({}, p_.ops_[producer].label, phase::backward);
    if (p_.tensors_[t].producer < 0) sum.label = p_.tensors_[t].name;
    static_vector<std::uint16_t, max_operands> parts;
    for (auto c = s_.part_head[t]; c != none; c = s_.next_part[c]) {
      if (parts.size() == max_operands)
        raise(make_error(error_kind::invalid_argument, "training_step",
                         "tensor {} has more than {} gradient parts (readers)", t, max_operands));
      parts.push_back(c);
    }
    for (size_t k = parts.size(); k-- > 0;) sum.inputs.push_back(parts[k]);  // as made: the last reader's first
    s_.grad[t] = gradient_of(t);
    sum.outputs.push_back(s_.grad[t]);
    emit(sum);
    return s_.grad[t];
  }

  constexpr void emit(const operator_info& op) {
    if (p_.op_count_ == O2)
      raise(make_error(error_kind::invalid_argument, "training_step",
                       "more than {} operators (raise training_step's MaxOps)", O2));
    for (auto t : op.outputs) p_.tensors_[t].producer = static_cast<std::int64_t>(p_.op_count_);
    p_.ops_[p_.op_count_++] = op;
  }

  /// Calls f(k) for each k operand o stands for: its index, or each k < n for `*`.
  template <class F>
  static constexpr void each_index(const recipe_operand& o, size_t n, F f) {
    if (o.index != recipe_operand::all) return f(size_t{o.index});
    for (size_t k = 0; k < n; ++k) f(k);
  }

  /// Operator i's grad operator, if a gradient reaches one of its outputs and one of its inputs
  /// requires one.
  constexpr void backward_op(size_t i) {
    const auto& op = f_.ops_[i];
    bool needed = false;
    for (auto t : op.inputs) needed = needed || s_.requires_grad[t];
    if (!needed) return;
    bool reached = false;
    for (auto t : op.outputs) reached = gradient(t) != none || reached;
    if (!reached) return;
    if (op.grad == nullptr)
      raise(make_error(error_kind::invalid_argument, op.name(),
                       "operator {} has no grad recipe: the backward pass cannot run through it (see "
                       "ctspmd/registry/grad_recipes.hpp)",
                       i));
    const grad_operator g = op.grad(op);
    if (g.rule.empty()) return;
    operator_info b{g.rule, op.label, {}, {}, g.attributes, g.forward, g.backward, phase::backward};
    b.cost = g.cost;
    const auto push = [&](auto& list, std::uint16_t t) {
      if (list.size() == max_operands)
        raise(make_error(error_kind::invalid_argument, op.name(), "operator {}'s grad operator has more than {} operands", i,
                         max_operands));
      list.push_back(t);
    };
    for (const recipe_operand& o : g.operands->inputs) {
      if (o.kind == '-') push(b.inputs, s_.absent);
      if (o.kind == 'o') push(b.inputs, o.index < op.outputs.size() ? op.outputs[o.index] : s_.absent);
      if (o.kind == 'i')
        each_index(o, op.inputs.size(), [&](size_t k) {
          if (o.shape_only && b.inputs.size() < 32) b.shape_only |= std::uint32_t{1} << b.inputs.size();
          push(b.inputs, k < op.inputs.size() ? saved(i, k) : s_.absent);
        });
      if (o.kind == 'g')
        each_index(o, op.outputs.size(), [&](size_t k) {
          push(b.inputs, k < op.outputs.size() ? output_gradient(op.outputs[k]) : s_.absent);
        });
    }
    for (const recipe_operand& o : g.operands->outputs)
      each_index(o, op.inputs.size(), [&](size_t k) {
        if (k >= op.inputs.size() || absent(p_.tensors_[op.inputs[k]])) return push(b.outputs, add_absent());
        const auto t = op.inputs[k];
        const auto d = gradient_of(t);
        if (o.pinned) p_.tensors_[d].layout_of = static_cast<std::int64_t>(t);
        push(b.outputs, d);
        if (s_.requires_grad[t]) add_part(t, d);
      });
    emit(b);
  }
  /// The tensor that keeps input k of forward operator i as that operator read it: the grad
  /// operator reads the forward operator's operand, resharded as it was (frameworks keep the
  /// resharded copy), not its producer's layout again. Made on first use.
  constexpr std::uint16_t saved(size_t i, size_t k) {
    auto& op = p_.ops_[i];
    while (op.saved.size() < op.inputs.size()) op.saved.push_back(none);
    if (op.saved[k] == none) {
      const auto& t = p_.tensors_[op.inputs[k]];
      if (absent(t)) return op.inputs[k];
      op.saved[k] = add({t.name, t.shape, t.element_bytes, false, {}, static_cast<std::int64_t>(i), false, t.role,
                         t.role_of});
    }
    return op.saved[k];
  }
  /// Makes the saved inputs block fb's operators' recipes read, together: its runs write them.
  constexpr void save_block_inputs(size_t fb) {
    auto& f = p_.blocks_[fb];
    f.saved_begin = p_.tensor_count_;
    for (size_t i = f.first_op; i < f.end_op; ++i) {
      const auto& op = f_.ops_[i];
      if (op.grad == nullptr) continue;
      const auto g = op.grad(op);
      if (g.operands == nullptr) continue;
      for (const recipe_operand& o : g.operands->inputs)
        if (o.kind == 'i')
          each_index(o, op.inputs.size(), [&](size_t k) {
            if (k < op.inputs.size()) saved(i, k);
          });
    }
    f.saved_end = p_.tensor_count_;
  }

  /// The gradient of output t, zeros where none reaches it, absent where t is.
  constexpr std::uint16_t output_gradient(std::uint16_t t) {
    if (absent(p_.tensors_[t])) return s_.absent;
    if (const auto g = gradient(t); g != none) return g;
    const auto zeros = gradient_of(t);  // a plan input, laid out as t
    p_.tensors_[zeros].layout_of = t;
    return zeros;
  }

  /// The backward pass of forward block fb: a block of as many runs, reading the gradient of the
  /// block's output (from the previous backward run, or in the first from the operators after
  /// the block) and giving the gradient of its input.
  constexpr void backward_block(size_t fb) {
    const block_info& f = f_.blocks_[fb];
    for (size_t i = f.first_op; i < f.end_op; ++i)
      for (auto t : f_.ops_[i].inputs)
        if (s_.requires_grad[t] && t != f.input.index && t < f.input.index)
          raise(make_error(error_kind::invalid_argument, f_.tensors_[t].name,
                           "block {} reads tensor {}, declared outside it, which needs a gradient: every run would add "
                           "to it (declare it in the block, or pass it through the block's input)",
                           fb, t));
    const auto source = gradient(f.output.index);
    if (source == none) return;  // nothing after the block reaches the loss through its output
    // Outside the backward body (declared before its input): the forward operators' saved
    // inputs, which every forward run writes, and room for the layouts of the forward block's
    // first run, which the last backward run reads.
    save_block_inputs(fb);
    p_.blocks_[fb].first_run_at = p_.tensor_count_;
    for (size_t t = f.input.index; t < f.end_tensor; ++t) add_like(f_.tensors_[t], tensor_role::first_run_layout, t);
    for (size_t t = p_.blocks_[fb].saved_begin; t < p_.blocks_[fb].saved_end; ++t)
      add_like(p_.tensors_[t], tensor_role::first_run_layout, t);
    // Inside the body, the output's gradient is the backward run's input (and parts from the body).
    s_.grad[f.output.index] = none;
    s_.part_head[f.output.index] = none;
    const auto& out = p_.tensors_[f.output.index];
    const std::uint16_t input = add({out.name, out.shape, out.element_bytes, false, {}, plan<T2, O2>::block_input,
                                     false, tensor_role::gradient, static_cast<std::int64_t>(f.output.index)});
    add_part(f.output.index, input);
    block_info b{p_.op_count_, 0, f.count, {source}, {input}, {}, 0, static_cast<std::int64_t>(fb)};
    for (size_t i = f.end_op; i-- > f.first_op;) backward_op(i);
    const auto result = gradient(f.input.index);
    if (result == none)
      raise(make_error(error_kind::invalid_argument, "training_step", "the input of block {} receives no gradient", fb));
    for (size_t t = f.input.index + 1; t < f.end_tensor; ++t)
      if (f_.tensors_[t].trainable) update(t);
    b.output = {result};
    b.end_op = p_.op_count_;
    b.end_tensor = p_.tensor_count_;
    if (p_.block_count_ == max_blocks)
      raise(make_error(error_kind::invalid_argument, "training_step", "more than {} repeated blocks", max_blocks));
    p_.blocks_[p_.block_count_++] = b;
    // The last backward run's result is the source's part.
    if (s_.requires_grad[f.source.index]) add_part(f.source.index, result);
  }

  /// The layout of parameter t's optimizer states: sharded over mesh dim m (ZeRO), on the
  /// parameter's first dim its annotation leaves free whose size m divides; else co-sharded on its
  /// first dim whose shard m divides (m minor: frameworks shard a flat buffer, so every
  /// parameter's state is sharded); else on its first dim of at least m's size, unevenly. A
  /// parameter smaller than m keeps its own layout, as does one already sharded over m. With
  /// `shard_optimizer_states_also_on`, m is the product group of both mesh dims (those of them
  /// the parameter does not shard already), split on one tensor dim, the first mesh dim major.
  constexpr tensor_info state_of(size_t t) const {
    const tensor_info& param = p_.tensors_[t];
    tensor_info state{param.name, param.shape, options_.state_element_bytes, false, {}, -1, false,
                      tensor_role::optimizer_state, static_cast<std::int64_t>(t)};
    // The mesh dims of the ZeRO group the parameter's annotation leaves free, and their devices.
    static_vector<std::int64_t, 2> group;
    for (auto m : {options_.shard_optimizer_states_on, options_.shard_optimizer_states_also_on})
      if (m >= 0 && !(param.annotated && param.annotation.shards(m))) group.push_back(m);
    if (group.empty()) return state;
    std::int64_t n = 1;
    for (auto m : group) n *= p_.mesh_.dim_size(m);
    multi_dims_mapping mapping =
        param.annotated ? param.annotation.multi_dims_mapping() : multi_dims_mapping(param.shape.size(), mesh_dims{});
    const auto shard = [&](size_t d) {
      std::int64_t s = param.shape[d];
      for (auto k : mapping[d]) s /= p_.mesh_.dim_size(k);
      return s;
    };
    size_t d = param.shape.size();
    for (size_t k = 0; k < param.shape.size() && d == param.shape.size(); ++k)
      if (mapping[k].empty() && param.shape[k] % n == 0) d = k;
    for (size_t k = 0; k < param.shape.size() && d == param.shape.size(); ++k)
      if (shard(k) % n == 0) d = k;
    for (size_t k = 0; k < param.shape.size() && d == param.shape.size(); ++k)
      if (shard(k) >= n) d = k;
    if (d == param.shape.size()) return state;
    for (auto m : group) mapping[d].push_back(m);
    state.annotated = true;
    state.annotation = tensor_dist_attr(p_.mesh_, mapping);
    return state;
  }

  /// A tensor like `like`, annotated with `layout`, written by an `assign` of `from` in the
  /// optimizer phase: a reshard the plan spells out.
  constexpr std::uint16_t assign(std::uint16_t from, tensor_info like, const tensor_info& layout) {
    like.annotated = layout.annotated;
    like.annotation = layout.annotation;
    like.trainable = false;
    like.producer = -1;
    like.layout_of = -1;
    const auto to = add(like);
    operator_info a = operator_of<"assign">({}, like.name, phase::optimizer);
    a.inputs.push_back(from);
    a.outputs.push_back(to);
    emit(a);
    return to;
  }

  /// The optimizer step of parameter t: adamw on the parameter (or, where its states co-shard a
  /// dim the parameter shards, on its shard: adamw's vote would replicate a dim its operands shard
  /// differently, so the gradient is reduce-scattered and the parameter sliced by `assign`s, and
  /// the updated shard gathered back by a third).
  constexpr void update(size_t t) {
    const auto g = gradient(t);
    if (g == none) return;  // the loss does not reach it
    const tensor_info param = p_.tensors_[t];
    tensor_info state = state_of(t);
    const bool co_shard = state.annotated && state.annotation.is_co_sharded() &&
                          !(param.annotated && param.annotation.is_co_sharded());
    const std::uint16_t param_in = co_shard ? assign(static_cast<std::uint16_t>(t), param, state) : static_cast<std::uint16_t>(t);
    const std::uint16_t grad_in = co_shard ? assign(g, p_.tensors_[g], state) : g;
    const auto moment1 = add(state), moment2 = add(state);
    tensor_info master = state;
    master.role_of = static_cast<std::int64_t>(t);
    const auto master_in = options_.master_weights ? add(master) : s_.absent;
    state.annotated = false;
    operator_info u = operator_of<"adamw">({}, param.name, phase::optimizer);
    for (auto x : {param_in, grad_in, s_.learning_rate, moment1, moment2, s_.absent, s_.beta1_pow, s_.beta2_pow})
      u.inputs.push_back(x);
    if (options_.master_weights) u.inputs.push_back(master_in);
    tensor_info updated = param;
    updated.annotated = false;
    updated.trainable = false;
    updated.producer = -1;
    updated.layout_of = co_shard ? -1 : static_cast<std::int64_t>(t);
    const auto updated_out = add(updated);
    u.outputs.push_back(updated_out);
    u.outputs.push_back(add(state));
    u.outputs.push_back(add(state));
    u.outputs.push_back(add_absent());
    u.outputs.push_back(add({"beta1_pow", {1}, 4, false, {}, -1}));
    u.outputs.push_back(add({"beta2_pow", {1}, 4, false, {}, -1}));
    u.outputs.push_back(options_.master_weights ? add(state) : add_absent());
    emit(u);
    if (co_shard) {  // the updated shard, gathered to the parameter's layout
      updated.layout_of = static_cast<std::int64_t>(t);
      const auto whole = add(updated);
      operator_info a = operator_of<"assign">({}, param.name, phase::optimizer);
      a.inputs.push_back(updated_out);
      a.outputs.push_back(whole);
      emit(a);
    }
  }

  const plan<T, O>& f_;
  plan<T2, O2>& p_;
  step_state<T, T2>& s_;
  training_options options_;
};

}  // namespace detail

namespace detail {
// The capacities of a training step (see training_step).
template <std::size_t MaxTensors, std::size_t T>
inline constexpr std::size_t step_tensors = MaxTensors != 0 ? MaxTensors : 6 * T < 65535 ? 6 * T : 65535;
template <std::size_t MaxOps, std::size_t O>
inline constexpr std::size_t step_ops = MaxOps != 0 ? MaxOps : 3 * O;
}  // namespace detail

/// The training step of forward plan `forward` whose loss is tensor `loss` (see the file
/// comment): a plan of `MaxTensors` tensors and `MaxOps` operators (0: 6 and 3 times the forward
/// plan's). Built in one go, in one constant expression when called in one: for a forward plan of
/// some hundreds of operators, `training_step_of` splits the work.
template <std::size_t MaxTensors = 0, std::size_t MaxOps = 0, std::size_t T, std::size_t O>
constexpr auto training_step(const plan<T, O>& forward, tensor_id loss, const training_options& options = {}) {
  constexpr std::size_t T2 = detail::step_tensors<MaxTensors, T>, O2 = detail::step_ops<MaxOps, O>;
  plan<T2, O2> step(forward.mesh(), forward.semantics());
  detail::step_state<T, T2> state;
  detail::step_builder<T, O, T2, O2>(forward, step, state, options).build(loss);
  return step;
}

namespace detail {
/// Forward operators run backwards per constant expression in `training_step_of`: each part stays
/// well within Clang's default limit of 1,048,576 evaluation steps (an operator costs some
/// thousands: a part of 384 of the flat plan of bench/compile_scaling.cpp, about 570,000). Each
/// part is a constant holding the whole plan built so far, which GCC keeps: fewer, longer parts
/// cost it less memory (some 70 MB a part for that plan's 1,000 operators).
inline constexpr std::size_t ops_per_part = 384;

template <std::size_t T, std::size_t T2, std::size_t O2>
struct step_part {
  plan<T2, O2> step;
  step_state<T, T2> state;
};

/// How many parts `training_step_of` builds a training step of `f` in: each but the last runs
/// at least ops_per_part operators backwards.
template <class Plan>
constexpr std::size_t training_parts(const Plan& f) {
  return f.op_count() <= ops_per_part ? 1 : (f.op_count() + ops_per_part - 1) / ops_per_part;
}

/// `training_step_of`'s building as a staged work (model/staged.hpp): parts of `ops_per_part`
/// forward operators.
template <const auto& Forward, tensor_id Loss, training_options Options, std::size_t T2, std::size_t O2>
struct training_work {
  using forward_type = std::remove_cvref_t<decltype(Forward)>;
  static constexpr std::size_t T = forward_type::max_tensors, O = forward_type::max_ops;
  using state = step_part<T, T2, O2>;
  static constexpr state start() {
    state part{plan<T2, O2>(Forward.mesh(), Forward.semantics()), {}};
    step_builder<T, O, T2, O2> builder(Forward, part.step, part.state, Options);
    builder.start(Loss);
    builder.resume(ops_per_part);
    return part;
  }
  static constexpr void resume(state& part) {
    step_builder<T, O, T2, O2>(Forward, part.step, part.state, Options).resume(ops_per_part);
  }
  static constexpr bool finished(const state&, std::size_t part) { return part + 1 >= training_parts(Forward); }
};
}  // namespace detail

/// `training_step(Forward, Loss, Options)`, for `Forward` a constant (a `constexpr` variable),
/// built over several constant expressions of `detail::ops_per_part` forward operators each, so
/// that the training step of a forward plan of any length stays within the compilers'
/// per-expression limits:
///
///     constexpr auto forward = make_forward();   // a constant expression of its own
///     constexpr auto r = model::verified<[] { return model::training_step_of<forward, tensor_id{loss}>; }>();
template <const auto& Forward, tensor_id Loss, training_options Options = training_options{}, std::size_t MaxTensors = 0,
          std::size_t MaxOps = 0>
inline constexpr auto training_step_of = [] {
  using forward_type = std::remove_cvref_t<decltype(Forward)>;
  constexpr std::size_t T = forward_type::max_tensors, O = forward_type::max_ops;
  constexpr std::size_t T2 = detail::step_tensors<MaxTensors, T>, O2 = detail::step_ops<MaxOps, O>;
  auto part = detail::staged_result<detail::training_work<Forward, Loss, Options, T2, O2>>;
  detail::step_builder<T, O, T2, O2>(Forward, part.step, part.state, Options).finish();
  return part.step;
}();

}  // namespace ctspmd::model

#endif
