// libFuzzer target over ctspmd-infer's request handling and the runtime by-name API.
//
// Each input is used four ways:
//  (a) as JSON text: `ctspmd_requests::handle` on the whole input, then on each of its
//      '\n'-separated lines. Every response must be one line of valid JSON, either
//      {"error": {"kind", "message"}} or {"inputs": [...], "outputs": [...]} whose attributes
//      fit the request (one per operand, of the operand's rank, on the request's mesh).
//  (b) as bytes decoded into a runtime call: an operator name (from `runtime::rule_table`,
//      sometimes a random one), a mesh, operand shapes, dims mappings, partial dims and an
//      attribute map (keys and types from the rule's `attributes()`, plus wrong types and
//      random keys). The dist_tensor_specs are built with their public constructors. Only
//      `spmd_error` may escape; a success must satisfy the invariants of `check_info` and
//      be the same when the call is repeated.
//  (c) the call of (b) written as a JSON request for `handle`: it must fail when the
//      direct call fails (with the same error kind) and otherwise give the same attributes.
//  (d) as bytes decoded into a plan request ({"plan": ...}): its answer must be a well-formed
//      error or a consistent plan answer (see check_plan_response); plan requests in (a)'s
//      text are checked the same way.
// Any violation calls abort(), so libFuzzer records it as a crash.

#include "requests.hpp"

#include <ctspmd/interop.hpp>
#include <ctspmd/model/search.hpp>

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using ctspmd_requests::json;
namespace rt = ctspmd::runtime;

/// The runtime call being checked, as a request-like JSON line (printed by `fail`).
std::string current_call;

[[noreturn]] void fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "ctspmd_fuzz_infer: %.*s\n  %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  if (!current_call.empty()) std::fprintf(stderr, "  runtime call: %s\n", current_call.c_str());
  std::abort();
}

// ---------------------------------------------------------------------------------------
// (a) The JSON response checker.

bool is_kind(const json& k) {
  if (!k.is_string()) return false;
  const auto& s = k.get_ref<const std::string&>();
  return s == "invalid_argument" || s == "unimplemented" || s == "precondition_not_met" || s == "not_found" ||
         s == "already_exists";
}

/// One ATTR of a success response: {"dims_mapping": [...], "partial": [...], "partial_reduce": [...]},
/// of `rank` dims (unless -1) on a mesh of `mesh_ndim` dims. The dims mapping is flat, or nested
/// (a list of mesh dims per dim) when some dim has several.
void check_attr_json(const json& a, std::int64_t rank, std::int64_t mesh_ndim, std::string_view line) {
  if (!a.is_object() || a.size() != 3 || !a.contains("dims_mapping") || !a.contains("partial") ||
      !a.contains("partial_reduce"))
    fail("a response attribute is not {dims_mapping, partial, partial_reduce}", line);
  const json& dm = a.at("dims_mapping");
  const json& partial = a.at("partial");
  const json& reduce = a.at("partial_reduce");
  if (!dm.is_array() || !partial.is_array() || !reduce.is_array() || partial.size() != reduce.size())
    fail("a response attribute has malformed lists", line);
  if (rank >= 0 && static_cast<std::int64_t>(dm.size()) != rank) fail("a response dims mapping has the wrong rank", line);
  std::vector<std::int64_t> used;
  const bool nested = !dm.empty() && dm.front().is_array();
  bool co_sharded = false;
  const auto use = [&](const json& e, bool in_list) {
    if (!e.is_number_integer()) fail("a response dims mapping entry is not an integer", line);
    const auto m = e.get<std::int64_t>();
    if (m < (in_list ? 0 : -1) || m >= mesh_ndim) fail("a response dims mapping entry is not a mesh dim", line);
    if (m == -1) return;
    for (auto u : used)
      if (u == m) fail("a response dims mapping uses a mesh dim twice", line);
    used.push_back(m);
  };
  for (const auto& d : dm) {
    if (nested != d.is_array()) fail("a response dims mapping mixes lists and integers", line);
    if (!nested) {
      use(d, false);
      continue;
    }
    co_sharded = co_sharded || d.size() > 1;
    for (const auto& e : d) use(e, true);
  }
  if (nested && !co_sharded) fail("a response dims mapping is nested without a co-shard", line);
  std::int64_t previous = -1;
  for (const auto& p : partial) {
    if (!p.is_number_integer()) fail("a response partial dim is not an integer", line);
    const auto m = p.get<std::int64_t>();
    if (m < 0 || m >= mesh_ndim || m <= previous) fail("response partial dims are not ascending mesh dims", line);
    for (auto u : used)
      if (u == m) fail("a response mesh dim is both sharding and partial", line);
    previous = m;
  }
  for (const auto& r : reduce) {
    ctspmd::reduce_type t{};
    if (!r.is_string() || !rt::parse_reduce_type(r.get<std::string>(), t)) fail("a response reduce type is unknown", line);
  }
}

/// A response ATTR written in a sharding language ({"placements": ...}, {"partition_spec": ...,
/// "partial", "partial_reduce"}, {"sdy": ...}), read back into the dims_mapping form, so that the
/// checks and comparisons below apply to every form. The text must read back on the request's
/// mesh and be canonical (printing what it reads gives it again). `rank` is -1 when unknown (a
/// forward output): then the text's own length gives it.
json to_dims_form(const json& a, const ctspmd::named_mesh& mesh, std::int64_t rank, std::string_view line) {
  static constexpr std::pair<const char*, ctspmd::sharding_language> languages[] = {
      {"placements", ctspmd::sharding_language::placements},
      {"partition_spec", ctspmd::sharding_language::partition_spec},
      {"sdy", ctspmd::sharding_language::sdy}};
  if (!a.is_object()) return a;
  for (const auto& [key, language] : languages) {
    if (!a.contains(key)) continue;
    const json& t = a.at(key);
    if (!t.is_string()) fail("a response layout text is not a string", line);
    const std::string& text = t.get_ref<const std::string&>();
    try {
      std::size_t r = rank >= 0 ? static_cast<std::size_t>(rank) : 0;
      std::string symbol = "mesh";
      if (language == ctspmd::sharding_language::sdy) {
        const auto parsed = ctspmd::try_parse_sdy(text);
        if (!parsed) fail("a response Shardy text does not parse: " + ctspmd::to_string(parsed.error()), line);
        if (rank < 0) r = parsed->dims.size();
        symbol = std::string(parsed->mesh_symbol);
      } else if (language == ctspmd::sharding_language::partition_spec && rank < 0) {
        r = ctspmd::try_parse_partition_spec(text).value().size();
      } else if (rank < 0) {
        const auto placements = ctspmd::try_parse_placements(text).value();  // (not a temporary in the for)
        for (const auto& p : placements)
          if (p.what == ctspmd::dtensor_placement::kind::shard || p.what == ctspmd::dtensor_placement::kind::strided_shard)
            r = std::max(r, static_cast<std::size_t>(p.dim + 1));
      }
      const auto attr = ctspmd::try_from_text(language, mesh, text, r);
      if (!attr) fail("a response layout text does not read back: " + ctspmd::to_string(attr.error()), line);
      ctspmd::tensor_dist_attr full = *attr;
      const std::size_t keys = a.contains("partial") ? 3 : 1;
      if (a.size() != keys || (keys == 3 && !a.contains("partial_reduce")))
        fail("a response attribute in a language has unexpected fields", line);
      if (language == ctspmd::sharding_language::partition_spec && keys != 3)
        fail("a PartitionSpec response attribute lacks its partial lists", line);
      if (keys == 3) {
        const json& partial = a.at("partial");
        const json& reduce = a.at("partial_reduce");
        if (!partial.is_array() || !reduce.is_array() || partial.size() != reduce.size())
          fail("a response attribute has malformed partial lists", line);
        for (std::size_t i = 0; i < partial.size(); ++i) {
          ctspmd::reduce_type type{};
          if (!partial[i].is_number_integer() || !reduce[i].is_string() ||
              !rt::parse_reduce_type(reduce[i].get<std::string>(), type))
            fail("a response attribute has malformed partial lists", line);
          const auto m = partial[i].get<std::int64_t>();
          if (full.is_partial(m)) {  // Shardy: a sum, already said as an unreduced axis
            if (language != ctspmd::sharding_language::sdy || full.partial_reduce_type(m) != type)
              fail("a response's partial lists contradict its text", line);
          } else {
            full.set_partial_status({m}, type);
          }
        }
      }
      if (language != ctspmd::sharding_language::sdy || keys == 1) {
        const auto again = ctspmd::try_to_text(language, mesh, full, ctspmd::partial_policy::omit, symbol);
        if (!again || again->view() != text) fail("a response layout text is not canonical", line);
      }
      return ctspmd_requests::to_json(ctspmd::dist_attrs{full})[0];
    } catch (const ctspmd::spmd_error& e) {
      fail(std::string("a response layout text is inconsistent: ") + e.what(), line);
    }
  }
  return a;
}

/// The named mesh of an accepted request.
ctspmd::named_mesh mesh_of(const json& request) {
  ctspmd::tensor_shape shape;
  for (const auto& s : request.at("mesh")) shape.push_back(s.get<std::int64_t>());
  ctspmd::mesh_names names;
  if (request.contains("mesh_names"))
    for (const auto& n : request.at("mesh_names")) names.push_back(n.get_ref<const std::string&>());
  return ctspmd::named_mesh(shape, names);
}

/// The ranks of the operands `request[key]` (the request was accepted, so they are well formed).
std::vector<std::int64_t> ranks_of(const json& request, const char* key) {
  std::vector<std::int64_t> out;
  for (const auto& o : request.at(key)) out.push_back(static_cast<std::int64_t>(o.at("shape").size()));
  return out;
}

