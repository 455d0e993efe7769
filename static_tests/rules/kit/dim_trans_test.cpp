#include <ctspmd/rules/kit/dim_trans.hpp>

using namespace ctspmd;
using dt = ctspmd::dim_trans;

// ==== make_reshape_dim_trans ====================================================================
// ---- one-to-one, flatten, split ------------------------------------------------------------------
static_assert(make_reshape_dim_trans({2, 3}, {2, 3}) == dim_trans_list{dt::input_dim(0), dt::input_dim(1)});
static_assert(make_reshape_dim_trans({2, 3, 4}, {6, 4}) == dim_trans_list{dt::flatten({0, 1}), dt::input_dim(2)});
static_assert(make_reshape_dim_trans({2, 3, 4}, {24}) == dim_trans_list{dt::flatten({0, 1, 2})});
static_assert(make_reshape_dim_trans({6, 4}, {2, 3, 4}) ==
              dim_trans_list{dt::split({0}, {2, 3}, 0), dt::split({0}, {2, 3}, 1), dt::input_dim(1)});
static_assert(make_reshape_dim_trans({4, 6}, {4, 3, 2}) ==
              dim_trans_list{dt::input_dim(0), dt::split({1}, {3, 2}, 0), dt::split({1}, {3, 2}, 1)});
// many-to-many: a split of a flatten
static_assert(make_reshape_dim_trans({2, 3}, {3, 2}) ==
              dim_trans_list{dt::split({0, 1}, {3, 2}, 0), dt::split({0, 1}, {3, 2}, 1)});
static_assert(make_reshape_dim_trans({6, 4}, {3, 8}) ==
              dim_trans_list{dt::split({0, 1}, {3, 8}, 0), dt::split({0, 1}, {3, 8}, 1)});
// groups one after the other
static_assert(make_reshape_dim_trans({2, 3, 4, 5}, {6, 2, 2, 5}) ==
              dim_trans_list{dt::flatten({0, 1}), dt::split({2}, {2, 2}, 0), dt::split({2}, {2, 2}, 1),
                             dt::input_dim(3)});

// ---- size-1 dims: dropped from the source, singletons in the target --------------------------------
static_assert(make_reshape_dim_trans({4, 1, 8}, {4, 8}) == dim_trans_list{dt::input_dim(0), dt::input_dim(2)});
static_assert(make_reshape_dim_trans({4, 8}, {1, 4, 8}) ==
              dim_trans_list{dt::singleton(), dt::input_dim(0), dt::input_dim(1)});
static_assert(make_reshape_dim_trans({1}, {1}) == dim_trans_list{dt::singleton()});
static_assert(make_reshape_dim_trans({1, 1}, {}) == dim_trans_list{});
static_assert(make_reshape_dim_trans({}, {1, 1}) == dim_trans_list{dt::singleton(), dt::singleton()});
// inside a flatten: the size-1 source dim is not an input (Paddle kept it)
static_assert(make_reshape_dim_trans({2, 1, 3}, {6}) == dim_trans_list{dt::flatten({0, 2})});
static_assert(make_reshape_dim_trans({2, 1, 3}, {2, 3}) == dim_trans_list{dt::input_dim(0), dt::input_dim(2)});
// inside a split: the size-1 entry is a singleton and not in the split shape (Paddle kept it)
static_assert(make_reshape_dim_trans({12}, {3, 1, 4}) ==
              dim_trans_list{dt::split({0}, {3, 4}, 0), dt::singleton(), dt::split({0}, {3, 4}, 1)});

// ---- unknown (-1) and zero sizes -------------------------------------------------------------------
// known to be the same size: one-to-one
static_assert(make_reshape_dim_trans({-1, 4, 8}, {-1, 32}, {0, -1}) ==
              dim_trans_list{dt::input_dim(0), dt::flatten({1, 2})});
static_assert(make_reshape_dim_trans({6, -1}, {2, 3, -1}, {-1, -1, 1}) ==
              dim_trans_list{dt::split({0}, {2, 3}, 0), dt::split({0}, {2, 3}, 1), dt::input_dim(1)});
// not known to be the same: the rest is one coarse group
static_assert(make_reshape_dim_trans({-1, 4, 8}, {-1, 32}) ==
              dim_trans_list{dt::split({0, 1, 2}, {-1, 32}, 0), dt::split({0, 1, 2}, {-1, 32}, 1)});
