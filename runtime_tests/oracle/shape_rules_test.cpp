// The oracle on the shape rules: squeeze, unsqueeze, the reshapes' gradient
// (flatten_grad / reshape_grad / squeeze_grad / unsqueeze_grad), tile and tile_grad, triu and
// triu_grad, expand_as, unbind, slice, strided_slice and pad. These move, copy or mask
// elements, so the rules keep partial inputs partial where the operator commutes with the
// reduction; the oracle checks each such claim with every reduce type. Grad rules are called
// forward (their backward is no reverse inference), so only forward is simulated for them.
#include <algorithm>
#include <string>
#include <vector>

#include "harness.hpp"
#include "ops_shape.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_shape_rules_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

const std::string letters = "abcdef";
using int_list = ctspmd::static_vector<std::int64_t, ctspmd::max_rank>;

std::vector<std::int64_t> to_vec(const int_list& v) { return {v.begin(), v.end()}; }
std::string list_string(const std::vector<std::int64_t>& v) { return shape_string(v); }

/// `l` without shards that `shape` does not split evenly (a given layout must be valid).
std::vector<layout> even(std::vector<layout> ls, const std::vector<shape_t>& shapes, const process_mesh& mesh) {
  for (std::size_t i = 0; i < ls.size(); ++i) ls[i] = even_only(ls[i], shapes[i], mesh);
  return ls;
}

/// A kernel applying `f` to each device's local inputs (the rule replicates every dim whose
/// local computation would need the whole dim).
template <class F>
mesh_kernel local(F f) {
  return per_device([f](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) { return f(in); });
}

/// Each device reshapes its local tensor `input` to its local part of the output of global
/// shape `target` (squeeze, unsqueeze and the reshape gradients).
mesh_kernel reshape_to(shape_t target, std::size_t input = 0) {
  return per_device([target, input](const shape_t& c, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::reshape(in[input], local_shape(target, info.outputs[0], c, /*even=*/true))};
  });
}

/// A random shape for `rank` dims: labels sized for the layout `l`, a size-1 dim now and then
/// (where `l` does not shard it; forced with probability `one`).
shape_t shape_for(const process_mesh& mesh, std::size_t rank, const layout& l, rng& g, int one_in = 0) {
  const std::string xl = letters.substr(0, rank);
  shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, {l}, g));
  if (one_in > 0)
    for (std::size_t d = 0; d < rank; ++d)
      if (l.dm[d].empty() && g.one_in(one_in)) xs[d] = 1;
  return xs;
}

/// Layouts of one operand of `rank`, partial with every reduce type.
std::vector<std::vector<layout>> one(const process_mesh& mesh, std::size_t rank, std::size_t budget, rng& g,
                                     bool partial = true) {
  return layouts(mesh.ndim(), {rank}, partial ? all_reduce_types : std::vector<reduce_type>{}, budget, g);
}

// ==== squeeze / unsqueeze ========================================================================

TEST_CASE("oracle: squeeze") {
  rule_stats st{"squeeze"};
  rng g(0x737175656575ULL);
  using rule = ctspmd::rules::squeeze;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank)
      for (int draw = 0; draw < 3; ++draw) {
        auto make_attrs = [&](const shape_t& xs) {
          rule::attributes a;
          for (std::size_t d = 0; d < rank; ++d)
            if ((xs[d] == 1 && g.coin()) || g.one_in(5)) a.axis.push_back(g.coin() ? to_int(d) : to_int(d) - to_int(rank));
          return a;
        };
        for (const auto& ls0 : one(mesh, rank, 12, g)) {
          const shape_t xs = shape_for(mesh, rank, ls0[0], g, 3);
          const auto ls = even(ls0, {xs}, mesh);
          const auto attrs = make_attrs(xs);
          const shape_t os = ops::squeeze_shape(xs, to_vec(attrs.axis));
          const std::string what = "squeeze " + mesh_string(mesh) + " of " + shape_string(xs) + " axis " +
                                   list_string(to_vec(attrs.axis));
          op_case c{{values_for(xs, ls[0], g)}, {}, reshape_to(os), what};
          c.expected.emplace_back(ops::reshape(c.values[0], os));
          check_forward<rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
        }
        for (const auto& lx : one(mesh, rank, 1, g, false)) {
          const shape_t xs = shape_for(mesh, rank, lx[0], g, 3);
          const auto attrs = make_attrs(xs);
          const shape_t os = ops::squeeze_shape(xs, to_vec(attrs.axis));
          const std::string what = "squeeze " + mesh_string(mesh) + " of " + shape_string(xs) + " axis " +
                                   list_string(to_vec(attrs.axis));
          op_case c{{random_tensor(xs, g)}, {}, reshape_to(os), what};
          c.expected.emplace_back(ops::reshape(c.values[0], os));
          for (const auto& lo : one(mesh, os.size(), 4, g, false))
            check_backward<rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {os}, even(lo, {os}, mesh)), attrs,
                                 c, g);
        }
      }
  }
  st.report();
}

