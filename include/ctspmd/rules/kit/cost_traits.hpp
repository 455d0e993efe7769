#ifndef CTSPMD_RULES_KIT_COST_TRAITS_HPP
#define CTSPMD_RULES_KIT_COST_TRAITS_HPP
/// \file What an operator costs a device, as its rule states it: its kind, its FLOPs and the
/// bytes it reads and writes in device memory, from its operands' local shapes (the part one
/// device holds, `local_operands`) and its attributes. The cost of a training step and the layout
/// search's estimate read these and nothing else, so a rule's cost is written once, in the rule.
///
/// A rule may declare, beside `output_shapes`:
/// - `static constexpr cost_kind kind` (`cost_kind::compute` when absent);
/// - `static constexpr std::int64_t flops(const local_operands& in, const local_operands& out,
///   const attributes&)`;
/// - `static constexpr std::int64_t bytes(const local_operands& in, const local_operands& out,
///   const attributes&)`;
/// - `static constexpr std::int64_t model_flops(...)`, the same arguments: the FLOPs the
///   published utilisation figures (MFU) count for it, when they differ from what the device
///   computes (a causal attention kernel skips the masked half; MFU counts the whole).
/// What it leaves out follows from its kind:
/// - `compute`: one FLOP per element of each output that is not a scalar; every operand read
///   or written once (its inputs' bytes and its outputs').
/// - `view`: no FLOPs and no bytes: its output is its input's buffer seen another way
///   (`reshape`, `squeeze`), unless propagation reshards it, which the collectives count.
/// - `moves`: data movement (`transpose`, `slice`, `concat`, gathers, embeddings): no FLOPs;
///   each output element written once and read once (twice its outputs' bytes).
/// - `communication`: an explicit reshard point (`assign`): nothing of its own: its cost is the
///   collectives its reshard reports (a view of its input when nothing moves).
/// A registry entry may give a name another kind than its rule's (`assign`, an elementwise rule,
/// is a reshard point). Grad rules state their own (a matmul's grad: twice its forward's, the
/// convention of model FLOPs). Every figure saturates at int64's largest value.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/saturating.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>

namespace ctspmd {

/// What kind of work an operator is (see the file comment).
enum class cost_kind : std::uint8_t { compute, view, moves, communication };

/// The name of a cost kind ("compute", "view", "moves", "communication").
constexpr std::string_view to_string(cost_kind k) noexcept {
  switch (k) {
    case cost_kind::compute: return "compute";
    case cost_kind::view: return "view";
    case cost_kind::moves: return "moves";
    case cost_kind::communication: return "communication";
  }
  return "unknown";
}

/// One side of an operator's operands as one device holds them: each operand's
/// global shape, its layout and its element size. Sizes are each dim's largest
/// part (a dim of size n split into p parts: ceil(n / p)), so that uneven
/// shards count the busiest device's. It refers to the shapes and layouts it is
/// given: they must outlive it.
class local_operands {
 public:
  /// Adds an operand of `shape` laid out as `layout`, `element_bytes` an
  /// element; `elements`, if known (the caller counted them), else -1.
  constexpr void push_back(const tensor_shape& shape, const tensor_dist_attr& layout, std::int64_t element_bytes,
                           std::int64_t elements = -1) {
    if (size_ == max_operands)
      raise(make_error(error_kind::invalid_argument, "cost", "more than {} operands", max_operands));
    shape_[size_] = &shape;
    layout_[size_] = &layout;
    element_bytes_[size_] = element_bytes;
    elements_[size_] = elements;
    ++size_;
  }
  /// (A temporary shape or layout would not outlive the call.)
  void push_back(const tensor_shape&&, const tensor_dist_attr&, std::int64_t, std::int64_t = -1) = delete;
  void push_back(const tensor_shape&, const tensor_dist_attr&&, std::int64_t, std::int64_t = -1) = delete;
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr std::size_t rank(std::size_t k) const { return shape_of(k).size(); }
  /// The local size of operand k's dim d (counted from the end when negative; a
  /// dim out of range is clamped; 1 for a scalar).
  constexpr std::int64_t dim(std::size_t k, std::int64_t d) const {
    const auto& shape = shape_of(k);
    const auto rank = static_cast<std::int64_t>(shape.size());
    if (rank == 0) return 1;
    if (d < 0) d += rank;
    const auto at = static_cast<std::size_t>(d < 0 ? 0 : d >= rank ? rank - 1 : d);
    const std::int64_t size = shape[at], parts = layout_[k]->parts(at);
    if (size < 0)
      raise(make_error(error_kind::invalid_argument, "cost",
                       "operand {} has a size unknown until run time at dim {}: costs need every size", k, at));
    return size / parts + (size % parts != 0);
  }
  /// Operand k's local elements (saturating).
  constexpr std::int64_t elements(std::size_t k) const {
    if (elements_[index_check(k)] >= 0) return elements_[k];
    std::int64_t n = 1;
    for (std::size_t d = 0; d < shape_[k]->size(); ++d)
      n = detail::saturating_product(n, dim(k, static_cast<std::int64_t>(d)));
    return n;
  }
  /// Operand k's local bytes (saturating).
  constexpr std::int64_t bytes(std::size_t k) const {
    return detail::saturating_product(elements(k), element_bytes_[index_check(k)]);
  }
  /// All operands' local bytes (saturating).
  constexpr std::int64_t total_bytes() const {
    std::int64_t n = 0;
    for (std::size_t k = 0; k < size_; ++k) n = detail::saturating_sum(n, bytes(k));
    return n;
  }

