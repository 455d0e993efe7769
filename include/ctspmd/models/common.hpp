#ifndef CTSPMD_MODELS_COMMON_HPP
#define CTSPMD_MODELS_COMMON_HPP
/// \file What every model builder of `<ctspmd/models/...>` shares: the layout choice by mesh dim,
/// the run's sizes, what a builder returns, parameter counts and Megatron's vocabulary padding.
///
///     constexpr auto m = models::llama(models::llama3_8b, process_mesh({2, 8}), {.dp = 0, .tp = 1, .sp = true});
///     static_assert(models::parameter_count(m.plan) == 8'030'261'248);
///
/// A layout names the mesh dim of each kind of parallelism (-1: not used): data (`dp`: the
/// batch), tensor (`tp`: Megatron's column and row splits, with `sp` sequence parallelism
/// between the tensor-parallel regions), context (`cp`: the sequence, attention gathering keys
/// and values), expert (`ep`) and pipeline (`pp`: a mesh dim that holds every tensor whole, the
/// layers being the plan's repeated block, which `model::pipeline` splits over it). With
/// `annotated = false` nothing is annotated but the data, split as dp, cp and ep say (for
/// `model::search`); with none of those, nothing at all (the search splits the data too).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/saturating.hpp>
#include <ctspmd/dist/process_mesh.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>
#include <ctspmd/model/plan.hpp>

