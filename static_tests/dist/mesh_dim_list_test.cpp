#include <ctspmd/dist/mesh_dim_list.hpp>

using namespace ctspmd;

// ---- a list of mesh dims packed in one word: {m} is m, empty is 0xFF (the major as a byte) -------
static_assert(mesh_dim_list().empty() && mesh_dim_list().bits() == 0xFF && mesh_dim_list().major() == -1);
static_assert(mesh_dim_list::single(-1).empty() && mesh_dim_list::single(2).bits() == 2);
static_assert(mesh_dim_list::single(2).at_most_one() && mesh_dim_list().at_most_one() && mesh_dim_list().size() == 0);
constexpr auto l = mesh_dim_list::of({2, 0, 1});
static_assert(l.size() == 3 && l[0] == 2 && l[1] == 0 && l[2] == 1 && l.major() == 2 && l.last() == 1);
static_assert(l.contains(0) && !l.contains(3) && l.mask() == 0b111);
static_assert(l.without(0) == mesh_dim_list::of({2, 1}) && l.to_mesh_dims() == mesh_dims{2, 0, 1});
static_assert([] {
  auto m = l;
  m.pop_back();
  m.push_back(3);
  return m == mesh_dim_list::of({2, 0, 3});
}());
static_assert([] {
  auto m = mesh_dim_list::single(1);
  m.pop_back();
  return m.empty() && m == mesh_dim_list();
}());
// order matters; the shard count is the product of the sizes
static_assert(!(mesh_dim_list::of({0, 1}) == mesh_dim_list::of({1, 0})));
static_assert(mesh_dim_list::of({0, 2}).shards(process_mesh({2, 3, 4})) == 8 && mesh_dim_list().shards(process_mesh({2})) == 1);
// the largest list a mesh allows fits
static_assert(mesh_dim_list::of({3, 2, 1, 0}).size() == max_mesh_ndim);
