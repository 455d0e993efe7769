// The oracle on the elementwise family's and the norms' rules: scale, pow, dropout, add_n, swiglu,
// fused_dropout_add, where,
// rms_norm (forward and backward), and the grad rules relu_grad, silu_grad, gelu_grad, pow_grad, add_grad,
// multiply_grad, divide_grad, where_grad, dropout_grad, fused_dropout_add_grad, swiglu_grad,
// rms_norm_grad, layer_norm_grad (forward: a grad rule is called forward). A grad rule's case
// computes the gradients on every device from its local tensors (the same reference function
// run locally): a gradient summed over a broadcast or leading dim that is sharded leaves partial
// sums, which the rule's partial status must combine into the true gradient.
#include "harness.hpp"
#include "ops_elementwise_norms.hpp"

#include <cmath>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_elementwise_norms_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

const std::string letters = "abcd";
const std::vector<reduce_type> sum_max = {reduce_type::sum, reduce_type::max};

/// A kernel running `f(local inputs) -> local outputs` on each device.
mesh_kernel local(std::function<std::vector<tensor>(const std::vector<tensor>&)> f) {
  return per_device([f](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) { return f(in); });
}

/// An op_case of `values` whose expected outputs are `f(values)`, run locally by `f`.
op_case make_case(std::vector<tensor> values, const std::function<std::vector<tensor>(const std::vector<tensor>&)>& f,
                  const std::string& what) {
  op_case c{std::move(values), {}, local(f), what};
  for (auto& t : f(c.values)) c.expected.emplace_back(std::move(t));
  return c;
}

std::vector<tensor> random_values(const std::vector<shape_t>& shapes, rng& g) {
  std::vector<tensor> v;
  for (const auto& s : shapes) v.push_back(random_tensor(s, g));
  return v;
}

/// 0/1 values (a condition, a mask).
tensor random_bools(const shape_t& s, rng& g) {
  tensor t(s);
  for (auto& v : t.data) v = g.coin() ? 1.0 : 0.0;
  return t;
}

/// `labels` with each letter replaced by '1' now and then (a broadcast dim of size 1).
std::string with_ones(std::string labels, rng& g) {
  for (auto& c : labels)
    if (g.one_in(4)) c = '1';
  return labels;
}

TEST_CASE("oracle: scale, pow, dropout") {
  rule_stats scale_st{"scale"}, pow_st{"pow"}, drop_st{"dropout"};
  rng g(0x7363616c65ULL);
  const auto scale_f = [](const std::vector<tensor>& in) { return std::vector{ops_a::scale(in[0], 1.5, -0.5, false)}; };
  const auto pow_f = [](const std::vector<tensor>& in) { return std::vector{ops_a::pow(in[0], 3.0)}; };
  // dropout's kernel stands for a draw that keeps everything (mask of ones, upscale by 1 / (1 - p)):
  // a mask drawn per device cannot be compared with an unsharded draw.
  const auto drop_f = [](const std::vector<tensor>& in) {
    return std::vector{ops_a::scale(in[0], 2.0, 0.0, true), tensor(in[0].shape, 1.0)};
  };
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string m = " " + mesh_string(mesh);
    for (std::size_t rank = 1; rank <= 4; ++rank) {
      const std::string xl = letters.substr(0, rank);
      for (const auto& ls : layouts(mesh.ndim(), {rank}, sum_max, 10, g)) {
        const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
        const auto in = make_specs(mesh, {xs}, ls);
        check_forward<ctspmd::rules::scale>(scale_st, in, {1.5, -0.5, false}, make_case({random_tensor(xs, g)}, scale_f, "scale" + m), g);
        check_forward<ctspmd::rules::power>(pow_st, in, {3.0}, make_case({random_tensor(xs, g)}, pow_f, "pow" + m), g);
        check_forward<ctspmd::rules::dropout>(drop_st, in, {}, make_case({random_tensor(xs, g)}, drop_f, "dropout" + m), g);
      }
      for (const auto& ls : layouts(mesh.ndim(), {rank, rank}, {}, 6, g)) {
        const shape_t xs = shape_of(xl, label_sizes(mesh, {xl, xl}, ls, g));
        const auto in = replicated_specs(mesh, {xs});
        const auto out1 = make_specs(mesh, {xs}, {ls[0]});
        check_backward<ctspmd::rules::scale>(scale_st, in, out1, {1.5, -0.5, false}, make_case({random_tensor(xs, g)}, scale_f, "scale" + m), g);
        check_backward<ctspmd::rules::power>(pow_st, in, out1, {3.0}, make_case({random_tensor(xs, g)}, pow_f, "pow" + m), g);
        check_backward<ctspmd::rules::dropout>(drop_st, in, make_specs(mesh, {xs, xs}, ls), {},
                                               make_case({random_tensor(xs, g)}, drop_f, "dropout" + m), g);
      }
    }
  }
  scale_st.report();
  pow_st.report();
  drop_st.report();
}

