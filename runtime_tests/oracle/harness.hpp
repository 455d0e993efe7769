#ifndef CTSPMD_RUNTIME_TESTS_ORACLE_HARNESS_HPP
#define CTSPMD_RUNTIME_TESTS_ORACLE_HARNESS_HPP
// Case generation and checking shared by the oracle's tests.
//
// A case is a rule, its attributes, operands with shapes and dist attributes on a mesh, the
// unsharded input values, the reference outputs and a kernel (mesh_sim.hpp).
// - Forward: the rule's forward answer F is simulated (inputs laid out as F.inputs require,
//   outputs reassembled as F.outputs say) and must reproduce the reference outputs.
// - Backward: from output attributes generated like forward's inputs, the rule's backward
//   answer B must (1) keep or drop each given output sharding, never invent one (with several
//   outputs, one may take a sharding another output was given: they are merged); (2) be
//   consistent: forward from B.inputs needs no reshard (F.inputs == B.inputs) and gives
//   outputs with B.outputs' dims mappings; (3) that forward answer is simulated too.
//
// Layouts are generated per operand and mesh dim (shard one tensor dim, partial with a
// reduce type, or neither): all valid combinations when there are few, otherwise a sample
// drawn with a fixed seed. Two mesh dims sharding one tensor dim make a co-shard, in either
// order. Sizes are chosen after the layouts, per axis label: a label sharded anywhere gets a
// multiple of every shard count that splits it, so every shard the generator proposes is even
// (DESIGN.md: "split evenly"); the rules must not turn that into an uneven shard, and the
// simulator fails a case that needs one.
//
// Every case is checked under both semantics, fluid and phi.

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <ctspmd/ctspmd.hpp>

#include <doctest/doctest.h>

#include "mesh_sim.hpp"
#include "ops.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle {

using ctspmd::dist_tensor_spec;
using specs = std::vector<dist_tensor_spec>;

/// The meshes every rule is checked on: 1 to 3 dims of sizes 2 to 4 (3 and 4 never on one
/// mesh, so a label sharded by two mesh dims in two operands needs a size of at most 8).
inline const std::vector<shape_t>& meshes() {
  static const std::vector<shape_t> m = {{2}, {3}, {4}, {2, 2}, {2, 3}, {4, 2}, {2, 2, 2}, {2, 3, 2}, {4, 2, 2}};
  return m;
}

inline ctspmd::process_mesh make_mesh(const shape_t& s) {
  ctspmd::tensor_shape t;
  for (auto v : s) t.push_back(v);
  return ctspmd::process_mesh(t);
}
inline ctspmd::tensor_shape to_tshape(const shape_t& s) {
  ctspmd::tensor_shape t;
  for (auto v : s) t.push_back(v);
  return t;
}

/// Every reduce type.
inline const std::vector<reduce_type> all_reduce_types = {reduce_type::sum, reduce_type::avg, reduce_type::max,
                                                          reduce_type::min, reduce_type::prod, reduce_type::any,
                                                          reduce_type::all};

/// One operand's layout: per dim its mesh dims (major first), and its partial status.
struct layout {
  ctspmd::multi_dims_mapping dm;
  std::vector<std::pair<std::int64_t, reduce_type>> partial;
};

/// The shard count of a list of mesh dims on `mesh`.
inline std::int64_t shards_of(const ctspmd::process_mesh& mesh, const ctspmd::mesh_dims& list) {
  std::int64_t n = 1;
  for (auto m : list) n *= mesh.dim_size(m);
  return n;
}

inline ctspmd::tensor_dist_attr make_attr(const ctspmd::process_mesh& mesh, const layout& l) {
  ctspmd::tensor_dist_attr a(mesh, l.dm);
  for (const auto& [m, r] : l.partial) a.set_partial_status({m}, r);
  return a;
}
inline layout replicated_layout(std::size_t rank) { return {ctspmd::multi_dims_mapping(rank, ctspmd::mesh_dims{}), {}}; }

