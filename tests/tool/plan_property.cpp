// A property test: plans generated from a seed (small random models, meshes, layouts, training
// options, clusters; some invalid) give the same answers at compile time and from ctspmd-infer.
// For each seed of the sample, the plan is built, propagated (its training step's, with
// training) and costed during compilation (constexpr variables); at run time the same plan,
// written as a JSON plan request (plan_write.hpp), is sent through the tool's code, and every
// figure is compared: each tensor's layout, the reshard list, the totals (from the propagation's
// own counts), the cost; for a plan propagation refuses, the error (kind, operator, its name,
// rule and phase, the inputs involved, the message); for an annotation the mesh refuses, the
// error kind (from tensor_dist_attr::check) and the request path the tool names. A difference
// fails naming the seed and the figure.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "plan_answer.hpp"
#include "plan_write.hpp"

#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace {

namespace model = ctspmd::model;
using ctspmd::dims_mapping;
using ctspmd::tensor_shape;
using ctspmd_requests::json;
using model::tensor_id;

// ==== the generator ===========================================================================

/// splitmix64: a seed's numbers, the same in constant evaluation and at run time.
struct splitmix64 {
  std::uint64_t state = 0;
  constexpr std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
  }
  /// In [0, n).
  constexpr std::int64_t below(std::int64_t n) {
    return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(n));
  }
  constexpr bool percent(std::int64_t p) { return below(100) < p; }
};

using forward_plan = model::plan<48, 24>;

/// Tensor names "t00" to "t47" (views of a constant: a plan keeps views).
inline constexpr auto name_chars = [] {
  std::array<char, 3 * forward_plan::max_tensors> c{};
  for (std::size_t i = 0; i < forward_plan::max_tensors; ++i) {
    c[3 * i] = 't';
    c[3 * i + 1] = static_cast<char>('0' + i / 10);
    c[3 * i + 2] = static_cast<char>('0' + i % 10);
  }
  return c;
}();

enum class cluster_kind { none, h100, custom };

/// A generated case: a forward plan, and what the request adds to it.
struct generated {
  forward_plan forward;
  tensor_id loss{};
  bool train = false;
  model::training_options options{};
  cluster_kind cluster = cluster_kind::none;
  model::cluster devices{};      ///< the cluster a cost is figured on (H100 nodes unless custom)
  std::int64_t bad_tensor = -1;  ///< an outer tensor the request annotates with `bad_mapping`, or -1
  dims_mapping bad_mapping{};    ///< a mapping the mesh refuses (a mesh dim twice, or out of range)
  ctspmd::error_kind bad_kind{}; ///< tensor_dist_attr::check's error kind for it
};

/// Adds operators to a plan, keeping the current activation and its shape: [l0, l1, h] (rank 3)
/// or, flattened, [l0 * l1, h].
class builder {
 public:
  constexpr builder(splitmix64& rng, forward_plan& p, model::element_size element)
      : rng_(rng), p_(p), element_(element), ndim_(p.mesh().ndim()) {}

  /// A layout on the plan's mesh for a tensor of rank `rank`: dims on distinct random mesh dims,
  /// sometimes (`partial`) partial over a mesh dim no dim uses.
  constexpr ctspmd::tensor_dist_attr layout(std::size_t rank, bool partial) {
    dims_mapping m(rank, -1);
    std::uint32_t used = 0;
    for (std::size_t d = 0; d < rank; ++d)
      if (const auto k = rng_.below(ndim_); rng_.percent(40) && ((used >> k) & 1) == 0) {
        m[d] = k;
        used |= 1u << k;
      }
    ctspmd::tensor_dist_attr a(p_.mesh(), m);
    if (const auto k = rng_.below(ndim_); partial && rng_.percent(15) && ((used >> k) & 1) == 0)
      a.set_partial_status({k}, rng_.percent(70) ? ctspmd::reduce_type::sum : ctspmd::reduce_type::max);
    return a;
  }

