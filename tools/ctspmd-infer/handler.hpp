#ifndef CTSPMD_TOOLS_INFER_HANDLER_HPP
#define CTSPMD_TOOLS_INFER_HANDLER_HPP
// ctspmd-infer's request handling: one JSON request line in, one JSON response line out.
// Shared by the tool, its benchmark and its fuzz target.

#include <ctspmd/interop.hpp>
#include <ctspmd/runtime.hpp>
#include <ctspmd/runtime/operand_layout.hpp>

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace ctspmd_infer {

using json = nlohmann::json;
using ctspmd::error_kind;
using ctspmd::spmd_error;

/// A bad request: reported as an `invalid_argument` error response.
[[noreturn]] inline void bad_request(const std::string& message) {
  throw spmd_error(error_kind::invalid_argument, message);
}

/// `j` on one line; bytes that are not UTF-8 (from a request) become U+FFFD.
inline std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

/// A request value `v` as an error message shows it: dumped if it is a scalar or a short list of
/// scalars, otherwise only named. (Dumping recurses once per nesting level, so a deeply nested
/// value would overflow the stack; it would also make a huge message.)
inline std::string shown(const json& v) {
  if (v.is_structured()) {
    bool flat = v.size() <= 16;
    for (const auto& e : v) flat = flat && e.is_primitive();
    if (!flat) return v.is_array() ? "an array" : "an object";
  }
  return dump(v);
}

/// Checks that `object` (named `what`) is an object with only `allowed` keys.
inline void check_fields(const json& object, std::string_view what, std::initializer_list<std::string_view> allowed) {
  if (!object.is_object()) bad_request(std::string(what) + " must be an object");
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (auto a : allowed) known = known || a == key;
    if (!known) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      bad_request("unknown field '" + key + "' in " + std::string(what) + "; accepted: " + list);
    }
  }
}

/// True if `v` is an integer that fits an `std::int64_t`.
inline bool is_int64(const json& v) {
  return v.is_number_integer() &&
         (v.is_number_unsigned() ? v.get<std::uint64_t>() <= std::numeric_limits<std::int64_t>::max() : true);
}

inline std::int64_t to_int(const json& v, const std::string& what) {
  if (is_int64(v)) return v.get<std::int64_t>();
  bad_request(what + " must be an integer, not " + shown(v));
}

/// `v` as an int list of at most `capacity` entries; `what` + `field` names it in errors.
/// (Names are built only for an error message: building them for every value was a good part
/// of a request's cost.)
template <class List>
List to_list(const json& v, const std::string& what, std::string_view field, std::string_view capacity_name) {
  if (!v.is_array()) bad_request(what + std::string(field) + " must be an array of integers");
  if (v.size() > List::capacity())
    bad_request(what + std::string(field) + " has " + std::to_string(v.size()) + " entries, above " +
                std::string(capacity_name) + " = " + std::to_string(List::capacity()));
  List out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& e = v[i];
    if (!is_int64(e)) (void)to_int(e, what + std::string(field) + "[" + std::to_string(i) + "]");  // throws
    out.push_back(e.get<std::int64_t>());
  }
  return out;
}

inline ctspmd::runtime::attribute to_attribute(const json& v, const std::string& what) {
  switch (v.type()) {
    case json::value_t::boolean: return v.get<bool>();
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return to_int(v, what);
    case json::value_t::number_float: return v.get<double>();
    case json::value_t::string: return v.get<std::string>();
    case json::value_t::array: {
      std::vector<std::int64_t> list;
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!is_int64(v[i])) (void)to_int(v[i], what + "[" + std::to_string(i) + "]");  // throws
        list.push_back(v[i].get<std::int64_t>());
      }
      return list;
    }
    default: bad_request(what + " must be a bool, number, string or array of integers, not " + shown(v));
  }
}

/// The attribute map `v` (an object, named `what`) gives.
inline ctspmd::runtime::attribute_map read_attrs(const json& v, const std::string& what) {
  if (!v.is_object()) bad_request("\"" + what + "\" must be an object");
  ctspmd::runtime::attribute_map attrs;
  for (const auto& [key, value] : v.items()) attrs[key] = to_attribute(value, what + "." + key);
  return attrs;
}

/// True if `v` is a nested dims mapping (`[[0, 1], []]`): a non-empty array of arrays.
inline bool is_nested(const json& v) { return v.is_array() && !v.empty() && v.front().is_array(); }