TEST_CASE("oracle: unsqueeze") {
  rule_stats st{"unsqueeze"};
  rng g(0x756e737175656575ULL);
  using rule = ctspmd::rules::unsqueeze;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 3; ++rank)
      for (int draw = 0; draw < 3; ++draw) {
        auto make_attrs = [&] {
          rule::attributes a;
          const auto count = g.uniform(0, 2);
          for (std::int64_t i = 0; i < count; ++i) {
            const auto r = to_int(rank) + i;  // rank before this insertion
            a.axis.push_back(g.uniform(-(r + 1), r));
          }
          return a;
        };
        for (const auto& ls0 : one(mesh, rank, 12, g)) {
          const shape_t xs = shape_for(mesh, rank, ls0[0], g, 5);
          const auto ls = even(ls0, {xs}, mesh);
          const auto attrs = make_attrs();
          const shape_t os = ops::unsqueeze_shape(xs, to_vec(attrs.axis));
          const std::string what = "unsqueeze " + mesh_string(mesh) + " of " + shape_string(xs) + " axis " +
                                   list_string(to_vec(attrs.axis));
          op_case c{{values_for(xs, ls[0], g)}, {}, reshape_to(os), what};
          c.expected.emplace_back(ops::reshape(c.values[0], os));
          check_forward<rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
        }
        for (const auto& lx : one(mesh, rank, 1, g, false)) {
          const shape_t xs = shape_for(mesh, rank, lx[0], g, 5);
          const auto attrs = make_attrs();
          const shape_t os = ops::unsqueeze_shape(xs, to_vec(attrs.axis));
          const std::string what = "unsqueeze " + mesh_string(mesh) + " of " + shape_string(xs) + " axis " +
                                   list_string(to_vec(attrs.axis));
          op_case c{{random_tensor(xs, g)}, {}, reshape_to(os), what};
          c.expected.emplace_back(ops::reshape(c.values[0], os));
          for (const auto& lo : one(mesh, os.size(), 4, g, false))
            check_backward<rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {os}, even(lo, {os}, mesh)), attrs,
                                 c, g);
        }
      }
  }
  st.report();
}

// ==== the reshapes' gradient =====================================================================

