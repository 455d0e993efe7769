// A training step's cost at run time (the same constexpr code): the same report as at compile
// time, a repeated block costing what the same layers written out cost, invariants over every
// option, and errors as spmd_error.
#include <ctspmd/model/cost.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>

#include <doctest/doctest.h>

#include <limits>
#include <memory>

#include "../examples/llama/llama_plan.hpp"
#include "check_error.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace cost_test {

using namespace ctspmd;
using model::collective;
using model::phase;
using model::tensor_id;
using ctspmd_test::check_error;

void check_same_cost(const model::step_cost& a, const model::step_cost& b) {
  CHECK(a.memory().parameters == b.memory().parameters);
  CHECK(a.memory().gradients == b.memory().gradients);
  CHECK(a.memory().optimizer_states == b.memory().optimizer_states);
  CHECK(a.memory().activations == b.memory().activations);
  CHECK(a.memory().peak == b.memory().peak);
  for (auto ph : {phase::forward, phase::backward, phase::optimizer}) {
    CHECK(a.flops(ph) == b.flops(ph));
    for (std::size_t k = 0; k < model::collective_count; ++k) {
      const auto x = a.collectives(ph, static_cast<collective>(k)), y = b.collectives(ph, static_cast<collective>(k));
      CHECK(x.count == y.count);
      CHECK(x.bytes == y.bytes);
      CHECK(x.seconds == doctest::Approx(y.seconds));
    }
  }
  CHECK(a.recompute_flops() == b.recompute_flops());
  CHECK(a.step_seconds() == doctest::Approx(b.step_seconds()));
}

// Every figure of two costs of the same step, exactly (a resumed cost against one at once).
void check_identical_cost(const model::step_cost& a, const model::step_cost& b) {
  check_same_cost(a, b);
  CHECK(a.memory().peak_op == b.memory().peak_op);
  CHECK(a.memory().peak_phase == b.memory().peak_phase);
  for (std::size_t k = 0; k < model::max_blocks; ++k) CHECK(a.kept_in_block(k) == b.kept_in_block(k));
  for (auto ph : {phase::forward, phase::backward, phase::optimizer})
    for (std::size_t k = 0; k < model::collective_count; ++k)
      for (std::int64_t m = 0; m < static_cast<std::int64_t>(max_mesh_ndim); ++m) {
        const auto x = a.collectives(ph, static_cast<collective>(k), m), y = b.collectives(ph, static_cast<collective>(k), m);
        CHECK(x.count == y.count);
        CHECK(x.bytes == y.bytes);
        CHECK(x.seconds == y.seconds);
      }
  CHECK(a.step_seconds() == b.step_seconds());
  CHECK(a.overlapped_step_seconds() == b.overlapped_step_seconds());
}

