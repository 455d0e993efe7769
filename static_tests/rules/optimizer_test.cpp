#include <ctspmd/rules/optimizer.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::adam;
using ctspmd::rules::adamw;
using ctspmd::rules::sgd;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr auto phi = semantics::phi;
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};
constexpr dist_tensor_spec absent = spec({}, {});
constexpr dist_tensor_spec scalar = spec({1}, {-1});

static_assert(rules::adam_attributes{}.beta1 == 0.9 && !rules::adam_attributes{}.amsgrad);
static_assert(rules::adamw_attributes{}.coeff == 0.01 && rules::adamw_attributes{}.lr_ratio == 1.0);
static_assert(!rules::sgd_attributes{}.multi_precision);

/// adam's inputs: param, grad, lr, moment1, moment2, moment2_max, beta1_pow, beta2_pow, master, skip_update.
constexpr auto adam_in(dims_mapping p, dims_mapping g, dims_mapping m1, dims_mapping m2) {
  return std::array<dist_tensor_spec, 10>{spec({8, 16}, p), spec({8, 16}, g), scalar,   spec({8, 16}, m1),
                                          spec({8, 16}, m2), absent,          scalar,   scalar,
                                          spec({8, 16}, {-1, -1}), spec({1}, {-1})};
}

// ==== adam: the vote =============================================================================
// All agree: kept everywhere.
constexpr auto agree_in = adam_in({0, 1}, {0, 1}, {0, 1}, {0, 1});
constexpr auto agree = adam::infer_forward(agree_in);
static_assert(agree.inputs.size() == 10 && agree.outputs.size() == 7);
static_assert(agree.inputs[0].dims_mapping() == dims_mapping{0, 1} && agree.inputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(agree.inputs[3].dims_mapping() == dims_mapping{0, 1} && agree.inputs[4].dims_mapping() == dims_mapping{0, 1});
static_assert(agree.inputs[8].dims_mapping() == dims_mapping{0, 1});  // master_param follows
static_assert(agree.inputs[5].rank() == 0);                             // absent moment2_max, as given
static_assert(agree.outputs[0].dims_mapping() == dims_mapping{0, 1} && agree.outputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(agree.outputs[3].rank() == 0 && agree.outputs[6].dims_mapping() == dims_mapping{0, 1});
static_assert(agree.outputs[4].dims_mapping() == dims_mapping{-1} && agree.outputs[5].dims_mapping() == dims_mapping{-1});

// Replicated entries cast no vote: moment1 shards dim 0, the others nothing -> dim 0 sharded.
constexpr auto one = adam::infer_forward(adam_in({-1, -1}, {-1, -1}, {1, -1}, {-1, -1}));
static_assert(one.inputs[0].dims_mapping() == dims_mapping{1, -1} && one.inputs[4].dims_mapping() == dims_mapping{1, -1});
static_assert(one.outputs[0].dims_mapping() == dims_mapping{1, -1});
// A disagreement replicates the dim: moment2 shards dim 1 on mesh 0, param on mesh 1.
constexpr auto disagree = adam::infer_forward(adam_in({-1, 1}, {-1, 1}, {-1, -1}, {-1, 0}));
static_assert(disagree.inputs[0].dims_mapping() == dims_mapping{-1, -1});
static_assert(disagree.outputs[2].dims_mapping() == dims_mapping{-1, -1});
// Per dim: dim 0 agreed, dim 1 not.
constexpr auto mixed = adam::infer_forward(adam_in({0, 1}, {0, -1}, {0, -1}, {-1, -1}));
static_assert(mixed.inputs[0].dims_mapping() == dims_mapping{0, 1});
constexpr auto mixed2 = adam::infer_forward(adam_in({0, 1}, {0, 1}, {-1, -1}, {1, 0}));
static_assert(mixed2.inputs[0].dims_mapping() == dims_mapping{-1, -1});
// phi's bug (notes §3): param [-1,0], moment1 [0,-1] would give [0,0]; the mesh dim stays with dim 0.
constexpr auto bug = adam::infer_forward(adam_in({-1, 0}, {-1, 0}, {0, -1}, {-1, -1}));
static_assert(bug.inputs[0].dims_mapping() == dims_mapping{0, -1} && bug.inputs[3].dims_mapping() == dims_mapping{0, -1});

// Partial status is dropped (a partial grad is reduced first); the scalars come back replicated.
constexpr auto part = adam::infer_forward(std::array<dist_tensor_spec, 8>{
    spec({8, 16}, {0, -1}), partial_spec({8, 16}, {0, -1}, 1), partial_spec({1}, {-1}, 0), spec({8, 16}, {0, -1}),
    spec({8, 16}, {0, -1}), absent, spec({1}, {-1}), spec({1}, {-1})});
static_assert(!part.inputs[1].is_partial() && part.inputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(!part.inputs[2].is_partial() && !part.outputs[0].is_partial());
static_assert(part.outputs.size() == 7 && part.outputs[6].rank() == 0);  // no master_param: absent output

// moment2_max (amsgrad) votes.
constexpr auto ams = adam::infer_forward(std::array<dist_tensor_spec, 8>{
    spec({8, 16}, {-1, 1}), spec({8, 16}, {-1, 1}), scalar, spec({8, 16}, {-1, 1}), spec({8, 16}, {-1, 1}),
    spec({8, 16}, {-1, 0}), scalar, scalar}, {.amsgrad = true});
static_assert(ams.inputs[5].dims_mapping() == dims_mapping{-1, -1} && ams.outputs[3].dims_mapping() == dims_mapping{-1, -1});

// adamw: the same layouts.
static_assert(adamw::infer_forward(agree_in, {.coeff = 0.1, .with_decay = true}) == agree);

// fluid: param and grad on two mesh dims for one axis is a conflict; phi co-shards them and then the vote drops it.
static_assert(adam::try_infer_forward(adam_in({0, -1}, {1, -1}, {-1, -1}, {-1, -1})).kind() == error_kind::unimplemented);
constexpr auto phi_pg = adam::infer_forward(adam_in({0, -1}, {1, -1}, {-1, -1}, {-1, -1}), {}, phi);  // grad (4 shards) is followed
static_assert(is(phi_pg.inputs[0], {{1, 0}, {}}) && is(phi_pg.inputs[1], {{1, 0}, {}}) && is(phi_pg.outputs[1], {{1, 0}, {}}));
constexpr auto phi_co = adam::infer_forward(adam_in({0, -1}, {1, -1}, {0, -1}, {-1, -1}), {}, phi);
static_assert(is(phi_co.inputs[0], {{}, {}}));  // [0, 1] against moment1's [0]: replicated
// a co-sharded input voted by everyone stays
constexpr auto co_all = adam::infer_forward(std::array<dist_tensor_spec, 8>{
    co(mesh, {8, 16}, {{1, 0}, {}}), co(mesh, {8, 16}, {{1, 0}, {}}), scalar, co(mesh, {8, 16}, {{1, 0}, {}}),
    co(mesh, {8, 16}, {{}, {}}), absent, scalar, scalar});
static_assert(is(co_all.inputs[3], {{1, 0}, {}}) && is(co_all.outputs[2], {{1, 0}, {}}));
static_assert(adam::infer_forward(std::array<dist_tensor_spec, 8>{
    co(mesh, {8, 16}, {{1, 0}, {}}), co(mesh, {8, 16}, {{1, 0}, {}}), scalar, co(mesh, {8, 16}, {{1, 0}, {}}),
    co(mesh, {8, 16}, {{}, {}}), absent, scalar, scalar}, {}, phi) == co_all);

// ---- errors --------------------------------------------------------------------------------------
constexpr auto bad_rank = adam::try_infer_forward(std::array<dist_tensor_spec, 8>{
    spec({8, 16}, {-1, -1}), spec({8}, {-1}), scalar, spec({8, 16}, {-1, -1}), spec({8, 16}, {-1, -1}), absent,
    scalar, scalar});
static_assert(bad_rank.kind() == error_kind::invalid_argument && bad_rank.error().op == "adam");
static_assert(bad_rank.error().values == std::array<std::int64_t, 4>{1, 1, 0, 2});
constexpr auto bad_size = adam::try_infer_forward(std::array<dist_tensor_spec, 8>{
    spec({8, 16}, {-1, -1}), spec({8, 16}, {-1, -1}), scalar, spec({8, 12}, {-1, -1}), spec({8, 16}, {-1, -1}),
    absent, scalar, scalar});
static_assert(bad_size.kind() == error_kind::invalid_argument &&
              bad_size.error().values == std::array<std::int64_t, 4>{3, 12, 1, 16});  // input, size, dim, param's
constexpr auto skip_sharded = adam::try_infer_forward(std::array<dist_tensor_spec, 10>{
    spec({8, 16}, {-1, -1}), spec({8, 16}, {-1, -1}), scalar, spec({8, 16}, {-1, -1}), spec({8, 16}, {-1, -1}),
    absent, scalar, scalar, absent, spec({2}, {0})});
static_assert(skip_sharded.kind() == error_kind::invalid_argument &&
              skip_sharded.error().values == std::array<std::int64_t, 4>{9, 0, 0, 0});
static_assert(!adam::try_infer_forward(std::array<dist_tensor_spec, 7>{}));  // too few inputs
static_assert(!constant_evaluates<[] { return adam::infer_forward(std::array<dist_tensor_spec, 7>{}); }>);

// ==== adam backward ==============================================================================
constexpr std::array<dist_tensor_spec, 7> agree_out{spec({8, 16}, {0, 1}), spec({8, 16}, {0, 1}), spec({8, 16}, {0, 1}),
                                                    absent,               scalar,                scalar,
                                                    spec({8, 16}, {0, 1})};
constexpr auto back = adam::infer_backward(adam_in({-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}), agree_out);
static_assert(back == agree);  // the outputs stand in for their inputs
constexpr std::array<dist_tensor_spec, 7> split_out{spec({8, 16}, {0, -1}), spec({8, 16}, {-1, 1}),
                                                    spec({8, 16}, {-1, -1}), absent, scalar, scalar,
                                                    spec({8, 16}, {-1, -1})};
constexpr auto back2 = adam::infer_backward(adam_in({-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}), split_out);
static_assert(back2.inputs[0].dims_mapping() == dims_mapping{0, 1} && back2.outputs[2].dims_mapping() == dims_mapping{0, 1});
static_assert(adam::try_infer_backward(adam_in({-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}),
                                       std::array<dist_tensor_spec, 7>{spec({8}, {0}), spec({8, 16}, {0, 1}),
                                                                       spec({8, 16}, {0, 1}), absent, scalar, scalar,
                                                                       spec({8, 16}, {0, 1})})
                  .error()
                  .values == std::array<std::int64_t, 4>{0, 1, 0, 2});
static_assert(!adam::try_infer_backward(adam_in({-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}), std::array<dist_tensor_spec, 6>{}));

// ==== sgd ========================================================================================
constexpr auto sg = sgd::infer_forward({spec({8, 16}, {0, -1}), scalar, spec({8, 16}, {-1, 1})});
static_assert(sg.inputs.size() == 3 && sg.outputs.size() == 2);
static_assert(sg.inputs[0].dims_mapping() == dims_mapping{0, 1} && sg.inputs[2].dims_mapping() == dims_mapping{0, 1});
static_assert(sg.outputs[0].dims_mapping() == dims_mapping{0, 1} && sg.outputs[1].rank() == 0);
constexpr auto sgm = sgd::infer_forward({spec({8, 16}, {0, -1}), partial_spec({1}, {-1}, 1), spec({8, 16}, {0, -1}),
                                         spec({8, 16}, {-1, 1})});
static_assert(sgm.inputs[3].dims_mapping() == dims_mapping{0, -1} && sgm.outputs[1].dims_mapping() == dims_mapping{0, -1});
static_assert(!sgm.inputs[1].is_partial());
static_assert(sgd::try_infer_forward({spec({8, 16}, {0, -1}), scalar, spec({8, 16}, {1, -1})}).kind() ==
              error_kind::unimplemented);
static_assert(is(sgd::infer_forward({spec({8, 16}, {0, -1}), scalar, spec({8, 16}, {1, -1})}, {}, phi).inputs[0],
                 {{1, 0}, {}}));
static_assert(sgd::try_infer_forward({spec({8, 16}, {0, -1}), scalar, spec({16, 8}, {-1, -1})}).kind() ==
              error_kind::invalid_argument);
constexpr auto sgb = sgd::infer_backward({spec({8, 16}, {-1, -1}), scalar, spec({8, 16}, {-1, -1})},
                                         {spec({8, 16}, {1, -1}), absent});
static_assert(sgb.inputs[0].dims_mapping() == dims_mapping{1, -1} && sgb.inputs[2].dims_mapping() == dims_mapping{1, -1});
static_assert(sgb.outputs[1].rank() == 0);
static_assert(!sgd::try_infer_backward({spec({8, 16}, {-1, -1}), scalar, spec({8, 16}, {-1, -1})},
                                       {spec({8, 16}, {1, -1}), spec({8, 16}, {1, -1})}));