/// Checks `r`, the response to `line`; returns it parsed, its attributes in the dims_mapping
/// form whatever the request's form. `out_ranks`, if given, are the forward outputs' ranks.
json check_response(std::string_view line, const ctspmd_requests::response& r,
                    const std::vector<std::int64_t>* forward_out_ranks = nullptr) {
  if (r.line.find('\n') != std::string::npos) fail("a response spans several lines", r.line);
  json response = json::parse(r.line, nullptr, /*allow_exceptions=*/false);
  if (response.is_discarded() || !response.is_object()) fail("a response is not a JSON object", r.line);
  if (response.contains("error")) {
    const json& e = response.at("error");
    if (r.ok || response.size() != 1 || !e.is_object() || e.size() != 2 || !e.contains("kind") ||
        !e.contains("message") || !is_kind(e.at("kind")) || !e.at("message").is_string())
      fail("a malformed error response", r.line);
    const auto& message = e.at("message").get_ref<const std::string&>();
    if (message.empty()) fail("an error response without a message", r.line);
    // nlohmann's own exceptions mean the handler read a value it had not validated.
    if (message.rfind("[json.exception", 0) == 0) fail("a request reached an unchecked JSON access", r.line);
    return response;
  }
  if (!r.ok || response.size() != 2 || !response.contains("inputs") || !response.contains("outputs") ||
      !response.at("inputs").is_array() || !response.at("outputs").is_array())
    fail("a malformed success response", r.line);

  // The request was accepted, so it is a well-formed request object.
  const json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded() || !request.is_object()) fail("a success response to a request that is not JSON", line);
  const auto mesh_ndim = static_cast<std::int64_t>(request.at("mesh").size());
  const bool backward = request.contains("direction") && request.at("direction") == "backward";
  const auto in_ranks = ranks_of(request, "inputs");
  json& inputs = response.at("inputs");
  json& outputs = response.at("outputs");
  if (inputs.size() != in_ranks.size()) fail("a response has not one attribute per input", r.line);
  const ctspmd::named_mesh named = mesh_of(request);
  for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i] = to_dims_form(inputs[i], named, in_ranks[i], r.line);
  for (std::size_t i = 0; i < inputs.size(); ++i) check_attr_json(inputs[i], in_ranks[i], mesh_ndim, r.line);
  if (!backward && outputs.empty()) fail("a forward success response without outputs", r.line);
  std::vector<std::int64_t> out_ranks;
  if (backward) {
    out_ranks = ranks_of(request, "outputs");
    if (outputs.size() != out_ranks.size()) fail("a backward response has not one attribute per output", r.line);
  } else if (forward_out_ranks != nullptr && forward_out_ranks->size() == outputs.size()) {
    out_ranks = *forward_out_ranks;
  }
  for (std::size_t i = 0; i < outputs.size(); ++i)
    outputs[i] = to_dims_form(outputs[i], named, i < out_ranks.size() ? out_ranks[i] : -1, r.line);
  for (std::size_t i = 0; i < outputs.size(); ++i)
    check_attr_json(outputs[i], i < out_ranks.size() ? out_ranks[i] : -1, mesh_ndim, r.line);
  return response;
}

void check_plan_response(std::string_view line, const ctspmd_requests::response& r, bool replay = true);  // (d)

/// Checks the answer to model request `request`: an error as a plan's; the counts (parameters
/// at least the active ones, none negative); with a mesh, a plan answer to the plan the model
/// built, on the model's mesh with the request's training, pipeline, cluster and search.
void check_model_response(const json& request, const ctspmd_requests::response& r) {
  const json response = json::parse(r.line, nullptr, /*allow_exceptions=*/false);
  if (response.is_discarded() || !response.is_object()) fail("a model answer is not a JSON object", r.line);
  if (response.contains("error")) return check_plan_response(request.dump(), r, /*replay=*/false);
  const json& m = request.at("model");
  if (!r.ok || !response.contains("model") || !response.at("model").is_object()) fail("a model answer without counts", r.line);
  const json& counts = response.at("model");
  const auto count = [&](const char* k) {
    if (!counts.contains(k) || !counts.at(k).is_number_integer()) fail("a model answer's counts lack an integer", r.line);
    return counts.at(k).get<std::int64_t>();
  };
  if (!counts.contains("architecture") || !counts.at("architecture").is_string() || count("active_parameters") < 0 ||
      count("parameters") < count("active_parameters") || count("vocab_padding") < 0)
    fail("a model answer's counts are malformed or out of order", r.line);
  if (!m.contains("mesh")) {
    if (response.size() != 1) fail("a model answer without a mesh has more than its counts", r.line);
    return;
  }
  json plan = {{"mesh", m.at("mesh")}};
  if (m.contains("mesh_names")) plan["mesh_names"] = m.at("mesh_names");
  for (const char* k : {"training", "pipeline", "cluster", "search"})
    if (request.contains(k)) plan[k] = request.at(k);
  json rest = response;
  rest.erase("model");
  check_plan_response(json{{"plan", plan}}.dump(), {rest.dump(), r.ok}, /*replay=*/false);
  // The same request, the same answer.
  if (ctspmd_requests::handle(request.dump()).line != r.line) fail("a model request answered twice differently", r.line);
}

/// Checks the answer to request text `line`, a plan request's as a plan answer.
void check_any_response(std::string_view line, const ctspmd_requests::response& r) {
  const json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (request.is_object() && request.contains("plan"))
    check_plan_response(line, r);
  else if (request.is_object() && request.contains("model"))
    check_model_response(request, r);
  else
    check_response(line, r);
}

void fuzz_json(std::string_view text) {
  check_any_response(text, ctspmd_requests::handle(text));
  if (text.find('\n') == std::string_view::npos) return;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    check_any_response(line, ctspmd_requests::handle(line));
    start = end + 1;
  }
}

// ---------------------------------------------------------------------------------------
// (b) The structured driver of the runtime API.

/// Table entries grouped by rule (the same forward function), so that every rule, not
/// mostly the many elementwise names, is picked often.
const std::vector<std::vector<const rt::rule_entry*>>& rule_groups() {
  static const auto groups = [] {
    std::vector<std::vector<const rt::rule_entry*>> out;
    for (const auto& e : rt::rule_table) {
      bool placed = false;
      for (auto& g : out)
        if (g.front()->forward == e.forward) {
          g.push_back(&e);
          placed = true;
          break;
        }
      if (!placed) out.push_back({&e});
    }
    return out;
  }();
  return groups;
}

constexpr std::int64_t int_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int_min = std::numeric_limits<std::int64_t>::min();

// FuzzedDataProvider gives the lowest value of a range once the data is used up, so the
// common choice is always the lowest one and a rare choice the highest: a short input then
// decodes to a plausible call, not to a pile of edge cases.

/// True once in `n` (never when the data is used up).
bool rare(FuzzedDataProvider& fdp, int n) { return fdp.ConsumeIntegralInRange<int>(0, n - 1) == n - 1; }

/// An element of `table`, most often the first ones.
template <class T, std::size_t N>
T pick(FuzzedDataProvider& fdp, const T (&table)[N]) {
  return table[fdp.ConsumeIntegralInRange<std::size_t>(0, N - 1)];
}

/// An integer that is sometimes extreme.
std::int64_t interesting_int(FuzzedDataProvider& fdp) {
  static constexpr std::int64_t extremes[] = {int_min,     int_min + 1, -int_max / 2, -(std::int64_t{1} << 32),
                                              -65536,      -257,        -100,         -17,
                                              -10,         -9,          127,          128,
                                              255,         256,         65536,        std::int64_t{1} << 31,
                                              std::int64_t{1} << 32,     std::int64_t{1} << 62, int_max / 2,
                                              int_max - 1, int_max};
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
    case 6: return pick(fdp, extremes);
    case 7: return fdp.ConsumeIntegral<std::int64_t>();
    default: return fdp.ConsumeIntegralInRange<std::int64_t>(-4, 12);
  }
}

/// A tensor size: mostly small, sometimes unknown (-1), zero, invalid or huge.
std::int64_t tensor_size(FuzzedDataProvider& fdp) {
  static constexpr std::int64_t sizes[] = {4, 2, 8, 1, 3, 6, 12, 16, 32, 48, 64, -1, 0, 5, 7, 24};
  if (rare(fdp, 16)) return interesting_int(fdp);
  return pick(fdp, sizes);
}

/// An operand as decoded: raw values, validated only by the constructors.
struct raw_operand {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> mapping;
  std::vector<std::vector<std::int64_t>> lists;                  // the mapping, when `nested`
  bool nested = false;                                           // a co-shard mapping: per dim its mesh dims
  bool has_mapping = true;                                       // false: absent in JSON, all -1 directly
  std::vector<std::pair<std::int64_t, ctspmd::reduce_type>> partial;
  bool explicit_reduce = true;                                   // JSON: write "partial_reduce"
  std::optional<std::vector<std::int64_t>> other_mesh;           // on another mesh (not expressible in JSON)
};

struct raw_call {
  std::string op;
  bool forward = true;
  bool phi = false;  // the semantics
  std::vector<std::int64_t> mesh;
  std::vector<raw_operand> inputs, outputs;
  rt::attribute_map attrs;
};

ctspmd::tensor_shape to_shape(const std::vector<std::int64_t>& v) { return ctspmd::tensor_shape(v); }

ctspmd::dist_tensor_spec make_spec(const raw_operand& o, const ctspmd::process_mesh& mesh) {
  const ctspmd::process_mesh own = o.other_mesh ? ctspmd::process_mesh(to_shape(*o.other_mesh)) : mesh;
  ctspmd::tensor_dist_attr attr(own);
  if (o.nested) {
    ctspmd::multi_dims_mapping multi;
    for (const auto& l : o.lists) multi.push_back(ctspmd::mesh_dims(l));
    attr.set_dims_mapping(multi);
  } else {
    attr.set_dims_mapping(o.has_mapping ? ctspmd::dims_mapping(o.mapping) : ctspmd::dims_mapping(o.shape.size(), -1));
  }
  for (const auto& [m, type] : o.partial) attr.set_partial_status({m}, type);
  return {to_shape(o.shape), attr};
}

std::vector<std::int64_t> decode_mesh(FuzzedDataProvider& fdp) {
  static constexpr std::size_t ndims[] = {2, 1, 3, 0, 4};
  const std::size_t ndim = rare(fdp, 32) ? ctspmd::max_mesh_ndim + 1 : pick(fdp, ndims);
  std::vector<std::int64_t> mesh;
  for (std::size_t i = 0; i < ndim; ++i) {
    static constexpr std::int64_t sizes[] = {2, 3, 4, 1, 8};
    mesh.push_back(rare(fdp, 32) ? interesting_int(fdp) : pick(fdp, sizes));
  }
  return mesh;
}

