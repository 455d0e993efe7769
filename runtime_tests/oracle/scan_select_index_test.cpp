// The oracle on the scans and selections (cumsum, argmax / argmin, topk, numel, logsumexp,
// p_norm) and on indexing (gather, index_select, one_hot), with their grads. Each device runs the
// CPU reference (ops_scan_select_index.hpp) on its local tensors laid out as the rule requires;
// the outputs, reassembled as the rule says, must equal the unsharded computation. Every case
// runs under both semantics.
#include "harness.hpp"
#include "ops_scan_select_index.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_scan_select_index_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

const std::string letters = "abcd";
const std::vector<reduce_type> sum_max = {reduce_type::sum, reduce_type::max};

/// Every axis of a rank-`rank` x, written non-negative or (now and then) negative.
std::vector<std::int64_t> axes_of(std::size_t rank, rng& g) {
  std::vector<std::int64_t> out;
  for (std::size_t d = 0; d < rank; ++d) out.push_back(g.coin() ? to_int(d) - to_int(rank) : to_int(d));
  return out;
}

std::size_t norm_axis(std::int64_t axis, std::size_t rank) {
  return to_size(axis < 0 ? axis + to_int(rank) : axis);
}

mesh_kernel kernel_of(std::function<std::vector<tensor>(const std::vector<tensor>&)> f) {
  return per_device([f](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) { return f(in); });
}

/// Forward cases of a one-input rule on x labelled `xl`, backward cases from outputs labelled
/// `out_labels` (sizes shared by label), with the operator `f`.
template <class Rule>
void unary_cases(rule_stats& st, const process_mesh& mesh, const std::string& xl,
                 const std::vector<std::string>& out_labels, const typename Rule::attributes& attrs,
                 std::function<std::vector<tensor>(const std::vector<tensor>&)> f, const std::string& what, rng& g,
                 std::function<void(std::map<char, std::int64_t>&)> fix = {}) {
  auto make_case = [&](const std::map<char, std::int64_t>& sizes) {
    op_case c{{random_tensor(shape_of(xl, sizes), g)}, {}, kernel_of(f), what};
    for (auto& t : f(c.values)) c.expected.emplace_back(std::move(t));
    return c;
  };
  for (const auto& ls : layouts(mesh.ndim(), {xl.size()}, sum_max, 8, g)) {
    auto sizes = label_sizes(mesh, {xl}, ls, g);
    if (fix) fix(sizes);
    const auto c = make_case(sizes);
    check_forward<Rule>(st, make_specs(mesh, {c.values[0].shape}, ls), attrs, c, g);
  }
  std::vector<std::size_t> ranks;
  for (const auto& l : out_labels) ranks.push_back(l.size());
  std::vector<std::string> all = out_labels;
  all.push_back(xl);
  for (const auto& ls : layouts(mesh.ndim(), ranks, {}, 4, g)) {
    auto sizes = label_sizes(mesh, all, ls, g);
    if (fix) fix(sizes);
    const auto c = make_case(sizes);
    std::vector<shape_t> os;
    for (const auto& l : out_labels) os.push_back(shape_of(l, sizes));
    check_backward<Rule>(st, replicated_specs(mesh, {c.values[0].shape}), make_specs(mesh, os, ls), attrs, c, g);
  }
}

