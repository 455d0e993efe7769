// The Python module `ctspmd` (README.md, "Python module"): the runtime layer's rules by operator
// name, with operands written as ctspmd-infer's JSON requests write them. The operand-layout
// steps are shared with the tool (<ctspmd/runtime/operand_layout.hpp>); Python values are read
// here: a value of the wrong Python type is a TypeError, a wrong value an `SpmdError` (a
// ValueError) with the error's kind.
#include <ctspmd/interop.hpp>
#include <ctspmd/runtime.hpp>
#include <ctspmd/runtime/operand_layout.hpp>

#include "handler.hpp"  // ctspmd-infer's plan requests (verify_plan), read from a JSON value

#include <pybind11/eval.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace py = pybind11;
namespace rt = ctspmd::runtime;
using ctspmd::error_kind;
using ctspmd::spmd_error;

namespace {

[[noreturn]] void bad_value(const std::string& message) { throw spmd_error(error_kind::invalid_argument, message); }

[[noreturn]] void bad_type(const std::string& what, const std::string& expected, py::handle v) {
  throw py::type_error(what + " must be " + expected + ", not " + Py_TYPE(v.ptr())->tp_name);
}

/// A list, a tuple or another sequence that is not text.
bool is_sequence(py::handle v) {
  return PySequence_Check(v.ptr()) != 0 && !PyUnicode_Check(v.ptr()) && !PyBytes_Check(v.ptr()) &&
         !PyByteArray_Check(v.ptr());
}

/// `v` as an int64: a Python int or another integer (`__index__`: numpy's), not a bool.
std::int64_t to_int(py::handle v, const std::string& what) {
  if (PyBool_Check(v.ptr()) || PyIndex_Check(v.ptr()) == 0) bad_type(what, "an int", v);
  const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long i = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) bad_value(what + " is outside the 64-bit integer range");
  if (i == -1 && PyErr_Occurred() != nullptr) throw py::error_already_set();
  return i;
}

/// `v` as UTF-8 (a str with lone surrogates raises UnicodeEncodeError).
std::string to_str(py::handle v, const std::string& what) {
  if (!PyUnicode_Check(v.ptr())) bad_type(what, "a str", v);
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(v.ptr(), &size);
  if (utf8 == nullptr) throw py::error_already_set();
  return {utf8, static_cast<std::size_t>(size)};
}

/// `v` as an int list of at most `List::capacity()` entries (`capacity_name`).
template <class List>
List to_list(py::handle v, const std::string& what, std::string_view capacity_name) {
  if (!is_sequence(v)) bad_type(what, "a list of ints", v);
  const auto seq = py::reinterpret_borrow<py::sequence>(v);
  const std::size_t n = py::len(seq);  // read once: a sequence's length may change
  if (n > List::capacity())
    bad_value(what + " has " + std::to_string(n) + " entries, above " + std::string(capacity_name) + " = " +
              std::to_string(List::capacity()));
  List out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(to_int(seq[i], what + "[" + std::to_string(i) + "]"));
  return out;
}

/// An attribute value: bool, int, float, str or a list of ints.
rt::attribute to_attribute(py::handle v, const std::string& what) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyFloat_Check(v.ptr())) return v.cast<double>();
  if (PyUnicode_Check(v.ptr())) return to_str(v, what);
  if (!is_sequence(v)) {  // (a numpy array is a sequence, and has __index__ too)
    if (PyIndex_Check(v.ptr()) != 0) return to_int(v, what);
    bad_type(what, "a bool, int, float, str or list of ints", v);
  }
  std::vector<std::int64_t> list;
  const auto seq = py::reinterpret_borrow<py::sequence>(v);
  for (std::size_t i = 0, n = py::len(seq); i < n; ++i)
    list.push_back(to_int(seq[i], what + "[" + std::to_string(i) + "]"));
  return list;
}

/// A nested dims mapping: per tensor dim, the list of its mesh dims, major first.
ctspmd::multi_dims_mapping to_multi(const py::sequence& v, const std::string& what) {
  const std::string field = what + ".dims_mapping";
  const std::size_t n = py::len(v);  // read once: a sequence's length may change
  if (n > ctspmd::max_rank)
    bad_value(field + " has " + std::to_string(n) + " entries, above max_rank = " + std::to_string(ctspmd::max_rank));
  ctspmd::multi_dims_mapping out;
  for (std::size_t d = 0; d < n; ++d) {
    if (!is_sequence(v[d]))
      bad_value(field + " mixes lists and integers: nested, every entry is a list of mesh dims ([[0, 1], []])");
    out.push_back(to_list<ctspmd::mesh_dims>(v[d], field + "[" + std::to_string(d) + "]", "max_mesh_ndim"));
  }
  return out;
}

