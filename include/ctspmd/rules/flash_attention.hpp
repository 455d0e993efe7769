#ifndef CTSPMD_RULES_FLASH_ATTENTION_HPP
#define CTSPMD_RULES_FLASH_ATTENTION_HPP
/// \file The flash_attention rule (phi) and its grad rule `flash_attention_grad`.
///
/// flash_attention: inputs q [b, sq, h, d], k [b, skv, hk, d], v [b, skv, hk, dv],
/// fixed_seed_offset (optional, [2]) and attn_mask (optional, [b, h, sq, skv], each dim possibly
/// 1 to broadcast); outputs out [b, sq, h, dv] = softmax(q kᵀ / sqrt(d) + mask) v per head,
/// softmax [b, h, sq, skv] (the probabilities, returned when return_softmax), softmax_lse
/// [b, h, sq] (their log-sum-exp) and seed_offset [2]. GQA: hk may divide h; q head i then reads
/// k/v head i / (h / hk). The output shapes (`output_shapes`) are those, softmax's whether or
/// not return_softmax (forward infers its 4-D layout either way).
///
/// Notation: batch `a`, heads `c`, the query sequence `s`. Keys and values and the head dims are
/// `'1'`: an attention row reads every key and the whole head dim. q, k, v and out are `a1c1`,
/// the mask and softmax `ac11` (the mask's size-1 dims `'1'`), softmax_lse `ac1`,
/// seed_offset and fixed_seed_offset `1`: only the batch and the heads stay sharded, as phi's
/// rule does (it forces the sequences and head dims replicated before merging; Paddle's FlashAtt
/// unit tests in `spmd_rule_test.cc` check it).
///
/// **Context parallelism** is asked for with the attribute `context_parallel` (ours, not one of
/// Paddle's; default false, and the grad recipe passes it from flash_attention to
/// flash_attention_grad). With it the query sequence may stay sharded, as Llama 3 and Megatron do
/// it: q and out are `asc1`, the mask and softmax `acs1`, softmax_lse `acs` (k and v stay
/// `a1c1`): each device keeps its chunk of queries and reads every key and value (k and v
/// all-gathered over the sequence's mesh dims). Under `causal` a device's kernel masks by the
/// global positions of its chunk (a context-parallel kernel's offset); a load-balanced order
/// (device i holding chunks i and 2n - 1 - i of 2n) is a permutation of the sequence made before
/// the model, the layouts unchanged.
///
/// Decision (issue 38): without `context_parallel` both semantics give phi's answer, q's sequence
/// sharding dropped. semantics::phi promises Paddle's answers, and Paddle's only flash attention
/// rule is phi's: the fluid-era rule set (spmd-semantics.md, section 3.1) had none, so there is
/// no fluid behaviour to keep, and the semantics differ here only in the merge policy. A
/// context-parallel kernel (one that offsets a causal mask by its chunk's position and whose k
/// and v gradients are partial) is a different kernel from Paddle's, so it is asked for by name
/// rather than inferred from a layout; with the attribute both semantics keep the sequence.
///
/// Checks (`invalid_argument`, naming the operand and sizes): q, k and v 4-D; one batch size; k
/// and v of one sequence length and one number of heads (flash attention's kernels need it; phi
/// checks only that q's heads are a multiple of each); q's heads a multiple of k's; q and k of
/// one head dim; a mask (when given) 4-D with each dim 1 or the size the others give;
/// fixed_seed_offset (when given) 1-D. -1 (unknown) matches any size.
///
/// Forward: q, k, v and the mask are merged in that order over `a` and `c` (and `s` under
/// `context_parallel`) with the semantics' policy (fluid first-wins, phi the co-shard union; as in
/// phi's rule, which merges one mesh dim per axis, a given sharding is not dropped for
/// divisibility); size-1 dims propose nothing. GQA (hk != h): the heads' mesh dims must also split
/// hk evenly, else they are dropped (phi replicates the heads when hk is not divisible; under phi
/// we drop the trailing mesh dims of a co-shard until it divides, as phi's merge does for
/// divisibility, under fluid the whole list). Every input comes back with the merged mapping of its
/// labels and without partial status (softmax is not linear), fixed_seed_offset replicated; the
/// outputs take the merged mapping, none partial. An absent optional input comes back as given.
///
/// Backward (phi's reverse): out, softmax (when given, i.e. not shape []) and softmax_lse are
/// merged over `a` and `c` (and `s`; their other dims replicated), the GQA drop applied; q, k, v
/// and the mask take the merged mapping, fixed_seed_offset replicated; the outputs come back with
/// it. phi builds v's attr from k's and the reverse's out from v's (section 5 of the notes); we
/// build each from its own operand.
///
/// flash_attention_grad (phi): inputs q, k, v, out, softmax_lse, seed_offset, attn_mask
/// (optional), out_grad; outputs q_grad, k_grad, v_grad; attributes dropout, causal and
/// context_parallel. q, k, v, out, out_grad, softmax_lse and the mask are merged over `a` and `c`
/// (and `s` under `context_parallel`) as above (the checks of forward, plus out and out_grad of
/// shape [b, sq, h, dv] and softmax_lse [b, h, sq]); every input comes back with the merged
/// mapping (seed_offset replicated, k and v whole in the sequence: gathered again), and each
/// gradient takes its operand's. Without context parallelism a mesh dim that shards q's sequence
/// is dropped there and may go to the heads where out or softmax_lse shard them (Paddle's FlashAtt
/// grad vector: q [0, 1, -1, -1], out [0, -1, 1, -1] give q, k, v and their gradients
/// [0, -1, 1, -1]). Attention's gradients for a batch and a head read only that batch and head
/// (and its GQA group): k_grad sums over the q heads of a group, which live on the device that
/// holds their k head; no gradient is partial. But under `context_parallel` a device holding a
/// chunk of queries has only its chunk's share of every key's and value's gradient: k_grad and
/// v_grad are partial (sum) on the query sequence's mesh dims (reduce-scattered to a
/// sequence-sharded k and v).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ctspmd/dist/mesh_dim_list.hpp>
#include <ctspmd/merge/partial.hpp>
#include <ctspmd/notation/axes.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `flash_attention` (Paddle's defaults).
struct flash_attention_attributes {
  double dropout = 0.0;            ///< dropout probability on the attention weights
  bool causal = false;             ///< a query attends only to keys up to its position
  bool return_softmax = false;     ///< the softmax output is returned
  bool is_test = false;            ///< inference: no dropout
  std::string_view rng_name = "";  ///< the random generator's name
  bool context_parallel = false;   ///< ours, not Paddle's: q's sequence may stay sharded
};

