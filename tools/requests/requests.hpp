#ifndef CTSPMD_TOOLS_REQUESTS_REQUESTS_HPP
#define CTSPMD_TOOLS_REQUESTS_REQUESTS_HPP
// The requests of ctspmd-infer's schema, read from JSON: rule requests ({"op": ...}), plan
// requests ({"plan": ...}) and model requests ({"model": ...}); see ctspmd-infer --help. One reader for its two front ends: the tool
// (one request line in, one response line out) and the Python module, which gives its arguments
// as a JSON value. Compiled once, into the static library ctspmd_requests (with the runtime
// layer's by-name table, ctspmd_runtime_layer: units that include this header are built with
// CTSPMD_RUNTIME_SEPARATE); this header declares what the front ends call.

#include <ctspmd/runtime.hpp>
#include <ctspmd/runtime/operand_layout.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace ctspmd_requests {

using json = nlohmann::json;
using ctspmd::error_kind;
using ctspmd::spmd_error;

/// `j` on one line; bytes that are not UTF-8 (from a request) become U+FFFD.
inline std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

/// What a request value should have been, for a `type_error`.
enum class expected_type { integer, integer_list, object, operand_list, attribute, string, string_list };

/// A request value of the wrong type: an `invalid_argument` whose message (`what()`) is the tool's.
/// `subject` (the value's name, e.g. "inputs[0].shape"), `expected` and `got` (the value's type;
/// for a value JSON text cannot hold, a binary value naming its type: the Python module's objects)
/// let a front end say it in its own words: the Python module raises a TypeError.
class type_error : public spmd_error {
 public:
  type_error(const std::string& message, std::string subject_, expected_type expected_, const json& value)
      : spmd_error(error_kind::invalid_argument, message),
        subject(std::move(subject_)),
        expected(expected_),
        got(value.type()),
        got_name(value.is_binary() ? std::string(value.get_binary().begin(), value.get_binary().end()) : "") {}
  std::string subject;
  expected_type expected;
  json::value_t got;
  std::string got_name;  ///< for a binary value, the type it names
};

/// A failed plan request: the error, and where in the plan it happened ("details": the operator's
/// index in the plan and its name, rule and phase, the operand, the request's path to it).
class plan_error : public spmd_error {
 public:
  plan_error(error_kind kind, const std::string& message, json where)
      : spmd_error(kind, message), details(std::move(where)) {}
  json details;
};

/// How an attribute's name appears in messages: `attrs.axis` (the tool) or `attrs['axis']`
/// (the Python module, where it is a dict's key).
enum class attribute_naming { dotted, subscript };

/// The answer to rule request `request` (an object: "op", "direction", "semantics", "mesh",
/// "mesh_names", "inputs", "outputs", "attrs"): {"inputs": [ATTR, ...], "outputs": [...]}, every
/// operand in the request's layout form. A bad request or a refused one throws `spmd_error` (a
/// `type_error` for a value of the wrong type).
json rule_answer(const json& request, attribute_naming naming = attribute_naming::dotted);

/// The answer to plan `plan` (the value of a request's "plan"). A malformed or failing plan
/// throws `plan_error` (or, for a bad value found before any operator, `spmd_error`).
json verify_plan(const json& plan);

/// The answer to a plan request `{"plan": {...}, "svg": true}`: verify_plan's, and with "svg",
/// its picture (svg_report.hpp) as the answer's "svg", a string.
json verify_plan_request(const json& request);

/// The answer to a model request `{"model": {"config": {...}, "mesh": [...], ...}, "training": ...}`
/// (model_request.cpp): the plan the config's builder makes, answered as verify_plan_request
/// answers it, and "model": the architecture, parameter counts and vocabulary padding; without a
/// "mesh", the counts alone.
json model_answer(const json& request);
/// A model request's "model" value built: its plan, a plan request's "plan" (its loss tensor is
/// named "loss"); it needs a "mesh".
json model_plan(const json& model);
/// A model request's "model" value (a "config" at least) counted: {"architecture", "parameters",
/// "active_parameters", "vocab_padding"}.
json model_counts(const json& model);

/// The response to one request line, and whether it succeeded.
struct response {
  std::string line;
  bool ok;
};

/// Handles one request line (a rule or a plan request). Never throws: every failure is an error
/// response, {"error": {"kind": ..., "message": ...}}.
response handle(std::string_view line);

/// A dist attr in a request's form: {"dims_mapping": [...], "partial": [...], "partial_reduce":
/// [...]}, or in its sharding language {"placements": text}, {"partition_spec": text, "partial":
/// [...], "partial_reduce": [...]} (a PartitionSpec cannot say partial), or {"sdy": text} (partial
/// sums as unreduced axes), with "partial" and "partial_reduce" beside it when some partial dim is
/// not a sum.
json attr_json(const ctspmd::tensor_dist_attr& a, const ctspmd::named_mesh& mesh,
               const ctspmd::runtime::layout_form& form);

/// `attrs` in the dims mapping form (`attr_json` without a language).
json to_json(const ctspmd::dist_attrs& attrs);

}  // namespace ctspmd_requests

#endif
