#ifndef CTSPMD_RULES_OPTIMIZER_HPP
#define CTSPMD_RULES_OPTIMIZER_HPP
/// \file The optimizer rules (`adam`, `adamw`, `sgd`): the parameter update, element by element
/// over the parameter's shape, from its gradient and state tensors of the same shape.
///
/// Operands (Paddle's order, phi's AdamInferSpmdDynamic / SgdInferSpmd):
/// - adam / adamw inputs: param, grad, learning_rate, moment1, moment2, moment2_max (opt),
///   beta1_pow, beta2_pow, master_param (opt), skip_update (opt); the last two may be left out.
///   Outputs: param_out, moment1_out, moment2_out, moment2_max_out, beta1_pow_out,
///   beta2_pow_out, master_param_out (absent where their input is).
/// - sgd inputs: param, learning_rate, grad, master_param (opt); outputs param_out,
///   master_param_out.
/// An absent optional input is shape `[]`, dims mapping `[]`, and comes back as given.
///
/// Notation: every full-size tensor (param, grad, the moments, master_param) gets the first
/// rank(param) letters; they must all have param's rank and known sizes (InvalidArgument).
///
/// Forward:
/// 1. param and grad are merged as a binary elementwise op (fluid: first-wins, an axis on two
///    mesh dims is `unimplemented`; phi: phi's element-wise merge, `merge_elementwise`).
/// 2. The vote (`agree_or_drop`, phi's optimizer policy): per dim, over the merged param, the
///    merged grad, moment1, moment2 and moment2_max, the first non-empty list wins unless a
///    later non-empty one differs, which replicates the dim. master_param does not vote.
///    (phi can give one mesh dim to two dims; the policy keeps it on the first.)
/// 3. param, grad, the moments and master_param (and their outputs) all take the voted
///    mapping. Partial status is dropped: a partial grad (or param, or moment) is reduced
///    before the update (phi's "partial stage I"); each device then updates its shard.
/// 4. learning_rate, beta1_pow and beta2_pow are scalars every device reads whole: they come
///    back replicated and not partial, and so do beta1_pow_out / beta2_pow_out. (phi keeps
///    their given mapping and clears the partial status; a sharded scalar cannot be split
///    evenly, so for every valid input the two agree.)
/// 5. skip_update, when present, must not be sharded (InvalidArgument, as phi); its partial
///    status is cleared.
/// adamw's extra attributes (lr_ratio, coeff, with_decay) change no layout: adamw is adam.
/// Both semantics behave the same except for the merge of step 1.
///
/// Backward (phi has none; derived): the outputs stand in for their inputs (param_out for
/// param, moment1_out for moment1, ...; grad, learning_rate and skip_update keep their own
/// given layouts, grad replicated so that it casts no vote) and forward runs on them. Every
/// output must have its input's rank (an absent input, an absent output). The inputs and
/// outputs returned are forward's, so forward from the inferred inputs reproduces them.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/merge/policies.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `adam` (Paddle's defaults); none changes a layout.
struct adam_attributes {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  bool lazy_mode = false;
  std::int64_t min_row_size_to_use_multithread = 1000;
  bool multi_precision = false;
  bool use_global_beta_pow = false;
  bool amsgrad = false;
};

/// Attributes of `adamw` (Paddle's defaults); none changes a layout.
struct adamw_attributes {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double lr_ratio = 1.0;
  double coeff = 0.01;
  bool with_decay = false;
  bool lazy_mode = false;
  std::int64_t min_row_size_to_use_multithread = 1000;
  bool multi_precision = false;
  bool use_global_beta_pow = false;
  bool amsgrad = false;
};

/// Attributes of `sgd` (Paddle's defaults).
struct sgd_attributes {
  bool multi_precision = false;
};

