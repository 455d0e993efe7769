#ifndef CTSPMD_STATIC_TESTS_TEST_SUPPORT_HPP
#define CTSPMD_STATIC_TESTS_TEST_SUPPORT_HPP
// For static tests of throwing calls: `constant_evaluates<[] { ... }>` is false when
// evaluating the lambda's body fails (a raised error is not a constant expression).
// `co(mesh, shape, {{0, 1}, {}})` is a co-shard operand, `is(attr, {{0, 1}, {}})` compares a
// result's mapping with a co-shard one.
// Operands on a test's mesh, the static and the runtime tests' preamble:
//     constexpr ctspmd_test::on_mesh spec{mesh};                   // spec({8, 16}, {0, -1})
//     constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};   // partial_spec({8, 16}, {0, -1}, 1)
// (`const`, not `constexpr`, where the mesh is not a constant).
#include <concepts>
#include <cstdint>
#include <type_traits>

#include <ctspmd/dist/dist_tensor_spec.hpp>

namespace ctspmd_test {
template <auto F>
inline constexpr bool constant_evaluates = requires { typename std::bool_constant<(F(), true)>; };

constexpr ctspmd::dist_tensor_spec co(const ctspmd::process_mesh& mesh, const ctspmd::tensor_shape& shape,
                                      const ctspmd::multi_dims_mapping& mapping) {
  return {shape, {mesh, mapping}};
}
constexpr bool is(const ctspmd::tensor_dist_attr& a, const ctspmd::multi_dims_mapping& mapping) {
  return a.multi_dims_mapping() == mapping;
}

/// `spec(shape, dm)`: an operand of `shape` laid out by `dm` on `mesh`.
struct on_mesh {
  ctspmd::process_mesh mesh;
  constexpr ctspmd::dist_tensor_spec operator()(const ctspmd::tensor_shape& shape, const ctspmd::dims_mapping& dm) const {
    return {shape, {mesh, dm}};
  }
};

/// `partial_spec(shape, dm, p)`: the same, partial on mesh dim `p` (or on the mesh dims `dims`),
/// with reduce type `r` (sum unless given).
struct partial_on_mesh {
  ctspmd::process_mesh mesh;
  constexpr ctspmd::dist_tensor_spec operator()(const ctspmd::tensor_shape& shape, const ctspmd::dims_mapping& dm,
                                                const ctspmd::mesh_dims& dims,
                                                ctspmd::reduce_type r = ctspmd::reduce_type::sum) const {
    ctspmd::tensor_dist_attr a(mesh, dm);
    a.set_partial_status(dims, r);
    return {shape, a};
  }
  // A template, so that a braced `{1}` goes to the mesh_dims form (Clang warns of braces around a scalar).
  template <std::integral Dim>
  constexpr ctspmd::dist_tensor_spec operator()(const ctspmd::tensor_shape& shape, const ctspmd::dims_mapping& dm, Dim p,
                                                ctspmd::reduce_type r = ctspmd::reduce_type::sum) const {
    return (*this)(shape, dm, ctspmd::mesh_dims{static_cast<std::int64_t>(p)}, r);
  }
};
}  // namespace ctspmd_test

#endif
