#ifndef CTSPMD_RULES_FUSED_ROPE_HPP
#define CTSPMD_RULES_FUSED_ROPE_HPP
/// \file The fused_rope rule (phi; also `fused_rotary_position_embedding`) and its grad rule
/// `fused_rope_grad`.
///
/// fused_rope: inputs q, k, v, sin, cos, position_ids; outputs out_q, out_k, out_v. Every input
/// but q is optional, absent in any combination (shape [], dims mapping [], as Paddle's rule
/// takes them). q is [b, s, h, d] ([s, b, h, d] when time_major); k and v are [b, s, hk, d]
/// (likewise), hk dividing h (GQA). Each head vector of q, k and v is rotated position by
/// position: out = x * cos + rotate_half(x) * sin, where rotate_half pairs element i with i + d/2
/// (neox style) or element 2i with 2i + 1 (use_neox_rotary_style false). sin and cos are [s', d]
/// or [1, s', 1, d]; position_ids [b, s] picks, per batch and position, the row of sin/cos
/// (absent: row = position, and s' = s). sin and cos are used together: with either absent the
/// kernel builds its own tables and reads neither (Paddle: "if one of sin cos is empty, they are
/// all useless in kernel"), so both come back as given and nothing is sequence parallel.
/// rotary_emb_base (not in section 7's contract) is accepted as an attribute with Paddle's
/// default 10000.0; it only matters when Paddle builds sin/cos itself and changes no layout.
///
/// Notation: batch `a`, seq `b`, heads `c`; the head dim is `'1'` (a rotation pairs elements
/// across the whole head dim, so phi's rule replicates it). q, k, v and out_q/k/v are `abc1`
/// (`bac1` when time_major), position_ids `a1`, sin and cos `b1` (`1b11` 4-D).
///
/// Sequence parallelism: the seq dim keeps a sharding only when sin and cos are both given and
/// position_ids is absent (each device rotates its positions with its rows of sin and cos, which
/// then take q's seq sharding); otherwise seq is `'1'` everywhere and sin/cos, if both given, are
/// replicated.
/// Where seq will be replicated it proposes nothing in the merge (phi merges it and replicates
/// it afterwards, so its mesh dim can conflict with another axis and drop a useful sharding;
/// ours cannot). position_ids proposes its batch only, for the same reason (its seq is
/// replicated anyway: phi "merged mapping with dim 1 -> -1").
///
/// Forward: q, k, v and position_ids are merged in that order with the semantics' policy (fluid
/// first-wins, phi the co-shard union); size-1 dims propose nothing. GQA (hk != h): the heads'
/// mesh dims must split hk evenly, else they are dropped (phi replicates the heads; under phi we
/// drop the trailing mesh dims of a co-shard until it divides, under fluid the whole list, as
/// flash_attention does). q, k, v and the outputs take the merged mapping; sin and cos have
/// their head dim replicated, their seq q's seq mapping under sequence parallelism, else
/// replicated; position_ids its batch's mapping. Partial inputs come back whole and no output
/// is partial (as phi's rule). An absent input (shape []) comes back as given, and an absent k
/// or v gives an absent out_k or out_v (as given: shape [], mapping []). GQA reads k's heads, or
/// v's where k is absent.
///
/// Backward (phi's reverse): the same with out_q, out_k, out_v merged instead of q, k, v (and
/// position_ids not merged). phi's reverse compares the head dims where it means the heads and
/// tests the input v for absence where it means out_v (section 5 of the notes); we check that
/// each out_x has x's shape and test out_v.
///
/// Checks (`invalid_argument`, naming the operand and sizes; -1, unknown, matches any size):
/// q 4-D; k and v 4-D when given; q's heads a multiple of k's, k's other dims q's; v of k's
/// shape, or where k is absent, checked against q as k is; when sin and cos are both given: one
/// shape, 2-D or 4-D, 4-D with dims 0 and 2 of size 1, rows at least s with position_ids and
/// exactly s without, head dim d; position_ids [b, s] when given. Section 7 marks only v
/// optional; Paddle's rule takes every input but q as optional, and so do we.
///
/// fused_rope_grad (phi): inputs sin, cos, position_ids, out_q_grad, out_k_grad, out_v_grad,
/// every one but out_q_grad optional (absent in any combination, as in forward); outputs
/// q_grad, k_grad, v_grad, absent where out_k_grad or out_v_grad is. The gradient is the inverse
/// rotation of the output gradients with the same sin/cos rows (phi: forward on the grads, inputs
/// reordered), so the rule is forward with out_x_grad in place of x: the output gradients are
/// merged, each gradient takes its output gradient's mapping, sin/cos/position_ids as in
/// forward. No gradient is partial: a position's gradient reads only that position's output
/// gradient.
/// Both rules exist only in phi: fluid differs only in the merge policy.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/flash_attention.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `fused_rope` and `fused_rope_grad` (Paddle's defaults).
struct fused_rope_attributes {
  bool use_neox_rotary_style = true;  ///< rotate_half pairs i with i + d/2 (else 2i with 2i + 1)
  bool time_major = false;            ///< q, k, v are [s, b, h, d]
  double rotary_emb_base = 10000.0;   ///< the base of Paddle's own sin/cos (no layout effect)
};

