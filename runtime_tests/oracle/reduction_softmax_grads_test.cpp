// The oracle on these grad rules: the reduction grads (sum_grad, mean_grad, max_grad,
// min_grad, amax_grad, amin_grad, prod_grad, logsumexp_grad, p_norm_grad), softmax_grad and
// log_softmax_grad, transpose_grad, cross_entropy_with_softmax_grad and
// c_softmax_with_cross_entropy_grad. Each device runs the CPU reference gradient
// (ops_reduction_softmax_grads.hpp) on its local tensors laid out as the rule requires; x_grad, reassembled as
// the rule says (partial parts combined), must equal the unsharded gradient. Every case runs under
// both semantics.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "harness.hpp"
#include "ops_reduction_softmax_grads.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_reduction_softmax_grads_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;

const std::vector<reduce_type> sum_max = {reduce_type::sum, reduce_type::max};
const std::string letters = "abcd";

mesh_kernel kernel_g(std::function<std::vector<tensor>(const std::vector<tensor>&)> f) {
  return per_device([f](const shape_t&, const ctspmd::spmd_info&, const std::vector<tensor>& in) { return f(in); });
}

/// Every subset of a rank-`rank` x's dims as an axis list, an entry negative now and then; the
/// empty list reduces every dim.
std::vector<std::vector<std::int64_t>> axis_subsets(std::size_t rank, rng& g) {
  if (rank == 0) return {{}, {0}, {-1}};
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t mask = 0; mask < (std::size_t{1} << rank); ++mask) {
    std::vector<std::int64_t> axes;
    for (std::size_t d = 0; d < rank; ++d)
      if (mask & (std::size_t{1} << d)) axes.push_back(g.one_in(3) ? to_int(d) - to_int(rank) : to_int(d));
    out.push_back(axes);
  }
  return out;
}

/// The labels of the reduced tensor: x's kept letters, '1' at a reduced dim with keep_dim.
std::string reduced_labels(const std::string& xl, const std::vector<bool>& mask, bool keep) {
  std::string ol;
  for (std::size_t d = 0; d < xl.size(); ++d)
    if (!mask[d])
      ol.push_back(xl[d]);
    else if (keep)
      ol.push_back('1');
  return ol;
}

/// A reduction grad operator: its name, its forward (to make `out`), its gradient, and whether
/// it takes out (x, out, out_grad) or not (x, out_grad).
struct reduction_grad_op {
  std::string name;
  std::function<tensor(const tensor&, const std::vector<std::int64_t>&, bool)> forward;
  ops::reduction_grad_kind grad;
  bool with_out;
};

/// `reduction_grad_op::forward` for a reduction of `kind`.
std::function<tensor(const tensor&, const std::vector<std::int64_t>&, bool)> reduce_by(ops::reduce_kind kind) {
  return [kind](const tensor& x, const std::vector<std::int64_t>& axis, bool keep) { return ops::reduce(x, axis, keep, kind); };
}

/// Values of x for `op`: small integers for max / min (so that ties occur and every tie's share
/// is checked), non-zero for prod.
tensor reduction_grad_input(const shape_t& s, const reduction_grad_op& op, rng& g) {
  if (op.grad == ops::reduction_grad_kind::max || op.grad == ops::reduction_grad_kind::amax) {
    tensor t(s);
    for (auto& v : t.data) v = static_cast<double>(g.uniform(-2, 2));
    return t;
  }
  if (op.grad == ops::reduction_grad_kind::prod) return random_tensor(s, g, -1.5, 1.5, /*nonzero=*/true);
  return random_tensor(s, g);
}

