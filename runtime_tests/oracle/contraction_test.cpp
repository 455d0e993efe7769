// The oracle on the contraction rules: matmul, einsum (rules::einsum<...> and
// dynamic_einsum) and embedding. Each device multiplies (or looks up) its local tensors; a
// contracted axis that is sharded leaves each device a partial sum.
#include "harness.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_contraction_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;
using ctspmd::rules::dynamic_einsum;
using ctspmd::rules::embedding;
using ctspmd::rules::matmul;

const std::string batch_letters = "abcd";

/// Sets operand dims listed in `broadcastable` to size 1 now and then (an unsharded dim one
/// time in four, a sharded one, which the rule must then stop sharding, one time in eight).
void broadcast_some(shape_t& s, const layout& l, const std::vector<std::size_t>& broadcastable, rng& g) {
  for (auto d : broadcastable)
    if (g.one_in(l.dm[d].empty() ? 4 : 8)) s[d] = 1;
}

struct matmul_labels {
  std::string x, y, out;
  std::vector<std::size_t> x_batch, y_batch;  // positions of batch dims
};

matmul_labels label_matmul(std::size_t rx, std::size_t ry, bool tx, bool ty) {
  const std::size_t nb = std::max(rx, ry) > 2 ? std::max(rx, ry) - 2 : 0;
  const std::string batch = batch_letters.substr(0, nb);
  matmul_labels l;
  const auto xb = rx > 2 ? batch.substr(nb - (rx - 2)) : std::string();
  const auto yb = ry > 2 ? batch.substr(nb - (ry - 2)) : std::string();
  l.x = rx == 1 ? "k" : xb + (tx ? "km" : "mk");
  l.y = ry == 1 ? "k" : yb + (ty ? "nk" : "kn");
  l.out = batch + (rx > 1 ? "m" : "") + (ry > 1 ? "n" : "");
  for (std::size_t i = 0; i < xb.size(); ++i) l.x_batch.push_back(i);
  for (std::size_t i = 0; i < yb.size(); ++i) l.y_batch.push_back(i);
  return l;
}

mesh_kernel matmul_kernel(bool tx, bool ty) {
  return per_device([tx, ty](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::matmul(in[0], in[1], tx, ty)};
  });
}

TEST_CASE("oracle: matmul") {
  rule_stats st{"matmul"};
  rng g(0x6d61746d756cULL);
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rx = 1; rx <= 4; ++rx)
      for (std::size_t ry = 1; ry <= 4; ++ry)
        for (int t = 0; t < 4; ++t) {
          const bool tx = (t & 1) != 0;
          const bool ty = (t & 2) != 0;
          if ((tx && rx < 2) || (ty && ry < 2)) continue;
          const auto l = label_matmul(rx, ry, tx, ty);
          const matmul::attributes attrs{tx, ty};
          const std::string what = "matmul " + mesh_string(mesh) + " trans_x " + std::to_string(tx) + " trans_y " +
                                   std::to_string(ty);
          for (const auto& ls : layouts(mesh.ndim(), {rx, ry}, {reduce_type::sum, reduce_type::max}, 20, g)) {
            const auto sizes = label_sizes(mesh, {l.x, l.y}, ls, g);
            shape_t xs = shape_of(l.x, sizes), ys = shape_of(l.y, sizes);
            broadcast_some(xs, ls[0], l.x_batch, g);
            broadcast_some(ys, ls[1], l.y_batch, g);
            op_case c{{random_tensor(xs, g), random_tensor(ys, g)}, {}, matmul_kernel(tx, ty), what};
            c.expected.emplace_back(ops::matmul(c.values[0], c.values[1], tx, ty));
            check_forward<matmul>(st, make_specs(mesh, {xs, ys}, ls), attrs, c, g);
          }
          for (const auto& ls : layouts(mesh.ndim(), {l.out.size()}, {}, 10, g)) {
            const auto sizes = label_sizes(mesh, {l.out, l.x, l.y}, ls, g);
            shape_t xs = shape_of(l.x, sizes), ys = shape_of(l.y, sizes);
            // One operand at most broadcasts a batch label, so the output keeps its size.
            const std::size_t nb = l.out.size() - (rx > 1 ? 1 : 0) - (ry > 1 ? 1 : 0);
            for (std::size_t b = 0; b < nb; ++b) {
              const auto pick = g.uniform(0, 3);
              if (pick == 0 && b + l.x_batch.size() >= nb) xs[b + l.x_batch.size() - nb] = 1;
              if (pick == 1 && b + l.y_batch.size() >= nb) ys[b + l.y_batch.size() - nb] = 1;
            }
            op_case c{{random_tensor(xs, g), random_tensor(ys, g)}, {}, matmul_kernel(tx, ty), what};
            c.expected.emplace_back(ops::matmul(c.values[0], c.values[1], tx, ty));
            const auto os = c.expected[0]->shape;
            const auto out = make_specs(mesh, {os}, {even_only(ls[0], os, mesh)});
            check_backward<matmul>(st, replicated_specs(mesh, {xs, ys}), out, attrs, c, g);
          }
        }
  }
  st.report();
}

