#ifndef CTSPMD_RULES_PAD_HPP
#define CTSPMD_RULES_PAD_HPP
/// \file The pad rule (`pad`; phi only): out = x with `paddings[2d]` entries of `pad_value`
/// before and `paddings[2d + 1]` after each dim d.
///
/// Attributes: `paddings` holds two entries per dim of x, each >= 0 (an `invalid_argument`
/// naming the count or the entry otherwise; it holds at most `max_paddings` = 16 entries, so x
/// has rank <= 8); `pad_value` is the value written.
///
/// Notation: x and the output get the first rank(x) letters of `abcdefghijklmnopqrstuvwxyz`,
/// `'1'` at every dim with a non-zero padding.
///
/// Forward: a shard of a padded dim does not hold the shard of the padded dim at the same place,
/// so every padded dim is required replicated; the other dims keep their mesh dims (a co-shard
/// list as a whole) and the output takes them (Paddle's rule). Partial x: every device writes
/// `pad_value` into its part, so the output's parts combine to pad_value only where combining
/// copies of pad_value gives pad_value back: the partial status of x is kept (and the output
/// takes it) on mesh dims of reduce type avg, max or min always, of sum only when pad_value is
/// 0, and of prod, any or all when pad_value is 0 or 1; on other mesh dims x must be reduced
/// first (Paddle clears all of it). Without padding nothing is written and all of it is kept.
/// Backward: the output's rank must be x's and its known sizes x's plus the paddings; its
/// mapping with the padded dims replicated is merged alone; x takes it and the output comes
/// back with it, not partial.
///
/// The same under both semantics but for the merge policy. The round trip (forward, then
/// backward from forward's outputs) gives back forward's x. The gradient: `pad_grad`
/// (pad_grad.hpp).

#include <cstddef>
#include <cstdint>
#include <limits>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// How many paddings `pad_attributes` holds: two per dim up to max_rank, at most 16 (so that the
/// attributes stay trivially copyable, as plans need: pad is then limited to rank 8).
inline constexpr std::size_t max_paddings = 2 * max_rank < 16 ? 2 * max_rank : 16;

/// Attributes of `pad` (Paddle's defaults).
struct pad_attributes {
  static_vector<std::int64_t, max_paddings> paddings{};  ///< before and after, per dim
  double pad_value = 0.0;                                ///< the value written
};

/// The pad rule.
struct pad : rule_base<pad, pad_attributes> {
  static constexpr std::string_view name = "pad";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's sizes plus the paddings before and after.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = notate(in[0].shape(), attrs);
    if (!n) return n.error();
    out.push_back(n->out_shape);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto n = notate(x.shape(), attrs);
    if (!n) return n.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->labels, x, s));
    auto& xi = push(info.inputs, x.dist_attr(), n->labels, map);
    auto& o = push(info.outputs, x.dist_attr(), n->labels, map);
    for (const auto m : x.dist_attr().partial_dims()) {
      const reduce_type r = x.dist_attr().partial_reduce_type(m);
      if (n->padded && !keeps(r, attrs.pad_value)) continue;
      xi.set_partial_status({m}, r);
      o.set_partial_status({m}, r);
    }
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& o = out[0];
    const auto n = notate(x.shape(), attrs);
    if (!n) return n.error();
    if (o.ndim() != x.ndim())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but x has rank {}", o.ndim(),
                        x.ndim());
    CTSPMD_TRY(check_same_sizes(o.shape(), n->out_shape, "output dim {} has size {}, but padding x gives {}"));
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->labels, o, s));
    push(info.inputs, x.dist_attr(), n->labels, map);
    push(info.outputs, o.dist_attr(), n->labels, map);
    return {};
  }

  /// True if parts of reduce type `r` that all hold `v` combine to `v`.
  static constexpr bool keeps(reduce_type r, double v) noexcept {
    switch (r) {
      case reduce_type::avg:
      case reduce_type::max:
      case reduce_type::min: return true;
      case reduce_type::sum: return v == 0.0;
      case reduce_type::prod:
      case reduce_type::any:
      case reduce_type::all: return v == 0.0 || v == 1.0;
    }
    return false;
  }

 private:
  struct notation {
    axes_string labels;
    tensor_shape out_shape{};
    bool padded = false;
  };

  static constexpr result<notation> notate(const tensor_shape& x, const attributes& attrs) {
    if (attrs.paddings.size() != 2 * x.size())
      return make_error(error_kind::invalid_argument, "", "paddings has {} entries, but x of rank {} needs {}",
                        attrs.paddings.size(), x.size(), 2 * x.size());
    const auto letters = first_letters(static_cast<std::int64_t>(x.size()));
    if (!letters) return letters.error();
    notation n;
    n.labels = *letters;
    for (std::size_t d = 0; d < x.size(); ++d) {
      const std::int64_t before = attrs.paddings[2 * d];
      const std::int64_t after = attrs.paddings[2 * d + 1];
      if (before < 0 || after < 0)
        return make_error(error_kind::invalid_argument, "", "dim {} has paddings {} and {}; a padding is >= 0", d,
                          before, after);
      const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / 4;
      if (before > limit || after > limit || x[d] > limit)
        return make_error(error_kind::invalid_argument, "", "dim {} of size {} padded by {} and {} overflows", d, x[d],
                          before, after);
      if (before != 0 || after != 0) {
        n.labels[d] = broadcast_label;
        n.padded = true;
      }
      n.out_shape.push_back(x[d] < 0 ? -1 : x[d] + before + after);
    }
    return n;
  }
};

}  // namespace ctspmd::rules

#endif