/// A shape, often derived from the previous operand's (so that operands fit together).
std::vector<std::int64_t> decode_shape(FuzzedDataProvider& fdp, const std::vector<std::int64_t>* previous) {
  const int how = previous != nullptr ? fdp.ConsumeIntegralInRange<int>(0, 7) : 0;
  std::vector<std::int64_t> shape;
  switch (how) {
    case 1:
    case 2: shape = *previous; break;  // the same
    case 3:                             // one dim changed
      shape = *previous;
      if (!shape.empty()) shape[fdp.ConsumeIntegralInRange<std::size_t>(0, shape.size() - 1)] = tensor_size(fdp);
      break;
    case 4:  // a suffix (broadcasting)
      shape = *previous;
      if (!shape.empty()) shape.erase(shape.begin(), shape.begin() + fdp.ConsumeIntegralInRange<std::ptrdiff_t>(
                                                                        0, static_cast<std::ptrdiff_t>(shape.size())));
      break;
    case 5:  // matmul's second operand: [k, n] after [m, k]
      if (!previous->empty()) shape = {previous->back(), tensor_size(fdp)};
      break;
    case 6:  // the last dim only (scale, bias)
      if (!previous->empty()) shape = {previous->back()};
      break;
    default: {
      static constexpr std::size_t ranks[] = {2, 3, 1, 0, 4};
      const std::size_t rank =
          rare(fdp, 8) ? fdp.ConsumeIntegralInRange<std::size_t>(0, ctspmd::max_rank + 1) : pick(fdp, ranks);
      for (std::size_t i = 0; i < rank; ++i) shape.push_back(tensor_size(fdp));
    }
  }
  return shape;
}

/// A dims mapping for `shape` (valid unless `raw`), or none; then partial dims, sometimes
/// another mesh. `hint`, when given, is a valid mapping to start from.
void decode_layout(FuzzedDataProvider& fdp, raw_operand& o, std::size_t mesh_ndim, const ctspmd::tensor_dist_attr* hint) {
  const auto ndim = static_cast<std::int64_t>(mesh_ndim);
  const int mode = fdp.ConsumeIntegralInRange<int>(0, 15);
  const bool raw = mode == 14;
  std::vector<bool> used(mesh_ndim, false);
  if (hint != nullptr && mode < 8) {  // the hint, as it is
    o.nested = hint->is_co_sharded();
    for (std::size_t d = 0; d < hint->rank(); ++d) {
      const auto list = hint->mesh_dims_of(d);
      o.lists.emplace_back(list.begin(), list.end());
      o.mapping.push_back(list.empty() ? -1 : list[0]);
      for (auto m : list)
        if (m >= 0 && m < ndim) used[static_cast<std::size_t>(m)] = true;
    }
    if (!o.nested) o.lists.clear();
    for (auto m : hint->partial_dims()) o.partial.emplace_back(m, hint->partial_reduce_type(m));
    if (!fdp.ConsumeBool()) return;  // or with more partial dims below
  } else if (mode == 12 || mode == 13) {  // a co-shard mapping: each dim takes a few free mesh dims
    o.nested = true;
    std::size_t length = o.shape.size();
    if (raw && fdp.ConsumeBool()) length = fdp.ConsumeIntegralInRange<std::size_t>(0, ctspmd::max_rank + 1);
    for (std::size_t i = 0; i < length; ++i) {
      auto& list = o.lists.emplace_back();
      const std::size_t n = mesh_ndim == 0 ? 0 : fdp.ConsumeIntegralInRange<std::size_t>(0, std::min<std::size_t>(mesh_ndim, 3));
      for (std::size_t k = 0; k < n; ++k) {
        std::int64_t m = fdp.ConsumeIntegralInRange<std::int64_t>(0, ndim - 1);
        if (rare(fdp, 32)) m = interesting_int(fdp);  // invalid, sometimes
        else if (used[static_cast<std::size_t>(m)]) continue;
        if (m >= 0 && m < ndim) used[static_cast<std::size_t>(m)] = true;
        list.push_back(m);
      }
    }
  } else if (mode == 15) {
    o.has_mapping = false;
  } else {
    std::size_t length = o.shape.size();
    if (raw && fdp.ConsumeBool()) length = fdp.ConsumeIntegralInRange<std::size_t>(0, ctspmd::max_rank + 1);
    for (std::size_t i = 0; i < length; ++i) {
      std::int64_t m = mesh_ndim == 0 ? -1 : fdp.ConsumeIntegralInRange<std::int64_t>(-1, ndim - 1);
      if (raw) {
        if (rare(fdp, 8)) m = interesting_int(fdp);  // anything goes
      } else if (m >= 0 && used[static_cast<std::size_t>(m)]) {
        m = -1;  // keep the mapping valid
      }
      if (m >= 0 && m < ndim) used[static_cast<std::size_t>(m)] = true;
      o.mapping.push_back(m);
    }
  }
  if (mesh_ndim > 0 && rare(fdp, 4)) {
    o.explicit_reduce = !rare(fdp, 4);
    for (std::size_t m = 0; m < mesh_ndim; ++m) {
      if (!fdp.ConsumeBool() || (used[m] && !raw)) continue;
      bool already = false;
      for (const auto& p : o.partial) already = already || p.first == static_cast<std::int64_t>(m);
      if (already && !raw) continue;
      const auto type = o.explicit_reduce ? static_cast<ctspmd::reduce_type>(fdp.ConsumeIntegralInRange<int>(0, 6))
                                          : ctspmd::reduce_type::sum;
      o.partial.emplace_back(static_cast<std::int64_t>(m), type);
    }
    if (raw && fdp.ConsumeBool()) o.partial.emplace_back(interesting_int(fdp), ctspmd::reduce_type::sum);
  }
  if (!o.explicit_reduce)
    for (const auto& p : o.partial) o.explicit_reduce = o.explicit_reduce || p.second != ctspmd::reduce_type::sum;
  if (rare(fdp, 64)) o.other_mesh = decode_mesh(fdp);
}

raw_operand decode_operand(FuzzedDataProvider& fdp, std::size_t mesh_ndim, const std::vector<std::int64_t>* previous) {
  raw_operand o;
  o.shape = decode_shape(fdp, previous);
  decode_layout(fdp, o, mesh_ndim, nullptr);
  return o;
}

/// An einsum notation for operands of the given ranks: mostly well formed.
std::string decode_notation(FuzzedDataProvider& fdp, const std::vector<raw_operand>& inputs) {
  if (rare(fdp, 8)) return fdp.ConsumeRandomLengthString(24);
  static constexpr char labels[] = "abcdefgh1A";
  std::string s, all;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ',';
    std::string mine;
    for (std::size_t d = 0; d < inputs[i].shape.size(); ++d) {
      char c = labels[fdp.ConsumeIntegralInRange<std::size_t>(0, sizeof labels - 2)];
      if (c != '1' && mine.find(c) != std::string::npos) c = '1';
      mine += c;
    }
    s += mine;
    all += mine;
  }
  std::string out;
  for (char c : all)
    if (c != '1' && out.find(c) == std::string::npos && !fdp.ConsumeBool()) out += c;  // kept unless told otherwise
  if (rare(fdp, 8)) out.insert(out.begin(), '1');
  s += "->" + out;
  if (rare(fdp, 16) && !s.empty())  // one character replaced
    s[fdp.ConsumeIntegralInRange<std::size_t>(0, s.size() - 1)] = fdp.ConsumeIntegral<char>();
  return s;
}

std::vector<std::int64_t> decode_int_list(FuzzedDataProvider& fdp, std::string_view name, const raw_call& call) {
  const std::size_t rank = call.inputs.empty() ? 0 : call.inputs[0].shape.size();
  std::vector<std::int64_t> list;
  const int how = fdp.ConsumeIntegralInRange<int>(0, 7);
  if (name == "perm" && how < 5) {  // a permutation of input 0's dims, sometimes damaged
    for (std::size_t i = 0; i < rank; ++i) list.push_back(static_cast<std::int64_t>(i));
    for (std::size_t i = list.size(); i > 1; --i) std::swap(list[i - 1], list[fdp.ConsumeIntegralInRange<std::size_t>(0, i - 1)]);
    if (how == 4 && !list.empty()) list[fdp.ConsumeIntegralInRange<std::size_t>(0, list.size() - 1)] = interesting_int(fdp);
    return list;
  }
  if (name == "shape" && how < 5 && !call.inputs.empty()) {  // a reshape target from x's sizes
    for (auto s : call.inputs[0].shape) {
      switch (fdp.ConsumeIntegralInRange<int>(0, 5)) {
        case 1: list.push_back(0); break;
        case 2: list.push_back(-1); break;
        case 3:
          if (!list.empty() && list.back() > 0 && s > 0 && list.back() <= int_max / s) list.back() *= s;  // merged
          else list.push_back(s);
          break;
        case 4:  // split into two
          if (s > 1 && s % 2 == 0) {
            list.push_back(2);
            list.push_back(s / 2);
          } else {
            list.push_back(s);
          }
          break;
        default: list.push_back(s);
      }
    }
    return list;
  }
  if (name == "sections" && how < 3 && !call.inputs.empty() && rank > 0) {  // parts of a size of x
    const std::int64_t size = call.inputs[0].shape[fdp.ConsumeIntegralInRange<std::size_t>(0, rank - 1)];
    std::int64_t left = size;
    const std::size_t parts = fdp.ConsumeIntegralInRange<std::size_t>(1, 4);
    for (std::size_t i = 0; i + 1 < parts && left > 0; ++i) {
      const std::int64_t s = fdp.ConsumeIntegralInRange<std::int64_t>(0, left);
      list.push_back(s);
      left -= s;
    }
    list.push_back(how == 1 ? -1 : left);
    return list;
  }
  static constexpr std::size_t lengths[] = {1, 2, 0, 3, 4};
  const std::size_t length = how == 7 ? fdp.ConsumeIntegralInRange<std::size_t>(0, 20) : pick(fdp, lengths);
  const auto r = static_cast<std::int64_t>(rank);
  for (std::size_t i = 0; i < length; ++i)
    list.push_back(rare(fdp, 2) ? interesting_int(fdp) : fdp.ConsumeIntegralInRange<std::int64_t>(-r - 1, r + 4));
  return list;
}

