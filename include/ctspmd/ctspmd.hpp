#ifndef CTSPMD_CTSPMD_HPP
#define CTSPMD_CTSPMD_HPP
/// \file The whole compile-time library. (The run-time text forms are in
/// <ctspmd/dist/format.hpp>, the by-name layer in <ctspmd/runtime.hpp>.)

#include <ctspmd/core/config.hpp>
#include <ctspmd/core/error.hpp>
#include <ctspmd/core/fixed_string.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/dist_tensor_spec.hpp>
#include <ctspmd/dist/mesh_dim_list.hpp>
#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/dist/spmd_info.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/merge/axis_to_dim_map.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/merge/policies.hpp>
#include <ctspmd/merge/sharding_merge.hpp>
#include <ctspmd/model/plan.hpp>
#include <ctspmd/model/propagate.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/notation/einsum_notation.hpp>
#include <ctspmd/rules/bmm.hpp>
#include <ctspmd/rules/c_embedding.hpp>
#include <ctspmd/rules/c_softmax_with_cross_entropy.hpp>
#include <ctspmd/rules/concat.hpp>
#include <ctspmd/rules/cross_entropy_with_softmax.hpp>
#include <ctspmd/rules/dim_trans.hpp>
#include <ctspmd/rules/einsum.hpp>
#include <ctspmd/rules/elementwise.hpp>
#include <ctspmd/rules/embedding.hpp>
#include <ctspmd/rules/embedding_grad.hpp>
#include <ctspmd/rules/flash_attention.hpp>
#include <ctspmd/rules/fused_linear_param_grad_add.hpp>
#include <ctspmd/rules/layer_norm.hpp>
#include <ctspmd/rules/matmul.hpp>
#include <ctspmd/rules/matmul_grad.hpp>
#include <ctspmd/rules/reduction.hpp>
#include <ctspmd/rules/replicated.hpp>
#include <ctspmd/rules/reshape.hpp>
#include <ctspmd/rules/softmax.hpp>
#include <ctspmd/rules/split.hpp>
#include <ctspmd/rules/transpose.hpp>
#include <ctspmd/rules/kit.hpp>
#include <ctspmd/rules/registry.hpp>
#include <ctspmd/rules/rule_base.hpp>

#endif