TEST_CASE("oracle: add_n, fused_dropout_add, swiglu with y") {
  rule_stats add_st{"add_n"}, fda_st{"fused_dropout_add"}, sw_st{"swiglu (x, y)"};
  rng g(0x6164645f6eULL);
  const auto add_f = [](const std::vector<tensor>& in) { return std::vector{ops_a::add_n(in)}; };
  const auto fda_f = [](const std::vector<tensor>& in) {  // p = 0: out = x + y; seed_offset a constant
    return std::vector{ops::add(in[0], in[1]), tensor({2}, 0.0)};
  };
  const auto sw_f = [](const std::vector<tensor>& in) { return std::vector{ops_a::swiglu(in[0], in[1])}; };
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string m = " " + mesh_string(mesh);
    for (std::size_t rank = 1; rank <= 3; ++rank) {
      const std::string xl = letters.substr(0, rank);
      for (std::size_t n = 1; n <= 3; ++n) {
        const std::vector<std::string> labels(n, xl);
        for (const auto& ls : layouts(mesh.ndim(), std::vector<std::size_t>(n, rank), sum_max, 10, g)) {
          const shape_t xs = shape_of(xl, label_sizes(mesh, labels, ls, g));
          const std::vector<shape_t> shapes(n, xs);
          const auto in = make_specs(mesh, shapes, ls);
          check_forward<ctspmd::rules::add_n>(add_st, in, {}, make_case(random_values(shapes, g), add_f, "add_n" + m), g);
          if (n != 2) continue;
          check_forward<ctspmd::rules::fused_dropout_add>(fda_st, in, {.p = 0.0},
                                                          make_case(random_values(shapes, g), fda_f, "fused_dropout_add" + m), g);
          check_forward<ctspmd::rules::swiglu>(sw_st, in, {}, make_case(random_values(shapes, g), sw_f, "swiglu" + m), g);
        }
      }
      for (const auto& ls : layouts(mesh.ndim(), {rank}, {}, 6, g)) {
        const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
        const std::vector<shape_t> two{xs, xs};
        const auto out = make_specs(mesh, {xs}, ls);
        check_backward<ctspmd::rules::add_n>(add_st, replicated_specs(mesh, two), out, {},
                                             make_case(random_values(two, g), add_f, "add_n" + m), g);
        check_backward<ctspmd::rules::fused_dropout_add>(
            fda_st, replicated_specs(mesh, two), make_specs(mesh, {xs, {2}}, {ls[0], replicated_layout(1)}), {.p = 0.0},
            make_case(random_values(two, g), fda_f, "fused_dropout_add" + m), g);
        check_backward<ctspmd::rules::swiglu>(sw_st, replicated_specs(mesh, two), out, {},
                                              make_case(random_values(two, g), sw_f, "swiglu" + m), g);
      }
    }
  }
  add_st.report();
  fda_st.report();
  sw_st.report();
}

