// Plan requests: a whole model's plan as JSON (tensors, operators by name, repeated blocks, an
// optional training step, cluster, pipeline and search), built with <ctspmd/runtime/plan.hpp>,
// propagated, and answered with every tensor's layout, the reshard report and the step's cost
// (plan_answer.hpp). The operands are read as rule requests read theirs (reader.hpp). Part of the
// library ctspmd_requests (requests.hpp); the format is in ctspmd-infer --help and the README.
#include "plan_answer.hpp"
#include "reader.hpp"
#include "svg_report.hpp"
#include "../simulate/step_sim.hpp"

#include <ctspmd/model/search.hpp>
#include <ctspmd/runtime/plan.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ctspmd_requests {

namespace {

struct dtype {
  std::string_view name;
  std::int64_t bytes;
};
/// The element types a tensor's "dtype" may name (or give "element_bytes").
constexpr dtype dtypes[] = {{"bool", 1},    {"int8", 1},    {"uint8", 1},   {"int16", 2},
                                   {"float16", 2}, {"bfloat16", 2}, {"int32", 4},   {"float32", 4},
                                   {"int64", 8},   {"float64", 8}};

/// Builds the plan a request describes, propagates it and answers (`verify`). Strings of the
/// plan (names, labels, mesh names, string attributes) are views of the request's, which
/// outlives the reader.
class plan_reader {
 public:
  /// With `simulate`, the answer has the step simulated (`simulation`): the sequence in context
  /// parallelism's load-balanced order with `load_balanced_context`.
  explicit plan_reader(const json& request, bool simulate = false, bool load_balanced_context = false)
      : request_(request), simulate_(simulate), load_balanced_(load_balanced_context) {}

  json verify() {
    check_fields(request_, "\"plan\"",
                 {"mesh", "mesh_names", "semantics", "tensors", "operators", "training", "cluster", "pipeline", "search"});
    mesh_ = read_mesh(request_);
    plan_ = std::make_unique<ctspmd::runtime::plan>(mesh_, read_semantics(request_));
    scopes_.emplace_back();
    if (request_.contains("tensors")) read_tensors(request_.at("tensors"), "tensors");
    if (request_.contains("operators")) read_operators(request_.at("operators"), "operators");
    if (request_.contains("search") && !request_.contains("training"))
      bad_request("\"search\" needs \"training\": the loss, and the step's options it starts from");
    if (!request_.contains("training")) return answer(*plan_);
    auto training = read_training(request_.at("training"));  // (a lambda cannot capture a structured binding in Clang 14)
    json found;
    if (request_.contains("search")) {  // lay the unannotated inputs out as the search finds best
      const auto o = read_search(request_.at("search"), training.second);
      const auto c = request_.contains("cluster") ? read_cluster(request_.at("cluster")) : model::h100_cluster(mesh_);
      const auto r = std::make_unique<model::search_result>();
      at("search", [&] { *r = model::search(*plan_, training.first, c, o); });
      found = search_json(*r);
      at("search", [&] {
        for (const auto& l : r->best().layouts) plan_->annotate(l.tensor, l.attr);
      });
      training.second = r->best().training;
    }
    std::unique_ptr<ctspmd::runtime::step_plan> step;
    at("training", [&] { step = ctspmd::runtime::training_step(*plan_, training.first, training.second); });
    json out = answer(*step);
    if (!found.is_null()) out["search"] = std::move(found);
    return out;
  }

 private:
  using tensor_id = model::tensor_id;

  /// Runs `f`; an error gets `where` (a path in the request) in front, and as details.
  template <class F>
  void at(const std::string& where, F&& f, const json& details = json::object()) {
    try {
      f();
    } catch (const plan_error&) {
      throw;
    } catch (const spmd_error& e) {
      json d = details;
      d["at"] = where;
      const std::string_view message = e.what();
      throw plan_error(e.kind(), message.starts_with(where) ? std::string(message) : where + ": " + std::string(message), d);
    }
  }

  static std::string index_name(const std::string& what, std::size_t i) { return what + "[" + std::to_string(i) + "]"; }
  static const json& array_field(const json& v, const std::string& what) {
    if (!v.is_array()) bad_request(what + " must be an array");
    return v;
  }

