// Rule requests ({"op": "matmul", "mesh": ..., "inputs": [...], ...}: one rule called by name) and
// the operand readers plan requests share (reader.hpp); `handle`, the tool's one line in, one
// line out. Part of the library ctspmd_requests (requests.hpp).
#include "reader.hpp"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ctspmd_requests {

namespace {

/// True if `v` is a nested dims mapping (`[[0, 1], []]`): a non-empty array of arrays.
bool is_nested(const json& v) { return v.is_array() && !v.empty() && v.front().is_array(); }

/// A nested dims mapping: per tensor dim, the array of its mesh dims, major first.
ctspmd::multi_dims_mapping to_multi(const json& v, const std::string& what) {
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

/// Reads the partial status fields of operand `v` into `attr`.
void read_partial(const json& v, const std::string& what, ctspmd::tensor_dist_attr& attr) {
  if (v.contains("partial")) {
    const auto dims = to_list<ctspmd::mesh_dims>(v.at("partial"), what, ".partial", "max_mesh_ndim");
    std::vector<ctspmd::reduce_type> types(dims.size(), ctspmd::reduce_type::sum);
    if (v.contains("partial_reduce")) {
      const auto& r = v.at("partial_reduce");
      if (!r.is_array())
        throw type_error(what + ".partial_reduce must be an array with one reduce type per partial dim",
                         what + ".partial_reduce", expected_type::string_list, r);
      if (r.size() != dims.size()) bad_request(what + ".partial_reduce must have one reduce type per partial dim");
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (r[i].is_string() && ctspmd::runtime::parse_reduce_type(r[i].get_ref<const std::string&>(), types[i]))
          continue;
        const std::string entry = what + ".partial_reduce[" + std::to_string(i) + "]";
        const std::string message = entry + " must be one of sum, max, min, prod, avg, any, all";
        if (!r[i].is_string()) throw type_error(message, entry, expected_type::string, r[i]);
        bad_request(message);
      }
    }
    for (std::size_t i = 0; i < dims.size(); ++i) attr.set_partial_status({dims[i]}, types[i]);
  } else if (v.contains("partial_reduce")) {
    bad_request(what + " has \"partial_reduce\" but no \"partial\"");
  }
}

/// One operand: {"shape": [...], "dims_mapping" | "placements" | "partition_spec" | "sdy": ...,
/// "partial": [...], "partial_reduce": [...]}.
ctspmd::dist_tensor_spec to_spec_unnamed(const json& v, const std::string& what, const ctspmd::named_mesh& mesh,
                                         layout_form& form) {
  check_fields(v, what, {"shape", "dims_mapping", "placements", "partition_spec", "sdy", "partial", "partial_reduce"});
  const auto shape_field = v.find("shape");
  if (shape_field == v.end()) bad_request(what + " has no \"shape\"");
  const auto shape = to_list<ctspmd::tensor_shape>(*shape_field, what, ".shape", "max_rank");
  return {shape, read_layout(v, what, shape.size(), mesh, form)};
}

/// A dist attr's mapping as JSON: flat (`[0, -1]`) unless a dim is co-sharded (`[[0, 1], []]`).
json mapping_json(const ctspmd::tensor_dist_attr& a) {
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

/// `attrs` in the request's form (`attr_json`).
json to_json(const ctspmd::dist_attrs& attrs, const ctspmd::named_mesh& mesh, const layout_form& form) {
  json out = json::array();
  for (const auto& a : attrs) out.push_back(attr_json(a, mesh, form));
  return out;
}

/// Appends `attrs` to `out` exactly as `dump(to_json(attrs))` writes them, without building
/// the JSON value (which cost as much as parsing the request).
void append_json(std::string& out, const ctspmd::dist_attrs& attrs) {
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

/// The response to a successful request in the dims mapping form: `{"inputs":[...],"outputs":[...]}`.
std::string success_response(const ctspmd::spmd_info& info) {
  std::string out;
  out.reserve(128 + 96 * (info.inputs.size() + info.outputs.size()));
  out += "{\"inputs\":";
  append_json(out, info.inputs);
  out += ",\"outputs\":";
  append_json(out, info.outputs);
  out += '}';
  return out;
}

std::string error_response(error_kind kind, const std::string& message) {
  return dump(json{{"error", {{"kind", ctspmd::to_string(kind)}, {"message", message}}}});
}

/// A rule request, read (the mesh's names view the request's strings).
struct rule_request {
  std::string op;
  bool forward = true;
  ctspmd::semantics semantics = ctspmd::semantics::fluid;
  ctspmd::named_mesh mesh;
  layout_form form;
  specs inputs, outputs;
  ctspmd::runtime::attribute_map attrs;

  /// The rule's answer.
  ctspmd::spmd_info infer() const {
    return forward ? ctspmd::runtime::infer_forward(op, inputs, attrs, semantics)
                   : ctspmd::runtime::infer_backward(op, inputs, outputs, attrs, semantics);
  }
  /// `info` in the request's form.
  json answer(const ctspmd::spmd_info& info) const {
    return {{"inputs", to_json(info.inputs, mesh, form)}, {"outputs", to_json(info.outputs, mesh, form)}};
  }
};

rule_request read_rule_request(const json& request, attribute_naming naming) {
  check_fields(request, "the request",
               {"op", "direction", "semantics", "mesh", "mesh_names", "inputs", "outputs", "attrs"});
  rule_request r;
  if (!request.contains("op") || !request.at("op").is_string()) bad_request("the request needs \"op\", a string");
  r.op = request.at("op").get<std::string>();
  static const json default_direction = "forward";  // both branches lvalues: no copy of the request's value
  const json& direction = request.contains("direction") ? request.at("direction") : default_direction;
  if (direction != "forward" && direction != "backward")
    bad_request("\"direction\" must be \"forward\" or \"backward\", not " + shown(direction));
  r.forward = direction == "forward";
  r.semantics = read_semantics(request);
  r.mesh = read_mesh(request);
  if (!request.contains("inputs")) bad_request("the request needs \"inputs\"");
  r.inputs = to_specs(request.at("inputs"), "inputs", r.mesh, r.form);
  if (r.forward && request.contains("outputs"))
    bad_request("\"outputs\" are given only with \"direction\": \"backward\"");
  if (!r.forward && !request.contains("outputs")) bad_request("a backward request needs \"outputs\"");
  if (!r.forward) r.outputs = to_specs(request.at("outputs"), "outputs", r.mesh, r.form);
  if (request.contains("attrs")) r.attrs = read_attrs(request.at("attrs"), "attrs", naming);
  return r;
}

}  // namespace

ctspmd::runtime::attribute to_attribute(const json& v, const std::string& what) {
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
    default:
      throw type_error(what + " must be a bool, number, string or array of integers, not " + shown(v), what,
                       expected_type::attribute, v);
  }
}

ctspmd::runtime::attribute_map read_attrs(const json& v, const std::string& what, attribute_naming naming) {
  if (!v.is_object()) throw type_error("\"" + what + "\" must be an object", what, expected_type::object, v);
  ctspmd::runtime::attribute_map attrs;
  for (const auto& [key, value] : v.items())
    attrs[key] = to_attribute(value, naming == attribute_naming::dotted ? what + "." + key : what + "['" + key + "']");
  return attrs;
}

ctspmd::tensor_dist_attr read_layout(const json& v, const std::string& what, std::size_t rank,
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
    if (!field.is_string()) {
      const std::string name = what + "." + std::string(layout_keys[*key]);
      throw type_error(name + " must be a string (the language's own text)", name + " (the language's own text)",
                       expected_type::string, field);
    }
    attr = ctspmd::runtime::attr_from_text(*ctspmd::runtime::language_of_key(*key), field.get_ref<const std::string&>(),
                                           rank, mesh, v.contains("partial") || v.contains("partial_reduce"), form, what);
  }
  read_partial(v, what, attr);
  return attr;
}