  /// The plan's input x, annotated with `mapping` if given (else sometimes at random).
  constexpr void input(std::int64_t l0, std::int64_t l1, std::int64_t h, const dims_mapping* mapping) {
    l0_ = l0, l1_ = l1, h_ = h;
    const tensor_shape s{l0, l1, h};
    cur_ = mapping != nullptr ? p_.tensor(name(), s, *mapping, element_)
           : rng_.percent(60) ? p_.tensor(name(), s, layout(3, true), element_)
                              : p_.tensor(name(), s, element_);
  }

  /// x @ w, w [h, out] (or [out, h] with trans_y), annotated with `mapping` if given.
  constexpr void linear(std::int64_t out, const dims_mapping* mapping = nullptr) {
    const bool trans = rng_.percent(20);
    const tensor_shape ws = trans ? tensor_shape{out, h_} : tensor_shape{h_, out};
    const auto w = mapping != nullptr ? p_.parameter(name(), ws, *mapping, element_) : parameter(ws);
    h_ = out;
    const auto y = output(shape());
    p_.op<"matmul">({cur_, w}, {y}, {.trans_y = trans});
    cur_ = y;
  }

  /// One random step: a linear layer, an activation, a residual add, a layer norm, a transpose
  /// of the leading dims, a reshape between rank 3 and 2; rarely a conflict.
  constexpr void step() {
    if (ndim_ >= 2 && rng_.percent(5)) return conflict();
    switch (rng_.below(6)) {
      case 0: return linear(rng_.percent(50) || h_ >= 32 ? h_ : 2 * h_);
      case 1: return activation();
      case 2: {
        const auto r = cur_;
        activation();
        const auto y = output(shape());
        p_.op<"add">({cur_, r}, {y});
        cur_ = y;
        return;
      }
      case 3: return layer_norm();
      case 4:
        if (!flat_) return transpose();
        [[fallthrough]];
      default: return reshape();
    }
  }

  /// A conflict a matmul refuses: its input pinned with the hidden dim on mesh dim a (by a scale),
  /// its weight's rows annotated on mesh dim b.
  constexpr void conflict() {
    const auto a = rng_.below(ndim_), b = (a + 1 + rng_.below(ndim_ - 1)) % ndim_;
    dims_mapping m(shape().size(), -1);
    m[m.size() - 1] = a;
    const auto y = p_.tensor(name(), shape(), m, element_);
    p_.op<"scale">({cur_}, {y});
    cur_ = y;
    const dims_mapping rows{b, -1};
    linear(h_, &rows);
  }

  /// A block of 1 to 3 steps run 1 to 3 times; its body returns to its input's shape.
  constexpr void block() {
    const auto l0 = l0_, l1 = l1_, h = h_;
    const bool flat = flat_;
    cur_ = p_.repeat(static_cast<std::size_t>(1 + rng_.below(3)), cur_, [&](forward_plan&, tensor_id in) {
      cur_ = in;
      for (auto n = 1 + rng_.below(3); n > 0; --n) step();
      if (l0_ != l0 || l1_ != l1) {
        if (flat_) reshape();
        transpose();
      }
      if (flat_ != flat) reshape();
      if (h_ != h) linear(h);
      return cur_;
    });
  }

  constexpr tensor_id current() const { return cur_; }

 private:
  constexpr std::string_view name() const { return {name_chars.data() + 3 * p_.tensor_count(), 3}; }
  constexpr tensor_shape shape() const { return flat_ ? tensor_shape{l0_ * l1_, h_} : tensor_shape{l0_, l1_, h_}; }

  /// A parameter, annotated at random half the time (partial, rarely).
  constexpr tensor_id parameter(const tensor_shape& s) {
    if (rng_.percent(50)) return p_.parameter(name(), s, layout(s.size(), rng_.percent(10)), element_);
    return p_.parameter(name(), s, element_);
  }
  /// An operator's output, sometimes annotated (pinned).
  constexpr tensor_id output(const tensor_shape& s) {
    if (rng_.percent(8)) return p_.tensor(name(), s, layout(s.size(), false), element_);
    return p_.tensor(name(), s, element_);
  }

