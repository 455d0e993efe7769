// expect: has no grad recipe
// A parameter read by an operator ctspmd has no grad recipe for (det): the training step
// cannot be derived, and the error names the operator.
#include <ctspmd/model/training.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2});
constexpr auto step() {
  model::plan<8, 4> p(mesh);
  auto x = p.parameter("x", {2, 4, 4});
#ifdef CTSPMD_KO
  auto z = p.tensor("z", {2});
  p.op<"det">({x}, {z}, {}, "volume");
#else
  auto z = p.tensor("z", {2, 4, 4});
  p.op<"relu">({x}, {z}, {}, "volume");
#endif
  return model::training_step(p, z);
}
static_assert(step().op_count() > 1);
