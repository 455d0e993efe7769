#ifndef CTSPMD_RUNTIME_TESTS_ROUNDTRIP_HPP
#define CTSPMD_RUNTIME_TESTS_ROUNDTRIP_HPP
// The forward -> backward property every rule is checked against, and a deterministic
// generator of the cases it runs on.
//
// For inputs `in` that a rule's forward accepts, with forward answer F:
//   B = infer_backward(in, outputs with F's dist attrs)
//   (1) B never shards an input dim that F does not: B.inputs[i][d] is F.inputs[i][d] or -1
//       (backward may replicate what the outputs do not show, e.g. a contracted axis);
//   (2) running forward from B's inputs gives outputs with F's outputs' dims mappings.
// A rule that cannot promise this documents why in its header and in its test.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <span>
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

/// A spec of `shape` on `mesh` with mapping `dm`, partial (sum) on `partial_dim`.
inline ctspmd::dist_tensor_spec partial_spec_on(const ctspmd::process_mesh& mesh, const ctspmd::tensor_shape& shape,
                                                const ctspmd::dims_mapping& dm, std::int64_t partial_dim) {
  ctspmd::tensor_dist_attr a(mesh, dm);
  a.set_partial_status({partial_dim});
  return {shape, a};
}

/// Operand specs with `shapes` and the dims mappings of `attrs` (same order).
inline std::vector<ctspmd::dist_tensor_spec> with_attrs(std::span<const ctspmd::tensor_shape> shapes,
                                                        const ctspmd::dist_attrs& attrs) {
  REQUIRE(shapes.size() == attrs.size());
  std::vector<ctspmd::dist_tensor_spec> out;
  for (std::size_t i = 0; i < shapes.size(); ++i) out.emplace_back(shapes[i], attrs[i]);
  return out;
}

/// Checks properties (1) and (2) above for `Rule` on `inputs`, whose forward outputs have
/// `output_shapes`. Returns false (checking nothing) when forward rejects the inputs, so
/// generators may propose cases freely; callers count the true returns.
template <class Rule>
bool check_roundtrip(std::span<const ctspmd::dist_tensor_spec> inputs,
                     std::span<const ctspmd::tensor_shape> output_shapes,
                     const typename Rule::attributes& attrs = {}) {
  const auto fwd = Rule::try_infer_forward(inputs, attrs);
  if (!fwd) return false;
  std::vector<ctspmd::tensor_shape> input_shapes;
  for (const auto& s : inputs) input_shapes.push_back(s.shape());
  const auto outputs = with_attrs(output_shapes, fwd->outputs);
  const auto bwd = Rule::try_infer_backward(inputs, outputs, attrs);
  REQUIRE_MESSAGE(bwd.ok(), ctspmd::to_string(bwd.error()));
  REQUIRE(bwd->inputs.size() == inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& b = bwd->inputs[i].dims_mapping();
    const auto& f = fwd->inputs[i].dims_mapping();
    REQUIRE(b.size() == f.size());
    for (std::size_t d = 0; d < b.size(); ++d)
      CHECK_MESSAGE((b[d] == f[d] || b[d] == -1), "input ", i, " dim ", d, ": backward ", b[d], ", forward ", f[d]);
  }
  const auto again = Rule::try_infer_forward(with_attrs(input_shapes, bwd->inputs), attrs);
  REQUIRE_MESSAGE(again.ok(), ctspmd::to_string(again.error()));
  REQUIRE(again->outputs.size() == fwd->outputs.size());
  for (std::size_t o = 0; o < fwd->outputs.size(); ++o)
    CHECK_MESSAGE(again->outputs[o].dims_mapping() == fwd->outputs[o].dims_mapping(), "output ", o);
  return true;
}

}  // namespace ctspmd_test

#endif