/// Layout tuples for operands of `ranks` on a mesh of `mesh_ndim` dims: for each operand,
/// each mesh dim shards one tensor dim (several mesh dims on one tensor dim are a co-shard, its
/// list in ascending or, at random, descending order), is partial (a type drawn from
/// `partial_types`; never when empty), or neither (any / all are not mixed with the others on
/// one operand). Every tuple when there are at most `budget` encodings, otherwise `budget`
/// tuples drawn at random.
inline std::vector<std::vector<layout>> layouts(std::int64_t mesh_ndim, const std::vector<std::size_t>& ranks,
                                                const std::vector<reduce_type>& partial_types, std::size_t budget,
                                                rng& g) {
  const std::size_t k = to_size(mesh_ndim);
  const std::uint64_t extra = partial_types.empty() ? 1 : 2;  // none (and partial)
  std::uint64_t total = 1;
  for (auto r : ranks)
    for (std::size_t m = 0; m < k; ++m) total *= r + extra;
  // Decodes `code` (mixed radix, per operand per mesh dim).
  auto decode = [&](std::uint64_t code) -> std::optional<std::vector<layout>> {
    std::vector<layout> out;
    for (auto r : ranks) {
      layout l = replicated_layout(r);
      for (std::size_t m = 0; m < k; ++m) {
        const std::uint64_t opt = code % (r + extra);
        code /= r + extra;
        if (opt == 0) continue;
        if (opt <= r) {
          l.dm[static_cast<std::size_t>(opt - 1)].push_back(to_int(m));
        } else {
          l.partial.emplace_back(to_int(m), g.pick(partial_types));
        }
      }
      for (auto& list : l.dm)
        if (list.size() > 1 && g.coin()) std::reverse(list.begin(), list.end());
      // A tensor partial with any / all holds booleans: its other partial dims are any / all too.
      for (const auto& p : l.partial)
        if (p.second == reduce_type::any || p.second == reduce_type::all)
          for (auto& q : l.partial)
            if (q.second != reduce_type::any && q.second != reduce_type::all) q.second = p.second;
      out.push_back(std::move(l));
    }
    return out;
  };
  std::vector<std::vector<layout>> result;
  if (total <= budget) {
    for (std::uint64_t c = 0; c < total; ++c)
      if (auto l = decode(c)) result.push_back(std::move(*l));
    return result;
  }
  for (std::size_t tries = 0; result.size() < budget && tries < 50 * budget; ++tries)
    if (auto l = decode(g.next() % total)) result.push_back(std::move(*l));
  return result;
}

/// Per axis label of `labels` (labels[i][d] names operand i's dim d), the least common
/// multiple of the shard counts that split it in the first ls.size() operands, whose layouts
/// `ls` are (1 for a label none of them shards).
inline std::map<char, std::int64_t> label_lcm(const ctspmd::process_mesh& mesh, const std::vector<std::string>& labels,
                                              const std::vector<layout>& ls) {
  std::map<char, std::int64_t> out;
  for (std::size_t i = 0; i < labels.size(); ++i)
    for (std::size_t d = 0; d < labels[i].size(); ++d) {
      auto& v = out.try_emplace(labels[i][d], 1).first->second;
      if (i < ls.size()) v = std::lcm(v, shards_of(mesh, ls[i].dm[d]));
    }
  return out;
}

/// A size for a label whose shards need a multiple of `lcm`: lcm or 2 lcm (at most 8 when
/// possible); an unsharded label (lcm 1) gets 2 to 5, or 1 now and then when `allow_one`.
inline std::int64_t pick_size(std::int64_t lcm, rng& g, bool allow_one = true) {
  if (lcm > 1) return lcm * 2 <= 8 && g.coin() ? lcm * 2 : lcm;
  if (allow_one && g.one_in(6)) return 1;
  return g.uniform(2, 5);
}

/// A size for every label of `labels`, a multiple of its lcm (see `label_lcm`).
inline std::map<char, std::int64_t> label_sizes(const ctspmd::process_mesh& mesh, const std::vector<std::string>& labels,
                                                const std::vector<layout>& ls, rng& g, bool allow_one = true) {
  auto sizes = label_lcm(mesh, labels, ls);
  for (auto& [c, s] : sizes) s = pick_size(s, g, allow_one);
  return sizes;
}

