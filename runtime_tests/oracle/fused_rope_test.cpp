// The oracle on the rotary position embedding rules (fused_rope and fused_rope_grad),
// with k, v, the sin/cos tables and position_ids each given or absent.
// Each device rotates its local q, k, v (or output gradients) with its local sin, cos and
// position_ids; the reassembled results must equal the unsharded computation. Under sequence
// parallelism (sin and cos given, no position_ids) a device's local positions index its local
// rows of sin and cos; without sin and cos the angles come from the local position, so a seq
// dim sharded there would give wrong results.
#include "harness.hpp"
#include "ops_rope.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_fused_rope_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

ctspmd::dist_tensor_spec absent_spec(const process_mesh& mesh) { return {{}, {mesh, ctspmd::dims_mapping{}}}; }

/// One variant of the operator: layout of q, sin/cos tables, GQA, k given, v given.
struct rope_variant {
  bool time_major, neox, gqa, with_v;
  int tables;  ///< 0: no sin/cos, 1: 2-D sin/cos, 2: 4-D sin/cos, 3: 2-D sin/cos with position_ids
  bool with_k;
  std::string describe() const {
    return " time_major " + std::to_string(time_major) + " neox " + std::to_string(neox) + " gqa " +
           std::to_string(gqa) + " k " + std::to_string(with_k) + " v " + std::to_string(with_v) + " tables " +
           std::to_string(tables);
  }
  /// Whether output i (q, k, v) is there to compare.
  bool has_output(std::size_t i) const { return i == 0 || (i == 1 ? with_k : with_v); }
};
rope_variant variant_of(int v) {
  return {(v & 1) != 0, (v & 2) != 0, (v & 4) != 0, (v & 8) != 0, (v >> 4) & 3, (v & 64) == 0};
}
constexpr int variants = 128;

/// The operands' labels: q/k/v, sin/cos, position_ids.
struct rope_labels {
  std::string qkv, table, pos = "bs";
};
rope_labels labels_of(const rope_variant& v) {
  rope_labels l;
  l.qkv = v.time_major ? "sbhd" : "bshd";
  const char rows = v.tables == 3 ? 'r' : 's';
  l.table = v.tables == 2 ? std::string("1") + rows + "1d" : std::string(1, rows) + "d";
  return l;
}

/// The shapes and values of one case: q, k, v, sin, cos, position_ids (absent ones 0-D).
struct rope_operands {
  std::vector<shape_t> shapes;
  std::vector<tensor> values;
};
rope_operands rope_values(const process_mesh& mesh, const rope_variant& v, const std::vector<layout>& ls, rng& g) {
  const auto l = labels_of(v);
  auto sizes = label_sizes(mesh, {l.qkv, l.qkv, l.qkv, l.table, l.table, l.pos}, ls, g, /*allow_one=*/false);
  if (sizes['d'] % 2 != 0) sizes['d'] *= 2;  // rotate_half pairs the head dim's elements
  if (v.tables == 3) sizes['r'] += sizes['s'];  // more rows than positions
  shape_t q = shape_of(l.qkv, sizes), k = q;
  if (v.gqa) q[2] *= 2;
  const shape_t t = shape_of(l.table, sizes);
  rope_operands o;
  o.shapes = {q, v.with_k ? k : shape_t{}, v.with_v ? k : shape_t{}, v.tables ? t : shape_t{}, v.tables ? t : shape_t{},
              v.tables == 3 ? shape_of(l.pos, sizes) : shape_t{}};
  for (std::size_t i = 0; i < 5; ++i) o.values.push_back(o.shapes[i].empty() ? tensor(shape_t{}) : random_tensor(o.shapes[i], g));
  tensor pos(o.shapes[5].empty() ? shape_t{} : o.shapes[5]);
  if (v.tables == 3)
    for (auto& x : pos.data) x = static_cast<double>(g.uniform(0, sizes['r'] - 1));
  o.values.push_back(pos);
  return o;
}

/// Specs of `o` laid out as `ls` (shards that do not divide dropped; none: replicated), absent
/// operands absent.
std::vector<ctspmd::dist_tensor_spec> rope_specs(const process_mesh& mesh, const rope_operands& o,
                                                 const std::vector<layout>& ls) {
  std::vector<ctspmd::dist_tensor_spec> out;
  for (std::size_t i = 0; i < o.shapes.size(); ++i) {
    if (o.shapes[i].empty()) {
      out.push_back(absent_spec(mesh));
      continue;
    }
    out.push_back(ls.empty() ? replicated_specs(mesh, {o.shapes[i]})[0]
                             : make_specs(mesh, {o.shapes[i]}, {even_only(ls[i], o.shapes[i], mesh)})[0]);
  }
  return out;
}

ops::rope_options options_of(const rope_variant& v) { return {v.neox, v.time_major, 10000.0}; }

