#include <ctspmd/merge/policies.hpp>

#include <ctspmd/merge/sharding_merge.hpp>

#include "../test_support.hpp"

#include <string_view>

using namespace ctspmd;
using ctspmd_test::co;

constexpr process_mesh mesh3({2, 2, 2});
constexpr process_mesh mesh2({2, 4});

/// merge_co_shard over specs labelled by `labels` (one string each).
template <std::size_t N>
constexpr result<axis_to_dim_map> co_shard(const dist_tensor_spec (&specs)[N], const std::string_view (&labels)[N],
                                           co_shard_options o = {}) {
  axis_to_dim_map map;
  const auto s = merge_co_shard(
      map, N, [&](std::size_t t) { return labels[t]; },
      [&](std::size_t t, std::size_t i) { return detail::dim_list(specs[t].dist_attr(), i); },
      [&](std::size_t t, std::size_t i) { return specs[t].shape()[i]; }, specs[0].process_mesh(), o);
  if (!s) return s.error();
  return map;
}
template <std::size_t N>
constexpr axis_to_dim_map elementwise(const dist_tensor_spec (&specs)[N], const std::string_view (&labels)[N]) {
  axis_to_dim_map map;
  merge_elementwise(
      map, N, [&](std::size_t t) { return labels[t]; },
      [&](std::size_t t, std::size_t i) { return detail::dim_list(specs[t].dist_attr(), i); },
      [&](std::size_t t, std::size_t i) { return specs[t].shape()[i]; }, specs[0].process_mesh())
      .check();
  return map;
}

// ==== merge_co_shard ================================================================================
// ---- two mesh dims for one axis become a co-shard: sorted (longer, more shards, smaller first) --------
constexpr auto union_k = co_shard({co(mesh3, {64, 32}, {{0}, {1}}), co(mesh3, {32, 48}, {{2}, {0}})}, {"mk", "kn"});
static_assert(union_k->mesh_dims_of('k') == mesh_dims{1, 2});
// mesh dim 0 claimed by m (64) and n (48): the larger axis keeps it
static_assert(union_k->mesh_dims_of('m') == mesh_dims{0} && union_k->mesh_dims_of('n').empty());
// a longer proposal comes first, whatever the order of the tensors
constexpr auto longer_first = co_shard({co(mesh3, {32}, {{0}}), co(mesh3, {32}, {{1, 2}})}, {"k", "k"});
static_assert(longer_first->mesh_dims_of('k') == mesh_dims{1, 2, 0});
// more shards first among lists of one length ([1] on a mesh dim of 4 beats [0] on one of 2)
constexpr auto more_shards = co_shard({co(mesh2, {16}, {{0}}), co(mesh2, {16}, {{1}})}, {"k", "k"});
static_assert(more_shards->mesh_dims_of('k') == mesh_dims{1, 0});
// ---- the divisibility drop: trailing mesh dims go until the shard count divides the size -----------
constexpr co_shard_options drop_options{true, false, false, /*drop_indivisible=*/true};
constexpr auto drop = co_shard({co(mesh3, {4, 8}, {{1, 2}, {}}), co(mesh3, {4, 8}, {{0}, {}})}, {"ab", "ab"});
static_assert(drop->mesh_dims_of('a') == mesh_dims{1, 2});  // [1, 2, 0] would be 8 shards of 4
static_assert(co_shard({co(mesh3, {4, 8}, {{1, 2}, {}}), co(mesh3, {4, 8}, {{0}, {}})}, {"ab", "ab"}, drop_options)
                  ->mesh_dims_of('a') == mesh_dims{1, 2});
// with drop_indivisible even a lone proposal goes (6 % 4 != 0); without, a given shard stays
static_assert(co_shard({co(mesh2, {6}, {{1}})}, {"a"}, drop_options)->mesh_dims_of('a').empty());
static_assert(co_shard({co(mesh2, {6}, {{1}})}, {"a"})->mesh_dims_of('a') == mesh_dims{1});
// ... and a later proposal's mesh dim is added only where the count still divides: 12 does not
// split 8 ways, 16 does
static_assert(co_shard({co(mesh2, {12}, {{1}}), co(mesh2, {12}, {{0}})}, {"a", "a"})->mesh_dims_of('a') == mesh_dims{1});
static_assert(co_shard({co(mesh2, {16}, {{1}}), co(mesh2, {16}, {{0}})}, {"a", "a"})->mesh_dims_of('a') == mesh_dims{1, 0});
static_assert(co_shard({co(mesh2, {-1}, {{1}})}, {"a"}, drop_options)->mesh_dims_of('a') == mesh_dims{1});  // unknown: kept
// ---- ties between axes of one size: the axis seen first keeps the mesh dim ------------------------------
constexpr auto tie = co_shard({co(mesh3, {8, 8}, {{0}, {}}), co(mesh3, {8, 8}, {{}, {0}})}, {"ab", "ab"});
static_assert(tie->mesh_dims_of('a') == mesh_dims{0} && tie->mesh_dims_of('b').empty());
// only the mesh dim in conflict leaves the losing list
constexpr auto partly = co_shard({co(mesh3, {64, 16}, {{0}, {1, 2}}), co(mesh3, {64, 16}, {{0}, {}})}, {"ab", "cb"});
static_assert(partly->mesh_dims_of('a') == mesh_dims{0} && partly->mesh_dims_of('b') == mesh_dims{1, 2} &&
              partly->mesh_dims_of('c').empty());
