#ifndef CTSPMD_DIST_DIST_TENSOR_SPEC_HPP
#define CTSPMD_DIST_DIST_TENSOR_SPEC_HPP
/// \file `dist_tensor_spec`: a tensor's shape with its dist attribute, what rules read.

#include <cstddef>
#include <utility>

#include <ctspmd/core/error.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>

namespace ctspmd {

/// A tensor's shape and its distribution (the dims mapping has one entry per dim).
class dist_tensor_spec {
 public:
  constexpr dist_tensor_spec() noexcept = default;
  constexpr dist_tensor_spec(const tensor_shape& shape, const tensor_dist_attr& attr) : shape_(shape), attr_(attr) {
    check(shape, attr).check();
  }
  /// A replicated tensor (all -1) of `shape` on `mesh`.
  constexpr dist_tensor_spec(const tensor_shape& shape, const ctspmd::process_mesh& mesh)
      : dist_tensor_spec(shape, tensor_dist_attr(mesh, ctspmd::dims_mapping(shape.size(), -1))) {}
  /// A tensor whose layout is written in another framework's language, bound to a mesh
  /// (`placements(mesh, "[Shard(0), Replicate()]")`, `"P('dp')"_pspec.on(mesh)`: see
  /// `<ctspmd/interop.hpp>`): any `layout` with `resolve(rank)` giving the dist attr.
  template <class Layout, class = decltype(std::declval<const Layout&>().resolve(std::size_t{}))>
  constexpr dist_tensor_spec(const tensor_shape& shape, const Layout& layout)
      : dist_tensor_spec(shape, tensor_dist_attr(layout.resolve(shape.size()))) {}

  /// Checks a shape against its dist attribute: one mapping entry per dim, and every size
  /// non-negative or -1 (unknown until run time).
  static constexpr status check(const tensor_shape& shape, const tensor_dist_attr& attr) {
    if (shape.size() != attr.rank())
      return make_error(error_kind::invalid_argument, "dist_tensor_spec",
                        "the dims mapping has {} entries but the tensor has rank {}", attr.rank(), shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (shape[i] < -1)
        return make_error(error_kind::invalid_argument, "dist_tensor_spec",
                          "tensor dim {} has size {}; a size is >= 0, or -1 when unknown", i, shape[i]);
    return {};
  }

  constexpr const tensor_shape& shape() const noexcept { return shape_; }
  constexpr std::int64_t ndim() const noexcept { return static_cast<std::int64_t>(shape_.size()); }
  constexpr const tensor_dist_attr& dist_attr() const noexcept { return attr_; }
  /// The flat dims mapping (an `invalid_argument` if a dim is co-sharded).
  constexpr ctspmd::dims_mapping dims_mapping() const { return attr_.dims_mapping(); }
  constexpr ctspmd::multi_dims_mapping multi_dims_mapping() const { return attr_.multi_dims_mapping(); }
  constexpr const ctspmd::process_mesh& process_mesh() const noexcept { return attr_.process_mesh(); }

  friend constexpr bool operator==(const dist_tensor_spec&, const dist_tensor_spec&) = default;

 private:
  tensor_shape shape_{};
  tensor_dist_attr attr_{};
};

}  // namespace ctspmd

#endif
