#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>

using namespace ctspmd;

// ---- resolute_output_partial_dimension: sharded axes missing from the output -------------------
constexpr auto map = sharding_merge_for_tensors({{"mk", {0, 2}}, {"kn", {2, 1}}});
static_assert(resolute_output_partial_dimension(map, "mn") == mesh_dims{2});
static_assert(resolute_output_partial_dimension(map, "n") == mesh_dims{0, 2});  // ascending
static_assert(resolute_output_partial_dimension(map, "mkn").empty());
static_assert(resolute_output_partial_dimension(sharding_merge_for_tensors({{"ab", {-1, -1}}}), "").empty());

// ---- copy_tensor_dist_attr_for_output and replicated_on_mesh ------------------------------------
constexpr process_mesh mesh({2, 2, 2});
constexpr tensor_dist_attr src = [] {
  tensor_dist_attr t(mesh, {1, -1, 0});
  t.set_partial_status({2});
  t.set_batch_dim(2);
  return t;
}();
constexpr tensor_dist_attr copy = copy_tensor_dist_attr_for_output(src);
static_assert(copy.process_mesh() == mesh && copy.batch_dim() == 2 && copy.dims_mapping().empty() && !copy.is_partial());
constexpr tensor_dist_attr rep = replicated_on_mesh(src);
static_assert(rep.process_mesh() == mesh && rep.batch_dim() == 2 && !rep.is_partial());
static_assert(rep.dims_mapping() == dims_mapping{-1, -1, -1});

// ---- sharding_mesh_dims: the mesh dims of given axes (an einsum's contracted ones) -------------
static_assert(sharding_mesh_dims(map, "k") == mesh_dims{2});
static_assert(sharding_mesh_dims(map, "nm") == mesh_dims{0, 1});  // ascending, whatever the order
static_assert(sharding_mesh_dims(map, "xyz1").empty());             // no entries, '1'
// the same as resolute_output_partial_dimension of the output axes when no mesh dim shards two axes
static_assert(sharding_mesh_dims(map, "k") == resolute_output_partial_dimension(map, "mn"));
static_assert(sharding_mesh_dims(map, "km") == resolute_output_partial_dimension(map, "n"));
