// The elementwise family's rules at run time: add_n, swiglu, scale, pow, dropout,
// fused_dropout_add, where, and the elementwise grad rules (unary, binary, where_grad,
// dropout_grad, fused_dropout_add_grad, swiglu_grad): typed and by-name calls, errors as thrown
// spmd_errors with their messages, and the forward -> backward round trip of every non-grad rule.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <string>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace elementwise_family_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using runtime::attribute_map;

const process_mesh mesh({2, 2, 2});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::partial_on_mesh partial_spec{mesh};
const dist_tensor_spec absent = spec({}, {});

std::vector<std::string> strings(const dist_attrs& attrs) {
  std::vector<std::string> out;
  for (const auto& a : attrs) out.push_back(to_string(a));
  return out;
}

/// A random shape of `rank` (sizes 2, 4 or 8: every mesh dim here divides them).
tensor_shape random_shape(ctspmd_test::rng& r, std::int64_t rank) {
  tensor_shape s;
  for (std::int64_t d = 0; d < rank; ++d) s.push_back(std::int64_t{2} << r.uniform(0, 2));
  return s;
}
dist_tensor_spec random_spec(ctspmd_test::rng& r, const process_mesh& m, const tensor_shape& s) {
  return {s, {m, ctspmd_test::random_dims_mapping(r, s.size(), m.ndim())}};
}

TEST_CASE("add_n") {
  const std::vector<dist_tensor_spec> in{spec({8, 4}, {0, -1}), spec({8, 4}, {-1, 1}), partial_spec({8, 4}, {-1, -1}, 2)};
  const auto f = runtime::infer_forward("add_n", in);
  CHECK(f == rules::add_n::infer_forward(in));
  CHECK(strings(f.inputs) == std::vector<std::string>(3, "dims_mapping [0, 1]"));
  CHECK(strings(f.outputs) == std::vector<std::string>{"dims_mapping [0, 1]"});
  CHECK(to_string(runtime::infer_forward("add_n", std::vector{spec({8, 4}, {0, -1}), spec({8, 4}, {1, -1})}, {},
                                         semantics::phi)
                      .outputs[0]) == "dims_mapping [[0, 1], []]");
  check_error([] { (void)rules::add_n::infer_forward({spec({8, 4}, {-1, -1}), spec({8}, {-1})}); },
              error_kind::invalid_argument, "add_n: input 1 has rank 1, but input 0 has rank 2");
  check_error([] { (void)rules::add_n::infer_forward({spec({8, 4}, {-1, -1}), spec({8, 3}, {-1, -1})}); },
              error_kind::invalid_argument, "add_n: input 1 has size 3 at dim 1, but input 0 has size 4");
  check_error([] { (void)rules::add_n::infer_backward({spec({8, 4}, {-1, -1})}, {spec({8, 5}, {-1, -1})}); },
              error_kind::invalid_argument, "add_n: the output has size 5 at dim 1, but input 0 has size 4");
  check_error([] { (void)rules::add_n::infer_forward({spec({8}, {0}), spec({8}, {1})}); }, error_kind::unimplemented,
              "add_n");
}

TEST_CASE("scale and pow") {
  const std::vector<dist_tensor_spec> in{partial_spec({8, 4}, {0, -1}, 1)};
  const auto f = runtime::infer_forward("scale", in, {{"scale", 2.0}, {"bias", 1.0}, {"bias_after_scale", false}});
  CHECK(strings(f.inputs) == std::vector<std::string>{"dims_mapping [0, -1]"});
  CHECK(strings(f.outputs) == std::vector<std::string>{"dims_mapping [0, -1]"});
  CHECK(runtime::infer_forward("pow", in, {{"y", 3.0}}) == rules::power::infer_forward(in, {.y = 3.0}));
  check_error([&] { (void)runtime::infer_forward("pow", in, {{"exponent", 3.0}}); }, error_kind::invalid_argument, "y");
  check_error([&] { (void)runtime::infer_forward("scale", in, {{"bias_after_scale", 1.0}}); },
              error_kind::invalid_argument, "bias_after_scale");
  check_error([] { (void)rules::scale::infer_backward({spec({8, 4}, {-1, -1})}, {spec({8}, {-1})}); },
              error_kind::invalid_argument, "scale: the output has rank 1, but the inputs broadcast to rank 2");
}

