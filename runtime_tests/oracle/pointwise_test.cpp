// The oracle on the rules whose operators act per element or along one axis: elementwise
// (relu, add, multiply, and a ternary multiply-add, the rule being n-ary), transpose,
// softmax / log_softmax, and the replicated fallback.
#include "harness.hpp"

#include <cmath>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_pointwise_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

const std::string letters = "abcd";

struct elementwise_op {
  std::string name;
  std::size_t arity;
  std::function<tensor(const std::vector<tensor>&)> f;
};

const std::vector<elementwise_op>& elementwise_ops() {
  static const std::vector<elementwise_op> v = {
      {"relu", 1, [](const std::vector<tensor>& in) { return ops::relu(in[0]); }},
      {"add", 2, [](const std::vector<tensor>& in) { return ops::add(in[0], in[1]); }},
      {"multiply", 2, [](const std::vector<tensor>& in) { return ops::multiply(in[0], in[1]); }},
      {"multiply_add", 3, [](const std::vector<tensor>& in) { return ops::multiply_add(in[0], in[1], in[2]); }},
  };
  return v;
}

/// Every rank tuple of `arity` inputs with ranks 1 to 4 (ternary: a fixed subset).
std::vector<std::vector<std::size_t>> rank_tuples(std::size_t arity) {
  std::vector<std::vector<std::size_t>> out;
  if (arity == 1)
    for (std::size_t r = 1; r <= 4; ++r) out.push_back({r});
  if (arity == 2)
    for (std::size_t a = 1; a <= 4; ++a)
      for (std::size_t b = 1; b <= 4; ++b) out.push_back({a, b});
  if (arity == 3) out = {{1, 1, 1}, {2, 1, 2}, {3, 2, 1}, {1, 3, 3}, {4, 2, 3}, {2, 4, 4}};
  return out;
}

mesh_kernel kernel_of(std::function<tensor(const std::vector<tensor>&)> f) {
  return per_device([f](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{f(in)};
  });
}

TEST_CASE("oracle: elementwise") {
  rule_stats st{"elementwise"};
  rng g(0x656c656d656e74ULL);
  using rule = ctspmd::rules::elementwise;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (const auto& op : elementwise_ops())
      for (const auto& ranks : rank_tuples(op.arity)) {
        const std::size_t rank = *std::max_element(ranks.begin(), ranks.end());
        std::vector<std::string> labels;
        for (auto r : ranks) labels.push_back(letters.substr(rank - r, r));
        const std::string out_labels = letters.substr(0, rank);
        const std::string what = op.name + " " + mesh_string(mesh);
        auto make_case = [&](const std::vector<shape_t>& shapes) {
          op_case c{{}, {}, kernel_of(op.f), what};
          for (const auto& s : shapes) c.values.push_back(random_tensor(s, g));
          c.expected.emplace_back(op.f(c.values));
          return c;
        };
        for (const auto& ls : layouts(mesh.ndim(), ranks, {reduce_type::sum, reduce_type::max}, 20, g)) {
          const auto sizes = label_sizes(mesh, labels, ls, g);
          std::vector<shape_t> shapes;
          for (std::size_t i = 0; i < ranks.size(); ++i) {
            shapes.push_back(shape_of(labels[i], sizes));
            // Broadcasting inputs: a dim is size 1 now and then, sharded or not (a sharded
            // size-1 dim cannot be split: the rule must replicate it).
            if (op.arity > 1)
              for (std::size_t d = 0; d < ranks[i]; ++d)
                if (g.one_in(ls[i].dm[d].empty() ? 4 : 8)) shapes.back()[d] = 1;
          }
          const auto c = make_case(shapes);
          check_forward<rule>(st, make_specs(mesh, shapes, ls), {}, c, g);
        }
        for (const auto& ls : layouts(mesh.ndim(), {rank}, {}, 10, g)) {
          const auto sizes = label_sizes(mesh, {out_labels}, ls, g);
          std::vector<shape_t> shapes;
          for (const auto& l : labels) shapes.push_back(shape_of(l, sizes));
          // Broadcast some dims, one input keeping each label's size so the output keeps it.
          for (std::size_t j = 0; j < rank && op.arity > 1; ++j) {
            const auto keeper = to_size(g.uniform(0, to_int(ranks.size()) - 1));
            for (std::size_t i = 0; i < ranks.size(); ++i) {
              const std::size_t lead = rank - ranks[i];
              if (j >= lead && (i != keeper || rank - ranks[keeper] > j) && g.one_in(3)) shapes[i][j - lead] = 1;
            }
          }
          const auto c = make_case(shapes);
          const auto os = c.expected[0]->shape;
          check_backward<rule>(st, replicated_specs(mesh, shapes), make_specs(mesh, {os}, {even_only(ls[0], os, mesh)}),
                               {}, c, g);
        }
      }
  }
  st.report();
}