constexpr std::string_view operand_fields[] = {"shape", "dims_mapping", "placements",    "partition_spec",
                                               "sdy",   "partial",      "partial_reduce"};

/// The partial status fields of operand `what` (a missing field is null) into `attr`.
void read_partial(py::handle partial, py::handle reduce, const std::string& what, ctspmd::tensor_dist_attr& attr) {
  if (!partial) {
    if (reduce) bad_value(what + " has \"partial_reduce\" but no \"partial\"");
    return;
  }
  const auto dims = to_list<ctspmd::mesh_dims>(partial, what + ".partial", "max_mesh_ndim");
  std::vector<ctspmd::reduce_type> types(dims.size(), ctspmd::reduce_type::sum);
  if (reduce) {
    if (!is_sequence(reduce)) bad_type(what + ".partial_reduce", "a list of str", reduce);
    const auto seq = py::reinterpret_borrow<py::sequence>(reduce);
    if (py::len(seq) != dims.size()) bad_value(what + ".partial_reduce must have one reduce type per partial dim");
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const std::string name = what + ".partial_reduce[" + std::to_string(i) + "]";
      if (!rt::parse_reduce_type(to_str(seq[i], name), types[i]))
        bad_value(name + " must be one of sum, max, min, prod, avg, any, all");
    }
  }
  for (std::size_t i = 0; i < dims.size(); ++i) attr.set_partial_status({dims[i]}, types[i]);
}

/// One operand: a dict {"shape": [...], "dims_mapping" | "placements" | "partition_spec" |
/// "sdy": ..., "partial": [...], "partial_reduce": [...]}; a field set to None is absent.
ctspmd::dist_tensor_spec to_spec(py::handle v, const std::string& what, const ctspmd::named_mesh& mesh,
                                 rt::layout_form& form) {
  if (!PyDict_Check(v.ptr())) bad_type(what, "a dict", v);
  const auto dict = py::reinterpret_borrow<py::dict>(v);
  for (const auto& item : dict) {
    const std::string key = to_str(item.first, "a key of " + what);
    bool known = false;
    for (auto f : operand_fields) known = known || f == key;
    if (known) continue;
    std::string list;
    for (auto f : operand_fields) list += (list.empty() ? "" : ", ") + std::string(f);
    bad_value("unknown field '" + key + "' in " + what + "; accepted: " + list);
  }
  const auto field = [&dict](std::string_view key) -> py::handle {
    PyObject* value = PyDict_GetItemString(dict.ptr(), std::string(key).c_str());  // borrowed
    return value == Py_None ? nullptr : value;
  };
  return rt::naming_operand(what, [&]() -> ctspmd::dist_tensor_spec {
    const py::handle shape_field = field("shape");
    if (!shape_field) bad_value(what + " has no \"shape\"");
    const auto shape = to_list<ctspmd::tensor_shape>(shape_field, what + ".shape", "max_rank");
    const auto key = rt::layout_key([&](std::string_view k) { return static_cast<bool>(field(k)); }, what);
    if (key) form.use(*key, what);
    ctspmd::tensor_dist_attr attr(mesh);
    if (!key) {
      attr.set_dims_mapping(ctspmd::dims_mapping(shape.size(), -1));
    } else if (*key == 0) {
      const py::handle mapping = field("dims_mapping");
      const auto seq = py::reinterpret_borrow<py::sequence>(mapping);
      if (is_sequence(mapping) && py::len(seq) != 0 && is_sequence(seq[0]))  // nested: [[0, 1], []]
        attr.set_dims_mapping(to_multi(seq, what));
      else
        attr.set_dims_mapping(to_list<ctspmd::dims_mapping>(mapping, what + ".dims_mapping", "max_rank"));
    } else {
      const std::string name(rt::layout_keys[*key]);
      const std::string text = to_str(field(name), what + "." + name + " (the language's own text)");
      attr = rt::attr_from_text(*rt::language_of_key(*key), text, shape.size(), mesh,
                                field("partial") || field("partial_reduce"), form, what);
    }
    read_partial(field("partial"), field("partial_reduce"), what, attr);
    return {shape, attr};
  });
}

using specs = ctspmd::static_vector<ctspmd::dist_tensor_spec, ctspmd::max_operands>;