/// Attributes of `flash_attention_grad` (Paddle's defaults).
struct flash_attention_grad_attributes {
  double dropout = 0.0;  ///< dropout probability of the forward pass
  bool causal = false;   ///< the forward pass was causal
  bool context_parallel = false;  ///< ours, not Paddle's: q's sequence may stay sharded
};

namespace detail {

/// What flash attention's rules share: the operands' checks, the merge and the GQA drop.
struct attention_kit {
  static constexpr std::string_view kv = "a1c1";  ///< k, v
  static constexpr std::string_view one = "1";    ///< seed offsets

  /// The labels that depend on context parallelism: the query sequence `s`, or `'1'` (phi's).
  struct labels {
    std::string_view query;  ///< q, out, out_grad
    std::string_view mask;   ///< attn_mask, softmax
    std::string_view lse;    ///< softmax_lse
  };
  static constexpr labels labels_for(bool context_parallel) noexcept {
    return context_parallel ? labels{"asc1", "acs1", "acs"} : labels{"a1c1", "ac11", "ac1"};
  }

  /// The sizes the checks compare.
  struct sizes {
    std::int64_t b = -1, sq = -1, h = -1, hk = -1, skv = -1, dv = -1;
  };

  static constexpr bool differ(std::int64_t a, std::int64_t b) noexcept { return a != -1 && b != -1 && a != b; }

