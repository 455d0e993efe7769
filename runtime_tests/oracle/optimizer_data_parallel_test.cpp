// The oracle on the optimizers (adam, adamw, sgd) and on default_data_parallel. Each device runs
// the CPU reference (ops_optimizer_data_parallel.hpp) on its local tensors laid out as the rule
// requires; the outputs, reassembled as the rule says, must equal the unsharded computation.
// Every case runs under both semantics.
#include "harness.hpp"
#include "ops_optimizer_data_parallel.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_optimizer_data_parallel_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

const std::string letters = "abcd";
const std::vector<reduce_type> sum_max = {reduce_type::sum, reduce_type::max};

/// A tensor of `shape` with values in [lo, hi).
tensor values_in(const shape_t& s, rng& g, double lo, double hi) { return random_tensor(s, g, lo, hi); }

// ---------------------------------------------------------------------------- optimizers

/// adam's (and adamw's) cases: param, grad, lr, moment1, moment2, moment2_max (absent unless
/// amsgrad), beta1_pow, beta2_pow, master_param (present or left out).
template <class Rule>
void check_adam(const std::string& name, bool adamw, rng& g) {
  rule_stats st{name};
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (int variant = 0; variant < 4; ++variant) {
        const bool amsgrad = variant & 1, master = variant & 2;
        typename Rule::attributes attrs{};
        attrs.amsgrad = amsgrad;
        double coeff = 0;
        if constexpr (requires { attrs.coeff; }) {
          attrs.coeff = coeff = 0.05;
          attrs.with_decay = true;
        }
        (void)adamw;
        const std::string xl = letters.substr(0, rank);
        const std::string ml = amsgrad ? xl : "";
        std::vector<std::string> labels{xl, xl, "1", xl, xl, ml, "1", "1"};
        if (master) labels.push_back(xl);
        std::vector<std::size_t> ranks;
        for (const auto& l : labels) ranks.push_back(l.size());
        const std::string what = name + " " + mesh_string(mesh) + " amsgrad " + std::to_string(amsgrad) + " master " +
                                 std::to_string(master);
        const auto run = [attrs, coeff, amsgrad, master](const std::vector<tensor>& in) {
          const auto r = ops::adam(in[0], in[1], in[2], in[3], in[4], amsgrad ? std::optional<tensor>(in[5]) : std::nullopt,
                                   in[6], in[7], master ? std::optional<tensor>(in[8]) : std::nullopt, attrs.beta1,
                                   attrs.beta2, attrs.epsilon, coeff);
          return std::vector<tensor>{r.param, r.moment1, r.moment2, r.moment2_max.value_or(tensor(shape_t{})),
                                     r.beta1_pow, r.beta2_pow, r.master.value_or(tensor(shape_t{}))};
        };
        const auto kernel = per_device(
            [run](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) { return run(in); });
        auto make_case = [&](const std::vector<shape_t>& shapes) {
          op_case c{{}, {}, kernel, what};
          for (std::size_t i = 0; i < shapes.size(); ++i) {
            const bool positive = i == 4 || i == 5;  // second moments
            const bool pow = i == 6 || i == 7;
            c.values.push_back(pow ? values_in(shapes[i], g, 0.2, 0.9)
                                   : positive ? values_in(shapes[i], g, 0.0, 2.0) : random_tensor(shapes[i], g));
          }
          const auto out = run(c.values);
          for (std::size_t o = 0; o < out.size(); ++o)
            c.expected.emplace_back((o == 3 && !amsgrad) || (o == 6 && !master) ? std::nullopt
                                                                                 : std::optional<tensor>(out[o]));
          return c;
        };
        for (const auto& ls : layouts(mesh.ndim(), ranks, sum_max, 24, g)) {
          const auto sizes = label_sizes(mesh, labels, ls, g);
          std::vector<shape_t> shapes;
          for (const auto& l : labels) shapes.push_back(shape_of(l, sizes));
          check_forward<Rule>(st, make_specs(mesh, shapes, ls), attrs, make_case(shapes), g);
        }
        const std::vector<std::string> out_labels{xl, xl, xl, ml, "1", "1", master ? xl : ""};
        std::vector<std::size_t> out_ranks;
        for (const auto& l : out_labels) out_ranks.push_back(l.size());
        for (const auto& ls : layouts(mesh.ndim(), out_ranks, {}, 12, g)) {
          const auto sizes = label_sizes(mesh, out_labels, ls, g);
          std::vector<shape_t> shapes, out_shapes;
          for (const auto& l : labels) shapes.push_back(shape_of(l, sizes));
          for (const auto& l : out_labels) out_shapes.push_back(shape_of(l, sizes));
          check_backward<Rule>(st, replicated_specs(mesh, shapes), make_specs(mesh, out_shapes, ls), attrs,
                               make_case(shapes), g);
        }
      }
  }
  st.report();
}