specs to_specs(py::handle v, const std::string& what, const ctspmd::named_mesh& mesh, rt::layout_form& form) {
  if (!is_sequence(v)) bad_type(what, "a list of operands (dicts)", v);
  const auto seq = py::reinterpret_borrow<py::sequence>(v);
  const std::size_t n = py::len(seq);  // read once: a sequence's length may change
  if (n > ctspmd::max_operands)
    bad_value(what + " has " + std::to_string(n) +
              " operands, above max_operands = " + std::to_string(ctspmd::max_operands));
  specs out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(to_spec(seq[i], what + "[" + std::to_string(i) + "]", mesh, form));
  return out;
}

py::list int_list(const auto& values) {
  py::list out;
  for (auto v : values) out.append(v);
  return out;
}

/// `attrs` in the request's form: as the JSON tool answers (see its --help).
py::list answer(const ctspmd::dist_attrs& attrs, const ctspmd::named_mesh& mesh, const rt::layout_form& form) {
  py::list out;
  for (const auto& a : attrs) {
    py::dict o;
    if (form.language) {
      const auto text = rt::to_text_answer(a, mesh, form);
      o[py::str(std::string(ctspmd::to_string(*form.language)))] = py::str(text.text.data(), text.text.size());
      if (!text.partial_beside) {
        out.append(o);
        continue;
      }
    } else if (a.is_co_sharded()) {
      py::list mapping;
      for (std::size_t d = 0; d < a.rank(); ++d) mapping.append(int_list(a.mesh_dims_of(d)));
      o["dims_mapping"] = mapping;
    } else {
      o["dims_mapping"] = int_list(a.dims_mapping());
    }
    py::list reduce;
    for (auto m : a.partial_dims()) reduce.append(std::string(ctspmd::to_string(a.partial_reduce_type(m))));
    o["partial"] = int_list(a.partial_dims());
    o["partial_reduce"] = reduce;
    out.append(o);
  }
  return out;
}

/// A call by name: forward when `outputs` is null.
py::dict infer(const std::string& op, py::handle mesh_arg, py::handle inputs_arg, py::handle outputs_arg,
               py::handle attrs_arg, py::handle semantics_arg, py::handle names_arg) {
  const std::string semantics_name = to_str(semantics_arg, "semantics");
  if (semantics_name != "fluid" && semantics_name != "phi")
    bad_value("\"semantics\" must be \"fluid\" or \"phi\", not \"" + semantics_name + "\"");
  const auto semantics = semantics_name == "phi" ? ctspmd::semantics::phi : ctspmd::semantics::fluid;
  const ctspmd::process_mesh plain_mesh(to_list<ctspmd::tensor_shape>(mesh_arg, "mesh", "max_rank"));
  std::vector<std::string> name_storage;  // what the mesh's names view
  if (!names_arg.is_none()) {
    if (!is_sequence(names_arg)) bad_type("mesh_names", "a list of str", names_arg);
    const auto seq = py::reinterpret_borrow<py::sequence>(names_arg);
    if (py::len(seq) != static_cast<std::size_t>(plain_mesh.ndim()))
      bad_value("mesh_names has " + std::to_string(py::len(seq)) + " names, but the mesh has " +
                std::to_string(plain_mesh.ndim()) + " dims: give one name per mesh dim");
    for (std::size_t i = 0; i < static_cast<std::size_t>(plain_mesh.ndim()); ++i)
      name_storage.push_back(to_str(seq[i], "mesh_names[" + std::to_string(i) + "]"));
  }
  ctspmd::mesh_names names;
  for (const auto& n : name_storage) names.push_back(n);
  const ctspmd::named_mesh mesh(plain_mesh, names);
  rt::layout_form form;
  const auto inputs = to_specs(inputs_arg, "inputs", mesh, form);
  const auto outputs = outputs_arg ? to_specs(outputs_arg, "outputs", mesh, form) : specs{};
  rt::attribute_map attrs;
  if (!attrs_arg.is_none()) {
    if (!PyDict_Check(attrs_arg.ptr())) bad_type("attrs", "a dict", attrs_arg);
    for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(attrs_arg)) {
      const std::string name = to_str(key, "an attribute name");
      attrs[name] = to_attribute(value, "attrs['" + name + "']");
    }
  }
  const auto info = outputs_arg ? rt::infer_backward(op, inputs, outputs, attrs, semantics)
                                : rt::infer_forward(op, inputs, attrs, semantics);
  py::dict out;
  out["inputs"] = answer(info.inputs, mesh, form);
  out["outputs"] = answer(info.outputs, mesh, form);
  return out;
}

