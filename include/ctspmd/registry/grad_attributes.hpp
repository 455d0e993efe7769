#ifndef CTSPMD_REGISTRY_GRAD_ATTRIBUTES_HPP
#define CTSPMD_REGISTRY_GRAD_ATTRIBUTES_HPP
/// \file What a grad operator's attributes are, given its forward operator's: for each pair of a
/// forward rule's attributes and its grad rule's (registry/grad_recipes.hpp names the pairs) that
/// differ, which fields carry over. A training step (model/training.hpp) builds each grad
/// operator's attributes with it.

#include <type_traits>

#include <ctspmd/registry/rules_by_name.hpp>

namespace ctspmd::model::detail {

// A grad operator's attributes from its forward operator's: the same, or none where the grad
// rule takes none, or these pairs; any other pair is a compile error, so that no attribute is
// lost unseen.
template <class To, class From>
constexpr To grad_attributes(const From& f) {
  if constexpr (std::is_same_v<From, rules::scale_attributes> && std::is_same_v<To, From>) {
    return To{.scale = f.scale, .bias = 0.0, .bias_after_scale = true};  // d(s x + b) = s dx: no bias
  } else if constexpr (std::is_same_v<To, From>) {
    return f;
  } else if constexpr (std::is_empty_v<To> || std::is_empty_v<From>) {
    return To{};
  } else if constexpr (std::is_same_v<From, rules::layer_norm_attributes>) {
    return To{.epsilon = f.epsilon, .begin_norm_axis = f.begin_norm_axis};
  } else if constexpr (std::is_same_v<From, rules::rms_norm_attributes>) {
    return To{.epsilon = f.epsilon};
  } else if constexpr (std::is_same_v<From, rules::embedding_attributes>) {
    return To{.padding_idx = f.padding_idx, .sparse = f.sparse};
  } else if constexpr (std::is_same_v<From, rules::c_embedding_attributes>) {
    return To{.start_index = f.start_index};
  } else if constexpr (std::is_same_v<From, rules::flash_attention_attributes>) {
    return To{.dropout = f.dropout, .causal = f.causal, .context_parallel = f.context_parallel};
  } else if constexpr (std::is_same_v<From, rules::pow_attributes>) {
    return To{.y = f.y};
  } else if constexpr (std::is_same_v<From, rules::split_attributes> || std::is_same_v<From, rules::unbind_attributes>) {
    return To{.axis = f.axis};  // concat, or stack, along the split or unbound axis
  } else if constexpr (requires { f.keep_dim; f.reduce; }) {  // a reduction's (basic_reduction_attributes<R>)
    return To{.axis = f.axis, .keepdim = f.keep_dim, .reduce_all = f.axis.empty()};
  } else {
    static_assert(std::is_same_v<To, From>, "a grad recipe needs a conversion of these attributes (registry/grad_attributes.hpp)");
    return To{};
  }
}

}  // namespace ctspmd::model::detail

#endif