  constexpr void activation() {
    const auto y = output(shape());
    const auto kind = rng_.below(4);
    const auto add = [&](forward_plan& p) {
      if (kind == 0) p.op<"relu">({cur_}, {y});
      if (kind == 1) p.op<"gelu">({cur_}, {y});
      if (kind == 2) p.op<"softmax">({cur_}, {y}, {.axis = -1});
      if (kind == 3) p.op<"scale">({cur_}, {y}, {.scale = 0.5});
    };
    if (rng_.percent(30))
      p_.recomputable(add);  // what selective recomputation runs again
    else
      add(p_);
    cur_ = y;
  }

  constexpr void layer_norm() {
    const auto scale = parameter({h_});
    const auto bias = parameter({h_});
    const auto y = output(shape());
    const tensor_shape lead = flat_ ? tensor_shape{l0_ * l1_} : tensor_shape{l0_, l1_};
    const auto mean = p_.tensor(name(), lead, model::float32);
    const auto var = p_.tensor(name(), lead, model::float32);
    p_.op<"layer_norm">({cur_, scale, bias}, {y, mean, var}, {.begin_norm_axis = flat_ ? 1 : 2});
    cur_ = y;
  }

  constexpr void transpose() {
    std::swap(l0_, l1_);
    const auto y = output(shape());
    p_.op<"transpose">({cur_}, {y}, {.perm = {1, 0, 2}});
    cur_ = y;
  }

  constexpr void reshape() {
    flat_ = !flat_;
    const auto s = shape();
    const auto y = output(s);
    p_.op<"reshape">({cur_}, {y}, {.shape = s});
    cur_ = y;
  }

  splitmix64& rng_;
  forward_plan& p_;
  model::element_size element_;
  std::int64_t ndim_;
  std::int64_t l0_ = 0, l1_ = 0, h_ = 0;
  bool flat_ = false;
  tensor_id cur_{};
};