namespace detail {

/// What fused_rope's rules share: the checks, the labels and the merge.
struct rope_kit {
  using attn = attention_kit;

  /// The labels of one call.
  struct labels {
    std::string_view qkv, sincos;
  };
  static constexpr std::string_view pos = "a1";

  /// The operands in forward's order (the grad rule passes its output gradients as q, k, v).
  struct operands {
    const dist_tensor_spec &q, &k, &v, &sin, &cos, &pos;
  };

  /// The messages that name q, k, v (forward) or the output gradients (grad rule).
  struct messages {
    const char* rank[3];
    const char* heads[2];  ///< k's, v's (v is compared with q only where k is absent)
    const char* dim[2];    ///< likewise
    const char* v_shape;
    const char* head_dim;
  };
  static constexpr messages forward_messages{
      {"q must be 4-D, but has rank {}", "k must be 4-D, but has rank {}", "v must be 4-D, but has rank {}"},
      {"q's number of heads ({}) must be a multiple of k's ({})", "q's number of heads ({}) must be a multiple of v's ({})"},
      {"k's dim {} has size {}, but q's has {}", "v's dim {} has size {}, but q's has {}"},
      "v must have k's shape, but its dim {} has size {}, not {}",
      "sin and cos have head dim {}, but q has {}"};
  static constexpr messages grad_messages{
      {"out_q_grad must be 4-D, but has rank {}", "out_k_grad must be 4-D, but has rank {}",
       "out_v_grad must be 4-D, but has rank {}"},
      {"out_q_grad's number of heads ({}) must be a multiple of out_k_grad's ({})",
       "out_q_grad's number of heads ({}) must be a multiple of out_v_grad's ({})"},
      {"out_k_grad's dim {} has size {}, but out_q_grad's has {}", "out_v_grad's dim {} has size {}, but out_q_grad's has {}"},
      "out_v_grad must have out_k_grad's shape, but its dim {} has size {}, not {}",
      "sin and cos have head dim {}, but out_q_grad has {}"};

  /// True if sin and cos are both given: with only one, the kernel uses neither.
  static constexpr bool has_tables(const operands& o) noexcept { return !is_absent(o.sin) && !is_absent(o.cos); }

