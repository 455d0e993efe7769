// The sharding languages at run time (<ctspmd/interop.hpp>): texts from strings, error messages
// with columns, and round trips over every attr on meshes up to 4-D.
#include <ctspmd/dist/format.hpp>
#include <ctspmd/interop.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/interop/enumerate.hpp"
#include "check_error.hpp"

#include <string>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace interop_test {

using namespace ctspmd;
using ctspmd_test::check_error;

const named_mesh mesh({2, 4}, {"dp", "mp"});

std::string message(const error_info& e) { return to_string(e); }

TEST_CASE("interop: texts held in std::string convert both ways") {
  const std::string text = "[_StridedShard(dim=0, sf=4), Shard(0)]";
  const auto a = from_placements(mesh, text, 2);
  CHECK(a.multi_dims_mapping() == multi_dims_mapping{{1, 0}, {}});
  CHECK(std::string(to_placements(a).view()) == "[_StridedShard(0, split_factor=4), Shard(0)]");
  check_error([] { (void)from_placements(mesh, "[Shard(0), _StridedShard(dim=0, sf=2)]", 2); }, error_kind::invalid_argument,
              "column 12: split_factor 2 on mesh dim 1 is not a product");
  const std::string spec = "P(('mp', 'dp'), None)";
  const auto b = from_partition_spec(mesh, spec, 2);
  CHECK(b.multi_dims_mapping() == multi_dims_mapping{{1, 0}, {}});
  CHECK(std::string(to_partition_spec(mesh, b).view()) == spec);
  CHECK(std::string(to_placements(b).view()) == "[_StridedShard(0, split_factor=4), Shard(0)]");
  CHECK(from_placements(mesh, std::string(to_placements(b).view()), 2) == b);
  const std::string sdy_text = R"(#sdy.sharding<@mesh, [{"mp", "dp"}, {}]>)";
  CHECK(from_sdy(mesh, sdy_text, 2) == b);
  CHECK(std::string(to_sdy(mesh, b).view()) == sdy_text);
  CHECK(from_text(sharding_language::partition_spec, mesh, spec, 2) == b);
  CHECK(std::string(to_text(sharding_language::sdy, mesh, b).view()) == sdy_text);
}

TEST_CASE("interop: the _StridedShard docstring example reads as tp major") {
  // torch/distributed/tensor/placement_types.py, _StridedShard: an 8 x 8 tensor on the mesh
  // [[0, 1], [2, 3]] named ("dp", "tp"); FSDP2 + TP gives rank 1 (dp 0, tp 1) rows 4-5 and
  // rank 2 (dp 1, tp 0) rows 2-3: the shard index is tp * 2 + dp.
  const named_mesh dp_tp({2, 2}, {"dp", "tp"});
  const auto a = from_placements(dp_tp, "[_StridedShard(0, split_factor=2), Shard(0)]", 2);
  REQUIRE(a.mesh_dims_of(0) == mesh_dims{1, 0});
  // Major first: the shard index of device (dp, tp) is tp * size(dp) + dp.
  const auto rows = [&](std::int64_t dp, std::int64_t tp) { return (tp * 2 + dp) * 2; };
  CHECK(rows(0, 1) == 4);
  CHECK(rows(1, 0) == 2);
}

