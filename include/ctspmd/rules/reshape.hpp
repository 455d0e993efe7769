#ifndef CTSPMD_RULES_RESHAPE_HPP
#define CTSPMD_RULES_RESHAPE_HPP
/// \file The reshape rule (`reshape`): out = x viewed with the target shape `shape`.
///
/// Target shape: an entry `0` copies the source dim at the same position (which must
/// exist), one entry `-1` is inferred from the element count, every other entry is a size
/// (> 0). Two `-1`s, a negative entry other than -1, a `0` beyond the source rank, an
/// inferred size that is not an integer (or not unique: a `-1` beside target dims holding 0
/// elements), and element counts that differ are each an `invalid_argument` naming the values.
///
/// Dynamic source dims (size -1, unknown until run time) are supported as follows. A `0`
/// copying one gives a dynamic target dim known to be the same size; it is matched one-to-one
/// (so its sharding passes through). The element count is checked only when every dynamic
/// source dim is copied by `0` (the unknowns cancel); then a `-1` is inferred from the known
/// dims as usual. Otherwise the count is not checked and an inferred `-1` is itself dynamic:
/// it is known to be the size of a source dim only when exactly one dynamic source dim is not
/// copied and the known dims of both sides have equal products (`[-1, 4, 8] -> [-1, 32]`:
/// the batch dim passes through). Anywhere else the factor matching stops at the first
/// unknown size and the rest of the shape is one coarse group (see kit/dim_trans.hpp), which keeps
/// only the sharding of its first source dim, and only when the group's first target size is
/// known and divisible by the mesh dim.
///
/// Forward: the dim transformation of x's shape into the target shape (kit/dim_trans.hpp's
/// greedy factor matching) decides the sharding. A sharded x dim keeps its mesh dim if it is
/// an input dim, the first input of a flatten, or feeds output 0 of a split whose size is
/// divisible by the mesh dim's size; otherwise it is resharded to -1. Output dims take the mesh
/// dim of the input dim they come from (other split outputs and singletons -1). A partial x
/// stays partial and its partial status passes to the output unchanged: a reshape moves
/// elements without combining them, so it commutes with every reduction.
///
/// Backward (from the output): the same algorithm with the roles swapped, the output as the
/// source and x's shape as the target, so a forward flatten is a backward split and vice
/// versa. The output's shape must be the target shape (where that has a dynamic dim any size
/// is accepted; where the output has -1 the target shape's size is used). A dynamic output
/// dim is matched one-to-one with the x dim it provably copies. x takes the derived mapping,
/// with no partial status; the output is returned with its mapping resharded where the
/// backward split cannot keep it, and its partial status unchanged.
///
/// Under `phi` the sharding follows phi's co-shard algorithm (kit/dim_trans.hpp,
/// `infer_from_dim_trans_co_shard`): the mesh dims of a group's later dims move onto its first
/// dim while divisibility allows, instead of being dropped; under `fluid` only the first dim's
/// mesh dims survive a flatten. phi reads an unknown source size as 256; we keep the handling
/// above. The round-trip claim below is fluid's.
///
/// Round trip (forward, then backward from forward's outputs): backward never shards an x dim
/// that forward did not (each output dim's mesh dim goes back to the input dim it came from).
/// Forward again from backward's x gives forward's outputs exactly when every x dim that
/// forward keeps sharded at the head of a merged group (flatten, or split of a flatten) has a
/// known size divisible by its mesh dim's size (any size does on a mesh dim of 1): forward's flatten does not check
/// divisibility (Paddle's rule), but the backward split does, against x's size, so an uneven shard
/// (`[3, 4] -> [12]` with dim 0 on a mesh dim of 2) or a dynamic one (`[-1, 4] -> [-1]`) is
/// kept forward and dropped backward. Otherwise each output dim comes back as forward's or -1.

#include <cstddef>
#include <cstdint>
#include <limits>

#include <ctspmd/core/error.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/rules/kit/dim_trans.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `reshape`.
struct reshape_attributes {
  /// The target shape: sizes, `0` to copy the source dim at that position, one `-1` inferred.
  static_vector<std::int64_t, max_rank> shape{};
};