TEST_CASE("oracle: reshape_grad (flatten_grad, reshape_grad, squeeze_grad, unsqueeze_grad)") {
  rule_stats st{"reshape_grad"};
  rng g(0x72736772616400ULL);
  using rule = ctspmd::rules::reshape_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank)
      for (int draw = 0; draw < 3; ++draw)
        for (const auto& lg : one(mesh, rank, 12, g)) {
          // out_grad laid out and sized first; x is a regrouping of its shape (a flatten, a
          // split, a size-1 dim removed or inserted).
          const shape_t gs = shape_for(mesh, rank, lg[0], g, 6);
          shape_t xs = gs;
          switch (g.uniform(0, 3)) {
            case 0:  // x had this dim split (out_grad is a flatten of x)
              if (!xs.empty()) {
                const auto d = to_size(g.uniform(0, to_int(xs.size()) - 1));
                for (std::int64_t f = 2; f < xs[d]; ++f)
                  if (xs[d] % f == 0) {
                    xs.insert(xs.begin() + to_int(d) + 1, xs[d] / f);
                    xs[d] = f;
                    break;
                  }
              }
              break;
            case 1:  // two dims of x merged
              if (xs.size() >= 2) {
                xs[0] *= xs[1];
                xs.erase(xs.begin() + 1);
              }
              break;
            case 2: xs.insert(xs.begin() + g.uniform(0, to_int(xs.size())), 1); break;  // unsqueeze's grad
            default:
              xs.erase(std::remove(xs.begin(), xs.end(), 1), xs.end());  // squeeze's grad
          }
          const auto lx = one(mesh, xs.size(), 1, g)[0];
          const std::vector<layout> ls{even_only(lx[0], xs, mesh), lg[0]};
          const std::string what = "reshape_grad " + mesh_string(mesh) + " x " + shape_string(xs) + " out_grad " +
                                   shape_string(gs);
          op_case c{{values_for(xs, ls[0], g), values_for(gs, ls[1], g)}, {}, reshape_to(xs, 1), what};
          c.expected.emplace_back(ops::reshape(c.values[1], xs));
          check_forward<rule>(st, make_specs(mesh, {xs, gs}, ls), {}, c, g);
        }
  }
  st.report();
}

// ==== tile / tile_grad ===========================================================================

std::vector<std::int64_t> random_repeats(std::size_t rank, rng& g) {
  const auto k = to_size(g.uniform(0, to_int(rank) + 2));
  std::vector<std::int64_t> r;
  for (std::size_t i = 0; i < k; ++i) r.push_back(g.one_in(3) ? g.uniform(2, 3) : 1);
  return r;
}
int_list as_list(const std::vector<std::int64_t>& v) {
  int_list l;
  for (auto x : v) l.push_back(x);
  return l;
}

TEST_CASE("oracle: tile") {
  rule_stats st{"tile"};
  rng g(0x74696c65ULL);
  using rule = ctspmd::rules::tile;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 3; ++rank)
      for (int draw = 0; draw < 4; ++draw) {
        const auto reps = random_repeats(rank, g);
        const rule::attributes attrs{as_list(reps)};
        const auto kernel = local([reps](const std::vector<tensor>& in) { return std::vector<tensor>{ops::tile(in[0], reps)}; });
        for (const auto& ls0 : one(mesh, rank, 10, g)) {
          const shape_t xs = shape_for(mesh, rank, ls0[0], g, 6);
          const auto ls = even(ls0, {xs}, mesh);
          const std::string what = "tile " + mesh_string(mesh) + " of " + shape_string(xs) + " repeat_times " +
                                   list_string(reps);
          op_case c{{values_for(xs, ls[0], g)}, {}, kernel, what};
          c.expected.emplace_back(ops::tile(c.values[0], reps));
          check_forward<rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
          const shape_t os = c.expected[0]->shape;
          for (const auto& lo : one(mesh, os.size(), 3, g, false))
            check_backward<rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {os}, even(lo, {os}, mesh)), attrs,
                                 c, g);
        }
      }
  }
  st.report();
}

