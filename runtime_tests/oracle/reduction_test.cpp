// The oracle on the rules that combine elements: reduction (each operator name with the rule
// the registry gives it: sum, mean, max, min, prod, any, all, frobenius_norm) and layer_norm.
// Each device reduces (or normalises) its local tensor; a sharded reduced axis leaves
// partial results that the recorded reduce type must combine into the true value.
#include "harness.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_reduction_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

const std::string letters = "abcd";

/// Values for a reduction of `kind`: 0/1 for any / all, non-zero factors near 1 for prod.
tensor reduction_input(const shape_t& s, ops::reduce_kind kind, rng& g) {
  if (kind == ops::reduce_kind::any || kind == ops::reduce_kind::all) {
    tensor t(s);
    for (auto& v : t.data) v = g.one_in(kind == ops::reduce_kind::any ? 4 : 2) ? 0.0 : 1.0;
    if (kind == ops::reduce_kind::any)
      for (auto& v : t.data) v = 1.0 - v;  // mostly false, so any is not trivially true
    return t;
  }
  if (kind == ops::reduce_kind::prod) return random_tensor(s, g, -1.5, 1.5, /*nonzero=*/true);
  return random_tensor(s, g);
}

/// Every subset of the dims of a rank-`rank` x as an axis list, entries negative now and then
/// and listed in a shuffled order; the empty list reduces every dim.
std::vector<std::vector<std::int64_t>> axis_lists(std::size_t rank, rng& g) {
  std::vector<std::vector<std::int64_t>> out;
  if (rank == 0) return {{}, {0}, {-1}};
  for (std::size_t mask = 0; mask < (std::size_t{1} << rank); ++mask) {
    std::vector<std::int64_t> axes;
    for (std::size_t d = 0; d < rank; ++d)
      if (mask & (std::size_t{1} << d)) axes.push_back(g.one_in(3) ? to_int(d) - to_int(rank) : to_int(d));
    if (axes.size() > 1 && g.coin()) std::swap(axes.front(), axes.back());
    out.push_back(axes);
  }
  return out;
}

/// Forward and backward cases of the operator `name` of `kind` through `Rule`.
template <class Rule>
void check_reduction(const std::string& name, ops::reduce_kind kind, rng& g) {
  rule_stats st{name};
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank)
      for (const auto& axis : axis_lists(rank, g))
        for (bool keep : {false, true}) {
          typename Rule::attributes attrs;
          for (auto a : axis) attrs.axis.push_back(a);
          attrs.keep_dim = keep;
          const std::string what = name + " " + mesh_string(mesh) + " axis " + ctspmd::to_string(attrs.axis) +
                                   " keep_dim " + std::to_string(keep);
          const auto kernel = per_device([axis, keep, kind](const shape_t&, const ctspmd::spmd_info&,
                                                            const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::reduce(in[0], axis, keep, kind)};
          });
          const std::string xl = letters.substr(0, rank);
          const auto mask = ops::reduced_mask(axis, to_int(rank));
          std::string ol;
          for (std::size_t d = 0; d < rank; ++d)
            if (!mask[d])
              ol.push_back(xl[d]);
            else if (keep)
              ol.push_back('1');
          auto make_case = [&](const shape_t& xs) {
            op_case c{{reduction_input(xs, kind, g)}, {}, kernel, what};
            c.expected.emplace_back(ops::reduce(c.values[0], axis, keep, kind));
            return c;
          };
          for (const auto& ls : layouts(mesh.ndim(), {rank}, all_reduce_types, 6, g)) {
            const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
            check_forward<Rule>(st, make_specs(mesh, {xs}, ls), attrs, make_case(xs), g);
          }
          for (const auto& ls : layouts(mesh.ndim(), {ol.size()}, {}, 2, g)) {
            const auto sizes = label_sizes(mesh, {ol, xl}, ls, g);
            const shape_t xs = shape_of(xl, sizes);
            // A keep_dim '1' dim may be given sharded: backward must drop it.
            check_backward<Rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {shape_of(ol, sizes)}, ls), attrs,
                                 make_case(xs), g);
          }
        }
  }
  st.report();
}