TEST_CASE("oracle: adam, adamw") {
  rng g(0x6164616dULL);
  check_adam<ctspmd::rules::adam>("adam", false, g);
  check_adam<ctspmd::rules::adamw>("adamw", true, g);
}

TEST_CASE("oracle: sgd") {
  rule_stats st{"sgd"};
  rng g(0x736764ULL);
  using rule = ctspmd::rules::sgd;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (bool master : {false, true}) {
        const std::string xl = letters.substr(0, rank);
        std::vector<std::string> labels{xl, "1", xl};
        if (master) labels.push_back(xl);
        std::vector<std::size_t> ranks;
        for (const auto& l : labels) ranks.push_back(l.size());
        const std::string what = "sgd " + mesh_string(mesh) + " master " + std::to_string(master);
        const auto run = [master](const std::vector<tensor>& in) {
          return ops::sgd(in[0], in[1], in[2], master ? std::optional<tensor>(in[3]) : std::nullopt);
        };
        const auto kernel = per_device(
            [run](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) { return run(in); });
        auto make_case = [&](const std::vector<shape_t>& shapes) {
          op_case c{{}, {}, kernel, what};
          for (const auto& s : shapes) c.values.push_back(random_tensor(s, g));
          const auto out = run(c.values);
          c.expected = {out[0], master ? std::optional<tensor>(out[1]) : std::nullopt};
          return c;
        };
        for (const auto& ls : layouts(mesh.ndim(), ranks, sum_max, 24, g)) {
          const auto sizes = label_sizes(mesh, labels, ls, g);
          std::vector<shape_t> shapes;
          for (const auto& l : labels) shapes.push_back(shape_of(l, sizes));
          check_forward<rule>(st, make_specs(mesh, shapes, ls), {}, make_case(shapes), g);
        }
        const std::vector<std::string> out_labels{xl, master ? xl : ""};
        for (const auto& ls : layouts(mesh.ndim(), {rank, master ? rank : 0}, {}, 12, g)) {
          const auto sizes = label_sizes(mesh, out_labels, ls, g);
          std::vector<shape_t> shapes;
          for (const auto& l : labels) shapes.push_back(shape_of(l, sizes));
          check_backward<rule>(st, replicated_specs(mesh, shapes),
                               make_specs(mesh, {shape_of(out_labels[0], sizes), shape_of(out_labels[1], sizes)}, ls),
                               {}, make_case(shapes), g);
        }
      }
  }
  st.report();
}

TEST_CASE("oracle: default_data_parallel") {
  rule_stats st{"default_data_parallel"};
  rng g(0x64706172ULL);
  using rule = ctspmd::rules::default_data_parallel;
  const auto kernel = per_device([](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::per_sample(in)};
  });
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t r0 = 1; r0 <= 3; ++r0)
      for (std::size_t r1 = 1; r1 <= 3; ++r1) {
        const std::vector<std::string> labels{"b" + std::string("cd").substr(0, r0 - 1),
                                              "b" + std::string("ef").substr(0, r1 - 1)};
        const std::string what = "default_data_parallel " + mesh_string(mesh);
        auto make_case = [&](const std::vector<shape_t>& shapes) {
          op_case c{{random_tensor(shapes[0], g), random_tensor(shapes[1], g)}, {}, kernel, what};
          c.expected.emplace_back(ops::per_sample(c.values));
          return c;
        };
        for (const auto& ls : layouts(mesh.ndim(), {r0, r1}, sum_max, 24, g)) {
          const auto sizes = label_sizes(mesh, labels, ls, g);
          const std::vector<shape_t> shapes{shape_of(labels[0], sizes), shape_of(labels[1], sizes)};
          check_forward<rule>(st, make_specs(mesh, shapes, ls), {}, make_case(shapes), g);
        }
        for (const auto& ls : layouts(mesh.ndim(), {r0}, {}, 8, g)) {
          const auto sizes = label_sizes(mesh, {labels[0], labels[1]}, ls, g);
          const std::vector<shape_t> shapes{shape_of(labels[0], sizes), shape_of(labels[1], sizes)};
          check_backward<rule>(st, replicated_specs(mesh, shapes), make_specs(mesh, {shapes[0]}, ls), {},
                               make_case(shapes), g);
        }
      }
  }
  st.report();
}

}  // namespace oracle_optimizer_data_parallel_test
