#ifndef CTSPMD_STATIC_TESTS_TEST_SUPPORT_HPP
#define CTSPMD_STATIC_TESTS_TEST_SUPPORT_HPP
// For static tests of throwing calls: `constant_evaluates<[] { ... }>` is false when
// evaluating the lambda's body fails (a raised error is not a constant expression).
// `co(mesh, shape, {{0, 1}, {}})` is a co-shard operand, `is(attr, {{0, 1}, {}})` compares a
// result's mapping with a co-shard one.
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
}  // namespace ctspmd_test

#endif
