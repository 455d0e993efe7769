#ifndef CTSPMD_MODEL_SEARCH_HPP
#define CTSPMD_MODEL_SEARCH_HPP
/// \file Finding a plan: the cheapest layouts for a forward plan's unannotated inputs.
///
///     auto found = model::search(forward, loss, model::h100_cluster(mesh), {.memory_limit = 80 * GB});
///     found.best().layout(w1);            // the layout chosen for parameter w1
///     found.best().cost.step_seconds();   // its training step's exact cost
///     auto plan = model::apply(forward, found.best());   // the plan, annotated: verify it as usual
///
/// What is chosen: the layout of every plan input declared without one (parameters, and data
/// such as the token batch) and of every unannotated output of an `assign` (a reshard point, as
/// Paddle's `dist.reshard`: a mixture of experts' all-to-alls), each either replicated or, per
/// mesh dim of size > 1, split along a tensor dim that mesh dim's size divides (one mesh dim a
/// tensor dim unless `co_shard`: then lower mesh dims major), and the step's plan-level options:
/// ZeRO's stage over `zero_dim` and the recomputation, when asked to try them. A plan input no
/// operator reads is left as declared. A repeated block's body is declared once, so its inputs
/// take one layout for all runs (the block is verified by induction when the chosen plan is
/// propagated).
///
/// How, in two tiers:
/// 1. **Dynamic programming over the forward operators** in program order, a repeated block's
///    body once for all its runs: its input takes its source's layout (or, when the source is an
///    unannotated plan input only the block reads, each candidate in turn), which the body's
///    output must have again when it runs more than once (the steady state induction verifies).
///    A state is the layout
///    of every tensor still to be read (live), with the choices made and an estimate of their
///    cost; an operator reading an undecided input branches over its candidates, runs the
///    operator's rule and adds its estimate; states are ranked by their estimate plus what their
///    live partial sums still owe (a reduce-scatter each: `owed`, so that leaving a sum partial
///    looks no cheaper than reducing it); states with the same live layouts are merged,
///    keeping the two cheapest (the `candidates` cheapest after the last operator: they differ in
///    choices only, and a beam of few layouts alike would crowd out other layouts' states, whose
///    costs come later), so that the search grows with the operators, not with
///    the product of the candidates (a decoder layer's residual stream is one layout again after
///    each block). The estimate of an operator, in seconds on the cluster: its reshards (the
///    collectives propagation would report, latency + bytes / bandwidth) twice (forward, and the
///    backward pass's mirror of them), its FLOPs on a device three times (forward and backward:
///    the rule's, as the exact cost counts them, rules/kit/cost_traits.hpp), and each parameter's
///    gradient all-reduced over the mesh dims on which another input of its operator is split
///    but it is not (data parallelism), and its optimizer step (adamw's kernel on the local
///    elements, states split as the options' ZeRO dims split them); seconds from the cluster's
///    formulas (model/cluster.hpp).
///    What the estimate leaves out, since no single operator knows it: peak memory (a lifetime
///    spans operators), overlap of communication with compute, recomputation, the optimizer
///    step and a pipeline's bubble. `max_states` bounds the states
///    after each operator (the cheapest are kept); exact while the distinct live layouts fit.
///    What makes it fast: a state holds its layouts as indices into a table of the distinct
///    layouts met (a few dozen), so states are small to copy and compare; an operator's rule runs
///    once per distinct layouts of its operands (memoised: states that differ elsewhere share
///    them); the states with the same live layouts form a group, so merging looks at a few
///    groups, not every state; and branch and bound: once `candidates` full assignments are
///    known, a state whose estimate is no cheaper than the dearest of them is dropped (an
///    estimate only grows).
/// 2. **Exact evaluation**: the `candidates` cheapest assignments, the greedy one (below), and
///    data parallelism (every parameter replicated, the reshard points left to propagation, other
///    inputs as the cheapest candidate has them, so the batch stays split as the data is; its
///    `estimate` 0) are applied to the plan, their training steps built, propagated and costed (`cost`), under
///    each plan-level option tried; those whose peak memory exceeds `memory_limit` are dropped,
///    the rest ranked by `step_seconds()`. The best and the next `keep` are returned.
/// 3. **Exact improvement** (`improve`, `model::search` only): from each of the two best plans,
///    the fastest result kept, the plan's layouts change one
///    plan input at a time, every other candidate layout of it evaluated exactly under the best
///    plan's options, and then each option set tried on the layouts as they are; a change that
///    lowers the exact step time (and fits the memory limit) is kept, and passes repeat until none
///    does: the result is a local optimum of the exact cost, whatever the estimate missed. When no
///    candidate fits the memory limit, the moves start from the one least over it, with the whole
///    budget, and a move is kept first if it brings the peak nearer the limit (then, once it fits,
///    if it is faster).
///    `search_result::improvements` lists the layouts' moves. At most `improve_budget` exact
///    evaluations (256 by default, half for each start): at the budget the moves made so far stay.
///
/// The greedy choice is DTensor's: each operator's undecided inputs take the layouts cheapest
/// for that operator and what came before it (the same dynamic programming with one state; a
/// block's steady state is not required of it: propagation lays its runs out as they come).
/// It is one of the evaluated candidates, so the search never returns a plan worse than greedy.
///
/// Decisions: the estimate only ranks candidates for tier 2 and every returned figure is exact,
/// but the optimum of the exact cost is found only when it is among the `candidates` cheapest
/// estimates (raise `candidates` to widen the net; the runtime tests compare with enumeration of
/// every assignment). The first block run more than once is searched once per layout of its
/// input (each a run of the dynamic programming whose cheapest join the candidates), so that its
/// steady states do not compete in one beam; a later block's input layout is a branch. Memory:
/// each state carries a lower bound of the persistent bytes its parameters take a device (the
/// parameter, its gradient, its optimizer's moments and master copy, split over the ZeRO dim
/// tried), and a state over `memory_limit` by it is dropped, so that the candidates are among the
/// layouts that can fit; activations and transients are not estimated, so the exact evaluation
/// still filters the candidates, and under a tight limit the plan returned is the best of those
/// that fit, not necessarily the best that fits. A plan input that its first
/// reader cannot take as laid out is resharded on every step, as propagation does for an
/// annotated one. An input that operators read but the loss does not depend on is chosen like
/// the others, by its readers' estimate.
///
/// Compile time: `search` is one constant expression; `model::searched<make_problem>()` spreads
/// the same search over constant expressions (the dynamic programming in parts of
/// `detail::search_work_per_part` units of work; each exact evaluation built, propagated and
/// costed in parts as `training_step_of`, `verified` and `verified_cost` do), so that a larger
/// plan stays within the compilers' default limits. A Llama-3-8B decoder layer's search
/// (static_tests/model/search_llama_test.cpp) compiles in some 15 s (bench/README.md).

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/plan.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>

namespace ctspmd::model {

/// The most unannotated plan inputs a search chooses layouts for.
inline constexpr std::size_t max_search_inputs = 48;

/// Options of `search`.
struct search_options {
  /// The bytes a device may hold at the step's peak (`memory().peak`); 0: no limit.
  std::int64_t memory_limit = 0;
  /// Assignments of layouts the dynamic programming keeps per live layout and passes to exact
  /// evaluation (at most `max_search_candidates`).
  std::size_t candidates = 16;
  /// Plans returned after the best (at most `max_search_candidates - 1`).
  std::size_t keep = 3;
  /// States the dynamic programming keeps after each operator (at most `max_search_states`).
  std::size_t max_states = 64;
  /// The step's precision and its ZeRO stage and recomputation (the first tried).
  training_options training{};
  /// Also try ZeRO stages 1, 2 and 3 over this mesh dim; -1: only `training`'s.
  std::int64_t zero_dim = -1;
  /// Also try selective and full recomputation.
  bool try_recompute = false;
  /// Candidates include co-shards (a tensor dim split by several mesh dims, lower mesh dims major).
  bool co_shard = false;
  /// The dynamic programming's budget in units of work (a branch 1 unit, a rule run
  /// `layout_search::rule_run_work` more): a search that would take more fails with an error
  /// saying so instead of running on. Some 4 x 10^7 units take a second (ctspmd-infer, GCC 12
  /// Release), so the default stops a search at about half a minute; the largest search tried,
  /// 23 batched matmuls with 46 free operands and co-shards on a 4-D mesh, took 1.8 x 10^8 units
  /// (4.4 s). 0: no budget.
  std::size_t max_work = 1'000'000'000;
  /// Improve the best plan by exact moves (tier 3, see the file comment); `model::search` only
  /// (`searched`, at compile time, returns tier 2's best).
  bool improve = true;
  /// The exact evaluations tier 3 may take in all; at the budget it stops, its moves so far kept.
  std::size_t improve_budget = 256;
};
inline constexpr std::size_t max_search_candidates = 16;
inline constexpr std::size_t max_search_states = 64;

/// A layout chosen for an unannotated plan input.
struct chosen_layout {
  tensor_id tensor{};
  tensor_dist_attr attr{};
  friend constexpr bool operator==(const chosen_layout&, const chosen_layout&) = default;
};

/// A plan a search found: its layouts, step options and exact cost.
struct searched_plan {
  static_vector<chosen_layout, max_search_inputs> layouts{};
  training_options training{};
  step_cost cost{};
  double estimate = 0;  ///< the dynamic programming's estimate of its layouts (seconds)
  bool greedy = false;  ///< the greedy per-operator choice's layouts

