// Pipeline reports at run time: the same as at compile time, and an spmd_error naming what is
// wrong for each bad option.
#include <ctspmd/model/pipeline.hpp>
#include <ctspmd/model/training.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>

#include "check_error.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace pipeline_test {

using namespace ctspmd;
using ctspmd_test::check_error;

constexpr process_mesh mesh({2, 2});  // [pp, dp]
using plan_type = model::plan<24, 12>;

/// `layers` layers of a linear map, the batch split over mesh dim `batch_on`.
constexpr auto make_step(std::size_t layers, std::int64_t batch_on = 1) {
  plan_type p(mesh);
  auto x0 = p.tensor("x0", {8, 16}, {batch_on, -1}, model::bfloat16);
  auto out = p.repeat(layers, x0, [&](plan_type& b, model::tensor_id x) {
    auto w = b.parameter("w", {16, 16}, model::bfloat16);
    auto y = b.tensor("y", {8, 16}, model::bfloat16);
    b.op<"matmul">({x, w}, {y}, {}, "linear");
    return y;
  });
  return model::training_step(p, out);
}

TEST_CASE("pipeline: the same report at run time as at compile time") {
  constexpr auto step = make_step(4);
  constexpr auto r = model::propagate(step);
  constexpr auto at_compile_time = model::pipeline(step, r, {.mesh_dim = 0, .micro_batches = 4});
  const auto at_run_time = model::pipeline(make_step(4), model::propagate(make_step(4)), {.mesh_dim = 0, .micro_batches = 4});
  REQUIRE(at_run_time.stages() == 2);
  for (std::size_t s = 0; s < 2; ++s) {
    CHECK(at_run_time.stage(s).parameters == at_compile_time.stage(s).parameters);
    CHECK(at_run_time.stage(s).memory == at_compile_time.stage(s).memory);
    CHECK(at_run_time.stage(s).micro_batch_seconds() == at_compile_time.stage(s).micro_batch_seconds());
    for (std::size_t k = 0; k < model::collective_count; ++k) {
      CHECK(at_run_time.stage(s).collectives[k].count == at_compile_time.stage(s).collectives[k].count);
      CHECK(at_run_time.stage(s).collectives[k].bytes == at_compile_time.stage(s).collectives[k].bytes);
    }
    // one send each way between the two stages, a collective of its own kind
    const auto& sends = at_run_time.stage(s).collectives[static_cast<std::size_t>(model::collective::send_recv)];
    CHECK(sends.count == 1);
    CHECK(sends.bytes == at_run_time.boundary_bytes());
  }
  CHECK(at_run_time.step_seconds() == at_compile_time.step_seconds());
  CHECK(at_run_time.stage(0).parameters == 2 * 16 * 16 * 2);  // two layers' weights, bf16
  CHECK(at_run_time.boundary_bytes() == 4 * 16 * 2);        // a dp rank's rows of the output
}

TEST_CASE("pipeline: interleaving with a stage map") {
  // 6 layers, stages of 2 and 4, 2 chunks each: virtual stages of 1, 2, 1, 2 layers (stage 0
  // holds layers 0 and 3, stage 1 layers 1-2 and 4-5).
  const auto step = make_step(6);
  const auto r = model::propagate(step);
  const model::pipeline_options o{
      .mesh_dim = 0, .micro_batches = 4, .schedule = model::pipeline_schedule::interleaved, .chunks = 2, .stage_layers = {2, 4}};
  const auto inter = model::pipeline(step, r, o);
  CHECK(inter.stage(0).first_layer == 0);
  CHECK(inter.stage(1).first_layer == 1);
  CHECK(inter.stage(1).layers == 4);
  const std::int64_t layer_bytes = 16 * 16 * 2;  // a layer's bf16 weight
  CHECK(inter.stage(0).parameters == 2 * layer_bytes);
  CHECK(inter.stage(1).parameters == 4 * layer_bytes);
  CHECK(inter.bubble_fraction() == 1.0 / 8);  // (p - 1) / (v m)
  CHECK(inter.stage(0).in_flight == 2 * (1 + 1.0 / 4));
  CHECK(inter.stage(1).in_flight == 1.5);  // (v - 1)p + 1 chunk passes of half a micro-batch
  // The same stages without interleaving: the same figures but the bubble and what is in flight.
  auto plain = o;
  plain.schedule = model::pipeline_schedule::one_f_one_b;
  plain.chunks = 1;
  const auto f1b = model::pipeline(step, r, plain);
  CHECK(f1b.stage(1).first_layer == 2);
  CHECK(f1b.stage(1).parameters == inter.stage(1).parameters);
  CHECK(f1b.bubble_fraction() == 1.0 / 4);
  // The bubble: half a slowest micro-batch through a stage (v = 2), not a whole one.
  const double slowest = std::max(inter.stage(0).micro_batch_seconds(), inter.stage(1).micro_batch_seconds());
  CHECK(inter.step_seconds() - inter.ideal_seconds() == doctest::Approx(slowest / 2));
  CHECK(f1b.step_seconds() - f1b.ideal_seconds() ==
        doctest::Approx(std::max(f1b.stage(0).micro_batch_seconds(), f1b.stage(1).micro_batch_seconds())));
  // Uneven chunks: 5 layers over stages of 2 and 3, 2 chunks: stage 1's first chunk has 2.
  const auto odd = make_step(5);
  auto five = o;
  five.stage_layers = {2, 3};
  const auto uneven = model::pipeline(odd, model::propagate(odd), five);
  CHECK(uneven.stage(1).first_layer == 1);
  CHECK(uneven.stage(1).parameters == 3 * layer_bytes);
}