/// The case of seed `seed`.
constexpr generated make_case(std::uint64_t seed) {
  splitmix64 rng{seed};
  tensor_shape mesh_shape;
  for (auto n = 1 + rng.below(3); n > 0; --n) mesh_shape.push_back(std::int64_t{1} << rng.below(3));
  const ctspmd::process_mesh mesh(mesh_shape);
  forward_plan p(mesh, rng.percent(25) ? ctspmd::semantics::phi : ctspmd::semantics::fluid);
  builder b(rng, p, rng.percent(50) ? model::bfloat16 : model::float32);

  // Sometimes a conflict: x's hidden dim on mesh dim a, the first weight's rows on mesh dim b.
  const bool conflict = mesh.ndim() >= 2 && rng.percent(20);
  const auto a = rng.below(mesh.ndim());
  const auto other = mesh.ndim() < 2 ? a : (a + 1 + rng.below(mesh.ndim() - 1)) % mesh.ndim();
  const dims_mapping x_mapping{-1, -1, a}, w_mapping{other, -1};
  const std::int64_t sizes[] = {2, 4, 8};
  b.input(sizes[rng.below(3)], sizes[rng.below(3)], 8 << rng.below(2), conflict ? &x_mapping : nullptr);
  b.linear(16, conflict ? &w_mapping : nullptr);  // a parameter first: every later tensor gets a gradient
  for (auto n = rng.below(3); n > 0; --n) b.step();
  if (rng.percent(50)) b.block();
  for (auto n = rng.below(3); n > 0; --n) b.step();

  generated g{p, b.current()};
  g.train = rng.percent(70);
  if (g.train) {
    auto& o = g.options;
    if (rng.percent(50)) {
      o.shard_optimizer_states_on = rng.below(mesh.ndim());
      o.zero_stage = rng.below(4);
      if (mesh.ndim() >= 2 && rng.percent(25))
        o.shard_optimizer_states_also_on = (o.shard_optimizer_states_on + 1) % mesh.ndim();
    }
    if (rng.percent(25)) o.state_element_bytes = 2;
    o.gradient_element_bytes = rng.below(3) * 2;  // 0 (the parameter's), 2 or 4
    o.master_weights = rng.percent(25);
    o.recompute = static_cast<model::recompute>(rng.below(3));
    o.keep_gathered_inputs = rng.percent(20);
  }
  g.cluster = static_cast<cluster_kind>(rng.below(3));
  g.devices = model::h100_cluster(mesh);
  if (g.cluster == cluster_kind::custom) {
    const double bandwidths[] = {1e10, 5e10, 4.5e11}, latencies[] = {1e-6, 5e-6, 1e-5};
    for (std::size_t m = 0; m < mesh_shape.size(); ++m)
      g.devices.links[m] = {bandwidths[rng.below(3)], latencies[rng.below(3)]};
    g.devices.peak_flops = rng.percent(50) ? 1e15 : 3.125e14;
    g.devices.compute_efficiency = rng.percent(50) ? 0.5 : 1.0;
    g.devices.communication_efficiency = rng.percent(50) ? 0.75 : 1.0;
    g.devices.memory_bandwidth = rng.percent(50) ? 0.0 : 2e12;  // 0: FLOPs alone
    g.devices.memory_efficiency = rng.percent(50) ? 0.8 : 1.0;
  }

  // Sometimes an annotation the mesh refuses, on an outer tensor of rank 2 or more.
  if (rng.percent(12)) {
    std::int64_t chosen = -1;
    for (std::size_t t = 0, seen = 0; t < g.forward.tensor_count(); ++t) {
      bool outer = g.forward.tensor_at(t).shape.size() >= 2;
      for (std::size_t k = 0; k < g.forward.block_count(); ++k)
        outer = outer && (t < g.forward.block_at(k).input.index || t >= g.forward.block_at(k).end_tensor);
      if (outer && rng.below(static_cast<std::int64_t>(++seen)) == 0) chosen = static_cast<std::int64_t>(t);
    }
    g.bad_tensor = chosen;
    g.bad_mapping = dims_mapping(g.forward.tensor_at(static_cast<std::size_t>(chosen)).shape.size(), -1);
    if (rng.percent(60))
      g.bad_mapping[0] = g.bad_mapping[1] = rng.below(mesh.ndim());  // a mesh dim twice
    else
      g.bad_mapping[static_cast<std::size_t>(rng.below(2))] = mesh.ndim() + rng.below(2);  // no such mesh dim
    g.bad_kind = ctspmd::tensor_dist_attr::check(mesh, g.bad_mapping).error().kind;
  }
  return g;
}

template <std::uint64_t Seed>
inline constexpr generated case_of = make_case(Seed);

// ==== comparing ==============================================================================

/// What the sample held.
struct tally {
  int answers = 0, trained = 0, costed = 0, propagation_errors = 0, annotation_errors = 0;
};

/// Where two answers first differ: the path of the figure, and its two values.
struct difference {
  std::string at;
  json compile_time, tool;
};

/// The first figure where `a` and `b` (which differ) differ, under path `at`.
difference first_difference(const json& a, const json& b, const std::string& at) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [key, value] : a.items())
      if (!b.contains(key) || value != b.at(key))
        return first_difference(value, b.contains(key) ? b.at(key) : json(), at + "." + key);
  } else if (a.is_array() && b.is_array()) {
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
      if (a[i] != b[i]) return first_difference(a[i], b[i], at + "[" + std::to_string(i) + "]");
  }
  return {at, a, b};  // values, or lists of other lengths, or a key only b has
}

/// Fails, naming the seed and the figure, unless the compile-time figure equals the tool's.
void compare(std::uint64_t seed, const std::string& figure, const json& compile_time, const json& tool) {
  if (compile_time == tool) return;
  const auto d = first_difference(compile_time, tool, figure);
  FAIL_CHECK("seed " << seed << ": " << d.at << " differs: " << ctspmd_requests::dump(d.compile_time).substr(0, 400)
                     << " at compile time, " << ctspmd_requests::dump(d.tool).substr(0, 400) << " from the tool");
}

