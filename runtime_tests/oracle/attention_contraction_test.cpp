// The oracle on the LLM-training rules (attention, contraction gradients,
// vocabulary-parallel embedding and cross entropy). A grad rule is checked forward (its only
// direction): each device computes its local gradients from its local inputs, and the gradient,
// its partial parts combined and its shards concatenated, must equal the true gradient.
#include "harness.hpp"
#include "step_kernels.hpp"
#include "ops_attention_contraction.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_attention_contraction_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

/// matmul's labels (as contraction_test.cpp), each operand in its stored order.
struct mm_labels {
  std::string x, y, out;
};
mm_labels label_mm(std::size_t rx, std::size_t ry, bool tx, bool ty) {
  const std::size_t nb = std::max(rx, ry) > 2 ? std::max(rx, ry) - 2 : 0;
  const std::string batch = std::string("abcd").substr(0, nb);
  const auto xb = rx > 2 ? batch.substr(nb - (rx - 2)) : std::string();
  const auto yb = ry > 2 ? batch.substr(nb - (ry - 2)) : std::string();
  return {rx == 1 ? "k" : xb + (tx ? "km" : "mk"), ry == 1 ? "k" : yb + (ty ? "nk" : "kn"),
          batch + (rx > 1 ? "m" : "") + (ry > 1 ? "n" : "")};
}

TEST_CASE("oracle: matmul_grad") {
  rule_stats st{"matmul_grad"};
  rng g(0x6d6d67726164ULL);
  using rule = ctspmd::rules::matmul_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rx = 1; rx <= 4; ++rx)
      for (std::size_t ry = 1; ry <= 4; ++ry)
        for (int t = 0; t < 4; ++t) {
          const bool tx = (t & 1) != 0, ty = (t & 2) != 0;
          if ((tx && rx < 2) || (ty && ry < 2)) continue;
          const auto l = label_mm(rx, ry, tx, ty);
          const std::string what = "matmul_grad " + mesh_string(mesh) + " trans_x " + std::to_string(tx) +
                                   " trans_y " + std::to_string(ty);
          const mesh_kernel kernel = per_device([tx, ty](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
            const auto r = ops::matmul_grad(in[0], in[1], in[2], tx, ty);
            return std::vector<tensor>{r.dx, r.dy};
          });
          for (const auto& ls : layouts(mesh.ndim(), {rx, ry, l.out.size()}, {reduce_type::sum}, 16, g)) {
            const auto sizes = label_sizes(mesh, {l.x, l.y, l.out}, ls, g, /*allow_one=*/false);
            shape_t xs = shape_of(l.x, sizes), ys = shape_of(l.y, sizes);
            // A batch dim of one operand is broadcast (size 1) now and then.
            for (std::size_t d = 0; d + 2 < xs.size(); ++d)
              if (g.one_in(5)) xs[d] = 1;
            for (std::size_t d = 0; d + 2 < ys.size(); ++d)
              if (g.one_in(5)) ys[d] = 1;
            const tensor xv = random_tensor(xs, g), yv = random_tensor(ys, g);
            const tensor gv = random_tensor(ops::matmul(xv, yv, tx, ty).shape, g);
            op_case c{{xv, yv, gv}, {}, kernel, what};
            const auto want = ops::matmul_grad(xv, yv, gv, tx, ty);
            c.expected = {want.dx, want.dy};
            std::vector<layout> given = ls;
            given[0] = even_only(given[0], xs, mesh);
            given[1] = even_only(given[1], ys, mesh);
            given[2] = even_only(given[2], gv.shape, mesh);
            check_forward<rule>(st, make_specs(mesh, {xs, ys, gv.shape}, given), {tx, ty}, c, g);
          }
        }
  }
  st.report();
}

/// A 0-d tensor and its spec: an absent optional input.
ctspmd::dist_tensor_spec absent_spec(const process_mesh& mesh) { return {{}, {mesh, ctspmd::dims_mapping{}}}; }

