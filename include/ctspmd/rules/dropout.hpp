#ifndef CTSPMD_RULES_DROPOUT_HPP
#define CTSPMD_RULES_DROPOUT_HPP
/// \file The dropout rules (phi): `dropout`, `dropout_grad`, `fused_dropout_add`,
/// `fused_dropout_add_grad`.
///
/// `dropout(x, seed_tensor)` gives out and mask (x's shape). seed_tensor is optional and must be
/// absent (shape `[]`, dims mapping `[]`; it comes back as given): phi's rule refuses one
/// (`invalid_argument` here, naming its rank). Forward is the unary elementwise rule: x's layout
/// kept (merged alone), out and mask take it, partial dropped (a mask drawn per device does not
/// commute with a pending sum). Backward: out's and mask's mappings are merged (fluid: first-wins,
/// phi: the co-shard union); x, out and mask take the result.
///
/// `dropout_grad(mask, out_grad)` gives x_grad = out_grad * mask (scaled): the binary elementwise
/// grad of elementwise_grad.hpp: mask and x_grad follow out_grad, whose partial status is cleaned
/// (phi runs the binary forward rule on mask and out_grad, which merges the two; following
/// out_grad instead never reshards the gradient, and mask, a forward tensor, is the one moved).
///
/// `fused_dropout_add(x, y, seed_tensor)` gives out = dropout(x) + y and seed_offset (shape [2],
/// replicated). x and y must have one shape (Paddle's kernel requires it); seed_tensor must be
/// absent as above. Forward is the binary elementwise rule: x and y merged, the output takes the
/// merge. phi returns x and y **unmerged** (as given) while out is merged, so an x and a y that
/// disagree would be added block by mismatched block; we return the merged layout for both (the
/// reshard that makes the local sum right). Backward: out's mapping gives x, y and out;
/// seed_offset is replicated.
///
/// `fused_dropout_add_grad(seed_offset, out_grad)` gives x_grad and y_grad, both with out_grad's
/// mapping (no partial status: out_grad's is cleaned); seed_offset is replicated.
///
/// The attributes (`p`, `is_test`, `mode`, `seed`, `fix_seed`) do not affect sharding. These
/// rules exist only in phi and behave the same under both semantics except for the merge policy.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/rules/elementwise.hpp>
#include <ctspmd/rules/elementwise_grad.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of the dropout rules (Paddle's defaults).
struct dropout_attributes {
  double p = 0.5;                              ///< the drop probability
  bool is_test = false;                        ///< inference: nothing is dropped
  std::string_view mode = "upscale_in_train";  ///< or "downscale_in_infer"
  std::int64_t seed = 0;                       ///< the random seed
  bool fix_seed = false;                       ///< use `seed`
};

namespace detail {
/// Checks that the optional seed tensor at `in[i]` is absent.
constexpr status check_no_seed_tensor(spec_span in, std::size_t i) {
  if (in.size() > i && !is_absent(in[i]))
    return make_error(error_kind::invalid_argument, "",
                      "seed_tensor must be absent (shape [], dims mapping []), but it has rank {}", in[i].ndim());
  return {};
}
/// A replicated 1-D attr on `like`'s mesh (seed_offset).
constexpr tensor_dist_attr replicated_1d(const tensor_dist_attr& like) {
  return tensor_dist_attr(like.process_mesh(), dims_mapping{-1});
}
}  // namespace detail

/// The dropout rule (see the file comment): inputs x, seed_tensor (optional, absent); outputs
/// out, mask.
struct dropout : rule_base<dropout, dropout_attributes> {
  static constexpr std::string_view name = "dropout";
  static constexpr operand_count input_count{1, 2};
  static constexpr operand_count output_count{2};

