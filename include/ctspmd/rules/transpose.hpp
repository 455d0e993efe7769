#ifndef CTSPMD_RULES_TRANSPOSE_HPP
#define CTSPMD_RULES_TRANSPOSE_HPP
/// \file The transpose rule (`transpose`): out = x with its dims permuted, out dim i being
/// x dim perm[i]; and its gradient (`transpose_grad`, phi, called forward: below).
///
/// Notation: x gets the first rank(x) letters of `abcdefghijklmnopqrstuvwxyz`, the output
/// x's letters permuted: out[i] = x[perm[i]]. `perm` must be a permutation of x's dims: one
/// entry per dim, each in [-rank, rank) (a negative entry counts from the end), none twice.
///
/// Forward: x's mapping is merged (one valid tensor: no conflict can arise, so x comes back
/// with its own mapping) and the output takes it permuted. Partial inputs: as in Paddle,
/// partial status is not propagated (x comes back not partial, reduced before the op; the
/// output is not partial), although transpose is linear and could carry it.
///
/// Under `phi`: a co-shard list moves with its dim, and a partial x stays partial and the
/// output is partial alike (phi's transpose carries partial status forward: a transpose moves
/// elements without combining them). Backward infers no partial status, as under `fluid`.
///
/// Backward (from the output): the output's rank and sizes must be x's permuted. The
/// output's mapping alone is merged; x takes it un-permuted, every letter being in the
/// output. The output comes back as the inferred x produces it: same mapping, not partial.
///
/// transpose_grad (phi, called forward): input out_grad (the forward output's gradient, of
/// rank perm's size), attribute `perm` (the forward's); output x_grad = out_grad transposed
/// back: x_grad dim perm[i] takes out_grad dim i's mesh dims (a co-shard list as a whole), as
/// phi's TransposeGradInferSpmd does. out_grad comes back with its own mapping. A transpose
/// moves elements without combining them, so it commutes with every reduce type: a partial
/// out_grad stays partial and x_grad takes its partial status (phi clears both; we keep it, as
/// phi's transpose forward does). No reverse inference; both semantics behave the same.

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

/// Attributes of `transpose`.
struct transpose_attributes {
  static_vector<std::int64_t, max_rank> perm;  ///< out dim i is x dim perm[i]; negative counts from the end
};

/// The transpose rule.
struct transpose : rule_base<transpose, transpose_attributes> {
  static constexpr std::string_view name = "transpose";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's dims in the order of `perm` (out dim i is x dim perm[i]).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = make_notation(in[0].ndim(), attrs.perm);
    if (!n) return n.error();
    tensor_shape& o = out.emplace_back();
    for (const auto d : n->perm) o.push_back(in[0].shape()[d]);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto n = make_notation(x.ndim(), attrs.perm);
    if (!n) return n.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->input, x, s));
    tensor_dist_attr& required = push(info.inputs, x.dist_attr(), n->input, map);
    tensor_dist_attr& out = push(info.outputs, x.dist_attr(), n->output, map);
    if (s == semantics::phi) {  // a transpose moves elements: partial parts stay parts
      add_partial_of(required, x.dist_attr());
      add_partial_of(out, x.dist_attr());
    }
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto& x = in[0];
    const auto& o = out[0];
    const auto n = make_notation(x.ndim(), attrs.perm);
    if (!n) return n.error();
    if (o.ndim() != x.ndim())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but x has rank {}", o.ndim(),
                        x.ndim());
    for (std::size_t i = 0; i < n->perm.size(); ++i) {
      const auto want = x.shape()[n->perm[i]];
      const auto got = o.shape()[i];
      if (got != -1 && want != -1 && got != want)
        return make_error(error_kind::invalid_argument, "",
                          "output dim {} has size {}, but x dim {} (perm) has size {}", i, got, n->perm[i], want);
    }
    // Only the output's mapping is merged: x's own mapping does not count backward.
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->output, o, s));
    push(info.inputs, x.dist_attr(), n->input, map);
    push(info.outputs, o.dist_attr(), n->output, map);
    return {};
  }

  /// The labels of x and of the output for `perm`.
  struct notation {
    axes_string input;
    axes_string output;
    static_vector<std::size_t, max_rank> perm;  ///< normalised: out dim i is x dim perm[i]
  };

  /// x's labels and the output's; `perm` checked to be a permutation of x's dims.
  static constexpr result<notation> make_notation(std::int64_t rank,
                                                  const static_vector<std::int64_t, max_rank>& perm) {
    if (static_cast<std::int64_t>(perm.size()) != rank)
      return make_error(error_kind::invalid_argument, "", "perm has {} entries, but x has rank {}", perm.size(), rank);
    const auto letters = first_letters(rank);
    if (!letters) return letters.error();
    notation n;
    n.input = *letters;
    std::array<bool, max_rank> seen{};
    for (std::size_t i = 0; i < perm.size(); ++i) {
      const auto p = perm[i];
      if (p < -rank || p >= rank)
        return make_error(error_kind::invalid_argument, "", "perm entry {} (position {}) is outside [-{}, {})", p, i,
                          rank, rank);
      const auto d = static_cast<std::size_t>(p < 0 ? p + rank : p);
      if (seen[d])
        return make_error(error_kind::invalid_argument, "", "perm entry {} (position {}) repeats x dim {}", p, i, d);
      seen[d] = true;
      n.perm.push_back(d);
      n.output.push_back(n.input[d]);
    }
    return n;
  }
};

/// The gradient rule of transpose: input out_grad; output x_grad (see the file comment).
struct transpose_grad : rule_base<transpose_grad, transpose_attributes> {
  static constexpr std::string_view name = "transpose_grad";
  static constexpr cost_kind kind = cost_kind::moves;
  static constexpr operand_count input_count{1};   // out_grad
  static constexpr operand_count output_count{1};  // x_grad

  /// x's shape: out_grad's dims put back (x dim perm[i] is out_grad dim i).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto n = transpose::make_notation(in[0].ndim(), attrs.perm);
    if (!n) return n.error();
    tensor_shape& o = out.emplace_back(in[0].shape());
    for (std::size_t i = 0; i < n->perm.size(); ++i) o[n->perm[i]] = in[0].shape()[i];
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto& g = in[0];
    const auto n = transpose::make_notation(g.ndim(), attrs.perm);
    if (!n) return n.error();
    axis_to_dim_map map;
    CTSPMD_TRY(merge_operand(map, n->output, g, s));
    add_partial_of(push(info.inputs, g.dist_attr(), n->output, map), g.dist_attr());
    add_partial_of(push(info.outputs, g.dist_attr(), n->input, map), g.dist_attr());  // x_grad
    return {};
  }
  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