TEST_CASE("oracle: bmm") {
  rule_stats st{"bmm"};
  rng g(0x626d6dULL);
  using rule = ctspmd::rules::bmm;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string what = "bmm " + mesh_string(mesh);
    auto make_case = [&](const shape_t& xs, const shape_t& ys) {
      op_case c{{random_tensor(xs, g), random_tensor(ys, g)}, {}, matmul_kernel(false, false), what};
      c.expected.emplace_back(ops::matmul(c.values[0], c.values[1], false, false));
      return c;
    };
    for (const auto& ls : layouts(mesh.ndim(), {3, 3}, {reduce_type::sum, reduce_type::max}, 60, g)) {
      const auto sizes = label_sizes(mesh, {"bmk", "bkn"}, ls, g);
      const shape_t xs = shape_of("bmk", sizes), ys = shape_of("bkn", sizes);
      check_forward<rule>(st, make_specs(mesh, {xs, ys}, ls), {}, make_case(xs, ys), g);
    }
    for (const auto& ls : layouts(mesh.ndim(), {3}, {}, 30, g)) {
      const auto sizes = label_sizes(mesh, {"bmn", "bmk", "bkn"}, ls, g);
      const shape_t xs = shape_of("bmk", sizes), ys = shape_of("bkn", sizes);
      check_backward<rule>(st, replicated_specs(mesh, {xs, ys}), make_specs(mesh, {shape_of("bmn", sizes)}, ls), {},
                           make_case(xs, ys), g);
    }
  }
  st.report();
}

/// Einsum notations the oracle runs: contractions, transposition, full reduction, outer
/// product, three operands, and size-1 ('1') dims.
const std::vector<std::string> notations = {
    "mk,kn->mn",   "bsh,hd->bsd", "ij->ji",      "ij->",         "i,i->",         "ij,j->i",   "bij,bjk->bik",
    "ab,cd->abcd", "ij,ij->ij",   "abcd->db",    "abc,cd,de->abe", "1i,ij->1j",    "i1j,jk->ik", "ab,b->ab"};

std::vector<std::string> operand_labels(const std::string& notation) {
  const auto p = ops::parse_einsum(notation);
  return p.inputs;
}

mesh_kernel einsum_kernel(const std::string& notation) {
  return per_device([notation](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::einsum(notation, in)};
  });
}

/// Forward and backward cases of one einsum notation, checked with `Rule` (attrs given).
template <class Rule>
void check_einsum(rule_stats& st, const std::string& notation, const typename Rule::attributes& attrs, rng& g,
                  std::size_t budget) {
  const auto labels = operand_labels(notation);
  const auto output = ops::parse_einsum(notation).output;
  std::vector<std::size_t> ranks;
  for (const auto& l : labels) ranks.push_back(l.size());
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string what = "einsum \"" + notation + "\" " + mesh_string(mesh);
    for (const auto& ls : layouts(mesh.ndim(), ranks, {reduce_type::sum}, budget, g)) {
      // A letter sharded somewhere is still size 1 now and then: the rule must not shard it.
      auto sizes = label_sizes(mesh, labels, ls, g);
      for (auto& [c, s] : sizes)
        if (s > 1 && g.one_in(12)) s = 1;
      std::vector<shape_t> shapes;
      op_case c{{}, {}, einsum_kernel(notation), what};
      for (const auto& l : labels) {
        shapes.push_back(shape_of(l, sizes));
        c.values.push_back(random_tensor(shapes.back(), g));
      }
      c.expected.emplace_back(ops::einsum(notation, c.values));
      check_forward<Rule>(st, make_specs(mesh, shapes, ls), attrs, c, g);
    }
    for (const auto& ls : layouts(mesh.ndim(), {output.size()}, {}, budget / 2, g)) {
      std::vector<std::string> all{output};
      all.insert(all.end(), labels.begin(), labels.end());
      const auto sizes = label_sizes(mesh, all, ls, g);
      std::vector<shape_t> shapes;
      op_case c{{}, {}, einsum_kernel(notation), what};
      for (const auto& l : labels) {
        shapes.push_back(shape_of(l, sizes));
        c.values.push_back(random_tensor(shapes.back(), g));
      }
      c.expected.emplace_back(ops::einsum(notation, c.values));
      const auto os = c.expected[0]->shape;
      check_backward<Rule>(st, replicated_specs(mesh, shapes), make_specs(mesh, {os}, {even_only(ls[0], os, mesh)}),
                           attrs, c, g);
    }
  }
}