/// A nested dims mapping: per tensor dim, the array of its mesh dims, major first.
inline ctspmd::multi_dims_mapping to_multi(const json& v, const std::string& what) {
  const std::string field = what + ".dims_mapping";
  if (v.size() > ctspmd::max_rank)
    bad_request(field + " has " + std::to_string(v.size()) + " entries, above max_rank = " + std::to_string(ctspmd::max_rank));
  ctspmd::multi_dims_mapping out;
  for (std::size_t d = 0; d < v.size(); ++d) {
    if (!v[d].is_array())
      bad_request(field + " mixes lists and integers: nested, every entry is a list of mesh dims ([[0, 1], []])");
    // Appended, not `"[" + std::to_string(d) + "]"`: GCC 12 at -O3 warns of a memcpy overlap in that
    // operator+ when it inlines it here (-Wrestrict, a false positive).
    std::string index = "[";
    index += std::to_string(d);
    index += ']';
    out.push_back(to_list<ctspmd::mesh_dims>(v[d], field, index, "max_mesh_ndim"));
  }
  return out;
}

// The operand-layout steps (one layout form per request, the languages' text) are shared with the
// Python module: <ctspmd/runtime/operand_layout.hpp>.
using ctspmd::runtime::layout_form;
using ctspmd::runtime::layout_keys;

/// Reads the partial status fields of operand `v` into `attr`.
inline void read_partial(const json& v, const std::string& what, ctspmd::tensor_dist_attr& attr) {
  if (v.contains("partial")) {
    const auto dims = to_list<ctspmd::mesh_dims>(v.at("partial"), what, ".partial", "max_mesh_ndim");
    std::vector<ctspmd::reduce_type> types(dims.size(), ctspmd::reduce_type::sum);
    if (v.contains("partial_reduce")) {
      const auto& r = v.at("partial_reduce");
      if (!r.is_array() || r.size() != dims.size())
        bad_request(what + ".partial_reduce must be an array with one reduce type per partial dim");
      for (std::size_t i = 0; i < r.size(); ++i)
        if (!r[i].is_string() || !ctspmd::runtime::parse_reduce_type(r[i].get<std::string>(), types[i]))
          bad_request(what + ".partial_reduce[" + std::to_string(i) + "] must be one of sum, max, min, prod, avg, any, all");
    }
    for (std::size_t i = 0; i < dims.size(); ++i) attr.set_partial_status({dims[i]}, types[i]);
  } else if (v.contains("partial_reduce")) {
    bad_request(what + " has \"partial_reduce\" but no \"partial\"");
  }
}

/// The layout operand `v` (of rank `rank`) gives in its "dims_mapping", "placements",
/// "partition_spec" or "sdy" field and its partial status fields; replicated if it gives none.
inline ctspmd::tensor_dist_attr read_layout(const json& v, const std::string& what, std::size_t rank,
                                            const ctspmd::named_mesh& mesh, layout_form& form) {
  const auto key = ctspmd::runtime::layout_key([&v](std::string_view k) { return v.contains(k); }, what);
  if (key) form.use(*key, what);
  ctspmd::tensor_dist_attr attr(mesh);
  if (!key) {
    attr.set_dims_mapping(ctspmd::dims_mapping(rank, -1));
  } else if (*key == 0) {
    const json& field = v.at("dims_mapping");
    if (is_nested(field))
      attr.set_dims_mapping(to_multi(field, what));
    else
      attr.set_dims_mapping(to_list<ctspmd::dims_mapping>(field, what, ".dims_mapping", "max_rank"));
  } else {
    const json& field = v.at(layout_keys[*key]);
    if (!field.is_string())
      bad_request(what + "." + std::string(layout_keys[*key]) + " must be a string (the language's own text)");
    attr = ctspmd::runtime::attr_from_text(*ctspmd::runtime::language_of_key(*key), field.get_ref<const std::string&>(),
                                           rank, mesh, v.contains("partial") || v.contains("partial_reduce"), form, what);
  }
  read_partial(v, what, attr);
  return attr;
}

/// One operand: {"shape": [...], "dims_mapping" | "placements" | "partition_spec" | "sdy": ...,
/// "partial": [...], "partial_reduce": [...]}.
inline ctspmd::dist_tensor_spec to_spec_unnamed(const json& v, const std::string& what, const ctspmd::named_mesh& mesh,
                                                layout_form& form) {
  check_fields(v, what, {"shape", "dims_mapping", "placements", "partition_spec", "sdy", "partial", "partial_reduce"});
  const auto shape_field = v.find("shape");
  if (shape_field == v.end()) bad_request(what + " has no \"shape\"");
  const auto shape = to_list<ctspmd::tensor_shape>(*shape_field, what, ".shape", "max_rank");
  return {shape, read_layout(v, what, shape.size(), mesh, form)};
}

/// The operand `v`; a rejected value's message names the operand (`what`).
inline ctspmd::dist_tensor_spec to_spec(const json& v, const std::string& what, const ctspmd::named_mesh& mesh,
                                        layout_form& form) {
  return ctspmd::runtime::naming_operand(what, [&] { return to_spec_unnamed(v, what, mesh, form); });
}

