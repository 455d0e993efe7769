// expect: input 0 [^ ]*x[^ ]* and input 1 [^ ]*w[^ ]*: tensor axis|plan_fails_at_operator\(1, 0,
// A conflict names the operator and the inputs that bring it: GCC shows the whole text as a
// template argument, Clang the operator's index and the first input's among the arguments.
#include <ctspmd/model/propagate.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 4});

constexpr auto make() {
  model::plan<8, 2> p(mesh);
  auto x = p.tensor("x", {8, 64}, {-1, 1});
#ifdef CTSPMD_KO
  auto w = p.tensor("w", {64, 32}, {0, -1});  // k on mesh dim 1 by x and on 0 by w
#else
  auto w = p.tensor("w", {64, 32}, {1, -1});
#endif
  p.op<"relu">({x}, {p.tensor("x2", {8, 64})});
  p.op<"matmul">({x, w}, {p.tensor("y", {8, 32})}, {}, "proj");
  return p;
}
constexpr auto prop = model::verified<make>();
static_assert(prop.ok());
