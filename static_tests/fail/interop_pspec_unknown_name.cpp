// expect: no dim of the mesh
// A PartitionSpec naming a mesh axis the mesh does not have does not compile.
#include <ctspmd/interop.hpp>

constexpr ctspmd::named_mesh mesh({2, 4}, {"dp", "mp"});
#ifdef CTSPMD_KO
constexpr auto attr = ctspmd::from_partition_spec(mesh, "P('dp', 'tp')", 2);
#else
constexpr auto attr = ctspmd::from_partition_spec(mesh, "P('dp', 'mp')", 2);
#endif
static_assert(attr.rank() == 2);
