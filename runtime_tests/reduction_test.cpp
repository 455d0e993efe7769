// The reduction rule at run time: the static cases again, every error as a thrown spmd_error,
// and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/rules/reduction.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <array>
#include <type_traits>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace reduction_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::reduction;
using rules::reduction_with;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::partial_on_mesh partial_spec{mesh};
const dist_tensor_spec x = spec({4, 8, 16}, {0, 1, -1});

template <reduce_type R>
reduce_type default_partial() {
  return reduction_with<R>::infer_forward({x}, {.axis = {0}}).outputs[0].partial_reduce_type(0);
}

TEST_CASE("reduction forward") {
  const auto sum1 = reduction::infer_forward({x}, {.axis = {1}});
  CHECK(sum1.inputs[0] == x.dist_attr());
  CHECK(sum1.outputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(sum1.outputs[0].partial_dims() == mesh_dims{1});
  CHECK(sum1.outputs[0].partial_reduce_type(1) == reduce_type::sum);

  const auto sum2 = reduction::infer_forward({x}, {.axis = {2}});
  CHECK(sum2.outputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK_FALSE(sum2.outputs[0].is_partial());

  const auto neg = reduction_with<reduce_type::max>::infer_forward({x}, {.axis = {-1, 0}});
  CHECK(neg.outputs[0].dims_mapping() == dims_mapping{1});
  CHECK(to_string(neg.outputs[0]) == "dims_mapping [1], partial {0: max}");

  const auto keep = reduction_with<reduce_type::avg>::infer_forward({x}, {.axis = {1}, .keep_dim = true});
  CHECK(to_string(keep.outputs[0]) == "dims_mapping [0, -1, -1], partial {1: avg}");

  const auto all = reduction_with<reduce_type::prod>::infer_forward({x});
  CHECK(to_string(all.outputs[0]) == "dims_mapping [], partial {0: prod, 1: prod}");
  CHECK(reduction::infer_forward({x}, {.axis = {2, 0, 1}}) == reduction::infer_forward({x}));
  CHECK(to_string(reduction::infer_forward({x}, {.keep_dim = true}).outputs[0]) ==
        "dims_mapping [-1, -1, -1], partial {0: sum, 1: sum}");

  const auto scalar = spec({}, {});
  CHECK(reduction::infer_forward({scalar}, {.axis = {-1}}).outputs[0].dims_mapping().empty());
  CHECK_FALSE(reduction::infer_forward({scalar}, {.axis = {0}, .keep_dim = true}).outputs[0].is_partial());
}

TEST_CASE("reduction records every reduce type") {
  CHECK(default_partial<reduce_type::sum>() == reduce_type::sum);
  CHECK(default_partial<reduce_type::avg>() == reduce_type::avg);
  CHECK(default_partial<reduce_type::max>() == reduce_type::max);
  CHECK(default_partial<reduce_type::min>() == reduce_type::min);
  CHECK(default_partial<reduce_type::prod>() == reduce_type::prod);
  CHECK(default_partial<reduce_type::any>() == reduce_type::any);
  CHECK(default_partial<reduce_type::all>() == reduce_type::all);
  for (const auto r : {reduce_type::sum, reduce_type::max, reduce_type::min, reduce_type::prod, reduce_type::avg,
                       reduce_type::any, reduce_type::all}) {
    const auto info = reduction::infer_forward({x}, {.axis = {0, 1}, .reduce = r});
    CHECK(info.outputs[0].partial_dims() == mesh_dims{0, 1});
    CHECK(info.outputs[0].partial_reduce_type(0) == r);
    CHECK(info.outputs[0].partial_reduce_type(1) == r);
  }
}

TEST_CASE("reduction of a partial input") {
  const auto psum = reduction::infer_forward({partial_spec({4, 8}, {-1, 1}, 0, reduce_type::sum)}, {.axis = {1}});
  CHECK(to_string(psum.inputs[0]) == "dims_mapping [-1, 1], partial {0: sum}");
  CHECK(to_string(psum.outputs[0]) == "dims_mapping [-1], partial {0: sum, 1: sum}");

  const auto pavg = reduction::infer_forward({partial_spec({4, 8}, {-1, -1}, 1, reduce_type::avg)}, {.axis = {0}});
  CHECK(to_string(pavg.outputs[0]) == "dims_mapping [-1], partial {1: avg}");

  const auto psum_max = reduction_with<reduce_type::max>::infer_forward(
      {partial_spec({4, 8}, {-1, 1}, 0, reduce_type::sum)}, {.axis = {1}});
  CHECK(to_string(psum_max.inputs[0]) == "dims_mapping [-1, 1]");  // combined first: a reshard
  CHECK(to_string(psum_max.outputs[0]) == "dims_mapping [-1], partial {1: max}");

  const auto pmin_min = reduction_with<reduce_type::min>::infer_forward(
      {partial_spec({4, 8}, {-1, -1}, 0, reduce_type::min)}, {.axis = {1}});
  CHECK(to_string(pmin_min.outputs[0]) == "dims_mapping [-1], partial {0: min}");
}

TEST_CASE("reduction forward errors") {
  check_error([] { (void)reduction::infer_forward({x}, {.axis = {3}}); }, error_kind::invalid_argument,
              "reduction: reduction axis 3 is out of range for x of rank 3");
  check_error([] { (void)reduction::infer_forward({x}, {.axis = {-4}}); }, error_kind::invalid_argument,
              "reduction axis -4 is out of range for x of rank 3");
  check_error([] { (void)reduction::infer_forward({spec({}, {})}, {.axis = {1}}); }, error_kind::invalid_argument,
              "reduction axis 1 is out of range for x of rank 0");
  check_error(
      [] {
        (void)reduction::infer_forward({x}, {.axis = {1, -2}});
      },
      error_kind::invalid_argument, "reduction axis -2 names dim 1 a second time");
  check_error([] { (void)reduction::infer_forward({}); }, error_kind::invalid_argument, "expects 1 input, got 0");
  check_error([] { (void)reduction::infer_forward({x, x}); }, error_kind::invalid_argument, "expects 1 input, got 2");
  check_error([] { (void)reduction::infer_forward({x}, {.reduce = static_cast<reduce_type>(9)}); },
              error_kind::invalid_argument, "reduce 9 is not a reduce_type");
}

TEST_CASE("reduction backward") {
  const auto x_rep = spec({4, 8, 16}, {-1, -1, -1});
  const auto back = reduction::infer_backward({x_rep}, {spec({4, 16}, {1, 0})}, {.axis = {1}});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{1, -1, 0});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{1, 0});
  CHECK(reduction::infer_backward({x}, {spec({8}, {-1})}, {.axis = {0, -1}}).inputs[0].dims_mapping() ==
        dims_mapping{-1, -1, -1});

  const auto keep =
      reduction::infer_backward({x_rep}, {spec({4, 1, 16}, {0, 1, -1})}, {.axis = {-2}, .keep_dim = true});
  CHECK(keep.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(keep.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});

  const auto partial_out = partial_spec({4}, {0}, 1, reduce_type::max);
  const auto bp =
      reduction_with<reduce_type::max>::infer_backward({spec({4, 8}, {-1, -1})}, {partial_out}, {.axis = {1}});
  CHECK(bp.outputs[0] == partial_out.dist_attr());
  CHECK(to_string(bp.inputs[0]) == "dims_mapping [0, -1]");

  const auto all = reduction::infer_backward({x}, {spec({}, {})});
  CHECK(all.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
  CHECK(all.outputs[0].dims_mapping().empty());

  check_error(
      [] {
        (void)reduction::infer_backward({x}, {spec({4, 8, 16}, {-1, -1, -1})}, {.axis = {1}});
      },
      error_kind::invalid_argument, "the output must have rank 2 (x has rank 3 and 1 reduced dims), but has rank 3");
  check_error(
      [] {
        (void)reduction::infer_backward({x}, {spec({4, 16}, {-1, -1})}, {.axis = {1}, .keep_dim = true});
      },
      error_kind::invalid_argument, "the output must have rank 3");
  check_error([] { (void)reduction::infer_backward({x}, {spec({4}, {-1})}, {.axis = {7}}); },
              error_kind::invalid_argument, "reduction axis 7 is out of range");
  check_error([] { (void)reduction::infer_backward({x}, {}, {.axis = {1}}); }, error_kind::invalid_argument,
              "expects 1 output, got 0");
  check_error([] { (void)reduction::infer_backward({}, {spec({4}, {-1})}); }, error_kind::invalid_argument,
              "expects 1 input, got 0");
}

TEST_CASE("reduction forward -> backward round trip") {
  ctspmd_test::rng r(11);
  constexpr std::array<reduce_type, 7> types{reduce_type::sum, reduce_type::max, reduce_type::min, reduce_type::prod,
                                             reduce_type::avg, reduce_type::any, reduce_type::all};
  int checked = 0;
  constexpr int total = 600;
  for (int n = 0; n < total; ++n) {
    const auto mesh_ndim = r.uniform(1, 3);
    const process_mesh m(tensor_shape(static_cast<std::size_t>(mesh_ndim), 2));
    const auto rank = r.uniform(1, 4);
    reduction::attributes attrs{.keep_dim = r.coin(), .reduce = types[static_cast<std::size_t>(r.uniform(0, 6))]};
    // Each dim reduced or not; written as a negative axis half the time. Sometimes no axis (all),
    // sometimes an out-of-range entry (which forward must reject).
    std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
    const bool reduce_all = r.uniform(0, 5) == 0;
    for (std::int64_t d = 0; d < rank && !reduce_all; ++d)
      if (r.coin()) {
        reduced[static_cast<std::size_t>(d)] = true;
        attrs.axis.push_back(r.coin() ? d - rank : d);
      }
    if (attrs.axis.empty()) reduced.assign(reduced.size(), true);
    const bool bad = r.uniform(0, 9) == 0;
    if (bad) attrs.axis.push_back(rank);

    tensor_shape x_shape;
    for (std::int64_t d = 0; d < rank; ++d) x_shape.push_back(4 + d);
    tensor_dist_attr xa(m, ctspmd_test::random_dims_mapping(r, static_cast<std::size_t>(rank), mesh_ndim));
    // Now and then a partial x, on a mesh dim that does not shard it.
    for (std::int64_t p = 0; p < mesh_ndim; ++p) {
      bool used = false;
      for (auto d : xa.dims_mapping()) used = used || d == p;
      if (!used && r.uniform(0, 3) == 0) xa.set_partial_status({p}, types[static_cast<std::size_t>(r.uniform(0, 6))]);
    }
    tensor_shape out_shape;
    for (std::size_t d = 0; d < x_shape.size(); ++d)
      if (!reduced[d])
        out_shape.push_back(x_shape[d]);
      else if (attrs.keep_dim)
        out_shape.push_back(1);

    const std::vector<dist_tensor_spec> in{{x_shape, xa}};
    const std::vector<tensor_shape> out{out_shape};
    const bool accepted = ctspmd_test::check_roundtrip<reduction>(in, out, attrs);
    CHECK(accepted == !bad);
    if (accepted) ++checked;
  }
  MESSAGE("reduction round trip: ", checked, " accepted cases of ", total);
  CHECK(checked > 400);
}

TEST_CASE("frobenius_norm") {
  // Its own rule (the reduction rule's partial sum of norms is not the norm: see reduction.hpp
  // and the oracle's regression case): reduced dims gathered, x whole, the output never partial.
  using rules::frobenius_norm;
  CHECK(std::is_same_v<rules::rule_for<"frobenius_norm">, frobenius_norm>);
  const auto fro1 = frobenius_norm::infer_forward({x}, {.axis = {1}});
  CHECK(to_string(fro1.inputs[0]) == "dims_mapping [0, -1, -1]");
  CHECK(to_string(fro1.outputs[0]) == "dims_mapping [0, -1]");
  const auto vec = frobenius_norm::infer_forward({spec({4}, {0})});
  CHECK(to_string(vec.inputs[0]) == "dims_mapping [-1]");
  CHECK(to_string(vec.outputs[0]) == "dims_mapping []");
  const auto partial =
      frobenius_norm::infer_forward({partial_spec({4, 8}, {-1, 1}, 0, reduce_type::sum)}, {.axis = {0}, .keep_dim = true});
  CHECK(to_string(partial.inputs[0]) == "dims_mapping [-1, 1]");
  CHECK(to_string(partial.outputs[0]) == "dims_mapping [-1, 1]");
  const auto back = frobenius_norm::infer_backward({spec({4, 8}, {-1, -1})},
                                                   {partial_spec({4}, {0}, 1, reduce_type::sum)}, {.axis = {1}});
  CHECK(to_string(back.inputs[0]) == "dims_mapping [0, -1]");
  CHECK(to_string(back.outputs[0]) == "dims_mapping [0]");
  // By name, through the runtime layer.
  const std::vector<dist_tensor_spec> in{spec({4, 8}, {0, 1})};
  CHECK(to_string(runtime::infer_forward("frobenius_norm", in, {{"axis", std::vector<std::int64_t>{1}}}).outputs[0]) ==
        "dims_mapping [0]");
  check_error([] { (void)frobenius_norm::infer_forward({x}, {.axis = {3}}); }, error_kind::invalid_argument,
              "frobenius_norm: reduction axis 3 is out of range for x of rank 3");
}

}  // namespace reduction_test
