#ifndef CTSPMD_RULES_SQUEEZE_HPP
#define CTSPMD_RULES_SQUEEZE_HPP
/// \file The squeeze and unsqueeze rules (`squeeze`; `unsqueeze`, `unsqueeze2`): out = x with
/// size-1 dims removed / inserted. Both are reshapes whose target shape the attribute `axis`
/// decides, and run through reshape's dim-transformation algebra (reshape.hpp, kit/dim_trans.hpp).
///
/// squeeze (axis, a list): an empty list removes every size-1 dim of x. Otherwise each entry
/// (in [-rank, rank), negative counts from the end; out of range is an `invalid_argument`)
/// names a dim that is removed if its size is 1; a listed dim of another size is kept, as
/// Paddle's operator keeps it (numpy would refuse). A dim of unknown size (-1) is never removed.
/// unsqueeze (axis, a list): size-1 dims are inserted one after the other in the order listed,
/// each at its position in the tensor grown so far: an entry in [-(r + 1), r], where r is the
/// rank before that insertion (negative counts from the end, -1 appends), so `[8, 16]` with
/// `[1, 2]` gives `[8, 1, 1, 16]` and with `[-1, -1]` gives `[8, 16, 1, 1]`. This is what
/// Paddle's unsqueeze operator computes; Paddle's SPMD rule instead normalises every negative
/// entry with rank(x) + 1 and mishandles repeated positions (phi-shape.md section 9, bug 11):
/// we follow the operator. An out-of-range entry, or an output rank above max_rank, is an
/// `invalid_argument`.
///
/// Sharding (forward and backward, both semantics) is reshape's with that target shape: every
/// kept dim keeps its mesh dims (a co-shard list as a whole), a removed or inserted size-1 dim
/// is replicated (a shard on a size-1 dim of x is dropped: x is required without it). Both
/// move elements without combining them, so a partial x stays partial and the output takes its
/// partial status (Paddle clears it on both, which would turn the parts into a wrong value: we
/// keep it, as reshape does). Backward: the output's shape must be the target shape; x takes
/// the output's mapping at the kept dims, without partial status.
///
/// The round trip (forward, then backward from forward's outputs) gives back forward's x.
/// Under `phi` reshape's co-shard algorithm runs, but with only kept and size-1 dims a co-shard
/// list passes whole, so both semantics give the same answers (phi-only operators in Paddle).

#include <cstddef>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>
#include <ctspmd/rules/reshape.hpp>

namespace ctspmd::rules {

/// Attributes of `squeeze` (Paddle's default: every size-1 dim).
struct squeeze_attributes {
  static_vector<std::int64_t, max_rank> axis{};  ///< dims to remove if of size 1; empty: all size-1 dims
};

/// The squeeze rule.
struct squeeze : rule_base<squeeze, squeeze_attributes> {
  static constexpr std::string_view name = "squeeze";
  static constexpr cost_kind kind = cost_kind::view;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// The target shape (`target_of`).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto t = target_of(in[0].shape(), attrs);
    if (!t) return t.error();
    out.push_back(t->shape);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto t = target_of(in[0].shape(), attrs);
    if (!t) return t.error();
    return reshape::forward_to(info, in[0], *t, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto t = target_of(in[0].shape(), attrs);
    if (!t) return t.error();
    return reshape::backward_to(info, in[0], out[0], *t, s);
  }

  /// The output shape of squeezing `x`, each output dim copying the x dim it keeps.
  static constexpr result<reshape::target> target_of(const tensor_shape& x, const attributes& attrs) {
    const auto rank = static_cast<std::int64_t>(x.size());
    static_vector<bool, max_rank> listed(x.size(), attrs.axis.empty());
    for (const auto a : attrs.axis) {
      const auto d = normalize_axis(a, rank, "axis entry {} is out of range for x of rank {}");
      if (!d) return d.error();
      listed[*d] = true;
    }
    reshape::target t;
    for (std::size_t d = 0; d < x.size(); ++d) {
      if (listed[d] && x[d] == 1) continue;
      t.shape.push_back(x[d]);
      t.same_size.push_back(static_cast<std::int64_t>(d));
    }
    return t;
  }
};

/// Attributes of `unsqueeze`.
struct unsqueeze_attributes {
  static_vector<std::int64_t, max_rank> axis{};  ///< where size-1 dims are inserted, one after the other
};

/// The unsqueeze rule (also `unsqueeze2`).
struct unsqueeze : rule_base<unsqueeze, unsqueeze_attributes> {
  static constexpr std::string_view name = "unsqueeze";
  static constexpr cost_kind kind = cost_kind::view;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// The target shape (`target_of`).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto t = target_of(in[0].shape(), attrs);
    if (!t) return t.error();
    out.push_back(t->shape);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto t = target_of(in[0].shape(), attrs);
    if (!t) return t.error();
    return reshape::forward_to(info, in[0], *t, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto t = target_of(in[0].shape(), attrs);
    if (!t) return t.error();
    return reshape::backward_to(info, in[0], out[0], *t, s);
  }

  /// The output shape of unsqueezing `x` (see the file comment), each output dim that is an x
  /// dim copying it.
  static constexpr result<reshape::target> target_of(const tensor_shape& x, const attributes& attrs) {
    if (x.size() + attrs.axis.size() > max_rank)
      return make_error(error_kind::invalid_argument, "", "x of rank {} with {} inserted dims exceeds max_rank = {}",
                        x.size(), attrs.axis.size(), max_rank);
    reshape::target t;
    for (std::size_t d = 0; d < x.size(); ++d) {
      t.shape.push_back(x[d]);
      t.same_size.push_back(static_cast<std::int64_t>(d));
    }
    for (const auto a : attrs.axis) {
      const auto r = static_cast<std::int64_t>(t.shape.size());
      if (a < -(r + 1) || a > r)
        return make_error(error_kind::invalid_argument, "",
                          "axis entry {} is out of range [-{}, {}] for an insertion into rank {}", a, r + 1, r, r);
      const auto at = static_cast<std::size_t>(a < 0 ? a + r + 1 : a);
      insert_at(t.shape, at, 1);
      insert_at(t.same_size, at, -1);
    }
    return t;
  }

 private:
  static constexpr void insert_at(static_vector<std::int64_t, max_rank>& v, std::size_t at, std::int64_t value) {
    v.push_back(value);
    for (std::size_t i = v.size() - 1; i > at; --i) {
      v[i] = v[i - 1];
      v[i - 1] = value;
    }
  }
};

}  // namespace ctspmd::rules

#endif
