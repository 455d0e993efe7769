// The oracle on the mixture-of-experts rules (moe_gate_dispatch, moe_combine and their grads).
// Each device runs the CPU reference (ops_moe.hpp) on its local tensors laid out as the rule
// requires; the outputs, reassembled as the rule says, must equal the unsharded computation.
// Every case runs under both semantics.
#include "harness.hpp"
#include "ops_moe.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_moe_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

const std::vector<reduce_type> sum_max = {reduce_type::sum, reduce_type::max};

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
  for (auto& t : join_blocks(std::move(parts), dims)) out.emplace_back(std::move(t));
  return out;
}

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

}  // namespace oracle_moe_test
