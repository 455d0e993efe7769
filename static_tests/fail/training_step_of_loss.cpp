// expect: is not a tensor of the plan
// training_step_of (a training step built over several constant expressions) given a loss the
// forward plan does not have: the error names the loss.
#include <ctspmd/model/training.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2});
constexpr auto forward() {
  model::plan<8, 4> p(mesh);
  auto x = p.parameter("x", {2, 4});
  auto z = p.tensor("z", {2, 4});
  p.op<"relu">({x}, {z});
  return p;
}
constexpr auto fwd = forward();
#ifdef CTSPMD_KO
constexpr model::tensor_id loss{7};
#else
constexpr model::tensor_id loss{1};
#endif
static_assert(model::training_step_of<fwd, loss>.op_count() == 3);