/// A value of the variant alternative `type` (an attribute's index).
rt::attribute decode_value(FuzzedDataProvider& fdp, std::size_t type, std::string_view name, const raw_call& call) {
  switch (type) {
    case 0: return fdp.ConsumeBool();
    case 1: {
      if (name == "num" && !rare(fdp, 4)) return fdp.ConsumeIntegralInRange<std::int64_t>(1, 4);
      if (name.find("axis") != std::string_view::npos && !rare(fdp, 4) && !call.inputs.empty()) {
        const auto r = static_cast<std::int64_t>(call.inputs[0].shape.size());
        return fdp.ConsumeIntegralInRange<std::int64_t>(-r - 1, r);
      }
      return interesting_int(fdp);
    }
    case 2: {
      static constexpr double values[] = {1e-5, 0.0, -1.0, 0.5, 1e300, -0.0, 3.0};
      switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
        case 5: return std::numeric_limits<double>::quiet_NaN();
        case 6: return std::numeric_limits<double>::infinity();
        case 7: return fdp.ConsumeFloatingPoint<double>();
        default: return pick(fdp, values);
      }
    }
    case 3: {
      if (name == "notation") return decode_notation(fdp, call.inputs);
      if (name == "reduce" && !rare(fdp, 8))
        return std::string(ctspmd::to_string(static_cast<ctspmd::reduce_type>(fdp.ConsumeIntegralInRange<int>(0, 6))));
      return fdp.ConsumeRandomLengthString(12);
    }
    default: return decode_int_list(fdp, name, call);
  }
}

void decode_attrs(FuzzedDataProvider& fdp, const rt::rule_entry* entry, raw_call& call) {
  const auto described = entry != nullptr ? entry->attributes() : std::vector<rt::attribute_info>{};
  const std::size_t count = fdp.ConsumeIntegralInRange<std::size_t>(0, described.empty() ? 1 : described.size() + 1);
  for (std::size_t i = 0; i < count; ++i) {
    const int how = fdp.ConsumeIntegralInRange<int>(0, 15);
    std::string key;
    std::size_t type = 0;
    if (how < 13 && !described.empty()) {
      const auto& a = described[fdp.ConsumeIntegralInRange<std::size_t>(0, described.size() - 1)];
      key = std::string(a.name);
      type = how < 12 ? a.default_value.index() : fdp.ConsumeIntegralInRange<std::size_t>(0, 4);  // the right type, or any
    } else {
      key = how == 13 && !described.empty() ? std::string(described.front().name) + "_" : fdp.ConsumeRandomLengthString(10);
      type = fdp.ConsumeIntegralInRange<std::size_t>(0, 4);
    }
    call.attrs[key] = decode_value(fdp, type, key, call);
  }
}

/// How many inputs and outputs the rule of `op` takes: from its declared operand counts (a few
/// more than the least for a variadic side).
std::pair<std::size_t, std::size_t> usual_counts(FuzzedDataProvider& fdp, std::string_view op) {
  const auto* e = rt::find_rule(op);
  if (e == nullptr) return {1, 1};
  const auto usual = [&](ctspmd::operand_count c) {
    const std::size_t least = std::max<std::size_t>(c.min, 1);
    return fdp.ConsumeIntegralInRange<std::size_t>(least, std::min<std::size_t>(c.max, least + 2));
  };
  return {usual(e->inputs), usual(e->outputs)};
}

/// The number of operands: usually `usual`.
std::size_t decode_count(FuzzedDataProvider& fdp, std::size_t usual) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 15)) {
    case 13:
    case 14: return fdp.ConsumeIntegralInRange<std::size_t>(0, 3);
    case 15: return fdp.ConsumeIntegralInRange<std::size_t>(0, ctspmd::max_operands + 1);
    default: return usual;
  }
}

/// Backward outputs: mostly what forward infers from the inputs (its outputs' ranks and
/// mappings, with unknown (-1) or input-like sizes), else decoded like the inputs.
void decode_outputs(FuzzedDataProvider& fdp, raw_call& call, std::size_t usual) {
  const std::size_t mesh_ndim = call.mesh.size();
  std::optional<ctspmd::spmd_info> forward;
  if (!rare(fdp, 4)) {
    try {
      const ctspmd::process_mesh mesh(to_shape(call.mesh));
      std::vector<ctspmd::dist_tensor_spec> in;
      for (const auto& o : call.inputs) in.push_back(make_spec(o, mesh));
      forward = rt::infer_forward(call.op, in, call.attrs, call.phi ? ctspmd::semantics::phi : ctspmd::semantics::fluid);
    } catch (const ctspmd::spmd_error&) {
    }
  }
  if (forward) {
    const std::size_t n_out = rare(fdp, 16) ? decode_count(fdp, forward->outputs.size()) : forward->outputs.size();
    for (std::size_t i = 0; i < n_out; ++i) {
      const ctspmd::tensor_dist_attr* hint = i < forward->outputs.size() ? &forward->outputs[i] : nullptr;
      raw_operand o;
      const std::size_t rank = hint != nullptr ? hint->rank() : 1;
      const auto& x = call.inputs.empty() ? std::vector<std::int64_t>{} : call.inputs.front().shape;
      switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
        case 0: o.shape.assign(rank, -1); break;  // sizes unknown: accepted by every size check
        case 1:                                     // input 0's sizes where it has the dim
          for (std::size_t d = 0; d < rank; ++d) o.shape.push_back(d < x.size() ? x[d] : tensor_size(fdp));
          break;
        case 2:  // input 0's trailing sizes (what a reduction or a matmul keeps, often)
          for (std::size_t d = 0; d < rank; ++d) o.shape.push_back(d + x.size() >= rank ? x[d + x.size() - rank] : tensor_size(fdp));
          break;
        default:
          for (std::size_t d = 0; d < rank; ++d) o.shape.push_back(tensor_size(fdp));
      }
      decode_layout(fdp, o, mesh_ndim, hint);
      call.outputs.push_back(std::move(o));
    }
    return;
  }
  const std::size_t n_out = decode_count(fdp, usual);
  for (std::size_t i = 0; i < n_out; ++i) {
    const std::vector<std::int64_t>* previous =
        i ? &call.outputs.back().shape : !call.inputs.empty() ? &call.inputs.front().shape : nullptr;
    call.outputs.push_back(decode_operand(fdp, mesh_ndim, previous));
  }
}

/// An operator for `call`: a rule of the table (returned), or rarely a random name (null).
const rt::rule_entry* decode_op(FuzzedDataProvider& fdp, raw_call& call) {
  const rt::rule_entry* entry = nullptr;
  switch (fdp.ConsumeIntegralInRange<int>(0, 15)) {
    case 15: call.op = fdp.ConsumeRandomLengthString(16); break;
    case 14: entry = &rt::rule_table[fdp.ConsumeIntegralInRange<std::size_t>(0, rt::rule_table.size() - 1)]; break;
    default: {
      const auto& groups = rule_groups();
      const auto& g = groups[fdp.ConsumeIntegralInRange<std::size_t>(0, groups.size() - 1)];
      entry = g[fdp.ConsumeIntegralInRange<std::size_t>(0, g.size() - 1)];
    }
  }
  if (entry != nullptr) call.op = std::string(entry->name);
  return entry;
}

raw_call decode_call(FuzzedDataProvider& fdp) {
  raw_call call;
  const rt::rule_entry* entry = decode_op(fdp, call);
  call.forward = !fdp.ConsumeBool();
  call.phi = fdp.ConsumeBool();
  call.mesh = decode_mesh(fdp);
  const auto [usual_in, usual_out] = usual_counts(fdp, call.op);
  const std::size_t n_in = decode_count(fdp, usual_in);
  for (std::size_t i = 0; i < n_in; ++i)
    call.inputs.push_back(decode_operand(fdp, call.mesh.size(), i ? &call.inputs.back().shape : nullptr));
  decode_attrs(fdp, entry, call);
  if (!call.forward) decode_outputs(fdp, call, usual_out);
  return call;
}

/// Invariants of a successful call's result.
void check_info(const ctspmd::spmd_info& info, const ctspmd::process_mesh& mesh, std::span<const ctspmd::dist_tensor_spec> in,
                std::span<const ctspmd::dist_tensor_spec> out, bool forward) {
  auto check_attr = [&](const ctspmd::tensor_dist_attr& a, std::int64_t rank) {
    if (!(a.process_mesh() == mesh)) fail("a result attribute is on another mesh", "");
    if (rank >= 0 && static_cast<std::int64_t>(a.rank()) != rank) fail("a result dims mapping has the wrong rank", "");
    if (!ctspmd::tensor_dist_attr::check(mesh, a.multi_dims_mapping())) fail("a result dims mapping is invalid", "");
    for (auto m : a.partial_dims()) {
      if (m < 0 || m >= mesh.ndim()) fail("a result partial dim is not a mesh dim", "");
      if (a.sharded_tensor_dim(m) != -1) fail("a result mesh dim is both sharding and partial", "");
      (void)a.partial_reduce_type(m);
    }
  };
  if (info.inputs.size() != in.size()) fail("a result has not one attribute per input", "");
  for (std::size_t i = 0; i < in.size(); ++i) check_attr(info.inputs[i], in[i].ndim());
  if (forward && info.outputs.empty()) fail("a forward result without outputs", "");
  if (!forward && info.outputs.size() != out.size()) fail("a backward result has not one attribute per output", "");
  for (std::size_t i = 0; i < info.outputs.size(); ++i) check_attr(info.outputs[i], forward ? -1 : out[i].ndim());
}

