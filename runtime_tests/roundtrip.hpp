#ifndef CTSPMD_RUNTIME_TESTS_ROUNDTRIP_HPP
#define CTSPMD_RUNTIME_TESTS_ROUNDTRIP_HPP
// The forward -> backward property every rule is checked against, and a deterministic
// generator of the cases it runs on.
//
// For inputs `in` that a rule's forward accepts, with forward answer F:
//   B = infer_backward(in, outputs with F's dist attrs)
//   (1) B never shards an input dim that F does not: B.inputs[i][d] is F.inputs[i][d] or
//       replicated (backward may replicate what the outputs do not show, e.g. a contracted axis);
//   (2) running forward from B's inputs gives outputs with F's outputs' dims mappings.
// Dims mappings are compared as co-shard lists (a dim's list of mesh dims, major first).
// `check_roundtrip` checks both under each semantics, fluid and phi (the same semantics for the
// three calls), and under phi also with co-sharded inputs (`co_sharded`). A rule that cannot promise this under one semantics documents why in its header
// and its test calls `check_roundtrip_under` for the other one.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ctspmd_test {

/// A small deterministic generator (the same sequence with every compiler and library).
class rng {
 public:
  explicit rng(std::uint64_t seed) : state_(seed) {}
  /// A value in [lo, hi].
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto span = static_cast<std::uint64_t>(hi - lo + 1);
    return lo + static_cast<std::int64_t>((state_ >> 33) % span);
  }
  bool coin() { return uniform(0, 1) == 1; }

 private:
  std::uint64_t state_;
};

/// A valid dims mapping of `rank` entries on a mesh of `mesh_ndim` dims: each entry -1 or a
/// mesh dim, no mesh dim twice; about half the entries sharded.
inline ctspmd::dims_mapping random_dims_mapping(rng& r, std::size_t rank, std::int64_t mesh_ndim) {
  ctspmd::dims_mapping dm(rank, -1);
  for (std::int64_t m = 0; m < mesh_ndim; ++m) {
    if (!r.coin() || rank == 0) continue;
    const auto d = static_cast<std::size_t>(r.uniform(0, static_cast<std::int64_t>(rank) - 1));
    if (dm[d] == -1) dm[d] = m;
  }
  return dm;
}

/// One of three meshes, of 1, 2 and 3 dims: [4], [2, 3] or [2, 2, 2].
inline ctspmd::process_mesh random_mesh(rng& r) {
  const auto ndim = r.uniform(1, 3);
  return ctspmd::process_mesh(ndim == 1   ? ctspmd::tensor_shape{4}
                              : ndim == 2 ? ctspmd::tensor_shape{2, 3}
                                          : ctspmd::tensor_shape{2, 2, 2});
}

/// Operands' dist attrs (or specs) as text, for messages.
inline std::string describe(const ctspmd::dist_attrs& attrs) {
  std::string out;
  for (std::size_t i = 0; i < attrs.size(); ++i) out += (i ? "; " : "") + ctspmd::to_string(attrs[i]);
  return out;
}
inline std::string describe(std::span<const ctspmd::dist_tensor_spec> specs) {
  std::string out;
  for (std::size_t i = 0; i < specs.size(); ++i) out += (i ? "; " : "") + ctspmd::to_string(specs[i].dist_attr());
  return out;
}

/// Operand specs with `shapes` and the dims mappings of `attrs` (same order).
inline std::vector<ctspmd::dist_tensor_spec> with_attrs(std::span<const ctspmd::tensor_shape> shapes,
                                                        const ctspmd::dist_attrs& attrs) {
  REQUIRE(shapes.size() == attrs.size());
  std::vector<ctspmd::dist_tensor_spec> out;
  for (std::size_t i = 0; i < shapes.size(); ++i) out.emplace_back(shapes[i], attrs[i]);
  return out;
}