namespace detail {

/// Where an optimizer's operands are: -1 for an operand it does not have (or left out).
struct optimizer_operands {
  std::size_t param = 0, grad = 0;
  std::array<std::int64_t, 3> voters{-1, -1, -1};    ///< moments: vote after param and grad
  std::array<std::int64_t, 1> followers{-1};         ///< master_param: takes the vote
  std::array<std::int64_t, 3> scalars{-1, -1, -1};   ///< learning_rate, beta pows: replicated
  std::int64_t skip_update = -1;                     ///< must be replicated
  /// Per output, the input it is the new value of.
  static_vector<std::int64_t, 8> outputs;
};

/// The optimizer rule's forward (see the file comment) on operands placed as `o` says.
constexpr status optimizer_forward(spmd_info& info, spec_span in, const optimizer_operands& o, semantics s) {
  const auto& param = in[o.param];
  const auto letters = first_letters(param.ndim());
  if (!letters) return letters.error();
  const auto present = [&](std::int64_t i) { return i >= 0 && static_cast<std::size_t>(i) < in.size(); };
  // Every full-size tensor has param's shape.
  const auto check_like_param = [&](std::size_t i, bool optional) -> status {
    if (optional && is_absent(in[i])) return {};
    if (in[i].ndim() != param.ndim())
      return make_error(error_kind::invalid_argument, "", "input {} has rank {}, but param (input {}) has rank {}", i,
                        in[i].ndim(), o.param, param.ndim());
    for (std::size_t d = 0; d < param.shape().size(); ++d)
      if (in[i].shape()[d] != -1 && param.shape()[d] != -1 && in[i].shape()[d] != param.shape()[d])
        return make_error(error_kind::invalid_argument, "", "input {} has size {} at dim {}, but param has size {}", i,
                          in[i].shape()[d], d, param.shape()[d]);
    return status{};
  };
  CTSPMD_TRY(check_like_param(o.grad, false));
  for (std::size_t k = 0; k < o.voters.size(); ++k)
    if (present(o.voters[k])) CTSPMD_TRY(check_like_param(static_cast<std::size_t>(o.voters[k]), k == 2));
  for (const auto f : o.followers)
    if (present(f)) CTSPMD_TRY(check_like_param(static_cast<std::size_t>(f), true));
  if (present(o.skip_update)) {
    const auto& skip = in[static_cast<std::size_t>(o.skip_update)];
    for (std::size_t d = 0; d < skip.dist_attr().rank(); ++d)
      if (const auto list = ctspmd::detail::dim_list(skip.dist_attr(), d); !list.empty())
        return make_error(error_kind::invalid_argument, "",
                          "skip_update (input {}) must be replicated, but its dim {} is sharded by mesh dim {}",
                          o.skip_update, d, list.major());
  }

  // 1. param and grad merged as a binary elementwise op.
  const std::array<std::string_view, 2> labels{*letters, *letters};
  const std::array<dist_tensor_spec, 2> pair{param, in[o.grad]};
  axis_to_dim_map merged;
  CTSPMD_TRY(merge_specs(merged, std::span<const std::string_view, 2>(labels), spec_span(pair),
                         s == semantics::phi ? merge_policy::elementwise : merge_policy::first_wins));
  // 2. The vote: merged param, merged grad, then the moments present.
  static_vector<std::size_t, 3> voters;
  for (std::size_t k = 0; k < o.voters.size(); ++k)
    if (present(o.voters[k]) && !is_absent(in[static_cast<std::size_t>(o.voters[k])]))
      voters.push_back(static_cast<std::size_t>(o.voters[k]));
  static_vector<mesh_dim_list, max_rank> vote;
  agree_or_drop(vote, 2 + voters.size(), letters->size(), [&](std::size_t t, std::size_t i) {
    return t < 2 ? merged.list((*letters)[i]) : ctspmd::detail::dim_list(in[voters[t - 2]].dist_attr(), i);
  });
  axis_to_dim_map voted;
  for (std::size_t i = 0; i < vote.size(); ++i) voted.set((*letters)[i], vote[i]);

  // 3.-5. Each input as the rule needs it.
  const auto is_one_of = [](std::int64_t i, const auto& list) {
    for (const auto x : list)
      if (x == i) return true;
    return false;
  };
  for (std::size_t i = 0; i < in.size(); ++i) {
    const auto& a = in[i].dist_attr();
    const auto k = static_cast<std::int64_t>(i);
    if (is_absent(in[i]) && (is_one_of(k, o.voters) || is_one_of(k, o.followers) || k == o.skip_update))
      info.inputs.push_back(a);  // an absent optional input, as given
    else if (i == o.param || i == o.grad || is_one_of(k, o.voters) || is_one_of(k, o.followers))
      push(info.inputs, a, *letters, voted);
    else if (k == o.skip_update)
      info.inputs.emplace_back(a).clean_partial_status();
    else
      info.inputs.push_back(replicated_on_mesh(a));  // a scalar every device reads whole
  }
  for (const auto i : o.outputs) info.outputs.push_back(info.inputs[static_cast<std::size_t>(i)]);
  return {};
}

/// The optimizer rule's backward: forward with each output standing in for its input.
constexpr status optimizer_backward(spmd_info& info, spec_span in, spec_span out, const optimizer_operands& o,
                                    semantics s) {
  std::array<dist_tensor_spec, max_operands> stand_in{};
  for (std::size_t i = 0; i < in.size(); ++i) stand_in[i] = in[i];
  stand_in[o.grad] = {in[o.grad].shape(), replicated_on_mesh(in[o.grad].dist_attr())};  // casts no vote
  for (std::size_t r = 0; r < out.size(); ++r) {
    const auto i = static_cast<std::size_t>(o.outputs[r]);
    if (out[r].ndim() != in[i].ndim())
      return make_error(error_kind::invalid_argument, "", "output {} has rank {}, but input {}, its old value, has rank {}",
                        r, out[r].ndim(), i, in[i].ndim());
    stand_in[i] = {in[i].shape(), out[r].dist_attr()};
  }
  return optimizer_forward(info, spec_span(stand_in.data(), in.size()), o, s);
}

/// Each output's shape, its input's (an input left out: [], absent), `count` outputs in all.
constexpr status optimizer_output_shapes(shape_list& out, spec_span in, const optimizer_operands& o, std::size_t count) {
  for (std::size_t r = 0; r < count; ++r) {
    const std::int64_t i = r < o.outputs.size() ? o.outputs[r] : -1;
    out.push_back(i >= 0 && static_cast<std::size_t>(i) < in.size() ? in[static_cast<std::size_t>(i)].shape()
                                                                      : tensor_shape{});
  }
  return {};
}

/// adam's and adamw's operands for `n` inputs.
constexpr optimizer_operands adam_operands(std::size_t n) {
  optimizer_operands o;
  o.param = 0;
  o.grad = 1;
  o.voters = {3, 4, 5};
  o.scalars = {2, 6, 7};
  o.followers = {n > 8 ? 8 : -1};
  o.skip_update = n > 9 ? 9 : -1;
  // param, moment1, moment2, moment2_max, beta1_pow, beta2_pow, master_param
  o.outputs = {0, 3, 4, 5, 6, 7, 8};
  return o;
}

/// The output master_param_out when master_param was left out: absent.
constexpr status adam_forward(spmd_info& info, spec_span in, semantics s) {
  if (in.size() > 8) return optimizer_forward(info, in, adam_operands(in.size()), s);
  optimizer_operands o = adam_operands(in.size());
  o.outputs.pop_back();
  CTSPMD_TRY(optimizer_forward(info, in, o, s));
  info.outputs.emplace_back(in[0].process_mesh());  // master_param_out, absent
  return {};
}
constexpr status adam_backward(spmd_info& info, spec_span in, spec_span out, semantics s) {
  if (in.size() > 8) return optimizer_backward(info, in, out, adam_operands(in.size()), s);
  optimizer_operands o = adam_operands(in.size());
  o.outputs.pop_back();
  if (!is_absent(out[6]))
    return make_error(error_kind::invalid_argument, "",
                      "output 6 (master_param_out) has rank {}, but master_param (input 8) is left out", out[6].ndim());
  CTSPMD_TRY(optimizer_backward(info, in, out.first(6), o, s));
  info.outputs.push_back(out[6].dist_attr());
  return {};
}

}  // namespace detail