TEST_CASE("oracle: cumsum, cumsum_grad") {
  rng g(0x63756d73ULL);
  rule_stats st{"cumsum"}, gst{"cumsum_grad"};
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (const auto axis : axes_of(rank, g))
        for (int variant = 0; variant < 4; ++variant) {
          const ctspmd::rules::cumsum_attributes attrs{axis, variant == 3, variant == 1, variant == 2};
          const std::string xl = letters.substr(0, rank);
          const std::string what = "cumsum " + mesh_string(mesh) + " axis " + std::to_string(axis) + " variant " +
                                   std::to_string(variant);
          const auto f = [attrs](const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::cumsum(in[0], attrs.axis, attrs.flatten, attrs.exclusive, attrs.reverse)};
          };
          unary_cases<ctspmd::rules::cumsum>(st, mesh, xl, {attrs.flatten ? "n" : xl}, attrs, f, what, g,
                                             [&](std::map<char, std::int64_t>& sizes) {
                                               std::int64_t n = 1;
                                               for (char c : xl) n *= sizes[c];
                                               if (attrs.flatten) sizes['n'] = n;
                                             });
          // the grad: x and out_grad
          const std::string gl = attrs.flatten ? "n" : xl;
          const auto gf = [attrs](const std::vector<tensor>& in) {
            return std::vector<tensor>{
                ops::cumsum_grad(in[0], in[1], attrs.axis, attrs.flatten, attrs.exclusive, attrs.reverse)};
          };
          for (const auto& ls : layouts(mesh.ndim(), {rank, gl.size()}, sum_max, 8, g)) {
            auto sizes = label_sizes(mesh, {xl, gl}, ls, g);
            if (attrs.flatten) {
              std::int64_t n = 1;
              for (char c : xl) n *= sizes[c];
              sizes['n'] = n;  // may not divide its shards: the rule replicates it
            }
            op_case c{{random_tensor(shape_of(xl, sizes), g), random_tensor(shape_of(gl, sizes), g)}, {}, kernel_of(gf),
                      "cumsum_grad " + what};
            c.expected.emplace_back(gf(c.values)[0]);
            check_forward<ctspmd::rules::cumsum_grad>(gst, make_specs(mesh, {c.values[0].shape, c.values[1].shape}, ls),
                                                      attrs, c, g);
          }
        }
  }
  st.report();
  gst.report();
}

TEST_CASE("oracle: argmax, argmin") {
  rng g(0x6172676dULL);
  rule_stats st{"argmax"}, nst{"argmin"};
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (const auto axis : axes_of(rank, g))
        for (int variant = 0; variant < 4; ++variant) {
          const ctspmd::rules::argmax_attributes attrs{axis, (variant & 1) != 0, (variant & 2) != 0, "int64"};
          const std::string xl = letters.substr(0, rank);
          std::string ol;
          for (std::size_t d = 0; d < rank; ++d)
            if (attrs.flatten || d == norm_axis(axis, rank)) {
              if (attrs.keepdims) ol.push_back('1');
            } else {
              ol.push_back(xl[d]);
            }
          for (bool min : {false, true}) {
            const auto f = [attrs, min](const std::vector<tensor>& in) {
              return std::vector<tensor>{ops::argmax(in[0], attrs.axis, attrs.keepdims, attrs.flatten, min)};
            };
            const std::string what = std::string(min ? "argmin " : "argmax ") + mesh_string(mesh) + " axis " +
                                     std::to_string(axis) + " variant " + std::to_string(variant);
            if (min)
              unary_cases<ctspmd::rules::argmin>(nst, mesh, xl, {ol}, attrs, f, what, g);
            else
              unary_cases<ctspmd::rules::argmax>(st, mesh, xl, {ol}, attrs, f, what, g);
          }
        }
  }
  st.report();
  nst.report();
}

TEST_CASE("oracle: topk, topk_grad") {
  rng g(0x746f706bULL);
  rule_stats st{"topk"}, gst{"topk_grad"};
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (const auto axis : axes_of(rank, g))
        for (bool largest : {true, false}) {
          const std::string xl = letters.substr(0, rank);
          std::string ol = xl;
          ol[norm_axis(axis, rank)] = 'k';
          const char a = xl[norm_axis(axis, rank)];
          for (int rep = 0; rep < 2; ++rep) {
            const std::int64_t k = g.uniform(1, 3);
            const ctspmd::rules::topk_attributes attrs{k, axis, largest, true};
            const auto f = [attrs](const std::vector<tensor>& in) {
              return ops::topk(in[0], attrs.k, attrs.axis, attrs.largest);
            };
            const std::string what = "topk " + mesh_string(mesh) + " axis " + std::to_string(axis) + " k " +
                                     std::to_string(k);
            unary_cases<ctspmd::rules::topk>(st, mesh, xl, {ol, ol}, attrs, f, what, g,
                                             [&](std::map<char, std::int64_t>& sizes) {
                                               sizes['k'] = k;
                                               at_least(sizes, a, k);
                                             });
          }
          // the grad: x, indices, out_grad; k from the sizes
          const auto gf = [axis](const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::topk_grad(in[0], in[1], in[2], axis)};
          };
          for (const auto& ls : layouts(mesh.ndim(), {rank, rank, rank}, sum_max, 8, g)) {
            auto sizes = label_sizes(mesh, {xl, ol, ol}, ls, g);
            at_least(sizes, a, sizes['k']);
            const ctspmd::rules::topk_attributes attrs{sizes['k'], axis, largest, true};
            const tensor x = random_tensor(shape_of(xl, sizes), g);
            op_case c{{x, ops::topk(x, attrs.k, axis, largest)[1], random_tensor(shape_of(ol, sizes), g)}, {},
                      kernel_of(gf), "topk_grad " + mesh_string(mesh)};
            c.expected.emplace_back(gf(c.values)[0]);
            check_forward<ctspmd::rules::topk_grad>(
                gst, make_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape}, ls), attrs, c, g);
          }
        }
  }
  st.report();
  gst.report();
}