  /// out and mask: x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    CTSPMD_TRY(detail::check_no_seed_tensor(in, 1));
    return shapes_of(out, in, {0, 0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    CTSPMD_TRY(detail::check_no_seed_tensor(in, 1));
    CTSPMD_TRY(elementwise::forward(info, in.first(1), {}, s));
    info.outputs.push_back(info.outputs[0]);  // mask = out
    if (in.size() == 2) info.inputs.push_back(in[1].dist_attr());
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    CTSPMD_TRY(detail::check_no_seed_tensor(in, 1));
    const auto& x = in[0];
    const auto letters = first_letters(x.ndim());
    if (!letters) return letters.error();
    for (std::size_t o = 0; o < 2; ++o) {
      if (out[o].ndim() != x.ndim())
        return make_error(error_kind::invalid_argument, "", "output {} has rank {}, but x has rank {}", o, out[o].ndim(),
                          x.ndim());
      for (std::size_t d = 0; d < x.shape().size(); ++d)
        if (out[o].shape()[d] != -1 && x.shape()[d] != -1 && out[o].shape()[d] != x.shape()[d])
          return make_error(error_kind::invalid_argument, "", "output {} has size {} at dim {}, but x has size {}", o,
                            out[o].shape()[d], d, x.shape()[d]);
    }
    // Only the outputs' mappings are merged: x's own mapping does not count backward.
    const std::array<std::string_view, 2> labels{*letters, *letters};
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, 2>(labels), out, s));
    push(info.inputs, x.dist_attr(), *letters, map);
    if (in.size() == 2) info.inputs.push_back(in[1].dist_attr());
    push(info.outputs, out[0].dist_attr(), *letters, map);
    push(info.outputs, out[1].dist_attr(), *letters, map);
    return {};
  }
};

/// The dropout grad rule: inputs mask, out_grad; output x_grad (see the file comment).
struct dropout_grad : rule_base<dropout_grad, dropout_attributes> {
  static constexpr std::string_view name = "dropout_grad";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{1};

  /// x_grad: out_grad's shape (x's).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {1});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics) {
    CTSPMD_TRY(detail::check_same_shape_as_grad(in[0], 0, in[1]));
    return detail::broadcast_grad(info, in, 0, 1);
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

/// The fused_dropout_add rule: inputs x, y, seed_tensor (optional, absent); outputs out,
/// seed_offset (see the file comment).
struct fused_dropout_add : rule_base<fused_dropout_add, dropout_attributes> {
  static constexpr std::string_view name = "fused_dropout_add";
  static constexpr operand_count input_count{2, 3};
  static constexpr operand_count output_count{2};

  /// out: x's shape (y's); seed_offset: [2].
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    CTSPMD_TRY(check_inputs(in));
    CTSPMD_TRY(shapes_of(out, in, {0}));
    out.emplace_back().push_back(2);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    CTSPMD_TRY(check_inputs(in));
    CTSPMD_TRY(elementwise::forward(info, in.first(2), {}, s));
    if (in.size() == 3) info.inputs.push_back(in[2].dist_attr());
    info.outputs.push_back(detail::replicated_1d(in[0].dist_attr()));
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    CTSPMD_TRY(check_inputs(in));
    if (out[1].ndim() != 1)
      return make_error(error_kind::invalid_argument, "", "seed_offset must be 1-D, but has rank {}", out[1].ndim());
    CTSPMD_TRY(elementwise::backward(info, in.first(2), out.first(1), {}, s));
    if (in.size() == 3) info.inputs.push_back(in[2].dist_attr());
    info.outputs.push_back(detail::replicated_1d(out[1].dist_attr()));
    return {};
  }

 private:
  static constexpr status check_inputs(spec_span in) {
    CTSPMD_TRY(detail::check_no_seed_tensor(in, 2));
    if (in[1].ndim() != in[0].ndim())
      return make_error(error_kind::invalid_argument, "", "y has rank {}, but x has rank {} (they must have one shape)",
                        in[1].ndim(), in[0].ndim());
    for (std::size_t d = 0; d < in[0].shape().size(); ++d) {
      const std::int64_t a = in[0].shape()[d], b = in[1].shape()[d];
      if (a != -1 && b != -1 && a != b)
        return make_error(error_kind::invalid_argument, "", "y has size {} at dim {}, but x has size {}", b, d, a);
    }
    return {};
  }
};

/// The fused_dropout_add grad rule: inputs seed_offset, out_grad; outputs x_grad, y_grad.
struct fused_dropout_add_grad : rule_base<fused_dropout_add_grad, dropout_attributes> {
  static constexpr std::string_view name = "fused_dropout_add_grad";
  static constexpr operand_count input_count{2};
  static constexpr operand_count output_count{2};

  /// x_grad and y_grad: out_grad's shape (x's and y's: fused_dropout_add does not broadcast).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {1, 1});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics) {
    if (in[0].ndim() != 1)
      return make_error(error_kind::invalid_argument, "", "seed_offset must be 1-D, but has rank {}", in[0].ndim());
    const tensor_dist_attr g = detail::without_partial(in[1].dist_attr());
    info.inputs.push_back(detail::replicated_1d(in[0].dist_attr()));
    info.inputs.push_back(g);
    info.outputs.push_back(g);
    info.outputs.push_back(g);
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
