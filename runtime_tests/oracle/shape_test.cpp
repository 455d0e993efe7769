// The oracle on the rules that move elements without combining them: reshape, split and
// concat. These commute with every reduction over a mesh dim, so the rules may keep partial
// inputs partial; the oracle checks each such claim with every reduce type.
#include "harness.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_shape_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

const std::string letters = "abcd";

/// A divisor of n in (1, n), or 0 if n is 1 or prime.
std::int64_t some_divisor(std::int64_t n, rng& g) {
  std::vector<std::int64_t> ds;
  for (std::int64_t d = 2; d < n; ++d)
    if (n % d == 0) ds.push_back(d);
  return ds.empty() ? 0 : g.pick(ds);
}

/// A shape with the element count of `s`, from one to three random regroupings: merge two
/// adjacent dims, split a dim into two factors, refactor two adjacent dims (`[4, 6]` ->
/// `[3, 8]`), insert or remove a size-1 dim. At most 5 dims.
shape_t regroup(shape_t t, rng& g) {
  const auto steps = g.uniform(1, 3);
  for (std::int64_t i = 0; i < steps; ++i) {
    const auto n = to_int(t.size());
    switch (g.uniform(0, 4)) {
      case 0:
        if (n >= 2) {
          const auto j = to_size(g.uniform(0, n - 2));
          t[j] *= t[j + 1];
          t.erase(t.begin() + to_int(j) + 1);
        }
        break;
      case 1:
        if (n >= 1 && n < 5) {
          const auto j = to_size(g.uniform(0, n - 1));
          if (const auto a = some_divisor(t[j], g)) {
            t.insert(t.begin() + to_int(j) + 1, t[j] / a);
            t[j] = a;
          }
        }
        break;
      case 2:
        if (n >= 2) {
          const auto j = to_size(g.uniform(0, n - 2));
          const auto p = t[j] * t[j + 1];
          if (const auto a = some_divisor(p, g)) {
            t[j] = a;
            t[j + 1] = p / a;
          }
        }
        break;
      case 3:
        if (n < 5) t.insert(t.begin() + g.uniform(0, n), 1);
        break;
      default:
        for (std::size_t j = 0; j < t.size(); ++j)
          if (t[j] == 1 && t.size() > 1) {
            t.erase(t.begin() + to_int(j));
            break;
          }
    }
  }
  return t;
}

/// The reshape attribute for `target` from `source`: `0` where a dim is copied (now and
/// then), and one `-1` one time in three.
ctspmd::static_vector<std::int64_t, ctspmd::max_rank> shape_attr(const shape_t& source, const shape_t& target, rng& g) {
  ctspmd::static_vector<std::int64_t, ctspmd::max_rank> a;
  for (std::size_t j = 0; j < target.size(); ++j)
    a.push_back(j < source.size() && source[j] == target[j] && g.coin() ? 0 : target[j]);
  if (!target.empty() && g.one_in(3)) {
    const auto j = to_size(g.uniform(0, to_int(target.size()) - 1));
    if (a[j] != 0) a[j] = -1;
  }
  return a;
}

/// Each device reshapes its local tensor to the local shape of the output as the rule lays
/// it out (the global target shape with each sharded dim divided by its mesh dim's size).
mesh_kernel reshape_kernel(shape_t target) {
  return per_device([target](const shape_t& c, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::reshape(in[0], local_shape(target, info.outputs[0], c, /*even=*/true))};
  });
}

TEST_CASE("oracle: reshape") {
  rule_stats st{"reshape"};
  rng g(0x72657368617065ULL);
  using rule = ctspmd::rules::reshape;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank) {
      const std::string xl = letters.substr(0, rank);
      for (int target_draw = 0; target_draw < 4; ++target_draw) {
        for (const auto& ls : layouts(mesh.ndim(), {rank}, all_reduce_types, 16, g)) {
          const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
          const shape_t target = regroup(xs, g);
          const rule::attributes attrs{shape_attr(xs, target, g)};
          const std::string what = "reshape " + mesh_string(mesh) + " of " + shape_string(xs) + " to " +
                                   ctspmd::to_string(attrs.shape);
          op_case c{{values_for(xs, ls[0], g)}, {}, reshape_kernel(target), what};
          c.expected.emplace_back(ops::reshape(c.values[0], target));
          check_forward<rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
        }
        // Backward: the output (the "source" here) is laid out and sized first, x is a
        // regrouping of it.
        for (const auto& ls : layouts(mesh.ndim(), {rank}, {}, 6, g)) {
          const shape_t os = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
          const shape_t xs = regroup(os, g);
          const rule::attributes attrs{shape_attr(xs, os, g)};
          const std::string what = "reshape " + mesh_string(mesh) + " of " + shape_string(xs) + " to " +
                                   ctspmd::to_string(attrs.shape);
          op_case c{{random_tensor(xs, g)}, {}, reshape_kernel(os), what};
          c.expected.emplace_back(ops::reshape(c.values[0], os));
          check_backward<rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {os}, ls), attrs, c, g);
        }
      }
    }
  }
  st.report();
}