  /// The layout chosen for plan input `t`.
  constexpr const tensor_dist_attr& layout(tensor_id t) const {
    for (const auto& c : layouts)
      if (c.tensor == t) return c.attr;
    raise(make_error(error_kind::not_found, "search", "tensor {} is not a plan input the search chose a layout for", t.index));
    return layouts[0].attr;
  }
  constexpr double step_seconds() const noexcept { return cost.step_seconds(); }
};

/// A move of tier 3 (see the file comment): plan input `tensor` laid out `to` instead of `from`,
/// which took the step from `before` to `after` seconds (faster, except while a plan over the
/// memory limit is brought under it: then its peak went down).
struct improvement {
  tensor_id tensor{};
  tensor_dist_attr from{}, to{};
  double before = 0, after = 0;
};
/// The most moves a search reports.
inline constexpr std::size_t max_improvements = 64;

/// What `search` found: the feasible plans, best first, and the greedy choice's best plan.
struct search_result {
  static_vector<searched_plan, max_search_candidates> plans{};
  static_vector<improvement, max_improvements> improvements{};  ///< tier 3's moves, in order
  searched_plan greedy{};
  bool greedy_feasible = false;
  std::size_t states = 0;       ///< states the dynamic programming created
  std::size_t work = 0;         ///< its units of work (`search_options::max_work`)
  std::size_t evaluations = 0;  ///< training steps built, propagated and costed
  std::size_t infeasible = 0;   ///< of which failed to propagate or exceeded the memory limit

  constexpr bool ok() const noexcept { return !plans.empty(); }
  constexpr const searched_plan& best() const {
    if (plans.empty())
      raise(make_error(error_kind::not_found, "search",
                       "no plan fits: every candidate ({} evaluated) failed or exceeded the memory limit", evaluations));
    return plans[0];
  }
};

/// `forward` with the layouts of `found` annotated on its inputs.
template <std::size_t T, std::size_t O>
constexpr plan<T, O> apply(const plan<T, O>& forward, const searched_plan& found) {
  plan<T, O> p = forward;
  for (const auto& c : found.layouts) p.annotate(c.tensor, c.attr);
  return p;
}

namespace detail {

/// An object on the heap (constant evaluation allows it, transiently): plans, steps and their
/// propagations are too large for a run-time stack.
template <class T>
class heap {
 public:
  template <class... A>
  constexpr explicit heap(A&&... a) : p_(new T(static_cast<A&&>(a)...)) {}
  heap(const heap&) = delete;
  heap& operator=(const heap&) = delete;
  constexpr ~heap() { delete p_; }
  constexpr T& operator*() const noexcept { return *p_; }
  constexpr T* operator->() const noexcept { return p_; }

 private:
  T* p_;
};

/// Candidate `code` (of `candidate_codes`) for a tensor of `shape` on `mesh`: per mesh dim of
/// size > 1 (mixed radix, rank + 1 each), none or a tensor dim; a tensor dim split by several mesh
/// dims only with `co_shard` (lower mesh dims major), and only if the product of their sizes
/// divides it. False for a code that breaks a rule (skipped).
constexpr bool candidate_layout(const process_mesh& mesh, const tensor_shape& shape, std::size_t code,
                                tensor_dist_attr& out, bool co_shard = false) {
  multi_dims_mapping mapping(shape.size(), mesh_dims{});
  std::array<std::int64_t, max_rank> parts{};
  for (auto& n : parts) n = 1;
  const std::size_t radix = shape.size() + 1;
  for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
    const std::int64_t n = mesh.dim_size(m);
    if (n == 1) continue;
    const std::size_t digit = code % radix;
    code /= radix;
    if (digit == 0) continue;
    const std::size_t d = digit - 1;
    if ((!mapping[d].empty() && !co_shard) || shape[d] <= 0 || shape[d] % (parts[d] * n) != 0) return false;
    parts[d] *= n;
    mapping[d].push_back(m);
  }
  out = tensor_dist_attr(mesh, mapping);
  return true;
}
constexpr std::size_t candidate_codes(const process_mesh& mesh, const tensor_shape& shape) {
  std::size_t n = 1;
  for (std::int64_t m = 0; m < mesh.ndim(); ++m)
    if (mesh.dim_size(m) > 1) n *= shape.size() + 1;
  return n;
}

/// A tensor's layout in a search state: its index in the search's table of layouts (each
/// distinct layout stored once, so that states are small to copy and compare).
struct live_layout {
  std::uint16_t tensor = 0;
  std::uint16_t layout = 0;
  friend constexpr bool operator==(const live_layout&, const live_layout&) = default;
};
inline constexpr std::size_t max_live = 32;
/// The most distinct layouts one search meets (its table's capacity).
inline constexpr std::size_t max_search_layouts = 1024;

struct search_state {
  static_vector<live_layout, max_live> live{};     ///< by tensor index
  std::array<std::uint16_t, max_search_inputs> code{};  ///< per search input its candidate, or 0xffff
  double estimate = 0;
  double memory = 0;        ///< a lower bound of the persistent bytes a device holds (see `persistent`)
  double owed = 0;          ///< what its live partial tensors' reductions still cost (see `owed`)
  std::uint64_t key = 0;    ///< a hash of `live`
  std::uint8_t group = 0;  ///< (in the search's next list: its group of states with the same `live`)
};

/// The layouts the dynamic programming passes to exact evaluation.
struct search_candidates {
  static_vector<std::uint16_t, max_search_inputs> inputs{};  ///< the tensors chosen for
  struct entry {
    std::array<std::uint16_t, max_search_inputs> code{};
    double estimate = 0;
    bool greedy = false;
  };
  /// Cheapest estimate first; then greedy's, and the replicated assignment's (`search`).
  static_vector<entry, max_search_candidates + 2> entries{};
  std::size_t states = 0;
  std::size_t work = 0;  ///< the units of work taken (`layout_search::rule_run_work`)
  bool co_shard = false;  ///< the candidates' codes include co-shards (`search_options::co_shard`)
};

/// The plan-level options tried with each candidate: `o.training`, then ZeRO's stages over
/// `zero_dim` and the recomputations asked for.
constexpr static_vector<training_options, 12> option_sets(const search_options& o) {
  static_vector<training_options, 12> out;
  static_vector<training_options, 4> zero;
  zero.push_back(o.training);
  if (o.zero_dim >= 0)
    for (std::int64_t stage = 1; stage <= 3; ++stage) {
      training_options t = o.training;
      t.shard_optimizer_states_on = o.zero_dim;
      t.zero_stage = stage;
      // a second dim is kept only with the dim it pairs with, and never the same dim twice
      if (o.training.shard_optimizer_states_on != o.zero_dim || t.shard_optimizer_states_also_on == o.zero_dim)
        t.shard_optimizer_states_also_on = -1;
      if (!(t.stage() == o.training.stage() && t.shard_optimizer_states_on == o.training.shard_optimizer_states_on &&
            t.shard_optimizer_states_also_on == o.training.shard_optimizer_states_also_on))
        zero.push_back(t);
    }
  for (const auto& z : zero) {
    out.push_back(z);
    if (o.try_recompute)
      for (auto r : {recompute::none, recompute::selective, recompute::full})
        if (r != z.recompute) {
          training_options t = z;
          t.recompute = r;
          out.push_back(t);
        }
  }
  return out;
}

/// The dynamic programming of tier 1 (see the file comment) over plan `p`.
template <std::size_t T, std::size_t O>
class layout_search {
 public:
  /// The work `resume` counts: a branch whose operator's outcome is known (memoised) is one unit;
  /// one that runs the operator's rule costs this many more.
  static constexpr std::size_t rule_run_work = 15;