// A GPT layer as Korthikanti et al. write it (see static_tests/model/cost_test.cpp), small, on
// mesh [dp 2, mp 4]; its `Layers` layers either a repeated block or written out one by one.
constexpr std::int64_t S = 64, B = 4, H = 32, A = 4, D = H / A;
using small_plan = model::plan<256, 160>;
struct gpt_forward {
  small_plan plan;
  tensor_id loss{};
};
template <bool SP>
constexpr tensor_id gpt_layer(small_plan& l, tensor_id x) {
  const tensor_shape act{B, S, H};
  const dims_mapping outside = SP ? dims_mapping{0, 1, -1} : dims_mapping{0, -1, -1}, inside{0, -1, -1};
  auto ln1_w = l.parameter("ln1.w", {H}), ln1_b = l.parameter("ln1.b", {H});
  auto ln1 = l.tensor("ln1", act), mean = l.tensor("ln1.mean", {B, S}), var = l.tensor("ln1.var", {B, S});
  l.op<"layer_norm">({x, ln1_w, ln1_b}, {ln1, mean, var}, {.begin_norm_axis = 2}, "ln1");
  auto in = l.tensor("attn.in", act, inside);
  l.op<"assign">({ln1}, {in}, {}, "attn.f");
  auto w_qkv = l.parameter("qkv", {H, H}, {-1, 1});
  auto q = l.tensor("q", act);
  l.op<"matmul">({in, w_qkv}, {q}, {}, "q");
  auto q4 = l.tensor("q4", {B, S, A, D});
  l.op<"reshape">({q}, {q4}, {.shape = {B, S, A, D}});
  auto qt = l.tensor("qt", {B, A, S, D}), kt = l.tensor("kt", {B, A, D, S});
  l.op<"transpose">({q4}, {qt}, {.perm = {0, 2, 1, 3}});
  l.op<"transpose">({q4}, {kt}, {.perm = {0, 2, 3, 1}});
  auto ctx = l.tensor("ctx", {B, A, S, D});
  l.recomputable([&](small_plan& c) {
    auto scores = c.tensor("scores", {B, A, S, S}), probs = c.tensor("probs", {B, A, S, S});
    c.op<"matmul">({qt, kt}, {scores}, {}, "qk");
    c.op<"softmax">({scores}, {probs}, {}, "softmax");
    c.op<"matmul">({probs, qt}, {ctx}, {}, "pv");
  });
  auto ctx_t = l.tensor("ctx.t", {B, S, A, D}), flat = l.tensor("ctx.flat", act);
  l.op<"transpose">({ctx}, {ctx_t}, {.perm = {0, 2, 1, 3}});
  l.op<"reshape">({ctx_t}, {flat}, {.shape = {B, S, H}});
  auto w_o = l.parameter("o", {H, H}, {1, -1});
  auto o = l.tensor("o", act), out = l.tensor("attn.out", act, outside), y = l.tensor("y", act);
  l.op<"matmul">({flat, w_o}, {o}, {}, "proj");
  l.op<"assign">({o}, {out}, {}, "attn.g");
  l.op<"add">({x, out}, {y}, {}, "residual");
  return y;
}
template <std::size_t Layers, bool Flat, bool SP = false>
constexpr gpt_forward gpt_plan() {
  gpt_forward f{small_plan(process_mesh({2, 4})), {}};
  auto& p = f.plan;
  // Computed from a parameter, so that the first layer computes its input's gradient written out
  // as in a block (whose input always receives one).
  auto x0 = p.parameter("x0", {B, S, H}, SP ? dims_mapping{0, 1, -1} : dims_mapping{0, -1, -1});
  auto x = p.tensor("x", {B, S, H});
  p.op<"relu">({x0}, {x}, {}, "input");
  if constexpr (Flat) {
    for (std::size_t i = 0; i < Layers; ++i) x = gpt_layer<SP>(p, x);
  } else {
    x = p.repeat(Layers, x, [](small_plan& l, tensor_id in) { return gpt_layer<SP>(l, in); });
  }
  f.loss = p.tensor("loss", {B, S});
  p.op<"mean">({x}, {f.loss}, {.axis = {2}}, "loss");
  return f;
}
template <std::size_t Layers, bool Flat, bool SP = false>
auto gpt_step(const model::training_options& options) {
  const auto f = std::make_unique<gpt_forward>(gpt_plan<Layers, Flat, SP>());
  return std::make_unique<decltype(model::training_step(f->plan, f->loss))>(model::training_step(f->plan, f->loss, options));
}

template <std::size_t T, std::size_t O, std::size_t R>
auto coster_of(const model::plan<T, O>& step, const model::propagation<T, R>& r) {
  return std::make_unique<model::detail::coster<T, O, R>>(step, r);
}

TEST_CASE("a step's cost at run time is the one computed at compile time") {
  constexpr auto step = llama::make_step<3, llama::variant::sequence_parallel>();
  constexpr auto at_compile_time = model::cost(step, model::verified<llama::make_step<3, llama::variant::sequence_parallel>>());
  const auto run_step = std::make_unique<decltype(step)>(llama::make_step<3, llama::variant::sequence_parallel>());
  const auto r = std::make_unique<decltype(model::propagate(step))>(model::propagate(*run_step));
  check_same_cost(model::cost(*run_step, *r), at_compile_time);
  CHECK(model::cost(*run_step, *r).memory().peak_op == at_compile_time.memory().peak_op);
}

TEST_CASE("a repeated block costs what the same layers written out cost") {
  // The block's closed form (a run's kept tensors times its runs; the peak at the worst run)
  // against plain liveness over every operator of the written-out layers. (Full recomputation is
  // of repeated blocks only: written out, the layers keep everything.)
  const model::training_options options[] = {
      {},
      {.recompute = model::recompute::selective},
      {.shard_optimizer_states_on = 0, .zero_stage = 3, .master_weights = true},
      {.shard_optimizer_states_on = 0, .zero_stage = 2, .gradient_element_bytes = 4, .keep_gathered_inputs = true},
  };
  for (const auto& o : options) {
    CAPTURE(static_cast<int>(o.recompute));
    CAPTURE(o.zero_stage);
    const auto block = gpt_step<4, false>(o), flat = gpt_step<4, true>(o);
    const auto rb = std::make_unique<decltype(model::propagate(*block))>(model::propagate(*block));
    const auto rf = std::make_unique<decltype(model::propagate(*flat))>(model::propagate(*flat));
    const auto cb = model::cost(*block, *rb), cf = model::cost(*flat, *rf);
    check_same_cost(cb, cf);
    CHECK(cb.memory().peak_phase == cf.memory().peak_phase);
    const auto sb = gpt_step<4, false, true>(o), sf = gpt_step<4, true, true>(o);
    check_same_cost(model::cost(*sb, model::propagate(*sb)), model::cost(*sf, model::propagate(*sf)));
  }
}