// ---- without merge_conflicts a shared mesh dim is an error naming both axes -------------------------------
constexpr auto refused = co_shard({co(mesh3, {8, 8}, {{0}, {}}), co(mesh3, {8, 8}, {{}, {0}})}, {"ab", "ab"}, {false});
static_assert(refused.kind() == error_kind::precondition_not_met && refused.error().values[0] == 'a' &&
              refused.error().values[1] == 'b' && refused.error().values[2] == 0);
// ---- sizes that do not broadcast, when checked ------------------------------------------------------------
static_assert(co_shard({co(mesh3, {8, 32}, {{}, {}}), co(mesh3, {16, 48}, {{}, {}})}, {"mk", "kn"}, {true, false, true})
                  .kind() == error_kind::precondition_not_met);
static_assert(co_shard({co(mesh3, {8, 1}, {{}, {}}), co(mesh3, {1, 48}, {{}, {}})}, {"ab", "ab"}, {true, false, true}));
// '1' and size-1 dims propose nothing
static_assert(co_shard({co(mesh3, {8, 1}, {{}, {0}})}, {"a1"})->size() == 1);
static_assert(co_shard({co(mesh3, {1, 8}, {{0}, {}}), co(mesh3, {4, 8}, {{1}, {}})}, {"ab", "ab"}, {true, true})
                  ->mesh_dims_of('a') == mesh_dims{1});

// ==== merge_elementwise ===========================================================================
// follows the input with the most co-sharded dims: the other only fills in unused mesh dims
constexpr auto follow_co = elementwise({co(mesh2, {64, 64}, {{0}, {1}}), co(mesh2, {64, 64}, {{0, 1}, {}})}, {"ab", "ab"});
static_assert(follow_co.mesh_dims_of('a') == mesh_dims{0, 1} && follow_co.mesh_dims_of('b').empty());
// then the most shards (phi ORs the tests: an input with more shards but fewer co-sharded dims would take over)
constexpr auto follow_order = elementwise(
    {co(mesh3, {64, 64, 64}, {{0, 1}, {}, {}}), co(mesh3, {64, 64, 64}, {{}, {0}, {1}})}, {"abc", "abc"});
static_assert(follow_order.mesh_dims_of('a') == mesh_dims{0, 1} && follow_order.mesh_dims_of('b').empty() &&
              follow_order.mesh_dims_of('c').empty());
constexpr auto more_shards_followed = elementwise(
    {co(mesh3, {64, 64, 64}, {{0}, {}, {}}), co(mesh3, {64, 64, 64}, {{}, {0}, {1}})}, {"abc", "abc"});
static_assert(more_shards_followed.mesh_dims_of('b') == mesh_dims{0} &&
              more_shards_followed.mesh_dims_of('c') == mesh_dims{1} && more_shards_followed.mesh_dims_of('a').empty());
// on a tie the first; the other adds mesh dims nobody uses
constexpr auto fill_in = elementwise({co(mesh2, {8, 8}, {{0}, {}}), co(mesh2, {8, 8}, {{}, {1}})}, {"ab", "ab"});
static_assert(fill_in.mesh_dims_of('a') == mesh_dims{0} && fill_in.mesh_dims_of('b') == mesh_dims{1});
// an added mesh dim that breaks divisibility is given back (phi's softmax-grad case: [1, 2] + 0 on 4)
constexpr auto give_back = elementwise({co(mesh3, {2, 4, 128}, {{}, {1, 2}, {}}), co(mesh3, {2, 4, 128}, {{}, {0, 1}, {}})},
                                       {"abc", "abc"});
static_assert(give_back.mesh_dims_of('b') == mesh_dims{1, 2} && give_back.mesh_dims_of('a').empty());
// right-aligned ranks: a rank-1 input fills the last axis
constexpr auto ranks = elementwise({co(mesh2, {8, 16}, {{0}, {}}), co(mesh2, {16}, {{1}})}, {"ab", "b"});
static_assert(ranks.mesh_dims_of('a') == mesh_dims{0} && ranks.mesh_dims_of('b') == mesh_dims{1});

