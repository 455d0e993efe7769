// expect: more than (4|\{\}) distinct reshards \(raise the MaxReshards argument of verified or try_propagate\)
// Eight reshards in a one-operator plan: more than the default room (four per operator) until
// `verified` is given MaxReshards.
#include <ctspmd/model/propagate.hpp>

using namespace ctspmd;
constexpr process_mesh mesh({2, 2, 2, 2});

constexpr auto make() {
  model::plan<4, 1> p(mesh);
  tensor_dist_attr partial_everywhere(mesh, {-1, -1});  // a reduce type per mesh dim: no product group
  partial_everywhere.set_partial_status({0});
  partial_everywhere.set_partial_status({1}, reduce_type::max);
  partial_everywhere.set_partial_status({2}, reduce_type::min);
  partial_everywhere.set_partial_status({3}, reduce_type::prod);
  auto x = p.tensor("x", {8, 8}, partial_everywhere);
  auto y = p.tensor("y", {8, 8}, partial_everywhere);
  p.op<"add">({x, y}, {p.tensor("out", {8, 8})});
  return p;
}
#ifdef CTSPMD_KO
constexpr auto prop = model::verified<make>();
#else
constexpr auto prop = model::verified<make, model::propagate_options{}, 8>();
#endif
static_assert(prop.count() == 8);
