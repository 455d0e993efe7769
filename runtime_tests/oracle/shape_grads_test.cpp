// The oracle on the shape grad rules and bmm_grad (one section each). A grad rule is called forward (its
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
#include "ops_shape.hpp"
#include "ops_shape_grads.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_shape_grads_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

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

// ==== slice_grad / strided_slice_grad ============================================================

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
void slice_grad_cases(rule_stats& st, rng& g, bool strided) {
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank)
      for (int draw = 0; draw < 4; ++draw)
        for (const auto& ls0 : layouts(mesh.ndim(), {rank, rank}, all_reduce_types, 10, g)) {
          // x and out_grad (before the decreased dims are dropped) share their labels.
          const std::string xl = letters.substr(0, rank);
          const shape_t xs = shape_of(xl, label_sizes(mesh, {xl, xl}, {ls0[0], ls0[1]}, g));
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
          const tensor xv = random_tensor(xs, g);
          const shape_t gs = ops::strided_slice(xv, ch.axes, ch.starts, ch.ends, strides, decrease).shape;
          layout lg{{}, ls0[1].partial};  // without the decreased dims
          for (std::size_t d = 0; d < rank; ++d)
            if (std::find_if(decrease.begin(), decrease.end(), [&](std::int64_t a) {
                  return to_size(a < 0 ? a + to_int(rank) : a) == d;
                }) == decrease.end())
              lg.dm.push_back(ls0[1].dm[d]);
          const auto ls = even({ls0[0], lg}, {xs, gs}, mesh);
          const std::string what = std::string(Rule::name) + " " + mesh_string(mesh) + " x " + shape_string(xs) +
                                   " axes " + list_string(ch.axes) + " starts " + list_string(ch.starts) + " ends " +
                                   list_string(ch.ends) + " strides " + list_string(strides) + " decrease " +
                                   list_string(decrease);
          const auto kernel = per_device([xs, ch, strides](const shape_t& c, const ctspmd::spmd_info& info,
                                                           const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::strided_slice_grad(in[1], local_shape(xs, info.outputs[0], c, true), ch.axes,
                                                               ch.starts, ch.ends, strides)};
          });
          op_case c{{xv, values_for(gs, ls[1], g)}, {}, kernel, what};
          c.expected.emplace_back(ops::strided_slice_grad(c.values[1], xs, ch.axes, ch.starts, ch.ends, strides));
          check_forward<Rule>(st, make_specs(mesh, {xs, gs}, ls), attrs, c, g);
        }
  }
  st.report();
}

TEST_CASE("oracle: slice_grad") {
  rule_stats st{"slice_grad"};
  rng g(0x736c67726164ULL);
  slice_grad_cases<ctspmd::rules::slice_grad>(st, g, false);
}
TEST_CASE("oracle: strided_slice_grad") {
  rule_stats st{"strided_slice_grad"};
  rng g(0x7373677261ULL);
  slice_grad_cases<ctspmd::rules::strided_slice_grad>(st, g, true);
}

// ==== pad_grad ===================================================================================

TEST_CASE("oracle: pad_grad") {
  rule_stats st{"pad_grad"};
  rng g(0x70616467ULL);
  using rule = ctspmd::rules::pad_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank)
      for (const auto& ls0 : layouts(mesh.ndim(), {rank}, all_reduce_types, 60, g)) {
        const shape_t gs = shape_for(mesh, rank, ls0[0], g, 6);
        rule::attributes attrs;
        std::vector<std::int64_t> paddings;
        for (std::size_t d = 0; d < rank; ++d) {
          const std::int64_t before = g.coin() ? 0 : g.uniform(0, std::min<std::int64_t>(2, gs[d]));
          const std::int64_t after = g.coin() ? 0 : g.uniform(0, std::min<std::int64_t>(2, gs[d] - before));
          paddings.push_back(before);
          paddings.push_back(after);
          attrs.paddings.push_back(before);
          attrs.paddings.push_back(after);
        }
        attrs.pad_value = g.coin() ? 0.0 : 1.5;
        const std::string what = "pad_grad " + mesh_string(mesh) + " out_grad " + shape_string(gs) + " paddings " +
                                 list_string(paddings);
        const auto ls = even(ls0, {gs}, mesh);
        const auto kernel = per_device([paddings](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
          return std::vector<tensor>{ops::pad_grad(in[0], paddings)};
        });
        op_case c{{values_for(gs, ls[0], g)}, {}, kernel, what};
        c.expected.emplace_back(ops::pad_grad(c.values[0], paddings));
        check_forward<rule>(st, make_specs(mesh, {gs}, ls), attrs, c, g);
      }
  }
  st.report();
}