/// The request for case `c` (its forward plan written as JSON, `w`), with its training options
/// (each one only if not the default: the tool's defaults are compared too) and cluster.
json request_of(const generated& c, const plan_write::written& w) {
  json request = w.request;
  if (c.train) {
    const model::training_options d{}, &o = c.options;
    json t = {{"loss", w.index[c.loss.index]}};
    constexpr std::string_view recomputes[] = {"none", "selective", "full"};
    if (o.shard_optimizer_states_on != d.shard_optimizer_states_on)
      t["shard_optimizer_states_on"] = o.shard_optimizer_states_on;
    if (o.shard_optimizer_states_also_on != d.shard_optimizer_states_also_on)
      t["shard_optimizer_states_also_on"] = o.shard_optimizer_states_also_on;
    if (o.zero_stage != d.zero_stage) t["zero_stage"] = o.zero_stage;
    if (o.state_element_bytes != d.state_element_bytes) t["state_element_bytes"] = o.state_element_bytes;
    if (o.gradient_element_bytes != d.gradient_element_bytes) t["gradient_element_bytes"] = o.gradient_element_bytes;
    if (o.master_weights) t["master_weights"] = true;
    if (o.recompute != d.recompute) t["recompute"] = recomputes[static_cast<std::size_t>(o.recompute)];
    if (o.keep_gathered_inputs) t["keep_gathered_inputs"] = true;
    request["training"] = t;
  }
  if (c.cluster == cluster_kind::h100) request["cluster"] = "h100";
  if (c.cluster == cluster_kind::custom) {
    json links = json::array();
    for (std::int64_t m = 0; m < c.forward.mesh().ndim(); ++m) {
      const auto& l = c.devices.links[static_cast<std::size_t>(m)];
      links.push_back({{"bandwidth", l.bandwidth}, {"latency", l.latency}});
    }
    request["cluster"] = {{"links", links},
                          {"peak_flops", c.devices.peak_flops},
                          {"compute_efficiency", c.devices.compute_efficiency},
                          {"communication_efficiency", c.devices.communication_efficiency},
                          {"memory_bandwidth", c.devices.memory_bandwidth},
                          {"memory_efficiency", c.devices.memory_efficiency}};
  }
  return request;
}

/// The tool's answer to plan request `plan`, dumped and sent as a request line.
json ask(const json& plan) { return json::parse(ctspmd_requests::handle(ctspmd_requests::dump(json{{"plan", plan}})).line); }

/// Compares the compile-time propagation `r` of `plan` (case `c`'s forward plan or training step)
/// and its cost (null if not costed) with the tool's answer.
template <class Plan, class Propagation>
void check_answer(std::uint64_t seed, const generated& c, const Plan& plan, const Propagation& r,
                  const model::step_cost* cost, tally& n) {
  const auto w = plan_write::write(c.forward);
  const json answer = ask(request_of(c, w));
  if (!r.ok()) {
    ++n.propagation_errors;
    const auto& op = plan.op_at(static_cast<std::size_t>(r.failed_operator()));
    json error = {{"kind", ctspmd::to_string(r.error().kind)},
                  {"message", std::string(model::detail::describe_failure(plan, r).view())},
                  {"operator", r.failed_operator()},
                  {"name", op.name()},
                  {"rule", op.rule},
                  {"phase", model::to_string(op.phase)}};
    json inputs = json::array();
    for (std::size_t k = 0; k < op.inputs.size(); ++k)
      if (r.failure_involves(k)) inputs.push_back(k);
    if (!inputs.empty()) error["inputs"] = inputs;
    return compare(seed, "error", error, answer.contains("error") ? answer.at("error") : answer);
  }
  ++n.answers;
  if (answer.contains("error")) return compare(seed, "answer", json::object(), answer);
  const ctspmd::named_mesh mesh(plan.mesh());
  const json expected = plan_write::renumbered(ctspmd_requests::report_json(plan, r, mesh, {}), w.index);
  compare(seed, "tensors", expected.at("tensors"), answer.at("tensors"));
  compare(seed, "reshards", expected.at("reshards"), answer.at("reshards"));
  // The totals from the propagation's own counts.
  json totals = json::object();
  for (std::size_t ph = 0; ph < model::phase_count; ++ph)
    for (std::size_t k = 0; k < model::collective_count; ++k) {
      const auto phase = static_cast<model::phase>(ph);
      const auto kind = static_cast<model::collective>(k);
      if (const auto count = r.count(phase, kind); count > 0)
        totals[std::string(model::to_string(phase))][std::string(model::to_string(kind))] = {
            {"count", count}, {"bytes", r.bytes(phase, kind)}};
    }
  compare(seed, "totals", totals, answer.at("totals"));
  if (cost != nullptr) {
    ++n.costed;
    compare(seed, "cost", ctspmd_requests::cost_json(plan, *cost), answer.contains("cost") ? answer.at("cost") : json());
  } else if (answer.contains("cost")) {
    compare(seed, "cost", json(), answer.at("cost"));
  }
}