TEST_CASE("swiglu") {
  const auto f1 = runtime::infer_forward("swiglu", std::vector{spec({8, 16}, {0, 1}), absent});
  CHECK(strings(f1.inputs) == std::vector<std::string>{"dims_mapping [0, -1]", "dims_mapping []"});
  CHECK(strings(f1.outputs) == std::vector<std::string>{"dims_mapping [0, -1]"});
  const auto f2 = runtime::infer_forward("swiglu", std::vector{spec({8, 16}, {0, -1}), spec({8, 16}, {-1, 1})});
  CHECK(strings(f2.outputs) == std::vector<std::string>{"dims_mapping [0, 1]"});
  check_error([] { (void)rules::swiglu::infer_forward({spec({8, 15}, {-1, -1})}); }, error_kind::invalid_argument,
              "swiglu: without y, x's last dim (size 15) is split in two halves, so its size must be even");
  check_error([] { (void)rules::swiglu::infer_backward({spec({8, 16}, {-1, -1})}, {spec({8, 16}, {-1, -1})}); },
              error_kind::invalid_argument, "swiglu: the output has size 16 at dim 1, but x's shape gives it size 8");
  const auto g = runtime::infer_forward("swiglu_grad", std::vector{spec({8, 16}, {-1, -1}), absent, spec({8, 8}, {1, 0})});
  CHECK(strings(g.outputs) == std::vector<std::string>{"dims_mapping [1, -1]", "dims_mapping []"});
  check_error([] { (void)runtime::infer_backward("swiglu_grad", std::vector{spec({8}, {-1}), absent, spec({4}, {-1})},
                                                 std::vector{spec({8}, {-1}), absent}); },
              error_kind::unimplemented, "swiglu_grad: a grad rule has no reverse inference");
}

TEST_CASE("dropout and fused_dropout_add") {
  const attribute_map attrs{{"p", 0.1}, {"is_test", false}, {"mode", std::string("upscale_in_train")},
                            {"seed", std::int64_t{7}}, {"fix_seed", true}};
  const auto d = runtime::infer_forward("dropout", std::vector{partial_spec({8, 4}, {0, -1}, 1), absent}, attrs);
  CHECK(strings(d.outputs) == std::vector<std::string>{"dims_mapping [0, -1]", "dims_mapping [0, -1]"});
  CHECK(strings(d.inputs) == std::vector<std::string>{"dims_mapping [0, -1]", "dims_mapping []"});
  check_error([] { (void)rules::dropout::infer_forward({spec({8, 4}, {0, -1}), spec({1}, {-1})}); },
              error_kind::invalid_argument,
              "dropout: seed_tensor must be absent (shape [], dims mapping []), but it has rank 1");
  const auto dg = runtime::infer_forward("dropout_grad", std::vector{spec({8, 4}, {1, -1}), partial_spec({8, 4}, {-1, 0}, 1)});
  CHECK(strings(dg.outputs) == std::vector<std::string>{"dims_mapping [-1, 0]"});
  const auto fa = runtime::infer_forward("fused_dropout_add", std::vector{spec({8, 4}, {0, -1}), spec({8, 4}, {-1, 1})});
  CHECK(strings(fa.inputs) == std::vector<std::string>(2, "dims_mapping [0, 1]"));
  CHECK(strings(fa.outputs) == std::vector<std::string>{"dims_mapping [0, 1]", "dims_mapping [-1]"});
  check_error([] { (void)rules::fused_dropout_add::infer_forward({spec({8, 4}, {-1, -1}), spec({4}, {-1})}); },
              error_kind::invalid_argument, "fused_dropout_add: y has rank 1, but x has rank 2 (they must have one shape)");
  const auto fg = runtime::infer_forward("fused_dropout_add_grad", std::vector{spec({2}, {0}), partial_spec({8, 4}, {1, -1}, 0)});
  CHECK(strings(fg.outputs) == std::vector<std::string>(2, "dims_mapping [1, -1]"));
  check_error([] { (void)rules::fused_dropout_add_grad::infer_forward({spec({2, 1}, {-1, -1}), spec({8}, {-1})}); },
              error_kind::invalid_argument, "fused_dropout_add_grad: seed_offset must be 1-D, but has rank 2");
}

TEST_CASE("where and where_grad") {
  const std::vector<dist_tensor_spec> in{spec({4, 8, 6}, {0, -1, -1}), spec({8, 6}, {1, -1}), spec({6}, {2})};
  const auto f = runtime::infer_forward("where", in, {}, semantics::phi);
  CHECK(strings(f.inputs) ==
        std::vector<std::string>{"dims_mapping [0, 1, 2]", "dims_mapping [1, 2]", "dims_mapping [2]"});
  check_error([] { (void)rules::where::infer_forward({spec({8}, {-1}), spec({4, 8}, {-1, -1}), spec({8}, {-1})}); },
              error_kind::invalid_argument, "where: x has rank 2, more than condition's rank 1");
  const auto g = runtime::infer_forward(
      "where_grad", std::vector{spec({4, 8, 6}, {-1, -1, -1}), spec({8, 6}, {-1, -1}), spec({6}, {-1}), spec({4, 8, 6}, {0, 1, 2})});
  CHECK(strings(g.outputs) ==
        std::vector<std::string>{"dims_mapping [1, 2], partial {0: sum}", "dims_mapping [2], partial {0: sum, 1: sum}"});
}

