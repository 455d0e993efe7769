// The compile-time search of search_plans::llama(LAYERS) (bench/README.md, "The compile-time
// search made small"): time its compilation, e.g.
//   /usr/bin/time -f "%e s %M KB" clang++-14 -std=c++20 -Iinclude -I. -fsyntax-only -DLAYERS=4 bench/search_compile.cpp
// -DDP_ONLY: the dynamic programming alone (`detail::candidates_of`).
#include <ctspmd/model/search.hpp>

#include "../examples/search/search_plans.hpp"

#ifndef LAYERS
#define LAYERS 1
#endif

using namespace ctspmd;

constexpr auto problem() {
  return model::search_problem<search_plans::llama_plan_type>{search_plans::llama(LAYERS), search_plans::llama_loss,
                                                              model::h100_cluster(search_plans::llama_mesh), {}};
}
#ifdef DP_ONLY
constexpr const auto& candidates = model::detail::candidates_of<problem>;
static_assert(candidates.entries.size() > 1);
#else
constexpr auto found = model::searched<problem>();
static_assert(found.ok());
#endif

int main() {}