  /// Checks the operands (the absent ones are not checked; with only one of sin and cos, neither
  /// is); returns the sizes the GQA drop needs (hk: k's heads, else v's, else unknown).
  static constexpr result<attn::sizes> check(const operands& o, bool time_major, const messages& msg) {
    using attn_kit = attention_kit;
    const dist_tensor_spec* qkv[3] = {&o.q, &o.k, &o.v};
    for (std::size_t i = 0; i < 3; ++i)
      if ((i == 0 || !is_absent(*qkv[i])) && qkv[i]->ndim() != 4)
        return make_error(error_kind::invalid_argument, "", msg.rank[i], qkv[i]->ndim());
    const auto& qs = o.q.shape();
    // k (i = 0) or v (i = 1) against q: q's heads a multiple of its heads, its other dims q's.
    const auto against_q = [&](const dist_tensor_spec& t, std::size_t i) -> status {
      const auto& ts = t.shape();
      if (qs[2] != -1 && ts[2] != -1 && (ts[2] <= 0 || qs[2] % ts[2] != 0))
        return make_error(error_kind::invalid_argument, "", msg.heads[i], qs[2], ts[2]);
      for (std::size_t d : {std::size_t{0}, std::size_t{1}, std::size_t{3}})
        if (attn_kit::differ(qs[d], ts[d])) return make_error(error_kind::invalid_argument, "", msg.dim[i], d, ts[d], qs[d]);
      return {};
    };
    if (!is_absent(o.k)) CTSPMD_TRY(against_q(o.k, 0));
    if (!is_absent(o.v) && is_absent(o.k)) CTSPMD_TRY(against_q(o.v, 1));
    if (!is_absent(o.v) && !is_absent(o.k))
      for (std::size_t d = 0; d < 4; ++d)
        if (attn_kit::differ(o.v.shape()[d], o.k.shape()[d]))
          return make_error(error_kind::invalid_argument, "", msg.v_shape, d, o.v.shape()[d], o.k.shape()[d]);
    const std::int64_t b = time_major ? qs[1] : qs[0];
    const std::int64_t s = time_major ? qs[0] : qs[1];
    const std::int64_t d = qs[3];
    if (has_tables(o)) {
      if (o.sin.ndim() != o.cos.ndim())
        return make_error(error_kind::invalid_argument, "", "sin and cos must have one shape, but have ranks {} and {}",
                          o.sin.ndim(), o.cos.ndim());
      const std::int64_t r = o.sin.ndim();
      for (std::size_t i = 0; i < o.sin.shape().size(); ++i)
        if (attn_kit::differ(o.sin.shape()[i], o.cos.shape()[i]))
          return make_error(error_kind::invalid_argument, "", "sin and cos must have one shape, but dim {} has sizes {} and {}",
                            i, o.sin.shape()[i], o.cos.shape()[i]);
      if (r != 2 && r != 4)
        return make_error(error_kind::invalid_argument, "",
                          "sin and cos must be 2-D [seq_len, head_dim] or 4-D [1, seq_len, 1, head_dim], but have rank {}", r);
      const auto& ss = o.sin.shape();
      if (r == 4 && (ss[0] != 1 || ss[2] != 1))
        return make_error(error_kind::invalid_argument, "",
                          "4-D sin and cos must be [1, seq_len, 1, head_dim], but dims 0 and 2 have sizes {} and {}", ss[0],
                          ss[2]);
      const std::int64_t rows = r == 2 ? ss[0] : ss[1];
      const std::int64_t cols = r == 2 ? ss[1] : ss[3];
      if (rows != -1 && s != -1) {
        if (is_absent(o.pos) && rows != s)
          return make_error(error_kind::invalid_argument, "",
                            "sin and cos have {} rows, but without position_ids must have seq_len = {}", rows, s);
        if (!is_absent(o.pos) && rows < s)
          return make_error(error_kind::invalid_argument, "", "sin and cos have {} rows, but need at least seq_len = {}",
                            rows, s);
      }
      if (attn_kit::differ(cols, d))
        return make_error(error_kind::invalid_argument, "", msg.head_dim, cols, d);
    }
    if (!is_absent(o.pos)) {
      if (o.pos.ndim() != 2)
        return make_error(error_kind::invalid_argument, "", "position_ids must be 2-D [batch, seq_len], but has rank {}",
                          o.pos.ndim());
      if (attn_kit::differ(o.pos.shape()[0], b) || attn_kit::differ(o.pos.shape()[1], s))
        return make_error(error_kind::invalid_argument, "", "position_ids has shape [{}, {}], but must be [{}, {}]",
                          o.pos.shape()[0], o.pos.shape()[1], b, s);
    }
    attn::sizes sz;
    sz.h = qs[2];
    sz.hk = !is_absent(o.k) ? o.k.shape()[2] : !is_absent(o.v) ? o.v.shape()[2] : -1;
    return sz;
  }

  /// The labels: seq sharded (sequence parallelism) only with sin and cos and no position_ids.
  static constexpr labels labels_of(const operands& o, bool time_major) {
    const bool sp = has_tables(o) && is_absent(o.pos);
    labels l;
    l.qkv = time_major ? (sp ? "bac1" : "1ac1") : (sp ? "abc1" : "a1c1");
    l.sincos = o.sin.ndim() == 4 ? (sp ? "1b11" : "1111") : (sp ? "b1" : "11");
    return l;
  }

  /// Pushes sin, cos, position_ids (in that order) under `map`; sin and cos as given unless both
  /// are (the kernel then reads neither).
  static constexpr void push_tables(dist_attrs& out, const operands& o, const labels& l, const axis_to_dim_map& map) {
    for (const dist_tensor_spec* t : {&o.sin, &o.cos}) {
      if (has_tables(o))
        attn::push_operand(out, *t, l.sincos, map);
      else
        out.push_back(t->dist_attr());
    }
    attn::push_operand(out, o.pos, pos, map);
  }
};

}  // namespace detail

