#ifndef CTSPMD_REGISTRY_GRAD_RECIPES_HPP
#define CTSPMD_REGISTRY_GRAD_RECIPES_HPP
/// \file How a training step's backward pass runs each forward operator backwards: for each
/// registered forward name, its grad operator (a registered grad rule) and where that operator's
/// operands come from, in Paddle's backward signatures (phi-semantics.md, section 7).
///
/// The operands are a text of tokens separated by spaces, the grad operator's inputs, then `>`,
/// then its outputs:
/// - `iK`: the forward operator's input K as it read it: resharded, if the forward operator
///   needed it resharded, as frameworks keep it for the backward pass (absent if the forward
///   operator was given fewer inputs, or input K was absent);
/// - `iK#`: the same, read only for its shape (and layout): the gradient does not need its values,
///   so a training step keeps nothing for it (`operator_info::shape_only`; add_grad's x and y,
///   reshape_grad's x, ...);
/// - `oK`: its output K;
/// - `gK`: the gradient of its output K (zeros, laid out as the grad rule needs, when nothing
///   downstream gives output K a gradient; absent when output K is);
/// - `g*`: the gradients of every output, in order (split's grad, concat, reads them all);
///   `i*`: every input, in order (concat's grad reads them all);
/// - after `>`, `dK`: the gradient of input K (absent where input K is); `d*` the gradients of
///   every input, in order (stack's grad gives them all); `dK=` the same as `dK`, pinned
///   to input K's layout without its partial status: an `assign` is where a plan reshards (a
///   gather, a reduce), and the gradient goes back as the reverse reshard (Megatron's pairs:
///   all-gather forward, reduce-scatter backward, and the other way round; an all-reduce of a
///   partial sum forward, nothing backward).
/// An empty grad name marks an operator no gradient flows through (its outputs are indices,
/// counts or constants; the rows are grouped by the reason at the end of the table). A forward
/// name that has no recipe yet stands in `grad_recipes_missing`, with the reason. The text is
/// parsed once per forward name, during compilation (`parsed_recipe`); a malformed one is a
/// compile error.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/registry/rules_by_name.hpp>