TEST_CASE("oracle: swiglu without y") {
  rule_stats st{"swiglu (x)"};
  rng g(0x73776967ULL);
  const auto f = [](const std::vector<tensor>& in) { return std::vector{ops_a::swiglu(in[0])}; };
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string what = "swiglu " + mesh_string(mesh);
    for (std::size_t rank = 1; rank <= 4; ++rank) {
      const std::string xl = letters.substr(0, rank);
      const auto absent = ctspmd::dist_tensor_spec({}, {mesh, ctspmd::dims_mapping{}});
      // The last size is even (twice a multiple of its shard count).
      auto x_shape = [&](const std::vector<layout>& ls, bool double_last) {
        auto sizes = label_sizes(mesh, {xl}, ls, g, /*allow_one=*/false);
        if (double_last) sizes[xl.back()] *= 2;
        return shape_of(xl, sizes);
      };
      for (const auto& ls : layouts(mesh.ndim(), {rank}, sum_max, 12, g)) {
        const shape_t xs = x_shape(ls, true);
        auto in = make_specs(mesh, {xs}, ls);
        const bool with_absent = g.coin();
        if (with_absent) in.push_back(absent);
        std::vector<tensor> values{random_tensor(xs, g)};
        if (with_absent) values.push_back(tensor(shape_t{}));
        const auto kernel = [f](const std::vector<tensor>& v) { return f({v[0]}); };
        check_forward<ctspmd::rules::swiglu>(st, in, {}, make_case(values, kernel, what), g);
      }
      for (const auto& ls : layouts(mesh.ndim(), {rank}, {}, 6, g)) {
        const shape_t os = x_shape(ls, false);  // out's sizes
        shape_t xs = os;
        xs.back() *= 2;
        check_backward<ctspmd::rules::swiglu>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {os}, ls), {},
                                              make_case({random_tensor(xs, g)}, f, what), g);
      }
    }
  }
  st.report();
}

TEST_CASE("oracle: where") {
  rule_stats st{"where"};
  rng g(0x7768657265ULL);
  const auto f = [](const std::vector<tensor>& in) { return std::vector{ops_a::where(in[0], in[1], in[2])}; };
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string what = "where " + mesh_string(mesh);
    for (std::size_t rank = 1; rank <= 3; ++rank) {
      const std::string cl = letters.substr(0, rank);
      for (std::size_t rx = 1; rx <= rank; ++rx)
        for (std::size_t ry = 1; ry <= rank; ++ry) {
          const std::vector<std::string> labels{cl, with_ones(cl.substr(rank - rx), g), with_ones(cl.substr(rank - ry), g)};
          auto values = [&](const std::vector<shape_t>& s) {
            return std::vector{random_bools(s[0], g), random_tensor(s[1], g), random_tensor(s[2], g)};
          };
          for (const auto& ls : layouts(mesh.ndim(), {rank, rx, ry}, sum_max, 8, g)) {
            const auto sizes = label_sizes(mesh, labels, ls, g);
            const std::vector<shape_t> shapes{shape_of(labels[0], sizes), shape_of(labels[1], sizes), shape_of(labels[2], sizes)};
            check_forward<ctspmd::rules::where>(st, make_specs(mesh, shapes, ls), {}, make_case(values(shapes), f, what), g);
          }
          for (const auto& ls : layouts(mesh.ndim(), {rank}, {}, 3, g)) {
            const auto sizes = label_sizes(mesh, {cl}, ls, g);
            const std::vector<shape_t> shapes{shape_of(labels[0], sizes), shape_of(labels[1], sizes), shape_of(labels[2], sizes)};
            check_backward<ctspmd::rules::where>(st, replicated_specs(mesh, shapes), make_specs(mesh, {shapes[0]}, ls), {},
                                                 make_case(values(shapes), f, what), g);
          }
        }
    }
  }
  st.report();
}

