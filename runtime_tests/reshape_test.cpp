// The reshape rule at run time: the static cases again, every error as a thrown spmd_error, and the
// forward -> backward round trip over generated reshapes.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>
#include <ctspmd/rules/kit/dim_trans.hpp>
#include <ctspmd/rules/reshape.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <algorithm>
#include <span>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace reshape_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::reshape;
using dt = ctspmd::dim_trans;
using shape_attr = static_vector<std::int64_t, max_rank>;

const process_mesh mesh({2, 3});
const process_mesh mesh234({2, 3, 4});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::on_mesh spec234{mesh234};
dims_mapping fwd_in(const dist_tensor_spec& x, shape_attr shape) {
  return reshape::infer_forward({x}, {.shape = shape}).inputs[0].dims_mapping();
}
dims_mapping fwd_out(const dist_tensor_spec& x, shape_attr shape) {
  return reshape::infer_forward({x}, {.shape = shape}).outputs[0].dims_mapping();
}

TEST_CASE("reshape target shape") {
  CHECK(reshape::infer_target_shape({2, 3, 4}, {0, -1}) == tensor_shape{2, 12});
  CHECK(reshape::infer_target_shape({2, 3, 4}, {-1, 0, 2}) == tensor_shape{4, 3, 2});
  CHECK(reshape::infer_target_shape({1, 1}, {}) == tensor_shape{});
  CHECK(reshape::infer_target_shape({-1, 4, 8}, {0, -1}) == tensor_shape{-1, 32});
  CHECK(reshape::infer_target_shape({-1, 4, 8}, {-1, 32}) == tensor_shape{-1, 32});
  CHECK(reshape::infer_target_shape({-1, 3}, {2, 5}) == tensor_shape{2, 5});
  CHECK(reshape::resolve_target({-1, 4, 8}, {-1, 32})->same_size == shape_attr{0, -1});
  CHECK(reshape::resolve_target({-1, 4, 8}, {-1, 16})->same_size == shape_attr{-1, -1});
}

TEST_CASE("reshape dim transformation") {
  CHECK(make_reshape_dim_trans({2, 3, 4}, {6, 4}) == dim_trans_list{dt::flatten({0, 1}), dt::input_dim(2)});
  CHECK(make_reshape_dim_trans({6, 4}, {2, 3, 4}) ==
        dim_trans_list{dt::split({0}, {2, 3}, 0), dt::split({0}, {2, 3}, 1), dt::input_dim(1)});
  CHECK(make_reshape_dim_trans({2, 3}, {3, 2}) ==
        dim_trans_list{dt::split({0, 1}, {3, 2}, 0), dt::split({0, 1}, {3, 2}, 1)});
  CHECK(make_reshape_dim_trans({12}, {3, 1, 4}) ==
        dim_trans_list{dt::split({0}, {3, 4}, 0), dt::singleton(), dt::split({0}, {3, 4}, 1)});
  CHECK(make_reshape_dim_trans({2, 1, 3}, {6}) == dim_trans_list{dt::flatten({0, 2})});
  CHECK(make_reshape_dim_trans({-1, 4, 8}, {-1, 32}, {0, -1}) == dim_trans_list{dt::input_dim(0), dt::flatten({1, 2})});
  CHECK(make_reshape_dim_trans({-1, 4, 8}, {-1, 32}) ==
        dim_trans_list{dt::split({0, 1, 2}, {-1, 32}, 0), dt::split({0, 1, 2}, {-1, 32}, 1)});
  CHECK(infer_from_dim_trans({1, 0}, make_reshape_dim_trans({6, 4}, {3, 8}), mesh) ==
        dim_trans_sharding{{1, -1}, {1, -1}});
}

