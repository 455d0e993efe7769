#include <ctspmd/rules/reduction.hpp>

#include <ctspmd/registry/attribute_reflection.hpp>

#include <boost/hana/at_key.hpp>
#include <boost/hana/string.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::reduction;
using ctspmd::rules::reduction_with;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};
constexpr ctspmd_test::partial_on_mesh partial_spec{mesh};
constexpr dist_tensor_spec x = spec({4, 8, 16}, {0, 1, -1});

// ==== attributes ================================================================================
static_assert(reduction::attributes{}.axis.empty() && !reduction::attributes{}.keep_dim);
static_assert(reduction::attributes{}.reduce == reduce_type::sum);
static_assert(std::is_same_v<reduction::attributes, rules::reduction_attributes>);
static_assert(reduction_with<reduce_type::avg>::attributes{}.reduce == reduce_type::avg);
static_assert(boost::hana::at_key(reduction_with<reduce_type::max>::attributes{}, BOOST_HANA_STRING("reduce")) ==
              reduce_type::max);
static_assert(reduction::name == "reduction" && reduction_with<reduce_type::all>::name == "reduction");

// ==== forward ===================================================================================
// ---- a sharded reduced axis: the output is partial (sum) on its mesh dim; x is unchanged ---------
constexpr auto sum1 = reduction::infer_forward({x}, {.axis = {1}});
static_assert(sum1.inputs.size() == 1 && sum1.outputs.size() == 1);
static_assert(sum1.inputs[0] == x.dist_attr());
static_assert(sum1.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(sum1.outputs[0].partial_dims() == mesh_dims{1});
static_assert(sum1.outputs[0].partial_reduce_type(1) == reduce_type::sum);

// ---- an unsharded reduced axis: no partial ----------------------------------------------------------
constexpr auto sum2 = reduction::infer_forward({x}, {.axis = {2}});
static_assert(sum2.outputs[0].dims_mapping() == dims_mapping{0, 1} && !sum2.outputs[0].is_partial());
static_assert(sum2.inputs[0].dims_mapping() == dims_mapping{0, 1, -1});

// ---- every reduce type reaches the output: the rule's default, and the attribute ------------------
template <reduce_type R>
constexpr reduce_type default_partial() {
  return reduction_with<R>::infer_forward({x}, {.axis = {0}}).outputs[0].partial_reduce_type(0);
}
static_assert(default_partial<reduce_type::sum>() == reduce_type::sum);
static_assert(default_partial<reduce_type::avg>() == reduce_type::avg);
static_assert(default_partial<reduce_type::max>() == reduce_type::max);
static_assert(default_partial<reduce_type::min>() == reduce_type::min);
static_assert(default_partial<reduce_type::prod>() == reduce_type::prod);
static_assert(default_partial<reduce_type::any>() == reduce_type::any);
static_assert(default_partial<reduce_type::all>() == reduce_type::all);
constexpr reduce_type given_partial(reduce_type r) {
  return reduction::infer_forward({x}, {.axis = {0}, .reduce = r}).outputs[0].partial_reduce_type(0);
}
static_assert(given_partial(reduce_type::max) == reduce_type::max);
static_assert(given_partial(reduce_type::min) == reduce_type::min);
static_assert(given_partial(reduce_type::prod) == reduce_type::prod);
static_assert(given_partial(reduce_type::avg) == reduce_type::avg);
static_assert(given_partial(reduce_type::any) == reduce_type::any);
static_assert(given_partial(reduce_type::all) == reduce_type::all);
static_assert(reduction_with<reduce_type::max>::infer_forward({x}, {.axis = {0}, .reduce = reduce_type::sum})
                  .outputs[0]
                  .partial_reduce_type(0) == reduce_type::sum);

// ---- negative axes (+rank), several axes ---------------------------------------------------------------
constexpr auto neg = reduction::infer_forward({x}, {.axis = {-3}});
static_assert(neg.outputs[0].dims_mapping() == dims_mapping{1, -1});
static_assert(neg.outputs[0].partial_dims() == mesh_dims{0});
constexpr auto neg2 = reduction_with<reduce_type::max>::infer_forward({x}, {.axis = {-1, 0}});
static_assert(neg2.outputs[0].dims_mapping() == dims_mapping{1});
static_assert(neg2.outputs[0].partial_dims() == mesh_dims{0} &&
              neg2.outputs[0].partial_reduce_type(0) == reduce_type::max);

// ---- keep_dim: reduced dims stay as size-1 dims, never sharded ----------------------------------------
constexpr auto keep = reduction_with<reduce_type::avg>::infer_forward({x}, {.axis = {1}, .keep_dim = true});
static_assert(keep.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(keep.outputs[0].partial_dims() == mesh_dims{1} &&
              keep.outputs[0].partial_reduce_type(1) == reduce_type::avg);
static_assert(keep.inputs[0] == x.dist_attr());
static_assert(reduction::infer_forward({x}, {.axis = {2}, .keep_dim = true}).outputs[0].dims_mapping() ==
              dims_mapping{0, 1, -1});

// ---- reduce all (empty axis): a 0-d output partial on every sharding mesh dim --------------------------
constexpr auto all = reduction_with<reduce_type::prod>::infer_forward({x});
static_assert(all.outputs[0].dims_mapping().empty());
static_assert(all.outputs[0].partial_dims() == mesh_dims{0, 1});
static_assert(all.outputs[0].partial_reduce_type(0) == reduce_type::prod &&
              all.outputs[0].partial_reduce_type(1) == reduce_type::prod);
static_assert(reduction::infer_forward({x}, {.axis = {0, 1, 2}}) == reduction::infer_forward({x}));
static_assert(reduction::infer_forward({x}, {.axis = {2, 0, 1}}) == reduction::infer_forward({x}));
constexpr auto all_keep = reduction::infer_forward({x}, {.keep_dim = true});
static_assert(all_keep.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
static_assert(all_keep.outputs[0].partial_dims() == mesh_dims{0, 1});
constexpr auto all_replicated = reduction::infer_forward({spec({4, 8}, {-1, -1})});
static_assert(all_replicated.outputs[0].dims_mapping().empty() && !all_replicated.outputs[0].is_partial());

// ---- a 0-d input: axis 0 or -1, or none, reduces nothing -----------------------------------------------
constexpr dist_tensor_spec scalar = spec({}, {});
static_assert(reduction::infer_forward({scalar}).outputs[0].dims_mapping().empty());
static_assert(reduction::infer_forward({scalar}, {.axis = {-1}, .keep_dim = true}).outputs[0].dims_mapping().empty());
static_assert(!reduction::infer_forward({scalar}, {.axis = {0}}).outputs[0].is_partial());

// ---- a partial x: kept where the reduction commutes with the parts' combination ---------------------
constexpr auto psum = reduction::infer_forward({partial_spec({4, 8}, {-1, 1}, 0, reduce_type::sum)}, {.axis = {1}});
static_assert(psum.inputs[0].partial_dims() == mesh_dims{0});  // no reshard
static_assert(psum.outputs[0].dims_mapping() == dims_mapping{-1});
static_assert(psum.outputs[0].partial_dims() == mesh_dims{0, 1});
static_assert(psum.outputs[0].partial_reduce_type(0) == reduce_type::sum &&
              psum.outputs[0].partial_reduce_type(1) == reduce_type::sum);
constexpr auto pavg = reduction::infer_forward({partial_spec({4, 8}, {-1, -1}, 1, reduce_type::avg)}, {.axis = {0}});
static_assert(pavg.inputs[0].partial_reduce_type(1) == reduce_type::avg);
static_assert(pavg.outputs[0].partial_dims() == mesh_dims{1} &&
              pavg.outputs[0].partial_reduce_type(1) == reduce_type::avg);
constexpr auto pmax = reduction_with<reduce_type::max>::infer_forward(
    {partial_spec({4, 8}, {-1, 1}, 0, reduce_type::max)}, {.axis = {1}});
static_assert(pmax.outputs[0].partial_dims() == mesh_dims{0, 1});
static_assert(pmax.outputs[0].partial_reduce_type(0) == reduce_type::max);
// A partial sum reduced by max must be combined first: x loses its partial status (a reshard).
constexpr auto psum_max = reduction_with<reduce_type::max>::infer_forward(
    {partial_spec({4, 8}, {-1, 1}, 0, reduce_type::sum)}, {.axis = {1}});
static_assert(!psum_max.inputs[0].is_partial() && psum_max.inputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(psum_max.outputs[0].partial_dims() == mesh_dims{1});
static_assert(psum_max.outputs[0].partial_reduce_type(1) == reduce_type::max);
constexpr auto pmax_sum =
    reduction::infer_forward({partial_spec({4, 8}, {-1, -1}, 0, reduce_type::max)}, {.axis = {1}});
static_assert(!pmax_sum.inputs[0].is_partial() && !pmax_sum.outputs[0].is_partial());

// ---- errors -----------------------------------------------------------------------------------------------
constexpr auto out_of_range = reduction::try_infer_forward({x}, {.axis = {3}});
static_assert(out_of_range.kind() == error_kind::invalid_argument && out_of_range.error().op == "reduction");
static_assert(out_of_range.error().values[0] == 3 && out_of_range.error().values[1] == 3);
static_assert(reduction::try_infer_forward({x}, {.axis = {-4}}).error().values[0] == -4);
static_assert(reduction::try_infer_forward({scalar}, {.axis = {1}}).error().values[0] == 1);
constexpr auto twice = reduction::try_infer_forward({x}, {.axis = {1, -2}});
static_assert(twice.kind() == error_kind::invalid_argument);
static_assert(twice.error().values[0] == -2 && twice.error().values[1] == 1);
static_assert(reduction::try_infer_forward({x}, {.axis = {0, 0}}).error().values[1] == 0);
static_assert(reduction::try_infer_forward({}).kind() == error_kind::invalid_argument);
static_assert(reduction::try_infer_forward({x, x}).error().values[1] == 2);
static_assert(reduction::try_infer_forward({x}, {.reduce = static_cast<reduce_type>(9)}).error().values[0] == 9);
static_assert(!constant_evaluates<[] { return reduction::infer_forward({x}, {.axis = {5}}); }>);
static_assert(constant_evaluates<[] { return reduction::infer_forward({x}, {.axis = {2}}); }>);

// ==== backward ==================================================================================
// ---- x takes the kept dims from the output; reduced dims are replicated --------------------------------
constexpr dist_tensor_spec x_rep = spec({4, 8, 16}, {-1, -1, -1});
constexpr auto back = reduction::infer_backward({x_rep}, {spec({4, 16}, {1, 0})}, {.axis = {1}});
static_assert(back.inputs[0].dims_mapping() == dims_mapping{1, -1, 0});
static_assert(back.outputs[0].dims_mapping() == dims_mapping{1, 0});
static_assert(!back.inputs[0].is_partial());

// x's own mapping does not count backward.
static_assert(reduction::infer_backward({x}, {spec({8}, {-1})}, {.axis = {0, -1}}).inputs[0].dims_mapping() ==
              dims_mapping{-1, -1, -1});

// ---- negative axes and keep_dim: a sharded size-1 dim of the output is returned -1 --------------------
constexpr auto back_keep =
    reduction::infer_backward({x_rep}, {spec({4, 1, 16}, {0, 1, -1})}, {.axis = {-2}, .keep_dim = true});
static_assert(back_keep.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(back_keep.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});

// ---- a partial output keeps its partial status; x gets none ------------------------------------------------
constexpr dist_tensor_spec partial_out = partial_spec({4}, {0}, 1, reduce_type::max);
constexpr auto back_partial =
    reduction_with<reduce_type::max>::infer_backward({spec({4, 8}, {-1, -1})}, {partial_out}, {.axis = {1}});
static_assert(back_partial.outputs[0] == partial_out.dist_attr());
static_assert(back_partial.inputs[0].dims_mapping() == dims_mapping{0, -1} && !back_partial.inputs[0].is_partial());

// ---- reduce all: a 0-d output, every x dim replicated ------------------------------------------------------
constexpr auto back_all = reduction::infer_backward({x}, {spec({}, {})});
static_assert(back_all.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
static_assert(back_all.outputs[0].dims_mapping().empty());
static_assert(
    reduction::infer_backward({x}, {spec({1, 1, 1}, {0, 1, -1})}, {.keep_dim = true}).outputs[0].dims_mapping() ==
    dims_mapping{-1, -1, -1});

// Forward then backward: the kept dims come back, the reduced ones replicated.
static_assert(reduction::infer_backward({x}, {dist_tensor_spec({4, 16}, sum1.outputs[0])}, {.axis = {1}})
                  .inputs[0]
                  .dims_mapping() == dims_mapping{0, -1, -1});

// ---- errors -----------------------------------------------------------------------------------------------
constexpr auto bad_rank = reduction::try_infer_backward({x}, {spec({4, 8, 16}, {-1, -1, -1})}, {.axis = {1}});
static_assert(bad_rank.kind() == error_kind::invalid_argument);
static_assert(bad_rank.error().values == std::array<std::int64_t, 4>{2, 3, 1, 3});
static_assert(
    reduction::try_infer_backward({x}, {spec({4, 16}, {-1, -1})}, {.axis = {1}, .keep_dim = true}).error().values[0] ==
    3);
static_assert(reduction::try_infer_backward({x}, {spec({4}, {-1})}, {.axis = {7}}).error().values[0] == 7);
static_assert(!reduction::try_infer_backward({x}, {}, {.axis = {1}}));
static_assert(!reduction::try_infer_backward({}, {spec({4}, {-1})}));
static_assert(!reduction::try_infer_backward({x}, {spec({4, 16}, {-1, -1}), spec({4, 16}, {-1, -1})}, {.axis = {1}}));
static_assert(!constant_evaluates<[] { return reduction::infer_backward({x}, {spec({4}, {-1})}, {.axis = {1}}); }>);

// ==== frobenius_norm ===============================================================================
// Not the reduction rule: a norm of shards (or of partial parts) is no part of the norm, so
// the reduced dims are gathered, x is made whole, and the output is never partial.
using rules::frobenius_norm;
static_assert(frobenius_norm::name == "frobenius_norm");
static_assert(std::is_same_v<frobenius_norm::attributes, rules::reduction_attributes>);
// x [4, 8, 16] on {0, 1, -1}, norm over dim 1: dim 1 gathered, dim 0 keeps mesh dim 0.
constexpr auto fro1 = frobenius_norm::infer_forward({x}, {.axis = {1}});
static_assert(fro1.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && !fro1.inputs[0].is_partial());
static_assert(fro1.outputs[0].dims_mapping() == dims_mapping{0, -1} && !fro1.outputs[0].is_partial());
// Every dim, keep_dim: everything gathered, a replicated [1, 1, 1] output.
constexpr auto fro_all = frobenius_norm::infer_forward({x}, {.keep_dim = true});
static_assert(fro_all.inputs[0].dims_mapping() == dims_mapping{-1, -1, -1});
static_assert(fro_all.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1} && !fro_all.outputs[0].is_partial());
// The oracle's regression case: x [4] sharded on a mesh dim, every dim reduced (Paddle: partial sum).
constexpr auto fro_vec = frobenius_norm::infer_forward({spec({4}, {0})});
static_assert(fro_vec.inputs[0].dims_mapping() == dims_mapping{-1});
static_assert(fro_vec.outputs[0].dims_mapping().empty() && !fro_vec.outputs[0].is_partial());
// A partial x is combined first (whatever the reduce type), even when a kept dim is sharded.
constexpr auto fro_partial =
    frobenius_norm::infer_forward({partial_spec({4, 8}, {-1, 1}, 0, reduce_type::sum)}, {.axis = {0}});
static_assert(!fro_partial.inputs[0].is_partial() && fro_partial.inputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(fro_partial.outputs[0].dims_mapping() == dims_mapping{1} && !fro_partial.outputs[0].is_partial());
static_assert(!frobenius_norm::infer_forward({partial_spec({4, 8}, {-1, -1}, 1, reduce_type::max)}, {.axis = {1}})
                   .outputs[0]
                   .is_partial());
// Backward: as reduction's, with the output not partial.
constexpr auto fro_back = frobenius_norm::infer_backward({spec({4, 8}, {-1, -1})}, {partial_out}, {.axis = {1}});
static_assert(fro_back.inputs[0].dims_mapping() == dims_mapping{0, -1} && !fro_back.inputs[0].is_partial());
static_assert(fro_back.outputs[0].dims_mapping() == dims_mapping{0} && !fro_back.outputs[0].is_partial());
// Errors as reduction's, under the operator's name.
constexpr auto fro_bad = frobenius_norm::try_infer_forward({x}, {.axis = {3}});
static_assert(fro_bad.kind() == error_kind::invalid_argument && fro_bad.error().op == "frobenius_norm");
static_assert(!frobenius_norm::try_infer_forward({x, x}));
static_assert(!frobenius_norm::try_infer_backward({x}, {spec({4, 8, 16}, {-1, -1, -1})}, {.axis = {1}}));

// ==== phi: co-shard reduced axes, and x always whole ==================================================
namespace phi_cases {
using ctspmd::rules::det;
using ctspmd_test::co;
using ctspmd_test::is;
constexpr auto phi = semantics::phi;
constexpr process_mesh m3({2, 2, 2});
// a co-sharded reduced axis makes the output partial on all its mesh dims, with the operator's type
constexpr auto co_max =
    reduction_with<reduce_type::max>::infer_forward({co(m3, {16, 32, 48}, {{0, 1}, {}, {2}})}, {.axis = {0}}, phi);
static_assert(is(co_max.inputs[0], {{0, 1}, {}, {2}}) && is(co_max.outputs[0], {{}, {2}}) &&
              co_max.outputs[0].partial_dims() == mesh_dims{0, 1} &&
              co_max.outputs[0].partial_reduce_type(0) == reduce_type::max);
// a partial x is required whole under phi, even where the reduction commutes (kept under fluid)
constexpr auto p_sum = partial_spec({6, 8}, {0, -1}, 1, reduce_type::sum);
static_assert(!reduction::infer_forward({p_sum}, {.axis = {1}}, phi).inputs[0].is_partial());
static_assert(!reduction::infer_forward({p_sum}, {.axis = {1}}, phi).outputs[0].is_partial());
static_assert(reduction::infer_forward({p_sum}, {.axis = {1}}).outputs[0].partial_dims() == mesh_dims{1});
// Paddle's test_reduction_rule (flat, mesh [2, 3]) under phi
constexpr auto flat = reduction::infer_forward({spec({96, 24, 48}, {0, 1, -1})}, {.axis = {1, 2}, .keep_dim = true}, phi);
static_assert(flat.inputs[0].dims_mapping() == dims_mapping{0, 1, -1} &&
              flat.outputs[0].dims_mapping() == dims_mapping{0, -1, -1} && flat.outputs[0].partial_dims() == mesh_dims{1});
constexpr auto back = reduction::infer_backward({spec({96, 24, 48}, {-1, -1, -1})}, {spec({96}, {1})}, {.axis = {1, 2}}, phi);
static_assert(back.inputs[0].dims_mapping() == dims_mapping{1, -1, -1});

// ==== det: the last two dims whole, the output never partial ==============================================
constexpr auto d = det::infer_forward({spec({4, 3, 3}, {0, 1, -1})});
static_assert(d.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && d.outputs[0].dims_mapping() == dims_mapping{0} &&
              !d.outputs[0].is_partial());
static_assert(det::infer_backward({spec({4, 3, 3}, {-1, -1, -1})}, {spec({4}, {1})}).inputs[0].dims_mapping() ==
              dims_mapping{1, -1, -1});
static_assert(!det::try_infer_backward({spec({4, 3, 3}, {-1, -1, -1})}, {spec({4, 3, 3}, {-1, -1, -1})}));
static_assert(!det::try_infer_forward({spec({4}, {-1})}));
}  // namespace phi_cases
