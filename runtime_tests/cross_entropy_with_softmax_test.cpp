// The cross_entropy_with_softmax rule at run time: the static cases again, every error as a
// thrown spmd_error, and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/rules/cross_entropy_with_softmax.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <span>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace cross_entropy_with_softmax_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using ce = rules::cross_entropy_with_softmax;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::partial_on_mesh partial_spec{mesh};

TEST_CASE("cross_entropy_with_softmax forward") {
  const auto dp = ce::infer_forward({spec({8, 16, 1000}, {0, -1, -1}), spec({8, 16, 1}, {-1, -1, -1})});
  REQUIRE(dp.inputs.size() == 2);
  REQUIRE(dp.outputs.size() == 2);
  CHECK(dp.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(dp.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(dp.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(dp.outputs[1].dims_mapping() == dims_mapping{0, -1, -1});

  const auto both = ce::infer_forward({spec({8, 16, 1000}, {-1, 1, -1}), spec({8, 16, 1}, {0, -1, -1})});
  CHECK(both.inputs[0].dims_mapping() == dims_mapping{0, 1, -1});
  CHECK(both.outputs[1].dims_mapping() == dims_mapping{0, 1, -1});

  const auto vocab = ce::infer_forward({spec({8, 1000}, {0, 1}), spec({8, 1}, {-1, -1})});
  CHECK(vocab.inputs[1].dims_mapping() == dims_mapping{0, -1});
  CHECK(vocab.outputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(vocab.outputs[1].dims_mapping() == dims_mapping{0, -1});
  CHECK_FALSE(vocab.outputs[1].is_partial());

  const auto first = ce::infer_forward({spec({1000, 8}, {-1, 0}), spec({1, 8}, {1, -1})}, {.axis = 0});
  CHECK(first.inputs[1].dims_mapping() == dims_mapping{-1, 0});
  CHECK(first.outputs[1].dims_mapping() == dims_mapping{-1, 0});

  const auto soft = ce::infer_forward({spec({8, 10}, {-1, -1}), spec({8, 10}, {0, -1})}, {.soft_label = true});
  CHECK(soft.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(soft.outputs[0].dims_mapping() == dims_mapping{0, -1});

  const auto no_softmax = ce::infer_forward({spec({8, 10}, {0, -1}), spec({8, 1}, {-1, -1})}, {.use_softmax = false});
  CHECK(no_softmax.outputs[0].dims_mapping().empty());
  CHECK(no_softmax.outputs[1].dims_mapping() == dims_mapping{0, -1});

  const auto from_partial =
      ce::infer_forward({partial_spec({8, 10}, {-1, 1}, {0}), partial_spec({8, 1}, {-1, -1}, {1})});
  CHECK_FALSE(from_partial.inputs[0].is_partial());
  CHECK_FALSE(from_partial.inputs[1].is_partial());
  CHECK_FALSE(from_partial.outputs[0].is_partial());
  CHECK_FALSE(from_partial.outputs[1].is_partial());

  const auto x_first = ce::infer_forward({spec({8, 16, 10}, {0, -1, -1}), spec({8, 16, 1}, {-1, 0, -1})});
  CHECK(x_first.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});

  // The typed API over a span gives the same answer as over a braced list.
  const std::vector<dist_tensor_spec> inputs{spec({8, 1000}, {0, 1}), spec({8, 1}, {-1, -1})};
  CHECK(ce::infer_forward(std::span<const dist_tensor_spec>(inputs)) == vocab);
}

TEST_CASE("cross_entropy_with_softmax forward errors") {
  const auto inv = error_kind::invalid_argument;
  check_error(
      [] {
        (void)ce::infer_forward({spec({8, 16, 10}, {0, -1, -1}), spec({8, 16, 1}, {1, -1, -1})});
      },
      error_kind::unimplemented,
      "cross_entropy_with_softmax: tensor axis 'a' is sharded by two different mesh dims, 1 and 0");
  check_error(
      [] {
        (void)ce::infer_forward({spec({8, 10}, {0, 1}), spec({8, 10}, {-1, -1})}, {.soft_label = true});
      },
      inv, "the class axis 1 is sharded by mesh dim 1, which does not support soft_label");
  check_error(
      [] {
        (void)ce::infer_forward({spec({8, 10}, {-1, -1}), spec({8, 10}, {-1, 0})}, {.soft_label = true});
      },
      inv, "the class axis 1 is sharded by mesh dim 0, which does not support soft_label");
  check_error(
      [] {
        (void)ce::infer_forward({spec({10, 8}, {1, -1}), spec({1, 8}, {-1, -1})}, {.axis = 0});
      },
      inv, "the class axis 0 is sharded by mesh dim 1, which needs it to be the last axis (1)");
  check_error(
      [] {
        (void)ce::infer_forward({spec({8, 10}, {-1, 1}), spec({8, 1}, {-1, -1})}, {.use_softmax = false});
      },
      inv, "the class axis 1 is sharded by mesh dim 1, which needs use_softmax = true");
  check_error(
      [] {
        (void)ce::infer_forward({spec({8, 10}, {-1, -1}), spec({8}, {-1})});
      },
      inv, "the label must have x's rank 2, but has rank 1");
  check_error(
      [] {
        (void)ce::infer_forward({spec({8, 10}, {-1, -1}), spec({8, 2}, {-1, -1})});
      },
      inv, "a hard label (soft_label = false) has size 1 on the class axis 1, but has size 2");
  check_error(
      [] {
        (void)ce::infer_forward({spec({8, 10}, {-1, -1}), spec({8, 1}, {-1, -1})}, {.axis = 2});
      },
      inv, "axis 2 is out of range for x of rank 2");
  check_error(
      [] {
        (void)ce::infer_forward({spec({8, 10}, {-1, -1}), spec({8, 1}, {-1, -1})}, {.axis = -3});
      },
      inv, "axis -3 is out of range for x of rank 2");
  check_error(
      [] {
        (void)ce::infer_forward({spec({}, {}), spec({}, {})});
      },
      inv, "axis -1 is out of range for x of rank 0");
  check_error(
      [] {
        (void)ce::infer_forward({spec({8, 10}, {-1, -1})});
      },
      inv, "cross_entropy_with_softmax: expects 2 inputs, got 1");
  check_error(
      [] {
        (void)ce::infer_forward({spec({8, 10}, {-1, -1}), dist_tensor_spec({8, 1}, process_mesh({6}))});
      },
      inv, "input 1 is on another process mesh");
  CHECK(ce::try_infer_forward({spec({8, 10}, {-1, -1}), spec({8, -1}, {-1, -1})}).ok());
}

TEST_CASE("cross_entropy_with_softmax backward") {
  const auto x = spec({8, 16, 1000}, {-1, -1, -1});
  const auto label = spec({8, 16, 1}, {-1, -1, -1});
  const auto back = ce::infer_backward({x, label}, {spec({8, 16, 1000}, {0, -1, 1}), spec({8, 16, 1}, {-1, -1, -1})});
  REQUIRE(back.inputs.size() == 2);
  REQUIRE(back.outputs.size() == 2);
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(back.inputs[1].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(back.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(back.outputs[1].dims_mapping() == dims_mapping{0, -1, -1});

  const auto from_loss = ce::infer_backward({spec({8, 16, 1000}, {0, 1, -1}), label},
                                            {spec({8, 16, 1000}, {-1, -1, -1}), spec({8, 16, 1}, {1, 0, -1})});
  CHECK(from_loss.inputs[0].dims_mapping() == dims_mapping{1, 0, -1});
  CHECK(from_loss.inputs[1].dims_mapping() == dims_mapping{1, 0, -1});

  const auto softmax_first =
      ce::infer_backward({x, label}, {spec({8, 16, 1000}, {0, -1, -1}), spec({8, 16, 1}, {-1, 0, -1})});
  CHECK(softmax_first.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});

  const auto no_softmax = ce::infer_backward({spec({8, 10}, {-1, 1}), spec({8, 1}, {-1, -1})},
                                             {spec({}, {}), spec({8, 1}, {0, -1})}, {.use_softmax = false});
  CHECK(no_softmax.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(no_softmax.outputs[0].dims_mapping().empty());

  const auto back_soft = ce::infer_backward({spec({8, 10}, {-1, -1}), spec({8, 10}, {-1, -1})},
                                            {spec({8, 10}, {1, -1}), spec({8, 1}, {-1, -1})}, {.soft_label = true});
  CHECK(back_soft.inputs[1].dims_mapping() == dims_mapping{1, -1});

  const auto back_axis0 = ce::infer_backward({spec({10, 8}, {-1, -1}), spec({1, 8}, {-1, -1})},
                                             {spec({10, 8}, {-1, 1}), spec({1, 8}, {-1, -1})}, {.axis = -2});
  CHECK(back_axis0.inputs[1].dims_mapping() == dims_mapping{-1, 1});

  const auto back_partial =
      ce::infer_backward({x, label}, {spec({8, 16, 1000}, {-1, -1, 1}), partial_spec({8, 16, 1}, {-1, -1, -1}, {0})});
  CHECK_FALSE(back_partial.outputs[1].is_partial());
  CHECK(back_partial.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1});

  const auto inv = error_kind::invalid_argument;
  check_error(
      [&] {
        (void)ce::infer_backward({x, label}, {spec({8, 16, 1000}, {0, -1, -1}), spec({8, 16, 1}, {1, -1, -1})});
      },
      error_kind::unimplemented, "tensor axis 'a' is sharded by two different mesh dims, 1 and 0");
  check_error(
      [&] {
        (void)ce::infer_backward({spec({10, 8}, {-1, -1}), spec({1, 8}, {-1, -1})},
                                 {spec({10, 8}, {1, -1}), spec({1, 8}, {-1, -1})}, {.axis = 0});
      },
      inv, "the class axis 0 is sharded by mesh dim 1, which needs it to be the last axis (1)");
  check_error(
      [&] {
        (void)ce::infer_backward({spec({8, 10}, {-1, -1}), spec({8, 10}, {-1, -1})},
                                 {spec({8, 10}, {-1, 0}), spec({8, 1}, {-1, -1})}, {.soft_label = true});
      },
      inv, "which does not support soft_label");
  check_error(
      [&] {
        (void)ce::infer_backward({x, label}, {spec({8, 16, 1000}, {-1, -1, -1})});
      },
      inv, "expects 2 outputs, got 1");
  check_error(
      [&] {
        (void)ce::infer_backward({x, label}, {spec({8, 16}, {-1, -1}), spec({8, 16, 1}, {-1, -1, -1})});
      },
      inv, "softmax_out must have rank 3 (x's rank with use_softmax, else 0), but has rank 2");
  check_error(
      [&] {
        (void)ce::infer_backward({x, label}, {spec({8, 16, 1000}, {-1, -1, -1}), spec({8, 16, 1}, {-1, -1, -1})},
                                 {.use_softmax = false});
      },
      inv, "softmax_out must have rank 0 (x's rank with use_softmax, else 0), but has rank 3");
  check_error(
      [&] {
        (void)ce::infer_backward({x, label}, {spec({8, 16, 1000}, {-1, -1, -1}), spec({8, 16}, {-1, -1})});
      },
      inv, "loss must have x's rank 3, but has rank 2");
  check_error(
      [&] {
        (void)ce::infer_backward({x}, {spec({8, 16, 1000}, {-1, -1, -1}), label});
      },
      inv, "expects 2 inputs, got 1");
}

TEST_CASE("cross_entropy_with_softmax forward -> backward round trip") {
  ctspmd_test::rng r(7);
  int checked = 0;
  int cases = 0;
  for (int n = 0; n < 800; ++n, ++cases) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = r.uniform(1, 4);
    tensor_shape shape;
    for (std::int64_t d = 0; d < rank; ++d) shape.push_back(r.uniform(1, 4) * 2);
    ce::attributes attrs{.axis = r.uniform(0, 3) == 0 ? r.uniform(-rank, rank - 1) : -1,
                         .use_softmax = r.uniform(0, 3) != 0,
                         .soft_label = r.uniform(0, 3) == 0};
    const auto a = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis);
    tensor_shape loss_shape = shape;
    loss_shape[a] = 1;
    const tensor_shape label_shape = attrs.soft_label ? shape : loss_shape;
    // Forward rejects a sharded class axis outside the vocabulary-parallel layout.
    const std::vector<dist_tensor_spec> in{
        {shape, {m, ctspmd_test::random_dims_mapping(r, shape.size(), m.ndim())}},
        {label_shape, {m, ctspmd_test::random_dims_mapping(r, label_shape.size(), m.ndim())}}};
    const std::vector<tensor_shape> out{attrs.use_softmax ? shape : tensor_shape{}, loss_shape};
    if (ctspmd_test::check_roundtrip<ce>(in, out, attrs)) ++checked;
  }
  MESSAGE("cross_entropy_with_softmax round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked > 400);
}

}  // namespace cross_entropy_with_softmax_test
