#ifndef CTSPMD_RULES_GATHER_ND_HPP
#define CTSPMD_RULES_GATHER_ND_HPP
/// \file `gather_nd` (x, index) -> out and its grad `gather_nd_grad` (x, index, out_grad) -> x_grad.
///
/// gather_nd: index has rank q >= 1 and a last dim of static size K in [0, rank(x)]; each of its
/// index.shape[:-1] rows of K coordinates names a slice x[i0, ..., iK-1, ...], so out has shape
/// index.shape[:-1] + x.shape[K:]. Notation: out gets the first q-1 + rank(x)-K letters; index
/// gets out's first q-1 letters then `'1'` (every device needs whole coordinates); x gets `'1'`
/// at its K indexed dims (any coordinate may name any slice, so they are gathered first) then
/// out's remaining letters. x and index are merged (fluid first-wins, phi the co-shard union):
/// index's leading dims shard out's leading dims (each device looks up its rows), x's trailing
/// dims shard out's trailing dims. Partial status is dropped. Reverse: out's mapping goes to
/// index's leading dims and x's trailing dims; x's indexed dims and index's last dim replicated.
/// Matches Paddle's gather_nd tests where they are valid (index [2,4,1] on x [10,20]); Paddle
/// keeps x's mapping as given (a sharded indexed dim of x would look up local rows: wrong) and
/// accepts an index whose last dim exceeds rank(x) (its tests' x [10], index [4]): both are
/// corrected here (the indexed dims replicated; K > rank(x) is InvalidArgument, as is a dynamic
/// K, which leaves out's rank unknown).
///
/// gather_nd_grad (x, index, out_grad) -> x_grad: out_grad's slices added into x's shape at the
/// coordinates. Labelled as above, out_grad as out (its shape is checked against gather_nd's
/// output), merged. x_grad has x's labels and is partial (sum) on the mesh dims that shard
/// index's leading dims: each device adds only its rows' slices (Paddle replicates x_grad like
/// x, which loses the other devices' slices). No reverse inference.
///
/// Both semantics behave the same except for the merge policy (these rules exist in phi only).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/cumsum.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `gather_nd` and `gather_nd_grad` (none).
struct gather_nd_attributes {};

namespace detail {

/// x's, index's and out's labels for a gather_nd, and the number of index's leading dims.
struct gather_nd_notation {
  axes_string x, index, out;
  std::size_t lead = 0;
};
constexpr result<gather_nd_notation> make_gather_nd_notation(const dist_tensor_spec& x, const dist_tensor_spec& index) {
  if (index.ndim() < 1)
    return make_error(error_kind::invalid_argument, "", "index must have rank >= 1, but has rank {}", index.ndim());
  const std::int64_t k = index.shape()[static_cast<std::size_t>(index.ndim() - 1)];
  if (k < 0 || k > x.ndim())
    return make_error(error_kind::invalid_argument, "",
                      "index's last dim (of size {}) must be static and at most x's rank {}", k, x.ndim());
  const std::int64_t lead = index.ndim() - 1, rank = lead + x.ndim() - k;
  if (rank > static_cast<std::int64_t>(max_rank))
    return make_error(error_kind::invalid_argument, "",
                      "the output has rank {} (index {} and x {}), above max_rank = {}", rank, index.ndim(), x.ndim(),
                      max_rank);
  const auto ol = first_letters(rank);
  if (!ol) return ol.error();
  gather_nd_notation n{{}, ol->substr(0, static_cast<std::size_t>(lead)), *ol, static_cast<std::size_t>(lead)};
  n.index.push_back(broadcast_label);
  for (std::int64_t d = 0; d < k; ++d) n.x.push_back(broadcast_label);
  n.x = n.x + ol->substr(static_cast<std::size_t>(lead));
  return n;
}

/// gather_nd's forward (from x and index) or reverse (from `out`).
constexpr status gather_nd_infer(spmd_info& info, spec_span in, const dist_tensor_spec& out, bool reverse,
                                 semantics s) {
  const auto n = make_gather_nd_notation(in[0], in[1]);
  if (!n) return n.error();
  axis_to_dim_map map;
  if (!reverse) {
    const std::array<std::string_view, 2> labels{n->x.view(), n->index.view()};
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), in, s, scan_merge));
  } else {
    if (out.ndim() != static_cast<std::int64_t>(n->out.size()))
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but must have rank {}", out.ndim(),
                        n->out.size());
    CTSPMD_TRY(merge_operand(map, n->out, out, s, scan_merge));
  }
  push(info.inputs, in[0].dist_attr(), n->x, map);
  push(info.inputs, in[1].dist_attr(), n->index, map);
  push(info.outputs, reverse ? out.dist_attr() : in[0].dist_attr(), n->out, map);
  return {};
}

}  // namespace detail

/// The gather_nd rule (see the file comment).
struct gather_nd : rule_base<gather_nd, gather_nd_attributes> {
  static constexpr std::string_view name = "gather_nd";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};
  /// index's shape without its last dim k, then x's dims from k on.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    const auto n = detail::make_gather_nd_notation(in[0], in[1]);
    if (!n) return n.error();
    const auto& index = in[1].shape();
    const auto k = static_cast<std::size_t>(index[index.size() - 1]);
    tensor_shape& o = out.emplace_back();
    for (std::size_t d = 0; d + 1 < index.size(); ++d) o.push_back(index[d]);
    for (std::size_t d = k; d < in[0].shape().size(); ++d) o.push_back(in[0].shape()[d]);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    return detail::gather_nd_infer(info, in, in[0], false, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    return detail::gather_nd_infer(info, in, out[0], true, s);
  }
};

/// The gather_nd_grad rule (see the file comment).
struct gather_nd_grad : rule_base<gather_nd_grad, gather_nd_attributes> {
  static constexpr std::string_view name = "gather_nd_grad";
  static constexpr operand_count input_count{3};
  static constexpr operand_count output_count{1};
  /// x_grad: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    const auto n = detail::make_gather_nd_notation(in[0], in[1]);
    if (!n) return n.error();
    const auto& g = in[2];
    if (g.ndim() != static_cast<std::int64_t>(n->out.size()))
      return make_error(error_kind::invalid_argument, "", "out_grad has rank {}, but gather_nd's output has rank {}",
                        g.ndim(), n->out.size());
    // out_grad has gather_nd's output shape: index's leading sizes, then x's trailing sizes.
    const std::size_t skip = n->x.size() - (n->out.size() - n->lead);
    for (std::size_t d = 0; d < n->out.size(); ++d) {
      const auto want = d < n->lead ? in[1].shape()[d] : in[0].shape()[skip + d - n->lead];
      const auto got = g.shape()[d];
      if (got != -1 && want != -1 && got != want)
        return make_error(error_kind::invalid_argument, "",
                          "out_grad has size {} at dim {}, but gather_nd's output has {}", got, d, want);
    }
    const std::array<std::string_view, 3> labels{n->x.view(), n->index.view(), n->out.view()};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 3>(labels), in, s, detail::scan_merge));
    for (std::size_t i = 0; i < 3; ++i) push(info.inputs, in[i].dist_attr(), labels[i], map);
    // Each device adds only the slices of its index rows.
    push(info.outputs, in[0].dist_attr(), n->x, map)
        .set_partial_status(sharding_mesh_dims(map, n->out.view().substr(0, n->lead)));
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