specs to_specs(const json& v, const std::string& what, const ctspmd::named_mesh& mesh, layout_form& form) {
  if (!v.is_array()) throw type_error(what + " must be an array of operands", what, expected_type::operand_list, v);
  if (v.size() > ctspmd::max_operands)
    bad_request(what + " has " + std::to_string(v.size()) + " operands, above max_operands = " +
                std::to_string(ctspmd::max_operands));
  specs out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string name = what + "[" + std::to_string(i) + "]";  // a rejected value's message names the operand
    out.push_back(ctspmd::runtime::naming_operand(name, [&] { return to_spec_unnamed(v[i], name, mesh, form); }));
  }
  return out;
}

ctspmd::semantics read_semantics(const json& request) {
  static const json default_semantics = "fluid";  // both branches lvalues: no copy of the request's value
  const json& field = request.contains("semantics") ? request.at("semantics") : default_semantics;
  if (field != "fluid" && field != "phi") {
    const std::string message = "\"semantics\" must be \"fluid\" or \"phi\", not " + shown(field);
    if (!field.is_string()) throw type_error(message, "semantics", expected_type::string, field);
    bad_request(message);
  }
  return field == "phi" ? ctspmd::semantics::phi : ctspmd::semantics::fluid;
}

ctspmd::named_mesh read_mesh(const json& request) {
  if (!request.contains("mesh")) bad_request("the request needs \"mesh\", the process mesh's shape");
  const ctspmd::process_mesh plain_mesh(to_list<ctspmd::tensor_shape>(request.at("mesh"), "mesh", "", "max_rank"));
  ctspmd::mesh_names names;
  if (request.contains("mesh_names")) {
    const json& n = request.at("mesh_names");
    const std::string message = "\"mesh_names\" must be an array of one name (a string) per mesh dim";
    if (!n.is_array()) throw type_error(message, "mesh_names", expected_type::string_list, n);
    if (n.size() != static_cast<std::size_t>(plain_mesh.ndim()))
      bad_request("mesh_names has " + std::to_string(n.size()) + " names, but the mesh has " +
                  std::to_string(plain_mesh.ndim()) + " dims: give one name per mesh dim");
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (!n[i].is_string())
        throw type_error(message, "mesh_names[" + std::to_string(i) + "]", expected_type::string, n[i]);
      names.push_back(n[i].get_ref<const std::string&>());
    }
  }
  return {plain_mesh, names};
}

json attr_json(const ctspmd::tensor_dist_attr& a, const ctspmd::named_mesh& mesh, const layout_form& form) {
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

json to_json(const ctspmd::dist_attrs& attrs) { return to_json(attrs, ctspmd::named_mesh(), layout_form{}); }

json rule_answer(const json& request, attribute_naming naming) {
  const auto r = read_rule_request(request, naming);
  return r.answer(r.infer());
}

response handle(std::string_view line) {
  try {
    const json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (request.is_discarded()) return {error_response(error_kind::invalid_argument, "the line is not valid JSON"), false};
    if (request.is_object() && request.contains("plan")) return plan_response(request);
    if (request.is_object() && request.contains("model")) return plan_response(request);  // a plan's answer, or its error
    const auto r = read_rule_request(request, attribute_naming::dotted);
    const auto info = r.infer();
    if (r.form.language) return {dump(r.answer(info)), true};
    return {success_response(info), true};
  } catch (const spmd_error& e) {
    return {error_response(e.kind(), e.what()), false};
  } catch (const std::exception& e) {  // nlohmann's type errors and allocation failures
    return {error_response(error_kind::invalid_argument, e.what()), false};
  }
}

}  // namespace ctspmd_requests