// cast (to the same type here: the values pass through) keeps partial status; full_like
// gives a constant, which no partial status may claim.
TEST_CASE("oracle: cast and full_like") {
  rule_stats cast_st{"cast"}, full_st{"full_like"};
  rng g(0x63617374ULL);
  constexpr double fill = 1.5;
  const auto cast_kernel = per_device([](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{in[0]};
  });
  const auto full_kernel = per_device([](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{tensor(in[0].shape, fill)};
  });
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank) {
      const std::string xl = letters.substr(0, rank);
      auto cases = [&](const shape_t& xs, const layout& l) {
        op_case cast{{values_for(xs, l, g)}, {}, cast_kernel, "cast " + mesh_string(mesh)};
        cast.expected.emplace_back(cast.values[0]);
        op_case full{{values_for(xs, l, g)}, {}, full_kernel, "full_like " + mesh_string(mesh)};
        full.expected.emplace_back(tensor(xs, fill));
        return std::pair{cast, full};
      };
      for (const auto& ls : layouts(mesh.ndim(), {rank}, all_reduce_types, 12, g)) {
        const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
        const auto [cast, full] = cases(xs, ls[0]);
        check_forward<ctspmd::rules::cast>(cast_st, make_specs(mesh, {xs}, ls), {}, cast, g);
        check_forward<ctspmd::rules::full_like>(full_st, make_specs(mesh, {xs}, ls), {fill}, full, g);
      }
      for (const auto& ls : layouts(mesh.ndim(), {rank}, {}, 6, g)) {
        const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
        const auto [cast, full] = cases(xs, replicated_layout(rank));
        check_backward<ctspmd::rules::cast>(cast_st, replicated_specs(mesh, {xs}), make_specs(mesh, {xs}, ls), {}, cast, g);
        check_backward<ctspmd::rules::full_like>(full_st, replicated_specs(mesh, {xs}), make_specs(mesh, {xs}, ls), {fill},
                                                 full, g);
      }
    }
  }
  cast_st.report();
  full_st.report();
}

TEST_CASE("oracle: transpose") {
  rule_stats st{"transpose"};
  rng g(0x7472616e73ULL);
  using rule = ctspmd::rules::transpose;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 4; ++rank) {
      std::vector<std::size_t> perm(rank);
      for (std::size_t i = 0; i < rank; ++i) perm[i] = i;
      do {
        rule::attributes attrs;
        for (auto p : perm) attrs.perm.push_back(g.one_in(4) ? to_int(p) - to_int(rank) : to_int(p));  // negative now and then
        const std::string what = "transpose " + mesh_string(mesh) + " perm " + ctspmd::to_string(attrs.perm);
        const std::string xl = letters.substr(0, rank);
        std::string ol;
        for (auto p : perm) ol.push_back(xl[p]);
        const auto kernel = kernel_of([perm](const std::vector<tensor>& in) { return ops::transpose(in[0], perm); });
        for (const auto& ls : layouts(mesh.ndim(), {rank}, {reduce_type::sum, reduce_type::max, reduce_type::prod}, 6, g)) {
          const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
          op_case c{{random_tensor(xs, g)}, {}, kernel, what};
          c.expected.emplace_back(ops::transpose(c.values[0], perm));
          check_forward<rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
        }
        for (const auto& ls : layouts(mesh.ndim(), {rank}, {}, 3, g)) {
          const auto sizes = label_sizes(mesh, {ol}, ls, g);
          const shape_t xs = shape_of(xl, sizes);
          op_case c{{random_tensor(xs, g)}, {}, kernel, what};
          c.expected.emplace_back(ops::transpose(c.values[0], perm));
          check_backward<rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {shape_of(ol, sizes)}, ls), attrs, c, g);
        }
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  }
  st.report();
}