struct direct_outcome {
  std::optional<ctspmd::spmd_info> info;
  ctspmd::error_kind kind{};
  std::string message;
  bool from_rule = false;  // the error came from the call, not from building its operands
};

json operand_json(const raw_operand& o) {
  json j = {{"shape", o.shape}};
  if (o.nested)
    j["dims_mapping"] = o.lists;
  else if (o.has_mapping)
    j["dims_mapping"] = o.mapping;
  if (!o.partial.empty()) {
    json dims = json::array(), reduce = json::array();
    for (const auto& [m, type] : o.partial) {
      dims.push_back(m);
      reduce.push_back(ctspmd::to_string(type));
    }
    j["partial"] = dims;
    if (o.explicit_reduce) j["partial_reduce"] = reduce;
  }
  if (o.other_mesh) j["other_mesh"] = *o.other_mesh;  // not a request field: the operand's own mesh
  return j;
}

/// The call as a request-like JSON object (exact except for non-finite floats).
json describe(const raw_call& call) {
  json j = {{"op", call.op},
            {"direction", call.forward ? "forward" : "backward"},
            {"semantics", call.phi ? "phi" : "fluid"},
            {"mesh", call.mesh}};
  j["inputs"] = json::array();
  for (const auto& o : call.inputs) j["inputs"].push_back(operand_json(o));
  if (!call.forward) {
    j["outputs"] = json::array();
    for (const auto& o : call.outputs) j["outputs"].push_back(operand_json(o));
  }
  j["attrs"] = json::object();
  for (const auto& entry : call.attrs) std::visit([&](const auto& v) { j["attrs"][entry.first] = v; }, entry.second);
  return j;
}

direct_outcome call_direct(const raw_call& call) {
  current_call = ctspmd_requests::dump(describe(call));
  direct_outcome r;
  try {
    const ctspmd::process_mesh mesh(to_shape(call.mesh));
    std::vector<ctspmd::dist_tensor_spec> in, out;
    for (const auto& o : call.inputs) in.push_back(make_spec(o, mesh));
    for (const auto& o : call.outputs) out.push_back(make_spec(o, mesh));
    const auto semantics = call.phi ? ctspmd::semantics::phi : ctspmd::semantics::fluid;
    auto run = [&] {
      return call.forward ? rt::infer_forward(call.op, in, call.attrs, semantics)
                          : rt::infer_backward(call.op, in, out, call.attrs, semantics);
    };
    r.from_rule = true;
    r.info = run();
    // A rule checks that all operands share the first one's mesh, and answers on it.
    const auto& first = !in.empty() ? in.front().process_mesh() : !out.empty() ? out.front().process_mesh() : mesh;
    check_info(*r.info, first, in, out, call.forward);
    if (!(run() == *r.info)) fail("a repeated call gives another result", call.op);
  } catch (const ctspmd::spmd_error& e) {
    r.info.reset();
    r.kind = e.kind();
    r.message = e.what();
    if (r.message.empty()) fail("an spmd_error without a message", call.op);
  } catch (const std::exception& e) {
    fail("an exception other than spmd_error escaped the runtime API", e.what());
  } catch (...) {
    fail("a non-std exception escaped the runtime API", call.op);
  }
  return r;
}

// ---------------------------------------------------------------------------------------
// (c) The same call through the JSON tool.

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

/// Mesh dim names for the requests in a named language.
constexpr const char* fuzz_names[] = {"dp", "mp", "sp", "pp", "x", "y", "z", "w", "v", "u", "t", "s", "r", "q", "o", "n"};

/// An operand written in `language` (its layout valid, else an spmd_error): the text, with
/// "partial" lists beside it for what the language cannot say.
json language_operand(const raw_operand& o, const ctspmd::named_mesh& mesh, ctspmd::sharding_language language,
                      std::string_view symbol) {
  const auto spec = make_spec(o, mesh);
  const auto& attr = spec.dist_attr();
  json j = {{"shape", o.shape}};
  j[std::string(ctspmd::to_string(language))] =
      std::string(ctspmd::to_text(language, mesh, attr, ctspmd::partial_policy::omit, symbol).view());
  if (language == ctspmd::sharding_language::placements) return j;
  json dims = json::array(), reduce = json::array();
  for (auto m : attr.partial_dims()) {
    const auto type = attr.partial_reduce_type(m);
    if (language == ctspmd::sharding_language::sdy && type == ctspmd::reduce_type::sum) continue;  // unreduced
    dims.push_back(m);
    reduce.push_back(ctspmd::to_string(type));
  }
  if (!dims.empty()) {
    j["partial"] = dims;
    j["partial_reduce"] = reduce;
  }
  // Only exact forms: DTensor placements forget where a size-1 mesh dim stands in a co-shard.
  auto back = ctspmd::from_text(language, mesh, j[std::string(ctspmd::to_string(language))].get<std::string>(), attr.rank());
  for (std::size_t i = 0; i < dims.size(); ++i)
    back.set_partial_status({dims[i].get<std::int64_t>()}, attr.partial_reduce_type(dims[i].get<std::int64_t>()));
  if (!(back == attr)) throw ctspmd::spmd_error(ctspmd::error_kind::invalid_argument, "not exact in this language");
  return j;
}

/// The call as a request line, or nothing when JSON cannot express it exactly. Sometimes the
/// operands are written in a sharding language (`mutated` is set when a text was then damaged
/// on purpose: the answer need not match the direct call's).
std::optional<std::string> to_request(const raw_call& call, FuzzedDataProvider& fdp, bool& mutated) {
  if (!is_ascii(call.op)) return std::nullopt;
  json request = json::object();
  request["op"] = call.op;
  if (!call.forward || fdp.ConsumeBool()) request["direction"] = call.forward ? "forward" : "backward";
  if (call.phi || fdp.ConsumeBool()) request["semantics"] = call.phi ? "phi" : "fluid";
  request["mesh"] = call.mesh;
  auto operands = [&](const std::vector<raw_operand>& list) -> std::optional<json> {
    json out = json::array();
    for (const auto& o : list) {
      if (o.other_mesh) return std::nullopt;
      out.push_back(operand_json(o));
    }
    return out;
  };
  const auto inputs = operands(call.inputs);
  if (!inputs) return std::nullopt;
  request["inputs"] = *inputs;
  if (!call.forward) {
    const auto outputs = operands(call.outputs);
    if (!outputs) return std::nullopt;
    request["outputs"] = *outputs;
  }
  // The same operands in a sharding language, when their layouts are valid.
  const int form = fdp.ConsumeIntegralInRange<int>(0, 5);
  if (form >= 3 && call.mesh.size() <= ctspmd::max_mesh_ndim) {
    const auto language = static_cast<ctspmd::sharding_language>(form - 3);
    static constexpr const char* symbols[] = {"mesh", "m", "mesh_xyz"};
    const std::string symbol = pick(fdp, symbols);
    try {
      ctspmd::mesh_names names;
      json names_json = json::array();
      for (std::size_t m = 0; m < call.mesh.size(); ++m) {
        names.push_back(fuzz_names[m]);
        names_json.push_back(fuzz_names[m]);
      }
      const ctspmd::named_mesh mesh(to_shape(call.mesh), names);
      json in = json::array(), out = json::array();
      for (const auto& o : call.inputs) in.push_back(language_operand(o, mesh, language, symbol));
      if (!call.forward)
        for (const auto& o : call.outputs) out.push_back(language_operand(o, mesh, language, symbol));
      request["inputs"] = in;
      if (!call.forward) request["outputs"] = out;
      if (language != ctspmd::sharding_language::placements || fdp.ConsumeBool()) request["mesh_names"] = names_json;
      if (rare(fdp, 8)) {  // damage one text: the tool must answer with a clean error or a valid answer
        json& list = !call.forward && !out.empty() && fdp.ConsumeBool() ? request["outputs"] : request["inputs"];
        if (!list.empty()) {
          json& o = list[fdp.ConsumeIntegralInRange<std::size_t>(0, list.size() - 1)];
          std::string text = o.at(std::string(ctspmd::to_string(language))).get<std::string>();
          if (!text.empty()) {
            const std::size_t at = fdp.ConsumeIntegralInRange<std::size_t>(0, text.size() - 1);
            switch (fdp.ConsumeIntegralInRange<int>(0, 2)) {
              case 0: text.resize(at); break;
              case 1: text[at] = static_cast<char>(fdp.ConsumeIntegralInRange<int>(0x20, 0x7e)); break;
              default: text.insert(at, fdp.ConsumeRandomLengthString(6)); break;
            }
            if (!is_ascii(text)) text = "[";
            o[std::string(ctspmd::to_string(language))] = text;
            mutated = true;
          }
        }
      }
    } catch (const ctspmd::spmd_error&) {
      // a layout the language cannot hold (invalid): the request stays in dims_mapping form
      request["inputs"] = *inputs;
      if (!call.forward) request["outputs"] = *operands(call.outputs);
      request.erase("mesh_names");
    }
  }
  if (!call.attrs.empty() || fdp.ConsumeBool()) {
    json attrs = json::object();
    for (const auto& entry : call.attrs) {
      const std::string& key = entry.first;  // (Clang 14's lambdas cannot capture structured bindings)
      if (!is_ascii(key)) return std::nullopt;
      const bool ok = std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, double>) {
              if (!std::isfinite(v)) return false;  // JSON has no NaN or infinity
            } else if constexpr (std::is_same_v<T, std::string>) {
              if (!is_ascii(v)) return false;  // the tool replaces bytes that are not UTF-8
            }
            attrs[key] = v;
            return true;
          },
          entry.second);
      if (!ok) return std::nullopt;
    }
    request["attrs"] = attrs;
  }
  return request.dump();
}

/// The language a request writes its layouts in, if any.
std::optional<ctspmd::sharding_language> language_of(const json& request) {
  for (const char* key : {"inputs", "outputs"}) {
    if (!request.contains(key)) continue;
    for (const auto& o : request.at(key)) {
      if (o.contains("placements")) return ctspmd::sharding_language::placements;
      if (o.contains("partition_spec")) return ctspmd::sharding_language::partition_spec;
      if (o.contains("sdy")) return ctspmd::sharding_language::sdy;
    }
  }
  return std::nullopt;
}

