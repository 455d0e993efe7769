// scale and pow: unary elementwise rules with attributes. Paddle's C++ TEST(ElementwiseUnaryLike)
// (spmd_rule_test.cc): mesh [2, 2], x [16, 16, 16] [0, -1, 1] -> x' and out [0, -1, 1], no partial,
// for PowInferSpmd(y = 2) and ScaleInferSpmd(1.0, 1.0, false).
#include <ctspmd/registry/rules_by_name.hpp>
#include <ctspmd/rules/scale.hpp>

#include <ctspmd/registry/attribute_reflection.hpp>

#include <boost/hana/at_key.hpp>
#include <boost/hana/string.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 2});
constexpr ctspmd_test::on_mesh spec{mesh};

static_assert(std::is_same_v<rule_for<"scale">, scale> && std::is_same_v<rule_for<"pow">, power>);
static_assert(scale::attributes{}.scale == 1.0 && scale::attributes{}.bias == 0.0 && scale::attributes{}.bias_after_scale);
static_assert(power::attributes{}.y == 1.0);
static_assert(boost::hana::at_key(scale::attributes{}, BOOST_HANA_STRING("bias_after_scale")));

// Paddle's vectors
constexpr dist_tensor_spec x = spec({16, 16, 16}, {0, -1, 1});
constexpr auto p = power::infer_forward({x}, {.y = 2.0});
static_assert(p.inputs[0].dims_mapping() == dims_mapping{0, -1, 1} && p.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(!p.outputs[0].is_partial());
constexpr auto sc = scale::infer_forward({x}, {.scale = 1.0, .bias = 1.0, .bias_after_scale = false});
static_assert(sc.inputs[0].dims_mapping() == dims_mapping{0, -1, 1} && sc.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(scale::infer_forward({x}, {}, semantics::phi) == sc);

// partial x is reduced first; nothing partial after
constexpr dist_tensor_spec px = [] {
  tensor_dist_attr a(mesh, {0, -1});
  a.set_partial_status({1});
  return dist_tensor_spec({8, 4}, a);
}();
static_assert(!scale::infer_forward({px}).inputs[0].is_partial() && !scale::infer_forward({px}).outputs[0].is_partial());
static_assert(!power::infer_forward({px}, {}, semantics::phi).outputs[0].is_partial());

// co-shard: kept under both semantics
static_assert(is(scale::infer_forward({co(mesh, {8, 4}, {{1, 0}, {}})}).outputs[0], {{1, 0}, {}}));
static_assert(is(scale::infer_forward({co(mesh, {8, 4}, {{1, 0}, {}})}, {}, semantics::phi).outputs[0], {{1, 0}, {}}));

// backward: x takes the output's mapping
constexpr auto b = scale::infer_backward({spec({8, 4}, {-1, -1})}, {spec({8, 4}, {-1, 1})});
static_assert(b.inputs[0].dims_mapping() == dims_mapping{-1, 1} && b.outputs[0].dims_mapping() == dims_mapping{-1, 1});
static_assert(power::infer_backward({spec({8, 4}, {-1, -1})}, {spec({8, 4}, {0, -1})}, {}, semantics::phi)
                  .inputs[0].dims_mapping() == dims_mapping{0, -1});

// errors
constexpr auto e1 = scale::try_infer_backward({spec({8, 4}, {-1, -1})}, {spec({8}, {-1})});
static_assert(e1.kind() == error_kind::invalid_argument && e1.error().op == "scale");
static_assert(power::try_infer_backward({spec({8, 4}, {-1, -1})}, {spec({8, 5}, {-1, -1})}).error().op == "pow");
static_assert(!scale::try_infer_forward({x, x}));
