// The oracle on the n-d indexing rules: gather_nd, scatter and their grads. Each device runs the CPU
// reference (ops_gather_nd_scatter.hpp) on its local tensors laid out as the rule requires; the outputs,
// reassembled as the rule says (partial parts summed), must equal the unsharded computation.
// Every case runs under both semantics.
#include <algorithm>
#include <numeric>

#include "harness.hpp"
#include "ops_gather_nd_scatter.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_gather_nd_scatter_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

const std::vector<reduce_type> sum_max = {reduce_type::sum, reduce_type::max};

mesh_kernel kernel_f(std::function<std::vector<tensor>(const std::vector<tensor>&)> f) {
  return per_device([f](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) { return f(in); });
}

/// gather_nd's index: rows of K coordinates, coordinate j in [0, x_shape[j]).
tensor nd_indices(const shape_t& s, const shape_t& x_shape, rng& g) {
  tensor t(s);
  for_each_index(s, [&](const shape_t& i) { t[i] = static_cast<double>(g.uniform(0, x_shape[to_size(i.back())] - 1)); });
  return t;
}

/// scatter's index: n rows of x's `rows`, distinct when `distinct` (rows >= n).
tensor row_indices(std::int64_t n, std::int64_t rows, bool distinct, rng& g) {
  tensor t(shape_t{n});
  std::vector<std::int64_t> all(to_size(rows));
  std::iota(all.begin(), all.end(), 0);
  for (std::size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[to_size(g.uniform(0, to_int(i) - 1))]);
  for (std::int64_t i = 0; i < n; ++i)
    t.data[to_size(i)] = static_cast<double>(distinct ? all[to_size(i)] : g.uniform(0, rows - 1));
  return t;
}

TEST_CASE("oracle: gather_nd and gather_nd_grad") {
  rng g(0x67617468ULL + 0xf);
  rule_stats st{"gather_nd"}, gst{"gather_nd_grad"};
  const std::string lead_letters = "ab", trail_letters = "cde", indexed_letters = "pqr";
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (std::size_t q = 1; q <= 3; ++q)
        for (std::size_t k = 0; k <= rank; ++k) {
          const std::string lead = lead_letters.substr(0, q - 1), trail = trail_letters.substr(0, rank - k);
          const std::string xl = indexed_letters.substr(0, k) + trail, il = lead + "k", ol = lead + trail;
          const std::string what = "gather_nd " + mesh_string(mesh) + " x " + xl + " index " + il;
          const auto f = [](const std::vector<tensor>& in) { return std::vector<tensor>{ops::gather_nd(in[0], in[1])}; };
          auto make_case = [&](std::map<char, std::int64_t> sizes) {
            sizes['k'] = to_int(k);
            const tensor x = random_tensor(shape_of(xl, sizes), g);
            op_case c{{x, nd_indices(shape_of(il, sizes), x.shape, g)}, {}, kernel_f(f), what};
            c.expected.emplace_back(f(c.values)[0]);
            return c;
          };
          for (const auto& ls : layouts(mesh.ndim(), {xl.size(), il.size()}, sum_max, 16, g)) {
            const auto c = make_case(label_sizes(mesh, {xl, il}, ls, g));
            check_forward<ctspmd::rules::gather_nd>(st, make_specs(mesh, {c.values[0].shape, c.values[1].shape}, ls), {},
                                                    c, g);
          }
          for (const auto& ls : layouts(mesh.ndim(), {ol.size()}, {}, 6, g)) {
            const auto c = make_case(label_sizes(mesh, {ol, xl, il}, ls, g));
            check_backward<ctspmd::rules::gather_nd>(st, replicated_specs(mesh, {c.values[0].shape, c.values[1].shape}),
                                                     make_specs(mesh, {c.expected[0]->shape}, ls), {}, c, g);
          }
          const auto gf = [](const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::gather_nd_grad(in[0], in[1], in[2])};
          };
          for (const auto& ls : layouts(mesh.ndim(), {xl.size(), il.size(), ol.size()}, sum_max, 16, g)) {
            auto sizes = label_sizes(mesh, {xl, il, ol}, ls, g);
            sizes['k'] = to_int(k);
            const tensor x = random_tensor(shape_of(xl, sizes), g);
            op_case c{{x, nd_indices(shape_of(il, sizes), x.shape, g), random_tensor(shape_of(ol, sizes), g)},
                      {},
                      kernel_f(gf),
                      "gather_nd_grad " + mesh_string(mesh) + " x " + xl + " index " + il};
            c.expected.emplace_back(gf(c.values)[0]);
            check_forward<ctspmd::rules::gather_nd_grad>(
                gst, make_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape}, ls), {}, c, g);
          }
        }
  }
  st.report();
  gst.report();
}

