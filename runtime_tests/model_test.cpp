// Plans propagated at run time (the same constexpr code), and their errors as spmd_error.
#include <ctspmd/model/propagate.hpp>

#include <doctest/doctest.h>

#include <random>
#include <string_view>
#include <vector>

#include "../examples/gpt/gpt_plan.hpp"
#include "check_error.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace model_test {

using namespace ctspmd;
using model::collective;
using model::tensor_id;

TEST_CASE("a plan built at run time propagates as at compile time") {
  constexpr auto at_compile_time = model::verified<gpt::make_plan<4>>();
  const auto plan = gpt::make_plan<4>();  // evaluated at run time
  const auto at_run_time = model::propagate(plan);
  CHECK(at_run_time.count() == at_compile_time.count());
  CHECK(at_run_time.count_in_block(0, collective::all_reduce) == 8);
  REQUIRE(at_run_time.reshard_entries() == at_compile_time.reshard_entries());
  for (std::size_t i = 0; i < plan.tensor_count(); ++i) CHECK(at_run_time.attr({i}) == at_compile_time.attr({i}));
  const auto sp = model::propagate(gpt::make_plan<4, gpt::variant::sequence_parallel>());
  CHECK(sp.count_in_block(0, collective::all_gather) == 8);
  CHECK(sp.count_in_block(0, collective::reduce_scatter) == 8);
}

TEST_CASE("shapes known only at run time") {
  // A plan whose sizes come from run-time values, e.g. a configuration file.
  const std::int64_t batch = 6, hidden = 96;
  const process_mesh mesh({3, 2});
  model::plan<8, 4> p(mesh);
  auto x = p.tensor("x", {batch, hidden}, {0, 1});
  auto w = p.tensor("w", {hidden, 2 * hidden}, {1, -1});
  auto y = p.tensor("y", {batch, 2 * hidden});
  p.op<"matmul">({x, w}, {y}, {}, "proj");
  p.op<"relu">({y}, {p.tensor("z", {batch, 2 * hidden})}, {}, "act");
  const auto prop = model::propagate(p);
  REQUIRE(prop.count() == 1);
  CHECK(prop.reshard_at(0).kind == collective::all_reduce);
  CHECK(prop.reshard_at(0).bytes == 2 * (batch * 2 * hidden * 4 / 3) / 2);
}

TEST_CASE("a plan that cannot be propagated throws, naming the operator") {
  const process_mesh mesh({2, 2});
  model::plan<8, 4> p(mesh);
  auto x = p.tensor("x", {8, 64}, {-1, 1});
  auto w = p.tensor("w", {64, 32}, {0, -1});
  p.op<"matmul">({x, w}, {p.tensor("y", {8, 32})}, {}, "proj");
  const auto r = model::try_propagate(p);
  CHECK_FALSE(r.ok());
  CHECK(r.failed_operator() == 0);
  ctspmd_test::check_error([&] { (void)model::propagate(p); }, error_kind::unimplemented,
                           "proj: tensor axis 'k' is sharded by two different mesh dims, 0 and 1");
  const auto plan = gpt::make_plan<2, gpt::variant::up_weight_by_rows>();
  const auto prop = model::propagate(plan);
  ctspmd_test::check_error([&] { (void)prop.expect_in_block(plan, 0, collective::all_reduce, 4); },
                           error_kind::precondition_not_met, "mlp.fc: operator 25: input 0 needs an unexpected local_slice on mesh dim 1");
  ctspmd_test::check_error([&] { (void)p.tensor("bad", {4}, {2}); }, error_kind::invalid_argument,
                           "dims mapping entry 2 of tensor dim 0 is not -1 or a mesh dim in [0, 2)");
}

TEST_CASE("a block's count fits an int64 (costs count its runs in one)") {
  model::plan<8, 4> p(process_mesh({2}));
  const auto x = p.tensor("x", {8, 64}, {0, -1});
  const auto relu = [](model::plan<8, 4>& b, model::tensor_id h) {
    const auto y = b.tensor("y", {8, 64});
    b.op<"relu">({h}, {y});
    return y;
  };
  const std::size_t too_many = std::size_t{1} << 63;
  ctspmd_test::check_error([&] { (void)p.repeat(too_many, x, relu); }, error_kind::invalid_argument,
                           "plan: a block repeats more than 9223372036854775807 times");
  CHECK(p.block_count() == 0);
  (void)p.repeat(too_many - 1, x, relu);
  CHECK(p.block_at(0).count == too_many - 1);
}