  constexpr layout_search(const plan<T, O>& p, const cluster& c, const search_options& o)
      : p_(p), c_(c), o_(o) {
    if (o.candidates == 0 || o.candidates > max_search_candidates)
      raise(make_error(error_kind::invalid_argument, "search", "candidates is {}: it must be in [1, {}]", o.candidates,
                       max_search_candidates));
    if (o.keep >= max_search_candidates)
      raise(make_error(error_kind::invalid_argument, "search", "keep is {}: it must be below {}", o.keep,
                       max_search_candidates));
    if (o.max_states == 0 || o.max_states > max_search_states)
      raise(make_error(error_kind::invalid_argument, "search", "max_states is {}: it must be in [1, {}]", o.max_states,
                       max_search_states));
    if (o.memory_limit < 0)
      raise(make_error(error_kind::invalid_argument, "search",
                       "memory_limit is {}: it must be positive (or 0: no limit)", o.memory_limit));
    c.check("search");
    if (o.zero_dim < -1 || o.zero_dim >= p.mesh().ndim())
      raise(make_error(error_kind::invalid_argument, "search", "zero_dim is {}: a mesh dim (the mesh has {} dims), or -1",
                       o.zero_dim, p.mesh().ndim()));
    for (auto& v : input_of_) v = none;
    for (auto& v : slot_) v = none;
    for (std::size_t t = 0; t < p.tensor_count(); ++t) {
      const auto& info = p.tensor_at(t);
      // A plan input, or the output of an `assign` (a reshard point: Paddle's `dist.reshard`).
      const bool reshard_point =
          info.producer >= 0 && p.op_at(static_cast<size_t>(info.producer)).cost.kind == cost_kind::communication;
      if ((info.producer != -1 && !reshard_point) || info.annotated || info.role != tensor_role::value ||
          info.layout_of >= 0)
        continue;
      if (inputs_.size() == max_search_inputs)
        raise(make_error(error_kind::invalid_argument, "search",
                         "more than {} plan inputs without a layout: annotate some", max_search_inputs));
      for (auto s : info.shape)
        if (s < 0)
          raise(make_error(error_kind::invalid_argument, "search",
                           "tensor {} has a size unknown until run time: a search needs every size", t));
      if (candidate_codes(p.mesh(), info.shape) > 0xffff)  // a state's codes are 16 bits, 0xffff: undecided
        raise(make_error(error_kind::invalid_argument, "search",
                         "tensor {} has {} candidate layouts: a search handles at most 65,535 (annotate it)", t,
                         candidate_codes(p.mesh(), info.shape)));
      input_of_[t] = static_cast<std::uint16_t>(inputs_.size());
      inputs_.push_back(static_cast<std::uint16_t>(t));
    }
    schedule();
  }

  /// Starts the search: the full dynamic programming, then the greedy one (see the file comment).
  constexpr void start() {
    if (step_count_ == 0) raise(make_error(error_kind::invalid_argument, "search", "the plan has no operators"));
    begin_phase(0);
  }
  /// Runs about `budget` units of work (see `rule_run_work`): branches, each an operator run on
  /// a state with some inputs' layouts chosen.
  constexpr void resume(std::size_t budget) {
    while (budget > 0 && phase_ < 2) {
      if (at_ == lists_[cur_].size()) {
        finish_step();
        continue;
      }
      if (branch_ == 0) begin_state();
      const std::size_t work = run_branch(branch_);
      budget -= work < budget ? work : budget;
      result_.work += work;
      if (o_.max_work > 0 && result_.work > o_.max_work)
        raise(make_error(error_kind::invalid_argument, "search",
                         "the layout search took more than max_work = {} units of work: annotate some inputs, lower "
                         "max_states, turn co_shard off or raise max_work",
                         o_.max_work));
      if (++branch_ == branches_) {
        branch_ = 0;
        ++at_;
      }
    }
  }
  constexpr bool finished() const noexcept { return phase_ == 2; }
  /// The candidates for exact evaluation: the full search's cheapest, then the greedy choice.
  constexpr const search_candidates& result() const {
    if (!finished()) raise(make_error(error_kind::precondition_not_met, "search", "the search is not finished"));
    return result_;
  }

  /// The layout of candidate `code` of search input `i`.
  constexpr tensor_dist_attr layout_of(std::size_t i, std::uint16_t code) const {
    tensor_dist_attr a;
    candidate_layout(p_.mesh(), p_.tensor_at(inputs_[i]).shape, code, a, o_.co_shard);
    return a;
  }

 private:
  using size_t = std::size_t;
  using states = static_vector<search_state, max_search_states>;
  using specs = static_vector<dist_tensor_spec, max_operands>;
  static constexpr spec_span span(const specs& s) noexcept { return {s.data(), s.size()}; }
  static constexpr spmd_info& cleared(spmd_info& info) noexcept {
    info.inputs.clear();
    info.outputs.clear();
    return info;
  }
  /// No layout (an index into `layouts_`), no search input, an undecided code.
  static constexpr std::uint16_t none = 0xffff;

  // One step of the schedule: operator `op` run `weight` times, after `bind` when it is set: a
  // block's input `bind_to` takes tensor `bind_from`'s layout (or, when that is an undecided plan
  // input, a candidate both take).
  struct step {
    std::uint16_t op = 0;
    std::int64_t weight = 1;
    bool bind = false;
    std::uint16_t bind_to = 0, bind_from = 0;
    static_vector<std::uint16_t, 2 * max_operands + 1> dies{};  ///< tensors not read after it
    /// The last operator of a block run more than once: its output, which must have the layout
    /// the block's input took; else -1.
    std::int64_t closes = -1;
  };
  /// In a state's `live`: the layout a block's input took, while the block runs.
  static constexpr std::uint16_t entry_layout = 0xffff;

  // What running a step's operator on some layouts of its operands gives, memoised (states that
  // differ elsewhere read the same layouts): the key is the step, its inputs' layouts and its
  // outputs' pins (an annotated output's, or a reshard point's chosen here; `none`: free).
  struct outcome {
    size_t step = static_cast<size_t>(-1);
    static_vector<std::uint16_t, 2 * max_operands> key{};
    bool ran = false;  ///< the rule accepts the layouts
    double cost = 0;   ///< what it adds to the estimate
    static_vector<std::uint16_t, max_operands> out{};  ///< its outputs' layouts
  };
  static constexpr size_t memo_size = 256;
  // A candidate layout of a tensor, memoised: `layout` is `none` for a code that breaks a rule.
  struct candidate {
    std::uint16_t tensor = none, code = 0, layout = none;
  };
  static constexpr size_t candidate_memo_size = 256;

  constexpr void schedule() {
    for (size_t k = 0; k < p_.op_count(); ++k)
      for (auto t : p_.op_at(k).inputs) read_by_op_[t] = true;
    size_t i = 0;
    while (i < p_.op_count()) {
      size_t found = p_.block_count();
      for (size_t b = 0; b < p_.block_count(); ++b)
        if (p_.block_at(b).first_op == i && p_.block_at(b).end_op > i) found = b;
      if (found == p_.block_count()) {
        add_step(i, 1, false, 0, 0);
        ++i;
        continue;
      }
      const block_info* blk = &p_.block_at(found);
      // One run standing for all: its input takes a chosen layout, which its output must have
      // again when the block runs more than once (the runs repeat, as induction verifies).
      const auto in = static_cast<std::uint16_t>(blk->input.index);
      for (size_t k = blk->first_op; k < blk->end_op; ++k)
        add_step(k, static_cast<std::int64_t>(blk->count), k == blk->first_op, in,
                 static_cast<std::uint16_t>(blk->source.index));
      if (blk->count > 1) {
        steps_[step_count_ - 1].closes = static_cast<std::int64_t>(blk->output.index);
        const auto from = blk->source.index;
        if (looped_ < 0 && input_of_[from] != none && !read_by_op_[from])
          looped_ = static_cast<std::int64_t>(step_count_ - (blk->end_op - blk->first_op));
      }
      i = blk->end_op;
    }
    // Liveness, backwards: a tensor dies after the step that last reads it before it is written
    // again (or, never read, after the step that writes it).
    std::array<bool, T> needed{};
    for (size_t s = step_count_; s-- > 0;) {
      auto& st = steps_[s];
      const auto& op = p_.op_at(st.op);
      for (auto t : op.outputs) {
        if (!needed[t]) st.dies.push_back(t);
        needed[t] = false;
      }
      for (auto t : op.inputs) {
        if (!needed[t]) {
          bool listed = false;
          for (auto d : st.dies) listed = listed || d == t;
          if (!listed) st.dies.push_back(t);
        }
        needed[t] = true;
      }
      if (st.bind) {
        needed[st.bind_to] = false;
        if (!needed[st.bind_from]) st.dies.push_back(st.bind_from);
        needed[st.bind_from] = true;
      }
    }
  }
  constexpr void add_step(size_t op, std::int64_t weight, bool bind, std::uint16_t to, std::uint16_t from) {
    if (step_count_ == O)
      raise(make_error(error_kind::invalid_argument, "search", "more than {} operator runs to search", O));
    step s;
    s.op = static_cast<std::uint16_t>(op);
    s.weight = weight;
    s.bind = bind;
    s.bind_to = to;
    s.bind_from = from;
    steps_[step_count_++] = s;
  }