/// The reshape rule.
struct reshape : rule_base<reshape, reshape_attributes> {
  static constexpr std::string_view name = "reshape";
  static constexpr cost_kind kind = cost_kind::view;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// A target shape resolved against a source shape: the sizes (-1 where unknown until run
  /// time) and, per target dim, the source dim known to have its size (or -1).
  struct target {
    tensor_shape shape{};
    static_vector<std::int64_t, max_rank> same_size{};
  };

  /// The output shape of reshaping `source` with the attribute `shape` (Paddle's
  /// `InferTargetShape`): `0`s copied, the `-1` inferred (-1 in the result when it depends on
  /// a dynamic source dim).
  static constexpr result<tensor_shape> try_infer_target_shape(const tensor_shape& source,
                                                               const static_vector<std::int64_t, max_rank>& shape) {
    const auto t = resolve_target(source, shape);
    if (!t) return t.error();
    return t->shape;
  }
  /// Throwing form of `try_infer_target_shape`.
  static constexpr tensor_shape infer_target_shape(const tensor_shape& source,
                                                   const static_vector<std::int64_t, max_rank>& shape) {
    return try_infer_target_shape(source, shape).value();
  }

  /// Resolves the attribute `shape` against `source` (see the file comment for dynamic dims).
  static constexpr result<target> resolve_target(const tensor_shape& source,
                                                 const static_vector<std::int64_t, max_rank>& shape) {
    const std::size_t n = source.size();
    target t;
    std::int64_t inferred = -1;  // the position of the -1
    for (std::size_t j = 0; j < shape.size(); ++j) {
      const std::int64_t v = shape[j];
      if (v < -1)
        return make_error(error_kind::invalid_argument, name,
                          "target shape dim {} is {}: an entry is a size, 0 (copy the source dim) or -1 (inferred)", j,
                          v);
      if (v == -1 && inferred != -1)
        return make_error(error_kind::invalid_argument, name,
                          "the target shape has -1 at dims {} and {}: only one size can be inferred", inferred, j);
      if (v == 0 && j >= n)
        return make_error(error_kind::invalid_argument, name,
                          "target shape dim {} is 0 (copy source dim {}), but the source has rank {}", j, j, n);
      if (v == -1) inferred = static_cast<std::int64_t>(j);
      t.shape.push_back(v == 0 ? source[j] : v);
      t.same_size.push_back(v == 0 ? static_cast<std::int64_t>(j) : -1);
    }

    // Element counts of the known dims; a dynamic source dim copied by 0 is on both sides.
    std::int64_t known_source = 1;
    std::int64_t known_target = 1;
    std::int64_t uncopied = 0;  // dynamic source dims not copied by 0
    std::int64_t last_uncopied = -1;
    for (std::size_t i = 0; i < n; ++i) {
      if (source[i] >= 0) {
        if (!multiply(known_source, source[i]))
          return make_error(error_kind::invalid_argument, name, "the source's element count overflows int64");
      } else if (!(i < shape.size() && shape[i] == 0)) {
        ++uncopied;
        last_uncopied = static_cast<std::int64_t>(i);
      }
    }
    for (std::size_t j = 0; j < t.shape.size(); ++j)
      if (static_cast<std::int64_t>(j) != inferred && t.shape[j] >= 0 && !multiply(known_target, t.shape[j]))
        return make_error(error_kind::invalid_argument, name, "the target shape's element count overflows int64");

    if (uncopied > 0) {  // the count depends on unknown sizes: nothing to check
      if (inferred != -1 && uncopied == 1 && known_target > 0 && known_source == known_target)
        t.same_size[static_cast<std::size_t>(inferred)] = last_uncopied;
      return t;
    }
    if (inferred != -1) {
      const auto at = static_cast<std::size_t>(inferred);
      if (known_target == 0)
        return make_error(error_kind::invalid_argument, name,
                          "cannot infer target dim {} (-1) from the source's {} elements: the other target dims hold 0",
                          inferred, known_source);
      if (known_source % known_target != 0)
        return make_error(error_kind::invalid_argument, name,
                          "cannot infer target dim {} (-1): the source's {} elements are not a multiple of the other "
                          "target dims' {}",
                          inferred, known_source, known_target);
      t.shape[at] = known_source / known_target;
      return t;
    }
    if (known_source != known_target)
      return make_error(error_kind::invalid_argument, name,
                        "the source has {} elements (besides dynamic dims copied by 0) but the target shape {}",
                        known_source, known_target);
    return t;
  }