template <class Rule>
void check_reduction_grad(const reduction_grad_op& op, rng& g) {
  rule_stats st{op.name};
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 0; rank <= 3; ++rank)
      for (const auto& axis : axis_subsets(rank, g))
        for (const bool keep : {false, true}) {
          // reduce_all with an axis list: the list is ignored (every dim reduced)
          const bool reduce_all = !axis.empty() && g.one_in(5);
          const std::vector<std::int64_t> reduced = reduce_all ? std::vector<std::int64_t>{} : axis;
          typename Rule::attributes attrs;
          for (auto a : axis) attrs.axis.push_back(a);
          attrs.keepdim = keep;
          attrs.reduce_all = reduce_all;
          const std::string xl = letters.substr(0, rank);
          const std::string ol = reduced_labels(xl, ops::reduced_mask(reduced, to_int(rank)), keep);
          const std::string what = op.name + " " + mesh_string(mesh) + " axis " + ctspmd::to_string(attrs.axis) +
                                   " keepdim " + std::to_string(keep) + " reduce_all " + std::to_string(reduce_all);
          const auto f = [op, reduced, keep](const std::vector<tensor>& in) {
            const tensor& out = op.with_out ? in[1] : in.back();
            return std::vector<tensor>{ops::reduction_grad(op.grad, in[0], out, in.back(), reduced, keep)};
          };
          std::vector<std::string> labels{xl, ol};
          if (op.with_out) labels.push_back(ol);
          std::vector<std::size_t> ranks;
          for (const auto& l : labels) ranks.push_back(l.size());
          for (const auto& ls : layouts(mesh.ndim(), ranks, sum_max, 5, g)) {
            const auto sizes = label_sizes(mesh, labels, ls, g);
            const tensor x = reduction_grad_input(shape_of(xl, sizes), op, g);
            op_case c{{x}, {}, kernel_g(f), what};
            if (op.with_out) c.values.push_back(op.forward(x, reduced, keep));
            c.values.push_back(random_tensor(shape_of(ol, sizes), g));
            c.expected.emplace_back(f(c.values)[0]);
            std::vector<shape_t> shapes;
            for (const auto& v : c.values) shapes.push_back(v.shape);
            check_forward<Rule>(st, make_specs(mesh, shapes, ls), attrs, c, g);
          }
        }
  }
  st.report();
}

TEST_CASE("oracle: reduction grads") {
  using ctspmd::rules::reduction_grad;
  using ctspmd::rules::reduction_grad_with_out;
  using fk = ops::reduce_kind;
  using gk = ops::reduction_grad_kind;
  rng g(0x7265646772ULL);
  check_reduction_grad<reduction_grad>({"sum_grad", reduce_by(fk::sum), gk::sum, false}, g);
  check_reduction_grad<reduction_grad>({"mean_grad", reduce_by(fk::mean), gk::mean, false}, g);
  check_reduction_grad<reduction_grad_with_out>({"max_grad", reduce_by(fk::max), gk::max, true}, g);
  check_reduction_grad<reduction_grad_with_out>({"min_grad", reduce_by(fk::min), gk::max, true}, g);
  check_reduction_grad<reduction_grad_with_out>({"amax_grad", reduce_by(fk::max), gk::amax, true}, g);
  check_reduction_grad<reduction_grad_with_out>({"amin_grad", reduce_by(fk::min), gk::amax, true}, g);
  check_reduction_grad<reduction_grad_with_out>({"prod_grad", reduce_by(fk::prod), gk::prod, true}, g);
  check_reduction_grad<ctspmd::rules::logsumexp_grad>({"logsumexp_grad", ops::logsumexp, gk::logsumexp, true}, g);
  // The registry gives these names these rules.
  static_assert(std::is_same_v<ctspmd::rules::rule_for<"sum_grad">, reduction_grad> &&
                std::is_same_v<ctspmd::rules::rule_for<"mean_grad">, reduction_grad> &&
                std::is_same_v<ctspmd::rules::rule_for<"max_grad">, reduction_grad_with_out> &&
                std::is_same_v<ctspmd::rules::rule_for<"amin_grad">, reduction_grad_with_out> &&
                std::is_same_v<ctspmd::rules::rule_for<"prod_grad">, reduction_grad_with_out>);
}

