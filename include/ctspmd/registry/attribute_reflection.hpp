#ifndef CTSPMD_REGISTRY_ATTRIBUTE_REFLECTION_HPP
#define CTSPMD_REGISTRY_ATTRIBUTE_REFLECTION_HPP
/// \file The Boost.Hana adaptation of every registered rule's attributes, which the runtime
/// layer reads by name (runtime/attributes.hpp). Kept apart from the rule headers: a hundred
/// adaptations cost about half a second of compile time in every TU that includes them, and
/// only the by-name layer needs them. A rule of one's own is adapted the same way, at global
/// scope, after its attributes struct; the runtime layer names a rule that is not.

#include <boost/hana/adapt_struct.hpp>

#include <ctspmd/registry/rules_by_name.hpp>

BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::bmm_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::concat_attributes, axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::stack_attributes, axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::cross_entropy_with_softmax_attributes, axis, ignore_index, numeric_stable_mode, use_softmax, soft_label);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::einsum_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::dynamic_einsum_attributes, notation);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::elementwise_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::cast_attributes, dtype);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::full_like_attributes, value, dtype);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::embedding_attributes, padding_idx, sparse);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::embedding_grad_attributes, padding_idx, sparse);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::c_embedding_attributes, start_index, vocab_size);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::c_embedding_grad_attributes, start_index);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::c_softmax_with_cross_entropy_attributes, ignore_index, ring_id, rank, nranks);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::flash_attention_attributes, dropout, causal, return_softmax, is_test, rng_name,
                        context_parallel);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::flash_attention_grad_attributes, dropout, causal, context_parallel);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::fused_rope_attributes, use_neox_rotary_style, time_major, rotary_emb_base);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::fused_linear_param_grad_add_attributes, multi_precision, has_bias);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::layer_norm_attributes, begin_norm_axis, epsilon);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::matmul_attributes, trans_x, trans_y);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::basic_reduction_attributes<ctspmd::reduce_type::sum>, axis, keep_dim, reduce);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::basic_reduction_attributes<ctspmd::reduce_type::max>, axis, keep_dim, reduce);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::basic_reduction_attributes<ctspmd::reduce_type::min>, axis, keep_dim, reduce);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::basic_reduction_attributes<ctspmd::reduce_type::prod>, axis, keep_dim, reduce);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::basic_reduction_attributes<ctspmd::reduce_type::avg>, axis, keep_dim, reduce);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::basic_reduction_attributes<ctspmd::reduce_type::any>, axis, keep_dim, reduce);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::basic_reduction_attributes<ctspmd::reduce_type::all>, axis, keep_dim, reduce);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::det_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::replicated_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::reshape_attributes, shape);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::flatten_attributes, start_axis, stop_axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::softmax_attributes, axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::split_attributes, num, sections, axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::transpose_attributes, perm);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::add_n_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::dropout_attributes, p, is_test, mode, seed, fix_seed);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::elementwise_unary_grad_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::gelu_grad_attributes, approximate);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::pow_grad_attributes, y);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::elementwise_binary_grad_attributes, axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::layer_norm_grad_attributes, epsilon, begin_norm_axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::rms_norm_attributes, epsilon);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::rms_norm_grad_attributes, epsilon);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::scale_attributes, scale, bias, bias_after_scale);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::pow_attributes, y);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::swiglu_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::swiglu_grad_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::where_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::where_grad_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::expand_as_attributes, target_shape);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::pad_attributes, paddings, pad_value);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::reshape_grad_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::slice_attributes, axes, starts, ends, infer_flags, decrease_axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::strided_slice_attributes, axes, starts, ends, strides);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::squeeze_attributes, axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::unsqueeze_attributes, axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::tile_attributes, repeat_times);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::triu_attributes, diagonal, lower);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::unbind_attributes, axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::adam_attributes, beta1, beta2, epsilon, lazy_mode, min_row_size_to_use_multithread, multi_precision, use_global_beta_pow, amsgrad);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::adamw_attributes, beta1, beta2, epsilon, lr_ratio, coeff, with_decay, lazy_mode, min_row_size_to_use_multithread, multi_precision, use_global_beta_pow, amsgrad);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::sgd_attributes, multi_precision);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::default_data_parallel_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::moe_combine_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::moe_gate_dispatch_attributes, k, capacity, use_pad);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::cumsum_attributes, axis, flatten, exclusive, reverse);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::argmax_attributes, axis, keepdims, flatten, dtype);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::topk_attributes, k, axis, largest, sorted);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::numel_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::logsumexp_attributes, axis, keepdim, reduce_all);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::p_norm_attributes, porder, axis, epsilon, keepdim, asvector);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::reduction_grad_attributes, axis, keepdim, reduce_all);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::gather_attributes, axis);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::gather_nd_attributes);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::scatter_attributes, overwrite);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::one_hot_attributes, num_classes);

#endif
