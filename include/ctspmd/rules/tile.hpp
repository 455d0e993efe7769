#ifndef CTSPMD_RULES_TILE_HPP
#define CTSPMD_RULES_TILE_HPP
/// \file The tile rule (`tile`) and its gradient (`tile_grad`, phi, called forward).
///
/// tile(x, repeat_times): out = x repeated `repeat_times[i]` times along each dim. x (rank r)
/// and `repeat_times` (k entries) are both left-padded, x's shape with 1s and `repeat_times`
/// with 1s, to the output rank n = max(r, k). Every repeat count must be positive (an
/// `invalid_argument` naming the entry and its value; Paddle's operator refuses 0 and
/// negative counts too).
///
/// Notation: output dim j has letter j of `abcdefghijklmnopqrstuvwxyz`; x dim i is output dim
/// i + n - r. A dim repeated more than once, and every new leading output dim, is `'1'`.
///
/// Forward: a repeated dim must be replicated (a shard of x's dim does not hold the shard of
/// the tiled dim at the same place), so x is required with it -1; x's other dims keep their
/// mesh dims (a co-shard list as a whole) and the output takes them, with the new leading dims
/// replicated. Tile copies elements without combining them, so a partial x stays partial and
/// the output takes its partial status (Paddle clears it on the output: we do not copy that).
/// Backward: the output's rank must be n and its sizes x's times the repeat counts where
/// known. The output's mapping, with the repeated and new leading dims replicated, is merged
/// alone; x takes it and the output comes back with it, not partial.
///
/// tile_grad(x, out_grad; repeat_times) -> x_grad: x_grad[i] is the sum of out_grad over the
/// copies of x's element i. out_grad's repeated dims that are x dims are required replicated;
/// its new leading dims keep their mesh dims: each device sums over its block of them, so
/// x_grad is partial (sum) on those mesh dims (phi's rule). x's and out_grad's other dims are
/// merged (first-wins under `fluid`, the co-shard union under `phi`); x, out_grad and x_grad
/// take the merged mapping. out_grad must arrive reduced (it comes back not partial; the sum
/// over copies would commute with sum and avg parts only). x's shape must be as above and
/// out_grad's shape x's times the repeats. No reverse inference.
///
/// The round trip of tile (forward, then backward from forward's outputs) gives back forward's
/// x. Under `phi`, a leading mesh dim of out_grad that the merge gives to a larger dim is not
/// partial on x_grad (it shards x_grad's dim instead).
/// Both rules exist only in phi; they behave the same under both semantics except for the
/// merge policy (first-wins under `fluid`, the co-shard union under `phi`).

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

/// Attributes of `tile` and `tile_grad`.
struct tile_attributes {
  static_vector<std::int64_t, max_rank> repeat_times{};  ///< copies per dim, right-aligned with x's dims
};

namespace detail {
/// Labels of tile's operands (see tile.hpp's file comment).
struct tile_notation {
  axes_string x;        ///< x's labels: its output letter, '1' where repeated
  axes_string out;      ///< the output's labels: '1' at repeated and new leading dims
  axes_string grad;     ///< out_grad's labels in tile_grad: '1' at repeated x dims only
  std::size_t lead = 0;  ///< number of new leading output dims
  tensor_shape out_shape{};  ///< the output's shape (-1 where x's size is unknown)
};

constexpr result<tile_notation> notate_tile(const tensor_shape& x, const tile_attributes& attrs) {
  const std::size_t r = x.size();
  const std::size_t k = attrs.repeat_times.size();
  const std::size_t n = r > k ? r : k;
  for (std::size_t i = 0; i < k; ++i)
    if (attrs.repeat_times[i] <= 0)
      return make_error(error_kind::invalid_argument, "", "repeat_times entry {} is {}; a repeat count is positive", i,
                        attrs.repeat_times[i]);
  const auto letters = first_letters(static_cast<std::int64_t>(n));
  if (!letters) return letters.error();
  tile_notation t;
  t.lead = n - r;
  for (std::size_t j = 0; j < n; ++j) {
    const std::int64_t rep = j + k >= n ? attrs.repeat_times[j + k - n] : 1;
    const bool is_x = j >= t.lead;
    const std::int64_t size = is_x ? x[j - t.lead] : 1;
    const bool repeated = rep != 1;
    const char letter = (*letters)[j];
    if (is_x) t.x.push_back(repeated ? broadcast_label : letter);
    t.out.push_back(repeated || !is_x ? broadcast_label : letter);
    t.grad.push_back(repeated && is_x ? broadcast_label : letter);
    if (size > 0 && rep > std::numeric_limits<std::int64_t>::max() / size)
      return make_error(error_kind::invalid_argument, "", "dim {} of size {} repeated {} times overflows int64", j,
                        size, rep);
    t.out_shape.push_back(size < 0 ? -1 : size * rep);
  }
  return t;
}

/// Checks that `got` (the output or out_grad, named `what`) has the tiled shape of `n`.
constexpr status check_tiled(const dist_tensor_spec& got, const tile_notation& n, const char* rank_format,
                             const char* size_format) {
  if (got.shape().size() != n.out_shape.size())
    return make_error(error_kind::invalid_argument, "", rank_format, got.ndim(), n.out_shape.size());
  return check_same_sizes(got.shape(), n.out_shape, size_format);
}
}  // namespace detail

/// The tile rule.
struct tile : rule_base<tile, tile_attributes> {
  static constexpr std::string_view name = "tile";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's sizes times repeat_times (right-aligned; new leading dims the repeats).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = detail::notate_tile(in[0].shape(), attrs);
    if (!n) return n.error();
    out.push_back(n->out_shape);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto n = detail::notate_tile(x.shape(), attrs);
    if (!n) return n.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->x, x, s));
    add_partial_of(push(info.inputs, x.dist_attr(), n->x, map), x.dist_attr());
    add_partial_of(push(info.outputs, x.dist_attr(), n->out, map), x.dist_attr());
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& o = out[0];
    const auto n = detail::notate_tile(x.shape(), attrs);
    if (!n) return n.error();
    CTSPMD_TRY(detail::check_tiled(o, *n, "the output has rank {}, but tiling x gives rank {}",
                                   "output dim {} has size {}, but tiling x gives {}"));
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->out, o, s));
    push(info.inputs, x.dist_attr(), n->x, map);
    push(info.outputs, o.dist_attr(), n->out, map);
    return {};
  }
};

/// The gradient rule of tile.
struct tile_grad : rule_base<tile_grad, tile_attributes> {
  static constexpr std::string_view name = "tile_grad";
  static constexpr operand_count input_count{2};   // x, out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& g = in[1];
    const auto n = detail::notate_tile(x.shape(), attrs);
    if (!n) return n.error();
    CTSPMD_TRY(detail::check_tiled(g, *n, "out_grad has rank {}, but tiling x gives rank {}",
                                   "out_grad dim {} has size {}, but tiling x gives {}"));
    const std::string_view labels[] = {n->x, n->grad};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), in.first<2>(), s));
    push(info.inputs, x.dist_attr(), n->x, map);
    const auto& grad = push(info.inputs, g.dist_attr(), n->grad, map);
    auto& x_grad = push(info.outputs, x.dist_attr(), n->x, map);
    mesh_dims summed;
    for (std::size_t j = 0; j < n->lead; ++j)
      for (const auto m : grad.mesh_dims_of(j)) summed.push_back(m);
    if (!summed.empty()) x_grad.set_partial_status(summed, reduce_type::sum);
    return {};
  }

  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