/// Sections adding up to `size`: 1 to 3 of them (0-sized now and then), or `num` equal ones.
struct split_choice {
  ctspmd::rules::split::attributes attrs;
  std::vector<std::int64_t> sizes;  // resolved
};

split_choice choose_split(std::int64_t size, std::int64_t axis, rng& g) {
  split_choice s;
  s.attrs.axis = axis;
  if (g.coin()) {
    std::vector<std::int64_t> nums;
    for (std::int64_t n = 1; n <= std::min<std::int64_t>(size, 4); ++n)
      if (size % n == 0) nums.push_back(n);
    s.attrs.num = g.pick(nums);
    s.sizes.assign(to_size(s.attrs.num), size / s.attrs.num);
    return s;
  }
  const auto count = g.uniform(1, 3);
  std::int64_t left = size;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t v = i + 1 == count ? left : g.uniform(0, left);
    s.sizes.push_back(v);
    s.attrs.sections.push_back(v);
    left -= v;
  }
  if (g.one_in(3)) s.attrs.sections[to_size(g.uniform(0, count - 1))] = -1;
  return s;
}

mesh_kernel split_kernel(std::vector<std::int64_t> sizes, std::int64_t axis) {
  return per_device([sizes, axis](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
    return ops::split(in[0], sizes, axis);
  });
}

TEST_CASE("oracle: split") {
  rule_stats st{"split"};
  rng g(0x73706c6974ULL);
  using rule = ctspmd::rules::split;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 4; ++rank)
      for (std::size_t a = 0; a < rank; ++a) {
        const std::int64_t axis = g.coin() ? to_int(a) : to_int(a) - to_int(rank);
        const std::string xl = letters.substr(0, rank);
        for (const auto& ls : layouts(mesh.ndim(), {rank}, all_reduce_types, 20, g)) {
          const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
          const auto choice = choose_split(xs[a], axis, g);
          const std::string what = "split " + mesh_string(mesh) + " of " + shape_string(xs) + " axis " +
                                   std::to_string(axis) + " num " + std::to_string(choice.attrs.num) + " sections " +
                                   ctspmd::to_string(choice.attrs.sections);
          op_case c{{values_for(xs, ls[0], g)}, {}, split_kernel(choice.sizes, axis), what};
          for (auto& p : ops::split(c.values[0], choice.sizes, axis)) c.expected.emplace_back(std::move(p));
          check_forward<rule>(st, make_specs(mesh, {xs}, ls), choice.attrs, c, g);
        }
        // Backward: every output laid out and sized first; each has its own size on the axis.
        for (std::size_t count = 1; count <= 3; ++count)
          for (const auto& ls : layouts(mesh.ndim(), std::vector<std::size_t>(count, rank), {}, 4, g)) {
            std::vector<std::string> labels(count, xl);
            for (std::size_t i = 0; i < count; ++i) labels[i][a] = static_cast<char>('P' + i);
            const auto sizes = label_sizes(mesh, labels, ls, g);
            rule::attributes attrs;
            attrs.axis = axis;
            std::vector<std::int64_t> sections;
            std::vector<shape_t> out_shapes;
            for (std::size_t i = 0; i < count; ++i) {
              out_shapes.push_back(shape_of(labels[i], sizes));
              sections.push_back(out_shapes.back()[a]);
              attrs.sections.push_back(sections.back());
            }
            shape_t xs = out_shapes[0];
            xs[a] = 0;
            for (auto s : sections) xs[a] += s;
            const std::string what = "split " + mesh_string(mesh) + " of " + shape_string(xs) + " axis " +
                                     std::to_string(axis) + " sections " + ctspmd::to_string(attrs.sections);
            op_case c{{random_tensor(xs, g)}, {}, split_kernel(sections, axis), what};
            for (auto& p : ops::split(c.values[0], sections, axis)) c.expected.emplace_back(std::move(p));
            check_backward<rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, out_shapes, ls), attrs, c, g);
          }
      }
  }
  st.report();
}