/// softmax (`log = false`) or log_softmax through `Rule`, the rule registered for that name.
template <class Rule>
void check_softmax(rule_stats& st, bool log, rng& g) {
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank) {
      const std::int64_t r = to_int(rank);
      for (std::int64_t axis = rank == 0 ? -1 : -r; axis < (rank == 0 ? 1 : r); ++axis) {
        const typename Rule::attributes attrs{axis};
        const std::string what = std::string(log ? "log_softmax " : "softmax ") + mesh_string(mesh) + " axis " +
                                 std::to_string(axis);
        auto f = [axis, log](const tensor& x) {
          tensor s = ops::softmax(x, axis);
          if (log)
            for (auto& v : s.data) v = std::log(v);
          return s;
        };
        const auto kernel = kernel_of([f](const std::vector<tensor>& in) { return f(in[0]); });
        const std::string xl = letters.substr(0, rank);
        for (const auto& ls : layouts(mesh.ndim(), {rank}, {reduce_type::sum, reduce_type::max}, log ? 6 : 16, g)) {
          const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
          op_case c{{random_tensor(xs, g)}, {}, kernel, what};
          c.expected.emplace_back(f(c.values[0]));
          check_forward<Rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
        }
        for (const auto& ls : layouts(mesh.ndim(), {rank}, {}, log ? 4 : 8, g)) {
          const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
          op_case c{{random_tensor(xs, g)}, {}, kernel, what};
          c.expected.emplace_back(f(c.values[0]));
          check_backward<Rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {xs}, ls), attrs, c, g);
        }
      }
    }
  }
}

TEST_CASE("oracle: softmax") {
  rng g(0x736f66746d6178ULL);
  rule_stats st{"softmax"};
  check_softmax<ctspmd::rules::rule_for<"softmax">>(st, false, g);
  st.report();
  rule_stats lst{"log_softmax"};
  check_softmax<ctspmd::rules::rule_for<"log_softmax">>(lst, true, g);
  lst.report();
}

TEST_CASE("oracle: replicated") {
  // The fallback for an operator without a rule: the operator (here a running sum, which no
  // sharding of its input could compute locally) runs on whole tensors on every device.
  rule_stats st{"replicated"};
  rng g(0x7265706cULL);
  using rule = ctspmd::rules::replicated;
  const auto kernel = kernel_of([](const std::vector<tensor>& in) { return ops::running_sum(in); });
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (const std::vector<std::size_t>& ranks :
         std::vector<std::vector<std::size_t>>{{1}, {2}, {3}, {2, 1}, {1, 3}, {3, 2, 1}}) {
      std::vector<std::string> labels;
      for (std::size_t i = 0; i < ranks.size(); ++i) labels.push_back(letters.substr(0, ranks[i]));  // sized per input
      const std::string what = "running_sum " + mesh_string(mesh) + " of " + std::to_string(ranks.size()) + " inputs";
      for (const auto& ls : layouts(mesh.ndim(), ranks, {reduce_type::sum, reduce_type::max}, 12, g)) {
        std::vector<shape_t> shapes;
        for (std::size_t i = 0; i < ranks.size(); ++i) shapes.push_back(shape_of(labels[i], label_sizes(mesh, {labels[i]}, {ls[i]}, g)));
        op_case c{{}, {}, kernel, what};
        for (const auto& s : shapes) c.values.push_back(random_tensor(s, g));
        c.expected.emplace_back(ops::running_sum(c.values));
        check_forward<rule>(st, make_specs(mesh, shapes, ls), {}, c, g);
        // Backward from an output laid out like input 0: everything comes back replicated.
        const auto out = make_specs(mesh, {shapes[0]}, {layout{ls[0].dm, {}}});
        check_backward<rule>(st, make_specs(mesh, shapes, ls), out, {}, c, g);
      }
    }
  }
  st.report();
}

}  // namespace oracle_pointwise_test