  /// q, k, v: 4-D, one batch, k and v alike, q's heads a multiple of k's, one head dim.
  static constexpr result<sizes> check_qkv(const dist_tensor_spec& q, const dist_tensor_spec& k,
                                           const dist_tensor_spec& v) {
    const dist_tensor_spec* ops[3] = {&q, &k, &v};
    for (std::size_t i = 0; i < 3; ++i)
      if (ops[i]->ndim() != 4)
        return make_error(error_kind::invalid_argument, "",
                          i == 0   ? "q must be 4-D [batch, seq_len, num_heads, head_dim], but has rank {}"
                          : i == 1 ? "k must be 4-D [batch, seq_len, num_heads, head_dim], but has rank {}"
                                   : "v must be 4-D [batch, seq_len, num_heads, head_dim], but has rank {}",
                          ops[i]->ndim());
    const auto& qs = q.shape();
    const auto& ks = k.shape();
    const auto& vs = v.shape();
    if (differ(qs[0], ks[0]) || differ(qs[0], vs[0]))
      return make_error(error_kind::invalid_argument, "", "q, k and v must have one batch size, but have {}, {} and {}",
                        qs[0], ks[0], vs[0]);
    if (differ(ks[1], vs[1]))
      return make_error(error_kind::invalid_argument, "", "k and v must have one sequence length, but have {} and {}",
                        ks[1], vs[1]);
    if (differ(ks[2], vs[2]))
      return make_error(error_kind::invalid_argument, "", "k and v must have one number of heads, but have {} and {}",
                        ks[2], vs[2]);
    if (qs[2] != -1 && ks[2] != -1 && (ks[2] <= 0 || qs[2] % ks[2] != 0))
      return make_error(error_kind::invalid_argument, "",
                        "q's number of heads ({}) must be a multiple of k's and v's ({})", qs[2], ks[2]);
    if (differ(qs[3], ks[3]))
      return make_error(error_kind::invalid_argument, "", "q and k must have one head dim, but have {} and {}", qs[3],
                        ks[3]);
    sizes s;
    s.b = qs[0] != -1 ? qs[0] : ks[0];
    s.sq = qs[1];
    s.h = qs[2];
    s.hk = ks[2] != -1 ? ks[2] : vs[2];
    s.skv = ks[1] != -1 ? ks[1] : vs[1];
    s.dv = vs[3];
    return s;
  }

  /// An optional attn_mask: absent, or 4-D [b, h, sq, skv] with each dim 1 or that size.
  static constexpr status check_mask(const dist_tensor_spec& m, const sizes& s) {
    if (is_absent(m)) return {};
    if (m.ndim() != 4)
      return make_error(error_kind::invalid_argument, "", "attn_mask must be 4-D [batch, num_heads, seq_q, seq_kv], but has rank {}",
                        m.ndim());
    const std::int64_t want[4] = {s.b, s.h, s.sq, s.skv};
    for (std::size_t d = 0; d < 4; ++d)
      if (m.shape()[d] != 1 && differ(m.shape()[d], want[d]))
        return make_error(error_kind::invalid_argument, "", "attn_mask's dim {} has size {}, but must be 1 or {}", d,
                          m.shape()[d], want[d]);
    return {};
  }

  /// A tensor that must have `want`'s sizes (-1 matches any), named in `format` (values: dim,
  /// its size, the wanted size).
  template <std::size_t N>
  static constexpr status check_shape(const dist_tensor_spec& t, const std::array<std::int64_t, N>& want,
                                      const char* rank_format, const char* format) {
    if (t.ndim() != static_cast<std::int64_t>(N))
      return make_error(error_kind::invalid_argument, "", rank_format, t.ndim(), N);
    for (std::size_t d = 0; d < N; ++d)
      if (differ(t.shape()[d], want[d])) return make_error(error_kind::invalid_argument, "", format, d, t.shape()[d], want[d]);
    return {};
  }

  /// Merges `specs` (labelled `labels`; absent ones skipped) and applies the GQA drop.
  template <std::size_t N>
  static constexpr status merge(axis_to_dim_map& map, const std::array<std::string_view, N>& labels, spec_span specs,
                                const sizes& s, semantics sem) {
    std::array<std::string_view, N> ls = labels;
    for (std::size_t i = 0; i < N; ++i)
      if (is_absent(specs[i])) ls[i] = {};  // an absent operand proposes nothing
    CTSPMD_TRY(merge_operands(map, std::span<const std::string_view, N>(ls), specs, sem,
                              {/*merge_conflicts=*/true, /*size_one_unsharded=*/true}));
    if (s.hk == -1 || s.hk == s.h) return {};
    mesh_dim_list heads = map.list('c');
    const process_mesh& mesh = specs[0].process_mesh();
    if (sem == semantics::fluid) {
      if (s.hk % heads.shards(mesh) != 0) heads = mesh_dim_list{};
    } else {
      while (!heads.empty() && s.hk % heads.shards(mesh) != 0) heads.pop_back();
    }
    map.set('c', heads);
    return {};
  }

  /// Pushes `spec` labelled `labels` under `map` (size-1 dims replicated), or as given if absent.
  static constexpr void push_operand(dist_attrs& out, const dist_tensor_spec& spec, std::string_view labels,
                                     const axis_to_dim_map& map) {
    if (is_absent(spec)) {
      out.push_back(spec.dist_attr());
      return;
    }
    push(out, spec.dist_attr(), size_one_unsharded{labels, spec.shape()}, map);
  }
  /// A seed offset: replicated (every dim), or as given if absent.
  static constexpr void push_replicated(dist_attrs& out, const dist_tensor_spec& spec) {
    if (is_absent(spec)) {
      out.push_back(spec.dist_attr());
      return;
    }
    out.push_back(replicated_on_mesh(spec.dist_attr()));
  }
};

}  // namespace detail