/// Integer values in [0, n) (indices), as doubles.
inline tensor random_indices(const shape_t& s, std::int64_t n, rng& g) {
  tensor t(s);
  for (auto& v : t.data) v = static_cast<double>(g.uniform(0, n - 1));
  return t;
}

/// `sizes[e]` made at least `k` (a multiple of itself, so still divisible by its shards).
inline void at_least(std::map<char, std::int64_t>& sizes, char e, std::int64_t k) {
  const auto n = sizes.at(e);
  sizes[e] = n * ((k + n - 1) / n);
}

inline shape_t shape_of(const std::string& labels, const std::map<char, std::int64_t>& sizes) {
  shape_t s;
  for (char c : labels) s.push_back(c == '1' ? 1 : sizes.at(c));
  return s;
}

inline specs make_specs(const ctspmd::process_mesh& mesh, const std::vector<shape_t>& shapes,
                        const std::vector<layout>& ls) {
  specs out;
  for (std::size_t i = 0; i < shapes.size(); ++i) out.emplace_back(to_tshape(shapes[i]), make_attr(mesh, ls[i]));
  return out;
}
/// Replicated specs of `shapes` (backward ignores the inputs' own layouts).
inline specs replicated_specs(const ctspmd::process_mesh& mesh, const std::vector<shape_t>& shapes) {
  std::vector<layout> ls;
  for (const auto& s : shapes) ls.push_back(replicated_layout(s.size()));
  return make_specs(mesh, shapes, ls);
}

/// `l` with its sharded dims made replicated where `shape` does not divide evenly.
inline layout even_only(layout l, const shape_t& shape, const ctspmd::process_mesh& mesh) {
  for (std::size_t d = 0; d < l.dm.size(); ++d)
    if (shape[d] % shards_of(mesh, l.dm[d]) != 0) l.dm[d].clear();
  return l;
}

/// Random values for an operand laid out as `l`: 0/1 when it is partial with any / all (such
/// a tensor holds booleans), uniform in [-2, 2) otherwise.
inline tensor values_for(const shape_t& s, const layout& l, rng& g) {
  for (const auto& p : l.partial)
    if (p.second == reduce_type::any || p.second == reduce_type::all) {
      tensor t(s);
      for (auto& v : t.data) v = g.coin() ? 1.0 : 0.0;
      return t;
    }
  return random_tensor(s, g);
}

inline std::string describe(std::span<const dist_tensor_spec> s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i)
    out += (i ? "; " : "") + ctspmd::to_string(s[i].shape()) + " " + ctspmd::to_string(s[i].dist_attr());
  return out;
}
inline std::string describe(const ctspmd::dist_attrs& a) {
  std::string out;
  for (std::size_t i = 0; i < a.size(); ++i) out += (i ? "; " : "") + ctspmd::to_string(a[i]);
  return out;
}
inline std::string describe(const ctspmd::spmd_info& info) {
  return "inputs {" + describe(info.inputs) + "} outputs {" + describe(info.outputs) + "}";
}
inline std::string mesh_string(const ctspmd::process_mesh& m) {
  shape_t s(m.shape().begin(), m.shape().end());
  return "mesh " + shape_string(s);
}

/// Counts and failures of one rule's cases.
struct rule_stats {
  std::string name;
  std::size_t forward = 0, forward_rejected = 0, backward = 0, backward_rejected = 0, failed = 0;
  std::size_t partial_inputs = 0, partial_outputs = 0;  ///< forward cases that simulate partial tensors
  std::size_t phi = 0, co_sharded = 0;  ///< forward cases under phi, and with a co-shard in the answer
  std::size_t as_given = 0;  ///< backward cases whose outputs come back with the given dims mappings
  std::vector<std::string> failures;
  std::map<std::string, std::size_t> rejections;  ///< why the rule refused proposals: count per message form