TEST_CASE("reshape forward") {
  // flatten [2, 3, 4] -> [6, 4]
  CHECK(fwd_in(spec({2, 3, 4}, {0, -1, -1}), {6, 4}) == dims_mapping{0, -1, -1});
  CHECK(fwd_out(spec({2, 3, 4}, {0, -1, -1}), {6, 4}) == dims_mapping{0, -1});
  CHECK(fwd_in(spec({2, 3, 4}, {-1, 1, 0}), {6, 4}) == dims_mapping{-1, -1, 0});
  CHECK(fwd_out(spec({2, 3, 4}, {-1, 1, 0}), {6, 4}) == dims_mapping{-1, 0});
  // split [6, 4] -> [2, 3, 4] on mesh dims of sizes 2, 3, 4
  CHECK(fwd_out(spec234({6, 4}, {0, -1}), {2, 3, 4}) == dims_mapping{0, -1, -1});
  CHECK(fwd_in(spec234({6, 4}, {1, -1}), {2, 3, 4}) == dims_mapping{-1, -1});
  CHECK(fwd_out(spec234({6, 4}, {1, -1}), {2, 3, 4}) == dims_mapping{-1, -1, -1});
  CHECK(fwd_in(spec234({6, 4}, {2, -1}), {2, 3, 4}) == dims_mapping{-1, -1});
  CHECK(fwd_out(spec234({6, 4}, {1, 2}), {3, 2, 4}) == dims_mapping{1, -1, 2});
  CHECK(fwd_in(spec234({6, 4}, {0, -1}), {3, 2, 4}) == dims_mapping{-1, -1});
  CHECK(fwd_out(spec({6, 4}, {1, 0}), {3, 8}) == dims_mapping{1, -1});
  // singletons
  CHECK(fwd_out(spec({4, 1, 8}, {1, -1, 0}), {4, 8}) == dims_mapping{1, 0});
  CHECK(fwd_in(spec({4, 1, 8}, {-1, 0, -1}), {4, 8}) == dims_mapping{-1, -1, -1});
  CHECK(fwd_out(spec({4, 8}, {0, 1}), {1, 4, 8}) == dims_mapping{-1, 0, 1});
  // 0 and -1
  CHECK(fwd_out(spec({2, 3, 4}, {0, -1, 1}), {0, -1}) == dims_mapping{0, -1});
  CHECK(fwd_out(spec({6, 3, 4}, {0, 1, -1}), {-1, 0, 2, 2}) == dims_mapping{0, 1, -1, -1});
  // dynamic source dims
  CHECK(fwd_out(spec({-1, 4, 8}, {0, 1, -1}), {0, -1}) == dims_mapping{0, 1});
  CHECK(fwd_out(spec({-1, 4, 8}, {1, -1, 0}), {-1, 32}) == dims_mapping{1, -1});
  CHECK(fwd_out(spec({-1, 6}, {1, 0}), {0, 2, 3}) == dims_mapping{1, 0, -1});
  CHECK(fwd_in(spec({-1, 4, 8}, {0, -1, -1}), {-1, 16}) == dims_mapping{-1, -1, -1});
  CHECK(fwd_out(spec({-1, 6}, {0, -1}), {2, -1}) == dims_mapping{0, -1});

  // partial passes through, with its reduce type
  tensor_dist_attr partial(mesh, {-1, 1, -1});
  partial.set_partial_status({0}, reduce_type::max);
  const auto info = reshape::infer_forward({dist_tensor_spec({2, 3, 4}, partial)}, {.shape = {2, 12}});
  CHECK(info.outputs[0].dims_mapping() == dims_mapping{-1, 1});
  CHECK(info.outputs[0].partial_dims() == mesh_dims{0});
  CHECK(info.outputs[0].partial_reduce_type(0) == reduce_type::max);
  CHECK(info.inputs[0] == partial);

  // the typed API over a span gives the same answer as over a braced list
  const std::vector<dist_tensor_spec> inputs{spec({2, 3, 4}, {0, -1, -1})};
  CHECK(reshape::infer_forward(std::span<const dist_tensor_spec>(inputs), {.shape = {6, 4}}) ==
        reshape::infer_forward({inputs[0]}, {.shape = {6, 4}}));
}