/// The adam rule (see the file comment).
struct adam : rule_base<adam, adam_attributes> {
  static constexpr std::string_view name = "adam";
  static constexpr operand_count input_count{8, 10};
  static constexpr operand_count output_count{7};
  /// Each output: its input's shape (master_param_out absent when master_param is left out).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return detail::optimizer_output_shapes(out, in, detail::adam_operands(in.size()), 7);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    return detail::adam_forward(info, in, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    return detail::adam_backward(info, in, out, s);
  }
};

/// The adamw rule: adam's (its weight decay changes no layout).
struct adamw : rule_base<adamw, adamw_attributes> {
  static constexpr std::string_view name = "adamw";
  static constexpr operand_count input_count{8, 10};
  static constexpr operand_count output_count{7};
  /// Each output: its input's shape (master_param_out absent when master_param is left out).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return detail::optimizer_output_shapes(out, in, detail::adam_operands(in.size()), 7);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    return detail::adam_forward(info, in, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    return detail::adam_backward(info, in, out, s);
  }
};

/// The sgd rule (see the file comment).
struct sgd : rule_base<sgd, sgd_attributes> {
  static constexpr std::string_view name = "sgd";
  static constexpr operand_count input_count{3, 4};
  static constexpr operand_count output_count{2};
  /// param_out: param's shape; master_param_out: master_param's (absent when it is left out).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return detail::optimizer_output_shapes(out, in, operands(in.size() > 3), 2);
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    if (in.size() > 3) return detail::optimizer_forward(info, in, operands(true), s);
    CTSPMD_TRY(detail::optimizer_forward(info, in, operands(false), s));
    info.outputs.emplace_back(in[0].process_mesh());  // master_param_out, absent
    return {};
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    if (in.size() > 3) return detail::optimizer_backward(info, in, out, operands(true), s);
    if (!is_absent(out[1]))
      return make_error(error_kind::invalid_argument, "",
                        "output 1 (master_param_out) has rank {}, but master_param (input 3) is left out", out[1].ndim());
    CTSPMD_TRY(detail::optimizer_backward(info, in, out.first(1), operands(false), s));
    info.outputs.push_back(out[1].dist_attr());
    return {};
  }

 private:
  static constexpr detail::optimizer_operands operands(bool master) {
    detail::optimizer_operands o;
    o.param = 0;
    o.grad = 2;
    o.scalars = {1, -1, -1};
    o.followers = {master ? 3 : -1};
    o.outputs = {0};
    if (master) o.outputs.push_back(3);
    return o;
  }
};

}  // namespace ctspmd::rules

#endif
