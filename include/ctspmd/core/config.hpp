#ifndef CTSPMD_CORE_CONFIG_HPP
#define CTSPMD_CORE_CONFIG_HPP
/// \file Capacities of the fixed-size containers. Each may be raised (or lowered) by
/// defining the macro before the first ctspmd include; all translation units of a program
/// must agree.

#include <cstddef>

#ifndef CTSPMD_MAX_RANK
#define CTSPMD_MAX_RANK 9
#endif
#ifndef CTSPMD_MAX_MESH_NDIM
#define CTSPMD_MAX_MESH_NDIM 4
#endif
#ifndef CTSPMD_MAX_OPERANDS
#define CTSPMD_MAX_OPERANDS 16
#endif

/// Marks a function the compiler must not inline: a rare path (a transposed operand, a
/// conflict to resolve) kept out of the common one, whose registers and stack frame it would
/// otherwise enlarge at every call.
#if defined(__GNUC__) || defined(__clang__)
#define CTSPMD_NOINLINE [[gnu::noinline]]
#else
#define CTSPMD_NOINLINE
#endif

namespace ctspmd {

/// Largest tensor rank (Paddle's limit is 9).
inline constexpr std::size_t max_rank = CTSPMD_MAX_RANK;
/// Largest number of process-mesh dimensions (at most 15: a list of mesh dims packs into a
/// 64-bit word, 4 bits per entry).
inline constexpr std::size_t max_mesh_ndim = CTSPMD_MAX_MESH_NDIM;
/// Largest number of inputs (or outputs) of one operator.
inline constexpr std::size_t max_operands = CTSPMD_MAX_OPERANDS;

static_assert(max_rank >= 1 && max_rank <= 52, "CTSPMD_MAX_RANK must be in [1, 52]");
static_assert(max_mesh_ndim >= 1 && max_mesh_ndim <= 15, "CTSPMD_MAX_MESH_NDIM must be in [1, 15]");
static_assert(max_operands >= 1 && max_operands <= 255, "CTSPMD_MAX_OPERANDS must be in [1, 255]");

}  // namespace ctspmd

#endif