/// Forward cases of a grad rule `Rule` whose inputs are labelled `labels` (the last one
/// out_grad's), with values from `values` and gradients from `f`.
template <class Rule>
void grad_cases(rule_stats& st, const process_mesh& mesh, const std::vector<std::string>& labels,
                const typename Rule::attributes& attrs, std::size_t budget,
                const std::function<std::vector<tensor>(const std::vector<shape_t>&)>& values,
                const std::function<std::vector<tensor>(const std::vector<tensor>&)>& f, const std::string& what, rng& g,
                bool allow_one = true) {
  std::vector<std::size_t> ranks;
  for (const auto& l : labels) ranks.push_back(l.size());
  for (const auto& ls : layouts(mesh.ndim(), ranks, sum_max, budget, g)) {
    const auto sizes = label_sizes(mesh, labels, ls, g, allow_one);
    std::vector<shape_t> shapes;
    for (const auto& l : labels) shapes.push_back(shape_of(l, sizes));
    check_forward<Rule>(st, make_specs(mesh, shapes, ls), attrs, make_case(values(shapes), f, what + " " + mesh_string(mesh)), g);
  }
}

TEST_CASE("oracle: elementwise grads") {
  using ctspmd::rules::elementwise_binary_grad;
  using ctspmd::rules::elementwise_unary_grad;
  rule_stats relu_st{"relu_grad"}, silu_st{"silu_grad"}, gelu_st{"gelu_grad"}, pow_st{"pow_grad"}, add_st{"add_grad"}, mul_st{"multiply_grad"},
      div_st{"divide_grad"}, where_st{"where_grad"}, drop_st{"dropout_grad"}, fda_st{"fused_dropout_add_grad"},
      swy_st{"swiglu_grad (x, y)"}, sw_st{"swiglu_grad (x)"};
  rng g(0x67726164ULL);
  auto randoms = [&](const std::vector<shape_t>& s) { return random_values(s, g); };
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank) {
      const std::string gl = letters.substr(0, rank);
      grad_cases<elementwise_unary_grad>(relu_st, mesh, {gl, gl}, {}, 10, randoms,
                                         [](const std::vector<tensor>& in) { return std::vector{ops_a::relu_grad(in[0], in[1])}; },
                                         "relu_grad", g);
      grad_cases<elementwise_unary_grad>(
          silu_st, mesh, {gl, gl, gl}, {}, 10, randoms,
          [](const std::vector<tensor>& in) { return std::vector{ops_a::silu_grad(in[0], in[1], in[2])}; }, "silu_grad", g);
      grad_cases<ctspmd::rules::gelu_grad>(
          gelu_st, mesh, {gl, gl}, {}, 10, randoms,
          [](const std::vector<tensor>& in) { return std::vector{ops_a::gelu_grad(in[0], in[1])}; }, "gelu_grad", g);
      grad_cases<ctspmd::rules::pow_grad>(
          pow_st, mesh, {gl, gl}, {3.0}, 10, randoms,
          [](const std::vector<tensor>& in) { return std::vector{ops_a::pow_grad(in[0], in[1], 3.0)}; }, "pow_grad", g);
      grad_cases<ctspmd::rules::dropout_grad>(
          drop_st, mesh, {gl, gl}, {}, 10,
          [&](const std::vector<shape_t>& s) { return std::vector{random_bools(s[0], g), random_tensor(s[1], g)}; },
          [](const std::vector<tensor>& in) { return std::vector{ops_a::scale(ops::multiply(in[0], in[1]), 2.0, 0, true)}; },
          "dropout_grad", g);
      grad_cases<ctspmd::rules::fused_dropout_add_grad>(
          fda_st, mesh, {"z", gl}, {}, 10, randoms,
          [](const std::vector<tensor>& in) { return std::vector{in[1], in[1]}; }, "fused_dropout_add_grad", g);
      grad_cases<ctspmd::rules::swiglu_grad>(
          swy_st, mesh, {gl, gl, gl}, {}, 10, randoms,
          [](const std::vector<tensor>& in) {
            const tensor dx = ops::elementwise({in[0], in[1], in[2]}, [](const std::vector<double>& a) {
              const double s = ops_a::sigmoid(a[0]);
              return a[2] * a[1] * s * (1 + a[0] * (1 - s));
            });
            const tensor dy = ops::elementwise({in[0], in[2]}, [](const std::vector<double>& a) { return a[1] * ops_a::silu(a[0]); });
            return std::vector{dx, dy};
          },
          "swiglu_grad", g);
      // swiglu_grad without y: x's last dim is twice out_grad's ('z' sized alone, then doubled)
      {
        const std::string xl = gl.substr(0, rank - 1) + "z";
        for (auto ls : layouts(mesh.ndim(), {rank, 0, rank}, sum_max, 10, g)) {
          ls[1] = replicated_layout(0);  // y absent: shape [], mapping [], not partial
          auto sizes = label_sizes(mesh, {xl, "", gl}, ls, g, false);
          shape_t os = shape_of(gl, sizes);
          shape_t xs = os;
          xs.back() = 2 * sizes[xl.back()];
          os.back() = sizes[xl.back()];
          if (os.back() % shards_of(mesh, ls[2].dm.back()) != 0 || xs.back() % shards_of(mesh, ls[0].dm.back()) != 0) continue;
          const auto f = [](const std::vector<tensor>& in) { return std::vector{ops_a::swiglu_grad(in[0], in[2]), tensor(shape_t{})}; };
          auto c = make_case({random_tensor(xs, g), tensor(shape_t{}), random_tensor(os, g)}, f, "swiglu_grad " + mesh_string(mesh));
          c.expected[1].reset();  // the absent y_grad
          check_forward<ctspmd::rules::swiglu_grad>(sw_st, make_specs(mesh, {xs, {}, os}, ls), {}, c, g);
        }
      }
      // binary grads: x and y suffixes of out_grad's labels, with size-1 dims now and then
      for (std::size_t rx = 1; rx <= rank; ++rx)
        for (std::size_t ry = 1; ry <= rank; ++ry) {
          const std::string xl = with_ones(gl.substr(rank - rx), g), yl = with_ones(gl.substr(rank - ry), g);
          grad_cases<elementwise_binary_grad>(
              add_st, mesh, {xl, yl, gl}, {}, 6, randoms,
              [](const std::vector<tensor>& in) { return ops_a::add_grad(in[0], in[1], in[2]); }, "add_grad", g);
          grad_cases<elementwise_binary_grad>(
              mul_st, mesh, {xl, yl, gl}, {}, 6, randoms,
              [](const std::vector<tensor>& in) { return ops_a::multiply_grad(in[0], in[1], in[2]); }, "multiply_grad", g);
          grad_cases<elementwise_binary_grad>(
              div_st, mesh, {xl, yl, gl, gl}, {}, 6,
              [&](const std::vector<shape_t>& s) {
                return std::vector{random_tensor(s[0], g), random_tensor(s[1], g, 0.5, 2.0), random_tensor(s[2], g),
                                   random_tensor(s[3], g)};
              },
              [](const std::vector<tensor>& in) { return ops_a::divide_grad(in[0], in[1], in[2], in[3]); }, "divide_grad", g);
          grad_cases<ctspmd::rules::where_grad>(
              where_st, mesh, {gl, xl, yl, gl}, {}, 6,
              [&](const std::vector<shape_t>& s) {
                return std::vector{random_bools(s[0], g), random_tensor(s[1], g), random_tensor(s[2], g), random_tensor(s[3], g)};
              },
              [](const std::vector<tensor>& in) { return ops_a::where_grad(in[0], in[1], in[2], in[3]); }, "where_grad", g);
        }
    }
  }
  for (auto* st : {&relu_st, &silu_st, &gelu_st, &pow_st, &add_st, &mul_st, &div_st, &where_st, &drop_st, &fda_st, &swy_st, &sw_st}) st->report();
}