/// `attrs` as `language` says them: a text cannot place a size-1 mesh dim within a co-shard
/// list (where it changes nothing), so it reads back at its earliest place; partial status is
/// kept as is (the response carries it beside the text where the language cannot say it).
ctspmd::dist_attrs as_said_in(ctspmd::sharding_language language, const ctspmd::named_mesh& mesh,
                              const ctspmd::dist_attrs& attrs) {
  ctspmd::dist_attrs out;
  for (const auto& a : attrs) {
    const auto text = ctspmd::try_to_text(language, mesh, a, ctspmd::partial_policy::omit, "mesh");
    if (!text) fail("a layout the runtime API gives has no text: " + ctspmd::to_string(text.error()), current_call);
    auto back = ctspmd::try_from_text(language, mesh, text->view(), a.rank());
    if (!back) fail("a printed layout does not read back: " + ctspmd::to_string(back.error()), current_call);
    ctspmd::tensor_dist_attr said = *back;
    said.clean_partial_status();
    for (const auto m : a.partial_dims()) said.set_partial_status({m}, a.partial_reduce_type(m));
    out.push_back(said);
  }
  return out;
}

void compare_with_tool(const raw_call& call, const direct_outcome& direct, FuzzedDataProvider& fdp) {
  bool mutated = false;
  const auto line = to_request(call, fdp, mutated);
  if (!line) return;
  const auto r = ctspmd_requests::handle(*line);
  std::vector<std::int64_t> out_ranks;
  if (direct.info && call.forward)
    for (const auto& a : direct.info->outputs) out_ranks.push_back(static_cast<std::int64_t>(a.rank()));
  const json response = check_response(*line, r, direct.info && call.forward ? &out_ranks : nullptr);
  if (mutated) return;
  if (!direct.info) {
    if (r.ok) fail("the tool accepts a call the runtime API rejects: " + direct.message, *line);
    // The tool checks the operand counts first, before the operator's name.
    if (call.inputs.size() > ctspmd::max_operands || call.outputs.size() > ctspmd::max_operands) return;
    if (response.at("error").at("kind") != ctspmd::to_string(direct.kind))
      fail("the tool and the runtime API report different error kinds: " + direct.message + " / " + r.line, *line);
    // The tool passes the call's message on, prefixed with the operand's name where one is at
    // fault. (Reading the operands, it has messages of its own, for capacities for instance.)
    const auto& message = response.at("error").at("message").get_ref<const std::string&>();
    if (direct.from_rule && message != direct.message && !message.ends_with(": " + direct.message))
      fail("the tool and the runtime API report different messages: " + direct.message + " / " + r.line, *line);
    return;
  }
  if (!r.ok) fail("the tool rejects a call the runtime API accepts", *line + "\n  " + r.line);
  const json request = json::parse(*line);
  const auto language = language_of(request);
  const auto said = [&](const ctspmd::dist_attrs& attrs) {
    return language ? as_said_in(*language, mesh_of(request), attrs) : attrs;
  };
  const json expected = {{"inputs", ctspmd_requests::to_json(said(direct.info->inputs))},
                         {"outputs", ctspmd_requests::to_json(said(direct.info->outputs))}};
  if (response != expected) fail("the tool and the runtime API give different results", *line + "\n  " + r.line);
}

// ---------------------------------------------------------------------------------------
// (d) Plan requests: {"plan": {...}} decoded from the bytes, and their answers checked.