  // ---- tensors ----
  void read_tensors(const json& list, const std::string& what) {
    array_field(list, what);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string w = index_name(what, i);
      at(w, [&] { read_tensor(list[i], w); });
    }
  }
  void read_tensor(const json& v, const std::string& w) {
    check_fields(v, w,
                 {"name", "shape", "dtype", "element_bytes", "parameter", "dims_mapping", "placements", "partition_spec",
                  "sdy", "partial", "partial_reduce"});
    if (!v.contains("name") || !v.at("name").is_string()) bad_request(w + " needs \"name\", a string");
    const std::string& name = v.at("name").get_ref<const std::string&>();
    if (!v.contains("shape")) bad_request(w + " has no \"shape\"");
    const auto shape = to_list<ctspmd::tensor_shape>(v.at("shape"), w, ".shape", "max_rank");
    const auto element = model::element_size::of_bytes(element_bytes(v, w));
    bool parameter = false;
    if (v.contains("parameter")) {
      if (!v.at("parameter").is_boolean()) bad_request(w + ".parameter must be true or false");
      parameter = v.at("parameter").get<bool>();
    }
    bool annotated = v.contains("partial") || v.contains("partial_reduce");
    for (auto k : layout_keys) annotated = annotated || v.contains(k);
    auto& p = *plan_;
    tensor_id id;
    if (annotated) {
      const auto attr = ctspmd::runtime::naming_operand(w, [&] { return read_layout(v, w, shape.size(), mesh_, form_); });
      id = parameter ? p.parameter(name, shape, attr, element) : p.tensor(name, shape, attr, element);
    } else {
      id = parameter ? p.parameter(name, shape, element) : p.tensor(name, shape, element);
    }
    declare(name, id);
  }
  static std::int64_t element_bytes(const json& v, const std::string& w) {
    if (v.contains("dtype") && v.contains("element_bytes")) bad_request(w + " gives both \"dtype\" and \"element_bytes\"");
    if (v.contains("element_bytes")) return element_bytes_in(v.at("element_bytes"), w + ".element_bytes", false);
    if (!v.contains("dtype")) return 4;
    const json& d = v.at("dtype");
    for (const auto& t : dtypes)
      if (d.is_string() && d.get_ref<const std::string&>() == t.name) return t.bytes;
    std::string names;
    for (const auto& t : dtypes) (names += names.empty() ? "" : ", ") += t.name;
    bad_request(w + ".dtype must be one of " + names + " (or give \"element_bytes\"), not " + shown(d));
  }
  /// An element size: 1 to 16 bytes, what a dtype's element has (or 0, if `zero_allowed`).
  static std::int64_t element_bytes_in(const json& v, const std::string& w, bool zero_allowed) {
    const std::int64_t n = to_int(v, w);
    if ((n == 0 && zero_allowed) || (n >= 1 && n <= model::element_size::max_bytes)) return n;
    bad_request(w + " is " + std::to_string(n) + ": a dtype's element has 1 to " +
                std::to_string(model::element_size::max_bytes) + " bytes" +
                (zero_allowed ? " (0: the parameter's)" : ""));
  }
  /// A name declared twice in a scope is ambiguous there: such tensors are referred to by index.
  void declare(const std::string& name, tensor_id id) {
    const auto [it, added] = scopes_.back().emplace(name, id);
    if (!added) it->second.reset();
  }

  /// The tensor `v` names: a name (the innermost block's first) or an index in the plan.
  tensor_id resolve(const json& v, const std::string& w) const {
    if (v.is_string()) {
      const auto& name = v.get_ref<const std::string&>();
      for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
        if (const auto it = s->find(name); it != s->end()) {
          if (!it->second)
            bad_request(w + ": two tensors are named '" + name + "'" + (s + 1 == scopes_.rend() ? "" : " in this block") +
                        ": refer to them by index");
          return *it->second;
        }
      bad_request(w + ": no tensor named '" + name + "'");
    }
    if (!is_int64(v)) bad_request(w + " must be a tensor's name or index, not " + shown(v));
    const auto i = v.get<std::int64_t>();
    if (i < 0 || static_cast<std::size_t>(i) >= plan_->tensor_count())
      bad_request(w + ": no tensor " + std::to_string(i) + " (the plan has " + std::to_string(plan_->tensor_count()) +
                  " so far)");
    return {static_cast<std::size_t>(i)};
  }
  std::vector<tensor_id> resolve_all(const json& v, const std::string& w) const {
    array_field(v, w);
    std::vector<tensor_id> out;
    for (std::size_t k = 0; k < v.size(); ++k) out.push_back(resolve(v[k], index_name(w, k)));
    return out;
  }