namespace ctspmd::model::detail {

struct grad_recipe {
  std::string_view forward, grad, operands;
};

// Unary elementwise grads read x (`i0`) or out (`o0`) as Paddle's backward ops do; their layouts
// are the same either way.
inline constexpr grad_recipe grad_recipes[] = {
    {"add", "add_grad", "i0# i1# g0 > d0 d1"},
    {"amax", "amax_grad", "i0 o0 g0 > d0"},
    {"amin", "amin_grad", "i0 o0 g0 > d0"},
    {"assign", "assign", "g0 > d0="},
    {"bmm", "bmm_grad", "i0 i1 g0 > d0 d1"},
    {"c_embedding", "c_embedding_grad", "i0# i1 g0 > d0"},
    {"c_softmax_with_cross_entropy", "c_softmax_with_cross_entropy_grad", "o0 i1 g1 > d0"},
    {"cast", "cast", "g0 > d0"},
    {"concat", "concat_grad", "i*# g0 > d*"},
    {"cos", "cos_grad", "i0 g0 > d0"},
    {"cross_entropy_with_softmax", "cross_entropy_with_softmax_grad", "i1 o0 g1 > d0"},
    {"cumsum", "cumsum_grad", "i0# g0 > d0"},
    {"divide", "divide_grad", "i0 i1 g0 > d0 d1"},
    {"dropout", "dropout_grad", "o1 g0 > d0"},
    {"elementwise_pow", "elementwise_pow_grad", "i0 i1 g0 > d0 d1"},
    {"embedding", "embedding_grad", "i0 i1# g0 > d1"},
    {"exp", "exp_grad", "o0 g0 > d0"},
    {"expand_as", "expand_as_grad", "i0# g0 > d0"},  // y is read for its shape only
    {"flash_attention", "flash_attention_grad", "i0 i1 i2 o0 o2 o3 i4 g0 > d0 d1 d2"},
    {"flatten", "flatten_grad", "i0# g0 > d0"},
    {"fused_dropout_add", "fused_dropout_add_grad", "o1 g0 > d0 d1"},
    {"fused_rms_norm", "rms_norm_grad", "i0 i1 o1 g0 > d0 d1"},
    {"fused_rope", "fused_rope_grad", "i3 i4 i5 g0 g1 g2 > d0 d1 d2"},
    {"fused_rotary_position_embedding", "fused_rope_grad", "i3 i4 i5 g0 g1 g2 > d0 d1 d2"},
    {"gather", "gather_grad", "i0# i1 g0 > d0"},
    {"gather_nd", "gather_nd_grad", "i0# i1 g0 > d0"},
    {"gelu", "gelu_grad", "i0 g0 > d0"},
    {"index_select", "index_select_grad", "i0# i1 g0 > d0"},
    {"layer_norm", "layer_norm_grad", "i0 i1 i2 o1 o2 g0 > d0 d1 d2"},
    {"log", "log_grad", "i0 g0 > d0"},
    {"log_softmax", "log_softmax_grad", "o0 g0 > d0"},
    {"logsumexp", "logsumexp_grad", "i0 o0 g0 > d0"},
    {"lookup_table_v2", "embedding_grad", "i0 i1# g0 > d1"},
    {"matmul", "matmul_grad", "i0 i1 g0 > d0 d1"},
    {"matmul_v2", "matmul_grad", "i0 i1 g0 > d0 d1"},
    {"max", "max_grad", "i0 o0 g0 > d0"},
    {"maximum", "maximum_grad", "i0 i1 g0 > d0 d1"},
    {"mean", "mean_grad", "i0# g0 > d0"},
    {"min", "min_grad", "i0 o0 g0 > d0"},
    {"minimum", "minimum_grad", "i0 i1 g0 > d0 d1"},
    {"moe_combine", "moe_combine_grad", "i0 i1 i2 g0 > d0 d1 d2"},
    {"moe_gate_dispatch", "moe_gate_dispatch_grad", "o1 o2 o4 g0 g1 > d0 d1"},
    {"multiply", "multiply_grad", "i0 i1 g0 > d0 d1"},
    {"p_norm", "p_norm_grad", "i0 o0 g0 > d0"},
    {"pad", "pad_grad", "g0 > d0"},
    {"pow", "pow_grad", "i0 g0 > d0"},
    {"prod", "prod_grad", "i0 o0 g0 > d0"},
    {"relu", "relu_grad", "o0 g0 > d0"},
    {"reshape", "reshape_grad", "i0# g0 > d0"},
    {"reshape2", "reshape_grad", "i0# g0 > d0"},
    {"rms_norm", "rms_norm_grad", "i0 i1 o1 g0 > d0 d1"},
    {"rsqrt", "rsqrt_grad", "o0 g0 > d0"},
    {"scale", "scale", "g0 > d0"},
    {"scatter", "scatter_grad", "i1 i2# g0 > d0 d2"},
    {"sigmoid", "sigmoid_grad", "o0 g0 > d0"},
    {"silu", "silu_grad", "i0 g0 > d0"},
    {"sin", "sin_grad", "i0 g0 > d0"},
    {"slice", "slice_grad", "i0# g0 > d0"},
    {"softmax", "softmax_grad", "o0 g0 > d0"},
    {"softmax_with_cross_entropy", "cross_entropy_with_softmax_grad", "i1 o0 g1 > d0"},
    {"split", "concat", "g* > d0"},
    {"split_with_num", "concat", "g* > d0"},
    {"sqrt", "sqrt_grad", "o0 g0 > d0"},
    {"square", "square_grad", "i0 g0 > d0"},
    {"squeeze", "squeeze_grad", "i0# g0 > d0"},
    {"stack", "stack_grad", "g0 > d*"},
    {"strided_slice", "strided_slice_grad", "i0# g0 > d0"},
    {"subtract", "subtract_grad", "i0# i1# g0 > d0 d1"},
    {"sum", "sum_grad", "i0# g0 > d0"},
    {"swiglu", "swiglu_grad", "i0 i1 g0 > d0 d1"},
    {"tanh", "tanh_grad", "o0 g0 > d0"},
    {"tile", "tile_grad", "i0# g0 > d0"},
    {"topk", "topk_grad", "i0# o1 g0 > d0"},
    {"transpose", "transpose_grad", "g0 > d0"},
    {"transpose2", "transpose_grad", "g0 > d0"},
    {"tril_triu", "triu_grad", "g0 > d0"},
    {"triu", "triu_grad", "g0 > d0"},
    {"unbind", "unbind_grad", "g* > d0"},
    {"unsqueeze", "unsqueeze_grad", "i0# g0 > d0"},
    {"unsqueeze2", "unsqueeze_grad", "i0# g0 > d0"},
    {"where", "where_grad", "i0 i1# i2# g0 > d1 d2"},

    // Elementwise functions through the generic elementwise grad rules (elementwise_unary_grad,
    // elementwise_binary_grad), under Paddle's grad names and reading what Paddle's grad op reads
    // (a copy and conj through themselves).
    {"acos", "acos_grad", "i0 g0 > d0"},
    {"acosh", "acosh_grad", "i0 g0 > d0"},
    {"asin", "asin_grad", "i0 g0 > d0"},
    {"asinh", "asinh_grad", "i0 g0 > d0"},
    {"assign_out_", "assign_out_", "g0 > d0"},  // a copy: out_grad copied back
    {"atan", "atan_grad", "i0 g0 > d0"},
    {"atanh", "atanh_grad", "i0 g0 > d0"},
    {"celu", "celu_grad", "i0 g0 > d0"},
    {"clip", "clip_grad", "i0 g0 > d0"},
    {"conj", "conj", "g0 > d0"},  // the conjugate of out_grad
    {"cosh", "cosh_grad", "i0 g0 > d0"},
    {"digamma", "digamma_grad", "i0 g0 > d0"},
    {"elu", "elu_grad", "i0 o0 g0 > d0"},
    {"erf", "erf_grad", "i0 g0 > d0"},
    {"erfinv", "erfinv_grad", "o0 g0 > d0"},
    {"expm1", "expm1_grad", "o0 g0 > d0"},
    {"fmax", "fmax_grad", "i0 i1 g0 > d0 d1"},
    {"fmin", "fmin_grad", "i0 i1 g0 > d0 d1"},
    {"hardshrink", "hardshrink_grad", "i0 g0 > d0"},
    {"hardsigmoid", "hardsigmoid_grad", "o0 g0 > d0"},
    {"hardswish", "hardswish_grad", "i0 g0 > d0"},
    {"hardtanh", "hardtanh_grad", "i0 g0 > d0"},
    {"heaviside", "heaviside_grad", "i0 i1 g0 > d0 d1"},
    {"label_smooth", "label_smooth_grad", "i0# g0 > d0"},  // out_grad scaled: x for its shape only
    {"leaky_relu", "leaky_relu_grad", "i0 g0 > d0"},
    {"lgamma", "lgamma_grad", "i0 g0 > d0"},
    {"log10", "log10_grad", "i0 g0 > d0"},
    {"log1p", "log1p_grad", "i0 g0 > d0"},
    {"log2", "log2_grad", "i0 g0 > d0"},
    {"logit", "logit_grad", "i0 g0 > d0"},
    {"logsigmoid", "logsigmoid_grad", "i0 g0 > d0"},
    {"mish", "mish_grad", "i0 g0 > d0"},
    {"reciprocal", "reciprocal_grad", "o0 g0 > d0"},
    {"relu6", "relu6_grad", "o0 g0 > d0"},
    {"selu", "selu_grad", "o0 g0 > d0"},
    {"sinh", "sinh_grad", "i0 g0 > d0"},
    {"softplus", "softplus_grad", "i0 g0 > d0"},
    {"softshrink", "softshrink_grad", "i0 g0 > d0"},
    {"softsign", "softsign_grad", "i0 g0 > d0"},
    {"stanh", "stanh_grad", "i0 g0 > d0"},
    {"swish", "swish_grad", "i0 g0 > d0"},
    {"tan", "tan_grad", "i0 g0 > d0"},
    {"tanh_shrink", "tanh_shrink_grad", "i0 g0 > d0"},
    {"thresholded_relu", "thresholded_relu_grad", "i0 g0 > d0"},

    // No gradient flows through these (an empty grad name):
    // - their outputs are integers or booleans: indices, counts, comparisons, logic, bits;
    {"all", "", ""},
    {"any", "", ""},
    {"argmax", "", ""},
    {"argmin", "", ""},
    {"bitwise_and", "", ""},
    {"bitwise_not", "", ""},
    {"bitwise_or", "", ""},
    {"bitwise_xor", "", ""},
    {"equal", "", ""},
    {"floor_divide", "", ""},
    {"greater_equal", "", ""},
    {"greater_than", "", ""},
    {"less_equal", "", ""},
    {"less_than", "", ""},
    {"logical_and", "", ""},
    {"logical_not", "", ""},
    {"logical_or", "", ""},
    {"logical_xor", "", ""},
    {"not_equal", "", ""},
    {"numel", "", ""},
    {"one_hot", "", ""},
    // - piecewise constant: their gradient is zero wherever it exists;
    {"ceil", "", ""},
    {"floor", "", ""},
    {"round", "", ""},
    {"sign", "", ""},
    {"trunc", "", ""},
    // - their values do not depend on their inputs' values: constants and random samples;
    {"bernoulli", "", ""},
    {"exponential_", "", ""},
    {"fill", "", ""},
    {"full_like", "", ""},
    {"poisson", "", ""},
    // - they are not on the way to the loss: optimizer updates, and a backward-pass operator.
    {"adam", "", ""},
    {"adamw", "", ""},
    {"fused_linear_param_grad_add", "", ""},
    {"sgd", "", ""},
};
inline constexpr std::size_t grad_recipe_count = sizeof grad_recipes / sizeof *grad_recipes;

/// A registered forward name without a recipe, and why: a training step through it fails ("has
/// no grad recipe"), as through any name without one. Every registered forward name has a recipe
/// or stands here (static_tests/registry/grad_recipes_test.cpp checks it), so that a new rule's
/// gradient is decided when it is registered.
struct missing_grad_recipe {
  std::string_view forward, why;
};
inline constexpr missing_grad_recipe grad_recipes_missing[] = {
    {"add_n", "grad rule not yet written (each input's gradient is out_grad)"},
    {"default_data_parallel", "a fallback rule: the operator it stands for decides its gradient"},
    {"det", "grad rule not yet written"},
    {"einsum", "grad rule not yet written"},
    {"frobenius_norm", "grad rule not yet written"},
    {"remainder", "grad rule not yet written (Paddle names no grad operator for it)"},
    {"replicated", "a fallback rule: the operator it stands for decides its gradient"},
    {"squared_l2_norm", "grad rule not yet written"},
};

/// One operand of a recipe: `kind` is 'i', 'o', 'g' or '-' (inputs) or 'd' (outputs); `index`
/// is K, or `all` for `*`; `pinned` marks `dK=`, `shape_only` `iK#`.
struct recipe_operand {
  static constexpr std::uint8_t all = 0xff;
  char kind = '-';
  std::uint8_t index = 0;
  bool pinned = false;
  bool shape_only = false;
};

/// A recipe's operand text, parsed.
struct parsed_recipe {
  static_vector<recipe_operand, max_operands> inputs{}, outputs{};
  /// Whether the grad operator reads the gradient of forward output j (`gj` or `g*`).
  constexpr bool reads_gradient(std::size_t j) const noexcept {
    for (const auto& o : inputs)
      if (o.kind == 'g' && (o.index == recipe_operand::all || o.index == j)) return true;
    return false;
  }
};

/// Parses a recipe's operand text (see the file comment).
constexpr parsed_recipe parse_recipe(std::string_view text) {
  parsed_recipe r;
  bool outputs = false;
  for (std::size_t at = 0; at < text.size();) {
    const char c = text[at++];
    if (c == ' ') continue;
    const auto bad = [&] {
      return make_error(error_kind::invalid_argument, "grad recipe", "malformed operand at character {}", at - 1);
    };
    if (c == '>') {
      if (outputs) raise(bad());
      outputs = true;
      continue;
    }
    recipe_operand o{c};
    if (outputs ? c != 'd' : (c != 'i' && c != 'o' && c != 'g' && c != '-')) raise(bad());
    if (c != '-') {
      if (at < text.size() && text[at] == '*' && c != 'o') {
        o.index = recipe_operand::all;
        ++at;
      } else {
        if (at == text.size() || text[at] < '0' || text[at] > '9') raise(bad());
        std::size_t n = 0;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') n = n * 10 + static_cast<std::size_t>(text[at++] - '0');
        if (n >= max_operands) raise(bad());
        o.index = static_cast<std::uint8_t>(n);
      }
      if (c == 'd' && at < text.size() && text[at] == '=') {
        o.pinned = true;
        ++at;
      }
      if (c == 'i' && at < text.size() && text[at] == '#') {
        o.shape_only = true;
        ++at;
      }
    }
    (outputs ? r.outputs : r.inputs).push_back(o);
  }
  return r;
}

/// The recipe of forward operator `name`, or grad_recipe_count.
constexpr std::size_t find_grad_recipe(std::string_view name) {
  std::size_t i = 0;
  while (i < grad_recipe_count && grad_recipes[i].forward != name) ++i;
  return i;
}

constexpr bool recipes_name_registered_rules() {
  for (const auto& r : grad_recipes)
    if (rules::registry_find(r.forward) == rules::registry.size() ||
        (!r.grad.empty() && rules::registry_find(r.grad) == rules::registry.size()))
      return false;
  return true;
}
static_assert(recipes_name_registered_rules(), "a grad recipe names an operator the registry does not have");

constexpr bool recipes_parse() {
  for (const auto& r : grad_recipes) parse_recipe(r.operands);
  return true;
}
static_assert(recipes_parse());


}  // namespace ctspmd::model::detail

#endif