TEST_CASE("elementwise grads") {
  const std::vector<dist_tensor_spec> un{spec({8, 4}, {1, -1}), partial_spec({8, 4}, {0, -1}, 2)};
  for (const char* op : {"relu_grad", "exp_grad", "silu_grad", "tanh_grad", "sigmoid_grad", "rsqrt_grad"})
    CHECK(strings(runtime::infer_forward(op, un).outputs) == std::vector<std::string>{"dims_mapping [0, -1]"});
  CHECK(runtime::infer_forward("gelu_grad", un, {{"approximate", true}}).outputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(runtime::infer_forward("pow_grad", un, {{"y", 2.0}}).outputs[0].dims_mapping() == dims_mapping{0, -1});
  check_error([] { (void)runtime::infer_forward("relu_grad", std::vector{spec({8}, {-1}), spec({8, 4}, {-1, -1})}); },
              error_kind::invalid_argument, "relu_grad: input 0 has rank 1, but out_grad has rank 2");
  const std::vector<dist_tensor_spec> bin{spec({8, 4}, {-1, -1}), spec({4}, {-1}), spec({8, 4}, {0, 1})};
  for (const char* op : {"add_grad", "subtract_grad", "multiply_grad", "maximum_grad", "minimum_grad", "elementwise_pow_grad"}) {
    const auto g = runtime::infer_forward(op, bin, {{"axis", std::int64_t{-1}}});
    CHECK(strings(g.outputs) == std::vector<std::string>{"dims_mapping [0, 1]", "dims_mapping [1], partial {0: sum}"});
    CHECK(strings(g.inputs) ==
          std::vector<std::string>{"dims_mapping [0, 1]", "dims_mapping [1]", "dims_mapping [0, 1]"});
  }
  const auto dv = runtime::infer_forward("divide_grad", std::vector{spec({8, 4}, {-1, -1}), spec({8, 4}, {-1, -1}),
                                                                    spec({8, 4}, {1, -1}), spec({8, 4}, {-1, 0})});
  CHECK(strings(dv.outputs) == std::vector<std::string>(2, "dims_mapping [-1, 0]"));
  check_error([&] { (void)runtime::infer_forward("add_grad", bin, {{"axis", std::int64_t{0}}}); },
              error_kind::invalid_argument, "add_grad: axis 0 is not supported: only -1");
  check_error([] { (void)rules::elementwise_binary_grad::infer_forward({spec({8, 4}, {-1, -1}), spec({3}, {-1}), spec({8, 4}, {-1, -1})}); },
              error_kind::invalid_argument,
              "elementwise_binary_grad: input 1 has size 3 at dim 0, which does not broadcast to out_grad's size 4 there");
  check_error([] { (void)rules::elementwise_binary_grad::infer_forward({spec({2, 8}, {-1, -1}), spec({8}, {-1}), spec({8}, {-1})}); },
              error_kind::invalid_argument, "elementwise_binary_grad: input 0 has rank 2, more than out_grad's rank 1");
  check_error([&] { (void)runtime::infer_backward("add_grad", bin, std::vector{bin[0], bin[1]}); },
              error_kind::unimplemented, "no reverse inference");
}

TEST_CASE("elementwise family rules: forward -> backward round trip") {
  ctspmd_test::rng r(0x67726f757041ULL);
  std::size_t checked = 0;
  for (int i = 0; i < 300; ++i) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = r.uniform(1, 4);
    const tensor_shape s = random_shape(r, rank);
    const dist_tensor_spec x = random_spec(r, m, s);
    const std::vector<dist_tensor_spec> one{x};
    const std::vector<tensor_shape> shape1{s};
    checked += ctspmd_test::check_roundtrip<rules::scale>(one, shape1, {.scale = 2.0}) ? 1 : 0;
    checked += ctspmd_test::check_roundtrip<rules::power>(one, shape1, {.y = 2.0}) ? 1 : 0;
    const std::vector<dist_tensor_spec> two{x, random_spec(r, m, s)};
    checked += ctspmd_test::check_roundtrip<rules::add_n>(std::vector{x, two[1], random_spec(r, m, s)}, shape1) ? 1 : 0;
    checked += ctspmd_test::check_roundtrip<rules::swiglu>(two, shape1) ? 1 : 0;
    tensor_shape half = s;
    half[half.size() - 1] /= 2;
    checked += ctspmd_test::check_roundtrip<rules::swiglu>(std::vector{x, dist_tensor_spec({}, {m, dims_mapping{}})},
                                                           std::vector{half}) ? 1 : 0;
    checked += ctspmd_test::check_roundtrip<rules::dropout>(one, std::vector{s, s}) ? 1 : 0;
    checked += ctspmd_test::check_roundtrip<rules::fused_dropout_add>(two, std::vector{s, tensor_shape{2}}) ? 1 : 0;
    // where: x and y suffixes of condition's shape, now and then with a size-1 dim
    const auto suffix = [&](std::int64_t from) {
      tensor_shape t;
      for (auto d = static_cast<std::size_t>(from); d < s.size(); ++d) t.push_back(s[d]);
      return t;
    };
    tensor_shape xs = suffix(r.uniform(0, rank - 1));
    const tensor_shape ys = suffix(r.uniform(0, rank - 1));
    if (r.coin()) xs[0] = 1;
    checked += ctspmd_test::check_roundtrip<rules::where>(std::vector{x, random_spec(r, m, xs), random_spec(r, m, ys)},
                                                          shape1) ? 1 : 0;
  }
  MESSAGE(checked << " round trips checked");
  CHECK(checked > 1500);
}

}  // namespace elementwise_family_test
