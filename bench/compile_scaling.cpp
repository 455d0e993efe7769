// Compile-time scaling (bench/compile_scaling.sh compiles this file for several sizes and
// reports seconds and peak compiler memory):
// - the GPT plans of examples/gpt with LAYERS layers, verified during compilation; INDUCTION=0
//   runs every layer instead of verifying the repeated block once;
// - with FLAT_OPS=N instead, a flat plan of N operators: N/4 Megatron MLP blocks written out,
//   each with its own weights (column-parallel matmul, gelu, row-parallel matmul, residual add);
//   with TRAINING=1 as well, that plan's training step (forward, backward, adamw);
// - with LLAMA_LAYERS=L instead, the training step of examples/llama with L layers (TRAINING=0:
//   its forward plan only);
// - with COST=1 as well as TRAINING=1 (flat or Llama), the step's cost report too (memory, FLOPs,
//   time: <ctspmd/model/cost.hpp>).
#include <ctspmd/model/cost.hpp>

#include "../examples/gpt/gpt_plan.hpp"
#include "../examples/llama/llama_plan.hpp"

#ifndef TRAINING
#define TRAINING 0
#endif
#ifndef COST
#define COST 0
#endif

using ctspmd::model::collective;

#ifdef FLAT_OPS
constexpr std::size_t blocks = FLAT_OPS / 4;
constexpr auto flat_plan() {
  using namespace ctspmd;
  model::plan<6 * blocks + 1, 4 * blocks> p(gpt::mesh);
  const tensor_shape act{gpt::batch, gpt::seq, gpt::hidden}, wide{gpt::batch, gpt::seq, gpt::ffn};
  auto x = p.tensor("x", act, {0, -1, -1}, model::float16);
  for (std::size_t i = 0; i < blocks; ++i) {
    auto w_up = p.parameter("w_up", {gpt::hidden, gpt::ffn}, {-1, 1}, model::float16);  // column parallel
    auto up = p.tensor("up", wide, model::float16);
    p.op<"matmul">({x, w_up}, {up});
    auto act_up = p.tensor("up.gelu", wide, model::float16);
    p.op<"gelu">({up}, {act_up});
    auto w_down = p.parameter("w_down", {gpt::ffn, gpt::hidden}, {1, -1}, model::float16);  // row parallel
    auto down = p.tensor("down", act, model::float16);
    p.op<"matmul">({act_up, w_down}, {down});  // partial over mp
    auto y = p.tensor("y", act, model::float16);
    p.op<"add">({x, down}, {y});  // all-reduces down
    x = y;
  }
  return p;
}
#if TRAINING
using ctspmd::model::phase;
// The forward plan is a constant of its own, and its training step is built over several constant
// expressions (training_step_of): every operator's inputs saved and every block's two parameters
// updated, 8x the tensors.
constexpr auto flat_forward = flat_plan();
constexpr auto flat_step() {
  return ctspmd::model::training_step_of<flat_forward, ctspmd::model::tensor_id{flat_forward.tensor_count() - 1},
                                         ctspmd::model::training_options{}, 8 * (6 * blocks + 1), 3 * 4 * blocks>;
}
constexpr auto flat = ctspmd::model::verified<flat_step>();
// Forward: each block's partial output is all-reduced at its residual add. Backward: the
// gradient of a block's input sums the residual's part and the column-parallel matmul's part,
// partial over mp: reduced in every block but the first (the plan's input needs none).
// Optimizer: both weights' gradients over dp.
static_assert(flat.count(phase::forward, collective::all_reduce) == blocks);
static_assert(flat.count(phase::backward, collective::all_reduce) == blocks - 1);
static_assert(flat.count(phase::optimizer, collective::all_reduce) == 2 * blocks && flat.count() == 4 * blocks - 1);
#if COST
constexpr auto flat_cost = ctspmd::model::verified_cost<flat_step>();
static_assert(flat_cost.memory().parameters > 0 && flat_cost.collectives(phase::forward, collective::all_reduce).count == blocks);
#endif
#else
constexpr auto flat = ctspmd::model::verified<flat_plan>();
static_assert(flat.count() == blocks && flat.count(collective::all_reduce) == blocks);
#endif
#elif defined(LLAMA_LAYERS)
#if TRAINING
constexpr auto step = ctspmd::model::verified<llama::make_step<LLAMA_LAYERS>>();
static_assert(step.expect_in_block(llama::make_step<LLAMA_LAYERS>(), 0, ctspmd::model::phase::backward,
                                   collective::all_reduce, 2 * LLAMA_LAYERS));
#if COST
constexpr auto step_cost = ctspmd::model::cost(ctspmd::model::plan_of<llama::make_step<LLAMA_LAYERS>>, step);
static_assert(step_cost.memory().parameters > 0 &&
              step_cost.collectives(ctspmd::model::phase::forward, collective::all_reduce).count == 2 * LLAMA_LAYERS + 1 + 3);
#endif
#else
constexpr auto forward = ctspmd::model::verified<llama::make_forward<LLAMA_LAYERS>>();
static_assert(forward.count_in_block(0, collective::all_reduce) == 2 * LLAMA_LAYERS);
#endif
#else
#ifndef LAYERS
#define LAYERS 12
#endif
#ifndef INDUCTION
#define INDUCTION 1
#endif

constexpr ctspmd::model::propagate_options options{INDUCTION != 0};
constexpr auto tp = ctspmd::model::verified<gpt::make_plan<LAYERS>, options>();
static_assert(tp.count_in_block(0) == 2 * LAYERS && tp.count_in_block(0, collective::all_reduce) == 2 * LAYERS);
constexpr auto sp = ctspmd::model::verified<gpt::make_plan<LAYERS, gpt::variant::sequence_parallel>, options>();
static_assert(sp.count_in_block(0, collective::all_gather) == 2 * LAYERS &&
              sp.count_in_block(0, collective::reduce_scatter) == 2 * LAYERS && sp.count_in_block(0) == 4 * LAYERS);
#endif

int main() {}
