#ifndef CTSPMD_RULES_EXPAND_AS_HPP
#define CTSPMD_RULES_EXPAND_AS_HPP
/// \file The expand_as rule (`expand_as`; phi only): out = x broadcast (numpy-style,
/// right-aligned) to the shape of y, or to `target_shape` when y is absent.
///
/// Operands: x, y (optional: absent, it is shape `[]` and dims mapping `[]`, and comes back as
/// given; a 0-D y reads the same way, which is harmless: the target is then `target_shape`,
/// empty for a 0-D output). The target shape T has rank n >= rank(x); each x dim must equal
/// the target dim it aligns with, or be 1 (broadcast), where both sizes are known (-1 matches
/// anything). An x of higher rank, a size mismatch, or no target (y absent and `target_shape`
/// empty for a non-0-D x) is an `invalid_argument` naming the values.
///
/// Notation: the output gets the first n letters of `abcdefghijklmnopqrstuvwxyz`; x dim i gets
/// the letter of output dim i + n - rank(x), or `'1'` where x's size is 1 and the target's is
/// not (a broadcast dim: every device reads x's one entry).
///
/// Forward (Paddle's rule): y decides. y's mapping is merged alone (y is a shape donor; its
/// values are not read); the output takes it and x takes it at its non-broadcast dims, so x
/// is resharded to follow y (under both semantics: y's lists, co-shards included, pass as a
/// whole). y comes back as given. Without y, x's own mapping is merged and the output takes
/// it, new leading dims replicated. Expanding copies elements without combining them, so a
/// partial x stays partial and the output takes its partial status (Paddle clears it), except
/// on a mesh dim that y makes the output shard: there x is required reduced (a device holding
/// a block of the output must hold its values, not parts of them; found by the oracle with a
/// 0-D x expanded to y's sharded dim).
/// Backward: the output's rank and known sizes must be T's; its mapping is merged alone; x
/// takes it at its non-broadcast dims, y (when present) and the output take it, not partial.
///
/// The round trip (forward, then backward from forward's outputs) gives back forward's x and y.
/// The gradient: `expand_as_grad` (expand_as_grad.hpp).

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `expand_as`.
struct expand_as_attributes {
  static_vector<std::int64_t, max_rank> target_shape{};  ///< the output shape when y is absent
};

/// The expand_as rule.
struct expand_as : rule_base<expand_as, expand_as_attributes> {
  static constexpr std::string_view name = "expand_as";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{2};  // x, y (optional)
  static constexpr operand_count output_count{1};

  /// The target shape (y's, or target_shape when y is absent); a -1 there keeps x's size.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = notate(in[0], in[1], attrs);
    if (!n) return n.error();
    tensor_shape& o = out.emplace_back(n->target);
    const std::size_t lead = o.size() - in[0].shape().size();
    for (std::size_t i = 0; i < in[0].shape().size(); ++i)
      if (o[lead + i] == -1) o[lead + i] = in[0].shape()[i];
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& y = in[1];
    const auto n = notate(x, y, attrs);
    if (!n) return n.error();
    axis_to_dim_map map;
    if (is_absent(y)) {
      CTSPMD_TRY(merge_operand(map, n->x, x, s));
    } else {
      CTSPMD_TRY(merge_operand(map, n->out, y, s));
    }
    auto& xi = push(info.inputs, x.dist_attr(), n->x, map);
    info.inputs.push_back(y.dist_attr());
    auto& o = push(info.outputs, x.dist_attr(), n->out, map);
    for (const auto m : x.dist_attr().partial_dims())
      if (!o.shards(m)) {  // (x's mapping is part of the output's)
        xi.set_partial_status({m}, x.dist_attr().partial_reduce_type(m));
        o.set_partial_status({m}, x.dist_attr().partial_reduce_type(m));
      }
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& y = in[1];
    const auto& o = out[0];
    const auto n = notate(x, y, attrs);
    if (!n) return n.error();
    if (o.shape().size() != n->target.size())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but the target shape has rank {}",
                        o.ndim(), n->target.size());
    CTSPMD_TRY(check_same_sizes(o.shape(), n->target, "output dim {} has size {}, but the target shape gives {}"));
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->out, o, s));
    push(info.inputs, x.dist_attr(), n->x, map);
    if (is_absent(y))
      info.inputs.push_back(y.dist_attr());
    else
      push(info.inputs, y.dist_attr(), n->out, map);
    push(info.outputs, o.dist_attr(), n->out, map);
    return {};
  }

 private:
  struct notation {
    tensor_shape target{};
    axes_string x;
    axes_string out;
  };

  static constexpr result<notation> notate(const dist_tensor_spec& x, const dist_tensor_spec& y,
                                           const attributes& attrs) {
    notation n;
    n.target = is_absent(y) ? attrs.target_shape : y.shape();
    const std::size_t r = x.shape().size();
    const std::size_t k = n.target.size();
    if (r > k)
      return make_error(error_kind::invalid_argument, "",
                        "x has rank {}, above the target shape's rank {} (y has rank {}, target_shape {} entries)", r,
                        k, y.ndim(), attrs.target_shape.size());
    const auto letters = first_letters(static_cast<std::int64_t>(k));
    if (!letters) return letters.error();
    n.out = *letters;
    for (std::size_t i = 0; i < r; ++i) {
      const std::size_t j = i + k - r;
      const std::int64_t a = x.shape()[i];
      const std::int64_t b = n.target[j];
      if (b < -1)
        return make_error(error_kind::invalid_argument, "", "target dim {} is {}, not a size", j, b);
      if (a != -1 && b != -1 && a != b && a != 1)
        return make_error(error_kind::invalid_argument, "",
                          "x dim {} has size {}, which neither equals target dim {} ({}) nor is 1", i, a, j, b);
      n.x.push_back(a == 1 && b != 1 ? broadcast_label : (*letters)[j]);
    }
    return n;
  }
};

}  // namespace ctspmd::rules

#endif