TEST_CASE("oracle: reduction") {
  using ctspmd::rules::rule_for;
  using kind = ops::reduce_kind;
  rng g(0x726564756365ULL);
  check_reduction<rule_for<"sum">>("sum", kind::sum, g);
  check_reduction<rule_for<"mean">>("mean", kind::mean, g);
  check_reduction<rule_for<"max">>("max", kind::max, g);
  check_reduction<rule_for<"min">>("min", kind::min, g);
  check_reduction<rule_for<"prod">>("prod", kind::prod, g);
  check_reduction<rule_for<"any">>("any", kind::any, g);
  check_reduction<rule_for<"all">>("all", kind::all, g);
  check_reduction<rule_for<"frobenius_norm">>("frobenius_norm", kind::frobenius_norm, g);
}

TEST_CASE("oracle: det") {
  rule_stats st{"det"};
  rng g(0x646574ULL);
  using rule = ctspmd::rules::det;
  const auto kernel = per_device([](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::det(in[0])};
  });
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    const std::string what = "det " + mesh_string(mesh);
    for (std::size_t rank = 2; rank <= 4; ++rank) {
      const std::string xl = letters.substr(0, rank - 2) + "nn";  // square matrices
      const std::string ol = letters.substr(0, rank - 2);
      auto make_case = [&](const shape_t& xs, const layout& l) {
        op_case c{{values_for(xs, l, g)}, {}, kernel, what};
        c.expected.emplace_back(ops::det(c.values[0]));
        return c;
      };
      for (const auto& ls : layouts(mesh.ndim(), {rank}, all_reduce_types, 20, g)) {
        const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
        check_forward<rule>(st, make_specs(mesh, {xs}, ls), {}, make_case(xs, ls[0]), g);
      }
      for (const auto& ls : layouts(mesh.ndim(), {rank - 2}, {}, 6, g)) {
        const auto sizes = label_sizes(mesh, {ol, xl}, ls, g);
        const shape_t xs = shape_of(xl, sizes);
        check_backward<rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {shape_of(ol, sizes)}, ls), {},
                             make_case(xs, replicated_layout(rank)), g);
      }
    }
  }
  st.report();
}

TEST_CASE("oracle: layer_norm") {
  rule_stats st{"layer_norm"};
  rng g(0x6c617965726eULL);
  using rule = ctspmd::rules::layer_norm;
  constexpr double eps = 1e-5;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 2; rank <= 4; ++rank)
      for (std::size_t bna = 1; bna < rank; ++bna) {
        // begin_norm_axis counted from the front, and the same axis from the end.
        const rule::attributes attrs{g.coin() ? to_int(bna) : to_int(bna) - to_int(rank), eps};
        const std::string what = "layer_norm " + mesh_string(mesh) + " begin_norm_axis " +
                                 std::to_string(attrs.begin_norm_axis);
        const auto kernel = per_device([attrs](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
          auto r = ops::layer_norm(in[0], in[1], in[2], attrs.begin_norm_axis, attrs.epsilon);
          return std::vector<tensor>{r.out, r.mean, r.variance};
        });
        const std::string xl = letters.substr(0, rank);
        const std::string lead = xl.substr(0, bna);
        auto make_case = [&](const shape_t& xs) {
          const shape_t ss{numel(shape_t(xs.begin() + to_int(bna), xs.end()))};
          op_case c{{random_tensor(xs, g), random_tensor(ss, g), random_tensor(ss, g)}, {}, kernel, what};
          auto r = ops::layer_norm(c.values[0], c.values[1], c.values[2], attrs.begin_norm_axis, eps);
          c.expected = {r.out, r.mean, r.variance};
          return c;
        };
        for (const auto& ls : layouts(mesh.ndim(), {rank, 1, 1}, {reduce_type::sum}, 24, g)) {
          const auto c = make_case(shape_of(xl, label_sizes(mesh, {xl}, ls, g)));
          // scale and bias are sized by x; a given sharding of theirs that does not divide is dropped.
          std::vector<layout> given = ls;
          for (std::size_t i = 1; i < 3; ++i) given[i] = even_only(ls[i], c.values[i].shape, mesh);
          check_forward<rule>(st, make_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape}, given),
                              attrs, c, g);
        }
        for (const auto& ls : layouts(mesh.ndim(), {rank, bna, bna}, {}, 12, g)) {
          const auto c = make_case(shape_of(xl, label_sizes(mesh, {xl, lead, lead}, ls, g)));
          const auto in = replicated_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape});
          const auto out = make_specs(mesh, {c.expected[0]->shape, c.expected[1]->shape, c.expected[2]->shape}, ls);
          check_backward<rule>(st, in, out, attrs, c, g);
        }
      }
  }
  st.report();
}

}  // namespace oracle_reduction_test
