// expect: column [{][}]: expected .*[(]the list is not closed[)]
// A DTensor placements literal whose list is not closed does not compile; the message names the
// column (Clang shows the value, 23, GCC the message).
#include <ctspmd/interop.hpp>
using namespace ctspmd::literals;

#ifdef CTSPMD_KO
constexpr auto layout = "[Shard(0), Replicate()"_placements;
#else
constexpr auto layout = "[Shard(0), Replicate()]"_placements;
#endif
static_assert(layout.text().size() > 0);
