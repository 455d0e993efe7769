// Static tests of <ctspmd/interop.hpp>: named meshes, and DTensor placements, JAX PartitionSpec
// and Shardy text to and from tensor_dist_attr, in constant expressions.
#include <ctspmd/interop.hpp>
#include <ctspmd/model/propagate.hpp>

#include "../test_support.hpp"
#include "enumerate.hpp"

namespace {
using namespace ctspmd;
using namespace ctspmd::literals;
using ctspmd_test::constant_evaluates;

constexpr named_mesh mesh({2, 4}, {"dp", "mp"});
constexpr named_mesh mesh3({2, 3, 4}, {"dp", "mp", "sp"});

// --- named_mesh -------------------------------------------------------------------------
static_assert(mesh.has_names() && mesh.name(1) == "mp" && mesh.find("dp") == 0 && mesh.find("x") == -1);
static_assert(mesh.mesh() == process_mesh({2, 4}));
static_assert(!named_mesh(process_mesh({2, 4})).has_names());
static_assert(!named_mesh::check(2, {"dp"}));                     // one name per dim
static_assert(!named_mesh::check(2, {"dp", "dp"}));               // distinct
static_assert(named_mesh::check(2, {"dp", "dp"}).error().values[1] == 1);
static_assert(!named_mesh::check(1, {"1x"}) && !named_mesh::check(1, {"a-b"}) && !named_mesh::check(1, {""}));
static_assert(named_mesh::check(1, {"data_1"}));
static_assert(!constant_evaluates<[] { return named_mesh({2}, {"a b"}); }>);
// The names live beside the mesh: a dist attr stores the plain mesh, and keeps its size.
static_assert(tensor_dist_attr(mesh, {0, -1}) == tensor_dist_attr(process_mesh({2, 4}), {0, -1}));
static_assert(sizeof(tensor_dist_attr) == 48 && sizeof(spmd_info) == 1552);

// --- DTensor placements -----------------------------------------------------------------
constexpr auto a01 = from_placements(mesh, "[Shard(0), Shard(1)]", 2);
static_assert(a01.dims_mapping() == dims_mapping{0, 1});
static_assert(from_placements(mesh, "(Shard(dim=1), Replicate())", 2).dims_mapping() == dims_mapping{-1, 0});
static_assert(from_placements(mesh, "[Shard(-1), Replicate(),]", 3).dims_mapping() == dims_mapping{-1, -1, 0});
static_assert(from_placements(mesh, " [ Replicate ( ) , Partial ( ) ] ", 1).partial_dims() == mesh_dims{1});
static_assert(from_placements(mesh, "[Partial('max'), Shard(0)]", 1).partial_reduce_type(0) == reduce_type::max);
static_assert(from_placements(mesh, "[Partial(avg), Shard(0)]", 1).partial_reduce_type(0) == reduce_type::avg);
static_assert(from_placements(mesh, "[Partial(reduce_op=\"product\"), Shard(0)]", 1).partial_reduce_type(0) ==
              reduce_type::prod);
static_assert(from_placements(mesh, "[Partial('bor'), Partial('band')]", 1).partial_reduce_type(1) == reduce_type::all);
static_assert(to_placements(a01) == "[Shard(0), Shard(1)]");
static_assert(to_placements(tensor_dist_attr(mesh, {-1, -1})) == "[Replicate(), Replicate()]");
static_assert(to_placements(from_placements(mesh, "[Partial(), Partial('min')]", 0)) == "[Partial(), Partial('min')]");
static_assert(to_placements(tensor_dist_attr(process_mesh(), dims_mapping{})) == "[]");
// Co-shard: plain Shards in mesh order are major-first, any other order a _StridedShard.
constexpr tensor_dist_attr co01(mesh, {{0, 1}, {}});
constexpr tensor_dist_attr co10(mesh, {{1, 0}, {}});
static_assert(to_placements(co01) == "[Shard(0), Shard(0)]");
static_assert(to_placements(co10) == "[_StridedShard(0, split_factor=4), Shard(0)]");
static_assert(from_placements(mesh, "[Shard(0), Shard(0)]", 2) == co01);
static_assert(from_placements(mesh, "[_StridedShard(dim=0, sf=4), Shard(0)]", 2) == co10);
// PyTorch's _StridedShard docstring (torch/distributed/tensor/placement_types.py): mesh
// [[0, 1], [2, 3]] named ("dp", "tp"), FSDP2 + TP shards on "tp" first, then "dp":
// placements [_StridedShard(0, split_factor=2), Shard(0)]; rank 1 (dp 0, tp 1) holds rows 4-5 of 8.
constexpr named_mesh dp_tp({2, 2}, {"dp", "tp"});
static_assert(from_placements(dp_tp, "[_StridedShard(0, split_factor=2), Shard(0)]", 2).multi_dims_mapping() ==
              multi_dims_mapping{{1, 0}, {}});
// ... and its default left-to-right sharding [Shard(0), Shard(0)] is "dp" major.
static_assert(from_placements(dp_tp, "[Shard(0), Shard(0)]", 2).multi_dims_mapping() == multi_dims_mapping{{0, 1}, {}});
// Three mesh dims on one tensor dim, mesh 2 major: {2, 0, 1}.
constexpr tensor_dist_attr co201(mesh3, {{2, 0, 1}});
static_assert(to_placements(co201) == "[_StridedShard(0, split_factor=4), _StridedShard(0, split_factor=4), Shard(0)]");
static_assert(from_placements(mesh3, to_placements(co201), 1) == co201);
constexpr tensor_dist_attr co120(mesh3, {{1, 2, 0}});
static_assert(to_placements(co120) == "[_StridedShard(0, split_factor=12), Shard(0), Shard(0)]");
static_assert(from_placements(mesh3, to_placements(co120), 1) == co120);
// Errors, with the column (1-based).
static_assert(!try_from_placements(mesh, "[Shard(2), Replicate()]", 2));                          // dim out of range
static_assert(try_from_placements(mesh, "[Replicate(), Shard(2)]", 2).error().values[0] == 15);  // its column
static_assert(try_from_placements(mesh, "[Replicate(), Shard(-3)]", 2).error().values[1] == -3);
static_assert(!try_from_placements(mesh, "[Shard(0)]", 2));                                      // one per mesh dim
static_assert(try_parse_placements("[Shard(0), Sharded(1)]").error().values[0] == 12);          // unknown kind
static_assert(try_parse_placements("[Shard(0), Replicate()").error().values[0] == 23);          // unbalanced
static_assert(try_parse_placements("[Shard(0)) ").error().values[0] == 10);
static_assert(try_parse_placements("[Partial('sum), Replicate()]").error().values[0] == 10);    // quote not closed
static_assert(try_parse_placements("[Partial('mean')]").error().values[0] == 10);               // unknown reduce op
static_assert(try_parse_placements("Shard(0)").error().values[0] == 1);
static_assert(try_parse_placements("[Shard(0)] x").error().values[0] == 12);
static_assert(try_parse_placements("[_StridedShard(0, split_factor=0)]").error().values[0] == 19);
static_assert(!try_parse_placements("[Replicate(0)]"));
static_assert(!try_parse_placements("[Shard(99999999999999999999)]"));
static_assert(!try_parse_placements("[Shard(0), Shard(0), Shard(0), Shard(0), Shard(0)]"));  // > max_mesh_ndim
static_assert(!try_from_placements(mesh, "[_StridedShard(0, split_factor=3), Shard(0)]", 1));  // no such order
static_assert(try_from_placements(mesh, "[_StridedShard(0, split_factor=3), Shard(0)]", 1).error().values[0] == 2);
static_assert(!constant_evaluates<[] { return from_placements(mesh, "[Shard(0), Bogus()]", 1); }>);

// --- JAX PartitionSpec ------------------------------------------------------------------
// Shaped after the JAX sharding tutorial ("Distributed arrays and automatic parallelization"):
// a mesh of shape (4, 2) with axis names ('x', 'y'); P('x', 'y'), P('x', None), P(None, 'y'),
// P(('x', 'y'),) and P() on a 2-D array.
constexpr named_mesh xy({4, 2}, {"x", "y"});
static_assert(from_partition_spec(xy, "P('x', 'y')", 2).dims_mapping() == dims_mapping{0, 1});
static_assert(from_partition_spec(xy, "PartitionSpec('x', None)", 2).dims_mapping() == dims_mapping{0, -1});
static_assert(from_partition_spec(xy, "P(None, 'y')", 2).dims_mapping() == dims_mapping{-1, 1});
static_assert(from_partition_spec(xy, "P(('x', 'y'),)", 2).multi_dims_mapping() == multi_dims_mapping{{0, 1}, {}});
static_assert(from_partition_spec(xy, "P(('y', 'x'))", 2).multi_dims_mapping() == multi_dims_mapping{{1, 0}, {}});
static_assert(from_partition_spec(xy, "P()", 2).dims_mapping() == dims_mapping{-1, -1});
static_assert(from_partition_spec(xy, "P(\"y\")", 3).dims_mapping() == dims_mapping{1, -1, -1});  // trailing dims
static_assert(from_partition_spec(xy, "P(('x',), ())", 2).dims_mapping() == dims_mapping{0, -1});
static_assert(to_partition_spec(xy, tensor_dist_attr(xy, {{0, 1}, {}})) == "P(('x', 'y'), None)");
static_assert(to_partition_spec(xy, tensor_dist_attr(xy, {-1, 1})) == "P(None, 'y')");
static_assert(to_partition_spec(xy, tensor_dist_attr(xy, dims_mapping{})) == "P()");
static_assert(to_partition_spec(mesh3, co201) == "P(('sp', 'dp', 'mp'))");
// Partial has no PartitionSpec: an error naming the mesh dim, unless left out on purpose.
constexpr auto partial_y = from_placements(xy, "[Shard(0), Partial()]", 2);
static_assert(!try_to_partition_spec(xy, partial_y) && try_to_partition_spec(xy, partial_y).error().values[0] == 1);
static_assert(to_partition_spec(xy, partial_y, partial_policy::omit) == "P('x', None)");
// Errors, with the column.
static_assert(try_from_partition_spec(xy, "P('x', 'z')", 2).error().values[0] == 8);   // unknown name
static_assert(try_from_partition_spec(xy, "P('x', 'x')", 2).error().values[0] == 8);   // a name twice
static_assert(try_from_partition_spec(xy, "P('x', None, 'y')", 2).error().values[0] == 14);  // more entries than dims
static_assert(try_from_partition_spec(named_mesh(process_mesh({4, 2})), "P('x')", 1).error().values[0] == 3);  // no names
static_assert(try_parse_partition_spec("P('x', ('y', None))").error().values[0] == 14);
static_assert(try_parse_partition_spec("P('x'").error().values[0] == 6);                 // unbalanced
static_assert(try_parse_partition_spec("P('x)").error().values[0] == 3);                 // quote
static_assert(try_parse_partition_spec("Q('x')").error().values[0] == 1);
static_assert(try_parse_partition_spec("P('x', unreduced={'y'})").error().values[0] == 8);
static_assert(try_parse_partition_spec("P(x)").error().values[0] == 3);
static_assert(!constant_evaluates<[] { return from_partition_spec(xy, "P('q')", 1); }>);

// --- Shardy -----------------------------------------------------------------------------
// Shaped after Shardy's "Sharding representation" doc: dim shardings with axes major first,
// open dims with '?', replicated and unreduced axes, a priority.
static_assert(from_sdy(mesh3, R"(#sdy.sharding<@mesh, [{"dp"}, {}, {"mp", "sp"}]>)", 3).multi_dims_mapping() ==
              multi_dims_mapping{{0}, {}, {1, 2}});
static_assert(from_sdy(mesh3, R"(#sdy.sharding<@mesh_xyz, [{"sp", "dp"}, {"mp", ?}]>)", 2).multi_dims_mapping() ==
              multi_dims_mapping{{2, 0}, {1}});
static_assert(from_sdy(mesh3, R"(#sdy.sharding<@m, [{?}, {"mp"}p1], replicated={"dp"}, unreduced={"sp"}>)", 2) ==
              from_placements(mesh3, "[Replicate(), Shard(1), Partial()]", 2));
static_assert(to_sdy(mesh3, co201) == R"(#sdy.sharding<@mesh, [{"sp", "dp", "mp"}]>)");
static_assert(to_sdy(mesh3, from_placements(mesh3, "[Partial(), Shard(0), Partial()]", 1), partial_policy::reject, "m") ==
              R"(#sdy.sharding<@m, [{"mp"}], unreduced={"dp", "sp"}>)");
static_assert(to_sdy(mesh, tensor_dist_attr(mesh, dims_mapping{})) == R"(#sdy.sharding<@mesh, []>)");
// A partial max has no Shardy form.
static_assert(!try_to_sdy(mesh, from_placements(mesh, "[Partial('max'), Replicate()]", 1)));
static_assert(to_sdy(mesh, from_placements(mesh, "[Partial('max'), Replicate()]", 1), partial_policy::omit) ==
              R"(#sdy.sharding<@mesh, [{}]>)");
// Errors, with the column.
static_assert(try_from_sdy(mesh, R"(#sdy.sharding<@mesh, [{"dp"}, {"tp"}]>)", 2).error().values[0] == 32);
static_assert(try_from_sdy(mesh, R"(#sdy.sharding<@mesh, [{"dp"}, {}], replicated={"dp"}>)", 2).error().values[0] == 48);
static_assert(!try_from_sdy(mesh, R"(#sdy.sharding<@mesh, [{"dp"}]>)", 2));              // one per tensor dim
static_assert(try_parse_sdy(R"(#sdy.sharding<@mesh, [{"dp"}, {}>)").error().values[0] == 33);  // unbalanced
static_assert(try_parse_sdy(R"(#sdy.sharding<@mesh, [{"dp}]>)").error().values[0] == 24);    // quote
static_assert(try_parse_sdy(R"(#sdy.sharding<@mesh, [{'dp'}]>)").error().values[0] == 24);
static_assert(try_parse_sdy(R"(#sdy.sharding<@mesh, [{"dp":(1)2}]>)").error().values[0] == 24);  // sub-axis
static_assert(try_parse_sdy(R"(#sdy.sharding<mesh<["x"=2]>, [{}]>)").error().values[0] == 15);   // inline mesh
static_assert(try_parse_sdy(R"(#sdy.sharding<@mesh, [{}], bogus={}>)").error().values[0] == 28);
static_assert(try_parse_sdy(R"(#sdy.shardings<@mesh, []>)").error().values[0] == 14);
static_assert(!constant_evaluates<[] { return from_sdy(mesh, R"(#sdy.sharding<@mesh, [{"dp"}, {"dp"}]>)", 2); }>);

