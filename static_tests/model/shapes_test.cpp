// Declared output shapes are checked when a plan is built: against the shapes a rule derives
// (`output_shapes`) from its inputs' declared shapes and its attributes. A plan whose outputs
// have another rank or another size, or whose inputs' shapes the rule rejects, does not build.
#include <array>
#include <cstddef>
#include <utility>

#include <ctspmd/model/propagate.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using model::tensor_id;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 4});

// A plan of one operator `Op` reading plan inputs of shapes `in` and writing outputs declared
// `out`: its operator count (1) if it builds.
template <fixed_string Op, std::size_t NI, std::size_t NO>
constexpr std::size_t one_op(const tensor_shape (&in)[NI], const tensor_shape (&out)[NO],
                             const typename rules::rule_for<Op>::attributes& attrs = {}) {
  model::plan<24, 1> p(mesh);
  for (const auto& s : in) (void)p.tensor("in", s);
  for (const auto& s : out) (void)p.tensor("out", s);
  [&]<std::size_t... I, std::size_t... J>(std::index_sequence<I...>, std::index_sequence<J...>) {
    p.template op<Op>({tensor_id{I}...}, {tensor_id{NI + J}...}, attrs, "under test");
  }(std::make_index_sequence<NI>{}, std::make_index_sequence<NO>{});
  return p.op_count();
}

// The shapes a rule derives, by rule type (the first output's unless `k` says).
constexpr dist_tensor_spec S(const tensor_shape& s) { return dist_tensor_spec(s, mesh); }
template <class R>
constexpr tensor_shape derived(std::initializer_list<dist_tensor_spec> in, const typename R::attributes& a = {},
                               std::size_t k = 0) {
  return R::try_output_shapes(in, a).value()[k];
}