TEST_CASE("oracle: numel, logsumexp, p_norm") {
  rng g(0x6e756d6cULL);
  rule_stats st{"numel"}, lst{"logsumexp"}, pst{"p_norm"};
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 3; ++rank) {
      const std::string xl = letters.substr(0, rank);
      unary_cases<ctspmd::rules::numel>(
          st, mesh, xl, {""}, {}, [](const std::vector<tensor>& in) { return std::vector<tensor>{ops::numel_of(in[0])}; },
          "numel " + mesh_string(mesh), g);
      if (rank == 0) continue;
      for (std::size_t mask = 0; mask < (std::size_t{1} << rank); ++mask)
        for (bool keep : {false, true}) {
          ctspmd::rules::logsumexp_attributes attrs{{}, keep, false};
          std::vector<std::int64_t> axis;
          std::string ol;
          for (std::size_t d = 0; d < rank; ++d)
            if (mask >> d & 1) {
              axis.push_back(to_int(d));
              attrs.axis.push_back(g.coin() ? to_int(d) - to_int(rank) : to_int(d));
              if (keep) ol.push_back('1');
            } else {
              ol.push_back(xl[d]);
            }
          if (axis.empty()) ol = keep ? std::string(rank, '1') : "";
          unary_cases<ctspmd::rules::logsumexp>(
              lst, mesh, xl, {ol}, attrs,
              [axis, keep](const std::vector<tensor>& in) { return std::vector<tensor>{ops::logsumexp(in[0], axis, keep)}; },
              "logsumexp " + mesh_string(mesh), g);
        }
      for (const auto axis : axes_of(rank, g))
        for (int variant = 0; variant < 4; ++variant) {
          const ctspmd::rules::p_norm_attributes attrs{variant == 2 ? 3.0 : 2.0, axis, 1e-12, (variant & 1) != 0,
                                                      variant == 3};
          std::string ol;
          for (std::size_t d = 0; d < rank; ++d)
            if (attrs.asvector || d == norm_axis(axis, rank)) {
              if (attrs.keepdim) ol.push_back('1');
            } else {
              ol.push_back(xl[d]);
            }
          unary_cases<ctspmd::rules::p_norm>(
              pst, mesh, xl, {ol}, attrs,
              [attrs](const std::vector<tensor>& in) {
                return std::vector<tensor>{ops::p_norm(in[0], attrs.porder, attrs.axis, attrs.keepdim, attrs.asvector)};
              },
              "p_norm " + mesh_string(mesh), g);
        }
    }
  }
  st.report();
  lst.report();
  pst.report();
}