TEST_CASE("a block whose runs never settle is propagated run by run up to max_unsettled_runs, then refused") {
  // w's output dim over mesh dim 0: run 1's output is split there, run 2 reads it as a split k
  // that w does not share, and so on: the runs alternate and never repeat the one before.
  const auto alternating = [](std::size_t count) {
    model::plan<16, 8> p(process_mesh({4, 2}));
    const auto x = p.tensor("x", {16, 8}, {-1, -1});
    (void)p.repeat(count, x, [](model::plan<16, 8>& b, model::tensor_id h) {
      const auto y = b.tensor("y", {16, 8});
      b.op<"matmul">({h, b.parameter("w", {8, 8}, {-1, 0})}, {y});
      const auto a = b.tensor("a", {16, 8});
      b.op<"scale">({y}, {a});
      return a;
    });
    return model::try_propagate(p);
  };
  CHECK(alternating(4).ok());
  CHECK(alternating(model::max_unsettled_runs).ok());
  const auto r = alternating(std::size_t{1} << 62);  // before: 2^62 runs, one by one
  REQUIRE_FALSE(r.ok());
  CHECK(r.failed_operator() == 0);
  CHECK(std::string_view(spmd_error(r.error()).what()).find("lays out each of its first 4096 runs otherwise than the run "
                                                             "before") != std::string_view::npos);
}

TEST_CASE("a repeat inside a repeated block's body is refused when the plan is built") {
  model::plan<8, 4> p(process_mesh({2}));
  const auto x = p.tensor("x", {8, 64}, {0, -1});
  ctspmd_test::check_error(
      [&] {
        (void)p.repeat(2, x, [&](model::plan<8, 4>& outer, model::tensor_id h) {
          return outer.repeat(2, h, [&](model::plan<8, 4>& inner, model::tensor_id g) {
            const auto y = inner.tensor("y", {8, 64});
            inner.op<"relu">({g}, {y});
            return y;
          });
        });
      },
      error_kind::invalid_argument, "plan: a repeat inside a repeated block's body: nested repeated blocks are not supported");
  // One block after another is fine.
  model::plan<8, 4> q(process_mesh({2}));
  const auto a = q.repeat(2, q.tensor("x", {8, 64}, {0, -1}), [&](model::plan<8, 4>& b, model::tensor_id h) {
    const auto y = b.tensor("y", {8, 64});
    b.op<"relu">({h}, {y});
    return y;
  });
  const auto c = q.repeat(2, a, [&](model::plan<8, 4>& b, model::tensor_id h) {
    const auto y = b.tensor("z", {8, 64});
    b.op<"relu">({h}, {y});
    return y;
  });
  CHECK(model::propagate(q).attr(c) == tensor_dist_attr(process_mesh({2}), {0, -1}));
}

// ==== property: a repeated block reports what the same layers written out report =================
// One generated layer: operators on an [8, 16, 32] activation, each keeping its shape.
struct layer_spec {
  struct step {
    int kind = 0;            // 0 matmul with a weight, 1 relu, 2 residual add, 3 softmax, 4 scale
    bool annotated = false;  // (matmul) the weight is annotated with `weight`
    dims_mapping weight{};
  };
  std::vector<step> steps;
};
using prop_plan = model::plan<96, 48>;

tensor_id add_layer(prop_plan& b, tensor_id x, const layer_spec& layer) {
  const tensor_shape act{8, 16, 32};
  tensor_id cur = x;
  for (const auto& s : layer.steps) {
    const auto out = b.tensor("out", act);
    switch (s.kind) {
      case 0: {
        const auto w = s.annotated ? b.tensor("w", {32, 32}, s.weight) : b.tensor("w", {32, 32});
        b.op<"matmul">({cur, w}, {out});
        break;
      }
      case 1: b.op<"relu">({cur}, {out}); break;
      case 2: b.op<"add">({cur, x}, {out}); break;
      case 3: b.op<"softmax">({cur}, {out}, {.axis = -1}); break;
      default: b.op<"scale">({cur}, {out}); break;
    }
    cur = out;
  }
  return cur;
}

