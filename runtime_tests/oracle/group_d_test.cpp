// The oracle on group D's rules: the optimizers (adam, adamw, sgd), default_data_parallel, the
// mixture-of-experts rules, the scans and selections, and indexing. Each device runs the CPU
// reference (ops_group_d.hpp) on its local tensors laid out as the rule requires; the outputs,
// reassembled as the rule says, must equal the unsharded computation. Every case runs under
// both semantics.
#include "harness.hpp"
#include "ops_group_d.hpp"

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

namespace {

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

}  // namespace

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

namespace {

/// Integer values in [0, n) (indices), as doubles.
tensor random_indices(const shape_t& s, std::int64_t n, rng& g) {
  tensor t(s);
  for (auto& v : t.data) v = static_cast<double>(g.uniform(0, n - 1));
  return t;
}

/// `sizes[e]` made at least `k` (a multiple of itself, so still divisible by its shards).
void at_least(std::map<char, std::int64_t>& sizes, char e, std::int64_t k) {
  const auto n = sizes.at(e);
  sizes[e] = n * ((k + n - 1) / n);
}

// The MoE rules let each device route its own tokens (see moe.hpp): the reference of an answer
// that splits the tokens into P blocks is the operator run on each block alone, the results
// put back in block order (a dim bound to the tokens holds the blocks one after the other).

/// The number of blocks dim `d` of `a` is split into.
std::int64_t blocks_of(const ctspmd::tensor_dist_attr& a, std::size_t d) {
  std::int64_t n = 1;
  for (const auto m : a.mesh_dims_of(d)) n *= a.process_mesh().dim_size(m);
  return n;
}
/// Block `b` of `blocks` equal ones of dim `d` of `t`.
tensor block(const tensor& t, std::size_t d, std::int64_t b, std::int64_t blocks) {
  const auto n = t.shape.at(d) / blocks;
  return slice(t, d, b * n, n);
}
/// Index values in [0, n / P) for every number of token blocks P a rule may choose on `mesh`
/// (at most its size): a row or slot of any block. At least [0, 1).
tensor block_indices(const shape_t& s, std::int64_t n, const process_mesh& mesh, rng& g) {
  return random_indices(s, std::max<std::int64_t>(1, n / mesh.size()), g);
}
/// `f(b)` for each of `blocks` blocks (a list of outputs each), concatenated output by output
/// along `dims` (-1: summed).
std::vector<std::optional<tensor>> by_blocks(std::int64_t blocks, const std::vector<int>& dims,
                                             const std::function<std::vector<tensor>(std::int64_t)>& f) {
  std::vector<std::vector<tensor>> parts(dims.size());
  for (std::int64_t b = 0; b < blocks; ++b) {
    auto r = f(b);
    for (std::size_t o = 0; o < dims.size(); ++o) parts[o].push_back(std::move(r.at(o)));
  }
  std::vector<std::optional<tensor>> out;
  for (std::size_t o = 0; o < dims.size(); ++o) {
    if (dims[o] >= 0) {
      out.emplace_back(concat(parts[o], to_size(dims[o])));
      continue;
    }
    tensor sum = parts[o][0];
    for (std::size_t b = 1; b < parts[o].size(); ++b)
      for (std::size_t i = 0; i < sum.data.size(); ++i) sum.data[i] += parts[o][b].data[i];
    out.emplace_back(std::move(sum));
  }
  return out;
}

}  // namespace

