#ifndef CTSPMD_RULES_LAYER_NORM_HPP
#define CTSPMD_RULES_LAYER_NORM_HPP
/// \file The layer_norm rule: out = (x - mean) / sqrt(variance + epsilon) * scale + bias,
/// with mean and variance taken over x's dims from `begin_norm_axis` on (the normalised dims).
///
/// Operands: inputs x (rank r >= 2), scale and bias (1-D); outputs out (x's shape), mean and
/// variance (shape x[:begin_norm_axis], Paddle's phi behaviour). `begin_norm_axis` must be in
/// [1, r), as Paddle requires (0, which would give 0-d statistics, is rejected); a negative
/// value, which Paddle does not accept, counts from the end (+r) as the other rules' axis
/// attributes do, so -1 normalises the last dim only. Anything else is `invalid_argument`
/// naming the value. Only ranks are checked (not scale's size). `epsilon` does not affect
/// sharding and is not checked.
///
/// Notation: x and out get the first r letters of `abcdefghijklmnopqrstuvwxyz`; mean and
/// variance its first `begin_norm_axis` letters (the leading dims).
///
/// Forward: every device needs whole rows of the normalised dims to compute their mean and
/// variance, so x's normalised dims are replicated (a reshard if they were sharded) and its
/// leading dims keep their shardings; out takes x's mapping so reset, and mean and variance
/// carry the leading dims' shardings (leading dims on different mesh dims are fine). scale
/// and bias, which span the normalised dims, are replicated. A partial x cannot be normalised
/// part by part (the normalisation is not linear): x is required without partial status (an
/// all-reduce first), and no output is partial.
///
/// Backward (from the outputs): out's leading dims, mean's and variance's dims (the same
/// labels) are merged, resolving conflicts (one axis on two mesh dims is `unimplemented`; a
/// mesh dim claimed by two axes stays with the first claimant, in the order out, mean,
/// variance). x takes the merged leading dims with its normalised dims replicated; scale and
/// bias are replicated. The outputs are returned as merged: out with the merged leading dims
/// and its normalised dims -1, mean and variance with the merged leading dims. layer_norm
/// never produces a partial output, so no partial status is inferred or returned.
///
/// Under `phi` the merges are co-shard unions, and the mesh dims that sharded the normalised
/// dims are not dropped but move to x's first dim as a co-shard (appended, in dim order, while
/// its size stays divisible; the others are dropped): `[[0], [1], [], []]` with begin_norm_axis
/// 1 requires x as `[[0, 1], [], [], []]` (phi's end-to-end co-shard test), which keeps every
/// device busy. Which leading dim receives them is our choice (phi's source for this case is
/// not public): the first, the batch dim, as phi's reshape does for a flatten.
///
/// Round trip: forward then backward gives back forward's inputs, and forward from them gives
/// the same outputs.

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `layer_norm` (Paddle's defaults).
struct layer_norm_attributes {
  std::int64_t begin_norm_axis = 1;  ///< first normalised dim of x (negative: from the end)
  double epsilon = 1e-5;             ///< added to the variance (no effect on sharding)
};

/// The layer_norm rule.
struct layer_norm : rule_base<layer_norm, layer_norm_attributes> {
  static constexpr std::string_view name = "layer_norm";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{3};

  /// out: x's shape; mean and variance: x[:begin_norm_axis].
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = notation(in, attrs);
    if (!n) return n.error();
    out.push_back(in[0].shape());
    tensor_shape& mean = out.emplace_back();
    for (std::size_t d = 0; d < n->lead.size(); ++d) mean.push_back(in[0].shape()[d]);
    out.push_back(mean);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto n = notation(in, attrs);
    if (!n) return n.error();
    const auto& x = in[0];
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->x, x, s));
    if (s == semantics::phi) move_to_first_dim(map, x, n->lead.size());

    push(info.inputs, x.dist_attr(), n->x, map);  // the normalised dims replicated
    info.inputs.push_back(replicated_on_mesh(in[1].dist_attr()));
    info.inputs.push_back(replicated_on_mesh(in[2].dist_attr()));
    info.outputs.push_back(info.inputs[0]);          // out: x as required
    push(info.outputs, x.dist_attr(), n->lead, map);  // mean
    info.outputs.push_back(info.outputs[1]);         // variance
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto n = notation(in, attrs);
    if (!n) return n.error();
    const auto& x = in[0];
    const auto lead = static_cast<std::int64_t>(n->lead.size());
    if (out[0].ndim() != x.ndim())
      return make_error(error_kind::invalid_argument, "", "out must have x's rank {}, but has rank {}", x.ndim(),
                        out[0].ndim());
    if (out[1].ndim() != lead)
      return make_error(error_kind::invalid_argument, "", "mean must have rank begin_norm_axis = {}, but has rank {}",
                        lead, out[1].ndim());
    if (out[2].ndim() != lead)
      return make_error(error_kind::invalid_argument, "",
                        "variance must have rank begin_norm_axis = {}, but has rank {}", lead, out[2].ndim());
    // Only the outputs' leading dims are merged: the inputs' own mappings do not count backward.
    const std::array<std::string_view, 3> labels{n->x.view(), n->lead.view(), n->lead.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 3>(labels), out, s));

    push(info.inputs, x.dist_attr(), n->x, map);
    info.inputs.push_back(replicated_on_mesh(in[1].dist_attr()));
    info.inputs.push_back(replicated_on_mesh(in[2].dist_attr()));
    push(info.outputs, out[0].dist_attr(), n->x, map);
    push(info.outputs, out[1].dist_attr(), n->lead, map);
    push(info.outputs, out[2].dist_attr(), n->lead, map);
    return {};
  }

 private:
  struct labels {
    axes_string x;     // x's and out's labels: the leading dims' letters, then '1' (normalised dims)
    axes_string lead;  // the leading dims': mean's and variance's labels
  };

  /// phi: the mesh dims that shard x's normalised dims (from `lead` on) join x's first dim, in
  /// dim order, while its size stays divisible (the others are dropped).
  static constexpr void move_to_first_dim(axis_to_dim_map& map, const dist_tensor_spec& x, std::size_t lead) {
    const char first = alphabets::full[0];
    for (std::size_t d = lead; d < static_cast<std::size_t>(x.ndim()); ++d) {
      const mesh_dim_list l = ctspmd::detail::dim_list(x.dist_attr(), d);
      for (std::size_t k = 0; k < l.size(); ++k) {
        mesh_dim_list moved = map.list(first);
        moved.push_back(l[k]);
        const std::int64_t size = x.shape()[0];
        if (size == -1 || size % moved.shards(x.process_mesh()) == 0) map.set(first, moved);
      }
    }
  }

  /// Checks the inputs' ranks and begin_norm_axis, and labels the operands.
  static constexpr result<labels> notation(spec_span in, const attributes& attrs) {
    const auto& x = in[0];
    const auto letters = first_letters(x.ndim());
    if (!letters) return letters.error();
    const std::int64_t bna = attrs.begin_norm_axis < 0 ? attrs.begin_norm_axis + x.ndim() : attrs.begin_norm_axis;
    if (bna < 1 || bna >= x.ndim())
      return make_error(error_kind::invalid_argument, "",
                        "begin_norm_axis {} is outside [1, {}) for x of rank {} (negative values count from the end)",
                        attrs.begin_norm_axis, x.ndim(), x.ndim());
    if (in[1].ndim() != 1)
      return make_error(error_kind::invalid_argument, "", "scale must be 1-D, but has rank {}", in[1].ndim());
    if (in[2].ndim() != 1)
      return make_error(error_kind::invalid_argument, "", "bias must be 1-D, but has rank {}", in[2].ndim());
    labels l{axes_string(*letters), axes_string(letters->substr(0, static_cast<std::size_t>(bna)))};
    for (auto i = static_cast<std::size_t>(bna); i < l.x.size(); ++i) l.x[i] = broadcast_label;
    return l;
  }
};

}  // namespace ctspmd::rules

#endif