// ==== align_least_cost ============================================================================
/// align_least_cost over `specs`, all labelled `labels`, aligning `align`.
template <std::size_t N>
struct aligned {
  axis_to_dim_map map;
  kept_partial partial;
};
template <std::size_t N>
constexpr aligned<N> align(const dist_tensor_spec (&specs)[N], std::string_view labels, std::string_view axes,
                           bool allow_partial = true) {
  aligned<N> a{};
  align_least_cost(
      a.map, a.partial, N, [&](std::size_t) { return labels; },
      [&](std::size_t t) -> const tensor_dist_attr& { return specs[t].dist_attr(); },
      [&](std::size_t t) -> const tensor_shape& { return specs[t].shape(); }, axes, allow_partial);
  return a;
}
constexpr process_mesh mesh22({2, 2});
constexpr dist_tensor_spec flat(tensor_shape s, dims_mapping m) { return {s, {mesh22, m}}; }
// Paddle's concat case: both mesh dims disputed; mesh dim 0 goes to c (free for every input),
// mesh dim 1 to b, the only axis left
constexpr auto concat_case =
    align({flat({16, 16, 16}, {-1, 0, 1}), flat({4, 16, 16}, {-1, 1, 0}), flat({2, 16, 16}, {-1, -1, 0})}, "abc", "bc");
static_assert(concat_case.map.mesh_dims_of('c') == mesh_dims{0} && concat_case.map.mesh_dims_of('b') == mesh_dims{1});
// agreement is kept; agreement on an axis outside `align` (the concat axis) is dropped
constexpr auto agreed = align({flat({8, 16}, {0, 1}), flat({4, 16}, {0, 1})}, "ab", "b");
static_assert(agreed.map.mesh_dims_of('b') == mesh_dims{1} && !agreed.map.contains('a'));
// ties go to the smaller letter; an axis smaller than the mesh dim cannot take it,
constexpr auto ties = align({flat({8, 8, 8}, {0, -1, -1}), flat({8, 8, 8}, {-1, -1, -1})}, "abc", "bc");
static_assert(ties.map.mesh_dims_of('b') == mesh_dims{0} && !ties.map.contains('c'));
constexpr auto too_small = align({flat({8, 1, 8}, {0, -1, -1}), flat({8, 1, 8}, {-1, -1, -1})}, "abc", "bc");
static_assert(too_small.map.mesh_dims_of('c') == mesh_dims{0});
// nor an axis the mesh dim does not divide (phi would shard b's 3 over 2 devices)
constexpr auto indivisible = align({flat({8, 3, 8}, {0, -1, -1}), flat({8, 3, 8}, {-1, -1, -1})}, "abc", "bc");
static_assert(indivisible.map.mesh_dims_of('c') == mesh_dims{0} && !indivisible.map.contains('b'));
// partial kept when every input is partial with sum or avg (and allowed), dropped otherwise
constexpr dist_tensor_spec partial_on(tensor_shape s, dims_mapping m, reduce_type r) {
  tensor_dist_attr a(mesh22, m);
  a.set_partial_status({1}, r);
  return {s, a};
}
static_assert(align({partial_on({4, 4}, {0, -1}, reduce_type::sum), partial_on({4, 4}, {0, -1}, reduce_type::sum)}, "ab",
                    "b")
                  .partial[1] == static_cast<std::int8_t>(reduce_type::sum));
static_assert(align({partial_on({4, 4}, {0, -1}, reduce_type::max), partial_on({4, 4}, {0, -1}, reduce_type::max)}, "ab",
                    "b")
                  .partial[1] == -1);
static_assert(align({partial_on({4, 4}, {0, -1}, reduce_type::avg), partial_on({4, 4}, {0, -1}, reduce_type::avg)}, "ab",
                    "b", false)
                  .partial[1] == -1);
// empty inputs do not count; all empty aligns nothing
static_assert(align({flat({0, 16}, {-1, 0}), flat({4, 16}, {-1, 1})}, "ab", "b").map.mesh_dims_of('b') == mesh_dims{1});
static_assert(align({flat({0, 16}, {-1, 0})}, "ab", "b").map.size() == 0);

// ==== agree_or_drop ================================================================================
template <std::size_t N>
constexpr static_vector<mesh_dim_list, max_rank> vote(const dist_tensor_spec (&specs)[N]) {
  static_vector<mesh_dim_list, max_rank> out;
  agree_or_drop(out, N, specs[0].ndim() > 0 ? static_cast<std::size_t>(specs[0].ndim()) : 0,
                [&](std::size_t t, std::size_t i) { return detail::dim_list(specs[t].dist_attr(), i); });
  return out;
}
// agreement, or one voice, wins; disagreement replicates
constexpr auto votes = vote({flat({8, 8}, {0, -1}), flat({8, 8}, {-1, 1}), flat({8, 8}, {0, 1})});
static_assert(votes[0] == mesh_dim_list::single(0) && votes[1] == mesh_dim_list::single(1));
static_assert(vote({flat({8, 8}, {0, -1}), flat({8, 8}, {1, -1})})[0].empty());
// phi's vote can give one mesh dim to two dims; here the first keeps it
constexpr auto no_twice = vote({flat({8, 8}, {-1, 0}), flat({8, 8}, {-1, 0}), flat({8, 8}, {0, -1})});
static_assert(no_twice[0] == mesh_dim_list::single(0) && no_twice[1].empty());
