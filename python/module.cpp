// The Python module `ctspmd` (README.md, "Python module"): the runtime layer's rules by operator
// name, and whole plans, in ctspmd-infer's request schema. The arguments are converted to a JSON
// value, which the tool's one reader reads (the library ctspmd_requests, tools/requests/
// requests.hpp): a value of the wrong Python type is a TypeError (the reader's `type_error`, said
// in Python's words), a wrong value an `SpmdError` (a ValueError) with the error's kind.
#include "requests.hpp"

#include <pybind11/eval.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace py = pybind11;
namespace rt = ctspmd::runtime;
namespace req = ctspmd_requests;
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

/// `v` as UTF-8 (a str with lone surrogates raises UnicodeEncodeError).
std::string to_str(py::handle v, const std::string& what) {
  if (!PyUnicode_Check(v.ptr())) bad_type(what, "a str", v);
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(v.ptr(), &size);
  if (utf8 == nullptr) throw py::error_already_set();
  return {utf8, static_cast<std::size_t>(size)};
}

py::list int_list(const auto& values) {
  py::list out;
  for (auto v : values) out.append(v);
  return out;
}

py::object to_python(const rt::attribute& a) {
  if (const auto* list = std::get_if<std::vector<std::int64_t>>(&a)) return int_list(*list);
  return std::visit([](const auto& v) -> py::object { return py::cast(v); }, a);
}

/// A JSON value as Python's.
py::object to_python(const req::json& j) {
  using req::json;
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

/// How `to_json` treats what JSON does not say alike. A rule call's values keep a Python object
/// JSON cannot hold (`keep_foreign`), as a binary value naming its type (JSON text has none), for
/// the reader's type error to name; in its operands a dict entry set to None is absent
/// (`drop_none`). A plan's values are converted as they are: another object is a TypeError here.
struct conversion {
  bool keep_foreign = false;
  bool drop_none = false;
};
constexpr conversion rule_values{.keep_foreign = true}, rule_operands{.keep_foreign = true, .drop_none = true};

/// Values nested deeper are refused: the conversion recurses once per level.
constexpr int max_depth = 64;

/// `v` (dicts, lists and tuples, str, int, float, bool, None) as a JSON value, for the requests
/// the tool's reader reads; `what` names it in errors.
/// An integer as JSON text would give it to the reader: an int64, else an unsigned 64-bit
/// integer, else a double (as the tool's JSON parser reads a longer integer), so that the reader
/// answers an int outside int64 as it answers the tool.
req::json int_json(py::handle v, const std::string& what) {
  const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long i = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow == 0) {
    if (i == -1 && PyErr_Occurred() != nullptr) throw py::error_already_set();
    return static_cast<std::int64_t>(i);
  }
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(index.ptr());
    if (PyErr_Occurred() == nullptr) return static_cast<std::uint64_t>(u);
    PyErr_Clear();
  }
  const double d = PyLong_AsDouble(index.ptr());
  if (d == -1.0 && PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    bad_value(what + " is outside the 64-bit integer range");
  }
  return d;
}

req::json to_json(py::handle v, const std::string& what, conversion c = {}, int depth = 0) {
  using req::json;
  if (v.is_none()) return nullptr;
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyFloat_Check(v.ptr())) return v.cast<double>();
  if (PyUnicode_Check(v.ptr())) return to_str(v, what);
  if ((PyDict_Check(v.ptr()) || is_sequence(v)) && depth == max_depth)
    bad_value(what + " is nested more than " + std::to_string(max_depth) + " levels deep");
  if (PyDict_Check(v.ptr())) {
    json out = json::object();
    for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(v)) {
      const std::string name = to_str(key, "a key of " + what);
      if (c.drop_none && value.is_none()) continue;
      out[name] = to_json(value, what + "." + name, c, depth + 1);
    }
    return out;
  }
  if (is_sequence(v)) {
    json out = json::array();
    const auto seq = py::reinterpret_borrow<py::sequence>(v);
    for (std::size_t i = 0, n = py::len(seq); i < n; ++i)
      out.push_back(to_json(seq[i], what + "[" + std::to_string(i) + "]", c, depth + 1));
    return out;
  }
  if (PyIndex_Check(v.ptr()) != 0) return int_json(v, what);
  if (!c.keep_foreign) bad_type(what, "a dict, list, str, int, float, bool or None", v);
  const std::string_view type = Py_TYPE(v.ptr())->tp_name;
  return json::binary(json::binary_t::container_type(type.begin(), type.end()));
}