TEST_CASE("pipeline: a saturated figure stays saturated on each stage") {
  // A layer's weight of 2^62 bf16 elements: its bytes saturate the step's figures; a stage's
  // share of them is saturated too, not a finite half of the largest int64.
  const std::int64_t big = std::int64_t{1} << 31;
  plan_type p(mesh);
  const auto x0 = p.tensor("x0", {8, big}, {1, -1}, model::bfloat16);
  const auto out = p.repeat(4, x0, [&](plan_type& b, model::tensor_id x) {
    const auto w = b.parameter("w", {big, big}, model::bfloat16);
    const auto y = b.tensor("y", {8, big}, model::bfloat16);
    b.op<"matmul">({x, w}, {y}, {}, "linear");
    return y;
  });
  const auto step = model::training_step(p, out);
  const auto report = model::pipeline(step, model::propagate(step), {.mesh_dim = 0, .micro_batches = 4});
  constexpr auto saturated = std::numeric_limits<std::int64_t>::max();
  for (std::size_t s = 0; s < 2; ++s) {
    CHECK(report.stage(s).parameters == saturated);
    CHECK(report.stage(s).flops == saturated);
  }
}

TEST_CASE("pipeline: a ZeRO shard's optimizer collectives are on its parameter's stage") {
  // On [pp, dp, tp], a bias sharded over tp on its only dim before the block (the first stage):
  // ZeRO co-shards its states over dp, so its gradient is reduce-scattered and its updated shard
  // gathered back by `assign`s of the optimizer phase. They are the first stage's, with the
  // bias's adamw: the first stage's optimizer step is the longer (the last has nothing outside
  // the layers).
  constexpr process_mesh cube({2, 2, 2});
  model::plan<24, 12> p(cube);
  const auto x = p.tensor("x", {8, 16}, {1, 2}, model::bfloat16);
  const auto b0 = p.parameter("b0", {16}, {2}, model::bfloat16);
  const auto x0 = p.tensor("x0", {8, 16}, model::bfloat16);
  p.op<"add">({x, b0}, {x0});
  const auto out = p.repeat(2, x0, [&](model::plan<24, 12>& b, model::tensor_id in) {
    const auto bias = b.parameter("b", {16}, {2}, model::bfloat16);
    const auto y = b.tensor("y", {8, 16}, model::bfloat16);
    b.op<"add">({in, bias}, {y});
    return y;
  });
  const auto step = model::training_step(p, out, {.shard_optimizer_states_on = 1});
  const auto report = model::pipeline(step, model::propagate(step), {.mesh_dim = 0, .micro_batches = 2});
  REQUIRE(report.stages() == 2);
  CHECK(report.stage(0).parameters == report.stage(1).parameters + 16 / 2 * 2);  // b0: 8 bf16 elements a tp rank
  CHECK(report.stage(0).optimizer_seconds > report.stage(1).optimizer_seconds);
}