// ==== the reproduction: matmul [8, 16, 32] x [32, 64] ==================================
static_assert(one_op<"matmul">({{8, 16, 32}, {32, 64}}, {{8, 16, 64}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"matmul">({{8, 16, 32}, {32, 64}}, {{8, 64}}); }>);      // rank
static_assert(!constant_evaluates<[] { return one_op<"matmul">({{8, 16, 32}, {32, 64}}, {{8, 16, 65}}); }>);  // size
// The inputs' shapes themselves: k 32 against 33.
static_assert(!constant_evaluates<[] { return one_op<"matmul">({{8, 16, 32}, {33, 64}}, {{8, 16, 64}}); }>);
static_assert(rules::matmul::try_output_shapes({S({8, 16, 32}), S({33, 64})}).error().values[0] == 32);
// -1 (unknown) matches any size, declared or derived.
static_assert(one_op<"matmul">({{-1, 16, 32}, {32, 64}}, {{8, 16, 64}}) == 1);
static_assert(one_op<"matmul">({{8, 16, 32}, {32, 64}}, {{8, -1, 64}}) == 1);
// A wrong operand count is left to propagation (which reports it, see propagate_test.cpp).
static_assert(one_op<"matmul">({{8, 32}}, {{8}}) == 1);

// ==== matmul: transposes, 1-D operands, batch broadcast; bmm ======================================
static_assert(derived<rules::matmul>({S({2, 1, 8, 32}), S({4, 64, 32})}, {.trans_y = true}) == tensor_shape{2, 4, 8, 64});
static_assert(derived<rules::matmul>({S({32, 8}), S({32, 64})}, {.trans_x = true}) == tensor_shape{8, 64});
static_assert(derived<rules::matmul>({S({32}), S({32})}) == tensor_shape{});
static_assert(derived<rules::matmul>({S({32}), S({4, 32, 64})}) == tensor_shape{4, 64});
static_assert(derived<rules::matmul>({S({4, 8, 32}), S({32})}) == tensor_shape{4, 8});
static_assert(!rules::matmul::try_output_shapes({S({32}), S({32, 64})}, {.trans_x = true}));  // a 1-D x transposed
static_assert(!rules::matmul::try_output_shapes({S({3, 8, 32}), S({4, 32, 64})}));           // batch 3 against 4
static_assert(one_op<"bmm">({{4, 8, 32}, {4, 32, 16}}, {{4, 8, 16}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"bmm">({{4, 8, 32}, {4, 32, 16}}, {{4, 16, 8}}); }>);

// ==== elementwise (numpy broadcast), scale, dropout, cumsum, triu, where ===========================
static_assert(derived<rules::elementwise>({S({8, 1, 32}), S({4, 1})}) == tensor_shape{8, 4, 32});
static_assert(one_op<"add">({{8, 1, 32}, {4, 1}}, {{8, 4, 32}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"add">({{8, 1, 32}, {4, 1}}, {{8, 1, 32}}); }>);
static_assert(!constant_evaluates<[] { return one_op<"add">({{8, 3, 32}, {4, 1}}, {{8, 4, 32}}); }>);  // 3 vs 4
static_assert(!constant_evaluates<[] { return one_op<"relu">({{8, 32}}, {{8, 31}}); }>);
static_assert(!constant_evaluates<[] { return one_op<"scale">({{8, 32}}, {{8, 31}}); }>);
static_assert(one_op<"dropout">({{8, 32}}, {{8, 32}, {8, 32}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"dropout">({{8, 32}}, {{8, 32}, {8, 16}}); }>);  // the mask
static_assert(one_op<"cumsum">({{8, 32}}, {{256}}, {.flatten = true}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"cumsum">({{8, 32}}, {{8, 32}}, {.flatten = true}); }>);
static_assert(!constant_evaluates<[] { return one_op<"triu">({{8, 32}}, {{32, 8}}); }>);
static_assert(one_op<"where">({{8, 1}, {8, 32}, {1, 32}}, {{8, 32}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"where">({{8, 1}, {8, 32}, {1, 32}}, {{8, 1}}); }>);

// ==== transpose, reshape, flatten, squeeze, unsqueeze, tile, expand_as ==================================
static_assert(one_op<"transpose">({{8, 16, 4}}, {{4, 8, 16}}, {.perm = {2, 0, 1}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"transpose">({{8, 16, 4}}, {{8, 16, 4}}, {.perm = {2, 0, 1}}); }>);
static_assert(one_op<"reshape">({{8, 16, 4}}, {{8, 64}}, {.shape = {0, -1}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"reshape">({{8, 16, 4}}, {{8, 32}}, {.shape = {0, -1}}); }>);
static_assert(!constant_evaluates<[] { return one_op<"reshape">({{8, 16, 4}}, {{8, 60}}, {.shape = {8, 60}}); }>);
static_assert(one_op<"flatten">({{8, 16, 4}}, {{8, 64}}, {.start_axis = 1}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"flatten">({{8, 16, 4}}, {{128, 4}}, {.start_axis = 1}); }>);
static_assert(one_op<"squeeze">({{8, 1, 4}}, {{8, 4}}, {.axis = {1}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"squeeze">({{8, 1, 4}}, {{8, 1, 4}}, {.axis = {1}}); }>);
static_assert(one_op<"unsqueeze">({{8, 4}}, {{8, 1, 4}}, {.axis = {1}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"unsqueeze">({{8, 4}}, {{1, 8, 4}}, {.axis = {1}}); }>);
static_assert(one_op<"tile">({{8, 4}}, {{2, 8, 12}}, {.repeat_times = {2, 1, 3}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"tile">({{8, 4}}, {{8, 12}}, {.repeat_times = {2, 1, 3}}); }>);
static_assert(one_op<"expand_as">({{8, 1}, {2, 8, 16}}, {{2, 8, 16}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"expand_as">({{8, 1}, {2, 8, 16}}, {{8, 16}}); }>);

// ==== reductions, softmax, argmax, topk ==========================================================================
static_assert(one_op<"sum">({{8, 16, 4}}, {{8, 4}}, {.axis = {1}}) == 1);
static_assert(one_op<"mean">({{8, 16, 4}}, {{8, 1, 4}}, {.axis = {-2}, .keep_dim = true}) == 1);
static_assert(one_op<"max">({{8, 16, 4}}, {{}}) == 1);  // no axis: every dim
static_assert(!constant_evaluates<[] { return one_op<"sum">({{8, 16, 4}}, {{8, 16}}, {.axis = {1}}); }>);
static_assert(!constant_evaluates<[] { return one_op<"sum">({{8, 16, 4}}, {{8, 4}}, {.axis = {1}, .keep_dim = true}); }>);
static_assert(!constant_evaluates<[] { return one_op<"softmax">({{8, 32}}, {{8, 31}}); }>);
static_assert(!constant_evaluates<[] { return one_op<"softmax">({{8, 32}}, {{8, 32}}, {.axis = 2}); }>);  // axis range
static_assert(one_op<"argmax">({{8, 32}}, {{8}}, {.axis = 1}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"argmax">({{8, 32}}, {{32}}, {.axis = 1}); }>);
static_assert(one_op<"topk">({{8, 32}}, {{8, 4}, {8, 4}}, {.k = 4}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"topk">({{8, 32}}, {{8, 4}, {8, 32}}, {.k = 4}); }>);

// ==== layer_norm, rms_norm ==================================================================================
static_assert(one_op<"layer_norm">({{8, 16, 64}, {64}, {64}}, {{8, 16, 64}, {8, 16}, {8, 16}}, {.begin_norm_axis = 2}) == 1);
static_assert(!constant_evaluates<[] {
  return one_op<"layer_norm">({{8, 16, 64}, {64}, {64}}, {{8, 16, 64}, {128}, {128}}, {.begin_norm_axis = 2});
}>);
static_assert(one_op<"rms_norm">({{8, 16, 64}, {64}}, {{8, 16, 64}, {8, 16}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"rms_norm">({{8, 16, 64}, {64}}, {{8, 16, 64}, {8, 16, 1}}); }>);

// ==== embedding, c_embedding, gather, gather_nd, one_hot ======================================================
static_assert(one_op<"embedding">({{8, 16}, {1000, 64}}, {{8, 16, 64}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"embedding">({{8, 16}, {1000, 64}}, {{8, 16, 1000}}); }>);
static_assert(one_op<"c_embedding">({{1000, 64}, {8, 16}}, {{8, 16, 64}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"c_embedding">({{1000, 64}, {8, 16}}, {{8, 64}}); }>);
static_assert(one_op<"gather">({{8, 16, 4}, {5}}, {{8, 5, 4}}, {.axis = 1}) == 1);
static_assert(one_op<"gather">({{8, 16, 4}, {}}, {{8, 4}}, {.axis = 1}) == 1);  // a 0-D index drops the axis
static_assert(!constant_evaluates<[] { return one_op<"gather">({{8, 16, 4}, {5}}, {{8, 16, 4}}, {.axis = 1}); }>);
static_assert(one_op<"gather_nd">({{8, 16, 4}, {3, 5, 2}}, {{3, 5, 4}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"gather_nd">({{8, 16, 4}, {3, 5, 2}}, {{3, 5, 16, 4}}); }>);
static_assert(one_op<"one_hot">({{8, 16}}, {{8, 16, 10}}, {.num_classes = 10}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"one_hot">({{8, 16}}, {{8, 16, 11}}, {.num_classes = 10}); }>);

// ==== concat, split, stack, unbind, slice, strided_slice ==============================================
static_assert(one_op<"concat">({{8, 16}, {8, 4}}, {{8, 20}}, {.axis = 1}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"concat">({{8, 16}, {8, 4}}, {{8, 16}}, {.axis = 1}); }>);
static_assert(one_op<"split">({{8, 12}}, {{8, 4}, {8, 4}, {8, 4}}, {.num = 3, .axis = 1}) == 1);
static_assert(one_op<"split">({{8, 12}}, {{8, 2}, {8, 7}, {8, 3}}, {.sections = {2, -1, 3}, .axis = 1}) == 1);
static_assert(!constant_evaluates<[] {
  return one_op<"split">({{8, 12}}, {{8, 2}, {8, 6}, {8, 4}}, {.sections = {2, -1, 3}, .axis = 1});
}>);
static_assert(one_op<"stack">({{8, 4}, {8, 4}}, {{8, 2, 4}}, {.axis = 1}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"stack">({{8, 4}, {8, 4}}, {{2, 8, 4}}, {.axis = 1}); }>);
static_assert(one_op<"unbind">({{8, 2, 4}}, {{8, 4}, {8, 4}}, {.axis = 1}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"unbind">({{8, 2, 4}}, {{8, 4}, {8, 2}}, {.axis = 1}); }>);
static_assert(one_op<"slice">({{8, 16}}, {{8, 5}}, {.axes = {1}, .starts = {2}, .ends = {7}}) == 1);
static_assert(one_op<"slice">({{8, 16}}, {{8}}, {.axes = {1}, .starts = {2}, .ends = {3}, .decrease_axis = {1}}) == 1);
static_assert(!constant_evaluates<[] {
  return one_op<"slice">({{8, 16}}, {{8, 16}}, {.axes = {1}, .starts = {2}, .ends = {7}});
}>);
static_assert(one_op<"strided_slice">({{8, 16}}, {{8, 3}}, {.axes = {1}, .starts = {0}, .ends = {16}, .strides = {6}}) == 1);
static_assert(!constant_evaluates<[] {
  return one_op<"strided_slice">({{8, 16}}, {{8, 2}}, {.axes = {1}, .starts = {0}, .ends = {16}, .strides = {6}});
}>);

// ==== attention, swiglu, fused_rope, cross entropy ================================================================
static_assert(one_op<"flash_attention">({{2, 128, 8, 64}, {2, 256, 4, 64}, {2, 256, 4, 32}},
                                        {{2, 128, 8, 32}, {2, 8, 128, 256}, {2, 8, 128}, {2}}) == 1);
static_assert(!constant_evaluates<[] {
  return one_op<"flash_attention">({{2, 128, 8, 64}, {2, 256, 4, 64}, {2, 256, 4, 32}},
                                   {{2, 128, 8, 64}, {2, 8, 128, 256}, {2, 8, 128}, {2}});  // out's head dim is v's
}>);
static_assert(one_op<"swiglu">({{8, 64}}, {{8, 32}}) == 1);
static_assert(one_op<"swiglu">({{8, 64}, {8, 64}}, {{8, 64}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"swiglu">({{8, 64}}, {{8, 64}}); }>);
static_assert(one_op<"fused_rope">({{2, 16, 8, 64}, {2, 16, 8, 64}, {}, {1, 16, 1, 64}, {1, 16, 1, 64}, {}},
                                   {{2, 16, 8, 64}, {2, 16, 8, 64}, {}}) == 1);
static_assert(!constant_evaluates<[] {
  return one_op<"fused_rope">({{2, 16, 8, 64}, {2, 16, 8, 64}, {}, {1, 16, 1, 64}, {1, 16, 1, 64}, {}},
                              {{2, 16, 8, 64}, {2, 16, 8, 64}, {2, 16, 8, 64}});  // v is absent
}>);
// every input but q may be absent: its output stays []
static_assert(one_op<"fused_rope">({{2, 16, 8, 64}, {}, {}, {}, {}, {}}, {{2, 16, 8, 64}, {}, {}}) == 1);
static_assert(one_op<"fused_rope">({{2, 16, 8, 64}, {}, {2, 16, 4, 64}, {16, 64}, {16, 64}, {}}, {{2, 16, 8, 64}, {}, {2, 16, 4, 64}}) ==
              1);
static_assert(!constant_evaluates<[] {
  return one_op<"fused_rope">({{2, 16, 8, 64}, {}, {}, {}, {}, {}}, {{2, 16, 8, 64}, {2, 16, 8, 64}, {}});  // k is absent
}>);
static_assert(one_op<"cross_entropy_with_softmax">({{8, 100}, {8, 1}}, {{8, 100}, {8, 1}}) == 1);
static_assert(!constant_evaluates<[] {
  return one_op<"cross_entropy_with_softmax">({{8, 100}, {8, 1}}, {{8, 100}, {8, 100}});  // the loss
}>);
static_assert(one_op<"c_softmax_with_cross_entropy">({{8, 100}, {8, 1}}, {{8, 100}, {8, 1}}) == 1);
static_assert(!constant_evaluates<[] {
  return one_op<"c_softmax_with_cross_entropy">({{8, 100}, {8, 1}}, {{8, 1}, {8, 1}});
}>);

// ==== grad rules: each gradient has its forward operand's shape (an absent one stays []) =================
static_assert(one_op<"matmul_grad">({{8, 32}, {32, 64}, {8, 64}}, {{8, 32}, {32, 64}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"matmul_grad">({{8, 32}, {32, 64}, {8, 64}}, {{8, 32}, {64, 32}}); }>);
static_assert(one_op<"layer_norm_grad">({{8, 64}, {}, {}, {8}, {8}, {8, 64}}, {{8, 64}, {}, {}}) == 1);
static_assert(!constant_evaluates<[] {
  return one_op<"layer_norm_grad">({{8, 64}, {}, {}, {8}, {8}, {8, 64}}, {{8, 64}, {64}, {}});  // scale is absent
}>);
// fused_rope_grad reads sin, cos and position_ids first, then the output gradients.
static_assert(one_op<"fused_rope_grad">({{1, 16, 1, 64}, {1, 16, 1, 64}, {}, {2, 16, 8, 64}, {2, 16, 4, 64}, {}},
                                        {{2, 16, 8, 64}, {2, 16, 4, 64}, {}}) == 1);
static_assert(!constant_evaluates<[] {
  return one_op<"fused_rope_grad">({{1, 16, 1, 64}, {1, 16, 1, 64}, {}, {2, 16, 8, 64}, {2, 16, 4, 64}, {}},
                                   {{1, 16, 1, 64}, {1, 16, 1, 64}, {}});
}>);
static_assert(one_op<"fused_rope_grad">({{}, {}, {}, {2, 16, 8, 64}, {}, {}}, {{2, 16, 8, 64}, {}, {}}) == 1);  // only out_q_grad
static_assert(!constant_evaluates<[] {
  return one_op<"fused_rope_grad">({{}, {}, {}, {2, 16, 8, 64}, {}, {}}, {{2, 16, 8, 64}, {}, {2, 16, 8, 64}});
}>);
static_assert(one_op<"transpose_grad">({{4, 8, 16}}, {{8, 16, 4}}, {.perm = {2, 0, 1}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"transpose_grad">({{4, 8, 16}}, {{4, 8, 16}}, {.perm = {2, 0, 1}}); }>);
static_assert(one_op<"stack_grad">({{8, 2, 4}}, {{8, 4}, {8, 4}}, {.axis = 1}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"stack_grad">({{8, 2, 4}}, {{8, 4}, {8, 4, 1}}, {.axis = 1}); }>);
static_assert(one_op<"add_grad">({{8, 1}, {32}, {8, 32}}, {{8, 1}, {32}}) == 1);
static_assert(!constant_evaluates<[] { return one_op<"add_grad">({{8, 1}, {32}, {8, 32}}, {{8, 32}, {8, 32}}); }>);

// ==== rules without output_shapes keep the rank check of propagation ===========================================
static_assert(!HasOutputShapes<rules::replicated> && HasOutputShapes<rules::matmul>);
static_assert(one_op<"replicated">({{8, 32}}, {{4, 4}}) == 1);  // builds; propagation checks the rank