// ==== expand_as_grad =============================================================================

TEST_CASE("oracle: expand_as_grad") {
  rule_stats st{"expand_as_grad"};
  rng g(0x65786772ULL);
  using rule = ctspmd::rules::expand_as_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t n = 0; n <= 4; ++n)
      for (std::size_t r = 0; r <= n; ++r)
        for (const auto& ls0 : layouts(mesh.ndim(), {r, n}, all_reduce_types, 16, g)) {
          // out_grad sized first; x right-aligned, each dim out_grad's or 1.
          const std::string gl = letters.substr(0, n);
          const auto sizes = label_sizes(mesh, {gl, gl.substr(n - r)}, {ls0[1], ls0[0]}, g);
          const shape_t gs = shape_of(gl, sizes);
          shape_t xs;
          for (std::size_t i = 0; i < r; ++i) xs.push_back(g.one_in(3) ? 1 : gs[i + n - r]);
          const auto ls = even({ls0[0], ls0[1]}, {xs, gs}, mesh);
          rule::attributes attrs;
          if (g.coin())
            for (auto v : gs) attrs.target_shape.push_back(v);
          const std::string what = "expand_as_grad " + mesh_string(mesh) + " x " + shape_string(xs) + " out_grad " +
                                   shape_string(gs);
          const auto kernel = per_device([xs](const shape_t& c, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::expand_grad(in[1], local_shape(xs, info.outputs[0], c, true))};
          });
          op_case c{{random_tensor(xs, g), values_for(gs, ls[1], g)}, {}, kernel, what};
          c.expected.emplace_back(ops::expand_grad(c.values[1], xs));
          check_forward<rule>(st, make_specs(mesh, {xs, gs}, ls), attrs, c, g);
        }
  }
  st.report();
}

// ==== stack_grad, and unbind_grad (the stack rule) ================================================

TEST_CASE("oracle: stack_grad") {
  rule_stats st{"stack_grad"};
  rng g(0x737467ULL);
  using rule = ctspmd::rules::stack_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 4; ++rank)
      for (std::size_t a = 0; a < rank; ++a)
        for (const auto& ls0 : layouts(mesh.ndim(), {rank}, all_reduce_types, 12, g)) {
          const rule::attributes attrs{g.coin() ? to_int(a) : to_int(a) - to_int(rank)};
          shape_t gs = shape_for(mesh, rank, ls0[0], g, 6);
          if (gs[a] > 4 && ls0[0].dm[a].empty()) gs[a] = g.uniform(1, 4);  // a few gradients
          const auto ls = even(ls0, {gs}, mesh);
          const std::string what = "stack_grad " + mesh_string(mesh) + " out_grad " + shape_string(gs) + " axis " +
                                   std::to_string(attrs.axis);
          const auto kernel = per_device([attrs](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
            return ops::unstack(in[0], attrs.axis);
          });
          op_case c{{values_for(gs, ls[0], g)}, {}, kernel, what};
          for (auto& t : ops::unstack(c.values[0], attrs.axis)) c.expected.emplace_back(std::move(t));
          check_forward<rule>(st, make_specs(mesh, {gs}, ls), attrs, c, g);
        }
  }
  st.report();
}

