// The runtime layer's by-name table (<ctspmd/runtime.hpp>), compiled once, into the library
// ctspmd_runtime_layer, for our programs that call rules by name: the runtime tests, and through
// ctspmd_requests the tool, the Python module and the plan parity test. Its users are built with
// CTSPMD_RUNTIME_SEPARATE (a usage requirement of the library), so they see its declarations only.
#define CTSPMD_RUNTIME_IMPLEMENTATION
#include <ctspmd/runtime.hpp>