  explicit rule_stats(std::string n) : name(std::move(n)) {}
  void fail(const std::string& what) {
    ++failed;
    if (failures.size() < 6) failures.push_back(what);
  }
  /// Prints the counts (quoted in reports) and fails the test case on any failure.
  void reject(const ctspmd::error_info& e) { ++rejections[std::string(to_string(e.kind)) + ": " + e.format]; }
  void report() const {
    std::string why;
    for (const auto& [form, n] : rejections) why += "\n    " + std::to_string(n) + " x " + form;
    MESSAGE(name << ": " << forward << " forward and " << backward << " backward cases simulated (forward: " << phi
                 << " under phi, " << co_sharded << " with a co-shard, " << partial_inputs << " with partial inputs, "
                 << partial_outputs << " with partial outputs; backward: "
                 << as_given << " with the outputs' dims mappings as given; "
                 << forward_rejected << " forward / " << backward_rejected << " backward proposals rejected by the rule"
                 << std::string(why.empty() ? "" : ":") << why << ")");
    for (const auto& f : failures) FAIL_CHECK(f);
    CHECK_MESSAGE(failed == 0, name << ": " << failed << " failed cases");
    CHECK(forward > 0);
    CHECK(phi > 0);
  }
};

/// What the operator does with one case's values.
struct op_case {
  std::vector<tensor> values;                   ///< the unsharded inputs
  std::vector<std::optional<tensor>> expected;  ///< reference outputs (nullopt: not compared)
  mesh_kernel kernel;
  std::string what;  ///< operator, mesh and attributes, for messages
  /// When set, the reference outputs for the rule's answer, in place of `expected`: for
  /// operators whose result depends on the layout (each token block dispatching its own tokens).
  std::function<std::vector<std::optional<tensor>>(const ctspmd::spmd_info&)> expected_for{};
  std::vector<std::optional<tensor>> expected_under(const ctspmd::spmd_info& info) const {
    return expected_for ? expected_for(info) : expected;
  }
};

/// Simulates `Rule`'s forward answer for `in`; a rejection by the rule is counted, not failed.
/// Runs `check` (one case), failing the case if it throws: a rule's try_ functions report
/// errors as results, so an exception is a bug.
template <class F>
void guarded(rule_stats& st, const std::string& what, F check) {
  try {
    check();
  } catch (const std::exception& e) {
    st.fail(what + "\n  threw: " + e.what());
  }
}

template <class Rule>
void check_forward(rule_stats& st, const specs& in, const typename Rule::attributes& attrs, const op_case& c, rng& g,
                   ctspmd::semantics s);
/// `check_forward` under both semantics.
template <class Rule>
void check_forward(rule_stats& st, const specs& in, const typename Rule::attributes& attrs, const op_case& c, rng& g) {
  check_forward<Rule>(st, in, attrs, c, g, ctspmd::semantics::fluid);
  check_forward<Rule>(st, in, attrs, c, g, ctspmd::semantics::phi);
}
template <class Rule>
void check_forward(rule_stats& st, const specs& in, const typename Rule::attributes& attrs, const op_case& c, rng& g,
                   ctspmd::semantics s) {
  guarded(st, "forward (" + std::string(to_string(s)) + ") " + c.what + "\n  given:    " + describe(in), [&] {
    const auto r = Rule::try_infer_forward(std::span<const dist_tensor_spec>(in), attrs, s);
    if (!r) {
      ++st.forward_rejected;
      st.reject(r.error());
      return;
    }
    ++st.forward;
    st.phi += s == ctspmd::semantics::phi ? 1 : 0;
    bool co = false;
    for (const auto& a : r->inputs) co = co || a.is_co_sharded();
    for (const auto& a : r->outputs) co = co || a.is_co_sharded();
    st.co_sharded += co ? 1 : 0;
    bool pin = false, pout = false;
    for (const auto& a : r->inputs) pin = pin || a.is_partial();
    for (const auto& a : r->outputs) pout = pout || a.is_partial();
    st.partial_inputs += pin ? 1 : 0;
    st.partial_outputs += pout ? 1 : 0;
    const auto diff = simulate(*r, c.values, c.expected_under(*r), c.kernel, g);
    if (!diff.empty())
      st.fail("forward (" + std::string(to_string(s)) + ") " + c.what + "\n  given:    " + describe(in) +
              "\n  inferred: " + describe(*r) + "\n  " + diff);
  });
}

