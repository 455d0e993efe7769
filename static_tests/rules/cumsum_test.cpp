#include <ctspmd/rules/cumsum.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::cumsum;
using ctspmd::rules::cumsum_grad;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr auto phi = semantics::phi;
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

static_assert(rules::cumsum_attributes{}.axis == -1 && !rules::cumsum_attributes{}.flatten);

// ==== cumsum =====================================================================================
// Paddle's test_cumsum_rule: x [64,32,48] [0,1,-1], axis 1 -> x' and out [0,-1,-1]
constexpr auto c1 = cumsum::infer_forward({spec({64, 32, 48}, {0, 1, -1})}, {.axis = 1});
static_assert(c1.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && c1.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
// a negative axis is normalised (phi reads it unnormalised)
static_assert(cumsum::infer_forward({spec({64, 32, 48}, {0, 1, -1})}, {.axis = -2}) == c1);
static_assert(cumsum::infer_forward({spec({64, 32, 48}, {0, -1, 1})}).outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
// flatten: x replicated, out 1-D replicated
constexpr auto cf = cumsum::infer_forward({spec({64, 32, 48}, {0, 1, -1})}, {.flatten = true});
static_assert(cf.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1} && cf.outputs[0].dims_mapping() == dims_mapping{-1});
static_assert(cumsum::infer_forward({spec({}, {})}).outputs[0].rank() == 0);
// partial dropped
static_assert(!cumsum::infer_forward({partial_spec({8, 4}, {0, -1}, 1)}).inputs[0].is_partial());
static_assert(!cumsum::infer_forward({partial_spec({8, 4}, {0, -1}, 1)}).outputs[0].is_partial());
// phi: a co-shard elsewhere stays; an indivisible mesh dim goes
static_assert(is(cumsum::infer_forward({co(mesh, {8, 16}, {{}, {0, 1}})}, {.axis = 0}, phi).outputs[0], {{}, {0, 1}}));
static_assert(is(cumsum::infer_forward({co(mesh, {6, 16}, {{1}, {}})}, {.axis = 1}, phi).outputs[0], {{}, {}}));
// errors
constexpr auto bad_axis = cumsum::try_infer_forward({spec({8, 4}, {0, -1})}, {.axis = 2});
static_assert(bad_axis.kind() == error_kind::invalid_argument && bad_axis.error().op == "cumsum");
static_assert(bad_axis.error().values == std::array<std::int64_t, 4>{2, 2, 2, 2});
static_assert(!cumsum::try_infer_forward({spec({8, 4}, {0, -1})}, {.axis = -3}));
static_assert(!constant_evaluates<[] { return cumsum::infer_forward({spec({8, 4}, {0, -1})}, {.axis = 5}); }>);
// backward
constexpr auto cb = cumsum::infer_backward({spec({64, 32, 48}, {-1, -1, -1})}, {spec({64, 32, 48}, {0, 1, -1})}, {.axis = 1});
static_assert(cb == c1);
static_assert(cumsum::infer_backward({spec({8, 4}, {-1, -1})}, {spec({32}, {0})}, {.flatten = true}).inputs[0].dims_mapping() ==
              dims_mapping{-1, -1});
static_assert(cumsum::try_infer_backward({spec({8, 4}, {-1, -1})}, {spec({32}, {0})}).error().values ==
              std::array<std::int64_t, 4>{1, 2, 2, 0});

// ==== cumsum_grad ================================================================================
constexpr auto g = cumsum_grad::infer_forward({spec({8, 16}, {0, -1}), spec({8, 16}, {-1, 1})}, {.axis = 0});
static_assert(g.inputs[0].dims_mapping() == dims_mapping{-1, 1} && g.inputs[1].dims_mapping() == dims_mapping{-1, 1});
static_assert(g.outputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(cumsum_grad::try_infer_forward({spec({8, 16}, {0, -1}), spec({8, 16}, {1, -1})}).kind() ==
              error_kind::unimplemented);
static_assert(is(cumsum_grad::infer_forward({spec({8, 16}, {0, -1}), spec({8, 16}, {1, -1})}, {}, phi).outputs[0],
                 {{1, 0}, {}}));
constexpr auto gf = cumsum_grad::infer_forward({spec({8, 16}, {0, -1}), spec({128}, {0})}, {.flatten = true});
static_assert(gf.outputs[0].dims_mapping() == dims_mapping{-1, -1} && gf.inputs[1].dims_mapping() == dims_mapping{-1});
static_assert(cumsum_grad::try_infer_forward({spec({8, 16}, {0, -1}), spec({8, 12}, {-1, -1})}).error().values ==
              std::array<std::int64_t, 4>{1, 12, 16, 0});
static_assert(cumsum_grad::try_infer_forward({spec({8, 16}, {0, -1}), spec({8}, {-1})}).error().values ==
              std::array<std::int64_t, 4>{1, 2, 2, 0});
static_assert(cumsum_grad::try_infer_backward({spec({8}, {-1}), spec({8}, {-1})}, {spec({8}, {-1})}).kind() ==
              error_kind::unimplemented);