TEST_CASE("pipeline: errors name what is wrong") {
  const auto step = make_step(4);
  const auto r = model::propagate(step);
  using model::pipeline_schedule;
  const auto fails = [&](const model::pipeline_options& o, std::string_view message) {
    check_error([&] { (void)model::pipeline(step, r, o); }, error_kind::invalid_argument, message);
  };
  fails({.mesh_dim = 2}, "pipeline: mesh_dim 2 is not a dim of the plan's mesh of 2 dims");
  fails({.mesh_dim = 0, .micro_batches = 0}, "micro_batches is 0: at least 1");
  fails({.mesh_dim = 0, .chunks = 2}, "chunks is 2: 1, or more under the interleaved schedule");
  fails({.mesh_dim = 0, .micro_batches = 4, .schedule = pipeline_schedule::interleaved, .chunks = 4},
        "the block's 4 layers are fewer than 8 stages x chunks: each stage has a layer for each chunk");
  fails({.mesh_dim = 0, .micro_batches = 3, .schedule = pipeline_schedule::interleaved, .chunks = 2},
        "the interleaved schedule needs micro_batches (3) a multiple of the stages (2)");
  fails({.mesh_dim = 0, .stage_layers = {3, 2}}, "stage_layers add up to 5 layers, but the block has 4");
  fails({.mesh_dim = 0, .stage_layers = {4, 0}}, "stage_layers[1] is 0: each of the 2 stages has at least one layer");
  fails({.mesh_dim = 0, .stage_layers = {2, 1, 1}}, "stage_layers[2] is 1, but the pipeline has 2 stages");
  fails({.mesh_dim = 0, .micro_batches = 2, .schedule = pipeline_schedule::interleaved, .chunks = 2, .stage_layers = {1, 3}},
        "stage_layers[0] is 1: interleaved, each stage has at least a layer for each of its 2 chunks");
  // Layers that do not divide into the stages: the one left over goes to the last stage (the
  // middle ones first, of which two stages have none).
  const auto odd = make_step(3);
  const auto uneven = model::pipeline(odd, model::propagate(odd), {.mesh_dim = 0});
  CHECK(uneven.stage(0).layers == 1);
  CHECK(uneven.stage(1).layers == 2);
  CHECK(uneven.stage(1).first_layer == 1);
  const auto split = make_step(4, 0);
  check_error([&] { (void)model::pipeline(split, model::propagate(split), {.mesh_dim = 0}); }, error_kind::invalid_argument,
              "is split or partial over the pipeline's mesh dim 0: each stage holds its layers whole");
  model::cluster slow = model::h100_cluster(mesh);
  slow.links[0] = {};
  check_error([&] { (void)model::pipeline(step, r, {.mesh_dim = 0}, slow); }, error_kind::invalid_argument,
              "the pipeline's mesh dim 0 sends between stages, but its link has no bandwidth");
  model::plan<8, 4> flat(mesh);
  auto x = flat.tensor("x", {8, 16});
  auto w = flat.parameter("w", {16, 16});
  auto y = flat.tensor("y", {8, 16});
  flat.op<"matmul">({x, w}, {y}, {}, "linear");
  const auto flat_step = model::training_step(flat, y);
  check_error([&] { (void)model::pipeline(flat_step, model::propagate(flat_step), {.mesh_dim = 0}); },
              error_kind::invalid_argument, "the plan has no repeated block to split over the stages");
  // A training step whose loss is computed before the block: the first stage's backward pass
  // could not be told from the last's.
  plan_type early(mesh);
  const auto x0 = early.tensor("x0", {8, 16}, {1, -1});
  const auto w0 = early.parameter("w0", {16, 16});
  const auto e = early.tensor("e", {8, 16});
  early.op<"matmul">({x0, w0}, {e}, {}, "embed");
  (void)early.repeat(2, e, [&](plan_type& b, model::tensor_id h) {
    const auto weight = b.parameter("w", {16, 16});
    const auto z = b.tensor("y", {8, 16});
    b.op<"matmul">({h, weight}, {z}, {}, "linear");
    return z;
  });
  const auto early_step = model::training_step(early, e);
  check_error([&] { (void)model::pipeline(early_step, model::propagate(early_step), {.mesh_dim = 0}); },
              error_kind::invalid_argument,
              "the loss does not depend on block 0's output: the step has no backward pass of the layers to split");
}

}  // namespace pipeline_test