  // ---- the table of layouts: each distinct layout once, found by hash (open addressing) ----
  constexpr std::uint64_t hash(const tensor_dist_attr& a) const {
    std::uint64_t h = 1469598103934665603ull ^ a.rank();
    for (std::int64_t m = 0; m < a.process_mesh().ndim(); ++m) {
      const auto st = state_on(a, m);
      h = (h ^ static_cast<std::uint64_t>(st.kind * 64 + st.value * 4 + st.order)) * 1099511628211ull;
    }
    return h;
  }
  /// The index of layout `a` in the table, added if new.
  constexpr std::uint16_t intern(const tensor_dist_attr& a) {
    size_t at = static_cast<size_t>(hash(a) % slot_.size());
    for (; slot_[at] != none; at = (at + 1) % slot_.size())
      if (layouts_[slot_[at]] == a) return slot_[at];
    if (layout_count_ == max_search_layouts)
      raise(make_error(error_kind::invalid_argument, "search",
                       "more than {} distinct layouts met: annotate some inputs, or search without co_shard",
                       max_search_layouts));
    layouts_[layout_count_] = a;
    slot_[at] = static_cast<std::uint16_t>(layout_count_);
    return static_cast<std::uint16_t>(layout_count_++);
  }
  /// Candidate `code` of tensor t's layout, or `none` if it breaks a rule.
  constexpr std::uint16_t candidate_of(size_t t, size_t code) {
    auto& c = candidates_[(t * 31 + code) % candidate_memo_size];
    if (c.tensor != t || c.code != code) {
      tensor_dist_attr a;
      c = {static_cast<std::uint16_t>(t), static_cast<std::uint16_t>(code),
           candidate_layout(p_.mesh(), p_.tensor_at(t).shape, code, a, o_.co_shard) ? intern(a) : none};
    }
    return c.layout;
  }

  // ---- a state's live layouts, by tensor index ----
  static constexpr std::uint16_t find(const search_state& s, size_t t) {
    for (const auto& l : s.live)
      if (l.tensor == t) return l.layout;
    return none;
  }
  static constexpr void put(search_state& s, size_t t, std::uint16_t layout) {
    size_t k = 0;
    while (k < s.live.size() && s.live[k].tensor < t) ++k;
    if (k < s.live.size() && s.live[k].tensor == t) {
      s.live[k].layout = layout;
      return;
    }
    if (s.live.size() == max_live)
      raise(make_error(error_kind::invalid_argument, "search", "more than {} tensors live at once", max_live));
    s.live.push_back({});
    for (size_t j = s.live.size() - 1; j > k; --j) s.live[j] = s.live[j - 1];
    s.live[k] = {static_cast<std::uint16_t>(t), layout};
  }
  static constexpr void drop(search_state& s, size_t t) {
    size_t k = 0;
    while (k < s.live.size() && s.live[k].tensor != t) ++k;
    if (k == s.live.size()) return;
    for (; k + 1 < s.live.size(); ++k) s.live[k] = s.live[k + 1];
    s.live.pop_back();
  }
  static constexpr std::uint64_t hash(const search_state& s) {
    std::uint64_t h = 1469598103934665603ull;
    for (const auto& l : s.live) h = (h ^ (std::uint64_t{l.tensor} << 16 | l.layout)) * 1099511628211ull;
    return h;
  }

  // The estimate of resharding tensor t from `from` to `to` (propagation's collectives: see
  // `add_reshards`), in seconds.
  constexpr double reshard_seconds(size_t t, const tensor_dist_attr& from, const tensor_dist_attr& to) const {
    if (from == to) return 0;
    const auto& mesh = p_.mesh();
    double s = 0;
    std::uint32_t grouped = 0;
    for (std::int64_t m = 0; m < mesh.ndim(); ++m) {
      const auto a = state_on(from, m), b = state_on(to, m);
      if (a == b || ((grouped >> m) & 1) != 0) continue;
      const auto kind = classify(a, b);
      const std::uint32_t group = product_group(from, to, m, kind);
      const std::int64_t n = group_size(mesh, group);
      grouped |= group;
      if (!moves_data(kind) || n == 1) continue;
      const auto& info = p_.tensor_at(t);
      const auto bytes = static_cast<double>(reshard_bytes(kind, info.shape, info.element_bytes, from, n));
      // the collective and backward's mirror: the same again, but for a gather the gathered
      // gradient's all-reduce (twice its bytes) and, unless kept, the gather again
      // (model/cost/memory.hpp)
      const double collectives = kind != collective::all_gather ? 2 : o_.training.keep_gathered_inputs ? 2 : 3;
      const double sent = kind != collective::all_gather ? 2 * bytes : (o_.training.keep_gathered_inputs ? 3 : 4) * bytes;
      s += c_.seconds(m, collectives, sent, "search");
    }
    return s;
  }
  constexpr double seconds(std::int64_t m, double bytes) const { return c_.seconds(m, 1, bytes, "search"); }
  // What tensor t laid out partial as `a` still owes: its reduction, at least a reduce-scatter
  // over its partial mesh dims (half an all-reduce's bytes). States are ranked by their estimate
  // plus what they owe (`ranked`): a state that leaves a sum partial is no cheaper for it, and
  // such states, alike in estimate, would crowd the beam (a decoder layer's q, k and v, each
  // split by columns or by rows: eight states alike, seven of them owing reductions).
  constexpr double owed(size_t t, const tensor_dist_attr& a) const {
    tensor_dist_attr reduced = a;
    reduced.clean_partial_status();
    return reshard_seconds(t, a, reduced) / 2;
  }
  static constexpr double ranked(const search_state& s) noexcept { return s.estimate + s.owed; }
  // (Shapes and layouts apart, not dist_tensor_specs: building one checks it, a cost in constant
  // evaluation.)
  static constexpr std::int64_t local(const tensor_shape& shape, const tensor_dist_attr& a, std::int64_t d) {
    const std::int64_t rank = static_cast<std::int64_t>(shape.size());
    if (rank == 0) return 1;
    const auto at = static_cast<size_t>(d < 0 ? (d + rank < 0 ? 0 : d + rank) : d);
    const std::int64_t n = a.parts(at);
    return (shape[at] + n - 1) / n;
  }
  static constexpr double elements(const tensor_shape& shape, const tensor_dist_attr& a) {
    double n = 1;
    for (size_t d = 0; d < shape.size(); ++d) n *= static_cast<double>(local(shape, a, static_cast<std::int64_t>(d)));
    return n;
  }
  // The seconds a device computes the operator, from its inputs as it reads them (`in`) and its
  // outputs (`out`): its rule's FLOPs and bytes, as the cost counts them
  // (rules/kit/cost_traits.hpp), on the cluster's roofline.
  constexpr double kernel_seconds(const operator_info& op, const dist_attrs& in, const dist_attrs& out) const {
    local_operands li, lo;
    for (size_t k = 0; k < op.inputs.size(); ++k)
      li.push_back(p_.tensor_at(op.inputs[k]).shape, in[k], p_.tensor_at(op.inputs[k]).element_bytes);
    for (size_t j = 0; j < op.outputs.size(); ++j)
      lo.push_back(p_.tensor_at(op.outputs[j]).shape, out[j], p_.tensor_at(op.outputs[j]).element_bytes);
    return c_.kernel_seconds(static_cast<double>(op.flops(li, lo)), static_cast<double>(op.bytes(li, lo)), "search");
  }

