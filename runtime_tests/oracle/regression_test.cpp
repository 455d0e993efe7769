// The oracle's own checks (it must fail wrong answers), the regression cases of rules it
// proved wrong, and the uneven-shard limit of the rules.
#include "harness.hpp"

#include <cmath>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_regression_test {

using namespace ctspmd_oracle;
using ctspmd::dims_mapping;
using ctspmd::process_mesh;
using ctspmd::spmd_info;
using ctspmd::tensor_dist_attr;

tensor_dist_attr attr(const process_mesh& mesh, const dims_mapping& dm, ctspmd::mesh_dims partial = {},
                      reduce_type r = reduce_type::sum) {
  tensor_dist_attr a(mesh, dm);
  a.set_partial_status(partial, r);
  return a;
}

spmd_info info_of(std::vector<tensor_dist_attr> in, std::vector<tensor_dist_attr> out) {
  spmd_info info;
  for (auto& a : in) info.inputs.push_back(a);
  for (auto& a : out) info.outputs.push_back(a);
  return info;
}

tensor values(shape_t s, std::vector<double> v) {
  tensor t(std::move(s));
  t.data = std::move(v);
  return t;
}

mesh_kernel reduce_kernel(std::vector<std::int64_t> axis, ops::reduce_kind kind) {
  return per_device([axis, kind](const shape_t&, const spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::reduce(in[0], axis, false, kind)};
  });
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_CASE("oracle: partial parts combine to the value and are not copies of it") {
  rng g(1);
  const tensor v = random_tensor({3, 4}, g, -2.0, 2.0, /*nonzero=*/true);
  tensor b({3, 4});
  for (std::size_t i = 0; i < b.size(); ++i) b.data[i] = i % 3 == 0 ? 1.0 : 0.0;
  for (auto r : {reduce_type::sum, reduce_type::avg, reduce_type::max, reduce_type::min, reduce_type::prod,
                 reduce_type::any, reduce_type::all}) {
    const tensor& value = r == reduce_type::any || r == reduce_type::all ? b : v;
    for (std::int64_t n : {2, 3, 4}) {
      const auto parts = make_parts(value, n, r, g);
      CHECK_MESSAGE(compare(combine(parts, r), value).empty(), to_string(r), " over ", n);
      if (r == reduce_type::any || r == reduce_type::all) continue;  // booleans: a part may equal the value
      for (const auto& p : parts) CHECK_MESSAGE(!compare(p, value).empty(), to_string(r), ": a part equals the value");
    }
  }
  // Sum parts vary in sign and size: not value / n.
  const auto parts = make_parts(values({1}, {1.0}), 4, reduce_type::sum, g);
  bool negative = false;
  for (const auto& p : parts) negative = negative || p.data[0] < 0;
  CHECK(negative);
}

TEST_CASE("oracle: the simulator fails wrong answers") {
  rng g(2);
  const process_mesh mesh({2});
  const tensor x = random_tensor({4, 4}, g);
  const tensor sum0 = ops::reduce(x, {0}, false, ops::reduce_kind::sum);
  const auto k = reduce_kernel({0}, ops::reduce_kind::sum);

  // The right answer passes: dim 0 sharded, the output a partial sum.
  CHECK(simulate(info_of({attr(mesh, {0, -1})}, {attr(mesh, {-1}, {0})}), {x}, {sum0}, k, g).empty());
  // Claiming the output replicated: both devices hold a [3] tensor, but different ones.
  CHECK(contains(simulate(info_of({attr(mesh, {0, -1})}, {attr(mesh, {-1})}), {x}, {sum0}, k, g),
                 "must hold the same values"));
  // The wrong reduce type.
  CHECK(contains(simulate(info_of({attr(mesh, {0, -1})}, {attr(mesh, {-1}, {0}, reduce_type::max)}), {x}, {sum0}, k, g),
                 "expected"));
  // Claiming a sharded output whose devices hold whole rows: a wrong local shape.
  CHECK(contains(simulate(info_of({attr(mesh, {-1, -1})}, {attr(mesh, {0})}), {x}, {sum0}, k, g), "local tensor of shape"));

  // A shard claimed on the wrong mesh dim: the devices that should agree do not.
  const process_mesh mesh2({2, 2});
  const auto relu = per_device([](const shape_t&, const spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::relu(in[0])};
  });
  const tensor y = random_tensor({4}, g, 0.5, 2.0);  // positive: relu keeps every value
  CHECK(simulate(info_of({attr(mesh2, {0})}, {attr(mesh2, {0})}), {y}, {ops::relu(y)}, relu, g).empty());
  CHECK_FALSE(simulate(info_of({attr(mesh2, {0})}, {attr(mesh2, {1})}), {y}, {ops::relu(y)}, relu, g).empty());
  // A partial input that the operator does not commute with: relu of the parts.
  CHECK_FALSE(
      simulate(info_of({attr(mesh, {-1}, {0})}, {attr(mesh, {-1}, {0})}), {y}, {ops::relu(y)}, relu, g).empty());
}