  // ---- operators and blocks ----
  void read_operators(const json& list, const std::string& what) {
    array_field(list, what);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string w = index_name(what, i);
      const json& v = list[i];
      if (v.is_object() && v.contains("repeat")) {
        at(w, [&] {
          check_fields(v, w, {"repeat"});
          read_block(v.at("repeat"), w + ".repeat");
        });
      } else {
        read_operator(v, w);
      }
    }
  }

  void read_operator(const json& v, const std::string& w) {
    const std::size_t index = plan_->op_count();
    json details = {{"operator", index}};
    std::vector<tensor_id> inputs, outputs;
    const ctspmd::runtime::attribute_map* attrs = nullptr;
    std::string_view op, label;
    bool recomputable = false;
    at(w, [&] {
      // The name first, so that every later error names the operator.
      if (!v.is_object()) bad_request(w + " must be an object");
      if (!v.contains("op") || !v.at("op").is_string()) bad_request(w + " needs \"op\", an operator name");
      op = v.at("op").get_ref<const std::string&>();
      details["rule"] = op;
      details["name"] = op;
      if (v.contains("label")) {
        if (!v.at("label").is_string()) bad_request(w + ".label must be a string");
        label = v.at("label").get_ref<const std::string&>();
        if (!label.empty()) details["name"] = label;
      }
      check_fields(v, w, {"op", "inputs", "outputs", "attrs", "label", "recomputable"});
      if (v.contains("recomputable")) {
        if (!v.at("recomputable").is_boolean()) bad_request(w + ".recomputable must be true or false");
        recomputable = v.at("recomputable").get<bool>();
      }
      for (const auto* field : {"inputs", "outputs"}) {
        if (!v.contains(field)) continue;
        details["operand"] = field;
        (field[0] == 'i' ? inputs : outputs) = resolve_all(v.at(field), w + "." + field);
      }
      details.erase("operand");
      attrs = &attrs_.emplace_back(v.contains("attrs") ? read_attrs(v.at("attrs"), w + ".attrs")
                                                       : ctspmd::runtime::attribute_map{});
    }, details);
    // The plan's own errors name the operator as the plan counts them.
    const std::string name(label.empty() ? op : label);
    at(w + " (operator " + std::to_string(index) + " '" + name + "')", [&] {
      const auto add = [&](ctspmd::runtime::plan& p) { ctspmd::runtime::add_operator(p, op, inputs, outputs, *attrs, label); };
      if (recomputable)
        plan_->recomputable(add);
      else
        add(*plan_);
    }, details);
  }

  void read_block(const json& v, const std::string& w) {
    check_fields(v, w, {"count", "source", "input", "tensors", "operators", "output"});
    if (scopes_.size() > 1) bad_request(w + ": a repeated block cannot hold another");
    for (const auto* field : {"count", "source", "input", "operators", "output"})
      if (!v.contains(field)) bad_request(w + " needs \"" + std::string(field) + "\"");
    const auto count = to_int(v.at("count"), w + ".count");
    if (count < 1) bad_request(w + ".count must be at least 1");
    const auto source = resolve(v.at("source"), w + ".source");
    if (!v.at("input").is_string()) bad_request(w + ".input must be a string: the name the body gives the block's input");
    const std::string& input = v.at("input").get_ref<const std::string&>();
    const tensor_id output = plan_->repeat(static_cast<std::size_t>(count), source, [&](ctspmd::runtime::plan&, tensor_id x) {
      scopes_.emplace_back();
      declare(input, x);
      if (v.contains("tensors")) read_tensors(v.at("tensors"), w + ".tensors");
      read_operators(v.at("operators"), w + ".operators");
      const auto out = resolve(v.at("output"), w + ".output");
      scopes_.pop_back();
      return out;
    });
    // The last run's output keeps its name after the block.
    if (v.at("output").is_string()) declare(v.at("output").get<std::string>(), output);
  }

  // ---- training ----
  std::pair<tensor_id, model::training_options> read_training(const json& v) {
    model::training_options o;
    tensor_id loss;
    at("training", [&] {
      check_fields(v, "\"training\"",
                   {"loss", "shard_optimizer_states_on", "shard_optimizer_states_also_on", "zero_stage", "state_element_bytes", "gradient_element_bytes",
                    "master_weights", "recompute", "keep_gathered_inputs"});
      if (!v.contains("loss")) bad_request("\"training\" needs \"loss\", the loss tensor");
      loss = resolve(v.at("loss"), "training.loss");
      if (v.contains("shard_optimizer_states_on"))
        o.shard_optimizer_states_on = mesh_dim(v.at("shard_optimizer_states_on"), "training.shard_optimizer_states_on");
      if (v.contains("shard_optimizer_states_also_on"))
        o.shard_optimizer_states_also_on =
            mesh_dim(v.at("shard_optimizer_states_also_on"), "training.shard_optimizer_states_also_on");
      if (v.contains("zero_stage")) o.zero_stage = to_int(v.at("zero_stage"), "training.zero_stage");
      if (v.contains("state_element_bytes"))
        o.state_element_bytes = element_bytes_in(v.at("state_element_bytes"), "training.state_element_bytes", false);
      if (v.contains("gradient_element_bytes"))
        o.gradient_element_bytes =
            element_bytes_in(v.at("gradient_element_bytes"), "training.gradient_element_bytes", true);
      o.master_weights = flag(v, "master_weights");
      o.keep_gathered_inputs = flag(v, "keep_gathered_inputs");
      if (v.contains("recompute")) {
        const json& r = v.at("recompute");
        if (r == "none") o.recompute = model::recompute::none;
        else if (r == "selective") o.recompute = model::recompute::selective;
        else if (r == "full") o.recompute = model::recompute::full;
        else bad_request("training.recompute must be \"none\", \"selective\" or \"full\", not " + shown(r));
      }
    });
    return {loss, o};
  }
  static bool flag(const json& v, const char* field, const char* in = "training.") {
    if (!v.contains(field)) return false;
    if (!v.at(field).is_boolean()) bad_request(in + std::string(field) + " must be true or false");
    return v.at(field).get<bool>();
  }
  /// A mesh dim: its index, or its name in "mesh_names" (`what`: the field, for errors).
  std::int64_t mesh_dim(const json& v, const std::string& what) const {
    if (!v.is_string()) return to_int(v, what);
    for (std::size_t m = 0; m < mesh_.names().size(); ++m)
      if (mesh_.names()[m] == v.get_ref<const std::string&>()) return static_cast<std::int64_t>(m);
    bad_request(what + ": no mesh dim is named " + shown(v));
  }

  model::cluster read_cluster(const json& v) const {
    if (v.is_string()) {
      if (const model::system* s = model::system_named(v.get_ref<const std::string&>())) return model::cluster_of(*s, mesh_);
      bad_request("cluster " + shown(v) + " is not in the catalogue: \"a100\", \"h100\", \"h200\", \"b200\", \"mi300x\"");
    }
    check_fields(v, "\"cluster\" (a system's name or an object)",
                 {"links", "peak_flops", "compute_efficiency", "communication_efficiency", "memory_bandwidth",
                  "memory_efficiency", "memory_capacity"});
    model::cluster c;
    const auto number = [](const json& x, const std::string& what) {
      if (!x.is_number()) bad_request(what + " must be a number");
      return x.get<double>();
    };
    if (!v.contains("links") || !v.at("links").is_array() || v.at("links").size() != static_cast<std::size_t>(mesh_.ndim()))
      bad_request("cluster.links must be an array of one link per mesh dim, {\"bandwidth\": bytes/s, \"latency\": s}");
    for (std::size_t m = 0; m < v.at("links").size(); ++m) {
      const json& l = v.at("links")[m];
      const std::string w = index_name("cluster.links", m);
      check_fields(l, w, {"bandwidth", "latency"});
      if (l.contains("bandwidth")) c.links[m].bandwidth = number(l.at("bandwidth"), w + ".bandwidth");
      if (l.contains("latency")) c.links[m].latency = number(l.at("latency"), w + ".latency");
    }
    if (!v.contains("peak_flops")) bad_request("cluster needs \"peak_flops\", a device's peak FLOP/s");
    c.peak_flops = number(v.at("peak_flops"), "cluster.peak_flops");
    if (v.contains("compute_efficiency")) c.compute_efficiency = number(v.at("compute_efficiency"), "cluster.compute_efficiency");
    if (v.contains("communication_efficiency"))
      c.communication_efficiency = number(v.at("communication_efficiency"), "cluster.communication_efficiency");
    if (v.contains("memory_bandwidth")) c.memory_bandwidth = number(v.at("memory_bandwidth"), "cluster.memory_bandwidth");
    if (v.contains("memory_efficiency")) c.memory_efficiency = number(v.at("memory_efficiency"), "cluster.memory_efficiency");
    if (v.contains("memory_capacity")) c.memory_capacity = number(v.at("memory_capacity"), "cluster.memory_capacity");
    return c;
  }

  // ---- the answer ----
  template <class Plan>
  json answer(const Plan& p) {
    const auto r = ctspmd::runtime::propagate(p);
    if (!r->ok()) {
      const auto& op = p.op_at(static_cast<std::size_t>(r->failed_operator()));
      json details = {{"operator", r->failed_operator()},
                      {"name", op.name()},
                      {"rule", op.rule},
                      {"phase", model::to_string(op.phase)}};
      json operands = json::array();
      for (std::size_t k = 0; k < op.inputs.size(); ++k)
        if (r->failure_involves(k)) operands.push_back(k);
      if (!operands.empty()) details["inputs"] = operands;
      throw plan_error(r->error().kind, std::string(model::detail::describe_failure(p, *r).view()), details);
    }
    json out = report_json(p, *r, mesh_, form_);
    if (simulate_) at("simulate", [&] { out["simulation"] = simulation(p, *r); });
    if (request_.contains("training") || request_.contains("cluster") || request_.contains("pipeline")) {
      const auto c = request_.contains("cluster") ? read_cluster(request_.at("cluster")) : model::h100_cluster(mesh_);
      at("cost", [&] { out["cost"] = cost_json(p, ctspmd::runtime::cost(p, *r, c)); });
      if (request_.contains("pipeline")) {
        const auto o = read_pipeline(request_.at("pipeline"));
        at("pipeline", [&] { out["pipeline"] = pipeline_json(ctspmd::runtime::pipeline(p, *r, o, c), c); });
      }
    }
    return out;
  }

  // ---- simulate ----
  /// The most elements a simulated plan holds (each tensor once per run of its block), and the
  /// most devices: the simulator runs every operator on every device in float64, and once more per
  /// reshard (the necessity check).
  static constexpr std::int64_t simulation_elements = 262'144, simulation_devices = 64;

  /// `p` (whose propagation is `r`) run on a simulated mesh with exactly its reshards and compared
  /// with one device (tools/simulate/step_sim.hpp).
  template <class Plan, class Prop>
  json simulation(const Plan& p, const Prop& r) const {
    if (mesh_.size() > simulation_devices)
      bad_request("simulate: the mesh has " + std::to_string(mesh_.size()) + " devices, more than the simulator's " +
                  std::to_string(simulation_devices));
    std::vector<std::int64_t> runs(p.tensor_count(), 1);
    for (std::size_t b = 0; b < p.block_count(); ++b) {
      const auto& bl = p.block_at(b);
      const auto& f = p.block_at(bl.number(b));
      for (auto t = bl.input.index; t < bl.end_tensor; ++t) runs[t] = static_cast<std::int64_t>(bl.count);
      for (auto t = f.saved_begin; t < f.saved_end; ++t) runs[t] = static_cast<std::int64_t>(f.count);
    }
    std::int64_t elements = 0;
    for (std::size_t t = 0; t < p.tensor_count(); ++t) {
      std::int64_t n = runs[t];
      for (auto d : p.tensor_at(t).shape) {
        if (d < 0) bad_request("simulate: tensor " + std::to_string(t) + " has a size unknown until run time");
        n = ctspmd::detail::saturating_product(n, d);
      }
      elements = ctspmd::detail::saturating_sum(elements, n);
    }
    if (elements > simulation_elements)
      bad_request("simulate: the plan holds " + std::to_string(elements) + " elements (each tensor once per run of its "
                  "block), more than the simulator's " + std::to_string(simulation_elements) + ": simulate it at smaller sizes");
    ctspmd_oracle::step::options o;  // a pipeline: its stages and sends, its micro-batches accumulated
    o.load_balanced_context = load_balanced_;
    if (request_.contains("pipeline")) {
      o.pipeline = read_pipeline(request_.at("pipeline"));
      o.micro_batches = o.pipeline->micro_batches;
    }
    if (o.micro_batches < 1) bad_request("simulate: pipeline.micro_batches must be positive");
    if (ctspmd::detail::saturating_product(elements, o.micro_batches) > simulation_elements)
      bad_request("simulate: the plan's " + std::to_string(elements) + " elements times its " +
                  std::to_string(o.micro_batches) + " micro-batches are more than the simulator's " +
                  std::to_string(simulation_elements) + ": simulate it at smaller sizes or with fewer micro-batches");
    const auto res = ctspmd_oracle::step::simulate(p, r, o);
    if (!res.error.empty()) throw spmd_error(error_kind::unimplemented, "simulate: " + res.error);
    json out = {{"matches", res.mismatch.empty()},
                {"max_relative_error", res.max_relative_error},
                {"gradient_error", res.gradient_error},
                {"bytes_match", res.bytes_match},
                {"unnecessary", res.unnecessary},
                {"devices", res.devices},
                {"collectives", res.collectives}};
    if (!res.mismatch.empty()) out["mismatch"] = res.mismatch;
    if (!res.byte_mismatches.empty()) out["byte_mismatches"] = res.byte_mismatches;
    return out;
  }

  // ---- search ----
  model::search_options read_search(const json& v, const model::training_options& training) const {
    model::search_options o;
    o.training = training;
    check_fields(v, "\"search\"", {"memory_limit", "candidates", "keep", "max_states", "max_work", "zero_dim", "try_recompute",
                                   "co_shard", "improve", "improve_budget"});
    const auto count = [&](const char* field, std::size_t& into) {
      if (!v.contains(field)) return;
      const auto n = to_int(v.at(field), std::string("search.") + field);
      if (n < 0) bad_request(std::string("search.") + field + " must not be negative");
      into = static_cast<std::size_t>(n);
    };
    if (v.contains("memory_limit")) o.memory_limit = to_int(v.at("memory_limit"), "search.memory_limit");
    count("candidates", o.candidates);
    count("keep", o.keep);
    count("max_states", o.max_states);
    count("max_work", o.max_work);
    count("improve_budget", o.improve_budget);
    if (v.contains("zero_dim")) o.zero_dim = mesh_dim(v.at("zero_dim"), "search.zero_dim");
    o.try_recompute = flag(v, "try_recompute", "search.");
    o.co_shard = flag(v, "co_shard", "search.");
    o.improve = !v.contains("improve") || flag(v, "improve", "search.");
    return o;
  }
  json searched_json(const model::searched_plan& p) const {
    // Keyed by name; a name two chosen tensors share, by each one's index (as requests refer to them).
    json layouts = json::object();
    for (const auto& l : p.layouts) {
      std::string key(plan_->tensor_at(l.tensor.index).name);
      for (const auto& other : p.layouts)
        if (other.tensor.index != l.tensor.index && plan_->tensor_at(other.tensor.index).name == key)
          key = std::to_string(l.tensor.index);
      layouts[key] = attr_json(l.attr, mesh_, form_);
    }
    constexpr std::string_view recomputes[] = {"none", "selective", "full"};
    return {{"layouts", layouts},
            {"zero_stage", p.training.stage()},
            {"recompute", recomputes[static_cast<std::size_t>(p.training.recompute)]},
            {"step_seconds", p.step_seconds()},
            {"peak_memory", p.cost.memory().peak},
            {"estimate_seconds", p.estimate},
            {"greedy", p.greedy}};
  }
  json search_json(const model::search_result& r) const {
    json plans = json::array();
    for (const auto& p : r.plans) plans.push_back(searched_json(p));
    json out = {{"plans", plans}, {"states", r.states}, {"work", r.work}, {"evaluations", r.evaluations}, {"infeasible", r.infeasible}};
    if (r.greedy_feasible) out["greedy"] = searched_json(r.greedy);
    json moves = json::array();
    for (const auto& m : r.improvements)
      moves.push_back({{"tensor", std::string(plan_->tensor_at(m.tensor.index).name)},
                       {"from", attr_json(m.from, mesh_, form_)},
                       {"to", attr_json(m.to, mesh_, form_)},
                       {"before_seconds", m.before},
                       {"after_seconds", m.after}});
    out["improvements"] = moves;
    return out;
  }

  // ---- pipeline ----
  model::pipeline_options read_pipeline(const json& v) const {
    model::pipeline_options o;
    check_fields(v, "\"pipeline\"",
                 {"mesh_dim", "micro_batches", "schedule", "chunks", "stage_layers", "overlap_grad_reduce",
                  "overlap_param_gather", "overlap_tensor_parallel"});
    if (!v.contains("mesh_dim")) bad_request("\"pipeline\" needs \"mesh_dim\", the mesh dim (or its name) of the stages");
    o.mesh_dim = mesh_dim(v.at("mesh_dim"), "pipeline.mesh_dim");
    if (v.contains("micro_batches")) o.micro_batches = to_int(v.at("micro_batches"), "pipeline.micro_batches");
    if (v.contains("chunks")) o.chunks = to_int(v.at("chunks"), "pipeline.chunks");
    if (v.contains("schedule")) {
      const json& s = v.at("schedule");
      if (s == "gpipe") o.schedule = model::pipeline_schedule::gpipe;
      else if (s == "1f1b") o.schedule = model::pipeline_schedule::one_f_one_b;
      else if (s == "interleaved") o.schedule = model::pipeline_schedule::interleaved;
      else bad_request("pipeline.schedule must be \"gpipe\", \"1f1b\" or \"interleaved\", not " + shown(s));
    }
    for (auto [key, flag] : {std::pair{"overlap_grad_reduce", &model::pipeline_options::overlap_grad_reduce},
                             std::pair{"overlap_param_gather", &model::pipeline_options::overlap_param_gather},
                             std::pair{"overlap_tensor_parallel", &model::pipeline_options::overlap_tensor_parallel}})
      if (v.contains(key)) {
        if (!v.at(key).is_boolean()) bad_request(std::string("pipeline.") + key + " must be true or false");
        o.*flag = v.at(key).get<bool>();
      }
    if (v.contains("stage_layers")) {
      const json& l = v.at("stage_layers");
      if (!l.is_array() || l.size() > model::max_stages)
        bad_request("pipeline.stage_layers must be an array of at most " + std::to_string(model::max_stages) +
                    " layer counts, one per stage");
      for (std::size_t s = 0; s < l.size(); ++s) o.stage_layers[s] = to_int(l[s], index_name("pipeline.stage_layers", s));
    }
    return o;
  }
  static json pipeline_json(const model::pipeline_report& pr, const model::cluster& cluster) {
    json stages = json::array();
    for (std::size_t s = 0; s < pr.stages(); ++s) {
      const auto& t = pr.stage(s);
      json collectives = json::object();
      for (std::size_t k = 0; k < model::collective_count; ++k)
        if (const auto& c = t.collectives[k]; c.count > 0)
          collectives[std::string(model::to_string(static_cast<model::collective>(k)))] = {
              {"count", c.count}, {"bytes", c.bytes}, {"seconds", c.seconds}};
      stages.push_back({{"first_layer", t.first_layer},
                        {"layers", t.layers},
                        {"parameters", t.parameters},
                        {"gradients", t.gradients},
                        {"optimizer_states", t.optimizer_states},
                        {"activations", t.activations},
                        {"in_flight", t.in_flight},
                        {"memory", t.memory},
                        {"flops", t.flops},
                        {"sends", t.sends},
                        {"send_bytes", t.send_bytes},
                        {"compute_seconds", t.compute_seconds},
                        {"communication_seconds", t.communication_seconds},
                        {"send_seconds", t.send_seconds},
                        {"forward_seconds", t.forward_seconds},
                        {"exposed_communication_seconds", t.exposed_communication_seconds},
                        {"reduction_seconds", t.reduction_seconds},
                        {"gather_seconds", t.gather_seconds},
                        {"exposed_reduction_seconds", t.exposed_reduction_seconds},
                        {"exposed_gather_seconds", t.exposed_gather_seconds},
                        {"optimizer_seconds", t.optimizer_seconds},
                        {"tied_gradient_bytes", t.tied_gradient_bytes},
                        {"tied_gradient_seconds", t.tied_gradient_seconds},
                        {"collectives", collectives}});
    }
    return {{"stages", stages},
            {"micro_batches", pr.micro_batches()},
            {"boundary_bytes", pr.boundary_bytes()},
            {"bubble_fraction", pr.bubble_fraction()},
            {"ideal_seconds", pr.ideal_seconds()},
            {"step_seconds", pr.step_seconds()},
            {"mfu", pr.mfu()},
            {"peak_memory", pr.peak_memory()},
            {"peak_stage", pr.peak_stage()},
            {"memory_capacity", cluster.memory_capacity}};
  }

  const json& request_;
  ctspmd::named_mesh mesh_;
  layout_form form_;
  bool simulate_ = false, load_balanced_ = false;
  std::unique_ptr<ctspmd::runtime::plan> plan_;
  std::vector<std::map<std::string, std::optional<tensor_id>, std::less<>>> scopes_;  ///< the plan's names, the block's
  std::deque<ctspmd::runtime::attribute_map> attrs_;                   ///< operators' attributes, which the plan views
};

}  // namespace