  // Phase 0: the full search, `max_states` wide, once per layout of the first repeated block's
  // input (entry_); 1: the greedy one, one state wide.
  constexpr void begin_phase(int phase) {
    phase_ = phase;
    width_ = phase == 0 ? o_.max_states : 1;
    per_key_ = phase == 0 ? o_.candidates : 1;
    if (phase == 0 && looped_ >= 0) {  // the next layout of the looped block's input, or the greedy phase
      const auto& shape = p_.tensor_at(steps_[static_cast<size_t>(looped_)].bind_to).shape;
      tensor_dist_attr a;
      while (entry_ < candidate_codes(p_.mesh(), shape) && !candidate_layout(p_.mesh(), shape, entry_, a, o_.co_shard)) ++entry_;
      if (entry_ == candidate_codes(p_.mesh(), shape)) return begin_phase(1);
    }
    step_ = 0;
    at_ = 0;
    branch_ = 0;
    cur_ = 0;
    lists_[0].clear();
    search_state start;
    for (auto& c : start.code) c = none;
    lists_[0].push_back(start);
    lists_[1].clear();
    groups_.clear();
  }
  constexpr void finish_step() {
    auto& next = lists_[1 - cur_];
    if (next.empty() && phase_ == 1) {  // greedy's choices reached a dead end: no greedy candidate
      if (result_.entries.empty() && !over_limit_)  // (over the memory limit: no candidate, and no plan fits)
        raise(make_error(error_kind::invalid_argument, p_.op_at(steps_[step_].op).name(),
                         "search: no layouts of the plan's inputs found let operator {} run", steps_[step_].op));
      result_.states = created_;
      phase_ = 2;
      return;
    }
    lists_[cur_].clear();
    groups_.clear();
    cur_ = 1 - cur_;
    at_ = 0;
    branch_ = 0;
    if (++step_ < step_count_ && !next.empty()) return;
    auto& done = lists_[cur_];
    sort(done);
    if (phase_ == 0) {  // the cheapest of this run join the candidates, cheapest first
      result_.inputs = inputs_;
      result_.co_shard = o_.co_shard;
      for (const auto& st : done) {
        bool seen = false;
        for (const auto& e : result_.entries) seen = seen || e.code == st.code;
        if (seen) continue;
        size_t at = 0;
        while (at < result_.entries.size() && result_.entries[at].estimate <= st.estimate) ++at;
        if (at == o_.candidates) break;
        if (result_.entries.size() < o_.candidates) result_.entries.push_back({});
        for (size_t j = result_.entries.size() - 1; j > at; --j) result_.entries[j] = result_.entries[j - 1];
        result_.entries[at] = {st.code, st.estimate, false};
      }
      ++entry_;
      begin_phase(looped_ >= 0 ? 0 : 1);
    } else {
      result_.entries.push_back({done[0].code, done[0].estimate, true});
      // data parallelism: the parameters replicated (code 0), reshard points left to propagation,
      // other inputs (data) as the cheapest candidate lays them out
      search_candidates::entry replicated{result_.entries[0].code, 0, false};
      for (size_t i = 0; i < inputs_.size(); ++i) {
        const auto& info = p_.tensor_at(inputs_[i]);
        if (replicated.code[i] != none && (info.trainable || info.producer >= 0))
          replicated.code[i] = info.trainable ? 0 : none;
      }
      bool seen = false;
      for (const auto& e : result_.entries) seen = seen || e.code == replicated.code;
      if (!seen) result_.entries.push_back(replicated);
      result_.states = created_;
      phase_ = 2;
    }
  }

  // Whether a block's source is an undecided search input no operator reads: it then takes the
  // layout chosen for the block's input (no reshard), not a branch of its own.
  constexpr bool follows_entry(const search_state& st, const step& stp) const {
    const auto i = input_of_[stp.bind_from];
    return i != none && st.code[i] == none && !read_by_op_[stp.bind_from];
  }

  // The undecided search inputs step step_ reads in state at_, and how many branches they make.
  constexpr void begin_state() {
    const step& stp = steps_[step_];
    const auto& op = p_.op_at(stp.op);
    const search_state& st = lists_[cur_][at_];
    open_.clear();
    branches_ = 1;
    const auto reads = [&](std::uint16_t t) {
      const auto i = input_of_[t];
      if (i == none || st.code[i] != none) return;
      for (auto o : open_)
        if (o == i) return;
      open_.push_back(i);
      branches_ *= candidate_codes(p_.mesh(), p_.tensor_at(t).shape);
      if (branches_ > 100000)
        raise(make_error(error_kind::invalid_argument, op.name(),
                         "search: operator {} reads inputs with more than 100,000 layouts together", stp.op));
    };
    if (stp.bind) {
      if (phase_ != 0 || !follows_entry(st, stp)) reads(stp.bind_from);
      if (phase_ == 0 && follows_entry(st, stp) && static_cast<std::int64_t>(step_) != looped_)  // a branch
        branches_ *= candidate_codes(p_.mesh(), p_.tensor_at(stp.bind_to).shape);
    }
    for (auto t : op.inputs) reads(t);
    for (auto t : op.outputs) reads(t);  // a reshard point's layout
  }
  // Branch b of state at_ at step step_, into the next list; the work it took (`rule_run_work`).
  constexpr size_t run_branch(size_t b) {
    const step& stp = steps_[step_];
    search_state next = lists_[cur_][at_];
    for (auto i : open_) {
      const auto t = inputs_[i];
      const size_t n = candidate_codes(p_.mesh(), p_.tensor_at(t).shape);
      const size_t code = b % n;
      b /= n;
      const auto layout = candidate_of(t, code);
      if (layout == none) return 1;
      next.code[i] = static_cast<std::uint16_t>(code);
      put(next, t, layout);
      next.memory += static_cast<double>(stp.weight) * persistent(t, layouts_[layout]);
      next.estimate += static_cast<double>(stp.weight) * optimizer_seconds(t, layouts_[layout]);
      if (o_.memory_limit > 0 && next.memory > static_cast<double>(o_.memory_limit)) {  // cannot fit
        over_limit_ = true;
        return 1;
      }
    }
    if (stp.bind) {  // the block's input: the source's layout (greedy), the looped one, or a branch's
      const auto from = find(next, stp.bind_from);
      const bool open_source = from == none && input_of_[stp.bind_from] != none;  // (follows the input)
      auto in = open_source ? none : from != none ? from : held(stp.bind_from);
      if (phase_ == 0) {
        if (open_source) {  // the source is laid out as the block's input: a candidate
          const size_t n = candidate_codes(p_.mesh(), p_.tensor_at(stp.bind_to).shape);
          const size_t code = static_cast<std::int64_t>(step_) == looped_ ? entry_ : b % n;
          in = candidate_of(stp.bind_to, code);
          if (in == none) return 1;
          next.code[input_of_[stp.bind_from]] = static_cast<std::uint16_t>(code);
          put(next, stp.bind_from, in);
        }
        put(next, entry_layout, in);
      }
      put(next, stp.bind_to, in);
    }
    return run_op(next, step_);
  }
  // A lower bound of the bytes a device holds for trainable tensor t laid out as `a` (0 for
  // another tensor), whatever option set the search tries (`option_sets`): the parameter, its
  // gradient and its optimizer's moments (and master copy), the states split over the set's ZeRO
  // dims (those that do not split t already), the gradient too from stage 2, the parameter from
  // stage 3; the least over the sets. Kept activations and transients are not counted: a state
  // over the memory limit by this bound cannot fit, and is dropped.
  constexpr double persistent(size_t t, const tensor_dist_attr& a) const {
    const auto& info = p_.tensor_at(t);
    if (!info.trainable) return 0;
    const double elements_here = elements(info.shape, a);
    double least = -1;
    for (const auto& tr : option_sets_) {
      if (tr.recompute != o_.training.recompute) continue;  // (a recomputation's variant: the same ZeRO settings)
      const double parameter = static_cast<double>(info.element_bytes);
      const double gradient =
          static_cast<double>(tr.gradient_element_bytes > 0 ? tr.gradient_element_bytes : info.element_bytes);
      const double moments = static_cast<double>(tr.state_element_bytes) * (tr.master_weights ? 3 : 2);
      double n = 1;
      if (tr.stage() > 0)
        for (auto m : {tr.shard_optimizer_states_on, tr.shard_optimizer_states_also_on})
          if (m >= 0 && m < p_.mesh().ndim() && !a.shards(m)) n *= static_cast<double>(p_.mesh().dim_size(m));
      const double bytes = parameter / (tr.stage() >= 3 ? n : 1) + gradient / (tr.stage() >= 2 ? n : 1) + moments / n;
      if (least < 0 || bytes < least) least = bytes;
    }
    return elements_here * least;
  }
  // The seconds the optimizer step takes a device for trainable tensor t laid out as `a` (0 for
  // another tensor): adamw's kernel, as the exact cost counts it (an output element a FLOP; the
  // parameter, its gradient, moments and master copy read, the updated ones written), on the
  // cluster's roofline, with the states split as the options' ZeRO dims split them.
  constexpr double optimizer_seconds(size_t t, const tensor_dist_attr& a) const {
    const auto& info = p_.tensor_at(t);
    if (!info.trainable) return 0;
    const auto& tr = o_.training;
    double n = elements(info.shape, a);
    for (auto m : {tr.shard_optimizer_states_on, tr.shard_optimizer_states_also_on})
      if (m >= 0 && m < p_.mesh().ndim() && !a.shards(m)) n /= static_cast<double>(p_.mesh().dim_size(m));
    const double e = static_cast<double>(info.element_bytes), st = static_cast<double>(tr.state_element_bytes);
    const double g = tr.gradient_element_bytes > 0 ? static_cast<double>(tr.gradient_element_bytes) : e;
    const double kept = tr.master_weights ? 3 : 2, outputs = 1 + kept;  // moments (and master copy)
    return c_.kernel_seconds(n * outputs, n * (e + g + kept * st + e + kept * st), "search");
  }
  // The layout of an annotated plan input not yet read.
  constexpr std::uint16_t held(size_t t) {
    const auto& info = p_.tensor_at(t);
    if (!info.annotated)
      raise(make_error(error_kind::invalid_argument, "search", "tensor {} is read before it has a layout", t));
    return intern(info.annotation);
  }