/// gather's (or index_select's) cases and its grad's, on x of every rank 1 to 3 and axis.
template <class Rule, class GradRule>
void check_gather(const std::string& name, bool zero_d, rng& g) {
  rule_stats st{name}, gst{name + "_grad"};
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (const auto axis : axes_of(rank, g))
        for (bool scalar_index : {false, true}) {
          if (scalar_index && !zero_d) continue;
          const typename Rule::attributes attrs{axis};
          const std::string xl = letters.substr(0, rank);
          const char a = xl[norm_axis(axis, rank)];
          const std::string il = scalar_index ? "" : "z";
          std::string ol;
          for (char c : xl)
            if (c != a) ol.push_back(c);
            else if (!scalar_index) ol.push_back('z');
          const std::string what = name + " " + mesh_string(mesh) + " axis " + std::to_string(axis);
          const auto f = [axis](const std::vector<tensor>& in) { return std::vector<tensor>{ops::gather(in[0], in[1], axis)}; };
          auto make_case = [&](const std::map<char, std::int64_t>& sizes) {
            const tensor x = random_tensor(shape_of(xl, sizes), g);
            op_case c{{x, random_indices(shape_of(il, sizes), sizes.at(a), g)}, {}, kernel_of(f), what};
            c.expected.emplace_back(f(c.values)[0]);
            return c;
          };
          for (const auto& ls : layouts(mesh.ndim(), {rank, il.size()}, sum_max, 16, g)) {
            const auto sizes = label_sizes(mesh, {xl, il}, ls, g);
            const auto c = make_case(sizes);
            check_forward<Rule>(st, make_specs(mesh, {c.values[0].shape, c.values[1].shape}, ls), attrs, c, g);
          }
          for (const auto& ls : layouts(mesh.ndim(), {ol.size()}, {}, 6, g)) {
            const auto sizes = label_sizes(mesh, {ol, xl}, ls, g);
            const auto c = make_case(sizes);
            check_backward<Rule>(st, replicated_specs(mesh, {c.values[0].shape, c.values[1].shape}),
                                 make_specs(mesh, {c.expected[0]->shape}, ls), attrs, c, g);
          }
          const auto gf = [axis](const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::gather_grad(in[0], in[1], in[2], axis)};
          };
          for (const auto& ls : layouts(mesh.ndim(), {rank, il.size(), ol.size()}, sum_max, 16, g)) {
            const auto sizes = label_sizes(mesh, {xl, il, ol}, ls, g);
            op_case c{{random_tensor(shape_of(xl, sizes), g), random_indices(shape_of(il, sizes), sizes.at(a), g),
                       random_tensor(shape_of(ol, sizes), g)},
                      {},
                      kernel_of(gf),
                      name + "_grad " + mesh_string(mesh) + " axis " + std::to_string(axis)};
            c.expected.emplace_back(gf(c.values)[0]);
            check_forward<GradRule>(gst, make_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape}, ls),
                                    attrs, c, g);
          }
        }
  }
  st.report();
  gst.report();
}

TEST_CASE("oracle: gather, index_select and their grads") {
  rng g(0x67617468ULL);
  check_gather<ctspmd::rules::gather, ctspmd::rules::gather_grad>("gather", true, g);
  check_gather<ctspmd::rules::index_select, ctspmd::rules::index_select_grad>("index_select", false, g);
}

TEST_CASE("oracle: one_hot") {
  rng g(0x6f6e6568ULL);
  rule_stats st{"one_hot"};
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 3; ++rank) {
      const std::string xl = letters.substr(0, rank);
      const std::int64_t classes = g.uniform(2, 5);
      const ctspmd::rules::one_hot_attributes attrs{classes};
      const auto f = [classes](const std::vector<tensor>& in) { return std::vector<tensor>{ops::one_hot(in[0], classes)}; };
      auto make_case = [&](const std::map<char, std::int64_t>& sizes) {
        op_case c{{random_indices(shape_of(xl, sizes), classes, g)}, {}, kernel_of(f), "one_hot " + mesh_string(mesh)};
        c.expected.emplace_back(f(c.values)[0]);
        return c;
      };
      for (const auto& ls : layouts(mesh.ndim(), {rank}, sum_max, 8, g)) {
        const auto c = make_case(label_sizes(mesh, {xl}, ls, g));
        check_forward<ctspmd::rules::one_hot>(st, make_specs(mesh, {c.values[0].shape}, ls), attrs, c, g);
      }
      for (const auto& ls : layouts(mesh.ndim(), {rank + 1}, {}, 6, g)) {
        auto sizes = label_sizes(mesh, {xl + "n"}, ls, g);
        const auto c = make_case(sizes);
        // the class dim may be given sharded (its size is num_classes): only even shards are given
        const shape_t os = c.expected[0]->shape;
        check_backward<ctspmd::rules::one_hot>(st, replicated_specs(mesh, {c.values[0].shape}),
                                               make_specs(mesh, {os}, {even_only(ls[0], os, mesh)}), attrs, c, g);
      }
    }
  }
  st.report();
}

}  // namespace oracle_scan_select_index_test