static_assert(make_reshape_dim_trans({2, -1, 4}, {2, -1}) == dim_trans_list{dt::input_dim(0), dt::flatten({1, 2})});
static_assert(make_reshape_dim_trans({-1}, {2, -1}) ==
              dim_trans_list{dt::split({0}, {2, -1}, 0), dt::split({0}, {2, -1}, 1)});
// an unknown size met while growing a group
static_assert(make_reshape_dim_trans({2, -1}, {4, -1}) ==
              dim_trans_list{dt::split({0, 1}, {4, -1}, 0), dt::split({0, 1}, {4, -1}, 1)});
// zero sizes: equal ones match, others end the matching
static_assert(make_reshape_dim_trans({0, 4}, {0, 4}) == dim_trans_list{dt::input_dim(0), dt::input_dim(1)});
static_assert(make_reshape_dim_trans({2, 0}, {0, 2}) ==
              dim_trans_list{dt::split({0, 1}, {0, 2}, 0), dt::split({0, 1}, {0, 2}, 1)});
static_assert(make_reshape_dim_trans({0}, {0, 5}) == dim_trans_list{dt::input_dim(0), dt::singleton()});
// one entry per target dim, always
static_assert(make_reshape_dim_trans({2, 3, 4}, {3, 8}).size() == 2);

// ---- source_dim ------------------------------------------------------------------------------------
static_assert(dt::input_dim(2).source_dim() == 2);
static_assert(dt::flatten({1, 2}).source_dim() == 1);
static_assert(dt::split({1, 2}, {3, 4}, 0).source_dim() == 1);
static_assert(dt::split({1, 2}, {3, 4}, 1).source_dim() == -1);
static_assert(dt::singleton().source_dim() == -1);

// ==== infer_from_dim_trans ======================================================================
constexpr process_mesh mesh({2, 3});
constexpr process_mesh mesh234({2, 3, 4});
// flatten: the first input keeps its mesh dim, the others lose theirs
static_assert(infer_from_dim_trans({0, 1, -1}, make_reshape_dim_trans({2, 3, 4}, {6, 4}), mesh) ==
              dim_trans_sharding{{0, -1, -1}, {0, -1}});
static_assert(infer_from_dim_trans({-1, 1, 0}, make_reshape_dim_trans({2, 3, 4}, {6, 4}), mesh) ==
              dim_trans_sharding{{-1, -1, 0}, {-1, 0}});
// split: kept when output 0's size divides by the mesh dim's size
constexpr auto split_6_4 = make_reshape_dim_trans({6, 4}, {2, 3, 4});
static_assert(infer_from_dim_trans({0, -1}, split_6_4, mesh234) == dim_trans_sharding{{0, -1}, {0, -1, -1}});
static_assert(infer_from_dim_trans({1, -1}, split_6_4, mesh234) == dim_trans_sharding{{-1, -1}, {-1, -1, -1}});
static_assert(infer_from_dim_trans({2, -1}, split_6_4, mesh234) == dim_trans_sharding{{-1, -1}, {-1, -1, -1}});
static_assert(infer_from_dim_trans({1, 0}, make_reshape_dim_trans({6, 4}, {3, 2, 4}), mesh234) ==
              dim_trans_sharding{{1, 0}, {1, -1, 0}});
// a split of a flatten: only its first input can keep its mesh dim
static_assert(infer_from_dim_trans({1, 0}, make_reshape_dim_trans({6, 4}, {3, 8}), mesh) ==
              dim_trans_sharding{{1, -1}, {1, -1}});
// a sharded size-1 dim goes nowhere
static_assert(infer_from_dim_trans({-1, 0, 1}, make_reshape_dim_trans({4, 1, 8}, {4, 8}), mesh) ==
              dim_trans_sharding{{-1, -1, 1}, {-1, 1}});
// unknown split sizes are not divisible, except by a mesh dim of size 1
static_assert(infer_from_dim_trans({0}, make_reshape_dim_trans({-1}, {-1, 2}), mesh) ==
              dim_trans_sharding{{-1}, {-1, -1}});
static_assert(infer_from_dim_trans({0}, make_reshape_dim_trans({-1}, {-1, 2}), process_mesh({1, 2})) ==
              dim_trans_sharding{{0}, {0, -1}});
static_assert(infer_from_dim_trans({0}, make_reshape_dim_trans({-1}, {2, -1}), mesh) ==
              dim_trans_sharding{{0}, {0, -1}});