TEST_CASE("oracle: tile_grad") {
  rule_stats st{"tile_grad"};
  rng g(0x74696c6567ULL);
  using rule = ctspmd::rules::tile_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 3; ++rank)
      for (std::size_t lead = 0; lead <= 2; ++lead) {
        const std::size_t n = rank + lead;
        for (const auto& ls0 : layouts(mesh.ndim(), {rank, n}, all_reduce_types, 12, g)) {
          // out_grad laid out and sized first; a leading dim's size is its repeat count, an x
          // dim is repeated now and then (x's size is then small and free).
          const std::string gl = letters.substr(0, n);
          const auto sizes = label_sizes(mesh, {gl, gl.substr(lead)}, {ls0[1], ls0[0]}, g);
          std::vector<std::int64_t> reps;
          shape_t xs, gs;
          for (std::size_t j = 0; j < n; ++j) {
            const std::int64_t size = sizes.at(gl[j]);
            if (j < lead) {
              reps.push_back(size);
              gs.push_back(size);
            } else if (g.one_in(3)) {
              reps.push_back(g.uniform(2, 3));
              xs.push_back(g.uniform(1, 3));
              gs.push_back(xs.back() * reps.back());
            } else {
              reps.push_back(1);
              xs.push_back(size);
              gs.push_back(size);
            }
          }
          // Without new leading dims, the repeat list may be shorter than x's rank.
          if (lead == 0 && !reps.empty() && g.coin()) {
            const auto drop = to_size(g.uniform(0, to_int(reps.size())));
            bool ones = true;
            for (std::size_t i = 0; i < drop; ++i) ones = ones && reps[i] == 1;
            if (ones) reps.erase(reps.begin(), reps.begin() + to_int(drop));
          }
          const rule::attributes attrs{as_list(reps)};
          const auto ls = even({ls0[0], ls0[1]}, {xs, gs}, mesh);
          const std::string what = "tile_grad " + mesh_string(mesh) + " x " + shape_string(xs) + " out_grad " +
                                   shape_string(gs) + " repeat_times " + list_string(reps);
          const auto kernel = per_device([xs](const shape_t& c, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::tile_grad(in[1], local_shape(xs, info.outputs[0], c, true))};
          });
          op_case c{{values_for(xs, ls[0], g), values_for(gs, ls[1], g)}, {}, kernel, what};
          c.expected.emplace_back(ops::tile_grad(c.values[1], xs));
          check_forward<rule>(st, make_specs(mesh, {xs, gs}, ls), attrs, c, g);
        }
      }
  }
  st.report();
}

// ==== triu / triu_grad ===========================================================================

template <class Rule>
void triu_cases(rule_stats& st, rng& g, bool backward) {
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 2; rank <= 4; ++rank)
      for (int draw = 0; draw < 3; ++draw) {
        const typename Rule::attributes attrs{g.uniform(-2, 2), g.coin()};
        const auto kernel = local([attrs](const std::vector<tensor>& in) {
          return std::vector<tensor>{ops::triu(in[0], attrs.diagonal, attrs.lower)};
        });
        for (const auto& ls0 : one(mesh, rank, 12, g)) {
          const shape_t xs = shape_for(mesh, rank, ls0[0], g);
          const auto ls = even(ls0, {xs}, mesh);
          const std::string what = std::string(Rule::name) + " " + mesh_string(mesh) + " of " + shape_string(xs) +
                                   " diagonal " + std::to_string(attrs.diagonal) + (attrs.lower ? " lower" : "");
          op_case c{{values_for(xs, ls[0], g)}, {}, kernel, what};
          c.expected.emplace_back(ops::triu(c.values[0], attrs.diagonal, attrs.lower));
          check_forward<Rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
          if (backward)
            for (const auto& lo : one(mesh, rank, 2, g, false))
              check_backward<Rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {xs}, even(lo, {xs}, mesh)), attrs,
                                   c, g);
        }
      }
  }
  st.report();
}

TEST_CASE("oracle: triu") {
  rule_stats st{"triu"};
  rng g(0x74726975ULL);
  triu_cases<ctspmd::rules::triu>(st, g, true);
}
TEST_CASE("oracle: triu_grad") {
  rule_stats st{"triu_grad"};
  rng g(0x7472697567ULL);
  triu_cases<ctspmd::rules::triu_grad>(st, g, false);
}

// ==== expand_as ==================================================================================