TEST_CASE("oracle regression: frobenius_norm is not a sum reduction") {
  // Paddle registers frobenius_norm with the reduction rule, reduce type sum. The oracle shows
  // it wrong; the rule now gathers the reduced dims and makes x whole (reduction.hpp).
  using fro = ctspmd::rules::frobenius_norm;
  rng g(3);
  const process_mesh mesh({2});
  const auto k = reduce_kernel({}, ops::reduce_kind::frobenius_norm);

  // x = [1, 0, 0, 1] split over 2 devices, every dim reduced: each device's norm is 1, and the
  // partial sum Paddle records gives 2, not sqrt(2).
  const tensor x = values({4}, {1, 0, 0, 1});
  const tensor norm = values({}, {std::sqrt(2.0)});
  const auto paddle = info_of({attr(mesh, {0})}, {attr(mesh, {}, {0})});
  CHECK(contains(simulate(paddle, {x}, {norm}, k, g), "element 0 is 2, expected 1.414"));
  const auto ours = fro::infer_forward({dist_tensor_spec({4}, attr(mesh, {0}))});
  CHECK(ours.inputs[0].dims_mapping() == dims_mapping{-1});
  CHECK_FALSE(ours.outputs[0].is_partial());
  CHECK(simulate(ours, {x}, {norm}, k, g).empty());

  // x partial (sum): norm(a) + norm(b) is not norm(a + b).
  const auto partial_x = dist_tensor_spec({4}, attr(mesh, {-1}, {0}));
  const auto paddle_partial = info_of({attr(mesh, {-1}, {0})}, {attr(mesh, {}, {0})});
  CHECK_FALSE(simulate(paddle_partial, {x}, {norm}, k, g).empty());
  const auto ours_partial = fro::infer_forward({partial_x});
  CHECK_FALSE(ours_partial.inputs[0].is_partial());
  CHECK(simulate(ours_partial, {x}, {norm}, k, g).empty());

  // Kept dims stay sharded: a norm over dim 1 of [4, 6] on {0, 1} of a [2, 2] mesh.
  const process_mesh mesh2({2, 2});
  const tensor x2 = random_tensor({4, 6}, g);
  const auto rows = per_device([](const shape_t&, const spmd_info&, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::reduce(in[0], {1}, false, ops::reduce_kind::frobenius_norm)};
  });
  const auto kept = fro::infer_forward({dist_tensor_spec({4, 6}, attr(mesh2, {0, 1}))}, {.axis = {1}});
  CHECK(kept.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(kept.outputs[0].dims_mapping() == dims_mapping{0});
  CHECK(simulate(kept, {x2}, {ops::reduce(x2, {1}, false, ops::reduce_kind::frobenius_norm)}, rows, g).empty());
}

TEST_CASE("oracle: the rules assume even shards") {
  // DESIGN.md: a dims-mapping entry k >= 0 splits the dim *evenly* across mesh dim k, and the
  // oracle only generates even shards. Paddle also runs uneven ones (ceil(n / s) per device,
  // the last shorter). There a partial sum stays right, but an avg of local means is not the
  // mean: mean's partial (avg) output, like reshape's unchecked flatten of a sharded first
  // dim, needs even shards. This pins the limit.
  rng g(4);
  const process_mesh mesh({2});
  const tensor x = values({3}, {1, 2, 6});  // devices hold [1, 2] and [6]
  const auto spec = dist_tensor_spec({3}, attr(mesh, {0}));
  const auto mean = ctspmd::rules::rule_for<"mean">::infer_forward({spec});
  const auto sum = ctspmd::rules::rule_for<"sum">::infer_forward({spec});
  const auto mean_k = reduce_kernel({}, ops::reduce_kind::mean);
  const auto sum_k = reduce_kernel({}, ops::reduce_kind::sum);
  const tensor want_mean = values({}, {3.0}), want_sum = values({}, {9.0});
  CHECK(contains(simulate(mean, {x}, {want_mean}, mean_k, g), "uneven shard"));  // refused by default
  CHECK(contains(simulate(mean, {x}, {want_mean}, mean_k, g, /*even=*/false), "element 0 is 3.75, expected 3"));
  CHECK(simulate(sum, {x}, {want_sum}, sum_k, g, /*even=*/false).empty());
}

}  // namespace oracle_regression_test