TEST_CASE("oracle: concat") {
  rule_stats st{"concat"};
  rng g(0x636f6e636174ULL);
  using rule = ctspmd::rules::concat;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t n = 1; n <= 3; ++n)
      for (std::size_t rank = 1; rank <= 4; ++rank)
        for (std::size_t a = 0; a < rank; ++a) {
          const rule::attributes attrs{g.coin() ? to_int(a) : to_int(a) - to_int(rank)};
          const std::string xl = letters.substr(0, rank);
          std::vector<std::string> labels(n, xl);  // each input its own size on the axis
          for (std::size_t i = 0; i < n; ++i) labels[i][a] = static_cast<char>('P' + i);
          const std::string what = "concat " + mesh_string(mesh) + " of " + std::to_string(n) + " inputs axis " +
                                   std::to_string(attrs.axis);
          const auto kernel = per_device([attrs](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::concat(in, attrs.axis)};
          });
          auto make_case = [&](const std::vector<shape_t>& shapes, const std::vector<layout>& ls) {
            op_case c{{}, {}, kernel, what};
            for (std::size_t i = 0; i < shapes.size(); ++i)
              c.values.push_back(i < ls.size() ? values_for(shapes[i], ls[i], g) : random_tensor(shapes[i], g));
            c.expected.emplace_back(ops::concat(c.values, attrs.axis));
            return c;
          };
          for (auto ls : layouts(mesh.ndim(), std::vector<std::size_t>(n, rank), all_reduce_types, 16, g)) {
            // Inputs partial alike on a mesh dim stay partial: give the others input 0's
            // partial status half of the time (where it fits their layout).
            if (g.coin())
              for (std::size_t i = 1; i < n; ++i) {
                ls[i].partial.clear();
                for (const auto& p : ls[0].partial)
                  if (!make_attr(mesh, ls[i]).shards(p.first)) ls[i].partial.push_back(p);
              }
            const auto sizes = label_sizes(mesh, labels, ls, g);
            std::vector<shape_t> shapes;
            for (const auto& l : labels) shapes.push_back(shape_of(l, sizes));
            check_forward<rule>(st, make_specs(mesh, shapes, ls), attrs, make_case(shapes, ls), g);
          }
          for (const auto& ls : layouts(mesh.ndim(), {rank}, {}, 6, g)) {
            auto sizes = label_sizes(mesh, {xl}, ls, g);
            std::vector<shape_t> shapes;
            for (std::size_t i = 0; i < n; ++i) {
              shapes.push_back(shape_of(xl, sizes));
              shapes.back()[a] = g.uniform(1, 4);
            }
            const auto c = make_case(shapes, {});
            const auto os = c.expected[0]->shape;
            check_backward<rule>(st, replicated_specs(mesh, shapes), make_specs(mesh, {os}, {even_only(ls[0], os, mesh)}),
                                 attrs, c, g);
          }
        }
  }
  st.report();
}