TEST_CASE("oracle: p_norm_grad") {
  rule_stats st{"p_norm_grad"};
  rng g(0x706e6f726dULL);
  using rule = ctspmd::rules::p_norm_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (std::int64_t axis = -to_int(rank); axis < to_int(rank); ++axis)
        for (const bool keep : {false, true})
          for (const bool asvector : {false, true}) {
            const double p = g.pick(std::vector<double>{1.0, 2.0, 3.0});
            const rule::attributes attrs{p, axis, 1e-12, keep, asvector};
            const std::vector<std::int64_t> reduced = asvector ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{axis};
            const std::string xl = letters.substr(0, rank);
            const std::string ol = reduced_labels(xl, ops::reduced_mask(reduced, to_int(rank)), keep);
            const std::string what = "p_norm_grad " + mesh_string(mesh) + " porder " + std::to_string(p) + " axis " +
                                     std::to_string(axis) + " keepdim " + std::to_string(keep) + " asvector " +
                                     std::to_string(asvector);
            const auto f = [p, reduced, keep](const std::vector<tensor>& in) {
              return std::vector<tensor>{
                  ops::reduction_grad(ops::reduction_grad_kind::p_norm, in[0], in[1], in[2], reduced, keep, p)};
            };
            for (const auto& ls : layouts(mesh.ndim(), {xl.size(), ol.size(), ol.size()}, sum_max, 6, g)) {
              const auto sizes = label_sizes(mesh, {xl, ol, ol}, ls, g);
              const tensor x = random_tensor(shape_of(xl, sizes), g, -2.0, 2.0, /*nonzero=*/true);
              op_case c{{x, ops::p_norm(x, p, reduced, keep), random_tensor(shape_of(ol, sizes), g)}, {}, kernel_g(f), what};
              c.expected.emplace_back(f(c.values)[0]);
              check_forward<rule>(st, make_specs(mesh, {c.values[0].shape, c.values[1].shape, c.values[2].shape}, ls), attrs,
                                  c, g);
            }
          }
  }
  st.report();
}

TEST_CASE("oracle: softmax_grad and log_softmax_grad") {
  rng g(0x736d6772ULL);
  using rule = ctspmd::rules::softmax_grad;
  for (const bool log : {false, true}) {
    rule_stats st{log ? "log_softmax_grad" : "softmax_grad"};
    for (const auto& ms : meshes()) {
      const process_mesh mesh = make_mesh(ms);
      for (std::size_t rank = 0; rank <= 3; ++rank)
        for (std::int64_t axis = rank == 0 ? -1 : -to_int(rank); axis < std::max<std::int64_t>(to_int(rank), 1); ++axis) {
          const std::string l = letters.substr(0, rank);
          const std::string what = st.name + " " + mesh_string(mesh) + " rank " + std::to_string(rank) + " axis " +
                                   std::to_string(axis);
          const auto f = [axis, log](const std::vector<tensor>& in) {
            return std::vector<tensor>{ops::softmax_grad(in[0], in[1], axis, log)};
          };
          for (const auto& ls : layouts(mesh.ndim(), {rank, rank}, sum_max, 12, g)) {
            const auto sizes = label_sizes(mesh, {l, l}, ls, g);
            tensor out = ops::softmax(random_tensor(shape_of(l, sizes), g), axis);
            if (log)
              for (auto& v : out.data) v = std::log(v);
            op_case c{{out, random_tensor(out.shape, g)}, {}, kernel_g(f), what};
            c.expected.emplace_back(f(c.values)[0]);
            check_forward<rule>(st, make_specs(mesh, {out.shape, out.shape}, ls), {axis}, c, g);
          }
        }
    }
    // Paddle's co-shard case: the axis is cleared before phi's merge picks the operand to follow,
    // so out_grad's [1, 2] is followed, not out's [2] (softmax.hpp); that answer simulates too.
    const process_mesh mesh = make_mesh({2, 2, 2});
    const specs in{{{2, 8, 4}, {mesh, {{}, {2}, {0, 1}}}}, {{2, 8, 4}, {mesh, {{}, {1, 2}, {}}}}};
    const auto f = [log](const std::vector<tensor>& v) { return std::vector<tensor>{ops::softmax_grad(v[0], v[1], -1, log)}; };
    tensor out = ops::softmax(random_tensor({2, 8, 4}, g), -1);
    if (log)
      for (auto& v : out.data) v = std::log(v);
    op_case c{{out, random_tensor(out.shape, g)}, {}, kernel_g(f), st.name + " co-shard of dim 1 in two orders"};
    c.expected.emplace_back(f(c.values)[0]);
    check_forward<rule>(st, in, {-1}, c, g, ctspmd::semantics::phi);
    CHECK(rule::infer_forward(in, {-1}, ctspmd::semantics::phi).outputs[0].multi_dims_mapping() ==
          ctspmd::multi_dims_mapping{{}, {1, 2}, {}});
    st.report();
  }
}

