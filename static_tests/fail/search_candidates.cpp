// expect: candidates is \{\}: it must be in \[1, \{\}\]
// A search whose options are out of range does not compile, and says which and why.
#include <ctspmd/model/search.hpp>

using namespace ctspmd;

constexpr auto problem() {
  model::plan<4, 2> p(process_mesh({2}));
  auto x = p.tensor("x", {8, 8});
  auto w = p.parameter("w", {8, 8});
  auto y = p.tensor("y", {8, 8});
  p.op<"matmul">({x, w}, {y});
#ifdef CTSPMD_KO
  constexpr std::size_t candidates = 0;
#else
  constexpr std::size_t candidates = 2;
#endif
  return model::search_problem<model::plan<4, 2>>{p, y, model::h100_cluster(process_mesh({2})),
                                                   {.candidates = candidates, .keep = 0}};
}
constexpr auto found = model::searched<problem>();
static_assert(found.ok());
