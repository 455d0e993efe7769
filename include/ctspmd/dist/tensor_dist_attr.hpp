#ifndef CTSPMD_DIST_TENSOR_DIST_ATTR_HPP
#define CTSPMD_DIST_TENSOR_DIST_ATTR_HPP
/// \file `tensor_dist_attr`: how one tensor is laid out on a mesh (dims mapping, partial
/// status, batch dim).

#include <array>
#include <cstdint>

#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/process_mesh.hpp>

namespace ctspmd {

namespace detail {
struct tensor_dist_attr_access;
}  // namespace detail

/// A tensor's distribution: the mesh, which mesh dim splits each tensor dim, and on which
/// mesh dims the tensor is partial (with the reduction that combines the parts).
/// Invariants (checked by every mutator): dims-mapping entries are -1 or mesh dims of this
/// mesh, no mesh dim appears twice, partial dims are mesh dims of this mesh, and no mesh dim
/// is both sharding and partial.
class tensor_dist_attr {
 public:
  /// Empty mesh, empty dims mapping. (User-provided, not defaulted: value-initialisation, as in
  /// `emplace_back()`, of a class with a defaulted constructor first zero-fills the whole
  /// object, which GCC 12 does with a slow `rep stos`, before the members' own initialisers.)
  constexpr tensor_dist_attr() noexcept {}
  /// An empty dims mapping (a rank-0 tensor, or one whose mapping is appended) on `mesh`.
  constexpr explicit tensor_dist_attr(const process_mesh& mesh) noexcept : mesh_(mesh) {}
  /// `mapping` on `mesh`; no partial status.
  constexpr tensor_dist_attr(const process_mesh& mesh, const ctspmd::dims_mapping& mapping)  // NOLINT: brace-init by design
      : mesh_(mesh) {
    set_dims_mapping(mapping);
  }

  /// Checks a dims mapping against a mesh without building anything.
  static constexpr status check(const process_mesh& mesh, const ctspmd::dims_mapping& mapping) {
    // One pass with a bit per mesh dim seen: every attr a rule builds is checked, so this is
    // on the hot path. The quadratic search for the earlier dim runs only to word an error.
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < mapping.size(); ++i) {
      const auto m = mapping[i];
      if (m == -1) continue;
      if (m < -1 || m >= mesh.ndim())
        return make_error(error_kind::invalid_argument, "tensor_dist_attr",
                          "dims mapping entry {} of tensor dim {} is not -1 or a mesh dim in [0, {})", m, i, mesh.ndim());
      const std::uint64_t bit = std::uint64_t{1} << m;  // m < mesh.ndim() <= max_mesh_ndim <= 64
      if ((seen & bit) != 0) {
        std::size_t j = 0;
        while (mapping[j] != m) ++j;
        return make_error(error_kind::invalid_argument, "tensor_dist_attr",
                          "mesh dim {} shards both tensor dim {} and tensor dim {}", m, j, i);
      }
      seen |= bit;
    }
    return {};
  }

  constexpr const ctspmd::process_mesh& process_mesh() const noexcept { return mesh_; }
  constexpr const ctspmd::dims_mapping& dims_mapping() const noexcept { return mapping_; }
  constexpr std::int64_t batch_dim() const noexcept { return batch_dim_; }
  constexpr void set_batch_dim(std::int64_t d) noexcept { batch_dim_ = d; }

  /// Replaces the dims mapping (checked against the mesh and the partial dims).
  constexpr void set_dims_mapping(const ctspmd::dims_mapping& mapping) {
    check(mesh_, mapping).check();
    check_not_partial(mapping);
    mapping_ = mapping;
  }

  /// Mesh dims on which the tensor is partial, ascending.
  constexpr mesh_dims partial_dims() const {
    mesh_dims out;
    for (std::size_t m = 0; m < partial_.size(); ++m)
      if (partial_[m] >= 0) out.push_back(static_cast<std::int64_t>(m));
    return out;
  }
  /// Partial on `mesh_dim`, or on any mesh dim when `mesh_dim == -1`.
  constexpr bool is_partial(std::int64_t mesh_dim = -1) const noexcept {
    if (mesh_dim == -1) {
      for (auto r : partial_)
        if (r >= 0) return true;
      return false;
    }
    return mesh_dim >= 0 && mesh_dim < static_cast<std::int64_t>(partial_.size()) &&
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
      for (auto d : mapping_)
        if (d == m)
          raise(make_error(error_kind::invalid_argument, "tensor_dist_attr",
                           "mesh dim {} cannot be partial: it shards a tensor dim", m));
      partial_[static_cast<std::size_t>(m)] = static_cast<std::int8_t>(type);
    }
  }
  /// Removes all partial status.
  constexpr void clean_partial_status() noexcept {
    for (auto& r : partial_) r = -1;
  }
  /// Removes the partial status of `dims` (each must be partial).
  constexpr void clean_partial_dims(const mesh_dims& dims) {
    for (auto m : dims)
      if (!is_partial(m))
        raise(make_error(error_kind::invalid_argument, "tensor_dist_attr",
                         "cannot clean partial dim {}: the tensor is not partial on it", m));
    for (auto m : dims) partial_[static_cast<std::size_t>(m)] = -1;
  }

  friend constexpr bool operator==(const tensor_dist_attr&, const tensor_dist_attr&) = default;

 private:
  // Builds attrs in their final place (see merge/sharding_merge.hpp): rules' outputs are
  // written once, where they are returned, instead of being built and then copied.
  friend struct detail::tensor_dist_attr_access;

  constexpr void check_not_partial(const ctspmd::dims_mapping& mapping) const {
    for (auto m : mapping)
      if (m != -1 && is_partial(m))
        raise(make_error(error_kind::invalid_argument, "tensor_dist_attr",
                         "mesh dim {} cannot shard a tensor dim: the tensor is partial on it", m));
  }

  ctspmd::process_mesh mesh_{};
  ctspmd::dims_mapping mapping_{};
  std::array<std::int8_t, max_mesh_ndim> partial_ = filled_partial();  // -1, or a reduce_type per mesh dim
  std::int64_t batch_dim_ = 0;

  static constexpr std::array<std::int8_t, max_mesh_ndim> filled_partial() noexcept {
    std::array<std::int8_t, max_mesh_ndim> a{};
    for (auto& r : a) r = -1;
    return a;
  }
};

}  // namespace ctspmd

#endif
