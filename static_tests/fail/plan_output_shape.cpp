// expect: the output is declared with size (65|\{\}) at dim (2|\{\}), but the rule derives size
// A matmul [8, 16, 32] x [32, 64] writes a [8, 16, 64] tensor: declaring it [8, 16, 65] (the
// right rank, a wrong size) fails when the plan is built, at that operator.
#include <ctspmd/model/propagate.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 4});

constexpr auto make() {
  model::plan<4, 2> p(mesh);
  auto x = p.tensor("x", {8, 16, 32}, {0, -1, -1});
  auto w = p.tensor("w", {32, 64}, {-1, 1});
#ifdef CTSPMD_KO
  p.op<"matmul">({x, w}, {p.tensor("y", {8, 16, 65})}, {}, "proj");
#else
  p.op<"matmul">({x, w}, {p.tensor("y", {8, 16, 64})}, {}, "proj");
#endif
  return p;
}
constexpr auto prop = model::verified<make>();
static_assert(prop.ok());