  /// The target shape resolved against x's (`try_infer_target_shape`).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto tgt = resolve_target(in[0].shape(), attrs.shape);
    if (!tgt) return tgt.error();
    out.push_back(tgt->shape);
    return {};
  }

  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto tgt = resolve_target(in[0].shape(), attrs.shape);
    if (!tgt) return tgt.error();
    return forward_to(info, in[0], *tgt, s);
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto tgt = resolve_target(in[0].shape(), attrs.shape);
    if (!tgt) return tgt.error();
    return backward_to(info, in[0], out[0], *tgt, s);
  }

  // (Out of line: inlined into a call whose operand list is empty, which fails before reaching
  // them, GCC 12 warns of reading past the empty list: a false -Warray-bounds.)

  /// Forward inference of reshaping `x` into `tgt` (also flatten's).
  CTSPMD_NOINLINE static constexpr status forward_to(spmd_info& info, const dist_tensor_spec& x, const target& tgt, semantics s) {
    const auto trans = make_reshape_dim_trans(x.shape(), tgt.shape, tgt.same_size);
    dim_lists required, output;
    infer(lists_of(x.dist_attr()), x.shape(), trans, x.process_mesh(), required, output, s);
    // x keeps its partial status; a reshape moves elements without combining them, so partial
    // parts stay parts of the output.
    assign(info.inputs.emplace_back(x.dist_attr()), required);
    add_partial_of(assign(info.outputs.emplace_back(copy_tensor_dist_attr_for_output(x.dist_attr())), output),
                   x.dist_attr());
    return {};
  }

  /// Backward inference of reshaping `x` into `tgt`, from the output `o` (also flatten's).
  CTSPMD_NOINLINE static constexpr status backward_to(spmd_info& info, const dist_tensor_spec& x, const dist_tensor_spec& o,
                                      const target& tgt, semantics s) {
    if (o.shape().size() != tgt.shape.size())
      return make_error(error_kind::invalid_argument, "", "the output has rank {}, but the target shape has {} dims",
                        o.shape().size(), tgt.shape.size());
    // The output's shape, with the sizes the target shape knows where the output has -1.
    tensor_shape out_shape = o.shape();
    for (std::size_t j = 0; j < out_shape.size(); ++j) {
      const std::int64_t expected = tgt.shape[j];
      if (expected == -1) continue;
      if (out_shape[j] != -1 && out_shape[j] != expected)
        return make_error(error_kind::invalid_argument, "", "output dim {} has size {}, but the target shape gives {}",
                          j, out_shape[j], expected);
      out_shape[j] = expected;
    }
    // Swapped roles: x dim i has the size of the output dim that copies it.
    static_vector<std::int64_t, max_rank> same_size(x.shape().size(), -1);
    for (std::size_t j = 0; j < tgt.same_size.size(); ++j)
      if (const auto i = tgt.same_size[j]; i >= 0)
        same_size[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(j);
    const auto trans = make_reshape_dim_trans(out_shape, x.shape(), same_size);
    dim_lists required, derived;
    infer(lists_of(o.dist_attr()), out_shape, trans, o.process_mesh(), required, derived, s);
    assign(info.inputs.emplace_back(copy_tensor_dist_attr_for_output(x.dist_attr())), derived);
    assign(info.outputs.emplace_back(o.dist_attr()), required);  // keeps the output's partial status
    return {};
  }

 private:
  /// The sharding through `trans`: fluid's or phi's (co-shard) algorithm.
  static constexpr void infer(const dim_lists& input, const tensor_shape& shape, const dim_trans_list& trans,
                              const process_mesh& mesh, dim_lists& required, dim_lists& output, semantics s) {
    if (s == semantics::phi)
      infer_from_dim_trans_co_shard(input, shape, trans, mesh, required, output);
    else
      infer_from_dim_trans(input, trans, mesh, required, output);
  }
  /// The mesh dims of each dim of `a`.
  static constexpr dim_lists lists_of(const tensor_dist_attr& a) {
    dim_lists l;
    for (std::size_t d = 0; d < a.rank(); ++d) l.push_back(ctspmd::detail::dim_list(a, d));
    return l;
  }
  /// `a` with the mapping `lists` (whose mesh dims `a` does not hold partial: they come from
  /// its own mapping, or that of an attr of the same partial status).
  static constexpr tensor_dist_attr& assign(tensor_dist_attr& a, const dim_lists& lists) {
    using access = ctspmd::detail::tensor_dist_attr_access;
    access::clear(a);
    for (const auto& l : lists) access::append(a, l);
    return a;
  }
 public:
  /// p *= f for sizes p, f >= 0; false if the product overflows int64 (also flatten's).
  static constexpr bool multiply(std::int64_t& p, std::int64_t f) noexcept {
    if (f != 0 && p > std::numeric_limits<std::int64_t>::max() / f) return false;
    p *= f;
    return true;
  }
};