// --- Literals, dist_tensor_spec and plans -----------------------------------------------
constexpr auto w_layout = "[Replicate(), Shard(1)]"_placements;
static_assert(w_layout.language() == sharding_language::placements && !w_layout.bound());
constexpr dist_tensor_spec w({1024, 4096}, w_layout.on(mesh));
static_assert(w.dims_mapping() == dims_mapping{-1, 1});
constexpr dist_tensor_spec x({8, 1024}, partition_spec(mesh, "P('dp')"));
static_assert(x.dims_mapping() == dims_mapping{0, -1});
constexpr dist_tensor_spec y({8, 4096}, R"(#sdy.sharding<@mesh, [{"dp"}, {"mp"}]>)"_sdy.on(mesh));
static_assert(rules::matmul::infer_forward({x, w}).outputs[0] == y.dist_attr());
constexpr auto unbound = "[Shard(0), Shard(0)]"_placements;
static_assert(!constant_evaluates<[] { return dist_tensor_spec({8}, unbound); }>);  // not bound to a mesh
static_assert(!constant_evaluates<[] { return dist_tensor_spec({8}, placements("[Shard(0), Shard(0)]")); }>);
static_assert(check_syntax(sharding_language::sdy, R"(#sdy.sharding<@m, []>)"));
// A Megatron MLP plan annotated in three languages (the README's guide).
constexpr auto mlp() {
  model::plan<> p(mesh);
  auto xx = p.tensor("x", {8, 512, 1024}, "P('dp', None, None)"_pspec);
  auto w1 = p.tensor("w1", {1024, 4096}, "[Replicate(), Shard(1)]"_placements);
  auto w2 = p.tensor("w2", {4096, 1024}, R"(#sdy.sharding<@mesh, [{"mp"}, {}]>)"_sdy);
  auto h = p.tensor("h", {8, 512, 4096});
  auto z = p.tensor("z", {8, 512, 1024});
  p.op<"matmul">({xx, w1}, {h});
  p.op<"matmul">({h, w2}, {z});
  return p;
}
constexpr auto mlp_prop = model::verified<mlp>();
static_assert(mlp_prop.count() == 0);
static_assert(to_placements(mlp_prop.attr({3})) == "[Shard(0), Shard(2)]");
static_assert(to_sdy(mesh, mlp_prop.attr({4})) == R"(#sdy.sharding<@mesh, [{"dp"}, {}, {}], unreduced={"mp"}>)");

