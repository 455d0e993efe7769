#ifndef CTSPMD_DIST_SPMD_INFO_HPP
#define CTSPMD_DIST_SPMD_INFO_HPP
/// \file `spmd_info`: what a rule infers, the inputs' and outputs' dist attributes.

#include <ctspmd/core/config.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>

namespace ctspmd {

/// Dist attributes of one side of an operator, in operand order.
using dist_attrs = static_vector<tensor_dist_attr, max_operands>;

/// A rule's answer. Forward: the inputs as the operator needs them (a difference from what
/// was given is a reshard) and the inferred outputs. Backward: the inputs the given outputs
/// require, and the outputs as merged.
struct spmd_info {
  dist_attrs inputs;
  dist_attrs outputs;
  friend constexpr bool operator==(const spmd_info&, const spmd_info&) = default;
};

}  // namespace ctspmd

#endif
