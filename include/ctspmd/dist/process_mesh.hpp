#ifndef CTSPMD_DIST_PROCESS_MESH_HPP
#define CTSPMD_DIST_PROCESS_MESH_HPP
/// \file `process_mesh`, and the shape and dims-mapping vocabulary types.

#include <cstdint>

#include <ctspmd/core/config.hpp>
#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>

namespace ctspmd {

/// A tensor's shape; -1 is a size known only at run time.
using tensor_shape = static_vector<std::int64_t, max_rank>;
/// Per tensor dim: -1 (replicated) or the mesh dim that splits it.
using dims_mapping = static_vector<std::int64_t, max_rank>;
/// A set or list of mesh dims (partial dims, for instance).
using mesh_dims = static_vector<std::int64_t, max_mesh_ndim>;

/// How the per-device parts of a partial tensor combine into its value.
enum class reduce_type : std::int8_t { sum, max, min, prod, avg, any, all };

/// The snake_case name of a reduce type ("sum", "max", ...).
constexpr const char* to_string(reduce_type r) noexcept {
  constexpr const char* names[] = {"sum", "max", "min", "prod", "avg", "any", "all"};
  const auto i = static_cast<std::int8_t>(r);
  return i >= 0 && i < 7 ? names[i] : "unknown";
}

/// An n-dimensional grid of devices, e.g. shape [2, 4] (`ndim() <= max_mesh_ndim`).
class process_mesh {
 public:
  using shape_type = static_vector<std::int64_t, max_mesh_ndim>;

  /// The empty mesh (no dims): what a default dist attr lives on.
  constexpr process_mesh() noexcept = default;
  /// A mesh of the given shape; every size must be positive.
  constexpr process_mesh(const tensor_shape& shape) {  // NOLINT: implicit from a shape list by design
    check(shape).check();
    for (auto s : shape) shape_.push_back(s);
  }

  /// Checks a mesh shape without building the mesh.
  static constexpr status check(const tensor_shape& shape) {
    if (shape.size() > max_mesh_ndim)
      return make_error(error_kind::invalid_argument, "process_mesh",
                        "a mesh of {} dims exceeds max_mesh_ndim = {} (define CTSPMD_MAX_MESH_NDIM)", shape.size(),
                        max_mesh_ndim);
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (shape[i] <= 0)
        return make_error(error_kind::invalid_argument, "process_mesh", "mesh dim {} has size {}; sizes must be positive",
                          i, shape[i]);
    return {};
  }

  constexpr const shape_type& shape() const noexcept { return shape_; }
  constexpr std::int64_t ndim() const noexcept { return static_cast<std::int64_t>(shape_.size()); }
  /// Size of mesh dim `d` (which must be in [0, ndim())).
  constexpr std::int64_t dim_size(std::int64_t d) const { return shape_[static_cast<std::size_t>(d)]; }
  /// Number of devices.
  constexpr std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (auto s : shape_) n *= s;
    return n;
  }

  friend constexpr bool operator==(const process_mesh&, const process_mesh&) = default;

 private:
  shape_type shape_{};
};

}  // namespace ctspmd

#endif
