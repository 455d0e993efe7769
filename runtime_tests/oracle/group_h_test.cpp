// The oracle on group H's grad rules (one section each). A grad rule is called forward (its
// backward is no reverse inference), so only forward is simulated: each device computes its
// local gradients from its local inputs, and each gradient, its partial parts combined and its
// shards concatenated, must equal the true gradient. Gradients that move, select or sum
// elements of out_grad keep a partial out_grad partial where the gradient commutes with the
// reduction; the oracle checks each such claim with every reduce type it is given.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "harness.hpp"
#include "ops_group_c.hpp"
#include "ops_group_h.hpp"

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

namespace {

const std::string letters = "abcdef";
using int_list = ctspmd::static_vector<std::int64_t, ctspmd::max_rank>;

[[maybe_unused]] int_list as_list(const std::vector<std::int64_t>& v) {
  int_list l;
  for (auto x : v) l.push_back(x);
  return l;
}
[[maybe_unused]] std::string list_string(const std::vector<std::int64_t>& v) { return shape_string(v); }

/// `ls` without shards that `shapes` do not split evenly (a given layout must be valid).
std::vector<layout> even(std::vector<layout> ls, const std::vector<shape_t>& shapes, const process_mesh& mesh) {
  for (std::size_t i = 0; i < ls.size(); ++i) ls[i] = even_only(ls[i], shapes[i], mesh);
  return ls;
}

/// A random shape for `rank` dims sized for the layout `l`, a size-1 dim now and then where `l`
/// does not shard it.
[[maybe_unused]] shape_t shape_for(const process_mesh& mesh, std::size_t rank, const layout& l, rng& g, int one_in = 0) {
  const std::string xl = letters.substr(0, rank);
  shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, {l}, g));
  if (one_in > 0)
    for (std::size_t d = 0; d < rank; ++d)
      if (l.dm[d].empty() && g.one_in(one_in)) xs[d] = 1;
  return xs;
}

}  // namespace

// ==== bmm_grad ===================================================================================

TEST_CASE("oracle: bmm_grad") {
  rule_stats st{"bmm_grad"};
  rng g(0x626d6d67ULL);
  using rule = ctspmd::rules::bmm_grad;
  const mesh_kernel kernel = per_device([](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    const auto r = ops::bmm_grad(in[0], in[1], in[2]);
    return std::vector<tensor>{r.dx, r.dy};
  });
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (const auto& ls : layouts(mesh.ndim(), {3, 3, 3}, {reduce_type::sum, reduce_type::max}, 150, g)) {
      const auto sizes = label_sizes(mesh, {"bmk", "bkn", "bmn"}, ls, g);
      const shape_t xs = shape_of("bmk", sizes), ys = shape_of("bkn", sizes), gs = shape_of("bmn", sizes);
      const tensor xv = random_tensor(xs, g), yv = random_tensor(ys, g), gv = random_tensor(gs, g);
      const std::string what = "bmm_grad " + mesh_string(mesh) + " x " + shape_string(xs) + " y " + shape_string(ys);
      op_case c{{xv, yv, gv}, {}, kernel, what};
      const auto want = ops::bmm_grad(xv, yv, gv);
      c.expected = {want.dx, want.dy};
      check_forward<rule>(st, make_specs(mesh, {xs, ys, gs}, even(ls, {xs, ys, gs}, mesh)), {}, c, g);
    }
  }
  st.report();
}

