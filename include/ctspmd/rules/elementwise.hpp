#ifndef CTSPMD_RULES_ELEMENTWISE_HPP
#define CTSPMD_RULES_ELEMENTWISE_HPP
/// \file The elementwise rule (`add`, `multiply`, `relu`, `exp`, ...): out = f(x0, x1, ...),
/// one output, 1 to max_operands inputs under numpy broadcasting.
///
/// Notation: with R the largest input rank, an input of rank r gets the last r of the first
/// R letters of `abcdefghijklmnopqrstuvwxyz` (right alignment). With more than one input,
/// every input dim of size 1 is labelled `'1'` (a broadcast dim: never sharded). The output
/// gets the first R letters, with `'1'` where every input is broadcast (lacks the leading
/// dim or has size 1 there). A unary op has no broadcast: its size-1 dims keep their letter,
/// so its output takes the input's mapping unchanged (as Paddle's unary rule does) and no
/// reshard is ever needed. The inputs' shapes must broadcast: two known sizes at one
/// broadcast dim are equal or one of them is 1 (-1, unknown, agrees with anything).
///
/// Forward: all inputs are merged, resolving conflicts (a mesh dim proposed for two axes
/// stays on the axis that claimed it first; an axis proposed on two mesh dims is
/// `unimplemented`). The output and each input take the merged sharding of their labels:
/// an input's broadcast dims are replicated. Partial inputs: as in Paddle, partial status is
/// not propagated. The inputs come back not partial (a partial input is reduced before the
/// op: that difference is the reshard) and the output is not partial. This is right for
/// every f (relu of a partial sum is not the partial of relus), though it reshards an `add`
/// of two partial sums that could have stayed partial.
///
/// Backward (from the output): the output's rank must be R and its sizes the broadcast
/// shape. The output's mapping alone is merged; each input takes the sharding of its
/// labels (broadcast dims -1). Every letter of an input is in the output, so nothing is
/// missing. The output comes back as the inferred inputs produce it: its broadcast dims
/// replicated, not partial (forward of the inferred inputs gives exactly this output).
///
/// Under `phi`: one input is merged with the co-shard union (`merge_co_shard`: a co-shard list
/// whose shard count does not divide its dim loses its last mesh dims); several inputs with
/// phi's element-wise merge (`merge_elementwise`): the merge follows the input with the most
/// co-sharded dims, then the most shards, then the highest rank, and the others only add mesh
/// dims nobody uses yet (so `[[0], [1]]` and `[[0, 1], []]` give `[[0, 1], []]`, the co-sharded
/// input's layout). phi chooses that input with an OR of the three tests rather than in order,
/// and pads a lower-rank followed input wrongly; we compare in order and right-align by
/// broadcasting. The backward direction merges the output with the co-shard union. Partial
/// status is dropped as under `fluid`.
///
/// `cast` (attribute `dtype`) is elementwise with phi's partial handling in both semantics: a
/// partial x stays partial (cast commutes with the reduction up to rounding, as phi assumes) and
/// the output is partial alike; backward carries the output's partial status to x, so that
/// forward from backward's x gives the output back. `full_like` (attributes `value`, `dtype`)
/// reads only x's shape: x is required as it is (no merge, partial kept) and the output takes
/// x's mapping without partial status; backward gives x the output's mapping.

#include <array>
#include <cstddef>
#include <cstdint>

#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `elementwise`: none.
struct elementwise_attributes {};

/// The elementwise rule, n-ary with broadcasting.
struct elementwise : rule_base<elementwise, elementwise_attributes> {
  static constexpr std::string_view name = "elementwise";
  static constexpr operand_count input_count = operand_count::at_least(1);
  static constexpr operand_count output_count{1};