  // Runs step s's operator on state `st` (its inputs laid out) and adds the result to the next
  // list; the work it took (`rule_run_work`).
  constexpr size_t run_op(search_state& st, size_t s) {
    const step& stp = steps_[s];
    const auto& op = p_.op_at(stp.op);
    static_vector<std::uint16_t, 2 * max_operands> key;
    for (auto t : op.inputs) {
      const auto a = find(st, t);
      key.push_back(a != none ? a : held(t));
    }
    for (auto t : op.outputs)  // pinned: annotated, or a reshard point laid out by this branch
      key.push_back(p_.tensor_at(t).annotated ? intern(p_.tensor_at(t).annotation)
                                              : input_of_[t] != none ? find(st, t) : none);
    std::uint64_t h = s;
    for (auto k : key) h = (h ^ k) * 1099511628211ull;
    outcome& r = memo_[static_cast<size_t>(h % memo_size)];
    size_t work = 1;
    if (r.step != s || !(r.key == key)) {
      r.step = s;
      r.key = key;
      run_rule(r);
      work += rule_run_work;
    }
    if (!r.ran) return work;
    st.estimate += r.cost;
    for (size_t j = 0; j < op.outputs.size(); ++j) put(st, op.outputs[j], r.out[j]);
    if (stp.closes >= 0 && phase_ == 0) {
      const auto first = find(st, entry_layout);
      const auto last = find(st, static_cast<size_t>(stp.closes));  // (dead already if nothing reads it)
      if (first == none || first != last) return work;  // the runs differ
    }
    if (stp.closes >= 0) drop(st, entry_layout);
    for (auto t : stp.dies) drop(st, t);
    st.owed = 0;  // (a reduction is charged where it happens, at the weight of the step there)
    for (const auto& l : st.live)
      if (l.tensor != entry_layout && layouts_[l.layout].is_partial())
        st.owed += static_cast<double>(stp.weight) * owed(l.tensor, layouts_[l.layout]);
    st.key = hash(st);
    ++created_;
    keep(st);
    return work;
  }
  // Runs r.step's operator on the layouts of r.key, as propagation's run_op does: whether the
  // rule accepts them, the estimate it adds and its outputs' layouts.
  constexpr void run_rule(outcome& r) {
    const step& stp = steps_[r.step];
    const auto& op = p_.op_at(stp.op);
    r.ran = false;
    r.out.clear();
    in_.clear();
    for (size_t k = 0; k < op.inputs.size(); ++k) in_.emplace_back(p_.tensor_at(op.inputs[k]).shape, layouts_[r.key[k]]);
    if (!op.forward(cleared(fwd_), span(in_), op.attributes, p_.semantics())) return;
    if (fwd_.outputs.size() != op.outputs.size()) return;
    double comm = 0;
    const dist_attrs* need = &fwd_.inputs;
    const auto pin = [&](size_t j) -> const tensor_dist_attr* {
      const auto id = r.key[op.inputs.size() + j];
      return id == none ? nullptr : &layouts_[id];
    };
    bool pinned = false;
    for (size_t j = 0; j < op.outputs.size(); ++j) pinned = pinned || pin(j) != nullptr;
    if (pinned) {
      for (size_t j = 0; j < op.outputs.size(); ++j)
        if (const auto* a = pin(j)) fwd_.outputs[j] = *a;
      outs_.clear();
      for (size_t j = 0; j < op.outputs.size(); ++j) outs_.emplace_back(p_.tensor_at(op.outputs[j]).shape, fwd_.outputs[j]);
      if (!op.backward(cleared(bwd_), span(in_), span(outs_), op.attributes, p_.semantics())) return;
      need = &bwd_.inputs;
      needed_.clear();
      for (size_t k = 0; k < op.inputs.size(); ++k) needed_.emplace_back(p_.tensor_at(op.inputs[k]).shape, (*need)[k]);
      if (!op.forward(cleared(again_), span(needed_), op.attributes, p_.semantics())) return;
      for (size_t j = 0; j < op.outputs.size(); ++j) {
        if (pin(j) == nullptr) fwd_.outputs[j] = again_.outputs[j];
        comm += reshard_seconds(op.outputs[j], again_.outputs[j], fwd_.outputs[j]);
      }
    }
    double sync = 0;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const auto t = op.inputs[k];
      comm += reshard_seconds(t, in_[k].dist_attr(), (*need)[k]);
      const auto& info = p_.tensor_at(t);
      if (!info.trainable) continue;
      // Data parallelism: split elsewhere on a mesh dim, this parameter's gradient is partial there.
      const tensor_dist_attr& w = (*need)[k];
      double bytes = elements(info.shape, w) *
                     static_cast<double>(o_.training.gradient_element_bytes > 0 ? o_.training.gradient_element_bytes
                                                                                : info.element_bytes);
      for (std::int64_t m = 0; m < p_.mesh().ndim(); ++m) {
        if (w.shards(m) || p_.mesh().dim_size(m) == 1) continue;
        bool split_elsewhere = false;
        for (size_t j = 0; j < op.inputs.size(); ++j)
          split_elsewhere = split_elsewhere || (j != k && ((*need)[j].shards(m) || (*need)[j].is_partial(m)));
        if (!split_elsewhere) continue;
        const auto n = static_cast<double>(p_.mesh().dim_size(m));
        sync += seconds(m, 2 * (n - 1) / n * bytes);
      }
    }
    const double compute = kernel_seconds(op, *need, (pinned ? again_ : fwd_).outputs);
    r.cost = static_cast<double>(stp.weight) * (comm + 3 * compute + sync);
    for (size_t j = 0; j < op.outputs.size(); ++j) r.out.push_back(intern(fwd_.outputs[j]));
    r.ran = true;
  }

  // Adds `st` to the next list: at most per_key_ states with its live layouts, width_ in all,
  // the cheapest by `ranked` kept. Branch and bound: once the candidates are full, a state whose
  // estimate (without what it owes: a lower bound) is no cheaper than the dearest of them is
  // dropped (an estimate only grows).
  constexpr void keep(search_state& st) {
    if (phase_ == 0 && result_.entries.size() == o_.candidates && st.estimate >= result_.entries.back().estimate) return;
    auto& list = lists_[1 - cur_];
    if (list.size() == width_ && ranked(st) >= ranked(list[worst_])) return;  // (no cheaper than any)
    size_t g = 0;
    while (g < groups_.size() && !(groups_[g].count > 0 && groups_[g].key == st.key && groups_[g].live == st.live)) ++g;
    // States alike but for inputs already read: two while operators remain (room in the width for
    // other live layouts), `candidates` after the last (the assignments passed on).
    const size_t per_key = step_ + 1 < step_count_ && per_key_ > 2 ? 2 : per_key_;
    if (g < groups_.size() && groups_[g].count >= per_key) {
      if (ranked(st) < ranked(list[groups_[g].worst])) place(groups_[g].worst, st, g);
      return;
    }
    if (g == groups_.size()) {  // a new group, in an emptied one if any
      g = 0;
      while (g < groups_.size() && groups_[g].count > 0) ++g;
      if (g == groups_.size()) groups_.push_back({});
      groups_[g] = {st.key, st.live, 0, 0};
    }
    if (list.size() == width_) return place(worst_, st, g);
    const size_t k = list.size();
    st.group = static_cast<std::uint8_t>(g);
    list.push_back(st);
    if (groups_[g].count++ == 0 || ranked(st) > ranked(list[groups_[g].worst])) groups_[g].worst = static_cast<std::uint8_t>(k);
    if (k == 0 || ranked(st) > ranked(list[worst_])) worst_ = k;
  }
  // Puts `st` of group g, cheaper than the state it replaces, at k; the dearest of the list and
  // of the groups found again (the first of equals, as a scan finds it).
  constexpr void place(size_t k, search_state& st, size_t g) {
    auto& list = lists_[1 - cur_];
    const size_t old = list[k].group;
    st.group = static_cast<std::uint8_t>(g);
    list[k] = st;
    if (old == g) {
      if (groups_[g].worst == k) dearest(g);
    } else {
      if (--groups_[old].count > 0 && groups_[old].worst == k) dearest(old);
      auto& w = groups_[g].worst;
      if (groups_[g].count++ == 0 || ranked(st) > ranked(list[w]) || (ranked(st) == ranked(list[w]) && k < w))
        w = static_cast<std::uint8_t>(k);
    }
    if (k != worst_) return;
    worst_ = list.size();  // the dearest of the groups' dearest
    for (const auto& gr : groups_)
      if (gr.count > 0 && (worst_ == list.size() || ranked(list[gr.worst]) > ranked(list[worst_]) ||
                           (ranked(list[gr.worst]) == ranked(list[worst_]) && gr.worst < worst_)))
        worst_ = gr.worst;
  }
  constexpr void dearest(size_t g) {  // of group g
    const auto& list = lists_[1 - cur_];
    size_t w = list.size();
    for (size_t j = 0; j < list.size(); ++j)
      if (list[j].group == g && (w == list.size() || ranked(list[j]) > ranked(list[w]))) w = j;
    groups_[g].worst = static_cast<std::uint8_t>(w);
  }
  static constexpr void sort(states& list) {  // by `ranked`, stable (insertion sort: a few dozen)
    for (size_t i = 1; i < list.size(); ++i)
      for (size_t j = i; j > 0 && ranked(list[j]) < ranked(list[j - 1]); --j) {
        search_state t = list[j];
        list[j] = list[j - 1];
        list[j - 1] = t;
      }
  }