/// True if `svg` is well formed as far as the picture's writer goes: tags balanced, attribute
/// values and text free of '<', every '&' an entity.
bool well_formed_svg(std::string_view svg) {
  if (!svg.starts_with("<svg ") || !svg.ends_with("</svg>\n")) return false;
  std::vector<std::string_view> open;
  const auto entity_ok = [&](std::size_t at) {
    for (std::string_view e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      if (svg.substr(at, e.size()) == e) return true;
    return false;
  };
  for (std::size_t i = 0; i < svg.size();) {
    if (svg[i] == '&' && !entity_ok(i)) return false;
    if (svg[i] != '<') {
      ++i;
      continue;
    }
    const std::size_t end = svg.find('>', i);
    if (end == std::string_view::npos) return false;
    std::string_view tag = svg.substr(i + 1, end - i - 1);
    for (std::size_t k = 0; k < tag.size(); ++k)
      if (tag[k] == '<' || (tag[k] == '&' && !entity_ok(i + 1 + k))) return false;
    i = end + 1;
    if (tag.starts_with('/')) {
      if (open.empty() || open.back() != tag.substr(1)) return false;
      open.pop_back();
    } else if (!tag.ends_with('/')) {
      open.push_back(tag.substr(0, std::min(tag.find(' '), tag.size())));
    }
  }
  return open.empty();
}

constexpr auto sat_sum = ctspmd::detail::saturating_sum;  // the library's sums of sizes saturate

/// Checks `r`, the answer to plan request `line` (a JSON object with "plan").
/// `replay`: handle `line` again and compare (false where `line` stands for another request).
void check_plan_response(std::string_view line, const ctspmd_requests::response& r, bool replay) {
  if (r.line.find('\n') != std::string::npos) fail("a plan answer spans several lines", r.line);
  const json response = json::parse(r.line, nullptr, /*allow_exceptions=*/false);
  if (response.is_discarded() || !response.is_object()) fail("a plan answer is not a JSON object", r.line);
  if (response.contains("error")) {
    const json& e = response.at("error");
    if (r.ok || response.size() != 1 || !e.is_object() || !e.contains("kind") || !is_kind(e.at("kind")) ||
        !e.contains("message") || !e.at("message").is_string() || e.at("message").get_ref<const std::string&>().empty())
      fail("a malformed plan error", r.line);
    if (e.at("message").get_ref<const std::string&>().rfind("[json.exception", 0) == 0)
      fail("a plan request reached an unchecked JSON access", r.line);
    for (const auto& [key, value] : e.items()) {
      const bool ok = key == "kind" || key == "message" || ((key == "at" || key == "name" || key == "rule" ||
                                                              key == "operand" || key == "phase") && value.is_string()) ||
                      (key == "operator" && value.is_number_integer() && value.get<std::int64_t>() >= 0) ||
                      (key == "inputs" && value.is_array());
      if (!ok) fail("a plan error has an unknown or mistyped field", r.line);
    }
    // An operator is named once its "op" is read.
    if (e.contains("operator") && !e.contains("name") &&
        e.at("message").get_ref<const std::string&>().find("needs \"op\"") == std::string::npos)
      fail("a plan error names an operator's index, not its name", r.line);
    return;
  }
  if (!r.ok || !response.contains("tensors") || !response.contains("reshards") || !response.contains("totals"))
    fail("a malformed plan answer", r.line);
  const json request = json::parse(line);
  const json& plan = request.at("plan");
  const ctspmd::named_mesh named = mesh_of(plan);
  const auto ndim = static_cast<std::int64_t>(plan.at("mesh").size());
  for (const auto& t : response.at("tensors")) {
    if (!t.is_object() || !t.contains("name") || !t.at("name").is_string()) fail("a plan answer's tensor has no name", r.line);
    json a = t;
    for (const char* k : {"name", "role", "of", "parameter"}) a.erase(k);
    if (!a.empty()) check_attr_json(to_dims_form(a, named, -1, r.line), -1, ndim, r.line);
  }
  // The totals are the reshards' sums.
  json totals = json::object();
  for (const auto& e : response.at("reshards")) {
    const auto m = e.at("mesh_dim").get<std::int64_t>();
    const auto bytes = e.at("bytes").get<std::int64_t>(), times = e.at("times").get<std::int64_t>();
    if (m < 0 || m >= ndim || bytes < -1 || times < 1) fail("a plan answer's reshard has a bad mesh dim, size or count", r.line);
    check_attr_json(to_dims_form(e.at("from"), named, -1, r.line), -1, ndim, r.line);
    check_attr_json(to_dims_form(e.at("to"), named, -1, r.line), -1, ndim, r.line);
    auto& t = totals[e.at("phase").get<std::string>()][e.at("collective").get<std::string>()];
    if (t.is_null()) t = {{"count", 0}, {"bytes", 0}};
    const auto before = t["bytes"].get<std::int64_t>();
    t["count"] = t["count"].get<std::int64_t>() + times;
    t["bytes"] = before < 0 || bytes < 0 ? -1 : sat_sum(before, ctspmd::detail::saturating_product(bytes, times));
  }
  if (totals != response.at("totals")) fail("a plan answer's totals are not its reshards' sums", r.line);
  if (response.contains("cost")) {
    const json& c = response.at("cost");
    const json& m = c.at("memory");
    const auto get = [](const json& v, const char* k) { return v.at(k).get<std::int64_t>(); };
    const std::int64_t persistent = sat_sum(sat_sum(get(m, "parameters"), get(m, "gradients")), get(m, "optimizer_states"));
    if (get(m, "parameters") < 0 || get(m, "gradients") < 0 || get(m, "optimizer_states") < 0 ||
        get(m, "activations") < 0 || get(m, "peak") < persistent)
      fail("a plan answer's memory is negative, or its peak below the persistent memory", r.line);
    const json& f = c.at("flops");
    // hardware: what the kernels compute; model: forward and backward as utilisation figures count
    // them (a causal attention whole, which the kernel halves), so at least forward + backward
    const std::int64_t passes = sat_sum(get(f, "forward"), get(f, "backward"));
    if (get(f, "hardware") != sat_sum(sat_sum(passes, get(f, "recompute")), get(f, "optimizer")) ||
        get(f, "model") < passes || get(f, "model") > sat_sum(passes, passes) || get(f, "recompute") < 0)
      fail("a plan answer's FLOPs do not add up", r.line);
    const double step = c.at("step_seconds").get<double>(), overlapped = c.at("overlapped_step_seconds").get<double>();
    const double mfu = c.at("mfu").get<double>();
    if (!(overlapped >= 0 && step >= overlapped && mfu >= 0 && mfu <= 1 + 1e-9))
      fail("a plan answer's times or MFU are out of range", r.line);
    for (const auto& [ph, kinds] : c.at("collectives").items())
      for (const auto& [kind, t] : kinds.items()) {
        std::int64_t count = 0, bytes = 0;
        for (const auto& d : t.at("mesh_dims")) {
          if (d.at("mesh_dim").get<std::int64_t>() >= ndim) fail("a cost counts a collective on no mesh dim", r.line);
          count += d.at("count").get<std::int64_t>();
          bytes = sat_sum(bytes, d.at("bytes").get<std::int64_t>());
        }
        if (count != t.at("count").get<std::int64_t>() || bytes != t.at("bytes").get<std::int64_t>())
          fail("a cost's mesh dims do not add up to its totals", r.line);
      }
  }
  if (plan.contains("pipeline") != response.contains("pipeline")) fail("a pipeline asked for and not given", r.line);
  if (response.contains("pipeline")) {
    const json& p = response.at("pipeline");
    const json& stages = p.at("stages");
    if (stages.empty()) fail("a pipeline without stages", r.line);
    std::int64_t peak = -1;
    for (const auto& st : stages) {
      for (const char* k : {"layers", "parameters", "gradients", "optimizer_states", "activations", "memory", "flops", "sends",
                            "send_bytes", "tied_gradient_bytes"})
        if (st.at(k).get<std::int64_t>() < 0) fail("a pipeline stage has a negative figure", r.line);
      for (const char* k : {"in_flight", "compute_seconds", "communication_seconds", "send_seconds", "optimizer_seconds",
                            "tied_gradient_seconds"})
        if (!(st.at(k).get<double>() >= 0)) fail("a pipeline stage has a negative or NaN time", r.line);
      peak = std::max(peak, st.at("memory").get<std::int64_t>());
    }
    const auto at = p.at("peak_stage").get<std::size_t>();
    if (at >= stages.size() || p.at("peak_memory").get<std::int64_t>() != peak ||
        stages[at].at("memory").get<std::int64_t>() != peak)
      fail("a pipeline's peak is not its largest stage's memory", r.line);
    const double bubble = p.at("bubble_fraction").get<double>(), ideal = p.at("ideal_seconds").get<double>();
    if (!(bubble >= 0 && ideal >= 0 && p.at("step_seconds").get<double>() >= ideal) || p.at("micro_batches").get<std::int64_t>() < 1)
      fail("a pipeline's bubble, times or micro-batches are out of range", r.line);
  }
  if (plan.contains("search") != response.contains("search")) fail("a search asked for and not given", r.line);
  if (response.contains("search")) {
    const json& f = response.at("search");
    const json& found = f.at("plans");
    if (found.empty()) fail("a search answer without plans", r.line);
    double last = 0;
    for (const auto& q : found) {
      const double seconds = q.at("step_seconds").get<double>();
      if (!(seconds >= last)) fail("a search's plans are not best first", r.line);
      last = seconds;
      for (const auto& [name, a] : q.at("layouts").items()) check_attr_json(to_dims_form(a, named, -1, r.line), -1, ndim, r.line);
    }
    if (!response.contains("cost") || response.at("cost").at("step_seconds") != found.front().at("step_seconds"))
      fail("a search's answer is not its best plan's", r.line);
    const json& o = plan.at("search");
    const auto max_work = o.contains("max_work") ? o.at("max_work").get<std::size_t>() : ctspmd::model::search_options{}.max_work;
    if ((max_work > 0 && f.at("work").get<std::size_t>() > max_work) ||
        f.at("infeasible").get<std::size_t>() > f.at("evaluations").get<std::size_t>())
      fail("a search's work exceeds its budget, or more infeasible plans than evaluated", r.line);
  }
  const bool want_svg = request.contains("svg") && request.at("svg") == true;
  if (want_svg != response.contains("svg")) fail("a picture asked for and not given, or given unasked", r.line);
  if (want_svg && (!response.at("svg").is_string() || !well_formed_svg(response.at("svg").get_ref<const std::string&>())))
    fail("a plan answer's picture is not well formed", r.line);
  // The same request, the same answer.
  if (replay && ctspmd_requests::handle(line).line != r.line) fail("a plan request answered twice differently", r.line);
}

/// A small model's tensors and operators: x [b, h] (its batch sometimes split), a linear layer, a
/// repeated block of linear layers with GeLU, a softmax; weights laid out at random when
/// `annotate` (else left to a search). Tensors are named t<i> with `shapes[i]` their shapes.
void model_body(FuzzedDataProvider& fdp, std::size_t ndim, bool annotate, json& tensors, json& operators,
                std::vector<std::vector<std::int64_t>>& shapes) {
  static constexpr std::int64_t batches[] = {8, 4, 16, 2, 32}, widths[] = {16, 8, 32, 64, 12};
  const std::int64_t b = pick(fdp, batches), h = pick(fdp, widths);
  const auto tensor = [&](std::vector<std::int64_t> shape, bool parameter, bool laid_out, json& into) {
    const std::string name = "t" + std::to_string(shapes.size());
    json t = {{"name", name}, {"shape", shape}};
    if (parameter) t["parameter"] = true;
    if (laid_out) {
      raw_operand o;
      o.shape = shape;
      decode_layout(fdp, o, ndim, nullptr);
      const json j = operand_json(o);
      for (const char* k : {"dims_mapping", "partial", "partial_reduce"})
        if (j.contains(k)) t[k] = j.at(k);
    }
    if (rare(fdp, 8)) t["dtype"] = "bfloat16";
    into.push_back(t);
    shapes.push_back(std::move(shape));
    return name;
  };
  json x = {{"name", "t0"}, {"shape", {b, h}}};
  if (ndim > 1 && fdp.ConsumeBool()) x["dims_mapping"] = {rare(fdp, 4) ? static_cast<std::int64_t>(ndim - 1) : 0, -1};
  tensors.push_back(x);
  shapes.push_back({b, h});
  const auto linear = [&](const std::string& in, json& ts, json& ops, const char* activation) {
    const std::string w = tensor({h, h}, true, annotate && fdp.ConsumeBool(), ts);
    const std::string y = tensor({b, h}, false, false, ts);
    ops.push_back({{"op", "matmul"}, {"inputs", {in, w}}, {"outputs", {y}}});
    if (activation == nullptr) return y;
    const std::string a = tensor({b, h}, false, false, ts);
    ops.push_back({{"op", activation}, {"inputs", {y}}, {"outputs", {a}}});
    return a;
  };
  std::string cur = linear("t0", tensors, operators, "relu");
  {
    json body_tensors = json::array(), body_ops = json::array();
    const std::string input = "h" + std::to_string(shapes.size());
    const std::string out = linear(input, body_tensors, body_ops, "gelu");
    const std::string last = linear(out, body_tensors, body_ops, nullptr);
    static constexpr std::int64_t counts[] = {2, 4, 1, 8, 3};
    operators.push_back({{"repeat", {{"count", pick(fdp, counts)}, {"source", cur}, {"input", input},
                                     {"tensors", body_tensors}, {"operators", body_ops}, {"output", last}}}});
    cur = last;
  }
  const std::string loss = tensor({b, h}, false, false, tensors);
  operators.push_back({{"op", "softmax"}, {"inputs", {cur}}, {"outputs", {loss}}});
}

/// A plan request decoded from the bytes: a mesh; operators (rules, operand counts and
/// attributes as in (b)) whose inputs are earlier tensors, new tensors (often annotated,
/// sometimes parameters), or rarely dangling names and indices; outputs of the ranks the rule
/// infers, with input-like or unknown sizes; sometimes a repeated block, a training step, a
/// cluster and a picture.
json decode_plan(FuzzedDataProvider& fdp) {
  json plan;
  const auto mesh = decode_mesh(fdp);
  plan["mesh"] = mesh;
  if (fdp.ConsumeBool()) {
    static constexpr const char* names[] = {"dp", "mp", "pp", "cp", "ep"};
    json list = json::array();
    for (std::size_t m = 0; m < mesh.size(); ++m) list.push_back(m < std::size(names) ? names[m] : "x");
    if (rare(fdp, 16)) list.push_back(rare(fdp, 2) ? "dp" : "1bad");
    plan["mesh_names"] = list;
  }
  if (fdp.ConsumeBool()) plan["semantics"] = fdp.ConsumeBool() ? "phi" : "fluid";
  json tensors = json::array(), operators = json::array();
  std::vector<std::vector<std::int64_t>> shapes;
  const auto declare = [&](const raw_operand& o, bool annotate) {
    json t = {{"name", "t" + std::to_string(shapes.size())}, {"shape", o.shape}};
    if (annotate) {
      const json j = operand_json(o);
      for (const char* k : {"dims_mapping", "partial", "partial_reduce"})
        if (j.contains(k)) t[k] = j.at(k);
    }
    if (rare(fdp, 4)) t["parameter"] = true;
    if (rare(fdp, 8)) t["dtype"] = rare(fdp, 4) ? "complex7" : "bfloat16";
    if (rare(fdp, 64)) t["placements"] = fdp.ConsumeRandomLengthString(20);
    tensors.push_back(t);
    shapes.push_back(o.shape);
    return t.at("name");
  };
  // A third of the plans are a small model (a linear layer, a repeated block of them, a
  // softmax), so that training steps, pipelines and searches are answered often, not only refused.
  const bool model = rare(fdp, 3);
  const bool with_search = model ? fdp.ConsumeBool() : rare(fdp, 4);
  if (model) model_body(fdp, mesh.size(), !with_search, tensors, operators, shapes);
  const std::size_t n_ops = model ? 0 : fdp.ConsumeIntegralInRange<std::size_t>(1, 8);
  for (std::size_t i = 0; i < n_ops; ++i) {
    raw_call call;
    call.mesh = mesh;
    const rt::rule_entry* entry = decode_op(fdp, call);
    const auto [usual_in, usual_out] = usual_counts(fdp, call.op);
    json op = {{"op", call.op}, {"inputs", json::array()}, {"outputs", json::array()}};
    const std::size_t n_in = decode_count(fdp, usual_in);
    for (std::size_t k = 0; k < n_in; ++k) {
      const int how = fdp.ConsumeIntegralInRange<int>(0, 15);
      if (how < 6 && !shapes.empty()) {  // an earlier tensor, by name or (rarely) by index
        const std::size_t t = fdp.ConsumeIntegralInRange<std::size_t>(0, shapes.size() - 1);
        op["inputs"].push_back(rare(fdp, 8) ? json(t) : json("t" + std::to_string(t)));
        raw_operand o;
        o.shape = shapes[t];
        call.inputs.push_back(o);
      } else if (how == 15) {  // dangling
        op["inputs"].push_back(rare(fdp, 2) ? json(shapes.size() + 7) : json("nowhere"));
      } else {
        const std::vector<std::int64_t>* previous = call.inputs.empty() ? nullptr : &call.inputs.back().shape;
        raw_operand o = decode_operand(fdp, mesh.size(), previous);
        o.other_mesh.reset();
        op["inputs"].push_back(declare(o, how < 13));
        call.inputs.push_back(o);
      }
    }
    decode_attrs(fdp, entry, call);
    op["attrs"] = describe(call).at("attrs");
    // The output ranks the rule infers on replicated inputs, if it can.
    std::vector<std::size_t> ranks;
    try {
      const ctspmd::process_mesh pm(to_shape(mesh));
      std::vector<ctspmd::dist_tensor_spec> in;
      for (const auto& o : call.inputs) {
        raw_operand replicated;
        replicated.shape = o.shape;
        replicated.has_mapping = false;
        in.push_back(make_spec(replicated, pm));
      }
      for (const auto& a : rt::infer_forward(call.op, in, call.attrs).outputs) ranks.push_back(a.rank());
    } catch (const ctspmd::spmd_error&) {
      for (std::size_t k = decode_count(fdp, usual_out); k > 0; --k) ranks.push_back(fdp.ConsumeIntegralInRange<std::size_t>(0, 4));
    }
    for (const auto rank : ranks) {
      raw_operand o;
      const auto& x = call.inputs.empty() ? std::vector<std::int64_t>{} : call.inputs.front().shape;
      const int how = fdp.ConsumeIntegralInRange<int>(0, 3);
      for (std::size_t d = 0; d < rank; ++d)
        o.shape.push_back(how == 3 ? -1 : how == 2 ? tensor_size(fdp) : d + x.size() >= rank ? x[d + x.size() - rank] : -1);
      if (rare(fdp, 4)) decode_layout(fdp, o, mesh.size(), nullptr);
      o.other_mesh.reset();
      op["outputs"].push_back(declare(o, rare(fdp, 4)));
    }
    if (fdp.ConsumeBool()) op["label"] = rare(fdp, 8) ? fdp.ConsumeRandomLengthString(12) : "op" + std::to_string(i);
    if (rare(fdp, 8)) op["recomputable"] = true;
    if (rare(fdp, 64)) op["bogus"] = 1;
    operators.push_back(op);
    // Sometimes a repeated block of one elementwise operator over the last tensor.
    if (!shapes.empty() && rare(fdp, 8)) {
      const std::size_t t = shapes.size() - 1;
      const std::string out = "t" + std::to_string(shapes.size());
      json block = {{"count", fdp.ConsumeIntegralInRange<std::int64_t>(rare(fdp, 16) ? -1 : 1, 4)},
                    {"source", "t" + std::to_string(t)},
                    {"input", "in"},
                    {"tensors", json::array({{{"name", out}, {"shape", shapes[t]}}})},
                    {"operators", json::array({{{"op", rare(fdp, 4) ? "scale" : "relu"}, {"inputs", {"in"}}, {"outputs", {out}}}})},
                    {"output", out}};
      operators.push_back({{"repeat", block}});
      shapes.push_back(shapes[t]);  // the block's output keeps its name after it
    }
  }
  plan["tensors"] = tensors;
  plan["operators"] = operators;
  if (!shapes.empty() && fdp.ConsumeBool()) {
    json training = {{"loss", "t" + std::to_string(shapes.size() - 1)}};
    if (fdp.ConsumeBool()) training["shard_optimizer_states_on"] = rare(fdp, 4) ? json("dp") : json(fdp.ConsumeIntegralInRange<int>(-1, 3));
    if (fdp.ConsumeBool()) training["zero_stage"] = fdp.ConsumeIntegralInRange<int>(0, 4);
    if (fdp.ConsumeBool()) training["recompute"] = pick(fdp, {"none", "selective", "full", "most"});
    if (rare(fdp, 4)) training["gradient_element_bytes"] = fdp.ConsumeIntegralInRange<int>(-1, 8);
    if (rare(fdp, 4)) training["master_weights"] = true;
    if (rare(fdp, 4)) training["keep_gathered_inputs"] = true;
    plan["training"] = training;
  }
  if (model && !shapes.empty() && !plan.contains("training") && !rare(fdp, 4))
    plan["training"] = {{"loss", "t" + std::to_string(shapes.size() - 1)}};
  if (plan.contains("training") && with_search) {  // a layout search, kept small (its budget too)
    json search = json::object();
    if (fdp.ConsumeBool()) search["candidates"] = fdp.ConsumeIntegralInRange<int>(rare(fdp, 16) ? -1 : 1, 4);
    if (fdp.ConsumeBool()) search["keep"] = fdp.ConsumeIntegralInRange<int>(0, rare(fdp, 16) ? 20 : 2);
    search["max_states"] = fdp.ConsumeIntegralInRange<int>(rare(fdp, 16) ? 0 : 1, 8);
    search["max_work"] = rare(fdp, 8) ? fdp.ConsumeIntegralInRange<std::int64_t>(-1, 100) : 200'000;
    if (rare(fdp, 4)) search["memory_limit"] = rare(fdp, 4) ? interesting_int(fdp) : fdp.ConsumeIntegralInRange<std::int64_t>(0, 1 << 20);
    if (rare(fdp, 4)) search["zero_dim"] = rare(fdp, 4) ? json("dp") : json(fdp.ConsumeIntegralInRange<int>(-2, 3));
    if (rare(fdp, 4)) search["try_recompute"] = true;
    if (fdp.ConsumeBool()) search["co_shard"] = fdp.ConsumeBool();
    plan["search"] = search;
  }
  if (model ? fdp.ConsumeBool() : rare(fdp, 4)) {  // pipeline stages over a mesh dim
    json pipeline = {{"mesh_dim", model && !mesh.empty() && !rare(fdp, 4) ? json(mesh.size() - 1)  // the model's x is not split there
                                  : rare(fdp, 4) ? json("pp")
                                                 : json(fdp.ConsumeIntegralInRange<int>(rare(fdp, 16) ? -1 : 0, 3))}};
    if (fdp.ConsumeBool()) pipeline["micro_batches"] = rare(fdp, 8) ? interesting_int(fdp) : fdp.ConsumeIntegralInRange<std::int64_t>(1, 8);
    if (fdp.ConsumeBool()) pipeline["schedule"] = pick(fdp, {"1f1b", "gpipe", "interleaved", "zigzag"});
    if (rare(fdp, 4)) pipeline["chunks"] = rare(fdp, 8) ? interesting_int(fdp) : fdp.ConsumeIntegralInRange<std::int64_t>(1, 3);
    if (rare(fdp, 4)) {
      json layers = json::array();
      for (int s = fdp.ConsumeIntegralInRange<int>(0, 5); s > 0; --s)
        layers.push_back(rare(fdp, 8) ? interesting_int(fdp) : fdp.ConsumeIntegralInRange<std::int64_t>(0, 4));
      pipeline["stage_layers"] = layers;
    }
    plan["pipeline"] = pipeline;
  }
  if (rare(fdp, 4)) {
    if (fdp.ConsumeBool()) {
      plan["cluster"] = "h100";
    } else {
      json links = json::array();
      for (std::size_t m = 0; m < mesh.size() + (rare(fdp, 8) ? 1 : 0); ++m)
        links.push_back({{"bandwidth", rare(fdp, 8) ? 0.0 : 1e10}, {"latency", 1e-6}});
      plan["cluster"] = {{"links", links}, {"peak_flops", rare(fdp, 8) ? -1.0 : 1e15},
                         {"compute_efficiency", rare(fdp, 8) ? 1.5 : 0.5}};
    }
  }
  json request = {{"plan", plan}};
  if (fdp.ConsumeBool()) request["svg"] = rare(fdp, 16) ? json("yes") : json(true);
  return request;
}

/// Plan requests by surface (training, cluster, pipeline, search): answered, refused. Printed to
/// stderr at each power of two of plans, for fuzz/README.md's records.
void count_plan(const json& plan, bool ok) {
  static const char* const surfaces[] = {"training", "cluster", "pipeline", "search"};
  static std::int64_t answered[4], refused[4], plans = 0;
  for (std::size_t k = 0; k < 4; ++k)
    if (plan.contains(surfaces[k])) ++(ok ? answered : refused)[k];
  ++plans;
  if ((plans & (plans - 1)) != 0 || plans < 1024) return;
  std::fprintf(stderr, "plans %lld:", static_cast<long long>(plans));
  for (std::size_t k = 0; k < 4; ++k)
    std::fprintf(stderr, " %s %lld answered %lld refused;", surfaces[k], static_cast<long long>(answered[k]),
                 static_cast<long long>(refused[k]));
  std::fprintf(stderr, "\n");
}

void fuzz_plan(FuzzedDataProvider& fdp) {
  const json request = decode_plan(fdp);
  const std::string line = request.dump(-1, ' ', false, json::error_handler_t::replace);  // random text: not UTF-8
  current_call = line;
  const auto r = ctspmd_requests::handle(line);
  check_plan_response(line, r);
  count_plan(request.at("plan"), r.ok);
}


}  // namespace


extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  current_call.clear();
  fuzz_json(text);

  FuzzedDataProvider fdp(data, size);
  const raw_call call = decode_call(fdp);
  const direct_outcome direct = call_direct(call);
  compare_with_tool(call, direct, fdp);

  FuzzedDataProvider plan_fdp(data, size);  // the same bytes, read as a plan
  fuzz_plan(plan_fdp);
  return 0;
}
