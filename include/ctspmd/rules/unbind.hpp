#ifndef CTSPMD_RULES_UNBIND_HPP
#define CTSPMD_RULES_UNBIND_HPP
/// \file The unbind rule (`unbind`; phi only): x cut along `axis` into its x.shape[axis]
/// slices, each without that dim.
///
/// Notation: x gets the first rank(x) letters of `abcdefghijklmnopqrstuvwxyz` with `'1'` at
/// `axis`; every output gets x's letters without `axis`. `axis` is in [-rank, rank) (an
/// `invalid_argument` otherwise, as in Paddle). The number of outputs is x.shape[axis]: it must
/// be known and in [1, max_operands] (an `invalid_argument` naming the size otherwise).
///
/// Forward: a slice of the axis is held whole by one device only if the axis is replicated,
/// so x is required with `axis` -1, its other dims unchanged (a co-shard list as a whole),
/// and every output takes them. Unbind only selects elements, so a partial x stays partial and
/// every output takes its partial status (Paddle keeps it on x but clears it on the outputs,
/// which would make them wrong; phi-shape.md section 9, bug 7).
/// Backward: there must be x.shape[axis] outputs (Paddle does not check), each of rank
/// rank(x) - 1 (an `invalid_argument` otherwise). The outputs are merged (first-wins under
/// `fluid`, where an axis sharded by two different mesh dims is an error, as in Paddle; the
/// co-shard union under `phi`); x takes the merged mapping with `axis` -1, and every output
/// comes back with the merged mapping, not partial.
///
/// The round trip (forward, then backward from forward's outputs) gives back forward's x.
/// The gradient, `unbind_grad`, stacks the outputs' gradients: it is the stack rule (concat.hpp;
/// Paddle's operator invokes stack).

#include <cstddef>
#include <cstdint>
#include <span>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `unbind` (Paddle's default).
struct unbind_attributes {
  std::int64_t axis = 0;  ///< the unbound axis; negative counts from the end
};

/// The unbind rule.
struct unbind : rule_base<unbind, unbind_attributes> {
  static constexpr std::string_view name = "unbind";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count = operand_count::at_least(1);  // x.shape[axis]

  /// x.shape[axis] outputs, each x's shape without the axis.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = notate(in[0], attrs);
    if (!n) return n.error();
    const std::size_t axis = n->x.view().find(broadcast_label);
    for (std::size_t i = 0; i < n->count; ++i) {
      tensor_shape& o = out.emplace_back();
      for (std::size_t d = 0; d < in[0].shape().size(); ++d)
        if (d != axis) o.push_back(in[0].shape()[d]);
    }
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto n = notate(x, attrs);
    if (!n) return n.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->x, x, s));
    add_partial_of(push(info.inputs, x.dist_attr(), n->x, map), x.dist_attr());
    for (std::size_t i = 0; i < n->count; ++i)
      add_partial_of(push(info.outputs, x.dist_attr(), n->out, map), x.dist_attr());
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto n = notate(x, attrs);
    if (!n) return n.error();
    if (out.size() != n->count)
      return make_error(error_kind::invalid_argument, "", "x has size {} on axis {}, so {} outputs, but got {}",
                        n->count, attrs.axis, n->count, out.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i].ndim() + 1 != x.ndim())
        return make_error(error_kind::invalid_argument, "", "output {} has rank {}, but x has rank {}", i,
                          out[i].ndim(), x.ndim());
    static_vector<std::string_view, max_operands> labels(out.size(), n->out.view());
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view>(labels.data(), labels.size()), out, s));
    push(info.inputs, x.dist_attr(), n->x, map);
    for (const auto& o : out) push(info.outputs, o.dist_attr(), n->out, map);
    return {};
  }

 private:
  struct notation {
    axes_string x;          // '1' at the axis
    axes_string out;        // x's letters without the axis
    std::size_t count = 0;  // number of outputs
  };

  static constexpr result<notation> notate(const dist_tensor_spec& x, const attributes& attrs) {
    const auto axis = normalize_axis(attrs.axis, x.ndim(), "axis {} is out of range for x of rank {}");
    if (!axis) return axis.error();
    const auto letters = first_letters(x.ndim());
    if (!letters) return letters.error();
    const std::int64_t size = x.shape()[*axis];
    if (size < 1 || size > static_cast<std::int64_t>(max_operands))
      return make_error(error_kind::invalid_argument, "",
                        "x has size {} on axis {}: unbind needs a known size in [1, {}] (one output per slice)", size,
                        attrs.axis, max_operands);
    notation n;
    for (std::size_t d = 0; d < letters->size(); ++d) {
      n.x.push_back(d == *axis ? broadcast_label : (*letters)[d]);
      if (d != *axis) n.out.push_back((*letters)[d]);
    }
    n.count = static_cast<std::size_t>(size);
    return n;
  }
};

}  // namespace ctspmd::rules

#endif