  const plan<T, O>& p_;
  const cluster& c_;
  search_options o_;
  static_vector<training_options, 12> option_sets_ = option_sets(o_);  ///< what `persistent` bounds
  std::array<std::uint16_t, T> input_of_{};
  static_vector<std::uint16_t, max_search_inputs> inputs_{};
  std::array<step, O> steps_{};  ///< one per operator (a block's body once)
  size_t step_count_ = 0;
  std::array<states, 2> lists_{};  ///< the states before the step (cur_) and after it
  size_t cur_ = 0;
  int phase_ = 0;
  size_t step_ = 0, at_ = 0, branch_ = 0, branches_ = 1;
  bool over_limit_ = false;  // a branch was dropped: its parameters alone exceed the memory limit
  static_vector<std::uint16_t, max_operands + 1> open_{};
  size_t width_ = 1, per_key_ = 1, created_ = 0;
  size_t worst_ = 0;  ///< the dearest state of the next list
  // The states of the next list with the same live layouts: a group each.
  struct live_group {
    std::uint64_t key = 0;
    static_vector<live_layout, max_live> live{};
    std::uint8_t count = 0, worst = 0;  ///< its states, and the dearest of them
  };
  static_vector<live_group, max_search_states + 1> groups_{};
  std::array<bool, T> read_by_op_{};  ///< per tensor: an operator reads it
  std::int64_t looped_ = -1;  ///< the step binding the first block run more than once, or -1
  size_t entry_ = 0;          ///< the layout (candidate code) its input takes in this run of phase 0
  search_candidates result_{};
  std::array<tensor_dist_attr, max_search_layouts> layouts_{};  ///< the layouts met, each once
  size_t layout_count_ = 0;
  std::array<std::uint16_t, 2 * max_search_layouts> slot_{};  ///< hash slots of layouts_, or none
  std::array<outcome, memo_size> memo_{};                     ///< by hash of the key
  std::array<candidate, candidate_memo_size> candidates_{};   ///< by tensor and code
  specs in_{}, outs_{}, needed_{};
  spmd_info fwd_{}, bwd_{}, again_{};
};


/// Candidate `entry` of `cand` under `options`, its cost not yet known: the layouts it chooses.
template <std::size_t T, std::size_t O>
constexpr searched_plan chosen(const plan<T, O>& forward, const search_candidates& cand, std::size_t entry,
                               const training_options& options) {
  const auto& e = cand.entries[entry];
  searched_plan out;
  for (std::size_t i = 0; i < cand.inputs.size(); ++i) {
    if (e.code[i] == 0xffff) continue;  // no operator reads it: left as declared
    tensor_dist_attr a;
    candidate_layout(forward.mesh(), forward.tensor_at(cand.inputs[i]).shape, e.code[i], a, cand.co_shard);
    out.layouts.push_back({tensor_id{cand.inputs[i]}, a});
  }
  out.training = options;
  out.estimate = e.estimate;
  out.greedy = e.greedy;
  return out;
}

/// Exact evaluation (tier 2) of the layouts `code` of `cand` under `options`: the training step
/// of `forward` so annotated, propagated and costed; false if propagation fails.
template <std::size_t T, std::size_t O>
constexpr bool evaluate(const plan<T, O>& forward, tensor_id loss, const cluster& c, const search_candidates& cand,
                        std::size_t entry, const training_options& options, searched_plan& out) {
  out = chosen(forward, cand, entry, options);
  constexpr std::size_t T2 = step_tensors<0, T>, O2 = step_ops<0, O>, R = default_max_reshards(O2);
  heap<plan<T, O>> annotated(forward);
  for (const auto& l : out.layouts) annotated->annotate(l.tensor, l.attr);
  heap<plan<T2, O2>> step(forward.mesh(), forward.semantics());
  {
    heap<step_state<T, T2>> state;
    step_builder<T, O, T2, O2>(*annotated, *step, *state, options).build(loss);
  }
  heap<propagation<T2, R>> r;
  {
    propagator<T2, O2, R> run(*step, *r, {});
    run.start();
    run.resume(static_cast<std::size_t>(-1));
  }
  if (!r->ok()) return false;
  heap<coster<T2, O2, R>> k(*step, *r);
  k->resume(static_cast<std::size_t>(-1));
  out.cost = k->result(c);
  return true;
}

/// Adds evaluated plan `p` to `r` (see the file comment).
constexpr void rank(search_result& r, const searched_plan& p, const search_options& o) {
  if (o.memory_limit > 0 && p.cost.memory().peak > o.memory_limit) {
    ++r.infeasible;
    return;
  }
  if (p.greedy && (!r.greedy_feasible || p.step_seconds() < r.greedy.step_seconds())) {
    r.greedy = p;
    r.greedy_feasible = true;
  }
  for (const auto& q : r.plans)  // the greedy layouts may be among the others': once
    if (q.training.stage() == p.training.stage() && q.training.recompute == p.training.recompute &&
        q.layouts == p.layouts)
      return;
  auto& list = r.plans;
  const std::size_t cap = o.keep + 1;
  std::size_t at = 0;
  while (at < list.size() && list[at].step_seconds() <= p.step_seconds()) ++at;
  if (at >= cap) return;
  if (list.size() < cap) list.push_back(p);
  for (std::size_t j = list.size() - 1; j > at; --j) list[j] = list[j - 1];
  list[at] = p;
}

}  // namespace detail

namespace detail {
/// Tier 3 (see the file comment): plan `start`, its layouts the codes of entry `e` of `cand`,
/// improved by exact moves, one plan input's layout at a time, then the options; the moves made
/// go to `moves`, the evaluations to `r`'s counts.
template <std::size_t T, std::size_t O>
constexpr searched_plan improve(const plan<T, O>& p, tensor_id loss, const cluster& c, search_candidates cand, std::size_t e,
                                const searched_plan& start, const search_options& o,
                                const static_vector<training_options, 12>& sets, search_result& r,
                                static_vector<improvement, max_improvements>& moves) {
  heap<searched_plan> best(start), trial;
  auto& codes = cand.entries[e].code;
  const auto layout_of = [&](std::size_t i, std::size_t code) {
    tensor_dist_attr a;
    return candidate_layout(p.mesh(), p.tensor_at(cand.inputs[i]).shape, code, a, cand.co_shard) ? a : tensor_dist_attr{};
  };
  const std::size_t budget = r.evaluations + o.improve_budget;
  const auto spent = [&] { return r.evaluations >= budget; };
  // How far a plan's peak is over the memory limit (0: it fits).
  const auto excess = [&](const searched_plan& s) {
    return o.memory_limit > 0 && s.cost.memory().peak > o.memory_limit ? s.cost.memory().peak - o.memory_limit : 0;
  };
  const auto runs = [&](bool ok) {  // an evaluation: whether it propagated (one over the limit is counted infeasible)
    ++r.evaluations;
    if (!ok || excess(*trial) > 0) ++r.infeasible;
    return ok;
  };
  // Better: nearer the limit while over it (a start none of the candidates' fits), then faster.
  const auto preferred = [&](const searched_plan& a, const searched_plan& b) {
    const auto ea = excess(a), eb = excess(b);
    return ea != eb ? ea < eb : a.step_seconds() < b.step_seconds() * (1 - 1e-12);
  };
  for (bool moved = true; moved && moves.size() < max_improvements && !spent();) {
    moved = false;
    for (std::size_t i = 0; i < cand.inputs.size() && moves.size() < max_improvements && !spent(); ++i) {
      const std::uint16_t was = codes[i];
      if (was == 0xffff) continue;  // no operator reads it, or left to propagation
      std::uint16_t better = was;
      const std::size_t n = candidate_codes(p.mesh(), p.tensor_at(cand.inputs[i]).shape);
      for (std::size_t code = 0; code < n && !spent(); ++code) {
        tensor_dist_attr a;
        if (code == was || !candidate_layout(p.mesh(), p.tensor_at(cand.inputs[i]).shape, code, a, cand.co_shard)) continue;
        codes[i] = static_cast<std::uint16_t>(code);
        if (!runs(evaluate(p, loss, c, cand, e, best->training, *trial))) continue;
        if (preferred(*trial, *best)) {
          moves.push_back({tensor_id{cand.inputs[i]}, layout_of(i, better), a, best->step_seconds(), trial->step_seconds()});
          *best = *trial;
          better = static_cast<std::uint16_t>(code);
        }
      }
      codes[i] = better;
      moved = moved || better != was;
    }
    for (const auto& t : sets) {  // the step's options too, on the layouts as they now are
      if (spent()) break;
      if (t == best->training || !runs(evaluate(p, loss, c, cand, e, t, *trial))) continue;
      if (preferred(*trial, *best)) {
        *best = *trial;
        moved = true;
      }
    }
  }
  best->greedy = false;
  return *best;
}

/// The entry of `cand` whose layouts `found` has, or `cand.entries.size()`.
template <std::size_t T, std::size_t O>
constexpr std::size_t entry_of(const plan<T, O>& p, const search_candidates& cand, const searched_plan& found) {
  for (std::size_t e = 0; e < cand.entries.size(); ++e)
    if (chosen(p, cand, e, found.training).layouts == found.layouts) return e;
  return cand.entries.size();
}
}  // namespace detail

