#ifndef CTSPMD_DIST_TENSOR_DIST_ATTR_HPP
#define CTSPMD_DIST_TENSOR_DIST_ATTR_HPP
/// \file `tensor_dist_attr`: how one tensor is laid out on a mesh (the mesh dims that split
/// each tensor dim, partial status, batch dim).

#include <array>
#include <cstdint>
#include <initializer_list>

#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/process_mesh.hpp>

namespace ctspmd {

namespace detail {
struct tensor_dist_attr_access;
}  // namespace detail

/// A tensor's distribution: the mesh, which mesh dims split each tensor dim, and on which mesh
/// dims the tensor is partial (with the reduction that combines the parts).
///
/// The mapping has two forms. `multi_dims_mapping()` always works: per tensor dim the mesh dims
/// that split it, major first (`{{0, 1}, {}}`), empty for replicated. `dims_mapping()` is the
/// flat view for the common case where no tensor dim is split over two mesh dims (`{0, -1}`);
/// on a co-sharded attr it is an `invalid_argument`. Both forms build an attr from a brace list.
///
/// Invariants (checked by every constructor and mutator): mapping entries are mesh dims of
/// this mesh, no mesh dim appears twice in the whole mapping, partial dims are mesh dims of
/// this mesh, and no mesh dim is both sharding and partial.
///
/// Representation (compact: rules return several of these): per tensor dim its major mesh dim
/// (-1 if none), and per mesh dim the next, more minor, mesh dim of the same tensor dim (-1 at
/// the end of a list); per mesh dim its partial reduce type (-1 if not partial).
class tensor_dist_attr {
 public:
  /// Empty mesh, empty dims mapping. (User-provided, not defaulted: value-initialisation, as in
  /// `emplace_back()`, of a class with a defaulted constructor first zero-fills the whole
  /// object before the members' own initialisers.)
  constexpr tensor_dist_attr() noexcept {}
  /// An empty dims mapping (a rank-0 tensor, or one whose mapping is appended) on `mesh`.
  constexpr explicit tensor_dist_attr(const process_mesh& mesh) noexcept : mesh_(mesh) {}
  /// The flat `mapping` on `mesh` (`{mesh, {0, -1}}`); no partial status.
  constexpr tensor_dist_attr(const process_mesh& mesh, const ctspmd::dims_mapping& mapping)  // NOLINT: brace-init by design
      : mesh_(mesh) {
    set_dims_mapping(mapping);
  }
  /// The co-shard `mapping` on `mesh`; no partial status.
  constexpr tensor_dist_attr(const process_mesh& mesh, const ctspmd::multi_dims_mapping& mapping)  // NOLINT
      : mesh_(mesh) {
    set_dims_mapping(mapping);
  }
  /// The co-shard mapping written as a brace list, `{mesh, {{0, 1}, {}, {2}}}`.
  constexpr tensor_dist_attr(const process_mesh& mesh, std::initializer_list<mesh_dims> mapping)  // NOLINT
      : tensor_dist_attr(mesh, ctspmd::multi_dims_mapping(mapping)) {}

  /// Checks a flat dims mapping against a mesh without building anything.
  static constexpr status check(const process_mesh& mesh, const ctspmd::dims_mapping& mapping) {
    std::uint64_t seen = 0;  // bit m: mesh dim m seen (m < max_mesh_ndim <= 15)
    for (std::size_t i = 0; i < mapping.size(); ++i)
      if (const auto m = mapping[i]; m != -1 && !check_entry(mesh, m, seen))
        return entry_error(mesh, m, first_dim(mapping, m), i);
    return {};
  }
  /// Checks a co-shard mapping against a mesh without building anything.
  static constexpr status check(const process_mesh& mesh, const ctspmd::multi_dims_mapping& mapping) {
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < mapping.size(); ++i)
      for (const auto m : mapping[i])
        if (!check_entry(mesh, m, seen)) return entry_error(mesh, m, first_dim(mapping, m), i);
    return {};
  }
  static constexpr status check(const process_mesh& mesh, std::initializer_list<mesh_dims> mapping) {
    return check(mesh, ctspmd::multi_dims_mapping(mapping));
  }

