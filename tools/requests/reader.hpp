#ifndef CTSPMD_TOOLS_REQUESTS_READER_HPP
#define CTSPMD_TOOLS_REQUESTS_READER_HPP
// The readers of the request schema's values (integers, lists, attributes, operands, the mesh),
// shared by rule requests (rule_request.cpp) and plan requests (plan_request.cpp); internal to
// the library ctspmd_requests. A value of the wrong JSON type is a `type_error`, a wrong value
// an `invalid_argument`; `what` names the value in messages.

#include "requests.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

namespace ctspmd_requests {

using ctspmd::runtime::layout_form;
using ctspmd::runtime::layout_keys;

/// A bad request: reported as an `invalid_argument` error response.
[[noreturn]] inline void bad_request(const std::string& message) {
  throw spmd_error(error_kind::invalid_argument, message);
}

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
  if (!object.is_object())
    throw type_error(std::string(what) + " must be an object", std::string(what), expected_type::object, object);
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

/// An integer beyond int64: an unsigned one above its largest, or a whole number written as a
/// float (JSON's parser reads a longer integer so) outside [-2^63, 2^63).
inline bool beyond_int64(const json& v) {
  if (v.is_number_unsigned()) return !is_int64(v);
  if (!v.is_number_float()) return false;
  const double d = v.get<double>(), limit = 9223372036854775808.0;  // 2^63
  return std::isfinite(d) && std::trunc(d) == d && (d >= limit || d < -limit);
}

/// `v` as an int64: an integer outside int64 is a wrong value, anything else a wrong type.
inline std::int64_t to_int(const json& v, const std::string& what) {
  if (is_int64(v)) return v.get<std::int64_t>();
  if (beyond_int64(v)) bad_request(what + " is outside the 64-bit integer range");
  throw type_error(what + " must be an integer, not " + shown(v), what, expected_type::integer, v);
}

/// `v` as an int list of at most `capacity` entries; `what` + `field` names it in errors.
/// (Names are built only for an error message: building them for every value was a good part
/// of a request's cost.)
template <class List>
List to_list(const json& v, const std::string& what, std::string_view field, std::string_view capacity_name) {
  if (!v.is_array()) {
    const std::string name = what + std::string(field);
    throw type_error(name + " must be an array of integers", name, expected_type::integer_list, v);
  }
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

/// An attribute value: bool, integer, number, string or array of integers.
ctspmd::runtime::attribute to_attribute(const json& v, const std::string& what);

/// The attribute map `v` (an object, named `what`) gives; `naming` names its entries.
ctspmd::runtime::attribute_map read_attrs(const json& v, const std::string& what,
                                          attribute_naming naming = attribute_naming::dotted);

/// The layout operand `v` (of rank `rank`) gives in its "dims_mapping", "placements",
/// "partition_spec" or "sdy" field and its partial status fields; replicated if it gives none.
ctspmd::tensor_dist_attr read_layout(const json& v, const std::string& what, std::size_t rank,
                                     const ctspmd::named_mesh& mesh, layout_form& form);

/// Operands, held inline (no allocation).
using specs = ctspmd::static_vector<ctspmd::dist_tensor_spec, ctspmd::max_operands>;

/// The operands `v` (an array, named `what`) gives: {"shape": [...], "dims_mapping" |
/// "placements" | "partition_spec" | "sdy": ..., "partial": [...], "partial_reduce": [...]} each.
specs to_specs(const json& v, const std::string& what, const ctspmd::named_mesh& mesh, layout_form& form);

/// The request's "semantics": fluid (the default) or phi.
ctspmd::semantics read_semantics(const json& request);

/// The request's "mesh", with its "mesh_names" if given (views of the request's strings).
ctspmd::named_mesh read_mesh(const json& request);

/// The response to a plan request, {"plan": {...}}, or a model request, {"model": {...}}
/// (plan_request.cpp).
response plan_response(const json& request);

}  // namespace ctspmd_requests

#endif
