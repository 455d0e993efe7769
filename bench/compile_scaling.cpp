// Compile-time scaling: the GPT plans of examples/gpt with LAYERS layers, verified during
// compilation (bench/compile_scaling.sh compiles this file for several LAYERS and reports
// seconds and peak compiler memory). INDUCTION=0 runs every layer instead of verifying the
// repeated block once.
#include "../examples/gpt/gpt_plan.hpp"

#ifndef LAYERS
#define LAYERS 12
#endif
#ifndef INDUCTION
#define INDUCTION 1
#endif

using ctspmd::model::collective;
constexpr ctspmd::model::propagate_options options{INDUCTION != 0};
constexpr auto tp = ctspmd::model::verified<gpt::make_plan<LAYERS>, options>();
static_assert(tp.count_in_block(0) == 2 * LAYERS && tp.count_in_block(0, collective::all_reduce) == 2 * LAYERS);
constexpr auto sp = ctspmd::model::verified<gpt::make_plan<LAYERS, gpt::variant::sequence_parallel>, options>();
static_assert(sp.count_in_block(0, collective::all_gather) == 2 * LAYERS &&
              sp.count_in_block(0, collective::reduce_scatter) == 2 * LAYERS && sp.count_in_block(0) == 4 * LAYERS);

int main() {}
