#ifndef CTSPMD_DIST_PROCESS_MESH_HPP
#define CTSPMD_DIST_PROCESS_MESH_HPP
/// \file `process_mesh`, and the shape and dims-mapping vocabulary types.

#include <cstdint>
#include <limits>

#include <ctspmd/core/config.hpp>
#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>

namespace ctspmd {

/// A tensor's shape; -1 is a size known only at run time.
using tensor_shape = static_vector<std::int64_t, max_rank>;
/// Tells a dims mapping from a shape (both are vectors of integers, one per tensor dim).
struct dims_mapping_tag {};
/// Per tensor dim: -1 (replicated) or the mesh dim that splits it. A type distinct from
/// `tensor_shape` (it converts to one only explicitly).
using dims_mapping = static_vector<std::int64_t, max_rank, dims_mapping_tag>;
/// A set or an ordered list of mesh dims: the partial dims of a tensor, or the mesh dims that
/// split one tensor dim, major (outer) first.
using mesh_dims = static_vector<std::int64_t, max_mesh_ndim>;
/// Per tensor dim: the mesh dims that split it, major first; empty = replicated. One tensor dim
/// split over several mesh dims is a co-shard (`{{0, 1}, {}}`: dim 0 split over mesh dims 0 and 1,
/// mesh dim 0 the outer one).
using multi_dims_mapping = static_vector<mesh_dims, max_rank>;

/// How the per-device parts of a partial tensor combine into its value.
enum class reduce_type : std::int8_t { sum, max, min, prod, avg, any, all };
/// Number of reduce types.
inline constexpr std::size_t reduce_type_count = 7;

/// The snake_case names of the reduce types, in enum order.
inline constexpr const char* reduce_type_names[] = {"sum", "max", "min", "prod", "avg", "any", "all"};
static_assert(sizeof reduce_type_names / sizeof reduce_type_names[0] == reduce_type_count, "one name per reduce type");

/// The snake_case name of a reduce type ("sum", "max", ...).
constexpr const char* to_string(reduce_type r) noexcept {
  const auto i = static_cast<std::int8_t>(r);
  return i >= 0 && static_cast<std::size_t>(i) < reduce_type_count ? reduce_type_names[i] : "unknown";
}

/// An n-dimensional grid of devices, e.g. shape [2, 4] (`ndim() <= max_mesh_ndim`).
class process_mesh {
 public:
  /// The mesh's sizes (32-bit: a mesh dim of more than 2^31 devices is not a mesh we meet, and
  /// every dist attr holds its mesh).
  using shape_type = static_vector<std::int32_t, max_mesh_ndim>;

  /// The empty mesh (no dims): what a default dist attr lives on.
  constexpr process_mesh() noexcept = default;
  /// A mesh of the given shape: at least one dim, every size positive.
  constexpr process_mesh(const tensor_shape& shape) {  // NOLINT: implicit from a shape list by design
    check(shape).check();
    for (auto s : shape) shape_.push_back(static_cast<std::int32_t>(s));
  }

  /// Checks a mesh shape without building the mesh.
  static constexpr status check(const tensor_shape& shape) {
    if (shape.empty())
      return make_error(error_kind::invalid_argument, "process_mesh", "a mesh has at least one dim (a single device: [1])");
    if (shape.size() > max_mesh_ndim)
      return make_error(error_kind::invalid_argument, "process_mesh",
                        "a mesh of {} dims exceeds max_mesh_ndim = {} (define CTSPMD_MAX_MESH_NDIM)", shape.size(),
                        max_mesh_ndim);
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] <= 0)
        return make_error(error_kind::invalid_argument, "process_mesh", "mesh dim {} has size {}; sizes must be positive",
                          i, shape[i]);
      if (shape[i] > std::numeric_limits<std::int32_t>::max())
        return make_error(error_kind::invalid_argument, "process_mesh", "mesh dim {} has size {}, above 2^31 - 1", i,
                          shape[i]);
    }
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

  /// A mesh with no dims (what default dist attrs live on), to refer to.
  static constexpr const process_mesh& empty() noexcept;

  friend constexpr bool operator==(const process_mesh&, const process_mesh&) = default;

 private:
  shape_type shape_{};
};

namespace detail {
inline constexpr process_mesh no_mesh{};
}  // namespace detail
constexpr const process_mesh& process_mesh::empty() noexcept { return detail::no_mesh; }

}  // namespace ctspmd

#endif