/// Flash attention's operands: q [b, s, h, d], k [b, t, hk, d], v [b, t, hk, e], a mask
/// [b|1, h|1, s, t]; `gqa` makes h twice hk. Layouts for q, k, v and the mask; the sizes are
/// chosen from them.
struct attention_shapes {
  shape_t q, k, v, mask;
};
attention_shapes attention_sizes(const process_mesh& mesh, const std::vector<layout>& ls, bool gqa, rng& g) {
  auto sizes = label_sizes(mesh, {"asce", "atce", "atcf", "acst"}, ls, g, /*allow_one=*/false);
  // a GQA group of two q heads: q's heads split as the kv heads do
  attention_shapes s{shape_of("asce", sizes), shape_of("atce", sizes), shape_of("atcf", sizes), shape_of("acst", sizes)};
  if (gqa) s.q[2] *= 2;
  s.mask[1] = s.q[2];
  if (g.one_in(3)) s.mask[0] = 1;
  if (g.one_in(2)) s.mask[1] = 1;
  return s;
}

TEST_CASE("oracle: flash_attention") {
  rule_stats st{"flash_attention"};
  rng g(0x666c617368ULL);
  using rule = ctspmd::rules::flash_attention;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (int variant = 0; variant < 8; ++variant) {
      const bool gqa = (variant & 1) != 0, with_mask = (variant & 2) != 0, causal = (variant & 4) != 0;
      const std::string what = "flash_attention " + mesh_string(mesh) + " gqa " + std::to_string(gqa) + " mask " +
                               std::to_string(with_mask) + " causal " + std::to_string(causal);
      const mesh_kernel kernel = per_device([causal](const shape_t& c, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
        const auto offset = step::query_offset(info.inputs[0], c, in[0]);
        const auto r = ops::attention(in[0], in[1], in[2], in[4], causal, offset);
        return std::vector<tensor>{r.out, r.softmax, r.lse, tensor({2})};
      });
      bool cp = false;  // context parallelism asked for in every other case
      for (const auto& ls : layouts(mesh.ndim(), {4, 4, 4, 4}, {reduce_type::sum}, 12, g)) {
        cp = !cp;
        auto s = attention_sizes(mesh, ls, gqa, g);
        std::vector<layout> given = {even_only(ls[0], s.q, mesh), even_only(ls[1], s.k, mesh), even_only(ls[2], s.v, mesh),
                                     even_only(ls[3], s.mask, mesh)};
        const tensor qv = random_tensor(s.q, g), kv = random_tensor(s.k, g), vv = random_tensor(s.v, g);
        const tensor mv = with_mask ? random_tensor(s.mask, g) : tensor(shape_t{});
        op_case c{{qv, kv, vv, tensor(shape_t{}), mv}, {}, kernel, what + " context_parallel " + std::to_string(cp)};
        const auto want = ops::attention(qv, kv, vv, mv, causal);
        c.expected = {want.out, want.softmax, want.lse, std::nullopt};
        auto in = make_specs(mesh, {s.q, s.k, s.v}, {given[0], given[1], given[2]});
        in.push_back(absent_spec(mesh));
        in.push_back(with_mask ? make_specs(mesh, {s.mask}, {given[3]})[0] : absent_spec(mesh));
        check_forward<rule>(st, in, {0.0, causal, true, false, "", cp}, c, g);
      }
      for (const auto& ls : layouts(mesh.ndim(), {4, 4, 3}, {}, 8, g)) {
        cp = !cp;
        const auto s = attention_sizes(mesh, {replicated_layout(4), replicated_layout(4), replicated_layout(4), replicated_layout(4)}, gqa, g);
        const tensor qv = random_tensor(s.q, g), kv = random_tensor(s.k, g), vv = random_tensor(s.v, g);
        const tensor mv = with_mask ? random_tensor(s.mask, g) : tensor(shape_t{});
        op_case c{{qv, kv, vv, tensor(shape_t{}), mv}, {}, kernel, what + " context_parallel " + std::to_string(cp)};
        const auto want = ops::attention(qv, kv, vv, mv, causal);
        c.expected = {want.out, want.softmax, want.lse, std::nullopt};
        auto in = replicated_specs(mesh, {s.q, s.k, s.v});
        in.push_back(absent_spec(mesh));
        in.push_back(with_mask ? replicated_specs(mesh, {s.mask})[0] : absent_spec(mesh));
        auto out = make_specs(mesh, {want.out.shape, want.softmax.shape, want.lse.shape},
                              {even_only(ls[0], want.out.shape, mesh), even_only(ls[1], want.softmax.shape, mesh),
                               even_only(ls[2], want.lse.shape, mesh)});
        out.push_back(replicated_specs(mesh, {{2}})[0]);
        check_backward<rule>(st, in, out, {0.0, causal, true, false, "", cp}, c, g);
      }
    }
  }
  st.report();
}