TEST_CASE("oracle: scatter and scatter_grad") {
  rng g(0x73636174ULL);
  rule_stats st{"scatter"}, gst{"scatter_grad"};
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (const bool overwrite : {true, false}) {
        const ctspmd::rules::scatter_attributes attrs{overwrite};
        const std::string trail = std::string("bc").substr(0, rank - 1);
        const std::string xl = "r" + trail, il = "n", ul = "n" + trail;
        const std::string what = "scatter " + mesh_string(mesh) + " rank " + std::to_string(rank) + " overwrite " +
                                 std::to_string(overwrite);
        // Distinct rows under overwrite, so that the gradient of an overwritten update is exact.
        const auto fix = [overwrite](std::map<char, std::int64_t>& sizes) {
          if (overwrite) sizes['r'] *= (sizes['n'] + sizes['r'] - 1) / sizes['r'];
        };
        const auto f = [overwrite](const std::vector<tensor>& in) {
          return std::vector<tensor>{ops::scatter(in[0], in[1], in[2], overwrite)};
        };
        auto make_case = [&](std::map<char, std::int64_t> sizes) {
          fix(sizes);
          op_case c{{random_tensor(shape_of(xl, sizes), g), row_indices(sizes['n'], sizes['r'], overwrite, g),
                     random_tensor(shape_of(ul, sizes), g)},
                    {},
                    kernel_f(f),
                    what};
          c.expected.emplace_back(f(c.values)[0]);
          return c;
        };
        for (const auto& ls : layouts(mesh.ndim(), {xl.size(), il.size(), ul.size()}, sum_max, 24, g)) {
          const auto c = make_case(label_sizes(mesh, {xl, il, ul}, ls, g));
          check_forward<ctspmd::rules::scatter>(
              st, make_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape}, ls), attrs, c, g);
        }
        for (const auto& ls : layouts(mesh.ndim(), {xl.size()}, {}, 8, g)) {
          const auto c = make_case(label_sizes(mesh, {xl, il, ul}, ls, g));
          check_backward<ctspmd::rules::scatter>(
              st, replicated_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape}),
              make_specs(mesh, {c.expected[0]->shape}, ls), attrs, c, g);
        }
        const auto gf = [](const std::vector<tensor>& in) { return ops::scatter_grad(in[0], in[1], in[2]); };
        for (const auto& ls : layouts(mesh.ndim(), {il.size(), ul.size(), xl.size()}, sum_max, 24, g)) {
          auto sizes = label_sizes(mesh, {il, ul, xl}, ls, g);
          fix(sizes);
          op_case c{{row_indices(sizes['n'], sizes['r'], overwrite, g), random_tensor(shape_of(ul, sizes), g),
                     random_tensor(shape_of(xl, sizes), g)},
                    {},
                    kernel_f(gf),
                    "scatter_grad " + mesh_string(mesh) + " rank " + std::to_string(rank)};
          for (auto& t : gf(c.values)) c.expected.emplace_back(t);
          check_forward<ctspmd::rules::scatter_grad>(
              gst, make_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape}, ls), attrs, c, g);
        }
      }
  }
  st.report();
  gst.report();
}

}  // namespace oracle_gather_nd_scatter_test