/// Operands, held inline (no allocation).
using specs = ctspmd::static_vector<ctspmd::dist_tensor_spec, ctspmd::max_operands>;

inline specs to_specs(const json& v, const std::string& what, const ctspmd::named_mesh& mesh, layout_form& form) {
  if (!v.is_array()) bad_request(what + " must be an array of operands");
  if (v.size() > ctspmd::max_operands)
    bad_request(what + " has " + std::to_string(v.size()) + " operands, above max_operands = " +
                std::to_string(ctspmd::max_operands));
  specs out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(to_spec(v[i], what + "[" + std::to_string(i) + "]", mesh, form));
  return out;
}

/// A dist attr's mapping as JSON: flat (`[0, -1]`) unless a dim is co-sharded (`[[0, 1], []]`).
inline json mapping_json(const ctspmd::tensor_dist_attr& a) {
  json mapping = json::array();
  if (a.is_co_sharded()) {
    for (std::size_t d = 0; d < a.rank(); ++d) {
      json list = json::array();
      for (auto m : a.mesh_dims_of(d)) list.push_back(m);
      mapping.push_back(list);
    }
  } else {
    for (auto d : a.dims_mapping()) mapping.push_back(d);
  }
  return mapping;
}

inline json to_json(const ctspmd::dist_attrs& attrs) {
  json out = json::array();
  for (const auto& a : attrs) {
    json partial = json::array(), reduce = json::array();
    for (auto m : a.partial_dims()) {
      partial.push_back(m);
      reduce.push_back(ctspmd::to_string(a.partial_reduce_type(m)));
    }
    out.push_back({{"dims_mapping", mapping_json(a)}, {"partial", partial}, {"partial_reduce", reduce}});
  }
  return out;
}

/// Appends `attrs` to `out` exactly as `dump(to_json(attrs))` writes them, without building
/// the JSON value (which cost as much as parsing the request).
inline void append_json(std::string& out, const ctspmd::dist_attrs& attrs) {
  const auto append_int = [&out](std::int64_t v) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
    out.append(digits, end);
  };
  out += '[';
  for (std::size_t i = 0; i < attrs.size(); ++i) {
    const auto& a = attrs[i];
    out += i == 0 ? "{\"dims_mapping\":[" : ",{\"dims_mapping\":[";
    const bool nested = a.is_co_sharded();
    for (std::size_t d = 0; d < a.rank(); ++d) {
      if (d != 0) out += ',';
      const auto list = a.mesh_dims_of(d);
      if (!nested) {
        append_int(list.empty() ? -1 : list[0]);
        continue;
      }
      out += '[';
      for (std::size_t k = 0; k < list.size(); ++k) {
        if (k != 0) out += ',';
        append_int(list[k]);
      }
      out += ']';
    }
    out += "],\"partial\":[";
    const auto partial = a.partial_dims();
    for (std::size_t p = 0; p < partial.size(); ++p) {
      if (p != 0) out += ',';
      append_int(partial[p]);
    }
    out += "],\"partial_reduce\":[";
    for (std::size_t p = 0; p < partial.size(); ++p) {
      out += p == 0 ? "\"" : ",\"";
      out += ctspmd::to_string(a.partial_reduce_type(partial[p]));
      out += '"';
    }
    out += "]}";
  }
  out += ']';
}

/// The response to a successful request: `{"inputs":[...],"outputs":[...]}`.
inline std::string success_response(const ctspmd::spmd_info& info) {
  std::string out;
  out.reserve(128 + 96 * (info.inputs.size() + info.outputs.size()));
  out += "{\"inputs\":";
  append_json(out, info.inputs);
  out += ",\"outputs\":";
  append_json(out, info.outputs);
  out += '}';
  return out;
}

/// A dist attr in the request's form: {"dims_mapping": [...], "partial": [...], "partial_reduce":
/// [...]}, or in its sharding language {"placements": text}, {"partition_spec": text, "partial":
/// [...], "partial_reduce": [...]} (a PartitionSpec cannot say partial), or {"sdy": text} (partial
/// sums as unreduced axes), with "partial" and "partial_reduce" beside it when some partial dim is
/// not a sum.
inline json attr_json(const ctspmd::tensor_dist_attr& a, const ctspmd::named_mesh& mesh, const layout_form& form) {
  json o = json::object();
  if (form.language) {
    const auto answer = ctspmd::runtime::to_text_answer(a, mesh, form);
    o[std::string(ctspmd::to_string(*form.language))] = std::string(answer.text.view());
    if (!answer.partial_beside) return o;
  } else {
    o["dims_mapping"] = mapping_json(a);
  }
  json partial = json::array(), reduce = json::array();
  for (auto m : a.partial_dims()) {
    partial.push_back(m);
    reduce.push_back(ctspmd::to_string(a.partial_reduce_type(m)));
  }
  o["partial"] = partial;
  o["partial_reduce"] = reduce;
  return o;
}

