// The fused_rope and fused_rope_grad rules at run time: the by-name calls (both names of
// fused_rope, the attributes), sequence parallelism, GQA, co-shards, every error as a thrown
// spmd_error with its message, and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "check_error.hpp"
#include "roundtrip.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace fused_rope_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::fused_rope;
using rules::fused_rope_grad;

const process_mesh m3({2, 2, 2});
dist_tensor_spec spec(const process_mesh& m, tensor_shape s, dims_mapping dm) { return {s, {m, dm}}; }
dist_tensor_spec absent(const process_mesh& m) { return {{}, {m, dims_mapping{}}}; }

TEST_CASE("fused_rope: by name, both names, sequence parallelism") {
  const std::vector<dist_tensor_spec> in{spec(m3, {4, 16, 8, 32}, {-1, 0, -1, 1}), spec(m3, {4, 16, 8, 32}, {2, -1, -1, -1}),
                                         absent(m3), spec(m3, {16, 32}, {1, -1}), spec(m3, {16, 32}, {-1, -1}), absent(m3)};
  for (const char* name : {"fused_rope", "fused_rotary_position_embedding"}) {
    const auto f = runtime::infer_forward(name, in, {{"use_neox_rotary_style", true}, {"time_major", false}, {"rotary_emb_base", 500.0}});
    REQUIRE(f.inputs.size() == 6);
    REQUIRE(f.outputs.size() == 3);
    CHECK(f.inputs[0].dims_mapping() == dims_mapping{2, 0, -1, -1});
    CHECK(f.inputs[1].dims_mapping() == dims_mapping{2, 0, -1, -1});
    CHECK(f.inputs[2].dims_mapping() == dims_mapping{});
    CHECK(f.inputs[3].dims_mapping() == dims_mapping{0, -1});
    CHECK(f.inputs[4].dims_mapping() == dims_mapping{0, -1});
    CHECK(f.inputs[5].dims_mapping() == dims_mapping{});
    CHECK(f.outputs[0].dims_mapping() == dims_mapping{2, 0, -1, -1});
    CHECK(f.outputs[2].dims_mapping() == dims_mapping{});
    const std::vector<dist_tensor_spec> out{spec(m3, {4, 16, 8, 32}, {-1, 1, 0, -1}), spec(m3, {4, 16, 8, 32}, {-1, -1, -1, -1}),
                                            absent(m3)};
    const auto b = runtime::infer_backward(name, in, out, {});
    CHECK(b.inputs[0].dims_mapping() == dims_mapping{-1, 1, 0, -1});
    CHECK(b.inputs[3].dims_mapping() == dims_mapping{1, -1});
    CHECK(b.outputs[1].dims_mapping() == dims_mapping{-1, 1, 0, -1});
  }
  // time_major, position_ids: seq replicated, batch from position_ids
  const std::vector<dist_tensor_spec> tm{spec(m3, {16, 4, 8, 32}, {0, -1, 1, -1}), spec(m3, {16, 4, 8, 32}, {-1, -1, -1, -1}),
                                         spec(m3, {16, 4, 8, 32}, {-1, -1, -1, -1}), spec(m3, {1, 64, 1, 32}, {-1, 2, -1, -1}),
                                         spec(m3, {1, 64, 1, 32}, {-1, -1, -1, -1}), spec(m3, {4, 16}, {2, 0})};
  const auto t = runtime::infer_forward("fused_rope", tm, {{"time_major", true}}, semantics::phi);
  CHECK(t.inputs[0].dims_mapping() == dims_mapping{-1, 2, 1, -1});
  CHECK(t.inputs[3].dims_mapping() == dims_mapping{-1, -1, -1, -1});
  CHECK(t.inputs[5].dims_mapping() == dims_mapping{2, -1});
  CHECK(t.outputs[2].dims_mapping() == dims_mapping{-1, 2, 1, -1});
}