TEST_CASE("oracle: flash_attention_grad") {
  rule_stats st{"flash_attention_grad"};
  rng g(0x666c61736867ULL);
  using rule = ctspmd::rules::flash_attention_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (int variant = 0; variant < 8; ++variant) {
      const bool gqa = (variant & 1) != 0, with_mask = (variant & 2) != 0, causal = (variant & 4) != 0;
      const std::string what = "flash_attention_grad " + mesh_string(mesh) + " gqa " + std::to_string(gqa) + " mask " +
                               std::to_string(with_mask) + " causal " + std::to_string(causal);
      // inputs: q, k, v, out, softmax_lse, seed_offset, attn_mask, out_grad
      const mesh_kernel kernel = per_device([causal](const shape_t& c, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
        const auto offset = step::query_offset(info.inputs[0], c, in[0]);
        const auto r = ops::attention_grad(in[0], in[1], in[2], in[6], in[7], causal, offset);
        return std::vector<tensor>{r.dq, r.dk, r.dv};
      });
      bool cp = false;  // context parallelism asked for in every other case
      for (const auto& ls : layouts(mesh.ndim(), {4, 4, 4, 4, 3, 4, 4}, {reduce_type::sum}, 12, g)) {
        cp = !cp;
        // q, k, v, mask, lse, out, out_grad: out and out_grad share q's labels with v's head dim
        auto s = attention_sizes(mesh, {ls[0], ls[1], ls[2], ls[5]}, gqa, g);
        const tensor qv = random_tensor(s.q, g), kv = random_tensor(s.k, g), vv = random_tensor(s.v, g);
        const tensor mv = with_mask ? random_tensor(s.mask, g) : tensor(shape_t{});
        const auto fwd = ops::attention(qv, kv, vv, mv, causal);
        const tensor dout = random_tensor(fwd.out.shape, g);
        op_case c{{qv, kv, vv, fwd.out, fwd.lse, tensor({2}), mv, dout}, {}, kernel,
                  what + " context_parallel " + std::to_string(cp)};
        const auto want = ops::attention_grad(qv, kv, vv, mv, dout, causal);
        c.expected = {want.dq, want.dk, want.dv};
        std::vector<shape_t> shapes = {s.q, s.k, s.v, fwd.out.shape, fwd.lse.shape, {2}, s.mask, dout.shape};
        std::vector<layout> given = {ls[0], ls[1], ls[2], ls[3], ls[4], replicated_layout(1), ls[5], ls[6]};
        for (std::size_t i = 0; i < given.size(); ++i) given[i] = even_only(given[i], shapes[i], mesh);
        auto in = make_specs(mesh, shapes, given);
        if (!with_mask) in[6] = absent_spec(mesh);
        check_forward<rule>(st, in, {0.0, causal, cp}, c, g);
      }
    }
  }
  st.report();
}

/// Ids in [0, rows), the padding row among them now and then.
tensor ids_in(const shape_t& s, std::int64_t rows, std::int64_t padding_idx, rng& g) {
  tensor t(s);
  for (auto& v : t.data)
    v = static_cast<double>(padding_idx >= 0 && g.one_in(4) ? padding_idx : g.uniform(0, rows - 1));
  return t;
}

TEST_CASE("oracle: c_embedding") {
  rule_stats st{"c_embedding"};
  rng g(0x63656d62ULL);
  using rule = ctspmd::rules::c_embedding;
  const mesh_kernel kernel = per_device([](const shape_t& c, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::embedding(in[1], in[0], -1, step::row_offset(info.inputs[0], c, in[0].shape[0]))};
  });
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string what = "c_embedding " + mesh_string(mesh);
    for (std::size_t rx = 1; rx <= 3; ++rx) {
      const std::string xl = std::string("abc").substr(0, rx);
      for (const auto& ls : layouts(mesh.ndim(), {2, rx}, {reduce_type::sum}, 30, g)) {
        const auto sizes = label_sizes(mesh, {"vh", xl}, ls, g);
        const shape_t ws = shape_of("vh", sizes), xs = shape_of(xl, sizes);
        op_case c{{random_tensor(ws, g), ids_in(xs, ws[0], -1, g)}, {}, kernel, what};
        c.expected.emplace_back(ops::embedding(c.values[1], c.values[0], -1));
        check_forward<rule>(st, make_specs(mesh, {ws, xs}, ls), {}, c, g);
      }
      for (const auto& ls : layouts(mesh.ndim(), {rx + 1}, {}, 12, g)) {
        auto sizes = label_sizes(mesh, {xl + "h"}, ls, g);
        sizes['v'] = g.uniform(2, 6);
        const shape_t ws = shape_of("vh", sizes), xs = shape_of(xl, sizes);
        op_case c{{random_tensor(ws, g), ids_in(xs, ws[0], -1, g)}, {}, kernel, what};
        c.expected.emplace_back(ops::embedding(c.values[1], c.values[0], -1));
        const auto os = c.expected[0]->shape;
        check_backward<rule>(st, replicated_specs(mesh, {ws, xs}), make_specs(mesh, {os}, {even_only(ls[0], os, mesh)}), {},
                             c, g);
      }
    }
  }
  st.report();
}