py::object to_python(const rt::attribute& a) {
  if (const auto* list = std::get_if<std::vector<std::int64_t>>(&a)) return int_list(*list);
  return std::visit([](const auto& v) -> py::object { return py::cast(v); }, a);
}

/// `v` (dicts, lists and tuples, str, int, float, bool, None) as a JSON value, for the plan
/// requests the tool reads; `what` names it in errors.
ctspmd_infer::json to_json(py::handle v, const std::string& what) {
  using ctspmd_infer::json;
  if (v.is_none()) return nullptr;
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyFloat_Check(v.ptr())) return v.cast<double>();
  if (PyUnicode_Check(v.ptr())) return to_str(v, what);
  if (PyDict_Check(v.ptr())) {
    json out = json::object();
    for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(v)) {
      const std::string name = to_str(key, "a key of " + what);
      out[name] = to_json(value, what + "." + name);
    }
    return out;
  }
  if (is_sequence(v)) {
    json out = json::array();
    const auto seq = py::reinterpret_borrow<py::sequence>(v);
    for (std::size_t i = 0, n = py::len(seq); i < n; ++i) out.push_back(to_json(seq[i], what + "[" + std::to_string(i) + "]"));
    return out;
  }
  if (PyIndex_Check(v.ptr()) != 0) return to_int(v, what);
  bad_type(what, "a dict, list, str, int, float, bool or None", v);
}

/// A JSON value as Python's.
py::object to_python(const ctspmd_infer::json& j) {
  using ctspmd_infer::json;
  switch (j.type()) {
    case json::value_t::null: return py::none();
    case json::value_t::boolean: return py::bool_(j.get<bool>());
    case json::value_t::number_integer: return py::int_(j.get<std::int64_t>());
    case json::value_t::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case json::value_t::number_float: return py::float_(j.get<double>());
    case json::value_t::string: return py::str(j.get_ref<const std::string&>());
    case json::value_t::array: {
      py::list out;
      for (const auto& e : j) out.append(to_python(e));
      return out;
    }
    default: {
      py::dict out;
      for (const auto& [key, value] : j.items()) out[py::str(key)] = to_python(value);
      return out;
    }
  }
}

constexpr const char* spmd_error_source = R"py(
class SpmdError(ValueError):
    """A rule refused its operands or attributes, or an operator is unknown.

    kind: "invalid_argument", "unimplemented", "precondition_not_met", "not_found" or
    "already_exists" (the C++ library's error_kind); str(e) and message: what is wrong;
    details: for verify_plan, where in the plan (as ctspmd-infer's error says it), else {}.
    """

    def __init__(self, message, kind="invalid_argument", details=None):
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.details = details if details is not None else {}

    def __reduce__(self):
        return (type(self), (self.message, self.kind, self.details))
)py";

constexpr const char* operand_doc = R"doc(
Each operand is a dict: "shape" (sizes, -1 when unknown) and at most one layout, the same form
for every operand of a call:
  "dims_mapping": [1, -1]                  mesh dim per tensor dim, -1 replicated (default all -1);
                  [[0, 1], []]             or per tensor dim its mesh dims, major first (co-shard)
  "placements": "[Shard(0), Replicate()]"  PyTorch DTensor placements, one per mesh dim
  "partition_spec": "P('dp', None)"        JAX PartitionSpec over mesh_names
  "sdy": '#sdy.sharding<@mesh, [{"dp"}, {}]>'  OpenXLA Shardy over mesh_names
and optionally "partial": [mesh dims] with "partial_reduce": ["sum", ...] (not with placements,
which say Partial() themselves). A field set to None is absent.

Returns {"inputs": [...], "outputs": [...]}, every operand in the call's form:
{"dims_mapping": [...], "partial": [...], "partial_reduce": [...]}, {"placements": text},
{"partition_spec": text, "partial": [...], "partial_reduce": [...]} or {"sdy": text} (with the
partial lists beside it when a partial dim is not a sum). attrs: name -> bool, int, float, str or
list of ints. semantics: "fluid" (Paddle's 2023 rules) or "phi" (2025: co-shard merges).
Raises SpmdError (a ValueError, with .kind) for what the rule refuses, TypeError for values of
the wrong Python type.)doc";

}  // namespace