/// Checks properties (1) and (2) above for `Rule` on `inputs` under semantics `s`, whose forward
/// outputs have `output_shapes`. Returns false (checking nothing) when forward rejects the inputs,
/// so generators may propose cases freely; callers count the true returns.
template <class Rule>
bool check_roundtrip_under(ctspmd::semantics s, std::span<const ctspmd::dist_tensor_spec> inputs,
                           std::span<const ctspmd::tensor_shape> output_shapes,
                           const typename Rule::attributes& attrs = {}) {
  const auto fwd = Rule::try_infer_forward(inputs, attrs, s);
  if (!fwd) return false;
  INFO("semantics ", ctspmd::to_string(s), ", inputs ", describe(inputs), ", forward ", describe(fwd->inputs), " -> ",
       describe(fwd->outputs));
  std::vector<ctspmd::tensor_shape> input_shapes;
  for (const auto& spec : inputs) input_shapes.push_back(spec.shape());
  const auto outputs = with_attrs(output_shapes, fwd->outputs);
  const auto bwd = Rule::try_infer_backward(inputs, outputs, attrs, s);
  REQUIRE_MESSAGE(bwd.ok(), ctspmd::to_string(bwd.error()));
  REQUIRE(bwd->inputs.size() == inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto b = bwd->inputs[i].multi_dims_mapping();
    const auto f = fwd->inputs[i].multi_dims_mapping();
    REQUIRE(b.size() == f.size());
    for (std::size_t d = 0; d < b.size(); ++d)
      CHECK_MESSAGE((b[d] == f[d] || b[d].empty()), "input ", i, " dim ", d, ": backward ", ctspmd::to_string(bwd->inputs[i]),
                    ", forward ", ctspmd::to_string(fwd->inputs[i]));
  }
  const auto again = Rule::try_infer_forward(with_attrs(input_shapes, bwd->inputs), attrs, s);
  REQUIRE_MESSAGE(again.ok(), ctspmd::to_string(again.error()));
  REQUIRE(again->outputs.size() == fwd->outputs.size());
  for (std::size_t o = 0; o < fwd->outputs.size(); ++o)
    CHECK_MESSAGE(again->outputs[o].multi_dims_mapping() == fwd->outputs[o].multi_dims_mapping(), "output ", o, ": again ",
                  ctspmd::to_string(again->outputs[o]), ", first ", ctspmd::to_string(fwd->outputs[o]), ", backward inputs ",
                  describe(bwd->inputs));
  return true;
}

/// `inputs` with co-shards: on each input, the first sharded dim whose size allows it is also
/// split by the lowest mesh dim the input leaves free (neither sharding nor partial), appended
/// to its list. Empty when no input can be co-sharded so.
inline std::vector<ctspmd::dist_tensor_spec> co_sharded(std::span<const ctspmd::dist_tensor_spec> inputs) {
  std::vector<ctspmd::dist_tensor_spec> out;
  bool changed = false;
  for (const auto& spec : inputs) {
    const auto& a = spec.dist_attr();
    const auto& mesh = a.process_mesh();
    auto mapping = a.multi_dims_mapping();
    bool done = false;
    for (std::size_t d = 0; d < mapping.size() && !done; ++d) {
      if (mapping[d].empty() || spec.shape()[d] <= 0) continue;
      std::int64_t shards = 1;
      for (const auto m : mapping[d]) shards *= mesh.dim_size(m);
      for (std::int64_t m = 0; m < mesh.ndim() && !done; ++m)
        if (!a.shards(m) && !a.is_partial(m) && spec.shape()[d] % (shards * mesh.dim_size(m)) == 0) {
          mapping[d].push_back(m);
          done = true;
        }
    }
    ctspmd::tensor_dist_attr b(mesh, mapping);
    b.set_batch_dim(a.batch_dim());
    for (const auto m : a.partial_dims()) b.set_partial_status({m}, a.partial_reduce_type(m));
    out.emplace_back(spec.shape(), b);
    changed = changed || done;
  }
  if (!changed) out.clear();
  return out;
}

/// `check_roundtrip_under` under fluid and under phi, and under phi once more with the inputs
/// co-sharded (`co_sharded`) where they can be; true when forward accepted the inputs under at
/// least one semantics.
template <class Rule>
bool check_roundtrip(std::span<const ctspmd::dist_tensor_spec> inputs, std::span<const ctspmd::tensor_shape> output_shapes,
                     const typename Rule::attributes& attrs = {}) {
  const bool fluid = check_roundtrip_under<Rule>(ctspmd::semantics::fluid, inputs, output_shapes, attrs);
  const bool phi = check_roundtrip_under<Rule>(ctspmd::semantics::phi, inputs, output_shapes, attrs);
  if (const auto co = co_sharded(inputs); !co.empty())
    check_roundtrip_under<Rule>(ctspmd::semantics::phi, co, output_shapes, attrs);
  return fluid || phi;
}

}  // namespace ctspmd_test

#endif