  constexpr const ctspmd::process_mesh& process_mesh() const noexcept { return mesh_; }
  /// Number of tensor dims the mapping describes.
  constexpr std::size_t rank() const noexcept { return mapping_.size(); }
  /// True if some tensor dim is split over two or more mesh dims.
  constexpr bool is_co_sharded() const noexcept {
    return next_.any();
  }
  /// The flat dims mapping; an `invalid_argument` if a tensor dim is co-sharded (use
  /// `multi_dims_mapping()`, which always works).
  constexpr ctspmd::dims_mapping dims_mapping() const {
    if (is_co_sharded()) raise(co_shard_error());
    ctspmd::dims_mapping out;
    for (const auto m : mapping_) out.push_back(m);
    return out;
  }
  /// Per tensor dim, the mesh dims that split it, major first.
  constexpr ctspmd::multi_dims_mapping multi_dims_mapping() const {
    ctspmd::multi_dims_mapping out;
    for (std::size_t d = 0; d < mapping_.size(); ++d) out.push_back(mesh_dims_of(d));
    return out;
  }
  /// The mesh dims that split tensor dim `d` (< rank()), major first.
  constexpr mesh_dims mesh_dims_of(std::size_t d) const {
    mesh_dims out;
    for (std::int64_t m = mapping_[d]; m != -1; m = next_[static_cast<std::size_t>(m)]) out.push_back(m);
    return out;
  }
  /// The parts tensor dim `d` is split into: the product of the sizes of the mesh dims that
  /// split it (1 if none, or if `d` >= rank()).
  constexpr std::int64_t parts(std::size_t d) const noexcept {
    std::int64_t n = 1;
    if (d >= mapping_.size()) return n;
    for (std::int64_t m = mapping_.data()[d]; m != -1; m = next_[static_cast<std::size_t>(m)]) n *= mesh_.dim_size(m);
    return n;
  }
  /// The tensor dim that mesh dim `mesh_dim` splits, or -1 (also for a mesh dim out of range).
  constexpr std::int64_t sharded_tensor_dim(std::int64_t mesh_dim) const noexcept {
    for (std::size_t d = 0; d < mapping_.size(); ++d)
      for (std::int64_t m = mapping_.data()[d]; m != -1; m = next_[static_cast<std::size_t>(m)])
        if (m == mesh_dim) return static_cast<std::int64_t>(d);
    return -1;
  }
  /// True if mesh dim `mesh_dim` splits some tensor dim: it heads a list or follows in one.
  constexpr bool shards(std::int64_t mesh_dim) const noexcept {
    if (mesh_dim < 0) return false;
    for (const auto m : mapping_)
      if (m == mesh_dim) return true;
    return next_.holds(mesh_dim);
  }
  constexpr std::int64_t batch_dim() const noexcept { return batch_dim_; }
  constexpr void set_batch_dim(std::int64_t d) noexcept { batch_dim_ = d; }

  /// Replaces the dims mapping (checked against the mesh and the partial dims).
  constexpr void set_dims_mapping(const ctspmd::dims_mapping& mapping) {
    check(mesh_, mapping).check();
    mapping_.clear();
    for (const auto m : mapping) {
      if (m != -1) check_not_partial(m);
      mapping_.push_back(static_cast<std::int8_t>(m));  // in [-1, max_mesh_ndim): checked
    }
    next_ = {};
  }
  /// Replaces the dims mapping by a co-shard one (checked against the mesh and the partial dims).
  constexpr void set_dims_mapping(const ctspmd::multi_dims_mapping& mapping) {
    check(mesh_, mapping).check();
    mapping_.clear();
    next_ = {};
    for (const auto& list : mapping) {
      for (const auto m : list) check_not_partial(m);
      mapping_.push_back(static_cast<std::int8_t>(list.empty() ? -1 : list[0]));
      for (std::size_t k = 1; k < list.size(); ++k)
        next_.set(static_cast<std::size_t>(list[k - 1]), list[k]);
    }
  }
  constexpr void set_dims_mapping(std::initializer_list<mesh_dims> mapping) {
    set_dims_mapping(ctspmd::multi_dims_mapping(mapping));
  }