TEST_CASE("oracle: einsum") {
  rng g(0x65696e73756dULL);
  rule_stats dynamic{"einsum (dynamic_einsum)"};
  for (const auto& n : notations) check_einsum<dynamic_einsum>(dynamic, n, {n}, g, 24);
  dynamic.report();

  // The compile-time notation form runs the same machinery; a few notations through it.
  rule_stats fixed{"einsum<...>"};
  check_einsum<ctspmd::rules::einsum<"bsh,hd->bsd">>(fixed, "bsh,hd->bsd", {}, g, 24);
  check_einsum<ctspmd::rules::einsum<"abc,cd,de->abe">>(fixed, "abc,cd,de->abe", {}, g, 24);
  check_einsum<ctspmd::rules::einsum<"i1j,jk->ik">>(fixed, "i1j,jk->ik", {}, g, 24);
  fixed.report();
}

/// The embedding's local variant: a device whose table rows are sharded holds its block of
/// `rows` rows (block b of the row dim: rows [b * rows, (b + 1) * rows)); it looks up only
/// those (ids offset by the first row it holds) and contributes zeros for the others, so its
/// output is a partial sum.
mesh_kernel embedding_kernel(std::int64_t padding_idx) {
  return per_device([padding_idx](const shape_t& c, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
    const auto block = block_on(info.inputs[1], 0, c);
    const std::int64_t offset = block.count == 1 ? -1 : block.index * in[1].shape[0];
    return std::vector<tensor>{ops::embedding(in[0], in[1], padding_idx, offset)};
  });
}

/// Ids in [0, rows), the padding row among them now and then.
tensor random_ids(const shape_t& s, std::int64_t rows, std::int64_t padding_idx, rng& g) {
  tensor t(s);
  for (auto& v : t.data)
    v = static_cast<double>(padding_idx >= 0 && g.one_in(4) ? padding_idx : g.uniform(0, rows - 1));
  return t;
}

TEST_CASE("oracle: embedding") {
  rule_stats st{"embedding"};
  rng g(0x656d626564ULL);
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rx = 1; rx <= 3; ++rx)
      for (int variant = 0; variant < 3; ++variant) {
        // Paddle's defaults, a padding row, and sparse (both refused when the rows are sharded).
        const embedding::attributes attrs{variant == 1 ? 1 : -1, variant == 2};
        const std::string xl = batch_letters.substr(0, rx);
        const std::string out_l = xl + "h";
        const std::string what = "embedding " + mesh_string(mesh) + " padding_idx " +
                                 std::to_string(attrs.padding_idx) + " sparse " + std::to_string(attrs.sparse);
        auto make_case = [&](const std::map<char, std::int64_t>& sizes) {
          const shape_t xs = shape_of(xl, sizes), ws = shape_of("vh", sizes);
          op_case c{{random_ids(xs, ws[0], attrs.padding_idx, g), random_tensor(ws, g)}, {},
                    embedding_kernel(attrs.padding_idx), what};
          c.expected.emplace_back(ops::embedding(c.values[0], c.values[1], attrs.padding_idx));
          return c;
        };
        for (const auto& ls : layouts(mesh.ndim(), {rx, 2}, {reduce_type::sum}, 24, g)) {
          auto sizes = label_sizes(mesh, {xl, "vh"}, ls, g);
          if (sizes['v'] < 2) sizes['v'] = 2;  // a padding row and another
          const auto c = make_case(sizes);
          check_forward<embedding>(st, make_specs(mesh, {c.values[0].shape, c.values[1].shape}, ls), attrs, c, g);
        }
        for (const auto& ls : layouts(mesh.ndim(), {rx + 1}, {}, 12, g)) {
          auto sizes = label_sizes(mesh, {out_l}, ls, g);
          sizes['v'] = g.uniform(2, 6);
          const auto c = make_case(sizes);
          const auto os = c.expected[0]->shape;
          check_backward<embedding>(st, replicated_specs(mesh, {c.values[0].shape, c.values[1].shape}),
                                    make_specs(mesh, {os}, {even_only(ls[0], os, mesh)}), attrs, c, g);
        }
      }
  }
  st.report();
}

}  // namespace oracle_contraction_test
