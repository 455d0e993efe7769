#ifndef CTSPMD_RULES_REFLECTION_HPP
#define CTSPMD_RULES_REFLECTION_HPP
/// \file The Boost.Hana adaptation of every registered rule's attributes, which the runtime
/// layer reads by name (runtime/attributes.hpp). Kept apart from the rule headers: a hundred
/// adaptations cost about half a second of compile time in every TU that includes them, and
/// only the by-name layer needs them. A rule of one's own is adapted the same way, at global
/// scope, after its attributes struct; the runtime layer names a rule that is not.

#include <boost/hana/adapt_struct.hpp>

#include <ctspmd/rules/registry.hpp>

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
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::flash_attention_attributes, dropout, causal, return_softmax, is_test, rng_name);
BOOST_HANA_ADAPT_STRUCT(ctspmd::rules::flash_attention_grad_attributes, dropout, causal);
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

#endif