  /// The inputs' shapes broadcast (numpy rules).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    tensor_shape& shape = out.emplace_back(in[0].shape());
    for (std::size_t i = 1; i < in.size(); ++i)
      CTSPMD_TRY(broadcast_into(shape, {in[i].shape().data(), in[i].shape().size()}));
    return {};
  }

  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    const auto n = make_notation(in);
    if (!n) return n.error();
    axis_to_dim_map map;
    const auto views = n->view_list();
    const merge_policy policy = s == semantics::phi && in.size() > 1 ? merge_policy::elementwise : default_policy(s);
    CTSPMD_TRY(merge_specs(map, std::span<const std::string_view>(views.data(), views.size()), in, policy));
    for (std::size_t i = 0; i < in.size(); ++i) push(info.inputs, in[i].dist_attr(), n->inputs[i], map);
    push(info.outputs, in[0].dist_attr(), n->output, map);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    const auto n = make_notation(in);
    if (!n) return n.error();
    const auto& o = out[0];
    if (o.ndim() != static_cast<std::int64_t>(n->output.size()))
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but the inputs broadcast to rank {}",
                        o.ndim(), n->output.size());
    for (std::size_t j = 0; j < n->output.size(); ++j) {
      const auto want = n->shape[j];
      const auto got = o.shape()[j];
      if (got != -1 && want != -1 && got != want)
        return make_error(error_kind::invalid_argument, "",
                          "the output has size {} at dim {}, but the inputs broadcast to size {}", got, j, want);
    }
    // Only the output's mapping is merged: the inputs' own mappings do not count backward.
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->output, o, s));
    for (std::size_t i = 0; i < in.size(); ++i) push(info.inputs, in[i].dist_attr(), n->inputs[i], map);
    push(info.outputs, o.dist_attr(), n->output, map);
    return {};
  }

  /// The labels of an elementwise call (public: the grad and `where` rules label their operands
  /// the same way).
  struct notation {
    static_vector<axes_string, max_operands> inputs;  ///< one label string per input
    axes_string output;
    tensor_shape shape;  ///< the broadcast shape
    /// The inputs' labels as views.
    constexpr static_vector<std::string_view, max_operands> view_list() const {
      static_vector<std::string_view, max_operands> v;
      for (const auto& l : inputs) v.push_back(l.view());
      return v;
    }
  };

  /// The labels of the inputs and of the output, and the broadcast shape (see the file comment);
  /// an `invalid_argument` when the inputs' shapes do not broadcast.
  static constexpr result<notation> make_notation(spec_span in) {
    if (in.empty()) return make_error(error_kind::invalid_argument, "", "expects at least 1 input, got {}", in.size());
    std::int64_t max_ndim = 0;
    for (const auto& x : in) max_ndim = x.ndim() > max_ndim ? x.ndim() : max_ndim;
    const auto letters = try_get_broadcast_axes(max_ndim, max_ndim, alphabets::full);
    if (!letters) return letters.error();
    const auto rank = static_cast<std::size_t>(max_ndim);
    const bool broadcasting = in.size() > 1;  // a unary op never relabels its size-1 dims

    notation n;
    n.shape = tensor_shape(rank, 1);
    std::array<std::size_t, max_rank> broadcast_count{};  // per output dim: inputs broadcast there
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto& x = in[i];
      const auto right_aligned = try_get_broadcast_axes(x.ndim(), max_ndim, alphabets::full);
      if (!right_aligned) return right_aligned.error();
      axes_string axes = *right_aligned;
      const auto offset = rank - x.shape().size();
      for (std::size_t j = 0; j < offset; ++j) ++broadcast_count[j];  // a missing leading dim
      for (std::size_t d = 0; d < x.shape().size(); ++d) {
        const auto size = x.shape()[d];
        auto& b = n.shape[offset + d];
        if (b == 1 || (b == -1 && size != 1))
          b = size;
        else if (size != 1 && size != -1 && size != b)
          return make_error(error_kind::invalid_argument, "",
                            "input {} cannot be broadcast: size {} at broadcast dim {} against size {}", i, size,
                            offset + d, b);
        if (size == 1 && broadcasting) {
          ++broadcast_count[offset + d];
          axes[d] = broadcast_label;
        }
      }
      n.inputs.push_back(axes);
    }
    for (std::size_t j = 0; j < rank; ++j)
      n.output.push_back(broadcasting && broadcast_count[j] == in.size() ? broadcast_label : (*letters)[j]);
    return n;
  }
};

/// Attributes of `cast`: the target type (no effect on sharding).
struct cast_attributes {
  std::string_view dtype{};
};

/// The cast rule: elementwise, with the input's partial status kept (see the file comment).
struct cast : rule_base<cast, cast_attributes> {
  static constexpr std::string_view name = "cast";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    CTSPMD_TRY(elementwise::forward(info, in, {}, s));
    add_partial_of(info.inputs[0], in[0].dist_attr());
    add_partial_of(info.outputs[0], in[0].dist_attr());
    return {};
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    CTSPMD_TRY(elementwise::backward(info, in, out, {}, s));
    add_partial_of(info.inputs[0], out[0].dist_attr());
    add_partial_of(info.outputs[0], out[0].dist_attr());
    return {};
  }
};

/// Attributes of `full_like`: the fill value and type (no effect on sharding).
struct full_like_attributes {
  double value = 0.0;
  std::string_view dtype{};
};

/// The full_like rule: out has x's shape and layout, not its values (see the file comment).
struct full_like : rule_base<full_like, full_like_attributes> {
  static constexpr std::string_view name = "full_like";
  static constexpr cost_kind kind = cost_kind::moves;
  /// Writes its output; reads only its input's shape.
  static constexpr std::int64_t bytes(const local_operands&, const local_operands& out, const attributes&) {
    return out.total_bytes();
  }
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics) {
    info.inputs.push_back(in[0].dist_attr());
    info.outputs.emplace_back(in[0].dist_attr()).clean_partial_status();
    return {};
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics) {
    if (out[0].ndim() != in[0].ndim())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but x has rank {}", out[0].ndim(),
                        in[0].ndim());
    tensor_dist_attr& x = info.inputs.emplace_back(out[0].dist_attr());
    x.clean_partial_status();
    x.set_batch_dim(in[0].dist_attr().batch_dim());
    info.outputs.emplace_back(out[0].dist_attr()).clean_partial_status();
    return {};
  }
};

}  // namespace ctspmd::rules

#endif