TEST_CASE("oracle: moe_gate_dispatch") {
  rule_stats st{"moe_gate_dispatch"};
  rng g(0x646973ULL);
  using rule = ctspmd::rules::moe_gate_dispatch;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string what = "moe_gate_dispatch " + mesh_string(mesh);
    auto make_case = [&](const std::map<char, std::int64_t>& sizes, const rule::attributes& attrs) {
      // Each device dispatches its tokens into its block's capacity / P slots.
      const auto kernel = per_device([attrs](const shape_t&, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
        const auto r = ops::moe_gate_dispatch(in[0], in[1], attrs.k, attrs.capacity / blocks_of(info.inputs[0], 0));
        return std::vector<tensor>{r.y, r.combine_weights, r.scatter_index, r.expert_offset, r.expert_id};
      });
      op_case c{{random_tensor(shape_of("sh", sizes), g), random_tensor(shape_of("se", sizes), g)}, {}, kernel,
                what + " k " + std::to_string(attrs.k) + " capacity " + std::to_string(attrs.capacity)};
      c.expected_for = [x = c.values[0], gate = c.values[1], attrs](const ctspmd::spmd_info& info) {
        const auto blocks = blocks_of(info.inputs[0], 0);
        return by_blocks(blocks, {1, 0, 1, -1, 0}, [&](std::int64_t b) {
          const auto r = ops::moe_gate_dispatch(block(x, 0, b, blocks), block(gate, 0, b, blocks), attrs.k,
                                                attrs.capacity / blocks);
          return std::vector<tensor>{r.y, r.combine_weights, r.scatter_index, r.expert_offset, r.expert_id};
        });
      };
      return c;
    };
    for (const auto& ls : layouts(mesh.ndim(), {2, 2}, sum_max, 120, g)) {
      auto sizes = label_sizes(mesh, {"sh", "se"}, ls, g);
      // capacity: the tokens' count (or twice it) divides into the blocks the rule keeps
      const rule::attributes attrs{g.uniform(1, 2), sizes['s'] * g.uniform(1, 2), true};
      at_least(sizes, 'e', attrs.k);
      check_forward<rule>(st, make_specs(mesh, {shape_of("sh", sizes), shape_of("se", sizes)}, ls), attrs,
                          make_case(sizes, attrs), g);
    }
    // y's capacity dim labelled with the tokens: its size divides into their blocks
    const std::vector<std::string> out_labels{"esh", "sk", "ks", "e", "sk"};
    for (const auto& ls : layouts(mesh.ndim(), {3, 2, 2, 1, 2}, {}, 60, g)) {
      auto sizes = label_sizes(mesh, out_labels, ls, g);
      at_least(sizes, 'e', sizes['k']);
      const rule::attributes attrs{sizes['k'], sizes['s'], true};
      std::vector<shape_t> out_shapes;
      for (const auto& l : out_labels) out_shapes.push_back(shape_of(l, sizes));
      check_backward<rule>(st, replicated_specs(mesh, {shape_of("sh", sizes), shape_of("se", sizes)}),
                           make_specs(mesh, out_shapes, ls), attrs, make_case(sizes, attrs), g);
    }
  }
  st.report();
}

TEST_CASE("oracle: moe_gate_dispatch_grad") {
  rule_stats st{"moe_gate_dispatch_grad"};
  rng g(0x64677264ULL);
  using rule = ctspmd::rules::moe_gate_dispatch_grad;
  // grad_y's capacity dim labelled with the tokens: its size divides into their blocks
  const std::vector<std::string> labels{"sk", "ks", "sk", "esh", "sk"};
  const auto kernel = per_device([](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return ops::moe_gate_dispatch_grad(in[0], in[1], in[2], in[3], in[4]);
  });
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (const auto& ls : layouts(mesh.ndim(), {2, 2, 2, 3, 2}, sum_max, 200, g)) {
      auto sizes = label_sizes(mesh, labels, ls, g);
      at_least(sizes, 'e', sizes['k']);
      const rule::attributes attrs{sizes['k'], sizes['s'], true};
      // Slots of a block, a token's experts; now and then a token dropped (slot -1).
      auto slots = block_indices(shape_of("ks", sizes), sizes['e'] * sizes['s'], mesh, g);
      for (auto& v : slots.data)
        if (g.one_in(5)) v = -1;
      op_case c{{random_tensor(shape_of("sk", sizes), g), slots, random_indices(shape_of("sk", sizes), sizes['e'], g),
                 random_tensor(shape_of("esh", sizes), g), random_tensor(shape_of("sk", sizes), g)},
                {},
                kernel,
                "moe_gate_dispatch_grad " + mesh_string(mesh)};
      c.expected_for = [v = c.values](const ctspmd::spmd_info& info) {
        const auto blocks = blocks_of(info.inputs[0], 0);
        return by_blocks(blocks, {0, 0}, [&](std::int64_t b) {
          return ops::moe_gate_dispatch_grad(block(v[0], 0, b, blocks), block(v[1], 1, b, blocks), block(v[2], 0, b, blocks),
                                             block(v[3], 1, b, blocks), block(v[4], 0, b, blocks));
        });
      };
      std::vector<shape_t> shapes;
      for (const auto& v : c.values) shapes.push_back(v.shape);
      check_forward<rule>(st, make_specs(mesh, shapes, ls), attrs, c, g);
    }
  }
  st.report();
}

