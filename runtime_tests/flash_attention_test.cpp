// The flash_attention and flash_attention_grad rules at run time: Paddle's test vectors, GQA,
// the by-name calls, every error as a thrown spmd_error, and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "check_error.hpp"
#include "roundtrip.hpp"

#include <algorithm>
#include <array>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace flash_attention_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::flash_attention;
using rules::flash_attention_grad;

const process_mesh m23({2, 3});
const process_mesh m3({2, 2, 2});
dist_tensor_spec spec(const process_mesh& m, tensor_shape s, dims_mapping dm) { return {s, {m, dm}}; }
dist_tensor_spec absent(const process_mesh& m) { return {{}, {m, dims_mapping{}}}; }

TEST_CASE("flash_attention: Paddle's test_flash_attention_rule.py, by name") {
  const std::vector<dist_tensor_spec> in{spec(m23, {2, 512, 64, 1024}, {0, -1, 1, -1}), spec(m23, {2, 1024, 64, 1024}, {0, -1, -1, -1}),
                                         spec(m23, {2, 1024, 64, 512}, {0, -1, -1, -1}), absent(m23), absent(m23)};
  const auto f = runtime::infer_forward("flash_attention", in, {{"dropout", 0.0}, {"causal", false}, {"return_softmax", false}});
  REQUIRE(f.inputs.size() == 5);
  REQUIRE(f.outputs.size() == 4);
  for (std::size_t i = 0; i < 3; ++i) CHECK(f.inputs[i].dims_mapping() == dims_mapping{0, -1, 1, -1});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{0, -1, 1, -1});
  CHECK(f.outputs[2].dims_mapping() == dims_mapping{0, 1, -1});
  const std::vector<dist_tensor_spec> out{spec(m23, {2, 512, 64, 512}, {0, -1, 1, -1}), absent(m23),
                                          spec(m23, {2, 64, 512}, {0, 1, -1}), spec(m23, {2}, {-1})};
  const auto b = runtime::infer_backward("flash_attention", in, out, {});
  for (std::size_t i = 0; i < 3; ++i) CHECK(b.inputs[i].dims_mapping() == dims_mapping{0, -1, 1, -1});
  CHECK(b.outputs[2].dims_mapping() == dims_mapping{0, 1, -1});
}

TEST_CASE("flash_attention: GQA and the mask") {
  // 8 q heads, 2 kv heads on mesh dims 0 then 1 (4 shards): phi keeps mesh dim 0, fluid none
  const std::vector<dist_tensor_spec> in{{{4, 16, 8, 32}, {m3, {{}, {}, {0, 1}, {}}}}, spec(m3, {4, 16, 2, 32}, {-1, -1, -1, -1}),
                                         spec(m3, {4, 16, 2, 32}, {-1, -1, -1, -1}), absent(m3), spec(m3, {1, 8, 16, 16}, {-1, -1, -1, 1})};
  const auto phi = flash_attention::infer_forward(in, {}, semantics::phi);
  CHECK(phi.inputs[1].multi_dims_mapping() == multi_dims_mapping{{}, {}, {0}, {}});
  CHECK(phi.inputs[4].multi_dims_mapping() == multi_dims_mapping{{}, {0}, {}, {}});
  const auto fluid = flash_attention::infer_forward(in);
  CHECK(fluid.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1, -1});
}

TEST_CASE("flash_attention_grad: by name") {
  const std::vector<dist_tensor_spec> in{spec(m3, {4, 16, 8, 32}, {0, 1, -1, -1}), spec(m3, {4, 16, 8, 32}, {-1, -1, 2, -1}),
                                         spec(m3, {4, 16, 8, 32}, {-1, -1, 2, -1}), spec(m3, {4, 16, 8, 32}, {-1, -1, -1, 1}),
                                         spec(m3, {4, 8, 16}, {-1, -1, 1}), spec(m3, {2}, {0}), absent(m3),
                                         spec(m3, {4, 16, 8, 32}, {-1, -1, -1, 1})};
  const auto g = runtime::infer_forward("flash_attention_grad", in, {{"causal", true}, {"context_parallel", true}}, semantics::phi);
  REQUIRE(g.outputs.size() == 3);
  // context parallelism: q's chunk of the sequence (mesh dim 1) stays; k and v are whole, their
  // gradients partial over the chunks
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{0, 1, 2, -1});
  for (std::size_t i = 1; i < 3; ++i) {
    CHECK(g.outputs[i].dims_mapping() == dims_mapping{0, -1, 2, -1});
    CHECK(g.outputs[i].partial_dims() == mesh_dims{1});
  }
  CHECK(g.inputs[4].dims_mapping() == dims_mapping{0, 2, 1});
  CHECK(g.inputs[5].dims_mapping() == dims_mapping{-1});
  // not asked for: q's and softmax_lse's sequences replicated, no gradient partial
  for (const auto sem : {semantics::fluid, semantics::phi}) {
    const auto n = runtime::infer_forward("flash_attention_grad", in, {{"causal", true}}, sem);
    CHECK(n.outputs[0].dims_mapping() == dims_mapping{0, -1, 2, -1});
    for (std::size_t i = 0; i < 3; ++i) CHECK(!n.outputs[i].is_partial());
    CHECK(n.inputs[4].dims_mapping() == dims_mapping{0, 2, -1});
  }
}

