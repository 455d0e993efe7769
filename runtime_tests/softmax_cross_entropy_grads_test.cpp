// The softmax, transpose and cross-entropy grad rules (the reduction grads are in
// reduction_grad_test.cpp) at run time: by name, attributes by name, error kinds and messages.
// Grad rules have no reverse inference, so no round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"

#include <string>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace softmax_cross_entropy_grads_test {

using namespace ctspmd;
using ctspmd_test::check_error;

const process_mesh mesh({2, 4});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::partial_on_mesh partial_spec{mesh};
using specs = std::vector<dist_tensor_spec>;
using ints = std::vector<std::int64_t>;

TEST_CASE("softmax_grad and log_softmax_grad by name") {
  for (const char* op : {"softmax_grad", "log_softmax_grad"}) {
    CAPTURE(op);
    const specs in{spec({8, 16, 32}, {0, -1, 1}), spec({8, 16, 32}, {-1, 1, -1})};
    const auto r = runtime::infer_forward(op, in);
    CHECK(to_string(r.inputs[0]) == "dims_mapping [0, 1, -1]");
    CHECK(to_string(r.inputs[1]) == "dims_mapping [0, 1, -1]");
    CHECK(to_string(r.outputs[0]) == "dims_mapping [0, 1, -1]");
    CHECK(runtime::infer_forward(op, in, {{"axis", std::int64_t{0}}}).outputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
    // partial out_grad comes back whole
    const auto p = runtime::infer_forward(op, specs{spec({8, 16}, {0, -1}), partial_spec({8, 16}, {0, -1}, 1)}, {},
                                          semantics::phi);
    CHECK(to_string(p.inputs[1]) == "dims_mapping [0, -1]");
    CHECK(to_string(p.outputs[0]) == "dims_mapping [0, -1]");
  }
  // phi follows the co-sharded operand
  const process_mesh m3({2, 2, 2});
  const specs co{{{8, 4, 16}, {m3, {{0, 1}, {}, {}}}}, {{8, 4, 16}, {m3, {{}, {2}, {}}}}};
  CHECK(runtime::infer_forward("softmax_grad", co, {}, semantics::phi).outputs[0].multi_dims_mapping() ==
        multi_dims_mapping{{0, 1}, {2}, {}});
  // phi clears the softmax axis before it picks the operand to follow: out's co-sharded axis does
  // not make out's layout win (Paddle: [[], [1, 2], []]; following out gave [[], [2, 1], []])
  const specs ax{{{8, 16, 32}, {m3, {{}, {2}, {0, 1}}}}, {{8, 16, 32}, {m3, {{}, {1, 2}, {}}}}};
  const auto cleared = runtime::infer_forward("softmax_grad", ax, {}, semantics::phi);
  CHECK(cleared.inputs[0].multi_dims_mapping() == multi_dims_mapping{{}, {1, 2}, {}});
  CHECK(cleared.inputs[1].multi_dims_mapping() == multi_dims_mapping{{}, {1, 2}, {}});
  CHECK(cleared.outputs[0].multi_dims_mapping() == multi_dims_mapping{{}, {1, 2}, {}});
  CHECK(runtime::infer_forward("softmax_grad", specs{ax[1], ax[0]}, {}, semantics::phi).outputs[0].multi_dims_mapping() ==
        multi_dims_mapping{{}, {1, 2}, {}});
  // a middle axis: out_grad's co-shard of dim 0 is followed
  const specs mid{{{8, 16, 32}, {m3, {{}, {0, 1}, {2}}}}, {{8, 16, 32}, {m3, {{1, 2}, {}, {}}}}};
  CHECK(runtime::infer_forward("log_softmax_grad", mid, {{"axis", std::int64_t{1}}}, semantics::phi).outputs[0].multi_dims_mapping() ==
        multi_dims_mapping{{1, 2}, {}, {}});
  // fluid: the two lists of dim 1 conflict
  check_error([&] { (void)runtime::infer_forward("softmax_grad", ax); }, error_kind::unimplemented, "softmax_grad:");

  const specs x{spec({8, 16}, {0, -1}), spec({8, 16}, {1, -1})};
  check_error([&] { (void)runtime::infer_forward("softmax_grad", specs{x[0], spec({8}, {0})}); },
              error_kind::invalid_argument, "softmax_grad: out_grad has rank 1, but out has rank 2");
  check_error([&] { (void)runtime::infer_forward("softmax_grad", specs{x[0], spec({8, 4}, {0, -1})}); },
              error_kind::invalid_argument, "softmax_grad: out_grad dim 1 has size 4, but out's has size 16");
  check_error([&] { (void)runtime::infer_forward("log_softmax_grad", specs{x[0], x[0]}, {{"axis", std::int64_t{-3}}}); },
              error_kind::invalid_argument, "log_softmax_grad: axis -3 is outside [-2, 2) for x of rank 2");
  check_error([&] { (void)runtime::infer_forward("softmax_grad", x); }, error_kind::unimplemented,
              "softmax_grad: tensor axis 'a' is sharded by two different mesh dims, 1 and 0");
  check_error([&] { (void)runtime::infer_forward("softmax_grad", specs{x[0]}); }, error_kind::invalid_argument,
              "softmax_grad: expects 2 inputs, got 1");
  check_error([&] { (void)runtime::infer_backward("softmax_grad", x, specs{x[0]}); }, error_kind::unimplemented,
              "softmax_grad: a grad rule has no reverse inference");
}

TEST_CASE("transpose_grad by name") {
  const specs g{spec({8, 2, 4}, {1, 0, -1})};
  const auto r = runtime::infer_forward("transpose_grad", g, {{"perm", ints{2, 0, 1}}});
  CHECK(to_string(r.inputs[0]) == "dims_mapping [1, 0, -1]");
  CHECK(to_string(r.outputs[0]) == "dims_mapping [0, -1, 1]");
  // partial out_grad: x_grad partial alike
  const auto p = runtime::infer_forward("transpose_grad", specs{partial_spec({8, 2}, {0, -1}, 1, reduce_type::avg)},
                                        {{"perm", ints{1, 0}}});
  CHECK(to_string(p.outputs[0]) == "dims_mapping [-1, 0], partial {1: avg}");
  // forward then grad gives x's mapping back
  const specs x{spec({2, 4, 8}, {0, -1, 1})};
  const auto f = runtime::infer_forward("transpose", x, {{"perm", ints{2, 0, 1}}});
  CHECK(runtime::infer_forward("transpose_grad", specs{{{8, 2, 4}, f.outputs[0]}}, {{"perm", ints{2, 0, 1}}}).outputs[0] ==
        x[0].dist_attr());

  check_error([&] { (void)runtime::infer_forward("transpose_grad", g, {{"perm", ints{1, 0}}}); },
              error_kind::invalid_argument, "transpose_grad: perm has 2 entries, but x has rank 3");
  check_error([&] { (void)runtime::infer_forward("transpose_grad", g, {{"perm", ints{0, 1, 3}}}); },
              error_kind::invalid_argument, "transpose_grad: perm entry 3 (position 2) is outside [-3, 3)");
  check_error([&] { (void)runtime::infer_backward("transpose_grad", g, g, {{"perm", ints{0, 1, 2}}}); },
              error_kind::unimplemented, "transpose_grad: a grad rule has no reverse inference");
}

TEST_CASE("cross_entropy_with_softmax_grad and softmax_with_cross_entropy_grad by name") {
  for (const char* op : {"cross_entropy_with_softmax_grad", "softmax_with_cross_entropy_grad"}) {
    CAPTURE(op);
    // vocabulary parallel: the class shard of softmax kept
    const specs in{spec({8, 16, 1}, {0, -1, -1}), spec({8, 16, 1000}, {-1, -1, 1}), spec({8, 16, 1}, {-1, -1, -1})};
    const auto r = runtime::infer_forward(op, in);
    CHECK(r.inputs.size() == 3);
    CHECK(to_string(r.outputs[0]) == "dims_mapping [0, -1, 1]");
    CHECK(to_string(r.inputs[2]) == "dims_mapping [0, -1, -1]");
    // soft labels: the class axis replicated
    const auto s = runtime::infer_forward(
        op, specs{spec({8, 1000}, {0, 1}), spec({8, 1000}, {-1, 1}), partial_spec({8, 1}, {0, -1}, 1)},
        {{"soft_label", true}, {"axis", std::int64_t{-1}}, {"ignore_index", std::int64_t{-1}}, {"numeric_stable_mode", false}});
    CHECK(to_string(s.outputs[0]) == "dims_mapping [0, -1]");
    CHECK(to_string(s.inputs[2]) == "dims_mapping [0, -1]");  // partial loss_grad reduced first
    // no softmax without use_softmax
    const auto n = runtime::infer_forward(op, specs{spec({8, 1000}, {0, 1}), spec({}, {}), spec({8, 1}, {-1, -1})},
                                          {{"soft_label", true}, {"use_softmax", false}}, semantics::phi);
    CHECK(n.inputs[1].rank() == 0);
    CHECK(to_string(n.outputs[0]) == "dims_mapping [0, -1]");
  }
  const auto label = spec({8, 1}, {0, -1});
  check_error(
      [&] {
        (void)runtime::infer_forward("cross_entropy_with_softmax_grad", specs{label, spec({8, 6, 2}, {0, -1, -1}), label});
      },
      error_kind::invalid_argument,
      "cross_entropy_with_softmax_grad: the label and softmax must have loss_grad's rank 2, but have ranks 2 and 3");
  check_error(
      [&] {
        (void)runtime::infer_forward("softmax_with_cross_entropy_grad", specs{spec({8, 2}, {0, -1}), spec({8, 6}, {0, -1}), label});
      },
      error_kind::invalid_argument,
      "softmax_with_cross_entropy_grad: a hard label (soft_label = false) has size 1 on the class axis 1, but has size 2");
  check_error(
      [&] {
        (void)runtime::infer_forward("cross_entropy_with_softmax_grad", specs{label, spec({8, 6}, {0, -1}), spec({8, 6}, {0, -1})});
      },
      error_kind::invalid_argument, "cross_entropy_with_softmax_grad: loss_grad has size 6 on the class axis 1, but must have 1");
  check_error(
      [&] {
        (void)runtime::infer_forward("cross_entropy_with_softmax_grad", specs{label, spec({4, 6}, {0, -1}), label});
      },
      error_kind::invalid_argument, "cross_entropy_with_softmax_grad: softmax's dim 0 has size 4, but loss_grad's has size 8");
  check_error(
      [&] {
        (void)runtime::infer_forward("cross_entropy_with_softmax_grad", specs{label, spec({8, 6}, {0, -1}), label},
                                     {{"axis", std::int64_t{2}}});
      },
      error_kind::invalid_argument, "cross_entropy_with_softmax_grad: axis 2 is out of range for loss_grad of rank 2");
  check_error(
      [&] {
        (void)runtime::infer_forward("cross_entropy_with_softmax_grad",
                                     specs{spec({12, 1}, {0, -1}), spec({12, 6}, {1, -1}), spec({12, 1}, {-1, -1})});
      },
      error_kind::unimplemented,
      "cross_entropy_with_softmax_grad: tensor axis 'a' is sharded by two different mesh dims, 1 and 0");
  check_error([&] { (void)runtime::infer_forward("cross_entropy_with_softmax_grad", specs{label, label}); },
              error_kind::invalid_argument, "cross_entropy_with_softmax_grad: expects 3 inputs, got 2");
  check_error([&] { (void)runtime::infer_backward("softmax_with_cross_entropy_grad", specs{label, label, label}, specs{label}); },
              error_kind::unimplemented, "softmax_with_cross_entropy_grad: a grad rule has no reverse inference");
}

TEST_CASE("c_softmax_with_cross_entropy_grad by name") {
  const specs in{spec({8, 512, 64}, {-1, -1, 1}), spec({8, 512, 1}, {0, -1, -1}), spec({8, 512, 1}, {-1, -1, 1})};
  const auto r = runtime::infer_forward("c_softmax_with_cross_entropy_grad", in,
                                        {{"ignore_index", std::int64_t{-100}}, {"rank", std::int64_t{1}}, {"nranks", std::int64_t{4}},
                                         {"ring_id", std::int64_t{0}}});
  CHECK(to_string(r.outputs[0]) == "dims_mapping [0, -1, 1]");
  CHECK(to_string(r.inputs[2]) == "dims_mapping [0, -1, -1]");
  // forward's layout comes back as logits_grad
  const specs fin{spec({8, 512, 64}, {0, -1, 1}), spec({8, 512, 1}, {-1, -1, -1})};
  const auto f = runtime::infer_forward("c_softmax_with_cross_entropy", fin, {}, semantics::phi);
  const auto gr = runtime::infer_forward(
      "c_softmax_with_cross_entropy_grad",
      specs{{{8, 512, 64}, f.outputs[0]}, {{8, 512, 1}, f.inputs[1]}, {{8, 512, 1}, f.outputs[1]}}, {}, semantics::phi);
  CHECK(gr.outputs[0] == f.inputs[0]);

  check_error(
      [&] {
        (void)runtime::infer_forward("c_softmax_with_cross_entropy_grad", specs{in[0], in[1], spec({8, 512}, {0, -1})});
      },
      error_kind::invalid_argument, "c_softmax_with_cross_entropy_grad: loss_grad must have softmax's rank 3, but has rank 2");
  check_error(
      [&] {
        (void)runtime::infer_forward("c_softmax_with_cross_entropy_grad", specs{in[0], in[1], spec({8, 512, 2}, {0, -1, -1})});
      },
      error_kind::invalid_argument,
      "c_softmax_with_cross_entropy_grad: loss_grad's dim 2 has size 2, but must have 1 (softmax's, 1 last)");
  check_error(
      [&] {
        (void)runtime::infer_forward("c_softmax_with_cross_entropy_grad", specs{in[0], spec({8, 512, 3}, {0, -1, -1}), in[2]});
      },
      error_kind::invalid_argument,
      "c_softmax_with_cross_entropy_grad: the label holds one class index per position: its last dim must have size 1, but has 3");
  check_error(
      [&] { (void)runtime::infer_forward("c_softmax_with_cross_entropy_grad", specs{spec({}, {}), spec({}, {}), spec({}, {})}); },
      error_kind::invalid_argument, "c_softmax_with_cross_entropy_grad: softmax must have rank >= 1, but has rank 0");
  check_error([&] { (void)runtime::infer_backward("c_softmax_with_cross_entropy_grad", in, specs{in[0]}); },
              error_kind::unimplemented, "c_softmax_with_cross_entropy_grad: a grad rule has no reverse inference");
}

}  // namespace softmax_cross_entropy_grads_test