/// embedding_grad and c_embedding_grad: weight gradients from ids and out_grad, on layouts of
/// x, the weight and out_grad. `weight_first`: c_embedding_grad's operand order.
template <class Rule>
void check_embedding_grad(rule_stats& st, bool weight_first, rng& g) {
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rx = 1; rx <= 3; ++rx)
      for (int pad = 0; pad < (weight_first ? 1 : 2); ++pad) {
        const std::int64_t padding_idx = pad == 1 ? 1 : -1;
        const std::string what = std::string(Rule::name) + " " + mesh_string(mesh) + " padding_idx " + std::to_string(padding_idx);
        const std::string xl = std::string("abc").substr(0, rx);
        const std::size_t wi = weight_first ? 0 : 1, xi = 1 - wi;
        const mesh_kernel kernel = per_device([=](const shape_t& c, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
          const auto rows = in[wi].shape[0];
          const auto offset = step::row_offset(info.inputs[wi], c, rows);
          return std::vector<tensor>{ops::embedding_grad(in[xi], in[2], rows, padding_idx, offset)};
        });
        for (const auto& ls : layouts(mesh.ndim(), {rx, 2, rx + 1}, {reduce_type::sum}, 24, g)) {
          // ls: x, weight, out_grad
          auto sizes = label_sizes(mesh, {xl, "vh", xl + "h"}, ls, g);
          if (sizes['v'] < 2) sizes['v'] = 2;
          const shape_t xs = shape_of(xl, sizes), ws = shape_of("vh", sizes), gs = shape_of(xl + "h", sizes);
          const tensor ids = ids_in(xs, ws[0], padding_idx, g), w = random_tensor(ws, g), og = random_tensor(gs, g);
          op_case c{weight_first ? std::vector<tensor>{w, ids, og} : std::vector<tensor>{ids, w, og}, {}, kernel, what};
          c.expected.emplace_back(ops::embedding_grad(ids, og, ws[0], padding_idx));
          const std::vector<layout> given = {even_only(ls[0], xs, mesh), even_only(ls[1], ws, mesh), even_only(ls[2], gs, mesh)};
          const auto in = weight_first ? make_specs(mesh, {ws, xs, gs}, {given[1], given[0], given[2]})
                                       : make_specs(mesh, {xs, ws, gs}, given);
          typename Rule::attributes attrs{};
          if constexpr (requires { attrs.padding_idx; }) attrs.padding_idx = padding_idx;
          check_forward<Rule>(st, in, attrs, c, g);
        }
      }
  }
}

TEST_CASE("oracle: embedding_grad") {
  rule_stats st{"embedding_grad"};
  rng g(0x656d6267ULL);
  check_embedding_grad<ctspmd::rules::embedding_grad>(st, false, g);
  st.report();
}

TEST_CASE("oracle: c_embedding_grad") {
  rule_stats st{"c_embedding_grad"};
  rng g(0x63656d6267ULL);
  check_embedding_grad<ctspmd::rules::c_embedding_grad>(st, true, g);
  st.report();
}