TEST_CASE("flash_attention: Paddle's FlashAtt test (spmd_rule_test.cc), by name") {
  // mesh [2, 2]; q, k, v [2, 256, 2, 128] with the batch on mesh dim 0 and the sequence on 1
  const process_mesh m22({2, 2});
  const auto qkv = spec(m22, {2, 256, 2, 128}, {0, 1, -1, -1});
  const std::vector<dist_tensor_spec> in{qkv, qkv, qkv, absent(m22), absent(m22)};
  const runtime::attribute_map attrs{{"dropout", 0.5}, {"causal", false}, {"return_softmax", false}, {"is_test", false}};
  const std::vector<dist_tensor_spec> grad_in{qkv,
                                              qkv,
                                              qkv,
                                              spec(m22, {2, 256, 2, 128}, {0, -1, 1, -1}),
                                              spec(m22, {2, 2, 256}, {0, 1, -1}),
                                              absent(m22),
                                              absent(m22),
                                              spec(m22, {2, 256, 2, 128}, {-1, -1, -1, -1})};
  for (const auto sem : {semantics::phi, semantics::fluid}) {
    CAPTURE(sem == semantics::phi);
    // forward: q's sequence sharding dropped
    const auto f = runtime::infer_forward("flash_attention", in, attrs, sem);
    REQUIRE(f.inputs.size() == 5);
    REQUIRE(f.outputs.size() == 4);
    for (std::size_t i = 0; i < 3; ++i) CHECK(f.inputs[i].dims_mapping() == dims_mapping{0, -1, -1, -1});
    CHECK(f.inputs[3].dims_mapping() == dims_mapping{});
    CHECK(f.inputs[4].dims_mapping() == dims_mapping{});
    CHECK(f.outputs[0].dims_mapping() == dims_mapping{0, -1, -1, -1});
    CHECK(f.outputs[1].dims_mapping() == dims_mapping{0, -1, -1, -1});
    CHECK(f.outputs[2].dims_mapping() == dims_mapping{0, -1, -1});
    CHECK(f.outputs[3].dims_mapping() == dims_mapping{-1});
    // grad: mesh dim 1 goes from q's sequence to the heads (out's and softmax_lse's)
    const auto g = runtime::infer_forward("flash_attention_grad", grad_in, {{"dropout", 0.5}, {"causal", false}}, sem);
    REQUIRE(g.inputs.size() == 8);
    REQUIRE(g.outputs.size() == 3);
    for (const std::size_t i : std::array<std::size_t, 5>{0, 1, 2, 3, 7}) CHECK(g.inputs[i].dims_mapping() == dims_mapping{0, -1, 1, -1});
    CHECK(g.inputs[4].dims_mapping() == dims_mapping{0, 1, -1});
    CHECK(g.inputs[5].dims_mapping() == dims_mapping{});
    CHECK(g.inputs[6].dims_mapping() == dims_mapping{});
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(g.outputs[i].dims_mapping() == dims_mapping{0, -1, 1, -1});
      CHECK(!g.outputs[i].is_partial());
    }
    // asked for: q keeps its chunk of the sequence
    const auto cp = runtime::infer_forward("flash_attention", in, {{"dropout", 0.5}, {"context_parallel", true}}, sem);
    CHECK(cp.inputs[0].dims_mapping() == dims_mapping{0, 1, -1, -1});
    CHECK(cp.inputs[1].dims_mapping() == dims_mapping{0, -1, -1, -1});
    CHECK(cp.outputs[2].dims_mapping() == dims_mapping{0, -1, 1});
  }
  // the attribute is listed with its type and default
  for (const auto* op : {"flash_attention", "flash_attention_grad"}) {
    const auto listed = runtime::rule(op).attributes();
    CHECK(std::any_of(listed.begin(), listed.end(), [](const auto& a) {
      return a.name == "context_parallel" && a.type == "bool" && a.default_value == runtime::attribute(false);
    }));
  }
}

