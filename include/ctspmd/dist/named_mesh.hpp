#ifndef CTSPMD_DIST_NAMED_MESH_HPP
#define CTSPMD_DIST_NAMED_MESH_HPP
/// \file `named_mesh`: a process mesh whose dims have names (`named_mesh({2, 4}, {"dp", "mp"})`),
/// what the named sharding languages (JAX PartitionSpec, Shardy) refer to.
///
/// The names live beside the mesh, not in it. `named_mesh` derives from `process_mesh`, so it
/// is accepted wherever a mesh is (`tensor_dist_attr(named, {0, -1})`, `model::plan<>(named)`),
/// and what a dist attr stores is the plain mesh: `tensor_dist_attr`, `dist_tensor_spec` and
/// `spmd_info` keep their size (every rule returns several attrs by value), and two attrs on
/// meshes of the same shape compare equal whatever their dims are called. The conversions
/// that need names (`<ctspmd/interop.hpp>`) take the `named_mesh` as an argument.

#include <cstdint>
#include <string_view>

#include <ctspmd/core/config.hpp>
#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/process_mesh.hpp>

namespace ctspmd {

/// The longest name of a mesh dim.
inline constexpr std::size_t max_mesh_name = 32;
/// The names of a mesh's dims, in mesh dim order (string literals, or strings that outlive the
/// mesh: a name is a view).
using mesh_names = static_vector<std::string_view, max_mesh_ndim>;

/// A process mesh with a name per dim, or without names (an empty name list).
class named_mesh : public process_mesh {
 public:
  constexpr named_mesh() noexcept = default;
  /// A mesh of `shape` whose dims are called `names` (one per dim, or none).
  constexpr named_mesh(const tensor_shape& shape, const mesh_names& names) : process_mesh(shape), names_(names) {
    check(ndim(), names).check();
  }
  /// `mesh` with `names` (one per dim, or none).
  constexpr named_mesh(const process_mesh& mesh, const mesh_names& names) : process_mesh(mesh), names_(names) {
    check(ndim(), names).check();
  }
  /// `mesh` without names.
  constexpr explicit named_mesh(const process_mesh& mesh) noexcept : process_mesh(mesh) {}

  /// Checks names for a mesh of `ndim` dims: none, or one per dim, each 1 to `max_mesh_name`
  /// characters of [A-Za-z0-9_] not starting with a digit, all distinct.
  static constexpr status check(std::int64_t ndim, const mesh_names& names) {
    if (names.empty()) return {};
    if (static_cast<std::int64_t>(names.size()) != ndim)
      return make_error(error_kind::invalid_argument, "named_mesh", "{} names for a mesh of {} dims", names.size(), ndim);
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string_view n = names[i];
      if (n.empty() || n.size() > max_mesh_name)
        return make_error(error_kind::invalid_argument, "named_mesh", "the name of mesh dim {} has {} characters (1 to {})",
                          i, n.size(), max_mesh_name);
      for (std::size_t k = 0; k < n.size(); ++k)
        if (!is_name_char(n[k]) || (k == 0 && n[k] >= '0' && n[k] <= '9'))
          return make_error(error_kind::invalid_argument, "named_mesh",
                            "the name of mesh dim {} has '{c}' at index {}: a name is letters, digits and '_', not "
                            "starting with a digit",
                            i, n[k], k);
      for (std::size_t j = 0; j < i; ++j)
        if (names[j] == n)
          return make_error(error_kind::invalid_argument, "named_mesh", "mesh dims {} and {} have the same name", j, i);
    }
    return {};
  }
  /// True for the characters a mesh dim name may hold.
  static constexpr bool is_name_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  /// True if the dims have names.
  constexpr bool has_names() const noexcept { return !names_.empty(); }
  constexpr const mesh_names& names() const noexcept { return names_; }
  /// The name of mesh dim `d` (in [0, ndim()); the mesh must have names).
  constexpr std::string_view name(std::int64_t d) const { return names_[static_cast<std::size_t>(d)]; }
  /// The mesh dim called `name`, or -1.
  constexpr std::int64_t find(std::string_view name) const noexcept {
    for (std::size_t d = 0; d < names_.size(); ++d)
      if (names_.data()[d] == name) return static_cast<std::int64_t>(d);
    return -1;
  }
  /// The mesh without its names.
  constexpr const process_mesh& mesh() const noexcept { return *this; }

  friend constexpr bool operator==(const named_mesh& a, const named_mesh& b) {
    return a.mesh() == b.mesh() && a.names_ == b.names_;
  }

 private:
  mesh_names names_{};
};

}  // namespace ctspmd

#endif