TEST_CASE("oracle: rope reference (the gradient is the rotation's transpose)") {
  rng g(0x726f7065ULL);
  for (int vi = 0; vi < variants; ++vi) {
    const auto v = variant_of(vi);
    const auto o = rope_values(process_mesh({2}), v, std::vector<layout>(6, replicated_layout(4)), g);
    const auto opt = options_of(v);
    const tensor x = o.values[0], y = random_tensor(x.shape, g);
    const tensor rx = ops::rope(x, o.values[3], o.values[4], o.values[5], opt);
    const tensor gy = ops::rope_grad(y, o.values[3], o.values[4], o.values[5], opt);
    double lhs = 0, rhs = 0;
    for (std::size_t i = 0; i < x.size(); ++i) lhs += rx.data[i] * y.data[i], rhs += x.data[i] * gy.data[i];
    CHECK(std::abs(lhs - rhs) < 1e-9);
  }
}

TEST_CASE("oracle: fused_rope") {
  rule_stats st{"fused_rope"};
  rng g(0x66726f7065ULL);
  using rule = ctspmd::rules::fused_rope;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (int vi = 0; vi < variants; ++vi) {
      const auto v = variant_of(vi);
      const auto opt = options_of(v);
      const std::string what = "fused_rope " + mesh_string(mesh) + v.describe();
      const mesh_kernel kernel = per_device([opt](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
        return std::vector<tensor>{ops::rope(in[0], in[3], in[4], in[5], opt), ops::rope(in[1], in[3], in[4], in[5], opt),
                                   ops::rope(in[2], in[3], in[4], in[5], opt)};
      });
      const std::size_t tr = v.tables == 2 ? 4 : 2;
      const ctspmd::rules::fused_rope_attributes attrs{v.neox, v.time_major, 10000.0};
      for (const auto& ls : layouts(mesh.ndim(), {4, 4, 4, tr, tr, 2}, {reduce_type::sum}, 4, g)) {
        const auto o = rope_values(mesh, v, ls, g);
        op_case c{o.values, {}, kernel, what};
        for (std::size_t i = 0; i < 3; ++i)
          c.expected.push_back(v.has_output(i) ? std::optional<tensor>(ops::rope(o.values[i], o.values[3], o.values[4], o.values[5], opt))
                                               : std::nullopt);
        check_forward<rule>(st, rope_specs(mesh, o, ls), attrs, c, g);
      }
      for (const auto& ls : layouts(mesh.ndim(), {4, 4, 4}, {}, 2, g)) {
        const auto o = rope_values(mesh, v, std::vector<layout>(6, replicated_layout(4)), g);
        op_case c{o.values, {}, kernel, what};
        for (std::size_t i = 0; i < 3; ++i)
          c.expected.push_back(v.has_output(i) ? std::optional<tensor>(ops::rope(o.values[i], o.values[3], o.values[4], o.values[5], opt))
                                               : std::nullopt);
        const auto in = rope_specs(mesh, o, {});
        rope_operands outs{{o.shapes[0], o.shapes[1], o.shapes[2]}, {}};
        const auto out = rope_specs(mesh, outs, ls);
        check_backward<rule>(st, in, out, attrs, c, g);
      }
    }
  }
  st.report();
}

TEST_CASE("oracle: fused_rope_grad") {
  rule_stats st{"fused_rope_grad"};
  rng g(0x67726f7065ULL);
  using rule = ctspmd::rules::fused_rope_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (int vi = 0; vi < variants; ++vi) {
      const auto v = variant_of(vi);
      const auto opt = options_of(v);
      const std::string what = "fused_rope_grad " + mesh_string(mesh) + v.describe();
      // inputs: sin, cos, position_ids, out_q_grad, out_k_grad, out_v_grad
      const mesh_kernel kernel = per_device([opt](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
        return std::vector<tensor>{ops::rope_grad(in[3], in[0], in[1], in[2], opt), ops::rope_grad(in[4], in[0], in[1], in[2], opt),
                                   ops::rope_grad(in[5], in[0], in[1], in[2], opt)};
      });
      const std::size_t tr = v.tables == 2 ? 4 : 2;
      const ctspmd::rules::fused_rope_attributes attrs{v.neox, v.time_major, 10000.0};
      for (const auto& ls : layouts(mesh.ndim(), {4, 4, 4, tr, tr, 2}, {reduce_type::sum}, 4, g)) {
        const auto o = rope_values(mesh, v, ls, g);  // the output gradients in q, k, v's places
        const auto fwd = rope_specs(mesh, o, ls);
        const std::vector<tensor> values = {o.values[3], o.values[4], o.values[5], o.values[0], o.values[1], o.values[2]};
        op_case c{values, {}, kernel, what};
        for (std::size_t i = 0; i < 3; ++i)
          c.expected.push_back(v.has_output(i) ? std::optional<tensor>(ops::rope_grad(o.values[i], o.values[3], o.values[4], o.values[5], opt))
                                               : std::nullopt);
        check_forward<rule>(st, {fwd[3], fwd[4], fwd[5], fwd[0], fwd[1], fwd[2]}, attrs, c, g);
      }
    }
  }
  st.report();
}

}  // namespace oracle_fused_rope_test
