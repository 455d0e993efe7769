#ifndef CTSPMD_TESTS_INTEROP_ENUMERATE_HPP
#define CTSPMD_TESTS_INTEROP_ENUMERATE_HPP
// Every dist attr of a given rank on a mesh: each mesh dim replicated, partial or sharding one
// tensor dim, and each tensor dim's mesh dims in every order (co-shards included). Shared by the
// static and the runtime interop tests.
#include <ctspmd/dist/tensor_dist_attr.hpp>

namespace ctspmd_test {

/// The next permutation of `v` in lexicographic order; at the last one, false and `v` sorted.
constexpr bool next_permutation(ctspmd::mesh_dims& v) {
  if (v.size() < 2) return false;
  std::size_t i = v.size() - 1;
  while (i > 0 && !(v[i - 1] < v[i])) --i;
  auto reverse = [&](std::size_t from) {
    for (std::size_t a = from, b = v.size() - 1; a < b; ++a, --b) {
      const auto t = v[a];
      v[a] = v[b];
      v[b] = t;
    }
  };
  if (i == 0) {
    reverse(0);
    return false;
  }
  std::size_t j = v.size() - 1;
  while (!(v[i - 1] < v[j])) --j;
  const auto t = v[i - 1];
  v[i - 1] = v[j];
  v[j] = t;
  reverse(i);
  return true;
}

/// Calls f(attr) for every attr of rank `rank` on `mesh`; partial dims get the reduce type
/// `(code + m) % 7` when `vary_reduce`, else sum. Returns the number of attrs.
template <class F>
constexpr std::size_t for_each_attr(const ctspmd::process_mesh& mesh, std::size_t rank, bool vary_reduce, F f) {
  const auto n = mesh.ndim();
  const auto choices = static_cast<std::int64_t>(rank) + 2;
  std::int64_t total = 1;
  for (std::int64_t m = 0; m < n; ++m) total *= choices;
  std::size_t count = 0;
  for (std::int64_t code = 0; code < total; ++code) {
    ctspmd::multi_dims_mapping lists(rank, ctspmd::mesh_dims{});
    ctspmd::mesh_dims partial;
    std::int64_t c = code;
    for (std::int64_t m = 0; m < n; ++m, c /= choices) {
      const auto k = c % choices;
      if (k == 1) partial.push_back(m);
      if (k >= 2) lists[static_cast<std::size_t>(k - 2)].push_back(m);
    }
    while (true) {
      ctspmd::tensor_dist_attr a(mesh, lists);
      for (auto m : partial)
        a.set_partial_status({m}, vary_reduce ? static_cast<ctspmd::reduce_type>((code + m) % 7) : ctspmd::reduce_type::sum);
      f(a);
      ++count;
      std::size_t d = 0;
      while (d < rank && !next_permutation(lists[d])) ++d;
      if (d == rank) break;
    }
  }
  return count;
}

}  // namespace ctspmd_test

#endif
