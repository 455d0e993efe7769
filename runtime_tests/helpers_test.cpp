// The helpers' static cases again at run time, and every error as a thrown spmd_error.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>

#include <doctest/doctest.h>

#include "check_error.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace helpers_test {

using namespace ctspmd;
using ctspmd_test::check_error;

TEST_CASE("error_info formats its values") {
  const auto e = make_error(error_kind::unimplemented, "op", "axis '{c}' on {} and {}", 'k', 0, 1);
  CHECK(to_string(e) == "op: axis 'k' on 0 and 1");
  CHECK(to_string(make_error(error_kind::invalid_argument, "", "no values")) == "no values");
  const spmd_error err(e);
  CHECK(err.kind() == error_kind::unimplemented);
  CHECK(std::string(err.what()) == "op: axis 'k' on 0 and 1");
}

TEST_CASE("static_vector checks capacity and index") {
  static_vector<int, 2> v{1, 2};
  check_error([&] { v.push_back(3); }, error_kind::invalid_argument, "3 elements exceed the capacity of 2");
  check_error([&] { (void)v[2]; }, error_kind::invalid_argument, "index 2 is out of range");
  check_error([] { static_vector<int, 1>{1, 2}; }, error_kind::invalid_argument, "capacity of 1");
  v.pop_back();
  v.pop_back();
  check_error([&] { v.pop_back(); }, error_kind::invalid_argument, "pop_back on an empty vector");
}

TEST_CASE("process_mesh, tensor_dist_attr and dist_tensor_spec validate") {
  const process_mesh mesh({2, 3});
  CHECK(mesh.size() == 6);
  check_error([] { process_mesh({2, 0}); }, error_kind::invalid_argument, "mesh dim 1 has size 0");
  check_error([] { process_mesh({1, 1, 1, 1, 1}); }, error_kind::invalid_argument, "5 dims exceeds max_mesh_ndim");
  check_error([&] { tensor_dist_attr(mesh, {2}); }, error_kind::invalid_argument,
              "dims mapping entry 2 of tensor dim 0 is not -1 or a mesh dim in [0, 2)");
  check_error([&] { tensor_dist_attr(mesh, {1, -1, 1}); }, error_kind::invalid_argument,
              "mesh dim 1 shards both tensor dim 0 and tensor dim 2");
  check_error([&] { dist_tensor_spec({4, 4}, {mesh, {0}}); }, error_kind::invalid_argument,
              "the dims mapping has 1 entries but the tensor has rank 2");
  check_error([&] { dist_tensor_spec({4, -7}, {mesh, {0, -1}}); }, error_kind::invalid_argument,
              "tensor dim 1 has size -7");

  tensor_dist_attr a(mesh, {-1, 1});
  a.set_partial_status({0}, reduce_type::avg);
  CHECK(a.partial_dims() == mesh_dims{0});
  CHECK(a.partial_reduce_type(0) == reduce_type::avg);
  CHECK(to_string(a) == "dims_mapping [-1, 1], partial {0: avg}");
  check_error([&] { a.set_partial_status({0}); }, error_kind::invalid_argument, "already partial on mesh dim 0");
  check_error([&] { a.set_partial_status({1}); }, error_kind::invalid_argument, "mesh dim 1 cannot be partial");
  check_error([&] { a.set_partial_status({2}); }, error_kind::invalid_argument, "partial dim 2 is not a mesh dim");
  check_error([&] { a.set_dims_mapping({0, -1}); }, error_kind::invalid_argument, "the tensor is partial on it");
  check_error([&] { a.clean_partial_dims({1}); }, error_kind::invalid_argument, "cannot clean partial dim 1");
  check_error([&] { (void)a.partial_reduce_type(1); }, error_kind::invalid_argument, "not partial on mesh dim 1");
  a.clean_partial_dims({0});
  CHECK_FALSE(a.is_partial());
}

TEST_CASE("get_broadcast_axes") {
  CHECK(get_broadcast_axes(2, 4, alphabets::full) == "cd");
  CHECK(get_broadcast_axes(0, 4, alphabets::full) == "");
  check_error([] { (void)get_broadcast_axes(3, 2, alphabets::full); }, error_kind::invalid_argument,
              "tensor rank 3 exceeds the broadcast rank 2");
  check_error([] { (void)get_broadcast_axes(2, 5, "abcd"); }, error_kind::invalid_argument, "broadcast rank 5");
}

TEST_CASE("sharding merge helpers") {
  CHECK(sharding_merge_for_axis('a', -1, 2) == 2);
  check_error([] { (void)sharding_merge_for_axis('k', 0, 1); }, error_kind::unimplemented,
              "tensor axis 'k' is sharded by two different mesh dims, 0 and 1");

  const auto kept = sharding_merge_for_tensors({{"ij", {0, -1}}, {"jk", {0, -1}}});
  CHECK(kept.at('i') == 0);
  CHECK(kept.at('j') == -1);
  CHECK(kept.at('k') == -1);
  check_error([] { (void)sharding_merge_for_tensors({{"ij", {0, -1}}, {"jk", {0, -1}}}, false); },
              error_kind::precondition_not_met, "tensor axes 'i' and 'j' are sharded by the same mesh dim 0");
  check_error([] { (void)sharding_merge_for_tensors({{"ij", {0, -1}}, {"ik", {1, -1}}}, false); },
              error_kind::unimplemented, "tensor axis 'i'");
  check_error([] { (void)sharding_merge_for_tensors({{"ij", {0}}}); }, error_kind::invalid_argument,
              "tensor 0 has 2 axis labels but a dims mapping of 1 entries");
  const auto ones = sharding_merge_for_tensors({{"1a", {0, -1}}, {"1b", {1, -1}}});
  CHECK_FALSE(ones.contains('1'));

  const auto ijk = sharding_merge_for_tensors({{"ij", {0, -1}}, {"jk", {-1, 1}}});
  CHECK(get_dims_mapping_for_axes("i1k", ijk) == dims_mapping{0, -1, 1});
  CHECK(get_dims_mapping_for_axes("izk", ijk, true) == dims_mapping{0, -1, 1});
  check_error([&] { (void)get_dims_mapping_for_axes("izk", ijk); }, error_kind::invalid_argument,
              "tensor axis 'z' is not in the axis-to-dim map");
  check_error([&] { (void)ijk.at('q'); }, error_kind::invalid_argument, "tensor axis 'q'");

  const auto mk = sharding_merge_for_tensors({{"mk", {0, 2}}, {"kn", {2, 1}}});
  CHECK(resolute_output_partial_dimension(mk, "n") == mesh_dims{0, 2});
  CHECK(resolute_output_partial_dimension(mk, "mn") == mesh_dims{2});

  tensor_dist_attr src(process_mesh({2, 2}), {1, -1});
  src.set_partial_status({0});
  src.set_batch_dim(1);
  const auto copy = copy_tensor_dist_attr_for_output(src);
  CHECK(copy.dims_mapping().empty());
  CHECK(copy.batch_dim() == 1);
  CHECK_FALSE(copy.is_partial());
  const auto rep = replicated_on_mesh(src);
  CHECK(rep.dims_mapping() == dims_mapping{-1, -1});
  CHECK_FALSE(rep.is_partial());
}

}  // namespace helpers_test