TEST_CASE("reshape backward") {
  const auto x = spec({2, 3, 4}, {-1, -1, -1});
  auto back = reshape::infer_backward({x}, {spec({6, 4}, {0, 1})}, {.shape = {6, 4}});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{0, 1});
  back = reshape::infer_backward({x}, {spec({6, 4}, {1, 0})}, {.shape = {6, 4}});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{-1, -1, 0});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{-1, 0});
  back = reshape::infer_backward({spec({6, 4}, {1, 0})}, {spec({2, 3, 4}, {0, -1, -1})}, {.shape = {2, 3, 4}});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1});
  back = reshape::infer_backward({spec({-1, 4, 8}, {-1, -1, -1})}, {spec({-1, 32}, {1, 0})}, {.shape = {-1, 32}});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{1, 0, -1});
  back = reshape::infer_backward({spec({-1, 4, 8}, {-1, -1, -1})}, {spec({5, 32}, {1, -1})}, {.shape = {0, -1}});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{1, -1, -1});

  tensor_dist_attr partial(mesh, {-1, 1});
  partial.set_partial_status({0});
  back = reshape::infer_backward({x}, {dist_tensor_spec({6, 4}, partial)}, {.shape = {6, 4}});
  CHECK(back.outputs[0] == partial);
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
  CHECK_FALSE(back.inputs[0].is_partial());
}

TEST_CASE("reshape errors") {
  const auto x = spec({2, 3, 4}, {-1, -1, -1});
  check_error(
      [&] {
        (void)reshape::infer_forward({x}, {.shape = {-1, 2, -1}});
      },
      error_kind::invalid_argument, "reshape: the target shape has -1 at dims 0 and 2: only one size can be inferred");
  check_error(
      [&] {
        (void)reshape::infer_forward({x}, {.shape = {6, -4}});
      },
      error_kind::invalid_argument,
      "target shape dim 1 is -4: an entry is a size, 0 (copy the source dim) or -1 (inferred)");
  check_error(
      [&] {
        (void)reshape::infer_forward({x}, {.shape = {24, 1, 1, 0}});
      },
      error_kind::invalid_argument, "target shape dim 3 is 0 (copy source dim 3), but the source has rank 3");
  check_error(
      [&] {
        (void)reshape::infer_forward({x}, {.shape = {5, -1}});
      },
      error_kind::invalid_argument,
      "cannot infer target dim 1 (-1): the source's 24 elements are not a multiple of the other target dims' 5");
  check_error(
      [] {
        (void)reshape::infer_forward({spec({0, 4}, {-1, -1})}, {.shape = {0, -1}});
      },
      error_kind::invalid_argument,
      "cannot infer target dim 1 (-1) from the source's 0 elements: the other target dims hold 0");
  check_error(
      [&] {
        (void)reshape::infer_forward({x}, {.shape = {5, 5}});
      },
      error_kind::invalid_argument,
      "the source has 24 elements (besides dynamic dims copied by 0) but the target shape 25");
  check_error(
      [] {
        (void)reshape::infer_forward({spec({-1, 4}, {-1, -1})}, {.shape = {0, 5}});
      },
      error_kind::invalid_argument,
      "the source has 4 elements (besides dynamic dims copied by 0) but the target shape 5");
  check_error(
      [] {
        (void)reshape::infer_forward({spec({1LL << 40, 1LL << 40}, {-1, -1})}, {.shape = {-1}});
      },
      error_kind::invalid_argument, "the source's element count overflows int64");
  check_error(
      [&] {
        (void)reshape::infer_forward({x}, {.shape = {1LL << 40, 1LL << 40, -1}});
      },
      error_kind::invalid_argument, "the target shape's element count overflows int64");
  check_error(
      [&] {
        (void)reshape::infer_forward({x, x}, {.shape = {24}});
      },
      error_kind::invalid_argument, "reshape: expects 1 input, got 2");
  check_error(
      [] {
        (void)reshape::infer_target_shape({2, 3}, {-1, -1});
      },
      error_kind::invalid_argument, "reshape: the target shape has -1 at dims 0 and 1");

  check_error(
      [&] {
        (void)reshape::infer_backward({x}, {spec({24}, {-1})}, {.shape = {6, 4}});
      },
      error_kind::invalid_argument, "reshape: the output has rank 1, but the target shape has 2 dims");
  check_error(
      [&] {
        (void)reshape::infer_backward({x}, {spec({4, 6}, {-1, -1})}, {.shape = {6, 4}});
      },
      error_kind::invalid_argument, "output dim 0 has size 4, but the target shape gives 6");
  check_error(
      [&] {
        (void)reshape::infer_backward({x}, {spec({6, 4}, {-1, -1})}, {.shape = {5, 5}});
      },
      error_kind::invalid_argument, "the target shape 25");
  check_error([&] { (void)reshape::infer_backward({x}, {}, {.shape = {24}}); }, error_kind::invalid_argument,
              "expects 1 output, got 0");
}