TEST_CASE("oracle: expand_as") {
  rule_stats st{"expand_as"};
  rng g(0x657870616e64ULL);
  using rule = ctspmd::rules::expand_as;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t n = 0; n <= 4; ++n)
      for (std::size_t r = 0; r <= n; ++r)
        for (const auto& ls0 : layouts(mesh.ndim(), {r, n}, all_reduce_types, 10, g)) {
          // y (the target) sized first; x right-aligned, each dim y's or 1.
          const std::string yl = letters.substr(0, n);
          const auto sizes = label_sizes(mesh, {yl, yl.substr(n - r)}, {ls0[1], ls0[0]}, g);
          const shape_t ys = shape_of(yl, sizes);
          shape_t xs;
          for (std::size_t i = 0; i < r; ++i) xs.push_back(g.one_in(3) ? 1 : ys[i + n - r]);
          const auto ls = even({ls0[0], ls0[1]}, {xs, ys}, mesh);
          const std::string what = "expand_as " + mesh_string(mesh) + " of " + shape_string(xs) + " to " +
                                   shape_string(ys);
          const auto kernel = per_device([ys](const shape_t& c, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::expand(in[0], local_shape(ys, info.outputs[0], c, true))};
          });
          op_case c{{values_for(xs, ls[0], g), values_for(ys, ls[1], g)}, {}, kernel, what};
          c.expected.emplace_back(ops::expand(c.values[0], ys));
          check_forward<rule>(st, make_specs(mesh, {xs, ys}, ls), {}, c, g);
          for (const auto& lo : one(mesh, n, 2, g, false))
            check_backward<rule>(st, replicated_specs(mesh, {xs, ys}), make_specs(mesh, {ys}, even(lo, {ys}, mesh)), {},
                                 c, g);
        }
  }
  st.report();
}

// ==== unbind =====================================================================================

TEST_CASE("oracle: unbind") {
  rule_stats st{"unbind"};
  rng g(0x756e62696e64ULL);
  using rule = ctspmd::rules::unbind;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 4; ++rank)
      for (std::size_t a = 0; a < rank; ++a) {
        const rule::attributes attrs{g.coin() ? to_int(a) : to_int(a) - to_int(rank)};
        const auto kernel = local([attrs](const std::vector<tensor>& in) { return ops::unbind(in[0], attrs.axis); });
        for (const auto& ls0 : one(mesh, rank, 10, g)) {
          const shape_t xs = shape_for(mesh, rank, ls0[0], g);
          const auto ls = even(ls0, {xs}, mesh);
          const std::string what = "unbind " + mesh_string(mesh) + " of " + shape_string(xs) + " axis " +
                                   std::to_string(attrs.axis);
          op_case c{{values_for(xs, ls[0], g)}, {}, kernel, what};
          for (auto& p : ops::unbind(c.values[0], attrs.axis)) c.expected.emplace_back(std::move(p));
          check_forward<rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
          // Backward: every output laid out on its own.
          std::vector<shape_t> os;
          for (const auto& e : c.expected) os.push_back(e->shape);
          for (const auto& lo : layouts(mesh.ndim(), std::vector<std::size_t>(os.size(), rank - 1), {}, 2, g))
            check_backward<rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, os, even(lo, os, mesh)), attrs, c, g);
        }
      }
  }
  st.report();
}

// ==== slice / strided_slice ======================================================================

struct slice_choice {
  std::vector<std::int64_t> axes, starts, ends, strides, decrease;
};
slice_choice choose_slice(const shape_t& xs, bool strided, rng& g) {
  slice_choice s;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    if (!g.coin()) continue;
    const std::int64_t n = xs[d];
    s.axes.push_back(g.coin() ? to_int(d) : to_int(d) - to_int(xs.size()));
    const std::int64_t step = strided ? (g.one_in(3) ? -g.uniform(1, 2) : g.uniform(1, 3)) : 1;
    std::int64_t b = g.uniform(-n - 1, n + 1);
    std::int64_t e = g.uniform(-n - 1, n + 1);
    if (g.one_in(6)) e = step > 0 ? 1000000 : -1000000;  // clamped
    if (!strided && g.one_in(3)) {  // one element, dropped now and then
      b = g.uniform(0, n - 1);
      e = b + 1;
      if (g.coin()) s.decrease.push_back(to_int(d));
    }
    s.starts.push_back(b);
    s.ends.push_back(e);
    s.strides.push_back(step);
  }
  return s;
}

