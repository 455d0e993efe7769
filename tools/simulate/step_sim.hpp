#ifndef CTSPMD_TOOLS_SIMULATE_STEP_SIM_HPP
#define CTSPMD_TOOLS_SIMULATE_STEP_SIM_HPP
// The step simulator: runs a verified training step (forward, backward, optimizer) on a
// simulated mesh with exactly the reshards its propagation reports, and compares every tensor
// with one device running the same step unsharded.
//
// - Values: every plan input (parameters, data, the loss's gradient, optimizer states, the
//   learning rate) gets a random value (float64; ids and labels in their table's range, second
//   moments and the learning rate positive, beta pows in (0, 1)); each device holds its local
//   part under the tensor's propagated layout (a partial input cut into parts, mesh_sim.hpp).
// - Operators run in program order on every device's local tensors (step_kernels.hpp). A
//   repeated block runs `count` times, each run with its own tensors (the body's, and those that
//   keep its operators' inputs for the backward pass); a backward block runs its forward block's
//   runs last first.
// - Layouts: each operator's outputs are laid out as propagation lays them out (the rule's
//   inference from its inputs as the devices hold them, pinned outputs resharded to their pins:
//   propagate.hpp), so each run of a block has its own; where the report keeps a layout (a tensor
//   outside blocks, a forward block's steady state and first run) the devices must hold it so. A
//   reshard runs in the runs where it starts from the layout the tensor is held in and ends in
//   the one the rule needs.
// - Data moves only through the reshards of the report: before an operator reads an input, the
//   reshards listed for that input (those whose `from` is the layout the tensor is held in) are
//   executed, one collective at a time, as collectives between the simulated devices; an
//   annotated output's reshards run after the kernel. An input with no reshard listed is given
//   as it is held. A collective over a product group runs over the group's devices.
//   The collectives of one input run in the order the report lists them, the order they are
//   charged in (model/collective.hpp: `execution_rank`); the simulator checks that each leaves a
//   layout on the way and that the devices of each device's group hold what it needs.
// - Bytes: for every collective the simulator counts what each device sends, from the data it
//   holds: ring algorithms (all-reduce 2(n-1)S/n, reduce-scatter (n-1) times the part each
//   device keeps, all-gather and all-to-all what each device lacks and receives); the largest
//   device's count must equal the reshard's `bytes`, and each reshard must run `times` times
//   (times the micro-batches, outside the optimizer's phase).
// - Every tensor is compared with one device's, assembled under the layout the report promises
//   it where it keeps one (the devices must hold it so), else under the layout it is held in.
// - Each collective necessary: the step is simulated again with one reshard skipped (the
//   consumer given the tensor as it was held); if every result (a tensor no operator reads: the
//   loss, the updated parameters and states) still matches one device, the reshard is reported
//   as unnecessary.
// - Gradients: the one-device step itself is checked against its loss: along a random change of
//   the parameters the optimizer updates, the gradients it reads give the derivative that finite
//   differences of the forward pass give (relative 1e-6).
// - Micro-batches (`options::micro_batches`, each the plan's batch with its own data): the
//   passes before the optimizer run once a micro-batch, each device summing, in the layout it
//   holds them in, the gradients the optimizer reads; the optimizer then runs once.
// - Pipelines (`options::pipeline`, model/pipeline.hpp): each operator runs on a stage's devices,
//   those of its coordinate on the pipeline's mesh dim: the block's runs (layers) and their
//   backward passes on the stages the report gives them, what comes before the block on the
//   first stage and what comes after on the last (backward mirrored), an optimizer operator
//   where its gradient was computed. A tensor read on another stage than the one that computed it
//   is sent there, point to point between neighbours (each device to the one with the same other
//   coordinates), and only so; the sends of each stage and their bytes must be the report's. A
//   parameter's gradient sum runs on the parameter's stage (the first if it is read before the
//   block, else the last). A tied parameter's gradient (a head on the last stage tied to the
//   embedding on the first) is summed once a step, before the optimizer: each stage accumulates
//   its own part over the micro-batches, and the last sends its part to the first (the
//   report's `tied_gradient_bytes`).
//   The passes run in the schedule's order (GPipe, 1F1B: each stage's own order, a pass as soon
//   as what it reads is done), their gradients then summed; the most micro-batches a
//   stage holds between their forward and backward passes must be the report's `in_flight`
//   (interleaved: each pass one chunk of a micro-batch, in Megatron's order, a v-th of one).
// - Blocks of tokens: a mixture-of-experts operator's devices each route their own tokens into
//   their own slots, and a load-balanced sequence (`options::load_balanced_context`) puts its
//   chunks out of order; the one-device reference runs the same blocks (the layouts of the
//   sharded run tell how many), so that it computes what the sharded step should.
//
// Tolerance: float64, relative 1e-9 of the largest magnitude that flowed into each tensor in the
// reference: its own, its operator's inputs' and theirs in turn (shape-only inputs aside). A
// tensor that cancels to rounding noise (a sum over a softmax gradient's rows, exactly 0) is
// so compared with the rounding of the values it came from, not with its own noise.
// Not simulated (refused with a message): operators without a kernel, flash attention's dropout,
// unknown sizes. Dropout draws its mask by global element (step_kernels.hpp: `dropout_mask`).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>
#include <ctspmd/runtime/plan.hpp>

#include "mesh_sim.hpp"
#include "step_kernels.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::step {

struct options {
  std::uint64_t seed = 0x73746570ULL;
  /// Simulate once more per reshard, without it (the necessity check).
  bool necessity = true;
  /// Micro-batches a step accumulates (each the plan's batch, its own data): the forward and
  /// backward passes run once each, their gradients summed where the optimizer reads them, then
  /// the optimizer once.
  std::int64_t micro_batches = 1;
  /// A pipeline (model/pipeline.hpp): its block's layers run on their stages' devices, and
  /// `micro_batches` is its `micro_batches`.
  std::optional<ctspmd::model::pipeline_options> pipeline{};
  /// The sequence in context parallelism's load-balanced order (rules/flash_attention.hpp): made
  /// before the model, each of the n devices a sequence is split over holding chunks i and
  /// 2n - 1 - i of 2n; a causal attention masks by those positions, here and in the reference.
  bool load_balanced_context = false;
  double tolerance = 1e-9;
};

struct result {
  /// Why nothing could be simulated (an operator without a kernel, ...), or empty.
  std::string error;
  /// The largest relative difference of any tensor from one device's.
  double max_relative_error = 0;
  /// The one-device step's gradients against a finite difference of its loss (relative; -1: no
  /// optimizer or no loss gradient to check).
  double gradient_error = -1;
  /// The first tensor that differs (beyond the tolerance) or fails to assemble, or empty.
  std::string mismatch;
  bool bytes_match = true;
  /// Each reshard whose bytes or occurrences differ from the report's.
  std::vector<std::string> byte_mismatches;
  /// Each reshard whose removal changes no result.
  std::vector<std::string> unnecessary;
  std::int64_t devices = 0;
  std::size_t collectives = 0;  ///< reshards executed (occurrences)
  bool ok() const { return error.empty() && mismatch.empty() && bytes_match && unnecessary.empty(); }
  std::string summary() const {
    std::string s = error.empty() ? "" : "error: " + error + "; ";
    if (!mismatch.empty()) s += "mismatch: " + mismatch + "; ";
    for (const auto& b : byte_mismatches) s += "bytes: " + b + "; ";
    for (const auto& u : unnecessary) s += "unnecessary: " + u + "; ";
    return s.empty() ? "ok" : s;
  }
};

