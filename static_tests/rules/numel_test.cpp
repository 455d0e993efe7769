#include <ctspmd/rules/numel.hpp>
#include <ctspmd/rules/logsumexp.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr auto phi = semantics::phi;
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};

// ==== numel ======================================================================================
constexpr auto n_fwd = numel::infer_forward({spec({8, 16}, {1, -1})});
static_assert(n_fwd.inputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(n_fwd.outputs[0].rank() == 0 && n_fwd.outputs[0].partial_dims() == mesh_dims{1});
static_assert(n_fwd.outputs[0].partial_reduce_type(1) == reduce_type::sum);
static_assert(!numel::infer_forward({spec({8, 16}, {-1, -1})}).outputs[0].is_partial());
static_assert(numel::infer_forward({co(mesh, {8, 16}, {{1, 0}, {}})}, {}, phi).outputs[0].partial_dims() == mesh_dims{0, 1});
constexpr auto np = numel::infer_forward({partial_spec({8, 16}, {0, -1}, 1)});  // only the shape is read
static_assert(np.inputs[0].is_partial(1) && np.outputs[0].partial_dims() == mesh_dims{0});
constexpr auto nb = numel::infer_backward({spec({8, 16}, {1, -1})}, {partial_spec({}, {}, 1)});
static_assert(nb.inputs[0].dims_mapping() == dims_mapping{-1, -1} && !nb.outputs[0].is_partial());
static_assert(numel::try_infer_backward({spec({8, 16}, {1, -1})}, {spec({1}, {-1})}).error().values[0] == 1);

// ==== logsumexp, p_norm ==========================================================================
constexpr auto l = logsumexp::infer_forward({spec({8, 16, 4}, {0, 1, -1})}, {.axis = {1}});
static_assert(l.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && l.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(!l.outputs[0].is_partial());
static_assert(logsumexp::infer_forward({spec({8, 16, 4}, {0, 1, -1})}, {.axis = {1}, .keepdim = true}).outputs[0].dims_mapping() ==
              dims_mapping{0, -1, -1});
static_assert(logsumexp::infer_forward({spec({8, 16, 4}, {0, 1, -1})}, {.axis = {1}, .reduce_all = true}).outputs[0].rank() == 0);
static_assert(!logsumexp::infer_forward({partial_spec({8, 16}, {0, -1}, 1)}, {.axis = {0}}).inputs[0].is_partial());
static_assert(logsumexp::try_infer_forward({spec({8, 16}, {0, -1})}, {.axis = {2}}).error().op == "logsumexp");
constexpr auto p = p_norm::infer_forward({spec({8, 16, 4}, {0, 1, -1})}, {.axis = 0});
static_assert(p.inputs[0].dims_mapping() == dims_mapping{-1, 1, -1} && p.outputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(p_norm::infer_forward({spec({8, 16, 4}, {0, 1, -1})}, {.asvector = true}).outputs[0].rank() == 0);
static_assert(p_norm::infer_forward({spec({8, 16, 4}, {0, 1, -1})}, {.asvector = true}).inputs[0].dims_mapping() ==
              dims_mapping{-1, -1, -1});
static_assert(is(p_norm::infer_forward({co(mesh, {8, 16}, {{0, 1}, {}})}, {}, phi).outputs[0], {{0, 1}}));
static_assert(p_norm::try_infer_forward({spec({8, 16}, {0, -1})}, {.axis = -3}).error().op == "p_norm");
constexpr auto pb = p_norm::infer_backward({spec({8, 16}, {-1, -1})}, {spec({8}, {1})}, {.axis = 1});
static_assert(pb.inputs[0].dims_mapping() == dims_mapping{1, -1} && !pb.outputs[0].is_partial());