// --- Round trips over every attr --------------------------------------------------------
// Every attr of ranks 0 to 3 on a 2-D mesh, and of rank 2 on a 3-D mesh (co-shards in every
// order, partial dims with every reduce type): placements round-trip exactly; PartitionSpec
// exactly when not partial (else an error, and the mapping with `omit`); Shardy exactly when
// partial only as sums (else an error).
constexpr bool round_trips(const named_mesh& m, std::size_t rank, bool vary_reduce) {
  bool ok = true;
  ctspmd_test::for_each_attr(m, rank, vary_reduce, [&](const tensor_dist_attr& a) {
    ok = ok && from_placements(m, to_placements(a), rank) == a;
    bool sums_only = true;
    for (auto p : a.partial_dims()) sums_only = sums_only && a.partial_reduce_type(p) == reduce_type::sum;
    if (!a.is_partial()) {
      ok = ok && from_partition_spec(m, to_partition_spec(m, a), rank) == a;
    } else {
      auto mapping_only = a;
      mapping_only.clean_partial_status();
      ok = ok && !try_to_partition_spec(m, a) &&
           from_partition_spec(m, to_partition_spec(m, a, partial_policy::omit), rank) == mapping_only;
    }
    ok = ok && (sums_only ? from_sdy(m, to_sdy(m, a), rank) == a : !try_to_sdy(m, a));
  });
  return ok;
}
static_assert(round_trips(mesh, 0, true) && round_trips(mesh, 1, true) && round_trips(mesh, 2, true) &&
              round_trips(mesh, 3, false));
static_assert(round_trips(mesh3, 2, true));
static_assert(ctspmd_test::for_each_attr(mesh3, 2, false, [](const tensor_dist_attr&) {}) == 92);
}  // namespace