/// `attrs` in the request's sharding language (`attr_json`).
inline json to_json(const ctspmd::dist_attrs& attrs, const ctspmd::named_mesh& mesh, const layout_form& form) {
  json out = json::array();
  for (const auto& a : attrs) out.push_back(attr_json(a, mesh, form));
  return out;
}

/// The request's "semantics": fluid (the default) or phi.
inline ctspmd::semantics read_semantics(const json& request) {
  static const json default_semantics = "fluid";  // both branches lvalues: no copy of the request's value
  const json& field = request.contains("semantics") ? request.at("semantics") : default_semantics;
  if (field != "fluid" && field != "phi") bad_request("\"semantics\" must be \"fluid\" or \"phi\", not " + shown(field));
  return field == "phi" ? ctspmd::semantics::phi : ctspmd::semantics::fluid;
}

/// The request's "mesh", with its "mesh_names" if given (views of the request's strings).
inline ctspmd::named_mesh read_mesh(const json& request) {
  if (!request.contains("mesh")) bad_request("the request needs \"mesh\", the process mesh's shape");
  const ctspmd::process_mesh plain_mesh(to_list<ctspmd::tensor_shape>(request.at("mesh"), "mesh", "", "max_rank"));
  ctspmd::mesh_names names;
  if (request.contains("mesh_names")) {
    const json& n = request.at("mesh_names");
    if (!n.is_array() || n.size() != static_cast<std::size_t>(plain_mesh.ndim()))
      bad_request("\"mesh_names\" must be an array of one name (a string) per mesh dim");
    for (const auto& e : n) {
      if (!e.is_string()) bad_request("\"mesh_names\" must be an array of one name (a string) per mesh dim");
      names.push_back(e.get_ref<const std::string&>());
    }
  }
  return {plain_mesh, names};
}

inline std::string error_response(error_kind kind, const std::string& message) {
  return dump(json{{"error", {{"kind", ctspmd::to_string(kind)}, {"message", message}}}});
}

/// The response to one request line, and whether it succeeded.
struct response {
  std::string line;
  bool ok;
};

/// The response to a plan request, {"plan": {...}} (plan_request.hpp).
inline response plan_response(const json& request);

/// Handles one request line. Never throws: every failure is an error response.
inline response handle(std::string_view line) {
  try {
    const json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (request.is_discarded()) return {error_response(error_kind::invalid_argument, "the line is not valid JSON"), false};
    if (request.is_object() && request.contains("plan")) return plan_response(request);
    check_fields(request, "the request",
                 {"op", "direction", "semantics", "mesh", "mesh_names", "inputs", "outputs", "attrs"});
    if (!request.contains("op") || !request.at("op").is_string()) bad_request("the request needs \"op\", a string");
    const std::string op = request.at("op").get<std::string>();
    static const json default_direction = "forward";  // both branches lvalues: no copy of the request's value
    const json& direction = request.contains("direction") ? request.at("direction") : default_direction;
    if (direction != "forward" && direction != "backward")
      bad_request("\"direction\" must be \"forward\" or \"backward\", not " + shown(direction));
    const bool forward = direction == "forward";
    const auto semantics = read_semantics(request);
    const ctspmd::named_mesh mesh = read_mesh(request);
    layout_form form;
    if (!request.contains("inputs")) bad_request("the request needs \"inputs\"");
    const auto inputs = to_specs(request.at("inputs"), "inputs", mesh, form);
    if (forward && request.contains("outputs")) bad_request("\"outputs\" are given only with \"direction\": \"backward\"");
    if (!forward && !request.contains("outputs")) bad_request("a backward request needs \"outputs\"");
    const auto outputs = forward ? specs{} : to_specs(request.at("outputs"), "outputs", mesh, form);
    const auto attrs = request.contains("attrs") ? read_attrs(request.at("attrs"), "attrs") : ctspmd::runtime::attribute_map{};
    const auto info = forward ? ctspmd::runtime::infer_forward(op, inputs, attrs, semantics)
                              : ctspmd::runtime::infer_backward(op, inputs, outputs, attrs, semantics);
    if (form.language)
      return {dump(json{{"inputs", to_json(info.inputs, mesh, form)}, {"outputs", to_json(info.outputs, mesh, form)}}), true};
    return {success_response(info), true};
  } catch (const spmd_error& e) {
    return {error_response(e.kind(), e.what()), false};
  } catch (const std::exception& e) {  // nlohmann's type errors and allocation failures
    return {error_response(error_kind::invalid_argument, e.what()), false};
  }
}

}  // namespace ctspmd_infer

#include "plan_request.hpp"  // plan_response

#endif