template <class Propagation>
void check_same_report(const Propagation& a, const Propagation& b) {
  REQUIRE(a.ok() == b.ok());
  for (auto kind : {collective::all_reduce, collective::reduce_scatter, collective::all_gather, collective::all_to_all,
                    collective::local_slice, collective::local_partial}) {
    CHECK(a.count(kind) == b.count(kind));
    CHECK(a.bytes(kind) == b.bytes(kind));
  }
}

TEST_CASE("property: repeated and written-out layers give identical reports") {
  std::mt19937 rng(20261203);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int compared = 0, with_reshards = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const process_mesh mesh = pick(2) == 0 ? process_mesh({2, 2}) : process_mesh({2, 4});
    // A random valid layout of the source: each mesh dim on at most one tensor dim.
    dims_mapping source{-1, -1, -1};
    for (std::int64_t m = 0; m < 2; ++m)
      if (pick(2) == 0) source[static_cast<std::size_t>(pick(3))] = m;
    if (source[0] == source[1] && source[0] != -1) source[1] = -1;
    if (source[0] == source[2] && source[0] != -1) source[2] = -1;
    if (source[1] == source[2] && source[1] != -1) source[2] = -1;
    layer_spec layer;
    const int ops = 1 + pick(5);
    for (int i = 0; i < ops; ++i) {
      layer_spec::step s{pick(5), pick(2) == 0, {-1, -1}};
      if (s.annotated) {
        s.weight[static_cast<std::size_t>(pick(2))] = pick(3) - 1;
      }
      layer.steps.push_back(s);
    }
    const std::size_t runs = 1 + static_cast<std::size_t>(pick(4));
    CAPTURE(trial);
    prop_plan repeated(mesh), written(mesh);
    const auto x0 = repeated.tensor("x0", {8, 16, 32}, source);
    const auto out = repeated.repeat(runs, x0, [&](prop_plan& b, tensor_id x) { return add_layer(b, x, layer); });
    repeated.op<"relu">({out}, {repeated.tensor("final", {8, 16, 32})});
    auto x = written.tensor("x0", {8, 16, 32}, source);
    for (std::size_t r = 0; r < runs; ++r) x = add_layer(written, x, layer);
    written.op<"relu">({x}, {written.tensor("final", {8, 16, 32})});

    const auto a = model::try_propagate(repeated), b = model::try_propagate(written);
    const auto every_run = model::try_propagate(repeated, {false});
    check_same_report(a, b);
    check_same_report(a, every_run);
    if (!a.ok()) continue;
    ++compared;
    with_reshards += a.count() > 0;
    CHECK(a.attr({repeated.tensor_count() - 1}) == b.attr({written.tensor_count() - 1}));
  }
  MESSAGE(compared << " generated plans propagated and compared (" << with_reshards << " with reshards)");
  CHECK(compared > 200);
  CHECK(with_reshards > 50);
}

TEST_CASE("plan failures name the inputs in conflict, or the output") {
  const process_mesh mesh({2, 2});
  model::plan<8, 4> p(mesh);
  auto x = p.tensor("x", {8, 64}, {-1, 1});
  auto w = p.tensor("w", {64, 32}, {0, -1});  // k on mesh dim 1 by x and on 0 by w
  p.op<"matmul">({x, w}, {p.tensor("y", {8, 32})}, {}, "proj");
  const auto r = model::try_propagate(p);
  REQUIRE_FALSE(r.ok());
  CHECK(r.failure_involves(0));
  CHECK(r.failure_involves(1));
  CHECK_FALSE(r.failure_involves(2));
  // An output of another rank than the rule infers: for a rule without output_shapes, found
  // when the plan is propagated (a rule with it fails when the plan is built:
  // output_shapes_test.cpp).
  model::plan<8, 4> q(mesh);
  auto a = q.tensor("a", {8, 16, 32}, {0, -1, -1});
  q.op<"replicated">({a}, {q.tensor("c", {8, 64})}, {}, "fallback");
  ctspmd_test::check_error([&] { (void)model::propagate(q); }, error_kind::invalid_argument,
                           "fallback: output 0 (tensor 1) is declared with rank 2, but the rule infers rank 3");
}

}  // namespace model_test