TEST_CASE("oracle: moe_combine, moe_combine_grad") {
  rng g(0x636f6d62ULL);
  rule_stats st{"moe_combine"}, gst{"moe_combine_grad"};
  using rule = ctspmd::rules::moe_combine;
  using grad_rule = ctspmd::rules::moe_combine_grad;
  const auto kernel = per_device([](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::moe_combine(in[0], in[1], in[2])};
  });
  const auto grad_kernel = per_device([](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return ops::moe_combine_grad(in[0], in[1], in[2], in[3]);
  });
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string what = mesh_string(mesh);
    // x's rows are the token blocks' own (label r, its size a multiple of the tokens' count);
    // an index is a row of the token's block.
    auto values = [&](std::map<char, std::int64_t> sizes) {
      sizes['r'] = sizes['s'] * g.uniform(1, 2);
      return std::vector<tensor>{random_tensor(shape_of("rh", sizes), g), random_tensor(shape_of("sk", sizes), g),
                                 block_indices(shape_of("sk", sizes), sizes.at('r'), mesh, g),
                                 random_tensor(shape_of("sh", sizes), g)};
    };
    auto make_case = [&](const std::map<char, std::int64_t>& sizes) {
      auto v = values(sizes);
      v.pop_back();
      op_case c{v, {}, kernel, "moe_combine " + what};
      c.expected_for = [v](const ctspmd::spmd_info& info) {
        const auto blocks = blocks_of(info.inputs[1], 0);
        return by_blocks(blocks, {0}, [&](std::int64_t b) {
          return std::vector<tensor>{
              ops::moe_combine(block(v[0], 0, b, blocks), block(v[1], 0, b, blocks), block(v[2], 0, b, blocks))};
        });
      };
      return c;
    };
    // x labelled with the tokens for the layouts, so its rows divide into their blocks
    const std::vector<std::string> labels{"sh", "sk", "sk", "sh"};
    for (const auto& ls : layouts(mesh.ndim(), {2, 2, 2}, sum_max, 80, g)) {
      const auto sizes = label_sizes(mesh, labels, ls, g);
      const auto c = make_case(sizes);
      check_forward<rule>(st, make_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape}, ls), {}, c, g);
    }
    for (const auto& ls : layouts(mesh.ndim(), {2}, {}, 20, g)) {
      const auto sizes = label_sizes(mesh, {"sh", "sk"}, ls, g);
      const auto c = make_case(sizes);
      check_backward<rule>(st, replicated_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape}),
                           make_specs(mesh, {shape_of("sh", sizes)}, ls), {}, c, g);
    }
    for (const auto& ls : layouts(mesh.ndim(), {2, 2, 2, 2}, sum_max, 120, g)) {
      const auto sizes = label_sizes(mesh, labels, ls, g);
      op_case c{values(sizes), {}, grad_kernel, "moe_combine_grad " + what};
      c.expected_for = [v = c.values](const ctspmd::spmd_info& info) {
        const auto blocks = blocks_of(info.inputs[1], 0);
        return by_blocks(blocks, {0, 0, 0}, [&](std::int64_t b) {
          return ops::moe_combine_grad(block(v[0], 0, b, blocks), block(v[1], 0, b, blocks), block(v[2], 0, b, blocks),
                                       block(v[3], 0, b, blocks));
        });
      };
      std::vector<shape_t> shapes;
      for (const auto& v : c.values) shapes.push_back(v.shape);
      check_forward<grad_rule>(gst, make_specs(mesh, shapes, ls), {}, c, g);
    }
  }
  st.report();
  gst.report();
}

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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