 private:
  constexpr std::size_t index_check(std::size_t k) const {
    if (k >= size_) raise(make_error(error_kind::invalid_argument, "cost", "operand {} of {}", k, size_));
    return k;
  }
  constexpr const tensor_shape& shape_of(std::size_t k) const { return *shape_[index_check(k)]; }

  const tensor_shape* shape_[max_operands]{};
  const tensor_dist_attr* layout_[max_operands]{};
  std::int64_t element_bytes_[max_operands]{};
  std::int64_t elements_[max_operands]{};
  std::size_t size_ = 0;
};

/// Whether rule `R` states its kind, its FLOPs, its bytes (see the file comment).
template <class R>
concept HasCostKind = requires {
  { R::kind } -> std::convertible_to<cost_kind>;
};
template <class R>
concept HasFlops = requires(const local_operands& l, const typename R::attributes& a) {
  { R::flops(l, l, a) } -> std::same_as<std::int64_t>;
};
template <class R>
concept HasModelFlops = requires(const local_operands& l, const typename R::attributes& a) {
  { R::model_flops(l, l, a) } -> std::same_as<std::int64_t>;
};
template <class R>
concept HasBytes = requires(const local_operands& l, const typename R::attributes& a) {
  { R::bytes(l, l, a) } -> std::same_as<std::int64_t>;
};

/// Rule `R`'s kind: its own, else `compute`.
template <class R>
inline constexpr cost_kind cost_kind_of = [] {
  if constexpr (HasCostKind<R>)
    return R::kind;
  else
    return cost_kind::compute;
}();

/// The FLOPs one device computes for an operator of kind `k` that states none:
/// one per element of each output that is not a scalar (compute), else none.
constexpr std::int64_t default_flops(cost_kind k, const local_operands& out) {
  if (k != cost_kind::compute) return 0;
  std::int64_t n = 0;
  for (std::size_t j = 0; j < out.size(); ++j)
    if (out.rank(j) > 0) n = detail::saturating_sum(n, out.elements(j));
  return n;
}
/// The bytes one device reads and writes for an operator of kind `k` that states none.
constexpr std::int64_t default_bytes(cost_kind k, const local_operands& in, const local_operands& out) {
  switch (k) {
    case cost_kind::compute:
      return detail::saturating_sum(in.total_bytes(), out.total_bytes());
    case cost_kind::moves:
      return detail::saturating_product(2, out.total_bytes());
    case cost_kind::view:
    case cost_kind::communication:
      return 0;
  }
  return 0;
}

/// Rule `R`'s FLOPs and bytes for one operator of kind `k` (`k` its registry
/// entry's kind, which a name may set apart from its rule's): the rule's own
/// formula, else the kind's default.
template <class R>
constexpr std::int64_t rule_flops(cost_kind k, const local_operands& in, const local_operands& out,
                                  const typename R::attributes& a) {
  if constexpr (HasFlops<R>)
    return R::flops(in, out, a);
  else
    return default_flops(k, out);
}
/// Rule `R`'s model FLOPs: its own, else its FLOPs.
template <class R>
constexpr std::int64_t rule_model_flops(cost_kind k, const local_operands& in, const local_operands& out,
                                        const typename R::attributes& a) {
  if constexpr (HasModelFlops<R>)
    return R::model_flops(in, out, a);
  else
    return rule_flops<R>(k, in, out, a);
}
template <class R>
constexpr std::int64_t rule_bytes(cost_kind k, const local_operands& in, const local_operands& out,
                                  const typename R::attributes& a) {
  if constexpr (HasBytes<R>)
    return R::bytes(in, out, a);
  else
    return default_bytes(k, in, out);
}

/// A matmul's FLOPs: 2 x (x's local elements) x (the local length of y's output
/// dim n), 2mnk; y a vector: 2 x x's elements.
constexpr std::int64_t matmul_flops(const local_operands& in, bool trans_y) {
  const std::int64_t n = in.rank(1) < 2 ? 1 : in.dim(1, trans_y ? -2 : -1);
  return detail::saturating_product(detail::saturating_product(2, in.elements(0)), n);
}

}  // namespace ctspmd

#endif