TEST_CASE("interop: errors name the column, at run time") {
  check_error([] { (void)from_placements(mesh, "[Shard(0), Sharded(1)]", 2); }, error_kind::invalid_argument,
              "placements: column 12: unknown placement kind");
  check_error([] { (void)from_placements(mesh, "[Replicate(), Shard(2)]", 2); }, error_kind::invalid_argument,
              "placements: column 15: Shard of dim 2, but the tensor has rank 2");
  check_error([] { (void)from_placements(mesh, "[Shard(0), Replicate()", 2); }, error_kind::invalid_argument,
              "column 23: expected ',' or ']' (the list is not closed), found the end of the text");
  check_error([] { (void)from_placements(mesh, "[Partial('sum), Replicate()]", 2); }, error_kind::invalid_argument,
              "column 10: the quote opened here is never closed");
  check_error([] { (void)from_placements(mesh, "[Shard(0)]", 2); }, error_kind::invalid_argument,
              "1 placements for a mesh of 2 dims");
  check_error([] { (void)from_partition_spec(mesh, "P('dp', 'tp')", 2); }, error_kind::invalid_argument,
              "partition_spec: column 9: no dim of the mesh (2 dims) has this name");
  check_error([] { (void)from_partition_spec(mesh, "P('dp', 'dp')", 2); }, error_kind::invalid_argument,
              "column 9: mesh dim 0 is named a second time");
  check_error([] { (void)from_partition_spec(mesh, "P('dp', ('mp', None))", 2); }, error_kind::invalid_argument,
              "column 16: expected a mesh axis name in quotes, found 'N'");
  check_error([] { (void)from_partition_spec(named_mesh(process_mesh({2, 4})), "P('dp')", 2); },
              error_kind::invalid_argument, "the mesh's dims have no names");
  check_error([] { (void)to_partition_spec(mesh, from_placements(mesh, "[Partial(), Shard(0)]", 1)); },
              error_kind::invalid_argument, "the tensor is partial on mesh dim 0, which a PartitionSpec cannot say");
  check_error([] { (void)from_sdy(mesh, R"(#sdy.sharding<@mesh, [{"dp"}, {"dp"}]>)", 2); }, error_kind::invalid_argument,
              "sdy: column 32: mesh dim 0 is named a second time");
  check_error([] { (void)from_sdy(mesh, R"(#sdy.sharding<@mesh, [{"dp"}, {}>)", 2); }, error_kind::invalid_argument,
              "column 33: expected ',' or ']', found '>'");
  check_error([] { (void)to_sdy(mesh, from_placements(mesh, "[Partial('max'), Shard(0)]", 1)); },
              error_kind::invalid_argument, "Shardy's unreduced axes are sums only");
  const auto e = try_parse_sdy(R"(#sdy.sharding<@mesh, [{"x":(1)2}]>)");
  REQUIRE_FALSE(e);
  CHECK(message(e.error()) == "sdy: column 24: sub-axes (\"x\":(k)n) are not supported");
  check_error([] { (void)named_mesh({2, 4}, {"dp", "dp"}); }, error_kind::invalid_argument,
              "named_mesh: mesh dims 0 and 1 have the same name");
  check_error([] { (void)dist_tensor_spec({8}, placements("[Shard(0), Replicate()]")); }, error_kind::invalid_argument,
              "not bound to a mesh");
}

TEST_CASE("interop: every attr on meshes up to 4-D round-trips in each language") {
  const named_mesh meshes[] = {named_mesh({3}, {"a"}), named_mesh({2, 4}, {"dp", "mp"}),
                               named_mesh({2, 3, 4}, {"dp", "mp", "sp"}), named_mesh({2, 3, 2, 5}, {"pp", "dp", "mp", "sp"})};
  std::size_t total = 0, pspec_exact = 0, sdy_exact = 0;
  for (const auto& m : meshes)
    for (std::size_t rank = 0; rank <= 4; ++rank) {
      total += ctspmd_test::for_each_attr(m, rank, true, [&](const tensor_dist_attr& a) {
        const std::string p(to_placements(a).view());
        REQUIRE_MESSAGE(from_placements(m, p, rank) == a, p);
        bool sums_only = true;
        for (auto d : a.partial_dims()) sums_only = sums_only && a.partial_reduce_type(d) == reduce_type::sum;
        if (!a.is_partial()) {
          const std::string s(to_partition_spec(m, a).view());
          REQUIRE_MESSAGE(from_partition_spec(m, s, rank) == a, s);
          ++pspec_exact;
        } else {
          REQUIRE_FALSE(try_to_partition_spec(m, a));
        }
        if (sums_only) {
          const std::string s(to_sdy(m, a).view());
          REQUIRE_MESSAGE(from_sdy(m, s, rank) == a, s);
          ++sdy_exact;
        } else {
          REQUIRE_FALSE(try_to_sdy(m, a));
        }
      });
    }
  MESSAGE("interop round trips: " << total << " attrs (placements exact for all), " << pspec_exact
                                  << " PartitionSpec exact, " << sdy_exact << " Shardy exact");
  CHECK(total > 5000);
}

TEST_CASE("interop: a size-1 mesh dim's place in a co-shard reads back at its earliest place") {
  const named_mesh m({2, 1}, {"dp", "one"});
  const tensor_dist_attr major_one(m, {{1, 0}});
  CHECK(std::string(to_placements(major_one).view()) == "[Shard(0), Shard(0)]");
  CHECK(from_placements(m, "[Shard(0), Shard(0)]", 1).mesh_dims_of(0) == mesh_dims{0, 1});  // the same layout
  // The named languages keep the order.
  CHECK(from_partition_spec(m, std::string(to_partition_spec(m, major_one).view()), 1) == major_one);
}

TEST_CASE("interop: layouts in the three languages feed the runtime rules") {
  const std::vector<dist_tensor_spec> in{{{8, 1024}, partition_spec(mesh, "P('dp', None)")},
                                         {{1024, 4096}, placements(mesh, "[Replicate(), Shard(1)]")}};
  const auto info = runtime::infer_forward("matmul", in);
  CHECK(std::string(to_sdy(mesh, info.outputs[0]).view()) == R"(#sdy.sharding<@mesh, [{"dp"}, {"mp"}]>)");
}

}  // namespace interop_test