/// A type error of the reader in Python's words: "inputs[0].shape must be a list of ints, not str".
py::type_error python_type_error(const req::type_error& e) {
  using req::expected_type;
  using value_t = req::json::value_t;
  std::string expected;
  switch (e.expected) {
    case expected_type::integer: expected = "an int"; break;
    case expected_type::integer_list: expected = "a list of ints"; break;
    case expected_type::object: expected = "a dict"; break;
    case expected_type::operand_list: expected = "a list of operands (dicts)"; break;
    case expected_type::attribute: expected = "a bool, int, float, str or list of ints"; break;
    case expected_type::string: expected = "a str"; break;
    case expected_type::string_list: expected = "a list of str"; break;
  }
  std::string got = e.got_name;  // a binary value: the Python type it stands for
  switch (e.got) {
    case value_t::null: got = "NoneType"; break;
    case value_t::boolean: got = "bool"; break;
    case value_t::number_integer:
    case value_t::number_unsigned: got = "int"; break;
    case value_t::number_float: got = "float"; break;
    case value_t::string: got = "str"; break;
    case value_t::array: got = "list"; break;
    case value_t::object: got = "dict"; break;
    default: break;
  }
  return py::type_error(e.subject + " must be " + expected + ", not " + got);
}

/// A call by name, read by the tool's reader as a rule request: forward when `outputs` is null.
py::object infer(const std::string& op, py::handle mesh, py::handle inputs, py::handle outputs, py::handle attrs,
                 py::handle semantics, py::handle mesh_names) {
  req::json request = {{"op", op},
                       {"semantics", to_json(semantics, "semantics", rule_values)},
                       {"mesh", to_json(mesh, "mesh", rule_values)}};
  if (!mesh_names.is_none()) request["mesh_names"] = to_json(mesh_names, "mesh_names", rule_values);
  request["inputs"] = to_json(inputs, "inputs", rule_operands);
  if (outputs) {
    request["direction"] = "backward";
    request["outputs"] = to_json(outputs, "outputs", rule_operands);
  }
  if (PyDict_Check(attrs.ptr())) {  // named as Python names a dict's entries
    req::json& out = request["attrs"] = req::json::object();
    for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(attrs)) {
      const std::string name = to_str(key, "an attribute name");
      out[name] = to_json(value, "attrs['" + name + "']", rule_values);
    }
  } else if (!attrs.is_none()) {
    request["attrs"] = to_json(attrs, "attrs", rule_values);  // the reader's type error
  }
  try {
    return to_python(req::rule_answer(request, req::attribute_naming::subscript));
  } catch (const req::type_error& e) {
    throw python_type_error(e);
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
    } catch (const req::plan_error& e) {
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
        return infer(op, mesh, inputs, outputs, attrs, semantics, mesh_names);
      },
      py::arg("op"), py::arg("mesh"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs") = py::dict(),
      py::arg("semantics") = "fluid", py::arg("mesh_names") = py::none(), backward_doc.c_str());
  m.def(
      "verify_plan",
      [](py::handle plan, bool svg, py::handle simulate) {
        if (!PyDict_Check(plan.ptr())) bad_type("plan", "a dict", plan);
        // simulate: a dict, or anything Python's bool caster takes (numpy.bool_, None, ...)
        req::json sim;
        if (PyDict_Check(simulate.ptr())) {
          sim = to_json(simulate, "simulate");
        } else {
          try {
            sim = py::cast<bool>(simulate);
          } catch (const py::cast_error&) {
            bad_type("simulate", "True, False or a dict ({\"load_balanced_context\": True})", simulate);
          }
        }
        const req::json request = {{"plan", to_json(plan, "plan")}, {"svg", svg}, {"simulate", sim}};
        return to_python(req::verify_plan_request(request));
      },
      py::arg("plan"), py::arg("svg") = false, py::arg("simulate") = false,
      "verify_plan(plan, svg=False, simulate=False) -> dict\n\n"
      "Builds and propagates a whole plan, given as a dict of the structure of ctspmd-infer's plan requests (the "
      "value of {\"plan\": ...}: mesh, mesh_names, semantics, tensors, operators and repeated blocks, optional "
      "training and cluster; see ctspmd-infer --help and the README), and returns the tool's answer as a dict: "
      "every tensor's layout, the reshard report, totals per phase and collective, and with training or a cluster "
      "the step's cost; with svg=True also its picture, answer[\"svg\"], an SVG document (collectives by phase and mesh "
      "dim, memory by category, step time, or with a pipeline each stage's memory and time, the step time and the "
      "schedule; each bar's exact figure in data-bytes / data-count / data-seconds); with "
      "simulate=True, answer[\"simulation\"]: the plan (its training step) run on a simulated mesh with exactly its "
      "reshards and compared with one device (matches, max_relative_error, gradient_error, bytes_match, unnecessary, "
      "devices, collectives; see the README); simulate={\"load_balanced_context\": True} simulates a context-parallel "
      "sequence in the load-balanced order. A "
      "malformed or failing plan raises SpmdError, whose .details name the operator and operand.");
  // ctspmd.models: the model library's builders (<ctspmd/models/...>), from a Hugging Face config.
  py::module_ models = m.def_submodule("models", "Models built from their Hugging Face config.json.");
  // A config: a dict, or the path of a config.json (read with Python's json module).
  static const auto config_json = [](py::handle config) {
    if (PyDict_Check(config.ptr())) return to_json(config, "config");
    if (!PyUnicode_Check(config.ptr()) && !py::isinstance(config, py::module_::import("os").attr("PathLike")))
      bad_type("config", "a dict or the path of a config.json", config);
    const py::object file = py::module_::import("builtins").attr("open")(config);
    const py::object loaded = py::module_::import("json").attr("load")(file);
    file.attr("close")();
    if (!PyDict_Check(loaded.ptr())) bad_type("config (the file's JSON)", "an object", loaded);
    return to_json(loaded, "config");
  };
  models.def(
      "parameters", [](py::handle config) { return to_python(req::model_counts({{"config", config_json(config)}})); },
      py::arg("config"),
      "parameters(config) -> dict\n\n"
      "The model's counts from its config (a dict, or the path of a config.json): {'architecture', 'parameters', "
      "'active_parameters', 'vocab_padding'}, computed from the plan the model library builds.");
  models.def(
      "plan",
      [](py::handle config, py::handle mesh, py::handle mesh_names, py::handle layout, py::handle seq,
         py::handle micro_batch, py::handle capacity_factor) {
        req::json model = {{"config", config_json(config)}, {"mesh", to_json(mesh, "mesh")}};
        const std::pair<const char*, py::handle> optional[] = {{"mesh_names", mesh_names},
                                                                {"layout", layout},
                                                                {"seq", seq},
                                                                {"micro_batch", micro_batch},
                                                                {"capacity_factor", capacity_factor}};
        for (const auto& [key, value] : optional)
          if (!value.is_none()) model[key] = to_json(value, key);
        return to_python(req::model_plan(model));
      },
      py::arg("config"), py::arg("mesh"), py::arg("mesh_names") = py::none(), py::arg("layout") = py::none(),
      py::arg("seq") = py::none(), py::arg("micro_batch") = py::none(), py::arg("capacity_factor") = py::none(),
      "plan(config, mesh, mesh_names=None, layout=None, seq=None, micro_batch=None, capacity_factor=None) -> dict\n\n"
      "The model's forward plan, built by the model library from its config (a dict, or the path of a config.json) "
      "on a process mesh of shape `mesh`, with `layout` naming the mesh dim of each kind of parallelism ({'dp': "
      "'dp', 'tp': 'tp', 'sp': True, 'cp': ..., 'ep': ..., 'pp': ..., 'annotated': True}, by name or index): a dict "
      "for verify_plan, which may be edited first (its loss tensor is named 'loss': add "
      "plan['training'] = {'loss': 'loss', ...}).");
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