/// Attributes of `flatten` (Paddle's Python defaults: every dim).
struct flatten_attributes {
  std::int64_t start_axis = 0;  ///< first dim flattened; negative counts from the end
  std::int64_t stop_axis = -1;  ///< last dim flattened; negative counts from the end
};

/// The flatten rule: x's dims [start_axis, stop_axis] merged into one, as a reshape (the
/// sharding follows the dim transformation exactly as reshape's does, under either semantics).
/// A 0-D x flattens to `[1]`. `start_axis` after `stop_axis` (once normalised) is an
/// `invalid_argument`.
struct flatten : rule_base<flatten, flatten_attributes> {
  static constexpr std::string_view name = "flatten";
  static constexpr cost_kind kind = cost_kind::view;
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes& attrs) {
    const auto tgt = target_of(in[0].shape(), attrs);
    if (!tgt) return tgt.error();
    out.push_back(tgt->shape);
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& attrs, semantics s) {
    const auto tgt = target_of(in[0].shape(), attrs);
    if (!tgt) return tgt.error();
    return reshape::forward_to(info, in[0], *tgt, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& attrs, semantics s) {
    const auto tgt = target_of(in[0].shape(), attrs);
    if (!tgt) return tgt.error();
    return reshape::backward_to(info, in[0], out[0], *tgt, s);
  }

  /// The output shape of flattening `x` (-1 where a flattened size is unknown), with, per output
  /// dim outside the flattened range, the x dim it copies.
  static constexpr result<reshape::target> target_of(const tensor_shape& x, const attributes& attrs) {
    const auto rank = static_cast<std::int64_t>(x.size());
    reshape::target t;
    if (rank == 0) {
      t.shape.push_back(1);
      t.same_size.push_back(-1);
      return t;
    }
    const auto start = normalize_axis(attrs.start_axis, rank, "start_axis {} is out of range for x of rank {}");
    if (!start) return start.error();
    const auto stop = normalize_axis(attrs.stop_axis, rank, "stop_axis {} is out of range for x of rank {}");
    if (!stop) return stop.error();
    if (*start > *stop)
      return make_error(error_kind::invalid_argument, "", "start_axis {} comes after stop_axis {}", attrs.start_axis,
                        attrs.stop_axis);
    std::int64_t flattened = 1;
    for (std::size_t d = 0; d < x.size(); ++d) {
      if (d < *start || d > *stop) {
        t.shape.push_back(x[d]);
        t.same_size.push_back(static_cast<std::int64_t>(d));
      } else if (x[d] < 0) {
        flattened = -1;  // unknown until run time
      } else if (flattened != -1 && !reshape::multiply(flattened, x[d])) {
        return make_error(error_kind::invalid_argument, "", "the flattened dims' sizes multiply beyond int64");
      }
      if (d == *stop) {
        t.shape.push_back(flattened);
        t.same_size.push_back(*start == *stop ? static_cast<std::int64_t>(d) : -1);
      }
    }
    return t;
  }
};

}  // namespace ctspmd::rules

#endif