TEST_CASE("flash_attention: errors") {
  const auto q = spec(m3, {4, 16, 8, 32}, {-1, -1, -1, -1});
  check_error([&] { (void)flash_attention::infer_forward({spec(m3, {4, 16, 8}, {-1, -1, -1}), q, q}); }, error_kind::invalid_argument,
              "flash_attention: q must be 4-D [batch, seq_len, num_heads, head_dim], but has rank 3");
  check_error([&] { (void)flash_attention::infer_forward({q, spec(m3, {2, 16, 8, 32}, {-1, -1, -1, -1}), q}); },
              error_kind::invalid_argument, "q, k and v must have one batch size, but have 4, 2 and 4");
  const auto k3 = spec(m3, {4, 16, 3, 32}, {-1, -1, -1, -1});
  check_error([&] { (void)flash_attention::infer_forward({q, k3, k3}); }, error_kind::invalid_argument,
              "q's number of heads (8) must be a multiple of k's and v's (3)");
  check_error([&] { (void)flash_attention::infer_forward({q, spec(m3, {4, 16, 8, 16}, {-1, -1, -1, -1}), q}); },
              error_kind::invalid_argument, "q and k must have one head dim, but have 32 and 16");
  check_error([&] { (void)flash_attention::infer_forward({q, q, spec(m3, {4, 12, 8, 32}, {-1, -1, -1, -1})}); },
              error_kind::invalid_argument, "k and v must have one sequence length, but have 16 and 12");
  check_error([&] { (void)flash_attention::infer_forward({q, q, spec(m3, {4, 16, 4, 32}, {-1, -1, -1, -1})}); },
              error_kind::invalid_argument, "k and v must have one number of heads, but have 8 and 4");
  check_error([&] { (void)flash_attention::infer_forward({q, q, q, absent(m3), spec(m3, {4, 8, 16, 15}, {-1, -1, -1, -1})}); },
              error_kind::invalid_argument, "attn_mask's dim 3 has size 15, but must be 1 or 16");
  check_error([&] { (void)flash_attention::infer_forward({q, q, q, absent(m3), spec(m3, {4, 8, 16}, {-1, -1, -1})}); },
              error_kind::invalid_argument, "attn_mask must be 4-D");
  check_error([&] { (void)flash_attention::infer_forward({q, q, q, spec(m3, {2, 1}, {-1, -1})}); }, error_kind::invalid_argument,
              "fixed_seed_offset must be 1-D, but has rank 2");
  const auto lse = spec(m3, {4, 8, 16}, {-1, -1, -1});
  check_error([&] { (void)flash_attention_grad::infer_forward({q, q, q, q, lse, spec(m3, {2}, {-1}), absent(m3), spec(m3, {4, 16, 8, 31}, {-1, -1, -1, -1})}); },
              error_kind::invalid_argument, "flash_attention_grad: out_grad's dim 3 has size 31, but must be 32");
  check_error([&] { (void)flash_attention_grad::infer_forward({q, q, q, q, spec(m3, {4, 8}, {-1, -1}), spec(m3, {2}, {-1}), absent(m3), q}); },
              error_kind::invalid_argument, "softmax_lse has rank 2, but must have rank 3");
}

TEST_CASE("flash_attention: round trip") {
  ctspmd_test::rng r(0xf1a5ULL);
  int checked = 0;
  for (int i = 0; i < 200; ++i) {
    const auto mesh = ctspmd_test::random_mesh(r);
    const bool gqa = r.coin();
    const tensor_shape qs{4, 8, 12, 6}, ks{4, 10, gqa ? 6 : 12, 6}, vs{4, 10, gqa ? 6 : 12, 5}, ms{1, 12, 8, 10};
    const std::vector<dist_tensor_spec> in{{qs, {mesh, ctspmd_test::random_dims_mapping(r, 4, mesh.ndim())}},
                                           {ks, {mesh, ctspmd_test::random_dims_mapping(r, 4, mesh.ndim())}},
                                           {vs, {mesh, ctspmd_test::random_dims_mapping(r, 4, mesh.ndim())}},
                                           absent(mesh),
                                           {ms, {mesh, ctspmd_test::random_dims_mapping(r, 4, mesh.ndim())}}};
    const std::vector<tensor_shape> outs{{4, 8, 12, 5}, {4, 12, 8, 10}, {4, 12, 8}, {2}};
    checked += ctspmd_test::check_roundtrip<flash_attention>(in, outs) ? 1 : 0;
  }
  CHECK(checked > 50);
}

}  // namespace flash_attention_test