/// Case `c` has an annotation the mesh refuses: the tool's error has its kind, at its tensor.
void check_bad_annotation(std::uint64_t seed, const generated& c, tally& n) {
  ++n.annotation_errors;
  const auto w = plan_write::write(c.forward);
  json request = request_of(c, w);
  const auto at = w.index[static_cast<std::size_t>(c.bad_tensor)];
  auto& t = request["tensors"][at];
  t["dims_mapping"] = json(c.bad_mapping);
  t.erase("partial");
  t.erase("partial_reduce");
  const json answer = ask(request);
  const json error = answer.contains("error") ? answer.at("error") : answer;
  compare(seed, "error.kind", ctspmd::to_string(c.bad_kind), error.value("kind", json()));
  compare(seed, "error.at", "tensors[" + std::to_string(at) + "]", error.value("at", json()));
}

/// Seed `Seed`: its case's propagation (of its training step, with training) and cost, evaluated
/// during compilation, compared with the tool's answer.
template <std::uint64_t Seed>
void check_seed(tally& n) {
  static constexpr const generated& c = case_of<Seed>;
  if constexpr (c.bad_tensor >= 0) {
    check_bad_annotation(Seed, c, n);
  } else if constexpr (!c.train) {
    static constexpr auto r = model::try_propagate(c.forward);
    if constexpr (r.ok() && c.cluster != cluster_kind::none) {
      static constexpr auto cost = model::cost(c.forward, r, c.devices);
      check_answer(Seed, c, c.forward, r, &cost, n);
    } else {
      check_answer(Seed, c, c.forward, r, nullptr, n);
    }
  } else {
    ++n.trained;
    static constexpr auto step = model::training_step(c.forward, c.loss, c.options);
    static constexpr auto r = model::try_propagate(step);
    if constexpr (r.ok()) {
      static constexpr auto cost = model::cost(step, r, c.devices);
      check_answer(Seed, c, step, r, &cost, n);
    } else {
      check_answer(Seed, c, step, r, nullptr, n);
    }
  }
}

/// The number of seeds in the sample (0 to seeds - 1).
#ifndef CTSPMD_PROPERTY_SEEDS
#define CTSPMD_PROPERTY_SEEDS 48
#endif
constexpr std::uint64_t seeds = CTSPMD_PROPERTY_SEEDS;

template <std::uint64_t... Seed>
void check_all(std::integer_sequence<std::uint64_t, Seed...>, tally& n) {
  (check_seed<Seed>(n), ...);
}

}  // namespace

TEST_CASE("generated plans: the compile-time API and ctspmd-infer give the same answers") {
  tally n;
  check_all(std::make_integer_sequence<std::uint64_t, seeds>{}, n);
  MESSAGE(seeds << " seeds: " << n.answers << " answers (" << n.costed << " costed), " << n.trained
                << " training steps, " << n.propagation_errors << " propagation errors, " << n.annotation_errors
                << " annotations refused");
  // The sample reaches each path.
  CHECK(n.answers > 0);
  CHECK(n.costed > 0);
  CHECK(n.propagation_errors > 0);
  CHECK(n.annotation_errors > 0);
}