TEST_CASE("oracle: rms_norm") {
  rule_stats st{"rms_norm"};
  rng g(0x726d73ULL);
  constexpr double eps = 1e-5;
  const auto f = [](const std::vector<tensor>& in) {
    auto r = ops_a::rms_norm(in[0], in[1], eps);
    return std::vector{r.out, r.invvar};
  };
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string what = "rms_norm " + mesh_string(mesh);
    for (std::size_t rank = 1; rank <= 4; ++rank) {
      const std::string xl = letters.substr(0, rank);
      const std::string sl = xl.substr(rank - 1);
      const std::string ll = xl.substr(0, rank - 1);
      for (const auto& ls : layouts(mesh.ndim(), {rank, 1}, sum_max, 16, g)) {
        const auto sizes = label_sizes(mesh, {xl, sl}, ls, g);
        const std::vector<shape_t> shapes{shape_of(xl, sizes), shape_of(sl, sizes)};
        check_forward<ctspmd::rules::rms_norm>(st, make_specs(mesh, shapes, ls), {eps}, make_case(random_values(shapes, g), f, what), g);
      }
      for (const auto& ls : layouts(mesh.ndim(), {rank, rank - 1}, {}, 8, g)) {
        const auto sizes = label_sizes(mesh, {xl, ll}, ls, g);
        const std::vector<shape_t> shapes{shape_of(xl, sizes), shape_of(sl, sizes)};
        check_backward<ctspmd::rules::rms_norm>(st, replicated_specs(mesh, shapes),
                                                make_specs(mesh, {shapes[0], shape_of(ll, sizes)}, ls), {eps},
                                                make_case(random_values(shapes, g), f, what), g);
      }
    }
  }
  st.report();
}