/// Attention's FLOPs on a device: 4 x (q's local elements) x (k's local length), halved when causal.
constexpr std::int64_t attention_flops(const local_operands& in, bool causal) {
  using ctspmd::detail::saturating_product;
  return saturating_product(saturating_product(4, in.elements(0)), in.dim(1, 1)) / (causal ? 2 : 1);
}

/// The flash_attention rule.
struct flash_attention : rule_base<flash_attention, flash_attention_attributes> {
  static constexpr std::string_view name = "flash_attention";
  static constexpr operand_count input_count{3, 5};
  static constexpr operand_count output_count{4};

  /// out [b, sq, h, dv], softmax [b, h, sq, skv], softmax_lse [b, h, sq], seed_offset [2].
  /// 4 x (q's local elements) x (k's local length): QKᵀ and the product with V, 2 x b s s' h d
  /// each; halved when causal (the kernel skips the masked half).
  static constexpr std::int64_t flops(const local_operands& in, const local_operands&, const attributes& a) {
    return attention_flops(in, a.causal);
  }
  /// Utilisation figures count the whole product, causal or not.
  static constexpr std::int64_t model_flops(const local_operands& in, const local_operands&, const attributes&) {
    return attention_flops(in, false);
  }
  /// Its inputs read, its outputs written, but for the probabilities unless returned (the kernel
  /// never writes them to memory).
  static constexpr std::int64_t bytes(const local_operands& in, const local_operands& out, const attributes& a) {
    std::int64_t n = in.total_bytes();
    for (std::size_t j = 0; j < out.size(); ++j)
      if (j != 1 || a.return_softmax) n = ctspmd::detail::saturating_sum(n, out.bytes(j));
    return n;
  }
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    const auto sz = check(in);
    if (!sz) return sz.error();
    out.push_back({sz->b, sz->sq, sz->h, sz->dv});
    out.push_back({sz->b, sz->h, sz->sq, sz->skv});
    out.push_back({sz->b, sz->h, sz->sq});
    out.push_back({2});
    return {};
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    using kit = detail::attention_kit;
    const auto lab = kit::labels_for(a.context_parallel);
    const auto sz = check(in);
    if (!sz) return sz.error();
    const dist_tensor_spec none;
    const dist_tensor_spec& seed = in.size() > 3 ? in[3] : none;
    const dist_tensor_spec& mask = in.size() > 4 ? in[4] : none;
    const std::array<dist_tensor_spec, 4> ops{in[0], in[1], in[2], mask};
    axis_to_dim_map map;
    CTSPMD_TRY(kit::merge(map, std::array{lab.query, kit::kv, kit::kv, lab.mask}, ops, *sz, s));
    kit::push_operand(info.inputs, in[0], lab.query, map);
    for (std::size_t i = 1; i < 3; ++i) kit::push_operand(info.inputs, in[i], kit::kv, map);
    if (in.size() > 3) kit::push_replicated(info.inputs, seed);
    if (in.size() > 4) kit::push_operand(info.inputs, mask, lab.mask, map);
    push(info.outputs, in[0].dist_attr(), lab.query, map);
    push(info.outputs, in[0].dist_attr(), lab.mask, map);
    push(info.outputs, in[0].dist_attr(), lab.lse, map);
    push(info.outputs, in[0].dist_attr(), kit::one, map);
    return {};
  }

  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes& a, semantics s) {
    using kit = detail::attention_kit;
    const auto lab = kit::labels_for(a.context_parallel);
    const auto sz = check(in);
    if (!sz) return sz.error();
    CTSPMD_TRY(kit::check_shape(out[0], std::array{sz->b, sz->sq, sz->h, sz->dv},
                                "out has rank {}, but must have rank {}", "out's dim {} has size {}, but must be {}"));
    if (!is_absent(out[1]))
      CTSPMD_TRY(kit::check_shape(out[1], std::array{sz->b, sz->h, sz->sq, sz->skv},
                                  "softmax has rank {}, but must have rank {} (or be absent, shape [])",
                                  "softmax's dim {} has size {}, but must be {}"));
    CTSPMD_TRY(kit::check_shape(out[2], std::array{sz->b, sz->h, sz->sq}, "softmax_lse has rank {}, but must have rank {}",
                                "softmax_lse's dim {} has size {}, but must be {}"));
    axis_to_dim_map map;
    CTSPMD_TRY(kit::merge(map, std::array{lab.query, lab.mask, lab.lse}, out.first(3), *sz, s));
    kit::push_operand(info.inputs, in[0], lab.query, map);
    for (std::size_t i = 1; i < 3; ++i) kit::push_operand(info.inputs, in[i], kit::kv, map);
    if (in.size() > 3) kit::push_replicated(info.inputs, in[3]);
    if (in.size() > 4) kit::push_operand(info.inputs, in[4], lab.mask, map);
    kit::push_operand(info.outputs, out[0], lab.query, map);
    kit::push_operand(info.outputs, out[1], lab.mask, map);
    kit::push_operand(info.outputs, out[2], lab.lse, map);
    kit::push_replicated(info.outputs, out[3]);
    return {};
  }

 private:
  static constexpr result<detail::attention_kit::sizes> check(spec_span in) {
    using kit = detail::attention_kit;
    const auto sz = kit::check_qkv(in[0], in[1], in[2]);
    if (!sz) return sz.error();
    if (in.size() > 3 && !is_absent(in[3]) && in[3].ndim() != 1)
      return make_error(error_kind::invalid_argument, "", "fixed_seed_offset must be 1-D, but has rank {}", in[3].ndim());
    if (in.size() > 4) CTSPMD_TRY(kit::check_mask(in[4], *sz));
    return sz;
  }
};