namespace ctspmd::models {

/// Which mesh dim carries each kind of parallelism (see the file comment); -1: none.
struct layout {
  std::int64_t dp = -1, tp = -1, cp = -1, ep = -1, pp = -1;
  bool sp = false;         ///< sequence parallelism between the tensor-parallel regions (needs tp)
  bool annotated = true;   ///< false: weights and activations left for the search to lay out
};

/// The sizes of one run: tokens per sequence and sequences per data-parallel rank; and how the
/// attention core runs.
struct run_shape {
  std::int64_t seq = 4096;
  std::int64_t micro_batch = 1;
  /// false: the core written out, as before flash attention (GPT): the scores and probabilities
  /// materialised, [batch, heads, seq, seq] each (Megatron's 2021 runs).
  bool flash_attention = true;
};

/// A built model: its forward plan, its loss (for `model::training_step`), and the vocabulary
/// the plan holds (`vocab_padding` rows more than the model's, as Megatron pads it).
template <class Plan>
struct built_model {
  Plan plan;
  model::tensor_id loss{};
  std::int64_t vocab = 0, vocab_padding = 0;
};

/// The parameters of plan `p`: the elements of its trainable tensors, a repeated block's once
/// per run.
template <std::size_t T, std::size_t O>
constexpr std::int64_t parameter_count(const model::plan<T, O>& p) {
  std::int64_t n = 0;
  for (std::size_t t = 0; t < p.tensor_count(); ++t) {
    const auto& info = p.tensor_at(t);
    if (!info.trainable) continue;
    std::int64_t elements = 1;
    for (const auto d : info.shape) elements = ctspmd::detail::saturating_product(elements, d);
    for (std::size_t b = 0; b < p.block_count(); ++b) {
      const auto& k = p.block_at(b);
      if (k.mirror_of < 0 && t > k.input.index && t < k.end_tensor)
        elements = ctspmd::detail::saturating_product(elements, static_cast<std::int64_t>(k.count));
    }
    n = ctspmd::detail::saturating_sum(n, elements);
  }
  return n;
}

/// Megatron's padded vocabulary: `vocab` rounded up to a multiple of `divisible_by` x the
/// tensor-parallel size, if that size does not divide it (else `vocab`).
constexpr std::int64_t padded_vocab(std::int64_t vocab, std::int64_t tp_size, std::int64_t divisible_by = 128) {
  if (vocab <= 0 || tp_size <= 0 || divisible_by <= 0)
    raise(make_error(error_kind::invalid_argument, "models",
                     "vocabulary {}, tensor-parallel size {}, multiple {}: each must be positive", vocab, tp_size, divisible_by));
  if (vocab % tp_size == 0) return vocab;
  const std::int64_t m = divisible_by * tp_size;
  return (vocab + m - 1) / m * m;
}

namespace detail {
/// The size of mesh dim `m` of `mesh`, or 1 for -1.
constexpr std::int64_t size_of(const process_mesh& mesh, std::int64_t m) { return m < 0 ? 1 : mesh.dim_size(m); }
/// `{m}`, or no mesh dim for -1.
constexpr mesh_dims dims_of(std::int64_t m) { return m < 0 ? mesh_dims{} : mesh_dims{m}; }

/// Checks a layout against a mesh: each named dim exists, no dim is named twice, sp has a tp, ep
/// a model with experts.
constexpr void check_layout(const process_mesh& mesh, const layout& l, bool experts) {
  const std::int64_t dims[] = {l.dp, l.tp, l.cp, l.ep, l.pp};
  constexpr const char* out_of_range[] = {
      "layout dp names mesh dim {}, but the mesh has {} dims", "layout tp names mesh dim {}, but the mesh has {} dims",
      "layout cp names mesh dim {}, but the mesh has {} dims", "layout ep names mesh dim {}, but the mesh has {} dims",
      "layout pp names mesh dim {}, but the mesh has {} dims"};
  for (std::size_t i = 0; i < 5; ++i) {
    if (dims[i] < -1 || dims[i] >= mesh.ndim())
      raise(make_error(error_kind::invalid_argument, "models", out_of_range[i], dims[i], mesh.ndim()));
    for (std::size_t j = 0; j < i; ++j)
      if (dims[i] >= 0 && dims[i] == dims[j])
        raise(make_error(error_kind::invalid_argument, "models",
                         "the layout names mesh dim {} twice: dp, tp, cp, ep and pp must be different dims (or -1)", dims[i]));
  }
  if (l.sp && l.tp < 0) raise(make_error(error_kind::invalid_argument, "models", "sequence parallelism (sp) needs a tp mesh dim"));
  if (l.ep >= 0 && !experts)
    raise(make_error(error_kind::invalid_argument, "models", "layout ep names mesh dim {}, but the model has no experts", l.ep));
}

/// Checks that `n` is positive; `message` names it ("config field hidden_size is {}: ...").
constexpr void check_positive(std::int64_t n, const char* message) {
  if (n <= 0) raise(make_error(error_kind::invalid_argument, "models", message, n));
}
/// Checks that mesh dim m's size divides `n`; `message` names n ("n_head ({}) is not divisible
/// by mesh dim {}'s size {}").
constexpr void check_divides(const process_mesh& mesh, std::int64_t m, std::int64_t n, const char* message) {
  if (m >= 0 && n % mesh.dim_size(m) != 0) raise(make_error(error_kind::invalid_argument, "models", message, n, m, mesh.dim_size(m)));
}

/// Checks a mixture of experts' sizes: `experts` experts, `top_k` a token, the capacity factor.
constexpr void check_experts(std::int64_t experts, std::int64_t top_k, double capacity_factor) {
  check_positive(experts, "the number of experts is {}: it must be positive");
  check_positive(top_k, "the number of experts a token is {}: it must be positive");
  if (top_k > experts)
    raise(make_error(error_kind::invalid_argument, "models", "num_experts_per_tok ({}) is more than the number of experts ({})",
                     top_k, experts));
  if (!(capacity_factor > 0) || capacity_factor > 1e6)
    raise(make_error(error_kind::invalid_argument, "models", "the capacity factor must be positive (and at most 10^6)"));
}

/// Declares a data tensor (token ids, positions, labels) of layout `l` laid out as `a`: always,
/// but when `l` leaves everything to the search (`annotated` false and no dp, cp or ep).
template <class Plan>
constexpr model::tensor_id data_tensor(Plan& p, const layout& l, std::string_view name, const tensor_shape& s,
                                       const tensor_dist_attr& a) {
  const bool laid_out = l.annotated || l.dp >= 0 || l.cp >= 0 || l.ep >= 0;
  return laid_out ? p.tensor(name, s, a, model::int64) : p.tensor(name, s, model::int64);
}

/// Declares tensors and parameters annotated, or not if the layout leaves them to the search.
template <class Plan>
struct declarer {
  Plan& p;
  bool annotated;
  constexpr model::tensor_id tensor(std::string_view name, const tensor_shape& s, const tensor_dist_attr& a,
                                    model::element_size e) const {
    return annotated ? p.tensor(name, s, a, e) : p.tensor(name, s, e);
  }
  constexpr model::tensor_id parameter(std::string_view name, const tensor_shape& s, const dims_mapping& m,
                                       model::element_size e) const {
    return annotated ? p.parameter(name, s, m, e) : p.parameter(name, s, e);
  }
};
}  // namespace detail

}  // namespace ctspmd::models

#endif