TEST_CASE("oracle: rms_norm_grad and layer_norm_grad") {
  rule_stats rms_st{"rms_norm_grad"}, ln_st{"layer_norm_grad"};
  rng g(0x6e6f726d67ULL);
  constexpr double eps = 1e-5;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank) {
      const std::string xl = letters.substr(0, rank);
      const std::string sl = xl.substr(rank - 1), ll = xl.substr(0, rank - 1);
      grad_cases<ctspmd::rules::rms_norm_grad>(
          rms_st, mesh, {xl, sl, ll, xl}, {eps}, 16,
          [&](const std::vector<shape_t>& s) {
            const tensor x = random_tensor(s[0], g), sc = random_tensor(s[1], g);
            return std::vector{x, sc, ops_a::rms_norm(x, sc, eps).invvar, random_tensor(s[3], g)};
          },
          [](const std::vector<tensor>& in) { return ops_a::rms_norm_grad(in[0], in[1], in[2], in[3]); }, "rms_norm_grad", g);
      if (rank < 2) continue;
      for (std::size_t bna = 1; bna < rank; ++bna) {
        // scale and bias span the flattened normalised dims: one label 'z' of their product
        const std::string lead = xl.substr(0, bna);
        for (const auto& ls : layouts(mesh.ndim(), {rank, 1, 1, bna, bna, rank}, sum_max, 16, g)) {
          auto sizes = label_sizes(mesh, {xl, "", "", lead, lead, xl}, ls, g);
          const shape_t xs = shape_of(xl, sizes);
          std::int64_t cols = 1;
          for (std::size_t d = bna; d < rank; ++d) cols *= xs[d];
          if (cols % shards_of(mesh, ls[1].dm[0]) != 0 || cols % shards_of(mesh, ls[2].dm[0]) != 0) continue;
          const tensor x = random_tensor(xs, g), sc = random_tensor({cols}, g), b = random_tensor({cols}, g);
          const auto stats = ops::layer_norm(x, sc, b, static_cast<std::int64_t>(bna), eps);
          const auto f = [bna](const std::vector<tensor>& in) {
            return ops_a::layer_norm_grad(in[0], in[1], in[3], in[4], in[5], bna, eps);
          };
          const auto c = make_case({x, sc, b, stats.mean, stats.variance, random_tensor(xs, g)}, f,
                                   "layer_norm_grad " + mesh_string(mesh) + " bna " + std::to_string(bna));
          check_forward<ctspmd::rules::layer_norm_grad>(
              ln_st, make_specs(mesh, {xs, {cols}, {cols}, stats.mean.shape, stats.variance.shape, xs}, ls),
              {eps, static_cast<std::int64_t>(bna)}, c, g);
        }
      }
    }
  }
  rms_st.report();
  ln_st.report();
}

}  // namespace oracle_elementwise_norms_test
