// The runtime layer's by-name table, compiled once for all the runtime tests: they are built with
// CTSPMD_RUNTIME_SEPARATE (runtime_tests/CMakeLists.txt), so the other units see its declarations
// only (see <ctspmd/runtime.hpp>).
#define CTSPMD_RUNTIME_IMPLEMENTATION
#include <ctspmd/runtime.hpp>