TEST_CASE("oracle: fused_linear_param_grad_add") {
  rule_stats st{"fused_linear_param_grad_add"};
  rng g(0x666c706761ULL);
  using rule = ctspmd::rules::fused_linear_param_grad_add;
  const mesh_kernel kernel = per_device([](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    const auto r = ops::linear_param_grad_add(in[0], in[1], in[2], in[3]);
    return std::vector<tensor>{r.dx, r.dy};
  });
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 2; rank <= 4; ++rank)
      for (int acc = 0; acc < 2; ++acc) {
        const std::string what = "fused_linear_param_grad_add " + mesh_string(mesh) + " rank " + std::to_string(rank) +
                                 " accumulators " + std::to_string(acc);
        const std::string lead = std::string("abc").substr(0, rank - 1);
        for (const auto& ls : layouts(mesh.ndim(), {rank, rank, 2, 1}, {reduce_type::sum}, 24, g)) {
          const auto sizes = label_sizes(mesh, {lead + "m", lead + "n", "mn", "n"}, ls, g);
          const shape_t xs = shape_of(lead + "m", sizes), ds = shape_of(lead + "n", sizes), ws = shape_of("mn", sizes),
                        bs = shape_of("n", sizes);
          const tensor xv = random_tensor(xs, g), dv = random_tensor(ds, g);
          const tensor wv = acc ? random_tensor(ws, g) : tensor(shape_t{}), bv = acc ? random_tensor(bs, g) : tensor(shape_t{});
          op_case c{{xv, dv, wv, bv}, {}, kernel, what};
          const auto want = ops::linear_param_grad_add(xv, dv, wv, bv);
          c.expected = {want.dx, want.dy};
          auto in = make_specs(mesh, {xs, ds}, {ls[0], ls[1]});
          if (acc) {
            const auto more = make_specs(mesh, {ws, bs}, {even_only(ls[2], ws, mesh), even_only(ls[3], bs, mesh)});
            in.insert(in.end(), more.begin(), more.end());
          } else {
            in.push_back(absent_spec(mesh));
            in.push_back(absent_spec(mesh));
          }
          check_forward<rule>(st, in, {}, c, g);
        }
      }
  }
  st.report();
}

/// c_softmax_with_cross_entropy's kernel, with its collectives (step_kernels.hpp).
mesh_kernel c_softmax_kernel(std::int64_t ignore_index) {
  return [ignore_index](const ctspmd::spmd_info& info, const device_tensors& in) {
    return ctspmd_oracle::step::c_softmax_cross_entropy(info.inputs[0], ignore_index, in);
  };
}

TEST_CASE("oracle: c_softmax_with_cross_entropy") {
  rule_stats st{"c_softmax_with_cross_entropy"};
  rng g(0x63736d6365ULL);
  using rule = ctspmd::rules::c_softmax_with_cross_entropy;
  const std::int64_t ignore = 1;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string what = "c_softmax_with_cross_entropy " + mesh_string(mesh);
    for (std::size_t rank = 1; rank <= 3; ++rank) {
      const std::string lead = std::string("ab").substr(0, rank - 1);
      auto make_case = [&](const std::map<char, std::int64_t>& sizes) {
        const shape_t xs = shape_of(lead + "k", sizes), ls = shape_of(lead + "1", sizes);
        tensor label = ids_in(ls, xs.back(), -1, g);
        for (auto& x : label.data)
          if (g.one_in(6)) x = static_cast<double>(ignore);
        op_case c{{random_tensor(xs, g), label}, {}, c_softmax_kernel(ignore), what};
        const auto want = ops::cross_entropy(c.values[0], c.values[1], -1, false, true, ignore);
        c.expected = {want.softmax_out, want.loss};
        return c;
      };
      for (const auto& ls : layouts(mesh.ndim(), {rank, rank}, {reduce_type::sum}, 30, g)) {
        auto sizes = label_sizes(mesh, {lead + "k", lead + "1"}, ls, g, false);
        if (sizes['k'] < 2) sizes['k'] = 2;
        const auto c = make_case(sizes);
        std::vector<layout> given = {ls[0], even_only(ls[1], c.values[1].shape, mesh)};
        check_forward<rule>(st, make_specs(mesh, {c.values[0].shape, c.values[1].shape}, given), {ignore, 0, 0, 1}, c, g);
      }
      for (const auto& ls : layouts(mesh.ndim(), {rank, rank}, {}, 12, g)) {
        auto sizes = label_sizes(mesh, {lead + "k", lead + "1"}, ls, g, false);
        if (sizes['k'] < 2) sizes['k'] = 2;
        const auto c = make_case(sizes);
        const auto& xs = c.values[0].shape;
        const auto& lsh = c.values[1].shape;
        check_backward<rule>(st, replicated_specs(mesh, {xs, lsh}),
                             make_specs(mesh, {xs, lsh}, {even_only(ls[0], xs, mesh), even_only(ls[1], lsh, mesh)}),
                             {ignore, 0, 0, 1}, c, g);
      }
    }
  }
  st.report();
}

}  // namespace oracle_attention_contraction_test