TEST_CASE("oracle: flatten") {
  rule_stats st{"flatten"};
  rng g(0x666c617474656eULL);
  using rule = ctspmd::rules::flatten;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 4; ++rank)
      for (std::size_t start = 0; start < std::max<std::size_t>(rank, 1); ++start)
        for (std::size_t stop = start; stop < std::max<std::size_t>(rank, 1); ++stop) {
          // Negative axes now and then (a 0-D x takes 0 or -1).
          const std::int64_t r = std::max<std::int64_t>(to_int(rank), 1);
          const rule::attributes attrs{g.coin() ? to_int(start) : to_int(start) - r, g.coin() ? to_int(stop) : to_int(stop) - r};
          const std::string xl = letters.substr(0, rank);
          const std::string what = "flatten " + mesh_string(mesh) + " rank " + std::to_string(rank) + " axes " +
                                   std::to_string(attrs.start_axis) + " to " + std::to_string(attrs.stop_axis);
          auto target_of = [&](const shape_t& xs) {
            if (xs.empty()) return shape_t{1};
            shape_t t(xs.begin(), xs.begin() + to_int(start));
            t.push_back(numel(shape_t(xs.begin() + to_int(start), xs.begin() + to_int(stop) + 1)));
            t.insert(t.end(), xs.begin() + to_int(stop) + 1, xs.end());
            return t;
          };
          for (const auto& ls : layouts(mesh.ndim(), {rank}, all_reduce_types, 10, g)) {
            const shape_t xs = shape_of(xl, label_sizes(mesh, {xl}, ls, g));
            op_case c{{values_for(xs, ls[0], g)}, {}, reshape_kernel(target_of(xs)), what};
            c.expected.emplace_back(ops::reshape(c.values[0], target_of(xs)));
            check_forward<rule>(st, make_specs(mesh, {xs}, ls), attrs, c, g);
          }
          // Backward: the output laid out and sized first; its flattened dim splits into x's.
          const std::size_t out_rank = rank == 0 ? 1 : rank - (stop - start);
          for (const auto& ls : layouts(mesh.ndim(), {out_rank}, {}, 4, g)) {
            const std::string ol = letters.substr(0, out_rank);
            const shape_t os = shape_of(ol, label_sizes(mesh, {ol}, ls, g));
            shape_t xs(os.begin(), os.begin() + to_int(std::min(start, out_rank)));
            if (rank > 0) {
              std::int64_t left = os[start];  // split into stop - start + 1 factors
              for (std::size_t d = start; d < stop; ++d) {
                const auto f = some_divisor(left, g);
                xs.push_back(f == 0 ? 1 : f);
                left /= xs.back();
              }
              xs.push_back(left);
              xs.insert(xs.end(), os.begin() + to_int(start) + 1, os.end());
            } else if (os[0] != 1) {
              continue;  // a 0-D x flattens to [1] only
            }
            op_case c{{random_tensor(xs, g)}, {}, reshape_kernel(os), what};
            c.expected.emplace_back(ops::reshape(c.values[0], os));
            check_backward<rule>(st, replicated_specs(mesh, {xs}), make_specs(mesh, {os}, ls), attrs, c, g);
          }
        }
  }
  st.report();
}

TEST_CASE("oracle: stack") {
  rule_stats st{"stack"};
  rng g(0x737461636bULL);
  using rule = ctspmd::rules::stack;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t n = 1; n <= 3; ++n)
      for (std::size_t rank = 0; rank <= 3; ++rank)
        for (std::size_t a = 0; a <= rank; ++a) {
          const rule::attributes attrs{g.coin() ? to_int(a) : to_int(a) - to_int(rank) - 1};
          const std::string xl = letters.substr(0, rank);
          const std::string what = "stack " + mesh_string(mesh) + " of " + std::to_string(n) + " inputs of rank " +
                                   std::to_string(rank) + " axis " + std::to_string(attrs.axis);
          const auto kernel = per_device([attrs](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::stack(in, attrs.axis)};
          });
          auto make_case = [&](const shape_t& xs, const std::vector<layout>& ls) {
            op_case c{{}, {}, kernel, what};
            for (std::size_t i = 0; i < n; ++i)
              c.values.push_back(i < ls.size() ? values_for(xs, ls[i], g) : random_tensor(xs, g));
            c.expected.emplace_back(ops::stack(c.values, attrs.axis));
            return c;
          };
          for (auto ls : layouts(mesh.ndim(), std::vector<std::size_t>(n, rank), all_reduce_types, 16, g)) {
            if (g.coin())  // inputs partial alike, as in concat's test
              for (std::size_t i = 1; i < n; ++i) {
                ls[i].partial.clear();
                for (const auto& p : ls[0].partial)
                  if (!make_attr(mesh, ls[i]).shards(p.first)) ls[i].partial.push_back(p);
              }
            const shape_t xs = shape_of(xl, label_sizes(mesh, std::vector<std::string>(n, xl), ls, g));
            check_forward<rule>(st, make_specs(mesh, std::vector<shape_t>(n, xs), ls), attrs, make_case(xs, ls), g);
          }
          for (const auto& ls : layouts(mesh.ndim(), {rank + 1}, {}, 6, g)) {
            std::string ol = xl;
            ol.insert(a, 1, 'N');
            auto sizes = label_sizes(mesh, {ol}, ls, g);
            sizes['N'] = to_int(n);
            const shape_t xs = shape_of(xl, sizes);
            const shape_t os = shape_of(ol, sizes);
            check_backward<rule>(st, replicated_specs(mesh, std::vector<shape_t>(n, xs)),
                                 make_specs(mesh, {os}, {even_only(ls[0], os, mesh)}), attrs, make_case(xs, {}), g);
          }
        }
  }
  st.report();
}

}  // namespace oracle_shape_test
