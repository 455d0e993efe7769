#ifndef CTSPMD_RULES_NUMEL_HPP
#define CTSPMD_RULES_NUMEL_HPP
/// \file The numel rule (`numel`): out (0-D) = the number of elements of x.
///
/// Forward: x is required as it is (only its shape is read: no reshard, partial status kept).
/// Each device counts its local elements, so the output is partial (sum) on every mesh dim that
/// shards x (all the mesh dims of a co-sharded dim), as phi does; on the others each device
/// counts the same. Backward: a 0-D output says nothing about x's layout: x is replicated (not
/// partial), and the output comes back not partial, which is what forward of that x gives.
/// Both semantics behave the same (there is no merge).

#include <cstdint>
#include <string_view>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `numel`: none.
struct numel_attributes {};

/// The numel rule (see the file comment).
struct numel : rule_base<numel, numel_attributes> {
  static constexpr std::string_view name = "numel";
  static constexpr cost_kind kind = cost_kind::moves;
  /// Writes its scalar; reads only its input's shape.
  static constexpr std::int64_t bytes(const local_operands&, const local_operands& out, const attributes&) {
    return out.total_bytes();
  }
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// A 0-D count.
  static constexpr status output_shapes(shape_list& out, spec_span, const attributes&) {
    out.emplace_back();
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics) {
    const auto& x = in[0].dist_attr();
    info.inputs.push_back(x);
    tensor_dist_attr& out = info.outputs.emplace_back(copy_tensor_dist_attr_for_output(x));
    mesh_dims sharding;
    for (std::size_t d = 0; d < x.rank(); ++d)
      for (const auto m : x.mesh_dims_of(d)) sharding.push_back(m);
    out.set_partial_status(sharding, reduce_type::sum);
    return {};
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics) {
    if (out[0].ndim() != 0)
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but numel's output is 0-D",
                        out[0].ndim());
    info.inputs.push_back(replicated_on_mesh(in[0].dist_attr()));
    info.outputs.push_back(replicated_on_mesh(out[0].dist_attr()));
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
