#include <ctspmd/rules/topk.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using namespace ctspmd::rules;
using ctspmd_test::co;
using ctspmd_test::constant_evaluates;
using ctspmd_test::is;

constexpr process_mesh mesh({2, 4});
constexpr auto phi = semantics::phi;
constexpr ctspmd_test::on_mesh spec{mesh};

// ==== argmax / argmin ============================================================================
// Paddle's test_argmax_rule style: x [16,32,48] [0,-1,1], axis 2 -> x' [0,-1,-1], out [0,-1]
constexpr auto am = argmax::infer_forward({spec({16, 32, 48}, {0, -1, 1})}, {.axis = 2});
static_assert(am.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && am.outputs[0].dims_mapping() == dims_mapping{0, -1});
static_assert(argmax::infer_forward({spec({16, 32, 48}, {0, -1, 1})}, {.axis = -1}) == am);
constexpr auto amk = argmin::infer_forward({spec({16, 32, 48}, {0, 1, -1})}, {.axis = 1, .keepdims = true});
static_assert(amk.inputs[0].dims_mapping() == dims_mapping{0, -1, -1} && amk.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
constexpr auto amf = argmax::infer_forward({spec({16, 32}, {0, 1})}, {.flatten = true});
static_assert(amf.inputs[0].dims_mapping() == dims_mapping{-1, -1} && amf.outputs[0].rank() == 0);
static_assert(argmax::infer_forward({spec({16, 32}, {0, 1})}, {.keepdims = true, .flatten = true}).outputs[0].dims_mapping() ==
              dims_mapping{-1, -1});
static_assert(is(argmax::infer_forward({co(mesh, {16, 32}, {{0, 1}, {}})}, {.axis = 1}, phi).outputs[0], {{0, 1}}));
static_assert(argmax::try_infer_forward({spec({16, 32}, {0, 1})}, {.axis = 2}).error().op == "argmax");
static_assert(argmin::try_infer_forward({spec({16, 32}, {0, 1})}, {.axis = -3}).error().op == "argmin");
// backward: out -> x's kept dims
constexpr auto amb = argmax::infer_backward({spec({16, 32, 48}, {-1, -1, -1})}, {spec({16, 32}, {1, 0})}, {.axis = 1});
static_assert(amb.inputs[0].dims_mapping() == dims_mapping{1, -1, 0} && amb.outputs[0].dims_mapping() == dims_mapping{1, 0});
// flatten without keepdims: a 0-D output (phi appends a -1 to it)
static_assert(argmax::infer_backward({spec({16, 32}, {0, 1})}, {spec({}, {})}, {.flatten = true}).outputs[0].rank() == 0);
static_assert(argmax::try_infer_backward({spec({16, 32}, {0, 1})}, {spec({16, 32}, {0, 1})}).error().values ==
              std::array<std::int64_t, 4>{2, 1, 2, 0});

// ==== topk =======================================================================================
constexpr auto tk = topk::infer_forward({spec({16, 32, 48}, {0, 1, -1})}, {.k = 4, .axis = 1});
static_assert(tk.outputs.size() == 2);
static_assert(tk.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(tk.outputs[0].dims_mapping() == dims_mapping{0, -1, -1} && tk.outputs[1].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(topk::infer_forward({spec({16, 32, 48}, {0, -1, 1})}, {.k = 4}).outputs[1].dims_mapping() ==
              dims_mapping{0, -1, -1});
constexpr auto tk_k = topk::try_infer_forward({spec({16, 32, 48}, {0, 1, -1})}, {.k = 40, .axis = 1});
static_assert(tk_k.kind() == error_kind::invalid_argument && tk_k.error().values == std::array<std::int64_t, 4>{40, 32, 1, 0});
static_assert(!topk::try_infer_forward({spec({16, 32, 48}, {0, 1, -1})}, {.k = 0}));
static_assert(!topk::try_infer_forward({spec({16, 32, 48}, {0, 1, -1})}, {.axis = 3}));
constexpr auto tkb = topk::infer_backward({spec({16, 32, 48}, {-1, -1, -1})},
                                          {spec({16, 4, 48}, {0, -1, 1}), spec({16, 4, 48}, {-1, 0, -1})}, {.k = 4, .axis = 1});
static_assert(tkb.inputs[0].dims_mapping() == dims_mapping{0, -1, 1} && tkb.outputs[1].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(topk::try_infer_backward({spec({16, 32, 48}, {-1, -1, -1})}, {spec({16, 4}, {0, -1}), spec({16, 4, 48}, {-1, 0, -1})},
                                       {.k = 4, .axis = 1})
                  .error()
                  .values == std::array<std::int64_t, 4>{0, 2, 3, 0});

// ==== topk_grad ==================================================================================
// x, indices, out_grad: the axis replicated, the rest merged
constexpr auto tg = topk_grad::infer_forward({spec({16, 32, 48}, {0, 1, -1}), spec({16, 4, 48}, {-1, -1, 1}),
                                              spec({16, 4, 48}, {0, -1, -1})},
                                             {.k = 4, .axis = 1});
static_assert(tg.inputs[0].dims_mapping() == dims_mapping{0, -1, 1} && tg.inputs[1].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(tg.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(topk_grad::try_infer_forward({spec({16, 32, 48}, {0, 1, -1}), spec({16, 4}, {-1, -1}), spec({16, 4, 48}, {0, -1, -1})},
                                           {.k = 4, .axis = 1})
                  .error()
                  .values == std::array<std::int64_t, 4>{1, 2, 3, 0});
static_assert(topk_grad::try_infer_forward({spec({16, 32, 48}, {0, 1, -1}), spec({8, 4, 48}, {-1, -1, -1}), spec({8, 4, 48}, {0, -1, -1})},
                                           {.k = 4, .axis = 1})
                  .error()
                  .values == std::array<std::int64_t, 4>{8, 0, 16, 0});
static_assert(!topk_grad::try_infer_backward({}, {}));
