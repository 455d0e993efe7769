#include <ctspmd/registry/rules_by_name.hpp>

#include <type_traits>

using namespace ctspmd;

// ---- compile-time lookup by every registered name -----------------------------------------
static_assert(std::is_same_v<rules::rule_for<"embedding">, rules::embedding>);
static_assert(std::is_same_v<rules::rule_for<"lookup_table_v2">, rules::embedding>);
static_assert(rules::has_rule<"embedding"> && rules::has_rule<"lookup_table_v2">);
static_assert(!rules::has_rule<"embeding"> && !rules::has_rule<"">);
static_assert(std::is_same_v<rules::rule_for<"matmul">, rules::matmul>);
static_assert(std::is_same_v<rules::rule_for<"einsum">, rules::dynamic_einsum>);
// Every entry is found under its own name (the count is the registry's, not typed here).
static_assert([] {
  for (std::size_t i = 0; i < rules::registry.size(); ++i)
    if (rules::registry_find(rules::registry[i].name) != i) return false;
  return rules::registry.size() > 200;
}());
static_assert(rules::registry_find("matmul") < rules::registry.size() && rules::registry_find("matmull") == rules::registry.size());

// Every Paddle name of the reference's rule list (and "einsum"), each to its rule.
static_assert(std::is_same_v<rules::rule_for<"acos">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"acosh">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"add">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"all">, rules::reduction_with<reduce_type::all>>);
static_assert(std::is_same_v<rules::rule_for<"amax">, rules::reduction_with<reduce_type::max>>);
static_assert(std::is_same_v<rules::rule_for<"amin">, rules::reduction_with<reduce_type::min>>);
static_assert(std::is_same_v<rules::rule_for<"any">, rules::reduction_with<reduce_type::any>>);
static_assert(std::is_same_v<rules::rule_for<"asin">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"asinh">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"assign">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"assign_out_">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"atan">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"atanh">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"bernoulli">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"bitwise_and">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"bitwise_not">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"bitwise_or">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"bitwise_xor">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"ceil">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"celu">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"clip">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"concat">, rules::concat>);
static_assert(std::is_same_v<rules::rule_for<"conj">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"cos">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"cosh">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"cross_entropy_with_softmax">, rules::cross_entropy_with_softmax>);
static_assert(std::is_same_v<rules::rule_for<"det">, rules::det>);
static_assert(std::is_same_v<rules::rule_for<"digamma">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"divide">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"einsum">, rules::dynamic_einsum>);
static_assert(std::is_same_v<rules::rule_for<"elementwise_pow">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"elu">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"embedding">, rules::embedding>);
static_assert(std::is_same_v<rules::rule_for<"erf">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"erfinv">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"exp">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"expm1">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"exponential_">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"fill">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"floor">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"floor_divide">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"fmax">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"fmin">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"frobenius_norm">, rules::frobenius_norm>);
static_assert(std::is_same_v<rules::rule_for<"gelu">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"hardshrink">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"hardsigmoid">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"hardswish">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"hardtanh">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"heaviside">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"label_smooth">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"layer_norm">, rules::layer_norm>);
static_assert(std::is_same_v<rules::rule_for<"leaky_relu">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"lgamma">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"log">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"log10">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"log1p">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"log2">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"log_softmax">, rules::softmax>);
static_assert(std::is_same_v<rules::rule_for<"logical_and">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"logical_not">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"logical_or">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"logical_xor">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"logit">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"logsigmoid">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"lookup_table_v2">, rules::embedding>);
static_assert(std::is_same_v<rules::rule_for<"matmul">, rules::matmul>);
static_assert(std::is_same_v<rules::rule_for<"max">, rules::reduction_with<reduce_type::max>>);
static_assert(std::is_same_v<rules::rule_for<"maximum">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"mean">, rules::reduction_with<reduce_type::avg>>);
static_assert(std::is_same_v<rules::rule_for<"min">, rules::reduction_with<reduce_type::min>>);
static_assert(std::is_same_v<rules::rule_for<"minimum">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"mish">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"multiply">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"poisson">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"pow">, rules::power>);
static_assert(std::is_same_v<rules::rule_for<"prod">, rules::reduction_with<reduce_type::prod>>);
static_assert(std::is_same_v<rules::rule_for<"reciprocal">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"relu">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"relu6">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"remainder">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"replicated">, rules::replicated>);
static_assert(std::is_same_v<rules::rule_for<"reshape">, rules::reshape>);
static_assert(std::is_same_v<rules::rule_for<"round">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"rsqrt">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"scale">, rules::scale>);
static_assert(std::is_same_v<rules::rule_for<"selu">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"sigmoid">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"sign">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"silu">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"sin">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"sinh">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"softmax">, rules::softmax>);
static_assert(std::is_same_v<rules::rule_for<"softmax_with_cross_entropy">, rules::cross_entropy_with_softmax>);
static_assert(std::is_same_v<rules::rule_for<"softplus">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"softshrink">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"softsign">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"split">, rules::split>);
static_assert(std::is_same_v<rules::rule_for<"split_with_num">, rules::split>);
static_assert(std::is_same_v<rules::rule_for<"sqrt">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"square">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"stanh">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"subtract">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"sum">, rules::reduction>);
static_assert(std::is_same_v<rules::rule_for<"swish">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"tan">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"tanh">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"tanh_shrink">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"thresholded_relu">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"transpose">, rules::transpose>);
static_assert(std::is_same_v<rules::rule_for<"trunc">, rules::elementwise>);

