#include <ctspmd/merge/sharding_merge.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd_test::constant_evaluates;

// ---- sharding_merge_for_axis: replicated yields, two mesh dims conflict -------------------
static_assert(sharding_merge_for_axis('a', -1, -1) == -1);
static_assert(sharding_merge_for_axis('a', 0, -1) == 0 && sharding_merge_for_axis('a', -1, 1) == 1);
static_assert(sharding_merge_for_axis('a', 2, 2) == 2);
static_assert(try_sharding_merge_for_axis('a', 0, 1).kind() == error_kind::unimplemented);
static_assert(try_sharding_merge_for_axis('q', 0, 1).error().values == std::array<std::int64_t, 4>{'q', 0, 1, 0});
static_assert(!constant_evaluates<[] { return sharding_merge_for_axis('a', 0, 1); }>);

// ---- sharding_merge_for_tensors: per-axis merge -----------------------------------------------
constexpr auto ijk = sharding_merge_for_tensors({{"ij", {0, -1}}, {"jk", {-1, 1}}});
static_assert(ijk.at('i') == 0 && ijk.at('j') == -1 && ijk.at('k') == 1 && ijk.size() == 3);
constexpr auto absorbed = sharding_merge_for_tensors({{"ij", {0, -1}}, {"jk", {1, -1}}});
static_assert(absorbed.at('j') == 1 && absorbed.at('i') == 0);

// ---- conflict A: one axis on two mesh dims is unimplemented, whatever merge_conflicts says ----
static_assert(try_sharding_merge_for_tensors({{"ij", {0, -1}}, {"ik", {1, -1}}}).kind() == error_kind::unimplemented);
static_assert(try_sharding_merge_for_tensors({{"ij", {0, -1}}, {"ik", {1, -1}}}, false).kind() ==
              error_kind::unimplemented);

// ---- conflict B: one mesh dim on several axes -------------------------------------------------
// merge_conflicts: the first claimant (tensor order, then left to right) keeps the mesh dim.
constexpr auto kept = sharding_merge_for_tensors({{"ij", {0, -1}}, {"jk", {0, -1}}});
static_assert(kept.at('i') == 0 && kept.at('j') == -1 && kept.at('k') == -1);
constexpr auto first_is_b = sharding_merge_for_tensors({{"ba", {0, -1}}, {"a", {0}}});
static_assert(first_is_b.at('b') == 0 && first_is_b.at('a') == -1);
// A label can claim late: b is -1 in tensor 0 and 0 in tensor 1, after a took mesh dim 0.
constexpr auto late = sharding_merge_for_tensors({{"ab", {0, -1}}, {"cb", {-1, 0}}});
static_assert(late.at('a') == 0 && late.at('b') == -1 && late.at('c') == -1);
// Several conflicting mesh dims at once.
constexpr auto two = sharding_merge_for_tensors({{"abcd", {0, 1, -1, -1}}, {"cd", {1, 0}}});
static_assert(two.at('a') == 0 && two.at('b') == 1 && two.at('c') == -1 && two.at('d') == -1);
// Without merge_conflicts: precondition_not_met, naming both axes and the mesh dim.
constexpr auto refused = try_sharding_merge_for_tensors({{"ij", {0, -1}}, {"jk", {0, -1}}}, false);
static_assert(refused.kind() == error_kind::precondition_not_met);
static_assert(refused.error().values == std::array<std::int64_t, 4>{'i', 'j', 0, 0});
static_assert(try_sharding_merge_for_tensors({{"ij", {0, 1}}, {"jk", {1, -1}}}, false));  // no conflict

// ---- the '1' label is skipped ----------------------------------------------------------------------
constexpr auto ones = sharding_merge_for_tensors({{"1a", {0, -1}}, {"1b", {1, -1}}});
static_assert(!ones.contains('1') && ones.at('a') == -1 && ones.at('b') == -1);
static_assert(try_sharding_merge_for_tensors({{"1a", {0, -1}}, {"1a", {1, -1}}}, false));

// ---- malformed proposals ------------------------------------------------------------------------------
static_assert(try_sharding_merge_for_tensors({{"ij", {0}}}).kind() == error_kind::invalid_argument);  // lengths differ
static_assert(!try_sharding_merge_for_tensors({{"i-", {0, -1}}}));                                    // not a label
static_assert(!try_sharding_merge_for_tensors({{"ij", {0, 9}}}));                                     // mesh dim range
static_assert(!constant_evaluates<[] { return sharding_merge_for_tensors({{"ij", {0, -1}}, {"jk", {0, -1}}}, false); }>);

// ---- get_dims_mapping_for_axes ------------------------------------------------------------------------
static_assert(get_dims_mapping_for_axes("i1k", ijk) == dims_mapping{0, -1, 1});
static_assert(get_dims_mapping_for_axes("", ijk).empty());
static_assert(get_dims_mapping_for_axes("izk", ijk, true) == dims_mapping{0, -1, 1});  // missing z -> -1
// Without unsharded_miss_axis a missing label is an error, never a short result.
static_assert(try_get_dims_mapping_for_axes("izk", ijk).kind() == error_kind::invalid_argument);
static_assert(try_get_dims_mapping_for_axes("izk", ijk).error().values[0] == 'z');
static_assert(!constant_evaluates<[] { return get_dims_mapping_for_axes("izk", ijk); }>);
static_assert(!try_get_dims_mapping_for_axes("abcdefghij", ijk, true));  // above max_rank