ctspmd::runtime::attribute_map operator_attributes(const model::operator_info& o) {
  return ctspmd::runtime::operator_attributes(o);
}

json verify_plan(const json& plan) { return plan_reader(plan).verify(); }

json verify_plan_request(const json& request) {
  check_fields(request, "the request", {"plan", "svg", "simulate"});
  if (request.contains("svg") && !request.at("svg").is_boolean()) bad_request("\"svg\" must be true or false");
  // "simulate": true, or {"load_balanced_context": true} (the sequence in load-balanced order)
  bool simulate = false, balanced = false;
  if (request.contains("simulate")) {
    const auto& v = request.at("simulate");
    if (v.is_object()) {
      check_fields(v, "\"simulate\"", {"load_balanced_context"});
      if (v.contains("load_balanced_context") && !v.at("load_balanced_context").is_boolean())
        bad_request("simulate.load_balanced_context must be true or false");
      simulate = true;
      balanced = v.value("load_balanced_context", false);
    } else if (v.is_boolean()) {
      simulate = v.get<bool>();
    } else {
      bad_request("\"simulate\" must be true, false or an object ({\"load_balanced_context\": true})");
    }
  }
  json answer = plan_reader(request.at("plan"), simulate, balanced).verify();
  if (request.contains("svg") && request.at("svg").get<bool>()) answer["svg"] = svg_report(request.at("plan"), answer);
  return answer;
}

response plan_response(const json& request) {
  try {
    return {dump(request.contains("model") ? model_answer(request) : verify_plan_request(request)), true};
  } catch (const plan_error& e) {
    json error = e.details;
    error["kind"] = ctspmd::to_string(e.kind());
    error["message"] = e.what();
    return {dump(json{{"error", error}}), false};
  }
}

}  // namespace ctspmd_requests