PYBIND11_MODULE(ctspmd, m) {
  m.doc() = "SPMD sharding-propagation rules (PaddlePaddle's, run by ctspmd's C++ library) by operator name.";
  m.attr("__version__") = CTSPMD_VERSION;
  py::options options;
  options.disable_function_signatures();  // each docstring starts with the signature, in Python's words

  py::exec(spmd_error_source, m.attr("__dict__"));
  // The class, referred to from now on by the translator, lives as long as Python does.
  static const py::handle spmd_error_type = m.attr("SpmdError").cast<py::object>().release();
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ctspmd_infer::plan_error& e) {
      const py::object error = spmd_error_type(e.what(), std::string(ctspmd::to_string(e.kind())), to_python(e.details));
      PyErr_SetObject(spmd_error_type.ptr(), error.ptr());
    } catch (const spmd_error& e) {
      const py::object error = spmd_error_type(e.what(), std::string(ctspmd::to_string(e.kind())));
      PyErr_SetObject(spmd_error_type.ptr(), error.ptr());
    }
  });

  // pybind11 keeps the docstrings' pointers: they live as long as the module.
  static const std::string forward_doc =
      std::string(
          "infer_forward(op, mesh, inputs, attrs={}, semantics='fluid', mesh_names=None) -> dict\n\n"
          "Forward inference of operator `op` on a process mesh of shape `mesh`: the inputs as the operator "
          "needs them (a difference from what was given is a reshard) and the outputs.\n") +
      operand_doc;
  static const std::string backward_doc =
      std::string(
          "infer_backward(op, mesh, inputs, outputs, attrs={}, semantics='fluid', mesh_names=None) -> dict\n\n"
          "Backward inference of operator `op`: the inputs (of the given shapes) that the outputs' wanted "
          "layouts require, and the outputs.\n") +
      operand_doc;
  m.def(
      "infer_forward",
      [](const std::string& op, py::handle mesh, py::handle inputs, py::handle attrs, py::handle semantics,
         py::handle mesh_names) { return infer(op, mesh, inputs, nullptr, attrs, semantics, mesh_names); },
      py::arg("op"), py::arg("mesh"), py::arg("inputs"), py::arg("attrs") = py::dict(), py::arg("semantics") = "fluid",
      py::arg("mesh_names") = py::none(), forward_doc.c_str());
  m.def(
      "infer_backward",
      [](const std::string& op, py::handle mesh, py::handle inputs, py::handle outputs, py::handle attrs,
         py::handle semantics, py::handle mesh_names) {
        if (outputs.is_none()) bad_type("outputs", "a list of operands (dicts)", outputs);
        return infer(op, mesh, inputs, outputs, attrs, semantics, mesh_names);
      },
      py::arg("op"), py::arg("mesh"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs") = py::dict(),
      py::arg("semantics") = "fluid", py::arg("mesh_names") = py::none(), backward_doc.c_str());
  m.def(
      "verify_plan",
      [](py::handle plan, bool svg) {
        if (!PyDict_Check(plan.ptr())) bad_type("plan", "a dict", plan);
        const ctspmd_infer::json request = {{"plan", to_json(plan, "plan")}, {"svg", svg}};
        return to_python(ctspmd_infer::verify_plan_request(request));
      },
      py::arg("plan"), py::arg("svg") = false,
      "verify_plan(plan, svg=False) -> dict\n\n"
      "Builds and propagates a whole plan, given as a dict of the structure of ctspmd-infer's plan requests (the "
      "value of {\"plan\": ...}: mesh, mesh_names, semantics, tensors, operators and repeated blocks, optional "
      "training and cluster; see ctspmd-infer --help and the README), and returns the tool's answer as a dict: "
      "every tensor's layout, the reshard report, totals per phase and collective, and with training or a cluster "
      "the step's cost; with svg=True also its picture, answer[\"svg\"], an SVG document (collectives by phase and mesh "
      "dim, memory by category, step time; each bar's exact figure in data-bytes / data-count / data-seconds). A "
      "malformed or failing plan raises SpmdError, whose .details name the operator and operand.");
  m.def(
      "has_rule", [](const std::string& op) { return rt::has_rule(op); }, py::arg("op"),
      "has_rule(op) -> bool\n\nTrue if a rule is registered under operator name `op`.");
  m.def(
      "rules",
      [] {
        py::dict out;
        for (const auto& e : rt::rule_table) {
          py::dict attrs;
          for (const auto& a : e.attributes()) {
            py::dict info;
            info["type"] = std::string(a.type);
            info["default"] = to_python(a.default_value);
            info["alias"] = a.alias.empty() ? py::object(py::none()) : py::str(std::string(a.alias));
            attrs[py::str(std::string(a.name))] = info;
          }
          out[py::str(std::string(e.name))] = attrs;
        }
        return out;
      },
      "rules() -> dict\n\nEvery operator name with its attributes: {op: {attribute: {\"type\": ..., \"default\": ..., "
      "\"alias\": its second name or None}}}.");
}
