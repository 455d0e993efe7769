// rms_norm / fused_rms_norm, rms_norm_grad and layer_norm_grad at run time: typed and by-name
// calls, errors with their messages, and rms_norm's forward -> backward round trip.
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
namespace norms_test {

using namespace ctspmd;
using ctspmd_test::check_error;

const process_mesh mesh({2, 2, 2});
const ctspmd_test::on_mesh spec{mesh};
std::vector<std::string> strings(const dist_attrs& attrs) {
  std::vector<std::string> out;
  for (const auto& a : attrs) out.push_back(to_string(a));
  return out;
}
const dist_tensor_spec sc = spec({16}, {2});

TEST_CASE("rms_norm") {
  const std::vector<dist_tensor_spec> in{spec({8, 4, 16}, {0, 1, 2}), sc};
  for (const char* op : {"rms_norm", "fused_rms_norm"}) {
    const auto f = runtime::infer_forward(op, in, {{"epsilon", 1e-6}});
    CHECK(strings(f.inputs) == std::vector<std::string>{"dims_mapping [0, 1, -1]", "dims_mapping [-1]"});
    CHECK(strings(f.outputs) == std::vector<std::string>{"dims_mapping [0, 1, -1]", "dims_mapping [0, 1]"});
  }
  const auto b = runtime::infer_backward("rms_norm", in, std::vector{spec({8, 4, 16}, {0, -1, 2}), spec({8, 4}, {-1, 1})});
  CHECK(strings(b.inputs) == std::vector<std::string>{"dims_mapping [0, 1, -1]", "dims_mapping [-1]"});
  check_error([] { (void)rules::rms_norm::infer_forward({spec({8, 16}, {-1, -1}), spec({8}, {-1})}); },
              error_kind::invalid_argument, "rms_norm: scale has size 8, but x's last dim has size 16");
  check_error([] { (void)rules::rms_norm::infer_forward({spec({8, 16}, {-1, -1}), spec({1, 16}, {-1, -1})}); },
              error_kind::invalid_argument, "rms_norm: scale must be 1-D, but has rank 2");
  check_error([] { (void)rules::rms_norm::infer_forward({spec({}, {}), spec({1}, {-1})}); },
              error_kind::invalid_argument, "rms_norm: x must have rank at least 1, but has rank 0");
  check_error([] {
    (void)rules::rms_norm::infer_backward({spec({8, 16}, {-1, -1}), spec({16}, {-1})},
                                          {spec({8, 16}, {-1, -1}), spec({8, 1}, {-1, -1})});
  }, error_kind::invalid_argument, "rms_norm: invvar has rank 2, but x's leading dims are 1");
  check_error([] {
    (void)rules::rms_norm::infer_backward({spec({8, 16}, {0, -1}), spec({16}, {-1})},
                                          {spec({8, 16}, {0, -1}), spec({8}, {1})});
  }, error_kind::unimplemented, "rms_norm");
}

TEST_CASE("rms_norm_grad") {
  const std::vector<dist_tensor_spec> in{spec({8, 4, 16}, {0, -1, 2}), sc, spec({8, 4}, {-1, 1}), spec({8, 4, 16}, {-1, -1, -1})};
  const auto g = runtime::infer_forward("rms_norm_grad", in, {{"epsilon", 1e-6}}, semantics::phi);
  CHECK(strings(g.inputs) == std::vector<std::string>{"dims_mapping [0, 1, -1]", "dims_mapping [-1]",
                                                      "dims_mapping [0, 1]", "dims_mapping [0, 1, -1]"});
  CHECK(strings(g.outputs) ==
        std::vector<std::string>{"dims_mapping [0, 1, -1]", "dims_mapping [-1], partial {0: sum, 1: sum}"});
  check_error([] {
    (void)rules::rms_norm_grad::infer_forward(
        {spec({8, 16}, {-1, -1}), sc, spec({8}, {-1}), spec({8, 8}, {-1, -1})});
  }, error_kind::invalid_argument, "rms_norm_grad: out_grad has size 8 at dim 1, but x has size 16");
  check_error([&] { (void)runtime::infer_backward("rms_norm_grad", in, std::vector{in[0], in[1]}); },
              error_kind::unimplemented, "rms_norm_grad: a grad rule has no reverse inference");
}

TEST_CASE("layer_norm_grad") {
  // Paddle's C++ TEST(LayerNorm) grad case 1 (mesh [2, 2])
  const process_mesh m({2, 2});
  const dist_tensor_spec x({16, 32, 32}, {m, {0, 1, -1}});
  const std::vector<dist_tensor_spec> in{x,
                                         {{32}, {m, {0}}},
                                         {{32}, {m, {0}}},
                                         {{16, 32}, {m, {0, 1}}},
                                         {{16, 32}, {m, {0, 1}}},
                                         x};
  const runtime::attribute_map attrs{{"epsilon", 1.0}, {"begin_norm_axis", std::int64_t{2}}};
  for (auto s : {semantics::fluid, semantics::phi}) {
    const auto g = runtime::infer_forward("layer_norm_grad", in, attrs, s);
    CHECK(strings(g.outputs) == std::vector<std::string>{"dims_mapping [0, 1, -1]",
                                                         "dims_mapping [-1], partial {0: sum, 1: sum}",
                                                         "dims_mapping [-1], partial {0: sum, 1: sum}"});
  }
  check_error([&] { (void)runtime::infer_forward("layer_norm_grad", in, {{"begin_norm_axis", std::int64_t{3}}}); },
              error_kind::invalid_argument,
              "layer_norm_grad: begin_norm_axis 3 is outside [1, 3) for x of rank 3 (negative values count from the end)");
  check_error([&] { (void)runtime::infer_forward("layer_norm_grad", in, {{"begin_norm_axis", std::int64_t{1}}}); },
              error_kind::invalid_argument, "layer_norm_grad: mean has rank 2, but begin_norm_axis is 1");
}

TEST_CASE("rms_norm: forward -> backward round trip") {
  ctspmd_test::rng r(0x726d736eULL);
  std::size_t checked = 0;
  for (int i = 0; i < 300; ++i) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const auto rank = r.uniform(1, 4);
    tensor_shape s;
    for (std::int64_t d = 0; d < rank; ++d) s.push_back(std::int64_t{2} << r.uniform(0, 2));
    const dist_tensor_spec x(s, {m, ctspmd_test::random_dims_mapping(r, s.size(), m.ndim())});
    const dist_tensor_spec scale({s[s.size() - 1]}, {m, ctspmd_test::random_dims_mapping(r, 1, m.ndim())});
    tensor_shape lead;
    for (std::size_t d = 0; d + 1 < s.size(); ++d) lead.push_back(s[d]);
    const std::vector<dist_tensor_spec> in{x, scale};
    if (ctspmd_test::check_roundtrip<rules::rms_norm>(in, std::vector{s, lead})) {
      ++checked;
      const auto fwd = rules::rms_norm::infer_forward(in);
      const auto bwd = rules::rms_norm::infer_backward(in, ctspmd_test::with_attrs(std::vector{s, lead}, fwd.outputs));
      CHECK(bwd.inputs == fwd.inputs);
      CHECK(bwd.outputs == fwd.outputs);
    }
  }
  CHECK(checked == 300);
}

}  // namespace norms_test