// ---- round trip ------------------------------------------------------------------------------------------
struct generated {
  tensor_shape source;
  shape_attr attr;
};

// A source shape of small factors and a random regrouping of its prime factors (in order, or
// shuffled) into a target, with size-1 dims sprinkled in, some entries written as 0 or -1, and
// sometimes a dynamic source dim.
generated generate(ctspmd_test::rng& r) {
  constexpr std::int64_t sizes[] = {1, 2, 3, 4, 6, 2, 3};
  generated g;
  std::vector<std::int64_t> factors;
  const auto rank = r.uniform(1, 4);
  for (std::int64_t i = 0; i < rank; ++i) {
    const auto s = sizes[r.uniform(0, 6)];
    g.source.push_back(s);
    for (std::int64_t f : {2, 3})
      for (auto v = s; v % f == 0; v /= f) factors.push_back(f);
  }
  if (r.coin())
    for (std::size_t i = factors.size(); i > 1; --i)
      std::swap(factors[i - 1], factors[static_cast<std::size_t>(r.uniform(0, static_cast<std::int64_t>(i) - 1))]);
  tensor_shape target;
  for (std::size_t i = 0; i < factors.size(); ++i) {
    if (target.size() < 6 && r.uniform(0, 5) == 0) target.push_back(1);
    if (target.empty() || (target.size() < 6 && r.coin()))
      target.push_back(factors[i]);
    else
      target.back() *= factors[i];
  }
  if (target.empty() || (target.size() < 6 && r.uniform(0, 4) == 0)) target.push_back(1);
  g.attr = shape_attr(target);
  for (std::size_t j = 0; j < g.attr.size() && j < g.source.size(); ++j)
    if (g.attr[j] == g.source[j] && r.uniform(0, 2) == 0) g.attr[j] = 0;
  if (r.coin()) g.attr[static_cast<std::size_t>(r.uniform(0, static_cast<std::int64_t>(g.attr.size()) - 1))] = -1;
  if (r.uniform(0, 3) == 0) g.source[static_cast<std::size_t>(r.uniform(0, rank - 1))] = -1;
  return g;
}

process_mesh random_sized_mesh(ctspmd_test::rng& r) {
  tensor_shape shape;
  const auto ndim = r.uniform(1, 3);
  for (std::int64_t i = 0; i < ndim; ++i) shape.push_back(r.uniform(1, 4));
  return process_mesh(shape);
}

// Every sharded dim has a known size divisible by its mesh dim's size.
bool evenly_sharded(const dist_tensor_spec& x) {
  for (std::size_t d = 0; d < x.shape().size(); ++d) {
    const auto m = x.dims_mapping()[d];
    if (m != -1 && (x.shape()[d] < 0 || x.shape()[d] % x.process_mesh().dim_size(m) != 0)) return false;
  }
  return true;
}