  /// Mesh dims on which the tensor is partial, ascending.
  constexpr mesh_dims partial_dims() const {
    mesh_dims out;
    for (std::size_t m = 0; m < max_mesh_ndim; ++m)
      if (partial_[m] >= 0) out.push_back(static_cast<std::int64_t>(m));
    return out;
  }
  /// Partial on `mesh_dim`, or on any mesh dim when `mesh_dim == -1`.
  constexpr bool is_partial(std::int64_t mesh_dim = -1) const noexcept {
    if (mesh_dim == -1) return partial_.any();
    return mesh_dim >= 0 && mesh_dim < static_cast<std::int64_t>(max_mesh_ndim) &&
           partial_[static_cast<std::size_t>(mesh_dim)] >= 0;
  }
  /// The reduction that combines the parts on `mesh_dim` (which must be partial).
  constexpr reduce_type partial_reduce_type(std::int64_t mesh_dim) const {
    if (!is_partial(mesh_dim))
      raise(make_error(error_kind::invalid_argument, "tensor_dist_attr", "the tensor is not partial on mesh dim {}",
                       mesh_dim));
    return static_cast<reduce_type>(partial_[static_cast<std::size_t>(mesh_dim)]);
  }
  /// Makes the tensor partial on `dims` (each a mesh dim of this mesh that neither shards
  /// a tensor dim nor is partial already).
  constexpr void set_partial_status(const mesh_dims& dims, reduce_type type = reduce_type::sum) {
    for (auto m : dims) {
      if (m < 0 || m >= mesh_.ndim())
        raise(make_error(error_kind::invalid_argument, "tensor_dist_attr", "partial dim {} is not a mesh dim in [0, {})",
                         m, mesh_.ndim()));
      if (is_partial(m))
        raise(make_error(error_kind::invalid_argument, "tensor_dist_attr", "the tensor is already partial on mesh dim {}",
                         m));
      if (shards(m))
        raise(make_error(error_kind::invalid_argument, "tensor_dist_attr",
                         "mesh dim {} cannot be partial: it shards tensor dim {}", m, sharded_tensor_dim(m)));
      partial_.set(static_cast<std::size_t>(m), static_cast<std::int64_t>(type));
    }
  }
  /// Removes all partial status.
  constexpr void clean_partial_status() noexcept { partial_ = {}; }
  /// Removes the partial status of `dims` (each must be partial).
  constexpr void clean_partial_dims(const mesh_dims& dims) {
    for (auto m : dims)
      if (!is_partial(m))
        raise(make_error(error_kind::invalid_argument, "tensor_dist_attr",
                         "cannot clean partial dim {}: the tensor is not partial on it", m));
    for (auto m : dims) partial_.set(static_cast<std::size_t>(m), -1);
  }

#if defined(__clang__)
  /// Compares the mapping first: dist attrs that differ mostly differ there, and propagation
  /// compares many (its table of distinct layouts). Clang only: with GCC the defaulted
  /// comparisons cost less memory (the flat 1,000-operator training step: 3,176 -> 3,065 MB).
  friend constexpr bool operator==(const tensor_dist_attr& a, const tensor_dist_attr& b) {
    return a.mapping_ == b.mapping_ && a.next_ == b.next_ && a.partial_ == b.partial_ && a.batch_dim_ == b.batch_dim_ &&
           a.mesh_ == b.mesh_;
  }
#else
  friend constexpr bool operator==(const tensor_dist_attr&, const tensor_dist_attr&) = default;
#endif

 private:
  // Builds attrs in their final place (see merge/sharding_merge.hpp): rules' outputs are
  // written once, where they are returned, instead of being built and then copied.
  friend struct detail::tensor_dist_attr_access;

