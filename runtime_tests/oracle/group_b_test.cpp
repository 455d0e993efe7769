// The oracle on the group B rules (LLM training: attention, contraction gradients,
// vocabulary-parallel embedding and cross entropy). A grad rule is checked forward (its only
// direction): each device computes its local gradients from its local inputs, and the gradient,
// its partial parts combined and its shards concatenated, must equal the true gradient.
#include "harness.hpp"
#include "ops_group_b.hpp"

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

namespace {

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

}  // namespace

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