/// The flash_attention_grad rule.
struct flash_attention_grad : rule_base<flash_attention_grad, flash_attention_grad_attributes> {
  static constexpr std::string_view name = "flash_attention_grad";
  static constexpr operand_count input_count{8};
  static constexpr operand_count output_count{3};

  /// q_grad, k_grad, v_grad: q's, k's and v's shapes.
  /// Twice the forward's (the convention of model FLOPs).
  static constexpr std::int64_t flops(const local_operands& in, const local_operands&, const attributes& a) {
    return ctspmd::detail::saturating_product(2, attention_flops(in, a.causal));
  }
  static constexpr std::int64_t model_flops(const local_operands& in, const local_operands&, const attributes&) {
    return ctspmd::detail::saturating_product(2, attention_flops(in, false));
  }
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0, 1, 2});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes& a, semantics s) {
    using kit = detail::attention_kit;
    const auto lab = kit::labels_for(a.context_parallel);
    // q, k, v, out, softmax_lse, seed_offset, attn_mask, out_grad
    const auto sz = kit::check_qkv(in[0], in[1], in[2]);
    if (!sz) return sz.error();
    CTSPMD_TRY(kit::check_shape(in[3], std::array{sz->b, sz->sq, sz->h, sz->dv}, "out has rank {}, but must have rank {}",
                                "out's dim {} has size {}, but must be {}"));
    CTSPMD_TRY(kit::check_shape(in[4], std::array{sz->b, sz->h, sz->sq}, "softmax_lse has rank {}, but must have rank {}",
                                "softmax_lse's dim {} has size {}, but must be {}"));
    CTSPMD_TRY(kit::check_mask(in[6], *sz));
    CTSPMD_TRY(kit::check_shape(in[7], std::array{sz->b, sz->sq, sz->h, sz->dv},
                                "out_grad has rank {}, but must have rank {}", "out_grad's dim {} has size {}, but must be {}"));
    const std::array<dist_tensor_spec, 7> ops{in[0], in[1], in[2], in[3], in[7], in[4], in[6]};
    axis_to_dim_map map;
    CTSPMD_TRY(kit::merge(map, std::array{lab.query, kit::kv, kit::kv, lab.query, lab.query, lab.lse, lab.mask},
                          ops, *sz, s));
    kit::push_operand(info.inputs, in[0], lab.query, map);
    for (std::size_t i = 1; i < 3; ++i) kit::push_operand(info.inputs, in[i], kit::kv, map);
    kit::push_operand(info.inputs, in[3], lab.query, map);
    kit::push_operand(info.inputs, in[4], lab.lse, map);
    kit::push_replicated(info.inputs, in[5]);
    kit::push_operand(info.inputs, in[6], lab.mask, map);
    kit::push_operand(info.inputs, in[7], lab.query, map);
    kit::push_operand(info.outputs, in[0], lab.query, map);
    // A chunk of queries gives its share of every key's and value's gradient.
    const mesh_dims chunks = sharding_mesh_dims(map, "s");
    for (std::size_t i = 1; i < 3; ++i) {
      kit::push_operand(info.outputs, in[i], kit::kv, map);
      if (!chunks.empty()) info.outputs.back().set_partial_status(chunks);
    }
    return {};
  }

  static constexpr status backward(spmd_info&, spec_span, spec_span, const attributes&, semantics) {
    return no_reverse_inference();
  }
};

}  // namespace ctspmd::rules

#endif