// ---- a looked-up rule is callable -------------------------------------------------------------
constexpr process_mesh mesh({4});
static_assert(rules::rule_for<"lookup_table_v2">::infer_forward(
                  {dist_tensor_spec({8}, {mesh, {0}}), dist_tensor_spec({100, 8}, {mesh, {-1, -1}})})
                  .outputs[0]
                  .dims_mapping() == dims_mapping{0, -1});

// Names added with phi's rule set (the comparisons, second names, the new rules).
static_assert(std::is_same_v<rules::rule_for<"equal">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"not_equal">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"greater_than">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"greater_equal">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"less_than">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"less_equal">, rules::elementwise>);
static_assert(std::is_same_v<rules::rule_for<"matmul_v2">, rules::matmul>);
static_assert(std::is_same_v<rules::rule_for<"reshape2">, rules::reshape>);
static_assert(std::is_same_v<rules::rule_for<"transpose2">, rules::transpose>);
static_assert(std::is_same_v<rules::rule_for<"squared_l2_norm">, rules::reduction>);
static_assert(std::is_same_v<rules::rule_for<"bmm">, rules::bmm>);
static_assert(std::is_same_v<rules::rule_for<"cast">, rules::cast>);
static_assert(std::is_same_v<rules::rule_for<"full_like">, rules::full_like>);
static_assert(std::is_same_v<rules::rule_for<"flatten">, rules::flatten>);
static_assert(std::is_same_v<rules::rule_for<"stack">, rules::stack>);

// Every registered rule satisfies the contract.
static_assert(SpmdRule<rules::matmul> && SpmdRule<rules::stack> && SpmdRule<rules::einsum<"ij->j">>);

// Optimizers, data parallel, MoE, scans and selections.
static_assert(std::is_same_v<rules::rule_for<"adam">, rules::adam>);
static_assert(std::is_same_v<rules::rule_for<"adamw">, rules::adamw>);
static_assert(std::is_same_v<rules::rule_for<"sgd">, rules::sgd>);
static_assert(std::is_same_v<rules::rule_for<"default_data_parallel">, rules::default_data_parallel>);
static_assert(std::is_same_v<rules::rule_for<"moe_combine">, rules::moe_combine>);
static_assert(std::is_same_v<rules::rule_for<"moe_combine_grad">, rules::moe_combine_grad>);
static_assert(std::is_same_v<rules::rule_for<"moe_gate_dispatch">, rules::moe_gate_dispatch>);
static_assert(std::is_same_v<rules::rule_for<"moe_gate_dispatch_grad">, rules::moe_gate_dispatch_grad>);
static_assert(std::is_same_v<rules::rule_for<"cumsum">, rules::cumsum>);
static_assert(std::is_same_v<rules::rule_for<"cumsum_grad">, rules::cumsum_grad>);
static_assert(std::is_same_v<rules::rule_for<"argmax">, rules::argmax>);
static_assert(std::is_same_v<rules::rule_for<"argmin">, rules::argmin>);
static_assert(std::is_same_v<rules::rule_for<"topk">, rules::topk>);
static_assert(std::is_same_v<rules::rule_for<"topk_grad">, rules::topk_grad>);
static_assert(std::is_same_v<rules::rule_for<"numel">, rules::numel>);
static_assert(std::is_same_v<rules::rule_for<"logsumexp">, rules::logsumexp>);
static_assert(std::is_same_v<rules::rule_for<"p_norm">, rules::p_norm>);
static_assert(std::is_same_v<rules::rule_for<"gather">, rules::gather>);
static_assert(std::is_same_v<rules::rule_for<"gather_grad">, rules::gather_grad>);
static_assert(std::is_same_v<rules::rule_for<"gather_nd">, rules::gather_nd>);
static_assert(std::is_same_v<rules::rule_for<"gather_nd_grad">, rules::gather_nd_grad>);
static_assert(std::is_same_v<rules::rule_for<"scatter">, rules::scatter>);
static_assert(std::is_same_v<rules::rule_for<"scatter_grad">, rules::scatter_grad>);
static_assert(std::is_same_v<rules::rule_for<"index_select">, rules::index_select>);
static_assert(std::is_same_v<rules::rule_for<"index_select_grad">, rules::index_select_grad>);
static_assert(std::is_same_v<rules::rule_for<"one_hot">, rules::one_hot>);