/// The cheapest plans for forward plan `p` whose loss is `loss`, on cluster `c` (see the file
/// comment): layouts for its unannotated inputs and the step's options, exactly costed.
template <std::size_t T, std::size_t O>
constexpr search_result search(const plan<T, O>& p, tensor_id loss, const cluster& c, const search_options& o = {}) {
  search_result r;
  detail::search_candidates cand;
  {
    detail::heap<detail::layout_search<T, O>> s(p, c, o);
    s->start();
    s->resume(static_cast<std::size_t>(-1));
    cand = s->result();
  }
  r.states = cand.states;
  r.work = cand.work;
  const auto sets = detail::option_sets(o);
  detail::heap<searched_plan> least;  // of the candidates over the memory limit, the one least over it
  std::size_t least_entry = cand.entries.size();
  for (std::size_t e = 0; e < cand.entries.size(); ++e)
    for (const auto& t : sets) {
      detail::heap<searched_plan> found;
      ++r.evaluations;
      if (!detail::evaluate(p, loss, c, cand, e, t, *found)) {
        ++r.infeasible;
        continue;
      }
      if (o.memory_limit > 0 && found->cost.memory().peak > o.memory_limit &&
          (least_entry == cand.entries.size() || found->cost.memory().peak < least->cost.memory().peak)) {
        *least = *found;
        least_entry = e;
      }
      detail::rank(r, *found, o);
    }
  if (!o.improve) return r;
  if (!r.ok()) {  // none fits: tier 3 from the candidate least over the limit, towards it first
    if (least_entry == cand.entries.size()) return r;
    static_vector<improvement, max_improvements> moves;
    const searched_plan got = detail::improve(p, loss, c, cand, least_entry, *least, o, sets, r, moves);
    if (!(got.cost.memory().peak > o.memory_limit)) {
      detail::rank(r, got, o);
      r.improvements = moves;
    }
    return r;
  }
  // Tier 3 from each of the best two plans found, half the budget each; the fastest result, with
  // its moves.
  const std::size_t starts = r.plans.size() < 2 ? r.plans.size() : 2;
  const auto firsts = r.plans;
  auto half = o;
  half.improve_budget = o.improve_budget / starts;
  detail::heap<searched_plan> fastest(firsts[0]);
  for (std::size_t k = 0; k < starts; ++k) {
    const std::size_t e = detail::entry_of(p, cand, firsts[k]);
    if (e == cand.entries.size()) continue;
    static_vector<improvement, max_improvements> moves;
    const searched_plan got = detail::improve(p, loss, c, cand, e, firsts[k], half, sets, r, moves);
    if (got.step_seconds() < fastest->step_seconds()) {
      *fastest = got;
      r.improvements = moves;
    }
  }
  if (fastest->step_seconds() < r.plans[0].step_seconds()) detail::rank(r, *fastest, o);
  return r;
}

/// A search to run at compile time (`searched`): what `search` takes.
template <class Plan>
struct search_problem {
  Plan plan;
  tensor_id loss{};
  model::cluster cluster{};
  search_options options{};
};

namespace detail {
/// Work (`layout_search::resume`'s units) a constant expression of `searched` runs, so that a
/// part stays within the compiler's default limit: the Llama-3-8B layers of search_plans.hpp
/// search with half the limit (Clang's -fconstexpr-steps=524288, GCC's
/// -fconstexpr-ops-limit=16777216). GCC gets longer parts: each copies the search's state.
#ifndef CTSPMD_SEARCH_WORK_PER_PART
#if defined(__clang__)
#define CTSPMD_SEARCH_WORK_PER_PART 500
#else
#define CTSPMD_SEARCH_WORK_PER_PART 2400
#endif
#endif
inline constexpr std::size_t search_work_per_part = CTSPMD_SEARCH_WORK_PER_PART;
template <auto MakeProblem>
inline constexpr auto problem_value = MakeProblem();
template <auto MakeProblem>
using problem_plan = std::remove_cvref_t<decltype(problem_value<MakeProblem>.plan)>;
template <auto MakeProblem>
using problem_search = layout_search<problem_plan<MakeProblem>::max_tensors, problem_plan<MakeProblem>::max_ops>;

/// The dynamic programming of `searched` as a staged work (model/staged.hpp): parts of
/// `search_work_per_part` units of work.
template <auto MakeProblem>
struct search_work {
  static constexpr auto start() {
    constexpr auto& q = problem_value<MakeProblem>;
    problem_search<MakeProblem> s(q.plan, q.cluster, q.options);
    s.start();
    s.resume(search_work_per_part);
    return s;
  }
  static constexpr void resume(problem_search<MakeProblem>& s) { s.resume(search_work_per_part); }
  static constexpr bool finished(const problem_search<MakeProblem>& s, std::size_t) { return s.finished(); }
};
template <auto MakeProblem>
inline constexpr search_candidates candidates_of = staged_result<search_work<MakeProblem>>.result();
template <auto MakeProblem>
inline constexpr auto options_of = option_sets(problem_value<MakeProblem>.options);

struct evaluated {
  bool ok = false;
  searched_plan plan{};
};
/// Candidate C of `searched`, annotated on the forward plan: a constant of its own.
template <auto MakeProblem, std::size_t C>
inline constexpr auto annotated_candidate = [] {
  constexpr auto& q = problem_value<MakeProblem>;
  auto p = q.plan;
  for (const auto& l : chosen(q.plan, candidates_of<MakeProblem>, C, {}).layouts) p.annotate(l.tensor, l.attr);
  return p;
}();
/// The training step of exact evaluation E of `searched`: candidate E / (option sets) under option
/// set E % (option sets), built, propagated and costed over constant expressions as
/// `training_step_of`, `verified` and `verified_cost` do.
template <auto MakeProblem, std::size_t E>
constexpr auto evaluation_step() {
  constexpr std::size_t n = options_of<MakeProblem>.size();
  return training_step_of<annotated_candidate<MakeProblem, E / n>, problem_value<MakeProblem>.loss,
                          options_of<MakeProblem>[E % n]>;
}
template <auto MakeProblem, std::size_t E>
inline constexpr evaluated evaluation = [] {
  constexpr auto& q = problem_value<MakeProblem>;
  constexpr std::size_t n = options_of<MakeProblem>.size();
  constexpr auto make = &evaluation_step<MakeProblem, E>;
  constexpr std::size_t R = default_max_reshards(decltype(make())::max_ops);
  evaluated out;
  out.plan = chosen(q.plan, candidates_of<MakeProblem>, E / n, options_of<MakeProblem>[E % n]);
  if constexpr (finished_propagation<make, propagate_options{}, R>().ok()) {
    out.ok = true;
    out.plan.cost = finished_cost<make, propagate_options{}, R>().result(q.cluster);
  }
  return out;
}();
template <auto MakeProblem, std::size_t... E>
constexpr search_result searched_result(std::index_sequence<E...>) {
  search_result r;
  r.states = candidates_of<MakeProblem>.states;
  r.work = candidates_of<MakeProblem>.work;
  r.evaluations = sizeof...(E);
  (
      [&r] {
        if (!evaluation<MakeProblem, E>.ok)
          ++r.infeasible;
        else
          rank(r, evaluation<MakeProblem, E>.plan, problem_value<MakeProblem>.options);
      }(),
      ...);
  return r;
}
}  // namespace detail

/// `search` of the `search_problem` `MakeProblem()` returns, spread over constant expressions
/// (see the file comment): the dynamic programming in parts of `detail::search_work_per_part`
/// units of work, each exact evaluation in the parts `verified` and `verified_cost` take.
///
///     constexpr auto problem() { return model::search_problem<model::plan<32, 16>>{mlp(), loss, cluster, {...}}; }
///     constexpr auto found = model::searched<problem>();
///     static_assert(found.best().step_seconds() < 0.01);
template <auto MakeProblem>
constexpr search_result searched() {
  constexpr std::size_t n = detail::candidates_of<MakeProblem>.entries.size() * detail::options_of<MakeProblem>.size();
  return detail::searched_result<MakeProblem>(std::make_index_sequence<n>{});
}

}  // namespace ctspmd::model

#endif