TEST_CASE("fused_rope: GQA and co-shards") {
  const std::vector<dist_tensor_spec> in{{{4, 16, 8, 32}, {m3, {{}, {}, {0, 1}, {}}}}, spec(m3, {4, 16, 2, 32}, {-1, -1, -1, -1}),
                                         spec(m3, {4, 16, 2, 32}, {-1, -1, -1, -1}), absent(m3), absent(m3), absent(m3)};
  CHECK(fused_rope::infer_forward(in, {}, semantics::phi).inputs[1].multi_dims_mapping() == multi_dims_mapping{{}, {}, {0}, {}});
  CHECK(fused_rope::infer_forward(in).inputs[0].dims_mapping() == dims_mapping{-1, -1, -1, -1});
  // phi: q and k shard the batch by different mesh dims: the union
  const std::vector<dist_tensor_spec> cs{spec(m3, {4, 16, 8, 32}, {0, -1, -1, -1}), spec(m3, {4, 16, 8, 32}, {1, -1, -1, -1}),
                                         absent(m3), absent(m3), absent(m3), absent(m3)};
  CHECK(fused_rope::infer_forward(cs, {}, semantics::phi).outputs[0].multi_dims_mapping() ==
        multi_dims_mapping{{0, 1}, {}, {}, {}});
  // a co-sharded seq under sequence parallelism, both semantics
  const std::vector<dist_tensor_spec> sp{{{4, 16, 8, 32}, {m3, {{}, {2, 0}, {}, {}}}}, spec(m3, {4, 16, 8, 32}, {-1, -1, -1, -1}),
                                         absent(m3), spec(m3, {16, 32}, {-1, -1}), spec(m3, {16, 32}, {-1, -1}), absent(m3)};
  for (auto s : {semantics::fluid, semantics::phi}) {
    const auto f = fused_rope::infer_forward(sp, {}, s);
    CHECK(f.inputs[4].multi_dims_mapping() == multi_dims_mapping{{2, 0}, {}});
    CHECK(f.outputs[1].multi_dims_mapping() == multi_dims_mapping{{}, {2, 0}, {}, {}});
  }
}

