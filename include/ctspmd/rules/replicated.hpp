#ifndef CTSPMD_RULES_REPLICATED_HPP
#define CTSPMD_RULES_REPLICATED_HPP
/// \file The replicated rule (`replicated`): the fallback for an operator without a rule of
/// its own, which then runs on whole tensors on every device.
///
/// Forward: every input is replicated (all -1, not partial: a sharded or partial input is
/// gathered or reduced first). Like Paddle, the rule assumes ONE output with input 0's rank
/// (it cannot know the operator's outputs) and returns it replicated on input 0's mesh. At
/// least one input is needed, for that output.
///
/// Backward (from the outputs): whatever the outputs' layout, the operator computes them
/// from replicated inputs: every input is replicated, and every given output comes back
/// replicated (all -1, not partial), which is what forward of those inputs produces. Any
/// number of inputs and outputs is accepted here, since nothing is derived from them but
/// their ranks.

#include <cstddef>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `replicated`: none.
struct replicated_attributes {};

/// The replicated rule: everything replicated.
struct replicated : rule_base<replicated, replicated_attributes> {
  static constexpr std::string_view name = "replicated";
  static constexpr operand_count input_count = operand_count::at_least(0);  // forward needs one
  static constexpr operand_count output_count = operand_count::at_least(0);

  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics) {
    if (in.empty()) return make_error(error_kind::invalid_argument, "", "expects at least 1 input, got {}", in.size());
    for (const auto& x : in) info.inputs.push_back(replicated_on_mesh(x.dist_attr()));
    // Paddle's assumption: one output, of input 0's rank.
    info.outputs.push_back(replicated_on_mesh(in[0].dist_attr()));
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics) {
    for (const auto& x : in) info.inputs.push_back(replicated_on_mesh(x.dist_attr()));
    for (const auto& o : out) info.outputs.push_back(replicated_on_mesh(o.dist_attr()));
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