TEST_CASE("oracle: transpose_grad") {
  rule_stats st{"transpose_grad"};
  rng g(0x74706772ULL);
  using rule = ctspmd::rules::transpose_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank) {
      std::vector<std::size_t> perm(rank);
      std::iota(perm.begin(), perm.end(), std::size_t{0});
      do {
        rule::attributes attrs;
        std::string gl;  // out_grad's labels: x's letters permuted
        for (auto p : perm) {
          attrs.perm.push_back(g.one_in(3) ? to_int(p) - to_int(rank) : to_int(p));
          gl.push_back(letters[p]);
        }
        const std::string what = "transpose_grad " + mesh_string(mesh) + " perm " + ctspmd::to_string(attrs.perm);
        const auto inv = ops::inverse_perm(perm);
        const auto f = [inv](const std::vector<tensor>& in) { return std::vector<tensor>{ops::transpose(in[0], inv)}; };
        for (const auto& ls : layouts(mesh.ndim(), {rank}, all_reduce_types, 8, g)) {
          const auto sizes = label_sizes(mesh, {gl}, ls, g);
          op_case c{{values_for(shape_of(gl, sizes), ls[0], g)}, {}, kernel_g(f), what};
          c.expected.emplace_back(f(c.values)[0]);
          check_forward<rule>(st, make_specs(mesh, {c.values[0].shape}, ls), attrs, c, g);
        }
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  }
  st.report();
}

/// Hard labels (class indices in [0, classes), `ignore_index` now and then) of `shape`.
tensor hard_labels(const shape_t& shape, std::int64_t classes, std::int64_t ignore_index, rng& g) {
  tensor t(shape);
  for (auto& v : t.data) v = static_cast<double>(g.one_in(5) ? ignore_index : g.uniform(0, classes - 1));
  return t;
}

/// Soft labels of `shape`: positive weights along `axis` (not normalised: the gradient's sum
/// term is checked too).
tensor soft_labels(const shape_t& shape, rng& g) { return random_tensor(shape, g, 0.1, 1.0); }

/// A kernel for a softmax cross-entropy grad whose softmax (input `s`) may be sharded along the
/// class axis: each device passes the global index of its first class.
mesh_kernel ce_grad_kernel(std::size_t label_in, std::size_t s, std::size_t loss_in, std::int64_t axis, bool soft,
                           bool use_softmax, std::int64_t ignore_index) {
  return per_device([=](const shape_t& coords, const ctspmd::spmd_info& info, const std::vector<tensor>& in) {
    const auto a = ops::normalize_axis(axis, in[s].rank());
    const auto b = block_on(info.inputs[s], a, coords);
    return std::vector<tensor>{ops::cross_entropy_grad(in[label_in], in[s], in[loss_in], axis, soft, use_softmax,
                                                       ignore_index, b.index * in[s].shape[a])};
  });
}