TEST_CASE("fused_rope_grad: by name") {
  const std::vector<dist_tensor_spec> in{spec(m3, {64, 32}, {-1, -1}), spec(m3, {64, 32}, {-1, -1}), spec(m3, {4, 16}, {0, 1}),
                                         spec(m3, {4, 16, 8, 32}, {0, 1, -1, -1}), spec(m3, {4, 16, 8, 32}, {-1, -1, -1, 1}),
                                         spec(m3, {4, 16, 8, 32}, {-1, -1, 1, -1})};
  const auto g = runtime::infer_forward("fused_rope_grad", in, {{"use_neox_rotary_style", false}});
  REQUIRE(g.outputs.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(g.outputs[i].dims_mapping() == dims_mapping{0, -1, 1, -1});
  CHECK(g.inputs[2].dims_mapping() == dims_mapping{0, -1});
  CHECK(g.inputs[0].dims_mapping() == dims_mapping{-1, -1});
  const std::vector<dist_tensor_spec> outs{in[3], in[4], in[5]};
  check_error([&] { (void)runtime::infer_backward("fused_rope_grad", in, outs, {}); }, error_kind::unimplemented,
              "no reverse inference");
  check_error([&] { (void)fused_rope_grad::infer_forward({in[0], in[1], in[2], spec(m3, {4, 16, 8}, {-1, -1, -1}), in[4], in[5]}); },
              error_kind::invalid_argument, "fused_rope_grad: out_q_grad must be 4-D, but has rank 3");
  check_error([&] { (void)fused_rope_grad::infer_forward({in[0], in[1], in[2], in[3], spec(m3, {4, 16, 3, 32}, {-1, -1, -1, -1}), absent(m3)}); },
              error_kind::invalid_argument, "out_q_grad's number of heads (8) must be a multiple of out_k_grad's (3)");
}

TEST_CASE("fused_rope and fused_rope_grad: every input but q absent") {
  const auto n = absent(m3);
  const auto q = spec(m3, {4, 16, 8, 32}, {0, 1, 2, -1});
  const auto none_of = [&](const spmd_info& r, std::initializer_list<std::size_t> in, std::initializer_list<std::size_t> out) {
    for (auto i : in) CHECK(r.inputs[i] == n.dist_attr());
    for (auto j : out) CHECK(r.outputs[j] == n.dist_attr());
  };
  for (auto s : {semantics::fluid, semantics::phi}) {
    CAPTURE(to_string(s));
    // q only
    const auto q_only = runtime::infer_forward("fused_rope", std::vector{q, n, n, n, n, n}, {}, s);
    CHECK(q_only.inputs[0].dims_mapping() == dims_mapping{0, -1, 2, -1});
    CHECK(q_only.outputs[0].dims_mapping() == dims_mapping{0, -1, 2, -1});
    none_of(q_only, {1, 2, 3, 4, 5}, {1, 2});
    // q and v
    const auto q_v = runtime::infer_forward("fused_rope", std::vector{spec(m3, {4, 16, 8, 32}, {0, -1, -1, -1}), n,
                                                                      spec(m3, {4, 16, 8, 32}, {-1, -1, 1, -1}), n, n, n},
                                            {}, s);
    CHECK(q_v.inputs[2].dims_mapping() == dims_mapping{0, -1, 1, -1});
    CHECK(q_v.outputs[2].dims_mapping() == dims_mapping{0, -1, 1, -1});
    none_of(q_v, {1, 3, 4, 5}, {1});
    // q with sin and cos, no position_ids: sequence parallel
    const auto sp = runtime::infer_forward(
        "fused_rope", std::vector{q, n, n, spec(m3, {16, 32}, {-1, -1}), spec(m3, {16, 32}, {-1, 0}), n}, {}, s);
    CHECK(sp.inputs[0].dims_mapping() == dims_mapping{0, 1, 2, -1});
    CHECK(sp.inputs[3].dims_mapping() == dims_mapping{1, -1});
    CHECK(sp.inputs[4].dims_mapping() == dims_mapping{1, -1});
    none_of(sp, {1, 2, 5}, {1, 2});
    // sin without cos: neither is read, both as given, no sequence parallelism
    const auto lone = runtime::infer_forward("fused_rope", std::vector{q, n, n, spec(m3, {16, 32}, {-1, 0}), n, n}, {}, s);
    CHECK(lone.inputs[0].dims_mapping() == dims_mapping{0, -1, 2, -1});
    CHECK(lone.inputs[3].dims_mapping() == dims_mapping{-1, 0});
    // grads with only out_q_grad
    const auto g = runtime::infer_forward("fused_rope_grad", std::vector{n, n, n, q, n, n}, {}, s);
    CHECK(g.inputs[3].dims_mapping() == dims_mapping{0, -1, 2, -1});
    CHECK(g.outputs[0].dims_mapping() == dims_mapping{0, -1, 2, -1});
    none_of(g, {0, 1, 2, 4, 5}, {1, 2});
    // grads with out_q_grad, out_k_grad and position_ids
    const auto gk = runtime::infer_forward(
        "fused_rope_grad", std::vector{n, n, spec(m3, {4, 16}, {-1, 0}), q, spec(m3, {4, 16, 4, 32}, {-1, -1, -1, -1}), n}, {}, s);
    CHECK(gk.inputs[2].dims_mapping() == dims_mapping{0, -1});
    CHECK(gk.outputs[1].dims_mapping() == dims_mapping{0, -1, 2, -1});
    none_of(gk, {0, 1, 5}, {2});
  }
  // the shapes a plan checks
  CHECK(fused_rope::try_output_shapes(std::vector{q, n, n, n, n, n}).value() == shape_list{q.shape(), {}, {}});
  CHECK(fused_rope_grad::try_output_shapes(std::vector{n, n, n, q, n, q}).value() == shape_list{q.shape(), {}, q.shape()});
  // a plan whose k, v, sin, cos and position_ids are absent propagates
  model::plan<8, 2> p(m3);
  const auto pq = p.tensor("q", {4, 16, 8, 32}, {0, 1, 2, -1});
  const auto none_in = p.tensor("none", {});
  const auto out_q = p.tensor("out_q", {4, 16, 8, 32}), out_k = p.tensor("out_k", {}), out_v = p.tensor("out_v", {});
  p.op<"fused_rope">({pq, none_in, none_in, none_in, none_in, none_in}, {out_q, out_k, out_v});
  const auto r = model::propagate(p);
  CHECK(r.attr(out_q).dims_mapping() == dims_mapping{0, -1, 2, -1});
  CHECK(r.attr(out_k).rank() == 0);
  CHECK(r.count() == 1);  // q's seq gathered, nothing for the absent operands
  // v is checked against q where k is absent
  check_error([&] { (void)fused_rope::infer_forward(std::vector{q, n, spec(m3, {4, 16, 3, 32}, {-1, -1, -1, -1}), n, n, n}); },
              error_kind::invalid_argument, "fused_rope: q's number of heads (8) must be a multiple of v's (3)");
  check_error([&] { (void)fused_rope::infer_forward(std::vector{q, n, spec(m3, {4, 8, 8, 32}, {-1, -1, -1, -1}), n, n, n}); },
              error_kind::invalid_argument, "fused_rope: v's dim 1 has size 8, but q's has 16");
  check_error([&] { (void)fused_rope_grad::infer_forward(std::vector{n, n, n, q, n, spec(m3, {2, 16, 8, 32}, {-1, -1, -1, -1})}); },
              error_kind::invalid_argument, "fused_rope_grad: out_v_grad's dim 0 has size 2, but out_q_grad's has 4");
}

TEST_CASE("fused_rope: errors") {
  const auto q = spec(m3, {4, 16, 8, 32}, {-1, -1, -1, -1});
  const auto n = absent(m3);
  const auto sin = spec(m3, {16, 32}, {-1, -1});
  const auto fwd = [](std::vector<dist_tensor_spec> in) { (void)fused_rope::infer_forward(in); };
  check_error([&] { fwd({spec(m3, {4, 16, 8}, {-1, -1, -1}), q, n, n, n, n}); }, error_kind::invalid_argument,
              "fused_rope: q must be 4-D, but has rank 3");
  check_error([&] { fwd({q, spec(m3, {16, 8}, {-1, -1}), n, n, n, n}); }, error_kind::invalid_argument, "k must be 4-D, but has rank 2");
  check_error([&] { fwd({q, q, spec(m3, {16}, {-1}), n, n, n}); }, error_kind::invalid_argument, "v must be 4-D, but has rank 1");
  check_error([&] { fwd({q, spec(m3, {4, 16, 3, 32}, {-1, -1, -1, -1}), n, n, n, n}); }, error_kind::invalid_argument,
              "q's number of heads (8) must be a multiple of k's (3)");
  check_error([&] { fwd({q, spec(m3, {2, 16, 8, 32}, {-1, -1, -1, -1}), n, n, n, n}); }, error_kind::invalid_argument,
              "k's dim 0 has size 2, but q's has 4");
  check_error([&] { fwd({q, q, spec(m3, {4, 16, 4, 32}, {-1, -1, -1, -1}), n, n, n}); }, error_kind::invalid_argument,
              "v must have k's shape, but its dim 2 has size 4, not 8");
  check_error([&] { fwd({q, q, n, sin, spec(m3, {16, 16}, {-1, -1}), n}); }, error_kind::invalid_argument,
              "sin and cos must have one shape, but dim 1 has sizes 32 and 16");
  check_error([&] { fwd({q, q, n, sin, spec(m3, {1, 16, 1, 32}, {-1, -1, -1, -1}), n}); }, error_kind::invalid_argument,
              "sin and cos must have one shape, but have ranks 2 and 4");
  const auto s3 = spec(m3, {1, 16, 32}, {-1, -1, -1});
  check_error([&] { fwd({q, q, n, s3, s3, n}); }, error_kind::invalid_argument,
              "sin and cos must be 2-D [seq_len, head_dim] or 4-D [1, seq_len, 1, head_dim], but have rank 3");
  const auto s4 = spec(m3, {1, 16, 2, 32}, {-1, -1, -1, -1});
  check_error([&] { fwd({q, q, n, s4, s4, n}); }, error_kind::invalid_argument,
              "4-D sin and cos must be [1, seq_len, 1, head_dim], but dims 0 and 2 have sizes 1 and 2");
  const auto sl = spec(m3, {64, 32}, {-1, -1});
  check_error([&] { fwd({q, q, n, sl, sl, spec(m3, {4, 8}, {-1, -1})}); }, error_kind::invalid_argument,
              "position_ids has shape [4, 8], but must be [4, 16]");
  check_error([&] { fwd({q, q, n, sl, sl, spec(m3, {64}, {-1})}); }, error_kind::invalid_argument,
              "position_ids must be 2-D [batch, seq_len], but has rank 1");
  const auto ss = spec(m3, {8, 32}, {-1, -1});
  check_error([&] { fwd({q, q, n, ss, ss, spec(m3, {4, 16}, {-1, -1})}); }, error_kind::invalid_argument,
              "sin and cos have 8 rows, but need at least seq_len = 16");
  check_error([&] { fwd({q, q, n, sl, sl, n}); }, error_kind::invalid_argument,
              "sin and cos have 64 rows, but without position_ids must have seq_len = 16");
  const auto sd = spec(m3, {16, 8}, {-1, -1});
  check_error([&] { fwd({q, q, n, sd, sd, n}); }, error_kind::invalid_argument, "sin and cos have head dim 8, but q has 32");
  check_error([&] { (void)fused_rope::infer_backward({q, q, n, n, n, n}, {q, q, q}); }, error_kind::invalid_argument,
              "out_v has rank 4, but its input has rank 0");
  check_error([&] { (void)fused_rope::infer_backward({q, q, n, n, n, n}, {q, spec(m3, {4, 16, 4, 32}, {-1, -1, -1, -1}), n}); },
              error_kind::invalid_argument, "out_k's dim 2 has size 4, but its input's has 8");
}

TEST_CASE("fused_rope: round trip") {
  ctspmd_test::rng r(0x5a0eULL);
  int checked = 0;
  for (int i = 0; i < 300; ++i) {
    const auto mesh = ctspmd_test::random_mesh(r);
    const bool gqa = r.coin(), with_v = r.coin(), tm = r.coin();
    const auto tables = r.uniform(0, 3);  // none, 2-D, 4-D, 2-D with position_ids
    const tensor_shape qs = tm ? tensor_shape{8, 4, 12, 6} : tensor_shape{4, 8, 12, 6};
    tensor_shape ks = qs;
    if (gqa) ks[2] = 6;
    const tensor_shape ts = tables == 2 ? tensor_shape{1, 8, 1, 6} : tensor_shape{tables == 3 ? 20 : 8, 6};
    const auto rnd = [&](const tensor_shape& s) {
      return dist_tensor_spec(s, {mesh, ctspmd_test::random_dims_mapping(r, s.size(), mesh.ndim())});
    };
    const std::vector<dist_tensor_spec> in{rnd(qs),
                                           rnd(ks),
                                           with_v ? rnd(ks) : absent(mesh),
                                           tables ? rnd(ts) : absent(mesh),
                                           tables ? rnd(ts) : absent(mesh),
                                           tables == 3 ? rnd({4, 8}) : absent(mesh)};
    const std::vector<tensor_shape> outs{qs, ks, with_v ? ks : tensor_shape{}};
    checked += ctspmd_test::check_roundtrip<fused_rope>(in, outs, {true, tm, 10000.0}) ? 1 : 0;
  }
  CHECK(checked > 100);
}

}  // namespace fused_rope_test