namespace detail {

using ctspmd::tensor_dist_attr;
using ctspmd::model::collective;

/// A tensor's value in one run of its block (run -1: a tensor outside every block).
struct key {
  std::size_t tensor = 0;
  std::int64_t run = -1;
  std::int64_t micro = -1;  ///< its micro-batch, or -1 (parameters, optimizer states and outputs)
  friend auto operator<=>(const key&, const key&) = default;
};
/// The local tensors every device holds, and the layout they are held in.
struct held {
  std::vector<tensor> locals;
  tensor_dist_attr attr;
  /// (A pipeline) the stage whose devices computed it, or -1 (a plan input: every stage has
  /// it), and the stages it was sent to, a bit each.
  std::int64_t stage = -1;
  std::uint64_t sent_to = 0;
};

inline shape_t shape_of(const ctspmd::tensor_shape& s, const std::string& name) {
  shape_t out;
  for (auto d : s) {
    if (d < 0) throw oracle_error("tensor '" + name + "' has an unknown size: not simulated");
    out.push_back(d);
  }
  return out;
}

struct box {
  shape_t start, len;
};
inline box box_of(const tensor_dist_attr& a, const shape_t& global, const shape_t& c) {
  box b{shape_t(global.size()), shape_t(global.size())};
  for (std::size_t d = 0; d < global.size(); ++d) {
    const auto ch = chunk_on(a, d, global[d], c, true);
    b.start[d] = ch.start;
    b.len[d] = ch.len;
  }
  return b;
}

/// The value a part holds on a device that does not keep a replicated value made partial.
inline double identity_of(ctspmd::reduce_type r, double v) {
  switch (r) {
    case ctspmd::reduce_type::sum:
    case ctspmd::reduce_type::any: return 0.0;
    case ctspmd::reduce_type::prod:
    case ctspmd::reduce_type::all: return 1.0;
    default: return v;  // avg, max, min: every device may hold the value
  }
}

/// Moves `h` from its layout to `b` (which differs on the mesh dims of `group` only) as a
/// collective of `kind` between the devices; returns the most bytes a device sends.
inline std::int64_t transform(held& h, const tensor_dist_attr& b, collective kind, std::uint32_t group,
                              const shape_t& global, std::int64_t element_bytes) {
  const auto& a = h.attr;
  const auto& mesh = a.process_mesh();
  const auto n_dev = to_size(mesh.size());
  std::int64_t n = 1;
  for (std::int64_t m = 0; m < mesh.ndim(); ++m)
    if (((group >> m) & 1U) != 0) n *= mesh.dim_size(m);
  // 1. Parts of a partial tensor that `b` no longer holds partial are combined over their devices.
  std::vector<std::int64_t> reduced;
  for (auto m : a.partial_dims())
    if (!b.is_partial(m) || partial_type(b, m) != partial_type(a, m)) reduced.push_back(m);
  std::vector<tensor> now = h.locals;
  std::int64_t bytes = 0;
  const std::int64_t local_bytes = to_int(h.locals.at(0).size()) * element_bytes;
  if (!reduced.empty()) {
    for (std::size_t dev = 0; dev < n_dev; ++dev) {
      shape_t c = device_coords(mesh, to_int(dev));
      std::function<tensor(std::size_t)> combined = [&](std::size_t k) -> tensor {
        if (k == reduced.size()) return h.locals[to_size(device_index(mesh, c))];
        const auto m = to_size(reduced[k]);
        const auto keep = c[m];
        std::vector<tensor> parts;
        for (c[m] = 0; c[m] < mesh.dim_size(reduced[k]); ++c[m]) parts.push_back(combined(k + 1));
        c[m] = keep;
        return combine(parts, partial_type(a, reduced[k]));
      };
      now[dev] = combined(0);
    }
  }
  // 2. Each device's block under `b`: a part of what it holds (a slice), or gathered from the
  // devices of the group, which differ from it on the group's mesh dims only.
  std::vector<tensor> out(n_dev);
  for (std::size_t dev = 0; dev < n_dev; ++dev) {
    const auto c = device_coords(mesh, to_int(dev));
    const auto want = box_of(b, global, c);
    tensor t(want.len);
    std::vector<bool> have(t.size(), false);
    std::int64_t covered = 0, received = 0;
    std::vector<std::size_t> members{dev};  // the device itself first: what it holds moves nowhere
    for (std::size_t e = 0; e < n_dev; ++e) {
      const auto ce = device_coords(mesh, to_int(e));
      bool member = e != dev;
      for (std::size_t m = 0; m < c.size(); ++m) member = member && (((group >> m) & 1U) != 0 || c[m] == ce[m]);
      if (member) members.push_back(e);
    }
    for (const auto e : members) {
      if (covered == numel(want.len)) break;
      const auto has = box_of(a, global, device_coords(mesh, to_int(e)));
      box common{shape_t(global.size()), shape_t(global.size())};
      bool empty = false;
      for (std::size_t d = 0; d < global.size(); ++d) {
        common.start[d] = std::max(want.start[d], has.start[d]);
        common.len[d] = std::min(want.start[d] + want.len[d], has.start[d] + has.len[d]) - common.start[d];
        empty = empty || common.len[d] <= 0;
      }
      if (empty) continue;
      shape_t from_idx(global.size()), to_idx(global.size());
      for_each_index(common.len, [&](const shape_t& i) {
        for (std::size_t d = 0; d < i.size(); ++d) {
          from_idx[d] = common.start[d] + i[d] - has.start[d];
          to_idx[d] = common.start[d] + i[d] - want.start[d];
        }
        std::size_t flat = 0;
        for (std::size_t d = 0; d < i.size(); ++d) flat = flat * to_size(want.len[d]) + to_size(to_idx[d]);
        if (have[flat]) return;
        have[flat] = true;
        t.data[flat] = now[e][from_idx];
        ++covered;
        if (e != dev) ++received;
      });
    }
    if (covered != numel(want.len))
      throw oracle_error("a " + std::string(ctspmd::model::to_string(kind)) + " from " + ctspmd::to_string(a) + " to " +
                         ctspmd::to_string(b) + " over mesh dims " + std::to_string(group) +
                         " (bits): the group's devices do not hold the whole block of device " + shape_string(c));
    // 3. Mesh dims `b` holds partial that `a` did not: one device keeps the value.
    for (auto m : b.partial_dims()) {
      if (a.is_partial(m) && partial_type(a, m) == partial_type(b, m)) continue;
      if (c[to_size(m)] != 0)
        for (auto& v : t.data) v = identity_of(partial_type(b, m), v);
    }
    out[dev] = std::move(t);
    std::int64_t sent = 0;
    switch (kind) {
      case collective::all_reduce: sent = (2 * (n - 1) * local_bytes + n - 1) / n; break;
      case collective::reduce_scatter: sent = (n - 1) * to_int(out[dev].size()) * element_bytes; break;
      case collective::all_gather:
      case collective::all_to_all: sent = received * element_bytes; break;
      default: sent = 0;
    }
    bytes = std::max(bytes, sent);
  }
  h.locals = std::move(out);
  h.attr = b;
  return bytes;
}

template <class Plan, class Prop>
class simulator {
 public:
  simulator(const Plan& p, const Prop& r, const options& o) : p_(p), r_(r), o_(o), g_(o.seed) {
    const auto nt = p.tensor_count();
    per_run_.assign(nt, -1);
    read_.assign(nt, false);
    saved_.assign(nt, false);
    for (std::size_t b = 0; b < p.block_count(); ++b) {
      const auto& bl = p.block_at(b);
      const auto fwd = static_cast<std::int64_t>(bl.number(b));
      for (auto t = bl.input.index; t < bl.end_tensor; ++t) per_run_[t] = fwd;
      for (auto t = bl.saved_begin; t < bl.saved_end; ++t) per_run_[t] = fwd;
    }
    for (std::size_t i = 0; i < p.op_count(); ++i) {
      const auto& op = p.op_at(i);
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        read_[op.inputs[k]] = true;
        if (k < op.saved.size() && op.saved[k] != ctspmd::model::detail::no_tensor) saved_[op.saved[k]] = true;
      }
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        const auto d = input_domain(op.rule, k, shapes_of(op.inputs));
        if (d.kind != domain::any && domains_.find(op.inputs[k]) == domains_.end()) domains_[op.inputs[k]] = d;
      }
    }
    if (o_.pipeline) place_stages();
    // What persists across micro-batches: the parameters and optimizer states, the plan inputs
    // only the optimizer reads (the learning rate), and what the optimizer writes; what its
    // operators read from the operators before it is summed over them.
    persistent_.assign(nt, false);
    crosses_.assign(nt, false);
    std::vector<bool> read_elsewhere(nt, false);
    for (std::size_t i = 0; i < p.op_count(); ++i) {
      const auto& op = p.op_at(i);
      const bool optimizer = in_optimizer(i);
      for (auto t : op.inputs) {
        if (!optimizer) read_elsewhere[t] = true;
        if (optimizer && p.tensor_at(t).producer >= 0 && !in_optimizer(static_cast<std::size_t>(p.tensor_at(t).producer)))
          crosses_[t] = true;
      }
      if (optimizer)
        for (auto t : op.outputs) persistent_[t] = true;
    }
    for (std::size_t t = 0; t < nt; ++t) {
      const auto& ti = p.tensor_at(t);
      if (ti.producer < 0 && (ti.trainable || ti.role == ctspmd::model::tensor_role::optimizer_state || !read_elsewhere[t]))
        persistent_[t] = true;
    }
    for (std::size_t e = 0; e < r.reshard_entries(); ++e) {
      const auto& x = r.reshard_at(e);
      entries_[{x.op, x.operand, x.on_output}].push_back(e);
    }
    for (std::size_t i = 0; i < p.op_count(); ++i) attrs_.push_back(ctspmd::runtime::operator_attributes(p.op_at(i)));
  }

  result run() {
    result out;
    out.devices = p_.mesh().size();
    try {
      reference_ = execute(false, -1);
    } catch (const std::exception& e) {
      out.error = std::string("the one-device run: ") + e.what();
      return out;
    }
    out.gradient_error = gradient_check();
    if (out.gradient_error > 1e-6)
      out.mismatch = "the step's gradients are not its loss's: the directional derivative along random parameter "
                     "changes differs from the finite difference by " + std::to_string(out.gradient_error) + " (relative)";
    run_state sharded;
    try {
      sharded = execute(true, -1);
    } catch (const std::exception& e) {
      out.mismatch = e.what();
      return out;
    }
    if (out.mismatch.empty()) out.mismatch = compare(sharded, false, &out.max_relative_error);
    for (std::size_t e = 0; e < r_.reshard_entries(); ++e) {
      const auto& x = r_.reshard_at(e);
      const auto it = sharded.sent.find(e);
      const std::size_t times = it == sharded.sent.end() ? 0 : it->second.size();
      out.collectives += times;
      std::string what = describe(e);
      // (The passes before the optimizer's run once a micro-batch.)
      const auto expected = x.times * static_cast<std::size_t>(x.phase == ctspmd::model::phase::optimizer ? 1 : o_.micro_batches);
      if (times != expected) {
        out.byte_mismatches.push_back(what + ": reported " + std::to_string(expected) + " times, ran " + std::to_string(times));
        continue;
      }
      for (auto b : it->second)
        if (x.bytes >= 0 && b != x.bytes) {
          out.byte_mismatches.push_back(what + ": reported " + std::to_string(x.bytes) + " bytes, a device sent " +
                                        std::to_string(b));
          break;
        }
    }
    if (split_ >= 0) check_sends(sharded, out);
    out.bytes_match = out.byte_mismatches.empty();
    if (o_.necessity && out.mismatch.empty())
      for (std::size_t e = 0; e < r_.reshard_entries(); ++e) {
        std::string diff;
        try {
          diff = compare(execute(true, static_cast<std::int64_t>(e)), true, nullptr);
        } catch (const std::exception& ex) {
          diff = ex.what();
        }
        if (diff.empty()) out.unnecessary.push_back(describe(e));
      }
    return out;
  }

 private:
  struct run_state {
    std::map<key, held> values;
    std::set<key> produced;
    /// The layout the report promises a tensor in this run (where it says): what the devices
    /// must hold.
    std::map<key, std::optional<tensor_dist_attr>> promised;
    std::map<std::size_t, std::vector<std::int64_t>> sent;  ///< per reshard entry, per occurrence
    /// (A pipeline) per stage, the sends it made; the bytes of each send.
    std::map<std::int64_t, std::int64_t> sends;
    std::vector<std::int64_t> send_bytes;
    std::vector<std::string> stray_sends;  ///< between stages that are not neighbours
    std::int64_t tied_bytes = 0;           ///< what a device sent to sum tied parameters' gradients
    std::vector<std::int64_t> in_flight;   ///< per stage, the most passes between forward and backward
    /// (The reference's) the largest magnitude that flowed into each tensor: its own, its
    /// operator's inputs' and theirs in turn. Differences are relative to it.
    std::map<key, double> scale;
  };

  /// The one-device step's gradients against its loss: along a random change v of every
  /// parameter the optimizer updates, sum over parameters of <gradient, v> must equal the finite
  /// difference of <loss gradient, loss> over the forward pass (central differences at steps
  /// 1e-5 and 5e-6, extrapolated: an error of order h^4 for a smooth loss; near a kink, again
  /// at steps a hundred times smaller). Returns
  /// their relative difference (of the sum of |gradient| |v|), or -1 when the step has no
  /// optimizer or no loss gradient.
  double gradient_check() {
    std::vector<std::pair<std::size_t, std::size_t>> seeds;  // (loss gradient, loss)
    for (std::size_t t = 0; t < p_.tensor_count(); ++t) {
      const auto& ti = p_.tensor_at(t);
      bool block_input = false;  // (held by a block's previous run, not given)
      for (std::size_t b = 0; b < p_.block_count(); ++b) block_input = block_input || p_.block_at(b).input.index == t;
      if (block_input) continue;
      if (ti.role == ctspmd::model::tensor_role::gradient && ti.producer < 0 && ti.role_of >= 0 && !saved_[t] && read_[t] &&
          !ti.shape.empty())
        seeds.emplace_back(t, static_cast<std::size_t>(ti.role_of));
    }
    if (gradients_.empty() || seeds.empty()) return -1;
    double analytic = 0, scale = 0;
    for (const auto& [k, grad] : gradients_) {
      tensor v = random_tensor(grad.shape, g_);
      for (std::size_t e = 0; e < v.size(); ++e) {
        analytic += grad.data[e] * v.data[e];
        scale += std::abs(grad.data[e] * v.data[e]);
      }
      shift_[k] = std::move(v);
    }
    const auto objective = [&](double step) {
      shift_scale_ = step;
      forward_only_ = true;
      const auto s = execute(false, -1);
      forward_only_ = false;
      double total = 0;
      for (micro_ = 0; micro_ < o_.micro_batches; ++micro_) {
        for (const auto& [seed, loss] : seeds) {
          const auto g = inputs_.find(key_of(seed));
          const auto l = s.values.find(key_of(loss));
          if (g == inputs_.end() || l == s.values.end())
            throw oracle_error("the gradient check: no value of " + name(g == inputs_.end() ? seed : loss));
          const auto& grad = g->second;
          const auto& value = l->second.locals.at(0);
          for (std::size_t e = 0; e < value.size(); ++e) total += grad.data[e] * value.data[e];
        }
      }
      micro_ = -1;
      return total;
    };
    // Central differences at h and h / 2, extrapolated (Richardson): an error of order h^4. Where
    // the two disagree beyond that, a kink (a relu's input within h of 0) lies in reach: again at
    // a hundredth of the step, which is then a hundred times less likely to reach one.
    double error = 0;
    for (double h = 1e-5; h > 1e-8; h /= 100) {
      const double d1 = (objective(h) - objective(-h)) / (2 * h), d2 = (objective(h / 2) - objective(-h / 2)) / h;
      error = std::abs((4 * d2 - d1) / 3 - analytic) / std::max(scale, 1e-300);
      if (std::abs(d1 - d2) < 1e-8 * scale) break;
    }
    shift_.clear();
    return error;
  }

  std::string name(std::size_t t) const {
    const auto& ti = p_.tensor_at(t);
    return "'" + std::string(ti.name) + "' (tensor " + std::to_string(t) + ")";
  }
  std::string describe(std::size_t e) const {
    const auto& x = r_.reshard_at(e);
    const auto& op = p_.op_at(x.op);
    return std::string(ctspmd::model::to_string(x.kind)) + " on mesh dim " + std::to_string(x.mesh_dim) + " of " +
           name(x.tensor) + (x.on_output ? " written by" : " read by") + " operator " + std::to_string(x.op) + " '" +
           std::string(op.name()) + "' (" + ctspmd::to_string(x.from) + " -> " + ctspmd::to_string(x.to) + ")";
  }
  template <class Ids>
  std::vector<shape_t> shapes_of(const Ids& ids) const {
    std::vector<shape_t> s;
    for (auto t : ids) {
      shape_t one;
      for (auto d : p_.tensor_at(t).shape) one.push_back(d);
      s.push_back(one);
    }
    return s;
  }
  shape_t global(std::size_t t) const { return shape_of(p_.tensor_at(t).shape, std::string(p_.tensor_at(t).name)); }
  key key_of(std::size_t t) const {
    return {t, per_run_[t] < 0 ? -1 : run_[static_cast<std::size_t>(per_run_[t])], persistent_[t] ? -1 : micro_};
  }
  tensor_dist_attr replicated_on_mesh(std::size_t t) const {
    return tensor_dist_attr(p_.mesh(), ctspmd::dims_mapping(p_.tensor_at(t).shape.size(), -1));
  }
  tensor_dist_attr replicated(std::size_t rank) const {
    return tensor_dist_attr(one_, ctspmd::dims_mapping(rank, -1));
  }
  /// The layout tensor `t` has in the reference (replicated), or in the sharded run as the
  /// propagation reports it: a forward block's first run's layouts are those the training step
  /// keeps from `first_run_at` on, its other runs' the propagation's; nullopt where the report
  /// keeps none: a backward block's tensors (the propagation keeps one run's layouts only), a
  /// first run that differs from the others without a record.
  std::optional<tensor_dist_attr> layout(std::size_t t, bool sharded) const {
    if (!sharded) return replicated(p_.tensor_at(t).shape.size());
    const auto b = per_run_[t];
    if (b >= 0) {
      const auto& f = p_.block_at(static_cast<std::size_t>(b));
      const bool in_forward = (t >= f.input.index && t < f.end_tensor) || (t >= f.saved_begin && t < f.saved_end);
      if (!in_forward) return std::nullopt;
      if (run_[static_cast<std::size_t>(b)] == 0 && f.count > 1) {
        if (f.first_run_at != 0) {
          const std::size_t own = f.end_tensor - f.input.index;
          const std::size_t k = t < f.end_tensor && t >= f.input.index ? t - f.input.index : own + t - f.saved_begin;
          return r_.attr(ctspmd::model::tensor_id{f.first_run_at + k});
        }
        // No record of the first run (a block no backward pass runs): it is the others' if it
        // begins as they do, else unknown.
        if (r_.attr(f.source) != r_.attr(f.input)) return std::nullopt;
      }
    }
    return r_.attr(ctspmd::model::tensor_id{t});
  }

  /// The layout the report promises operator output `t` in the run executing: its annotation, or
  /// its `layout_of` tensor's layout without partial status (model/plan.hpp), or `layout`.
  std::optional<tensor_dist_attr> promise(run_state& s, std::size_t t) {
    const auto& ti = p_.tensor_at(t);
    if (ti.annotated) return ti.annotation;
    if (ti.layout_of < 0) return layout(t, true);
    auto a = value_of(s, static_cast<std::size_t>(ti.layout_of), true).attr;
    a.clean_partial_status();
    return a;
  }

  /// A plan input's value (drawn once, the same in every run of the simulator).
  const tensor& input_value(const key& k) {
    auto it = inputs_.find(k);
    if (it != inputs_.end()) return it->second;
    const auto s = global(k.tensor);
    const auto d = domains_.find(k.tensor);
    tensor v = random_tensor(s, g_);
    if (d != domains_.end()) {
      for (auto& x : v.data) {
        switch (d->second.kind) {
          case domain::index: x = static_cast<double>(g_.uniform(0, std::max<std::int64_t>(d->second.bound, 1) - 1)); break;
          case domain::positive: x = g_.real(0.05, 1.0); break;
          case domain::power: x = g_.real(0.2, 0.9); break;
          default: break;
        }
      }
    }
    return inputs_.emplace(k, std::move(v)).first->second;
  }

  /// The value of tensor `t` in the run executing; a plan input is laid out, when first read, as
  /// the report says, or, where it keeps no layout for this run (a backward block's optimizer
  /// states), as propagation lays such an input out: pinned to its annotation or its `layout_of`
  /// tensor, else as `need` (what its first reader's rule needs of it), or nullptr when that is
  /// not yet known.
  held* value(run_state& s, std::size_t t, bool sharded, const tensor_dist_attr* need = nullptr) {
    const auto k = key_of(t);
    auto it = s.values.find(k);
    if (it != s.values.end()) return &it->second;
    const auto& ti = p_.tensor_at(t);
    if (ti.producer >= 0 || saved_[t] || ti.role == ctspmd::model::tensor_role::first_run_layout)
      throw oracle_error("tensor " + name(t) + " is read before it is written");
    held h;
    auto a = layout(t, sharded);
    if (!a) {
      if (ti.annotated) {
        a = ti.annotation;
      } else if (ti.layout_of >= 0) {
        auto pin = value_of(s, static_cast<std::size_t>(ti.layout_of), sharded).attr;
        pin.clean_partial_status();
        a = pin;
      } else if (need) {
        a = *need;
      } else {
        return nullptr;
      }
    }
    h.attr = *a;
    h.locals = distribute(input_value(k), h.attr, g_);
    if (const auto shift = shift_.find(k); shift != shift_.end() && !sharded)
      for (std::size_t e = 0; e < h.locals[0].size(); ++e) h.locals[0].data[e] += shift_scale_ * shift->second.data[e];
    return &s.values.emplace(k, std::move(h)).first->second;
  }
  held& value_of(run_state& s, std::size_t t, bool sharded) {
    auto* h = value(s, t, sharded);
    if (!h) throw oracle_error("tensor " + name(t) + " has no layout");
    return *h;
  }

  /// Runs the reshards listed for (op, operand, on_output) on `h` (except `skip`).
  /// Those of this run: from the layout `h` is held in, to `need` (the layout the rule needs now,
  /// or the annotation an output is resharded to) when known.
  void reshard(run_state& s, held& h, std::size_t op, std::size_t operand, bool on_output, std::size_t t,
               std::int64_t skip, const tensor_dist_attr* need) {
    const auto it = entries_.find({op, operand, on_output});
    if (it == entries_.end()) return;
    std::vector<std::size_t> list;
    for (auto e : it->second)
      if (r_.reshard_at(e).from == h.attr && (!need || r_.reshard_at(e).to == *need)) list.push_back(e);
    if (list.empty()) return;  // none in this run (a block's first run may need some, the others none)
    const auto to = r_.reshard_at(list[0]).to;
    const auto from = h.attr;
    const auto shape = global(t);
    const auto element_bytes = p_.tensor_at(t).element_bytes;
    // In the report's order, the order they run in (model/collective.hpp: `execution_rank`);
    // `transform` checks that each device's group does hold what it needs.
    std::uint32_t done = 0;  // the mesh dims moved
    for (auto e : list) {
      if (static_cast<std::int64_t>(e) == skip) continue;
      const auto& x = r_.reshard_at(e);
      tensor_dist_attr next;
      if (!ctspmd::model::detail::layout_after(from, to, done | x.group, next))
        throw oracle_error("from " + ctspmd::to_string(h.attr) + ", " + describe(e) + " leaves no layout on the way");
      s.sent[e].push_back(transform(h, next, x.kind, x.group, shape, element_bytes));
      done |= x.group;
    }
  }

  void run_op(run_state& s, std::size_t i, bool sharded, std::int64_t skip) {
    const auto& op = p_.op_at(i);
    kernel_call call;
    call.rule = op.rule;
    call.attrs = &attrs_[i];
    const auto n_dev = sharded ? to_size(p_.mesh().size()) : 1;
    device_tensors in(n_dev);
    // Layouts as propagation derives them (propagate.hpp): the rule's forward inference from the
    // inputs as held gives what it needs of them and its outputs; when an output is pinned
    // (annotated, or to its `layout_of` tensor's layout), what the inputs need is the rule's
    // backward inference from the pins, the outputs are forward's from the inputs as resharded,
    // and a pinned output is then resharded to its pin. A plan input whose layout the report
    // does not keep for this run takes what the rule needs of it.
    std::vector<std::optional<tensor_dist_attr>> pins(op.outputs.size());
    bool pinned = false;
    for (std::size_t k = 0; k < op.outputs.size() && sharded; ++k) {
      const auto& ti = p_.tensor_at(op.outputs[k]);
      const bool known = ti.layout_of >= 0 && s.values.count(key_of(static_cast<std::size_t>(ti.layout_of))) != 0;
      if (ti.annotated || known) pins[k] = promise(s, op.outputs[k]);
      pinned = pinned || pins[k].has_value();
    }
    std::vector<ctspmd::dist_tensor_spec> specs;
    std::vector<std::size_t> unknown;
    for (std::size_t k = 0; k < op.inputs.size(); ++k) {
      const auto t = op.inputs[k];
      const held* h = value(s, t, sharded);
      if (!h) unknown.push_back(k);
      specs.emplace_back(p_.tensor_at(t).shape, h ? h->attr : replicated_on_mesh(t));
    }
    const auto refused = [](const ctspmd::status& st) {
      return oracle_error("the rule refuses the layouts the devices hold: " + ctspmd::to_string(st.error()));
    };
    const auto forward = [&](ctspmd::spmd_info& out) {
      out = ctspmd::spmd_info{};
      if (auto st = op.forward(out, specs, op.attributes, p_.semantics()); !st) throw refused(st);
      if (out.outputs.size() != op.outputs.size()) throw oracle_error("the rule infers another number of outputs");
    };
    ctspmd::spmd_info fwd, need;
    if (sharded) {
      forward(fwd);
      need = fwd;
      if (pinned) {
        std::vector<ctspmd::dist_tensor_spec> outs;
        for (std::size_t k = 0; k < op.outputs.size(); ++k)
          outs.emplace_back(p_.tensor_at(op.outputs[k]).shape, pins[k] ? *pins[k] : fwd.outputs[k]);
        need = ctspmd::spmd_info{};
        if (auto st = op.backward(need, specs, outs, op.attributes, p_.semantics()); !st) throw refused(st);
      }
    }
    for (auto k : unknown) value(s, op.inputs[k], sharded, &need.inputs[k]);
    const std::int64_t at = sharded ? stage_of(s, i) : -1;
    for (std::size_t k = 0; k < op.inputs.size(); ++k) {
      const auto t = op.inputs[k];
      held h = value_of(s, t, sharded);
      if (at >= 0 && (k >= 32 || ((op.shape_only >> k) & 1) == 0)) arrive(s, t, h, at, tied_sum_[i]);
      if (k < 32 && ((op.shape_only >> k) & 1) != 0) {
        // Read for its shape alone, in the layout the rule needs: nothing moves (propagate.hpp).
        // The kernel gets NaNs, so one that read the values would not match.
        if (sharded) h.attr = need.inputs[k];
        tensor nan(global(t));
        std::fill(nan.data.begin(), nan.data.end(), std::numeric_limits<double>::quiet_NaN());
        h.locals = distribute(nan, h.attr, g_);
      } else if (sharded) {
        reshard(s, h, i, k, false, t, skip, &need.inputs[k]);
      }
      specs[k] = ctspmd::dist_tensor_spec(p_.tensor_at(t).shape, h.attr);
      for (std::size_t d = 0; d < n_dev; ++d) in[d].push_back(h.locals[d]);
      call.in.push_back(h.attr);
      call.in_shapes.push_back(global(t));
      if (k < op.saved.size() && op.saved[k] != ctspmd::model::detail::no_tensor) {
        const auto sk = key_of(op.saved[k]);
        s.values[sk] = h;
        s.values[sk].stage = at;
        s.values[sk].sent_to = 0;
        if (at >= 0)
          for (std::size_t d = 0; d < n_dev; ++d)
            if (on_stage(d, at) != d) poison(s.values[sk].locals[d]);
        s.produced.insert(sk);
        if (sharded) s.promised[sk] = layout(op.saved[k], true);
      }
    }
    if (sharded && pinned) forward(fwd);  // from the inputs as resharded
    for (std::size_t k = 0; k < op.outputs.size(); ++k) {
      const auto t = op.outputs[k];
      call.out.push_back(sharded ? fwd.outputs[k] : replicated(p_.tensor_at(t).shape.size()));
      call.out_shapes.push_back(global(t));
      if (sharded) s.promised[key_of(t)] = pins[k] ? pins[k] : layout(t, true);
    }
    if (!sharded && !forward_only_ && (op.rule == "adam" || op.rule == "adamw" || op.rule == "sgd")) {
      // The parameter and the gradient its update reads (the gradient check).
      const std::size_t grad = op.rule == "sgd" ? 2 : 1;
      std::size_t param = op.inputs[0];  // the plan input, through the step's copies (assign)
      while (p_.tensor_at(param).producer >= 0 &&
             p_.op_at(static_cast<std::size_t>(p_.tensor_at(param).producer)).rule == "assign")
        param = p_.op_at(static_cast<std::size_t>(p_.tensor_at(param).producer)).inputs[0];
      gradients_.push_back({key_of(param), in[0][grad]});
    }
    // The reference routes the sharded run's blocks of tokens, and orders its chunks of a sequence.
    if (!sharded && (op.rule.starts_with("moe_") || op.rule.starts_with("flash_attention")))
      for (auto t : op.inputs) call.sharded_in.push_back(r_.attr(ctspmd::model::tensor_id{t}));
    call.load_balanced = o_.load_balanced_context;
    if (at >= 0)  // the other stages' devices compute nothing: given the stage's inputs, their results are dropped
      for (std::size_t d = 0; d < n_dev; ++d) in[d] = in[on_stage(d, at)];
    auto out = kernel_of(op.rule)(call, in);
    if (at >= 0)
      for (std::size_t d = 0; d < n_dev; ++d)
        if (on_stage(d, at) != d) poison(out[d]);
    double in_scale = 0;
    for (std::size_t k = 0; k < op.inputs.size() && !sharded; ++k)
      if (k >= 32 || ((op.shape_only >> k) & 1) == 0)
        in_scale = std::max({in_scale, magnitude(in[0][k]), s.scale[key_of(op.inputs[k])]});
    for (std::size_t k = 0; k < op.outputs.size(); ++k) {
      const auto t = op.outputs[k];
      if (!sharded) s.scale[key_of(t)] = std::max(in_scale, magnitude(out.at(0).at(k)));
      held h;
      h.attr = call.out[k];
      h.stage = at;
      for (std::size_t d = 0; d < n_dev; ++d) h.locals.push_back(out.at(d).at(k));
      if (sharded && pins[k]) reshard(s, h, i, k, true, t, skip, &*pins[k]);
      const auto key = key_of(t);
      s.values[key] = std::move(h);
      s.produced.insert(key);
    }
  }

  // ---- a pipeline's stages (model/pipeline.hpp) ----
  /// Checks the pipeline, and places its block's runs (layers) on their stages as the report
  /// does: `stage_layers` or the even split, in chunks when interleaved (stage r's j-th chunk the
  /// (j·p + r)-th, its layers' first n_r mod v chunks one layer longer).
  void place_stages() {
    const auto& po = *o_.pipeline;
    if constexpr (requires { ctspmd::model::pipeline(p_, r_, po); }) {
      split_ = ctspmd::model::detail::pipeline_block(p_, r_, po);  // an spmd_error if it is no pipeline
      report_ = ctspmd::model::pipeline(p_, r_, po);
    } else {
      throw oracle_error("a pipeline is simulated with its propagation itself");
    }
    o_.micro_batches = po.micro_batches;
    stages_ = p_.mesh().dim_size(po.mesh_dim);
    const auto& b = p_.block_at(static_cast<std::size_t>(split_));
    bool mapped = false;
    for (auto n : po.stage_layers) mapped = mapped || n != 0;
    const auto per_stage =
        mapped ? po.stage_layers : ctspmd::model::detail::even_stage_layers(static_cast<std::int64_t>(b.count), stages_);
    const std::int64_t v = po.schedule == ctspmd::model::pipeline_schedule::interleaved ? po.chunks : 1;
    for (std::int64_t j = 0; j < v; ++j)
      for (std::int64_t r = 0; r < stages_; ++r) {
        const auto n = per_stage[to_size(r)];
        for (std::int64_t l = 0; l < n / v + (j < n % v ? 1 : 0); ++l) {
          layer_stage_.push_back(r);
          layer_chunk_.push_back(j);
        }
      }
    for (std::size_t k = 0; k < p_.block_count(); ++k) {
      const auto& x = p_.block_at(k);
      if (x.mirror_of == split_) mirror_first_op_ = static_cast<std::int64_t>(x.first_op);
      for (auto i = x.first_op; i < x.end_op; ++i) op_block_[i] = static_cast<std::int64_t>(k);
    }
    // Where the parameters declared before the block are read (forward, outside it, other blocks
    // included): before it, after it, or both (tied: a head tied to the embedding, whose
    // gradient's sum of parts runs once a step, before the optimizer). As the pipeline report
    // does (model/cost/walk.hpp).
    reads_.assign(p_.tensor_count(), 0);
    for (std::size_t i = 0; i < p_.op_count(); ++i)
      if (p_.op_at(i).phase == ctspmd::model::phase::forward && !in_split(i))
        for (auto t : p_.op_at(i).inputs)
          if (p_.tensor_at(t).trainable && t <= b.input.index) reads_[t] |= i < b.first_op ? 1 : 2;
    for (std::size_t i = 0; i < p_.op_count(); ++i)
      if (const auto t = summed_parameter(i); t >= 0) tied_sum_[i] = reads_[to_size(t)] == 3;
  }
  /// The parameter whose gradient parts backward operator i sums (an add_n outside blocks), or -1.
  std::int64_t summed_parameter(std::size_t i) const {
    const auto& op = p_.op_at(i);
    if (op.rule != "add_n" || op.phase != ctspmd::model::phase::backward || op_block_[i] >= 0 || op.outputs.empty()) return -1;
    const auto& g = p_.tensor_at(op.outputs[0]);
    const bool sum = g.role == ctspmd::model::tensor_role::gradient && g.role_of >= 0 && p_.tensor_at(to_size(g.role_of)).trainable;
    return sum ? g.role_of : -1;
  }
  /// True if operator i runs in the optimizer's pass: an optimizer operator, or a tied
  /// parameter's gradient sum in a pipeline (pipeline.hpp).
  bool in_optimizer(std::size_t i) const { return p_.op_at(i).phase == ctspmd::model::phase::optimizer || tied_sum_[i]; }
  /// The stage operator i runs on (in the run executing), or -1 (no pipeline; an optimizer
  /// operator that reads only plan inputs: every stage). The block's and its backward pass's on
  /// their layer's; other forward operators on the first stage before the block, on the last
  /// after it; backward ones mirrored; an optimizer operator where what it reads was computed.
  std::int64_t stage_of(const run_state& s, std::size_t i) const {
    if (split_ < 0) return -1;
    if (in_split(i)) return layer_stage_.at(to_size(run_[to_size(split_)]));
    const auto& op = p_.op_at(i);
    if (op.phase != ctspmd::model::phase::optimizer) return part_stage(i);
    for (auto t : op.inputs)
      if (const auto it = s.values.find(key_of(t)); it != s.values.end() && it->second.stage >= 0) return it->second.stage;
    return -1;
  }
  /// The stage of forward or backward operator i outside the pipeline's block: before it, the
  /// first; after it, the last (backward: mirrored).
  /// A parameter's gradient sum runs on the parameter's stage: the first for one declared before
  /// the block and read before it, else the last.
  std::int64_t part_stage(std::size_t i) const {
    const auto& b = p_.block_at(to_size(split_));
    if (p_.op_at(i).phase == ctspmd::model::phase::forward) return i < b.first_op ? 0 : stages_ - 1;
    if (const auto t = summed_parameter(i); t >= 0)
      return to_size(t) <= b.input.index && (reads_[to_size(t)] & 1) != 0 ? 0 : stages_ - 1;
    return mirror_first_op_ < 0 || to_int(i) < mirror_first_op_ ? stages_ - 1 : 0;
  }
  /// The chunk (interleaved) of forward or backward operator i outside the pipeline's block:
  /// before it, the first; after it, the last (backward: mirrored).
  std::int64_t part_chunk(std::size_t i) const {
    const auto last = chunks() - 1;
    if (p_.op_at(i).phase == ctspmd::model::phase::forward) return i < p_.block_at(to_size(split_)).first_op ? 0 : last;
    if (summed_parameter(i) >= 0) return part_stage(i) == 0 ? 0 : last;
    return mirror_first_op_ < 0 || to_int(i) < mirror_first_op_ ? last : 0;
  }
  std::int64_t chunks() const {
    return o_.pipeline->schedule == ctspmd::model::pipeline_schedule::interleaved ? o_.pipeline->chunks : 1;
  }
  /// True if operator i is in the pipeline's block or its backward pass.
  bool in_split(std::size_t i) const {
    const auto own = op_block_[i];
    return own >= 0 && static_cast<std::int64_t>(p_.block_at(to_size(own)).number(to_size(own))) == split_;
  }
  /// One stage's forward or backward pass of one micro-batch (of one of its chunks, interleaved).
  struct event {
    std::int64_t stage = 0;
    bool backward = false;
    std::int64_t micro = 0;
    std::int64_t chunk = 0;
  };
  /// The passes in the order the schedule runs them: each stage's own order (GPipe: every
  /// forward, then every backward; 1F1B: p - r - 1 forwards, then one forward and one backward in
  /// turn, then the backwards left; interleaved, Megatron's: its passes are of one chunk each, the
  /// k-th forward of chunk (k / p) mod v and the k-th backward of chunk v - 1 - (k / p) mod v, both
  /// of micro-batch (k / pv) p + k mod p, and 2(p - r - 1) + (v - 1) p forwards come first), the
  /// stages taken in turn, each pass as soon as what it reads is done (a forward after the
  /// previous chunk's, a backward after the next chunk's; the chunks in order r = 0 .. p - 1,
  /// chunk 0 first).
  std::vector<event> schedule() const {
    const auto m = o_.micro_batches, p = stages_, v = chunks();
    const auto kind = o_.pipeline->schedule;
    namespace md = ctspmd::model::detail;
    const auto nth = [&](std::int64_t r, bool backward, std::int64_t k) {
      return event{r, backward, md::pass_micro_batch(k, p, v), md::pass_chunk(k, backward, p, v)};
    };
    std::vector<std::vector<event>> own(to_size(p));
    for (std::int64_t r = 0; r < p; ++r) {
      auto& q = own[to_size(r)];
      const auto total = m * v, warm = md::warmup_passes(kind, p, r, m, v);
      for (std::int64_t k = 0; k < warm; ++k) q.push_back(nth(r, false, k));
      for (std::int64_t k = 0; k < total; ++k) {
        if (warm + k < total) q.push_back(nth(r, false, warm + k));
        q.push_back(nth(r, true, k));
      }
    }
    // done[r][j][c]: forward passes done (1) and backward (2)
    std::vector<std::vector<std::vector<int>>> done(
        to_size(p), std::vector<std::vector<int>>(to_size(m), std::vector<int>(to_size(v), 0)));
    const auto state = [&](std::int64_t r, std::int64_t j, std::int64_t c) -> int& {
      return done[to_size(r)][to_size(j)][to_size(c)];
    };
    std::vector<std::size_t> next(to_size(p), 0);
    std::vector<event> out;
    for (bool progress = true; progress;) {
      progress = false;
      for (std::int64_t r = 0; r < p; ++r) {
        auto& k = next[to_size(r)];
        if (k == own[to_size(r)].size()) continue;
        const auto e = own[to_size(r)][k];
        const auto j = e.micro, c = e.chunk;
        const bool ready =
            !e.backward ? r > 0 ? state(r - 1, j, c) >= 1 : c == 0 || state(p - 1, j, c - 1) >= 1
                        : state(r, j, c) >= 1 && (r < p - 1 ? state(r + 1, j, c) >= 2 : c == v - 1 || state(0, j, c + 1) >= 2);
        if (!ready) continue;
        out.push_back(e);
        state(r, j, c) = e.backward ? 2 : 1;
        ++k;
        progress = true;
      }
    }
    if (out.size() != to_size(2 * m * v * p)) throw oracle_error("the pipeline's schedule does not run every pass");
    return out;
  }

  /// Tensor t, held as `h`, read on stage `at`: where it is not there, a send from the stage
  /// that computed it (a neighbour: the one before or after, around under interleaving; the last
  /// to the first for a tied parameter's gradient sum, `tied`), each device to the one of stage
  /// `at` with the same other coordinates.
  void arrive(run_state& s, std::size_t t, held& h, std::int64_t at, bool tied) {
    if (h.stage < 0 || h.stage == at || ((h.sent_to >> at) & 1) != 0) return;
    const bool interleaved = o_.pipeline->schedule == ctspmd::model::pipeline_schedule::interleaved;
    const auto gap = interleaved ? (at - h.stage + stages_) % stages_ : at > h.stage ? at - h.stage : h.stage - at;
    if (!tied && gap != 1 && gap != (interleaved ? stages_ - 1 : 1))  // (sent all the same, to check the rest)
      s.stray_sends.push_back(name(t) + " from stage " + std::to_string(h.stage) + " to stage " + std::to_string(at) +
                              ": a send the report does not list (stages send to their neighbours)");
    std::int64_t bytes = 0;
    for (std::size_t d = 0; d < h.locals.size(); ++d) {
      if (on_stage(d, h.stage) != d) continue;
      h.locals[on_stage(d, at)] = h.locals[d];
      bytes = std::max(bytes, to_int(h.locals[d].size()) * p_.tensor_at(t).element_bytes);
    }
    if (tied) {
      s.tied_bytes += bytes;
    } else if (gap == 1 || (interleaved && gap == stages_ - 1)) {
      ++s.sends[h.stage];
      s.send_bytes.push_back(bytes);
    }
    h.sent_to |= std::uint64_t{1} << at;
    held& kept = value_of(s, t, true);
    kept.locals = h.locals;
    kept.sent_to = h.sent_to;
  }
  /// The device of stage `at` with device d's other coordinates.
  std::size_t on_stage(std::size_t d, std::int64_t at) const {
    auto c = device_coords(p_.mesh(), to_int(d));
    c[to_size(o_.pipeline->mesh_dim)] = at;
    return to_size(device_index(p_.mesh(), c));
  }
  /// What a device of another stage holds of a tensor: nothing (NaNs, so that reading it shows).
  static void poison(std::vector<tensor>& outputs) {
    for (auto& t : outputs) poison(t);
  }
  static void poison(tensor& t) { std::fill(t.data.begin(), t.data.end(), std::numeric_limits<double>::quiet_NaN()); }
  /// The sends against the report's: per stage, its sends a micro-batch; each, its boundary bytes.
  void check_sends(const run_state& s, result& out) const {
    if (!s.stray_sends.empty()) out.byte_mismatches.push_back("send_recv: " + s.stray_sends.front());
    // The schedule as run keeps the micro-batches in flight the report's memory counts (in chunks
    // of a micro-batch, interleaved: each a v-th of it).
    for (std::int64_t r = 0; r < stages_; ++r) {
      const double ran = static_cast<double>(s.in_flight.at(to_size(r))) / static_cast<double>(chunks());
      if (std::abs(ran - report_.stage(to_size(r)).in_flight) > 1e-12 && out.mismatch.empty())
        out.mismatch = "stage " + std::to_string(r) + " keeps " + std::to_string(ran) +
                       " micro-batches in flight as its schedule runs, the report " +
                       std::to_string(report_.stage(to_size(r)).in_flight);
    }
    for (std::int64_t r = 0; r < stages_; ++r) {
      const auto it = s.sends.find(r);
      const std::int64_t ran = it == s.sends.end() ? 0 : it->second;
      const auto expected = report_.stage(to_size(r)).sends * o_.micro_batches;
      out.collectives += to_size(ran);
      if (ran != expected)
        out.byte_mismatches.push_back("send_recv from stage " + std::to_string(r) + ": reported " + std::to_string(expected) +
                                      " sends, ran " + std::to_string(ran));
    }
    for (const auto r : {std::int64_t{0}, stages_ - 1})
      if (report_.stage(to_size(r)).tied_gradient_bytes != s.tied_bytes) {
        out.byte_mismatches.push_back("send_recv of tied gradients: stage " + std::to_string(r) + " reported " +
                                      std::to_string(report_.stage(to_size(r)).tied_gradient_bytes) +
                                      " bytes a step, a device sent " + std::to_string(s.tied_bytes));
        break;
      }
    for (auto b : s.send_bytes)
      if (b != report_.boundary_bytes()) {
        out.byte_mismatches.push_back("send_recv: reported " + std::to_string(report_.boundary_bytes()) +
                                      " bytes a send, a device sent " + std::to_string(b));
        break;
      }
  }

  run_state execute(bool sharded, std::int64_t skip) {
    run_state s;
    if (split_ >= 0 && sharded && !forward_only_) {
      // The schedule's order: each stage's forward and backward passes of each micro-batch.
      std::vector<std::int64_t> outstanding(to_size(stages_), 0);
      s.in_flight.assign(to_size(stages_), 0);
      for (const auto& e : schedule()) {
        micro_ = e.micro;
        event_ = e;
        pass(s, sharded, skip, false);
        auto& n = outstanding[to_size(e.stage)];
        n += e.backward ? -1 : 1;
        s.in_flight[to_size(e.stage)] = std::max(s.in_flight[to_size(e.stage)], n);
      }
      event_.reset();
      for (micro_ = 0; micro_ < o_.micro_batches; ++micro_) accumulate(s);
    } else {
      for (micro_ = 0; micro_ < o_.micro_batches; ++micro_) {
        pass(s, sharded, skip, false);
        if (!forward_only_) accumulate(s);
      }
    }
    micro_ = -1;
    if (!forward_only_) pass(s, sharded, skip, true);
    return s;
  }

  /// The step's operators in program order: those of the optimizer (`optimizer`) or the others.
  void pass(run_state& s, bool sharded, std::int64_t skip, bool optimizer) {
    run_.assign(p_.block_count(), -1);
    optimizer_pass_ = optimizer;
    for (std::size_t i = 0; i < p_.op_count();) {
      std::int64_t b = -1;
      for (std::size_t k = 0; k < p_.block_count(); ++k)
        if (p_.block_at(k).first_op == i) b = static_cast<std::int64_t>(k);
      if (b < 0) {
        step(s, i, sharded, skip);
        ++i;
        continue;
      }
      const auto& bl = p_.block_at(static_cast<std::size_t>(b));
      const auto fwd = bl.number(static_cast<std::size_t>(b));
      const bool backward = bl.mirror_of >= 0;
      const bool elsewhere =
          event_ && (backward != event_->backward ||
                     (static_cast<std::int64_t>(fwd) != split_ &&
                      (part_stage(bl.first_op) != event_->stage || part_chunk(bl.first_op) != event_->chunk)));
      if ((backward && forward_only_) || elsewhere) {
        i = bl.end_op;
        continue;
      }
      for (std::size_t j = 0; j < bl.count; ++j) {
        const auto run = static_cast<std::int64_t>(backward ? bl.count - 1 - j : j);
        if (event_ && static_cast<std::int64_t>(fwd) == split_ &&
            (layer_stage_.at(to_size(run)) != event_->stage || layer_chunk_.at(to_size(run)) != event_->chunk))
          continue;
        if (!optimizer) {  // (the optimizer's operators do not read a block's input)
          held in;
          if (j == 0) {
            in = value_of(s, bl.source.index, sharded);
          } else {
            run_[fwd] = backward ? run + 1 : run - 1;
            in = value_of(s, bl.output.index, sharded);
          }
          run_[fwd] = run;
          s.values[key_of(bl.input.index)] = in;
        }
        run_[fwd] = run;
        for (auto k = bl.first_op; k < bl.end_op; ++k) step(s, k, sharded, skip);
      }
      i = bl.end_op;
    }
  }

  /// Adds this micro-batch's values of the tensors the optimizer reads from the passes before it
  /// (gradients) into their sums, which the optimizer's pass reads.
  void accumulate(run_state& s) const {
    std::vector<std::pair<key, const held*>> mine;
    for (const auto& [k, h] : s.values)
      if (k.micro == micro_ && crosses_[k.tensor]) mine.emplace_back(k, &h);
    for (const auto& [k, h] : mine) {
      const key total{k.tensor, k.run, -1};
      const auto it = s.values.find(total);
      if (it == s.values.end()) {
        s.values[total] = *h;
        continue;
      }
      if (it->second.attr != h->attr)
        throw oracle_error(name(k.tensor) + " is held as " + ctspmd::to_string(h->attr) + " in one micro-batch and as " +
                           ctspmd::to_string(it->second.attr) + " in another: its sum is not simulated");
      for (std::size_t d = 0; d < h->locals.size(); ++d)
        for (std::size_t e = 0; e < h->locals[d].size(); ++e) it->second.locals[d].data[e] += h->locals[d].data[e];
    }
  }

  void step(run_state& s, std::size_t i, bool sharded, std::int64_t skip) {
    if (forward_only_ && p_.op_at(i).phase != ctspmd::model::phase::forward) return;
    if (in_optimizer(i) != optimizer_pass_) return;
    if (event_ && ((p_.op_at(i).phase == ctspmd::model::phase::backward) != event_->backward ||
                   stage_of(s, i) != event_->stage || (!in_split(i) && part_chunk(i) != event_->chunk)))
      return;
    try {
      run_op(s, i, sharded, skip);
    } catch (const oracle_error& e) {
      throw oracle_error("operator " + std::to_string(i) + " '" + std::string(p_.op_at(i).name()) + "' (" +
                         std::string(p_.op_at(i).rule) + "): " + e.what());
    }
  }

  /// Compares the sharded run's tensors (only the results: those no operator reads, with
  /// `results_only`) with the reference's: empty if they agree, else what differs first.
  std::string compare(const run_state& s, bool results_only, double* max_error) const {
    std::string first;
    for (const auto& k : s.produced) {
      const auto& ti = p_.tensor_at(k.tensor);
      if (ti.shape.empty()) continue;  // an absent operand (model/training.hpp)
      if (results_only && read_[k.tensor]) continue;
      const auto ref = reference_.values.find(k);
      if (ref == reference_.values.end()) continue;
      const auto& h = s.values.at(k);
      std::string what = name(k.tensor) + (k.run >= 0 ? " of run " + std::to_string(k.run) : "");
      try {
        // Under the layout the report promises, where it does: the devices must hold it so.
        const auto promised = s.promised.find(k);
        const bool known = promised != s.promised.end() && promised->second;
        auto locals = h.locals;  // (a pipeline: as the devices of the stage that computed it hold it)
        if (h.stage >= 0)
          for (std::size_t d = 0; d < locals.size(); ++d) locals[d] = h.locals[on_stage(d, h.stage)];
        const auto got = assemble(locals, known ? *promised->second : h.attr, global(k.tensor));
        const auto& want = ref->second.locals.at(0);
        double diff = 0;
        for (std::size_t e = 0; e < want.size(); ++e) {
          const double d = std::abs(got.data[e] - want.data[e]);
          diff = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(diff, d);  // (a NaN differs)
        }
        const auto sc = reference_.scale.find(k);
        const double scale = std::max(magnitude(want), sc == reference_.scale.end() ? 0.0 : sc->second);
        const double rel = diff / std::max(scale, 1e-300);
        if (max_error) *max_error = std::max(*max_error, rel);
        if (rel > o_.tolerance && first.empty())
          first = what + ": relative difference " + std::to_string(rel) + " from one device";
      } catch (const std::exception& e) {
        if (first.empty()) first = what + ": " + e.what();
      }
      if (!first.empty() && !max_error) break;
    }
    return first;
  }

  const Plan& p_;
  const Prop& r_;
  options o_;
  rng g_;
  ctspmd::process_mesh one_{ctspmd::tensor_shape{1}};
  std::vector<std::int64_t> per_run_;  ///< per tensor: the forward block whose runs each hold one, or -1
  std::vector<bool> read_, saved_;
  // A pipeline: its block, stages, each run's stage, the first operator of its backward pass,
  // each operator's block (or -1), and the report.
  std::int64_t split_ = -1, stages_ = 1, mirror_first_op_ = -1;
  std::vector<std::int64_t> layer_stage_, layer_chunk_, op_block_ = std::vector<std::int64_t>(p_.op_count(), -1);
  std::vector<bool> tied_sum_ = std::vector<bool>(p_.op_count(), false);  ///< see `in_optimizer`
  std::vector<int> reads_;  ///< per tensor: read before the pipeline's block (1), after it (2)
  ctspmd::model::pipeline_report report_{};
  std::optional<event> event_;  ///< the schedule's pass running, if any
  std::map<std::size_t, domain> domains_;
  std::map<std::tuple<std::size_t, std::size_t, bool>, std::vector<std::size_t>> entries_;
  std::map<key, tensor> inputs_;
  std::vector<ctspmd::runtime::attribute_map> attrs_;  ///< per operator, as its kernel reads them
  std::vector<std::int64_t> run_;  ///< per block number: the run executing (or last executed)
  std::int64_t micro_ = -1;        ///< the micro-batch executing, or -1 (the optimizer's pass)
  bool optimizer_pass_ = false;
  /// Per tensor: one value for all micro-batches (parameters, optimizer states, what only the
  /// optimizer reads or writes); read by the optimizer, written before it (summed over them).
  std::vector<bool> persistent_, crosses_;
  run_state reference_;
  // The gradient check: the one-device step's (parameter, gradient) pairs, and a forward-only
  // run's change of the parameters.
  std::vector<std::pair<key, tensor>> gradients_;
  std::map<key, tensor> shift_;
  double shift_scale_ = 0;
  bool forward_only_ = false;
};

}  // namespace detail

/// Simulates training step `step`, whose propagation is `r`, on its mesh (see the file comment).
template <class Plan, class Prop>
result simulate(const Plan& step, const Prop& r, const options& o = {}) {
  result failed;
  if (!r.ok()) {
    failed.error = "the propagation failed: " + ctspmd::to_string(r.error());
    return failed;
  }
  try {
    detail::simulator<Plan, Prop> s(step, r, o);
    return s.run();
  } catch (const std::exception& e) {
    failed.error = e.what();
    return failed;
  }
}

}  // namespace ctspmd_oracle::step

#endif
