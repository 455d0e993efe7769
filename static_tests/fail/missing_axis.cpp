// expect: is not in the axis-to-dim map
// A label absent from the map, with unsharded_miss_axis == false, is an error.
#include <ctspmd/merge/sharding_merge.hpp>

constexpr auto map = ctspmd::sharding_merge_for_tensors({{"ij", {0, -1}}});
#ifdef CTSPMD_KO
constexpr auto dm = ctspmd::get_dims_mapping_for_axes("ik", map);
#else
constexpr auto dm = ctspmd::get_dims_mapping_for_axes("ik", map, /*unsharded_miss_axis=*/true);
#endif
static_assert(dm.size() == 2);
