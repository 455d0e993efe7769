#ifndef CTSPMD_RULES_SOFTMAX_HPP
#define CTSPMD_RULES_SOFTMAX_HPP
/// \file The softmax rule (`softmax`, `log_softmax`): out = softmax(x) along `axis`.
///
/// Notation: x and the output both get the first rank(x) letters of
/// `abcdefghijklmnopqrstuvwxyz`. `axis` is in [-rank, rank) (negative counts from the end).
/// A 0-D x is accepted with axis -1 or 0, as Paddle's softmax operator accepts it (its
/// softmax is 1): there is no dim to keep replicated, and every mapping is empty.
///
/// Forward: each output element needs the whole softmax axis, so that axis must be
/// replicated: if x shards it, x comes back with it -1 (the reshard). x's other dims are
/// merged (merge_conflicts = false; one valid tensor cannot conflict) and the output takes
/// the same mapping. Partial inputs: softmax of a partial sum is not a partial of softmaxes,
/// so a partial x must be reduced first: x comes back not partial, and the output is not
/// partial.
///
/// Backward (Paddle had none mid-2023; derived): the output's rank and sizes must be x's.
/// The output's mapping, with the softmax axis forced to -1, is merged alone; x takes it,
/// and the output comes back with it (the axis replicated, not partial), which is exactly
/// what forward of the inferred x produces.

#include <cstddef>
#include <cstdint>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `softmax` (Paddle's defaults).
struct softmax_attributes {
  std::int64_t axis = -1;  ///< the normalised axis; negative counts from the end
};

/// The softmax rule (also `log_softmax`).
struct softmax : detail::rule_base<softmax, softmax_attributes> {
  static constexpr std::string_view name = "softmax";

  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs) {
    CTSPMD_TRY(detail::check_count(in, 1));
    const auto& x = in[0];
    const auto axes = try_get_broadcast_axes(x.ndim(), x.ndim(), alphabets::full);
    if (!axes) return axes.error();
    const auto map = merge_with_axis_replicated(*axes, x.dims_mapping(), attrs.axis);
    if (!map) return map.error();

    info.inputs.push_back(detail::mapped(x.dist_attr(), *axes, *map));
    info.outputs.push_back(detail::mapped(x.dist_attr(), *axes, *map));
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs) {
    CTSPMD_TRY(detail::check_count(in, 1));
    CTSPMD_TRY(detail::check_count(out, 1, /*outputs=*/true));
    const auto& x = in[0];
    const auto& o = out[0];
    if (o.ndim() != x.ndim())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but x has rank {}", o.ndim(),
                        x.ndim());
    for (std::size_t d = 0; d < x.shape().size(); ++d) {
      const auto want = x.shape()[d];
      const auto got = o.shape()[d];
      if (got != -1 && want != -1 && got != want)
        return make_error(error_kind::invalid_argument, "", "output dim {} has size {}, but x has size {}", d, got,
                          want);
    }
    const auto axes = try_get_broadcast_axes(x.ndim(), x.ndim(), alphabets::full);
    if (!axes) return axes.error();
    // Only the output's mapping is merged: x's own mapping does not count backward.
    const auto map = merge_with_axis_replicated(*axes, o.dims_mapping(), attrs.axis);
    if (!map) return map.error();

    info.inputs.push_back(detail::mapped(x.dist_attr(), *axes, *map));
    info.outputs.push_back(detail::mapped(o.dist_attr(), *axes, *map));
    return {};
  }

 private:
  /// Checks `axis` against the rank of `axes`, and merges `mapping` with that axis replicated.
  static constexpr result<axis_to_dim_map> merge_with_axis_replicated(std::string_view axes, dims_mapping mapping,
                                                                      std::int64_t axis) {
    const auto rank = static_cast<std::int64_t>(axes.size());
    const std::int64_t bound = rank > 0 ? rank : 1;  // a 0-D x takes axis -1 or 0
    if (axis < -bound || axis >= bound)
      return make_error(error_kind::invalid_argument, "", "axis {} is outside [-{}, {}) for x of rank {}", axis, bound,
                        bound, rank);
    // The softmax axis must be replicated: every output element reads all of it.
    if (rank > 0) mapping[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)] = -1;
    return try_sharding_merge_for_tensors({{axes, mapping}}, /*merge_conflicts=*/false);
  }
};

}  // namespace ctspmd::rules

#include <boost/hana/adapt_struct.hpp>

BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::softmax_attributes, axis);

#endif