// What holds for every accepted reshape: backward shards no x dim forward does not, and forward
// again gives each output dim forward's mesh dim or -1. Returns whether it gave forward's exactly.
bool check_weak_roundtrip(const dist_tensor_spec& x, const tensor_shape& out_shape,
                          const rules::reshape_attributes& attrs) {
  const auto fwd = reshape::infer_forward({x}, attrs);
  const auto bwd = reshape::infer_backward({x}, {dist_tensor_spec(out_shape, fwd.outputs[0])}, attrs);
  const auto& f = fwd.inputs[0].dims_mapping();
  const auto& b = bwd.inputs[0].dims_mapping();
  for (std::size_t d = 0; d < f.size(); ++d) CHECK((b[d] == f[d] || b[d] == -1));
  const auto again = reshape::infer_forward({dist_tensor_spec(x.shape(), bwd.inputs[0])}, attrs);
  const auto& fo = fwd.outputs[0].dims_mapping();
  const auto& ao = again.outputs[0].dims_mapping();
  for (std::size_t d = 0; d < fo.size(); ++d) CHECK((ao[d] == fo[d] || ao[d] == -1));
  return ao == fo;
}

TEST_CASE("reshape forward -> backward round trip") {
  ctspmd_test::rng r(12);
  int even = 0;
  int uneven = 0;
  int uneven_exact = 0;
  int dynamic = 0;
  int sharded_out = 0;
  for (int n = 0; n < 1000; ++n) {
    const auto g = generate(r);
    const process_mesh m = random_sized_mesh(r);
    const dist_tensor_spec x(g.source, {m, ctspmd_test::random_dims_mapping(r, g.source.size(), m.ndim())});
    const rules::reshape_attributes attrs{g.attr};
    const auto target = reshape::try_infer_target_shape(g.source, g.attr);
    const auto fwd = reshape::try_infer_forward({x}, attrs);
    REQUIRE_MESSAGE(fwd.ok(), ctspmd::to_string(fwd.error()));  // every generated reshape is valid
    REQUIRE(target.ok());
    REQUIRE(fwd->outputs[0].dims_mapping().size() == target->size());
    if (std::find(g.source.begin(), g.source.end(), -1) != g.source.end()) ++dynamic;
    const auto& fo = fwd->outputs[0].dims_mapping();
    if (std::any_of(fo.begin(), fo.end(), [](std::int64_t d) { return d != -1; })) ++sharded_out;
    const std::vector<dist_tensor_spec> in{x};
    const std::vector<tensor_shape> out{*target};
    if (evenly_sharded(x)) {
      CHECK(ctspmd_test::check_roundtrip<reshape>(in, out, attrs));
      ++even;
      continue;
    }
    ++uneven;
    if (check_weak_roundtrip(x, *target, attrs)) {
      ++uneven_exact;
    } else {
      // Only a kept shard of unknown size or not divisible by its mesh dim can be lost.
      bool lossy = false;
      const auto& f = fwd->inputs[0].dims_mapping();
      for (std::size_t d = 0; d < f.size(); ++d)
        if (f[d] != -1 && (g.source[d] < 0 || g.source[d] % m.dim_size(f[d]) != 0)) lossy = true;
      CHECK(lossy);
    }
  }
  MESSAGE("reshape round trip: ", even, " evenly sharded cases (exact), ", uneven, " others (", uneven_exact,
          " exact), ", dynamic, " with a dynamic dim, ", sharded_out, " with a sharded output, of 1000");
  CHECK(even > 300);
  CHECK(uneven > 100);
  CHECK(dynamic > 100);
  CHECK(sharded_out > 300);
  CHECK(uneven_exact < uneven);  // the documented loss does occur
}

}  // namespace reshape_test