/// The fused_rope rule.
struct fused_rope : rule_base<fused_rope, fused_rope_attributes> {
  static constexpr std::string_view name = "fused_rope";
  static constexpr operand_count input_count{6};
  static constexpr operand_count output_count{3};

  /// out_q, out_k, out_v: q's, k's and v's shapes (an absent one stays []).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0, 1, 2});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    using kit = detail::rope_kit;
    const kit::operands o{in[0], in[1], in[2], in[3], in[4], in[5]};
    const auto sz = kit::check(o, a.time_major, kit::forward_messages);
    if (!sz) return sz.error();
    const kit::labels l = kit::labels_of(o, a.time_major);
    const std::array<dist_tensor_spec, 4> ops{in[0], in[1], in[2], in[5]};
    axis_to_dim_map map;
    CTSPMD_TRY(kit::attn::merge(map, std::array{l.qkv, l.qkv, l.qkv, kit::pos}, ops, *sz, s));
    for (std::size_t i = 0; i < 3; ++i) kit::attn::push_operand(info.inputs, in[i], l.qkv, map);
    kit::push_tables(info.inputs, o, l, map);
    for (std::size_t i = 0; i < 3; ++i) kit::attn::push_operand(info.outputs, in[i], l.qkv, map);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& a, semantics s) {
    using kit = detail::rope_kit;
    const kit::operands o{in[0], in[1], in[2], in[3], in[4], in[5]};
    const auto sz = kit::check(o, a.time_major, kit::forward_messages);
    if (!sz) return sz.error();
    // out_q, out_k, out_v: the shapes of q, k, v (out_v absent exactly when v is).
    for (std::size_t i = 0; i < 3; ++i) {
      if (out[i].ndim() != in[i].ndim())
        return make_error(error_kind::invalid_argument, "", "out_{c} has rank {}, but its input has rank {}",
                          "qkv"[i], out[i].ndim(), in[i].ndim());
      for (std::size_t d = 0; d < out[i].shape().size(); ++d)
        if (detail::attention_kit::differ(out[i].shape()[d], in[i].shape()[d]))
          return make_error(error_kind::invalid_argument, "", "out_{c}'s dim {} has size {}, but its input's has {}",
                            "qkv"[i], d, out[i].shape()[d], in[i].shape()[d]);
    }
    const kit::labels l = kit::labels_of(o, a.time_major);
    axis_to_dim_map map;
    CTSPMD_TRY(kit::attn::merge(map, std::array{l.qkv, l.qkv, l.qkv}, out.first(3), *sz, s));
    for (std::size_t i = 0; i < 3; ++i) kit::attn::push_operand(info.inputs, in[i], l.qkv, map);
    kit::push_tables(info.inputs, o, l, map);
    for (std::size_t i = 0; i < 3; ++i) kit::attn::push_operand(info.outputs, out[i], l.qkv, map);
    return {};
  }
};

/// The fused_rope_grad rule.
struct fused_rope_grad : rule_base<fused_rope_grad, fused_rope_attributes> {
  static constexpr std::string_view name = "fused_rope_grad";
  static constexpr operand_count input_count{6};
  static constexpr operand_count output_count{3};

  /// q_grad, k_grad, v_grad: the shapes of out_q_grad, out_k_grad, out_v_grad (inputs 3 to 5).
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {3, 4, 5});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    using kit = detail::rope_kit;
    // sin, cos, position_ids, out_q_grad, out_k_grad, out_v_grad
    const kit::operands o{in[3], in[4], in[5], in[0], in[1], in[2]};
    const auto sz = kit::check(o, a.time_major, kit::grad_messages);
    if (!sz) return sz.error();
    const kit::labels l = kit::labels_of(o, a.time_major);
    const std::array<dist_tensor_spec, 4> ops{in[3], in[4], in[5], in[2]};
    axis_to_dim_map map;
    CTSPMD_TRY(kit::attn::merge(map, std::array{l.qkv, l.qkv, l.qkv, kit::pos}, ops, *sz, s));
    kit::push_tables(info.inputs, o, l, map);
    for (std::size_t i = 3; i < 6; ++i) kit::attn::push_operand(info.inputs, in[i], l.qkv, map);
    for (std::size_t i = 3; i < 6; ++i) kit::attn::push_operand(info.outputs, in[i], l.qkv, map);
    return {};
  }

  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
