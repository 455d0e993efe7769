// Training steps derived and propagated at run time (the same constexpr code): the same
// reports as at compile time, and their errors as spmd_error.
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>

#include <doctest/doctest.h>

#include "../examples/llama/llama_plan.hpp"
#include "../examples/mixtral/mixtral_plan.hpp"
#include "check_error.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace training_test {

using namespace ctspmd;
using model::collective;
using model::phase;
using ctspmd_test::check_error;

template <class A, class B>
void check_same_report(const A& a, const B& b) {
  REQUIRE(a.reshard_entries() == b.reshard_entries());
  for (std::size_t i = 0; i < a.reshard_entries(); ++i) {
    const auto &x = a.reshard_at(i), &y = b.reshard_at(i);
    CHECK(x.op == y.op);
    CHECK(x.operand == y.operand);
    CHECK(x.kind == y.kind);
    CHECK(x.phase == y.phase);
    CHECK(x.times == y.times);
    CHECK(x.bytes == y.bytes);
    CHECK(x.from == y.from);
    CHECK(x.to == y.to);
  }
}

TEST_CASE("a scale's grad operator scales the gradient without adding the bias") {
  // d(s x + b) = s dx: the grad operator is a scale by s with no bias (it kept the forward's; the
  // step simulator's gradient check finds it in generated steps).
  model::plan<8, 4> p(process_mesh({2}));
  const auto x = p.parameter("x", {4});
  const auto y = p.tensor("y", {4});
  p.op<"scale">({x}, {y}, {.scale = 0.5, .bias = 0.25, .bias_after_scale = false});
  const auto step = model::training_step(p, y);
  int grads = 0;
  for (std::size_t i = 0; i < step.op_count(); ++i) {
    const auto& op = step.op_at(i);
    if (op.phase != phase::backward || op.rule != "scale") continue;
    const auto& a = op.attributes.get<rules::scale_attributes>();
    CHECK(a.scale == 0.5);
    CHECK(a.bias == 0.0);
    CHECK(a.bias_after_scale);
    ++grads;
  }
  CHECK(grads == 1);
}

TEST_CASE("a training step derived at run time propagates as at compile time") {
  constexpr auto at_compile_time = model::verified<llama::make_step<4, llama::variant::sequence_parallel>>();
  const auto step = llama::make_step<4, llama::variant::sequence_parallel>();  // evaluated at run time
  const auto at_run_time = model::propagate(step);
  check_same_report(at_run_time, at_compile_time);
  for (std::size_t t = 0; t < step.tensor_count(); ++t) CHECK(at_run_time.attr({t}) == at_compile_time.attr({t}));
  CHECK(at_run_time.count_in_block(0, phase::backward, collective::all_gather) == 8);
  CHECK(at_run_time.count_in_block(0, phase::backward, collective::reduce_scatter) == 8);
}

TEST_CASE("the Mixtral step at run time: the same report, two all-to-alls each way a layer") {
  constexpr auto at_compile_time = model::verified<mixtral::make_step<3>>();
  const auto step = mixtral::make_step<3>();
  const auto at_run_time = model::propagate(step);
  check_same_report(at_run_time, at_compile_time);
  CHECK(at_run_time.count_in_block(0, phase::forward, collective::all_to_all) == 6);
  CHECK(at_run_time.count(phase::forward) == 6);
  CHECK(at_run_time.count(phase::backward, collective::all_to_all) == 6);
  CHECK(at_run_time.count(phase::backward, collective::all_gather) == 0);
  check_same_report(at_run_time, model::propagate(step, {.induction = false}));
}

TEST_CASE("property: a training step's report is the same with induction and layer by layer") {
  for (bool zero : {false, true}) {
    const auto step = zero ? model::training_step(llama::forward<5>{}.plan, llama::forward<5>{}.loss,
                                                  {.shard_optimizer_states_on = 0})
                           : llama::make_step<5>();
    check_same_report(model::propagate(step), model::propagate(step, {.induction = false}));
  }
}

TEST_CASE("training step errors are spmd_errors naming what is wrong") {
  constexpr process_mesh mesh({2});
  model::plan<8, 4> p(mesh);
  auto x = p.parameter("x", {2, 4, 4});
  auto z = p.tensor("z", {2});
  p.op<"det">({x}, {z}, {}, "volume");
  check_error([&] { (void)model::training_step(p, z); }, error_kind::invalid_argument, "has no grad recipe");
  check_error([&] { (void)model::training_step(p, {42}); }, error_kind::invalid_argument, "the loss (tensor 42)");
}

}  // namespace training_test