template <class Rule>
void slice_cases(rule_stats& st, rng& g, bool strided) {
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank)
      for (int draw = 0; draw < 4; ++draw)
        for (const auto& ls0 : one(mesh, rank, 8, g)) {
          const shape_t xs = shape_for(mesh, rank, ls0[0], g);
          const auto ls = even(ls0, {xs}, mesh);
          const auto ch = choose_slice(xs, strided, g);
          typename Rule::attributes attrs{};
          attrs.axes = as_list(ch.axes);
          attrs.starts = as_list(ch.starts);
          attrs.ends = as_list(ch.ends);
          std::vector<std::int64_t> strides, decrease;
          if constexpr (requires { attrs.strides; }) {
            attrs.strides = as_list(ch.strides);
            strides = ch.strides;
          } else {
            attrs.decrease_axis = as_list(ch.decrease);
            decrease = ch.decrease;
          }
          const std::string what = std::string(Rule::name) + " " + mesh_string(mesh) + " of " + shape_string(xs) +
                                   " axes " + list_string(ch.axes) + " starts " + list_string(ch.starts) + " ends " +
                                   list_string(ch.ends) + " strides " + list_string(strides) + " decrease " +
                                   list_string(decrease);
          const auto kernel = local([ch, strides, decrease](const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::strided_slice(in[0], ch.axes, ch.starts, ch.ends, strides, decrease)};
          });
          op_case c{{values_for(xs, ls[0], g)}, {}, kernel, what};
          c.expected.emplace_back(ops::strided_slice(c.values[0], ch.axes, ch.starts, ch.ends, strides, decrease));
          check_forward<Rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
          const shape_t os = c.expected[0]->shape;
          for (const auto& lo : one(mesh, os.size(), 2, g, false))
            check_backward<Rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {os}, even(lo, {os}, mesh)), attrs,
                                 c, g);
        }
  }
  st.report();
}

TEST_CASE("oracle: slice") {
  rule_stats st{"slice"};
  rng g(0x736c696365ULL);
  slice_cases<ctspmd::rules::slice>(st, g, false);
}
TEST_CASE("oracle: strided_slice") {
  rule_stats st{"strided_slice"};
  rng g(0x7374726964ULL);
  slice_cases<ctspmd::rules::strided_slice>(st, g, true);
}

// ==== pad ========================================================================================

TEST_CASE("oracle: pad") {
  rule_stats st{"pad"};
  rng g(0x706164ULL);
  using rule = ctspmd::rules::pad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank)
      for (int draw = 0; draw < 4; ++draw) {
        rule::attributes attrs;
        std::vector<std::int64_t> paddings;
        for (std::size_t i = 0; i < 2 * rank; ++i) {
          paddings.push_back(g.coin() ? 0 : g.uniform(1, 2));
          attrs.paddings.push_back(paddings.back());
        }
        static const double values[] = {0.0, 1.0, -1.5};
        attrs.pad_value = values[g.uniform(0, 2)];
        const auto kernel = local([paddings, v = attrs.pad_value](const std::vector<tensor>& in) {
          return std::vector<tensor>{ops::pad(in[0], paddings, v)};
        });
        for (const auto& ls0 : one(mesh, rank, 10, g)) {
          const shape_t xs = shape_for(mesh, rank, ls0[0], g);
          const auto ls = even(ls0, {xs}, mesh);
          const std::string what = "pad " + mesh_string(mesh) + " of " + shape_string(xs) + " paddings " +
                                   list_string(paddings) + " value " + std::to_string(attrs.pad_value);
          op_case c{{values_for(xs, ls[0], g)}, {}, kernel, what};
          c.expected.emplace_back(ops::pad(c.values[0], paddings, attrs.pad_value));
          check_forward<rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
          const shape_t os = c.expected[0]->shape;
          for (const auto& lo : one(mesh, os.size(), 2, g, false))
            check_backward<rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {os}, even(lo, {os}, mesh)), attrs,
                                 c, g);
        }
      }
  }
  st.report();
}

}  // namespace oracle_shape_rules_test