TEST_CASE("invariants over every option: kept tensors sum to the activations, the peak holds them") {
  for (auto recompute : {model::recompute::none, model::recompute::selective, model::recompute::full})
    for (std::int64_t stage = 0; stage <= 3; ++stage)
      for (bool keep : {false, true}) {
        const model::training_options o{.shard_optimizer_states_on = stage == 0 ? -1 : 0, .zero_stage = stage,
                                        .master_weights = stage % 2 == 1, .recompute = recompute,
                                        .keep_gathered_inputs = keep};
        const auto step = gpt_step<3, false, true>(o);
        const auto r = model::propagate(*step);
        const auto c = model::cost(*step, r);
        const auto kept = model::kept_tensors(*step, r);
        std::int64_t sum = 0;
        for (const auto& k : kept) sum += k.bytes * static_cast<std::int64_t>(k.copies);
        CHECK(sum == c.memory().activations);
        CHECK(c.memory().peak >= c.memory().persistent() + c.memory().activations);
        CHECK(c.hardware_flops() >= c.model_flops());
        CHECK(c.step_seconds() >= c.overlapped_step_seconds());
      }
}

TEST_CASE("recomputation and gathered inputs trade memory for FLOPs and communication") {
  const auto none = gpt_step<4, false, true>({}), full = gpt_step<4, false, true>({.recompute = model::recompute::full});
  const auto keep = gpt_step<4, false, true>({.keep_gathered_inputs = true});
  const auto cn = model::cost(*none, model::propagate(*none)), cf = model::cost(*full, model::propagate(*full));
  const auto ck = model::cost(*keep, model::propagate(*keep));
  CHECK(cf.memory().activations < cn.memory().activations);
  CHECK(cf.recompute_flops() > 0);
  CHECK(cf.model_flops() == cn.model_flops());
  // Keeping the gathered input: more memory, one all-gather a layer less in backward.
  CHECK(ck.memory().activations > cn.memory().activations);
  CHECK(ck.collectives(phase::backward, collective::all_gather).count + 4 ==
        cn.collectives(phase::backward, collective::all_gather).count);
}

TEST_CASE("a cost resumed part by part is the cost computed at once (verified_cost's parts)") {
  // Budgets from one item a part to the whole cost; a budget ends parts inside a loop, at a
  // loop's end and across several loops.
  const model::training_options options[] = {
      {}, {.recompute = model::recompute::full}, {.shard_optimizer_states_on = 0, .zero_stage = 3}};
  for (const auto& o : options) {
    const auto step = gpt_step<3, false, true>(o);
    const auto r = model::propagate(*step);
    const auto once = model::cost(*step, r);
    for (std::size_t budget : {std::size_t{1}, std::size_t{199}, std::size_t{1000}, std::size_t{12345}, std::size_t{100000}}) {
      CAPTURE(budget);
      const auto k = coster_of(*step, r);
      const std::size_t bound = k->resumes(*step, r, budget);
      std::size_t parts = 0;
      while (!k->finished()) {
        k->resume(budget);
        ++parts;
      }
      CHECK(parts <= bound);
      if (budget == 1) CHECK(parts >= step->tensor_count());  // one item a part: the tensors loop alone has as many
      check_identical_cost(k->result(model::h100_cluster(step->mesh())), once);
    }
  }
  // An unfinished cost has no result.
  const auto step = gpt_step<2, false>({});
  const auto r = model::propagate(*step);
  const auto k = coster_of(*step, r);
  k->resume(1);
  check_error([&] { (void)k->result(model::h100_cluster(step->mesh())); }, error_kind::precondition_not_met,
              "not finished");
}