TEST_CASE("oracle: unbind_grad (the stack rule)") {
  rule_stats st{"unbind_grad"};
  rng g(0x756e6267ULL);
  using rule = ctspmd::rules::rule_for<"unbind_grad">;
  static_assert(std::is_same_v<rule, ctspmd::rules::stack>);
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 3; ++rank)
      for (std::size_t a = 0; a <= rank; ++a) {
        const std::size_t count = to_size(g.uniform(1, 3));  // unbind's outputs: x's size at the axis
        for (const auto& ls0 : layouts(mesh.ndim(), std::vector<std::size_t>(count, rank), all_reduce_types, 12, g)) {
          const rule::attributes attrs{g.coin() ? to_int(a) : to_int(a) - to_int(rank) - 1};
          const std::string l = letters.substr(0, rank);
          const shape_t s = shape_of(l, label_sizes(mesh, std::vector<std::string>(count, l), ls0, g));
          const auto ls = even(ls0, std::vector<shape_t>(count, s), mesh);
          const std::string what = "unbind_grad " + mesh_string(mesh) + " " + std::to_string(count) + " x out_grad " +
                                   shape_string(s) + " axis " + std::to_string(attrs.axis);
          const auto kernel = per_device([attrs](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::stack(in, attrs.axis)};
          });
          op_case c{{}, {}, kernel, what};
          for (std::size_t i = 0; i < count; ++i) c.values.push_back(values_for(s, ls[i], g));
          c.expected.emplace_back(ops::stack(c.values, attrs.axis));
          check_forward<rule>(st, make_specs(mesh, std::vector<shape_t>(count, s), ls), attrs, c, g);
        }
      }
  }
  st.report();
}

// ==== concat_grad ================================================================================

TEST_CASE("oracle: concat_grad") {
  rule_stats st{"concat_grad"};
  rng g(0x636f6e67ULL);
  using rule = ctspmd::rules::concat_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (std::size_t a = 0; a < rank; ++a)
        for (std::size_t n = 1; n <= 3; ++n) {
          const rule::attributes attrs{g.coin() ? to_int(a) : to_int(a) - to_int(rank)};
          for (const auto& ls0 : layouts(mesh.ndim(), std::vector<std::size_t>(n + 1, rank), all_reduce_types, 10, g)) {
            // One letter per axis but the concat axis, which each operand has its own of.
            std::vector<std::string> labels;
            for (std::size_t i = 0; i <= n; ++i) {
              std::string l = letters.substr(0, rank);
              l[a] = static_cast<char>('p' + i);
              labels.push_back(l);
            }
            const auto sizes = label_sizes(mesh, labels, ls0, g);
            std::vector<shape_t> shapes;
            std::vector<std::int64_t> pieces;
            std::int64_t total = 0;
            for (std::size_t i = 0; i < n; ++i) {
              shapes.push_back(shape_of(labels[i], sizes));
              pieces.push_back(shapes.back()[a]);
              total += pieces.back();
            }
            shape_t gs = shape_of(labels[n], sizes);
            gs[a] = total;
            shapes.push_back(gs);
            const auto ls = even(ls0, shapes, mesh);
            const std::string what = "concat_grad " + mesh_string(mesh) + " out_grad " + shape_string(gs) + " pieces " +
                                     list_string(pieces) + " axis " + std::to_string(attrs.axis);
            const auto kernel = per_device([pieces, attrs](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
              return ops::split(in.back(), pieces, attrs.axis);
            });
            op_case c{{}, {}, kernel, what};
            for (std::size_t i = 0; i <= n; ++i) c.values.push_back(values_for(shapes[i], ls[i], g));
            for (auto& t : ops::split(c.values[n], pieces, attrs.axis)) c.expected.emplace_back(std::move(t));
            check_forward<rule>(st, make_specs(mesh, shapes, ls), attrs, c, g);
          }
        }
  }
  st.report();
}

}  // namespace oracle_shape_grads_test