  /// Per mesh dim a small value or -1 ("none"), stored plus one: the default, all zeros, says
  /// "none" everywhere and costs nothing to build in constant evaluation (attrs are built by
  /// the thousand there: every `spmd_info` holds 32).
  class per_mesh_dim {
   public:
    constexpr std::int64_t operator[](std::size_t m) const noexcept { return std::int64_t{biased_[m]} - 1; }
    constexpr void set(std::size_t m, std::int64_t v) noexcept { biased_[m] = static_cast<std::int8_t>(v + 1); }
    /// True if some mesh dim holds `v`.
    constexpr bool holds(std::int64_t v) const noexcept {
      for (const auto b : biased_)
        if (b == v + 1) return true;
      return false;
    }
    /// True if some mesh dim holds a value (not -1).
    constexpr bool any() const noexcept {
      for (const auto b : biased_)
        if (b != 0) return true;
      return false;
    }
#if defined(__clang__)
    /// (A loop: std::array's comparison goes through std::equal, many more Clang evaluation
    /// steps, and propagation compares attrs by the thousand. GCC: see operator== above.)
    friend constexpr bool operator==(const per_mesh_dim& a, const per_mesh_dim& b) noexcept {
      for (std::size_t m = 0; m < max_mesh_ndim; ++m)
        if (a.biased_[m] != b.biased_[m]) return false;
      return true;
    }
#else
    friend constexpr bool operator==(const per_mesh_dim&, const per_mesh_dim&) = default;
#endif

   private:
    std::array<std::int8_t, max_mesh_ndim> biased_{};
  };

  /// True if mapping entry `m` is a mesh dim of `mesh` not in `seen`; records it there.
  static constexpr bool check_entry(const ctspmd::process_mesh& mesh, std::int64_t m, std::uint64_t& seen) noexcept {
    if (m < 0 || m >= mesh.ndim()) return false;
    const std::uint64_t bit = std::uint64_t{1} << m;  // m < max_mesh_ndim <= 15
    if ((seen & bit) != 0) return false;
    seen |= bit;
    return true;
  }
  /// The error of entry `m` of tensor dim `i`, rejected by `check_entry`; `first` is the tensor
  /// dim that used `m` before, if it is a mesh dim seen twice.
  static constexpr error_info entry_error(const ctspmd::process_mesh& mesh, std::int64_t m, std::size_t first,
                                          std::size_t i) {
    if (m < 0 || m >= mesh.ndim())
      return make_error(error_kind::invalid_argument, "tensor_dist_attr",
                        m == -1 ? "dims mapping entry {} in the list of tensor dim {} is not a mesh dim in [0, {})"
                                : "dims mapping entry {} of tensor dim {} is not -1 or a mesh dim in [0, {})",
                        m, i, mesh.ndim());
    return make_error(error_kind::invalid_argument, "tensor_dist_attr",
                      first == i ? "mesh dim {} appears twice in the list of tensor dim {}"
                                 : "mesh dim {} shards both tensor dim {} and tensor dim {}",
                      m, first, i);
  }
  static constexpr std::size_t first_dim(const ctspmd::dims_mapping& mapping, std::int64_t m) {
    std::size_t j = 0;
    while (mapping[j] != m) ++j;
    return j;
  }
  static constexpr std::size_t first_dim(const ctspmd::multi_dims_mapping& mapping, std::int64_t m) {
    for (std::size_t j = 0; j < mapping.size(); ++j)
      for (const auto e : mapping[j])
        if (e == m) return j;
    return 0;
  }
  constexpr void check_not_partial(std::int64_t m) const {
    if (is_partial(m))
      raise(make_error(error_kind::invalid_argument, "tensor_dist_attr",
                       "mesh dim {} cannot shard a tensor dim: the tensor is partial on it", m));
  }
  static constexpr error_info co_shard_error() {
    return make_error(error_kind::invalid_argument, "tensor_dist_attr",
                      "a tensor dim is split over several mesh dims (co-shard): the flat dims_mapping() cannot "
                      "say it; use multi_dims_mapping()");
  }

  ctspmd::process_mesh mesh_{};
  static_vector<std::int8_t, max_rank> mapping_{};  ///< per tensor dim: its major mesh dim, or -1
  per_mesh_dim next_{};     ///< per mesh dim: the next mesh dim of its tensor dim, or -1
  per_mesh_dim partial_{};  ///< per mesh dim: -1, or a reduce_type
  std::int64_t batch_dim_ = 0;
};

}  // namespace ctspmd

#endif