TEST_CASE("cost errors are spmd_errors naming what is wrong") {
  const auto step = gpt_step<2, false>({});
  const auto r = model::propagate(*step);
  check_error([&] { (void)model::cost(*step, r, model::cluster{{}, 1e12}); }, error_kind::invalid_argument,
              "sends collectives, but its link has no bandwidth");
  model::cluster c = model::h100_cluster(step->mesh());
  c.peak_flops = 0;
  check_error([&] { (void)model::cost(*step, r, c); }, error_kind::invalid_argument, "peak FLOP/s must be positive");
  c = model::h100_cluster(step->mesh());
  c.communication_efficiency = 1.5;
  check_error([&] { (void)model::cost(*step, r, c); }, error_kind::invalid_argument, "efficiencies are fractions");
  c = model::h100_cluster(step->mesh());
  c.peak_flops = 1e-320;  // positive, but the compute time is no double
  check_error([&] { (void)model::cost(*step, r, c); }, error_kind::invalid_argument, "the step's time overflows");
  c = model::h100_cluster(step->mesh());
  c.links[0].bandwidth = 1e-320;
  check_error([&] { (void)model::cost(*step, r, c); }, error_kind::invalid_argument, "the step's time overflows");
  // Huge sizes saturate at int64's largest value rather than overflow.
  {
    constexpr std::int64_t G = std::int64_t{1} << 30;
    model::plan<8, 4> h(process_mesh({2}));
    auto hx = h.tensor("x", {G, G}, {0, -1}), hw = h.tensor("w", {G, G}), hy = h.tensor("y", {G, G});
    h.op<"matmul">({hx, hw}, {hy});
    const auto hr = model::propagate(h);
    const auto hc = model::cost(h, hr);
    CHECK(hc.flops(phase::forward) == std::numeric_limits<std::int64_t>::max());
    CHECK(hc.model_flops() == std::numeric_limits<std::int64_t>::max());
    CHECK(hc.hardware_flops() == std::numeric_limits<std::int64_t>::max());
  }
  // Several huge tensors whose lives end at one operator: the live bytes saturate both ways
  // (found by the plan fuzzer: the ends once overflowed below int64's smallest value).
  {
    constexpr std::int64_t G = std::int64_t{1} << 30;  // [G, G] float32: 2^62 bytes
    model::plan<8, 4> h(process_mesh({2}));
    auto t0 = h.tensor("t0", {G, G}), t1 = h.tensor("t1", {G, G}), t2 = h.tensor("t2", {G, G});
    h.op<"add_n">({t0, t1, t2}, {h.tensor("sum", {G, G})});
    const auto hc = model::cost(h, model::propagate(h));
    CHECK(hc.memory().peak == std::numeric_limits<std::int64_t>::max());
  }
  // A size unknown until run time.
  model::plan<8, 4> p(process_mesh({2}));
  auto x = p.tensor("x", {-1, 8}, {0, -1});
  auto w = p.parameter("w", {8, 8});
  auto y = p.tensor("y", {-1, 8});
  p.op<"matmul">({x, w}, {y});
  const auto unknown = model::training_step(p, y);
  check_error([&] { (void)model::cost(unknown, model::propagate(unknown)); }, error_kind::invalid_argument,
              "size unknown until run time");
  // A failed propagation (k sharded by two mesh dims).
  model::plan<8, 4> q(process_mesh({2, 2}));
  auto a = q.tensor("a", {8, 64}, {-1, 1});
  auto b = q.tensor("b", {64, 32}, {0, -1});
  q.op<"matmul">({a, b}, {q.tensor("out", {8, 32})}, {}, "proj");
  const auto failed = model::try_propagate(q);
  REQUIRE_FALSE(failed.ok());
  check_error([&] { (void)model::cost(q, failed); }, error_kind::precondition_not_met, "propagation failed at operator 0");
  // Training options out of range.
  check_error([&] { (void)model::training_step(p, y, {.shard_optimizer_states_on = 0, .zero_stage = 5}); },
              error_kind::invalid_argument, "zero_stage is 5");
  check_error([&] { (void)model::training_step(p, y, {.zero_stage = 2}); }, error_kind::invalid_argument,
              "set shard_optimizer_states_on");
  check_error([&] { (void)model::training_step(p, y, {.state_element_bytes = 0}); }, error_kind::invalid_argument,
              "state_element_bytes is 0");
  // Element sizes no dtype has (1 to 16 bytes).
  check_error([&] { (void)model::training_step(p, y, {.state_element_bytes = 17}); }, error_kind::invalid_argument,
              "state_element_bytes is 17: a dtype's element has 1 to 16 bytes");
  check_error([&] { (void)model::training_step(p, y, {.gradient_element_bytes = std::int64_t{1} << 40}); },
              error_kind::invalid_argument, "gradient_element_bytes is 1099511627776");
  check_error([] { (void)model::element_size::of_bytes(32); }, error_kind::invalid_argument,
              "an element has 32 bytes: a dtype's element has 1 to 16");
  check_error([&] { (void)model::training_step(p, y, {.shard_optimizer_states_on = 0, .shard_optimizer_states_also_on = 7}); },
              error_kind::invalid_argument, "shard_optimizer_states_also_on is 7: a mesh dim (the mesh has");
  check_error([&] { (void)model::training_step(p, y, {.shard_optimizer_states_also_on = 0}); }, error_kind::invalid_argument,
              "shard_optimizer_states_also_on is mesh dim 0, but shard_optimizer_states_on is not set");
  check_error([&] { (void)model::training_step(p, y, {.shard_optimizer_states_on = 0, .shard_optimizer_states_also_on = 0}); },
              error_kind::invalid_argument, "the same as shard_optimizer_states_on");
}

}  // namespace cost_test