/// Checks `Rule`'s backward answer for outputs `out` (see the file comment), under `s`.
template <class Rule>
void check_backward(rule_stats& st, const specs& in, const specs& out, const typename Rule::attributes& attrs,
                    const op_case& c, rng& g, ctspmd::semantics s);
/// `check_backward` under both semantics.
template <class Rule>
void check_backward(rule_stats& st, const specs& in, const specs& out, const typename Rule::attributes& attrs,
                    const op_case& c, rng& g) {
  check_backward<Rule>(st, in, out, attrs, c, g, ctspmd::semantics::fluid);
  check_backward<Rule>(st, in, out, attrs, c, g, ctspmd::semantics::phi);
}
template <class Rule>
void check_backward(rule_stats& st, const specs& in, const specs& out, const typename Rule::attributes& attrs,
                    const op_case& c, rng& g, ctspmd::semantics s) {
  guarded(st, "backward (" + std::string(to_string(s)) + ") " + c.what + "\n  outputs:  " + describe(out), [&] {
    const auto b = Rule::try_infer_backward(std::span<const dist_tensor_spec>(in), std::span<const dist_tensor_spec>(out),
                                            attrs, s);
    if (!b) {
      ++st.backward_rejected;
      st.reject(b.error());
      return;
    }
    ++st.backward;
    const std::string where = "backward (" + std::string(to_string(s)) + ") " + c.what + "\n  outputs:  " + describe(out) +
                              "\n  inferred: " + describe(*b);
    if (b->outputs.size() != out.size() || b->inputs.size() != in.size())
      return st.fail(where + "\n  wrong operand counts");
    bool all_given = true;
    for (std::size_t o = 0; o < out.size(); ++o) {
      const auto got = b->outputs[o].multi_dims_mapping();
      const auto given = out[o].multi_dims_mapping();
      if (got.size() != given.size()) return st.fail(where + "\n  output " + std::to_string(o) + " changed rank");
      all_given = all_given && got == given;
      for (std::size_t d = 0; d < got.size(); ++d)
        for (const auto m : got[d]) {
          // Kept, dropped, or (several outputs being merged) taken from another given output;
          // under phi also moved from another dim of the same output (reshape moves the mesh
          // dims of merged dims onto the leftmost one).
          bool kept = false, from_another = false;
          for (const auto g0 : given[d]) kept = kept || g0 == m;
          for (std::size_t p = 0; p < out.size(); ++p)
            from_another = from_another || ((p != o || s == ctspmd::semantics::phi) && out[p].dist_attr().shards(m));
          if (!kept && !from_another)
            return st.fail(where + "\n  output " + std::to_string(o) + " dim " + std::to_string(d) +
                           " gets a sharding no output had");
        }
    }
    st.as_given += all_given ? 1 : 0;
    specs again;
    for (std::size_t i = 0; i < in.size(); ++i) again.emplace_back(in[i].shape(), b->inputs[i]);
    const auto f = Rule::try_infer_forward(std::span<const dist_tensor_spec>(again), attrs, s);
    if (!f) return st.fail(where + "\n  forward from the inferred inputs is rejected: " + ctspmd::to_string(f.error()));
    if (!(f->inputs == b->inputs))
      return st.fail(where + "\n  forward from the inferred inputs reshards them: " + describe(*f));
    for (std::size_t o = 0; o < out.size(); ++o)
      if (!(f->outputs[o].multi_dims_mapping() == b->outputs[o].multi_dims_mapping()))
        return st.fail(where + "\n  forward from the inferred inputs gives " + describe(*f));
    const auto diff = simulate(*f, c.values, c.expected_under(*f), c.kernel, g);
    if (!diff.empty()) st.fail(where + "\n  forward from them: " + describe(*f) + "\n  " + diff);
  });
}

}  // namespace ctspmd_oracle

#endif