TEST_CASE("oracle: cross_entropy_with_softmax_grad") {
  rule_stats st{"cross_entropy_with_softmax_grad"};
  rng g(0x63656772ULL);
  using rule = ctspmd::rules::cross_entropy_with_softmax_grad;
  const std::string lead = "abc";
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (std::int64_t axis = -to_int(rank); axis < to_int(rank); ++axis)
        for (const bool soft : {false, true})
          for (const bool use_softmax : {true, false}) {
            const auto a = to_size(axis < 0 ? axis + to_int(rank) : axis);
            std::string xl = lead.substr(0, rank - 1), hl;
            xl.insert(a, 1, 'k');
            hl = xl;
            hl[a] = '1';
            const std::string ll = soft ? xl : hl;
            const rule::attributes attrs{axis, -100, true, use_softmax, soft};
            const std::string what = "cross_entropy_with_softmax_grad " + mesh_string(mesh) + " rank " +
                                     std::to_string(rank) + " axis " + std::to_string(axis) + " soft_label " +
                                     std::to_string(soft) + " use_softmax " + std::to_string(use_softmax);
            const auto kernel = ce_grad_kernel(0, 1, 2, axis, soft, use_softmax, attrs.ignore_index);
            for (const auto& ls : layouts(mesh.ndim(), {ll.size(), xl.size(), hl.size()}, sum_max, 10, g)) {
              const auto sizes = label_sizes(mesh, {ll, xl, hl}, ls, g, /*allow_one=*/false);
              const tensor softmax = ops::softmax(random_tensor(shape_of(xl, sizes), g), axis);
              const tensor label = soft ? soft_labels(softmax.shape, g)
                                        : hard_labels(shape_of(hl, sizes), sizes.at('k'), attrs.ignore_index, g);
              op_case c{{label, softmax, random_tensor(shape_of(hl, sizes), g)}, {}, kernel, what};
              c.expected.emplace_back(ops::cross_entropy_grad(label, softmax, c.values[2], axis, soft, use_softmax,
                                                              attrs.ignore_index));
              check_forward<rule>(st, make_specs(mesh, {label.shape, softmax.shape, c.values[2].shape}, ls), attrs, c, g);
            }
          }
  }
  st.report();
}

TEST_CASE("oracle: c_softmax_with_cross_entropy_grad") {
  rule_stats st{"c_softmax_with_cross_entropy_grad"};
  rng g(0x63736d67ULL);
  using rule = ctspmd::rules::c_softmax_with_cross_entropy_grad;
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank) {
      const std::string sl = std::string("ab").substr(0, rank - 1) + "k", ll = sl.substr(0, rank - 1) + "1";
      const rule::attributes attrs{g.coin() ? -100 : 0, 0, 0, 1};
      const std::string what = "c_softmax_with_cross_entropy_grad " + mesh_string(mesh) + " rank " + std::to_string(rank) +
                               " ignore_index " + std::to_string(attrs.ignore_index);
      const auto kernel = ce_grad_kernel(1, 0, 2, -1, false, true, attrs.ignore_index);
      for (const auto& ls : layouts(mesh.ndim(), {sl.size(), ll.size(), ll.size()}, sum_max, 24, g)) {
        const auto sizes = label_sizes(mesh, {sl, ll, ll}, ls, g, /*allow_one=*/false);
        const tensor softmax = ops::softmax(random_tensor(shape_of(sl, sizes), g), -1);
        const tensor label = hard_labels(shape_of(ll, sizes), sizes.at('k'), attrs.ignore_index, g);
        op_case c{{softmax, label, random_tensor(label.shape, g)}, {}, kernel, what};
        c.expected.emplace_back(
            ops::cross_entropy_grad(label, softmax, c.values[2], -1, false, true, attrs.ignore_index));
        check_forward<rule>(st, make_specs(mesh, {softmax.shape, label.shape, label.shape}, ls), attrs, c, g);
      }
    }
  }
  st.report();
}

}  // namespace oracle_reduction_softmax_grads_test
