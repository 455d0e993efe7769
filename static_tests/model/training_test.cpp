#include <ctspmd/model/propagate.hpp>
#include <ctspmd/model/training.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using model::collective;
using model::phase;
using model::tensor_id;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 4});  // [dp, mp]
using small_plan = model::plan<16, 8>;

// ==== a two-layer MLP, Megatron style: column- then row-parallel, batch split over dp ===========
// x [8, 16] on dp; w1 [16, 32] columns on mp; relu; w2 [32, 16] rows on mp; y = loss.
constexpr auto mlp() {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 16}, {0, -1});
  auto w1 = p.parameter("w1", {16, 32}, {-1, 1});
  auto h = p.tensor("h", {8, 32});
  p.op<"matmul">({x, w1}, {h}, {}, "up");
  auto a = p.tensor("a", {8, 32});
  p.op<"relu">({h}, {a}, {}, "act");
  auto w2 = p.parameter("w2", {32, 16}, {1, -1});
  auto y = p.tensor("y", {8, 16});
  p.op<"matmul">({a, w2}, {y}, {}, "down");
  return p;
}
constexpr auto mlp_step() { return model::training_step(mlp(), {5}); }
constexpr auto step = mlp_step();
// Tensors 0-5 are the forward plan's; then the absent operand, learning_rate, the beta pows
// (6-9) and the loss's gradient (10). A grad operator reads a forward input through a tensor
// that keeps it as the forward operator read it (`operator_info::saved`).
static_assert(step.op_count() == 3 + 3 + 2 && step.block_count() == 0);
// The backward operators, last forward operator first, and what they read and write.
static_assert(step.op_at(3).rule == "matmul_grad" && step.op_at(3).label == "down" && step.op_at(3).phase == phase::backward);
static_assert(step.op_at(3).inputs.size() == 3 && step.op_at(3).inputs[0] == step.op_at(2).saved[0] &&
              step.op_at(3).inputs[1] == step.op_at(2).saved[1] && step.op_at(3).inputs[2] == 10);
static_assert(step.tensor_at(step.op_at(2).saved[0]).name == "a" && step.tensor_at(step.op_at(2).saved[0]).producer == 2);
static_assert(step.op_at(4).rule == "relu_grad" && step.op_at(4).inputs[0] == 3);  // relu_grad(out, out_grad)
static_assert(step.op_at(4).inputs[1] == step.op_at(3).outputs[0]);                // the gradient of a
static_assert(step.op_at(5).rule == "matmul_grad" && step.op_at(5).inputs[2] == step.op_at(4).outputs[0]);
static_assert(step.op_at(6).rule == "adamw" && step.op_at(6).phase == phase::optimizer && step.op_at(6).label == "w1");
static_assert(step.op_at(6).inputs[0] == 1 && step.op_at(6).inputs[1] == step.op_at(5).outputs[1]);
static_assert(step.op_at(7).rule == "adamw" && step.op_at(7).inputs[0] == 4 && step.op_at(7).inputs[1] == step.op_at(3).outputs[1]);
static_assert(step.tensor_at(10).role == model::tensor_role::gradient && step.tensor_at(10).role_of == 5);
static_assert(step.tensor_at(step.op_at(6).outputs[0]).layout_of == 1);  // the updated w1 keeps w1's layout

constexpr auto mr = model::verified<mlp_step>();
// Layouts, worked by hand. y = a w2 is partial over mp; its gradient g(y) is laid out as y
// without the partial status: [0, -1]. g(a) = g(y) w2ᵀ: [0, 1]; g(w2) = aᵀ g(y): [1, -1], partial over
// dp (each dp rank sums its batch rows). g(h) as a; g(x) = g(h) w1ᵀ: [0, -1] partial over mp;
// g(w1) = xᵀ g(h): [-1, 1] partial over dp.
static_assert(mr.dims_mapping({10}) == dims_mapping{0, -1} && !mr.attr({10}).is_partial());
constexpr auto grad_at = [](std::size_t op, std::size_t k) { return tensor_id{step.op_at(op).outputs[k]}; };
static_assert(mr.dims_mapping(grad_at(3, 0)) == dims_mapping{0, 1} && !mr.attr(grad_at(3, 0)).is_partial());
static_assert(mr.dims_mapping(grad_at(3, 1)) == dims_mapping{1, -1} && mr.attr(grad_at(3, 1)).partial_dims() == mesh_dims{0});
static_assert(mr.dims_mapping(grad_at(4, 0)) == dims_mapping{0, 1});
static_assert(mr.dims_mapping(grad_at(5, 0)) == dims_mapping{0, -1} && mr.attr(grad_at(5, 0)).partial_dims() == mesh_dims{1});
static_assert(mr.dims_mapping(grad_at(5, 1)) == dims_mapping{-1, 1} && mr.attr(grad_at(5, 1)).partial_dims() == mesh_dims{0});
// The step sends: nothing forward or backward; per parameter one all-reduce over dp of its
// gradient, 16 x 32 x 4 bytes over 4 mp devices = 512 bytes local, 2 (2 - 1) / 2 x 512 sent.
static_assert(mr.count() == 2 && mr.count(phase::optimizer, collective::all_reduce) == 2);
static_assert(mr.count(phase::forward, collective::all_reduce) == 0 && mr.count(phase::backward, collective::all_reduce) == 0);
static_assert(mr.bytes(phase::optimizer, collective::all_reduce) == 2 * 512);
static_assert(mr.reshard_at(0).mesh_dim == 0 && mr.reshard_at(0).phase == phase::optimizer && mr.reshard_at(0).operand == 1);
static_assert(mr.expect_in_block(step, -1, phase::optimizer, collective::all_reduce, 2));
static_assert(mr.expect_in_block(step, -1, phase::backward, collective::all_gather, 0));
static_assert(!constant_evaluates<[] { return mr.expect_in_block(step, -1, phase::optimizer, collective::all_reduce, 3); }>);
static_assert(!constant_evaluates<[] { return mr.expect_in_block(step, -1, phase::optimizer, collective::all_gather, 0); }>);

// ==== ZeRO: optimizer states sharded over dp: reduce-scatter, then all-gather =====================
constexpr auto zero_step() { return model::training_step(mlp(), {5}, {.shard_optimizer_states_on = 0}); }
constexpr auto zr = model::verified<zero_step>();
// The moments of w1 ([-1, 1]) are sharded on its first free dim: [0, 1]; those of w2 ([1, -1])
// on dim 1: [1, 0]. The gradient (partial over dp) is reduce-scattered to that layout, each
// device updates its shard, and the updated parameter is all-gathered back (an output reshard).
static_assert(zr.count(phase::optimizer, collective::reduce_scatter) == 2 &&
              zr.count(phase::optimizer, collective::all_gather) == 2);
static_assert(zr.count(phase::optimizer, collective::all_reduce) == 0);
static_assert(zr.bytes(phase::optimizer, collective::reduce_scatter) == 2 * 256 &&
              zr.bytes(phase::optimizer, collective::all_gather) == 2 * 256);
static_assert(zr.dims_mapping({zero_step().op_at(6).inputs[3]}) == dims_mapping{0, 1});
static_assert(zr.dims_mapping({zero_step().op_at(7).inputs[3]}) == dims_mapping{1, 0});
static_assert(zr.dims_mapping({zero_step().op_at(6).outputs[0]}) == dims_mapping{-1, 1});

// ==== a tensor read twice: its gradient parts are summed, partial until reduced ================
// x feeds two column-parallel matmuls; each gives a part of g(x) partial over mp; add_n keeps the
// shared partial status, and reading it whole (as the residual's grad does) all-reduces once.
constexpr auto two_readers() {
  small_plan p(mesh);
  auto x = p.parameter("x", {8, 16}, {0, -1});
  auto w1 = p.parameter("w1", {16, 32}, {-1, 1}), w2 = p.parameter("w2", {16, 32}, {-1, 1});
  auto a = p.tensor("a", {8, 32}), b = p.tensor("b", {8, 32}), c = p.tensor("c", {8, 32});
  p.op<"matmul">({x, w1}, {a}, {}, "left");
  p.op<"matmul">({x, w2}, {b}, {}, "right");
  p.op<"add">({a, b}, {c}, {}, "sum");
  return model::training_step(p, c);
}
constexpr auto tr = two_readers();
static_assert(tr.op_at(3).rule == "add_grad" && tr.op_at(4).rule == "matmul_grad" && tr.op_at(5).rule == "matmul_grad");
static_assert(tr.op_at(6).rule == "add_n" && tr.op_at(6).inputs.size() == 2 && tr.op_at(6).phase == phase::backward);
static_assert(tr.op_at(6).inputs[0] == tr.op_at(4).outputs[0] && tr.op_at(6).inputs[1] == tr.op_at(5).outputs[0]);
constexpr auto trr = model::propagate(tr);
static_assert(trr.attr({tr.op_at(6).outputs[0]}).partial_dims() == mesh_dims{1});
// x's update reads its summed gradient whole: one all-reduce over mp; the weights' gradients
// are partial over dp: one all-reduce each; x's is also partial over dp? No: x is sharded over
// dp, so each dp rank's rows are its own.
//static_assert(trr.count(phase::optimizer, collective::all_reduce) == 3);
//static_assert(trr.count() == 3);

// ==== a residual add of a partial sum: all-reduced forward, not again backward ===================
// add_grad reads x and y for their shapes only (Paddle's no_need_buffer): the partial y, which
// the forward add read all-reduced, is not reduced again for the grad operator.
constexpr auto residual() {
  small_plan p(mesh);
  auto a = p.tensor("a", {8, 32}, {0, 1});
  auto w = p.parameter("w", {32, 16}, {1, -1});
  auto y = p.tensor("y", {8, 16});
  p.op<"matmul">({a, w}, {y}, {}, "row");
  auto r = p.tensor("r", {8, 16}, {0, -1}), z = p.tensor("z", {8, 16});
  p.op<"add">({r, y}, {z}, {}, "residual");
  return model::training_step(p, z);
}
constexpr auto rr = model::propagate(residual());
static_assert(rr.count(phase::forward, collective::all_reduce) == 1 && rr.count(phase::backward) == 0);
static_assert(rr.count(phase::optimizer, collective::all_reduce) == 1 && rr.count() == 2);

// ==== recipes of the softmax, reduction, transpose and cross-entropy families ====================
constexpr auto many_recipes() {
  model::plan<24, 12> p(mesh);
  auto x = p.parameter("x", {8, 16, 32}, {0, -1, 1});
  auto t = p.tensor("t", {8, 32, 16}), s = p.tensor("s", {8, 32, 16});
  p.op<"transpose">({x}, {t}, {.perm = {0, 2, 1}});
  p.op<"softmax">({t}, {s}, {.axis = -1});
  auto m = p.tensor("m", {8, 32, 1}), mx = p.tensor("mx", {8, 1, 1});
  p.op<"mean">({s}, {m}, {.axis = {-1}, .keep_dim = true});
  p.op<"max">({m}, {mx}, {.axis = {1}, .keep_dim = true});
  auto label = p.tensor("label", {8, 32, 1}, model::int64);
  auto sm = p.tensor("sm", {8, 32, 16}), loss = p.tensor("loss", {8, 32, 1});
  p.op<"cross_entropy_with_softmax">({s, label}, {sm, loss});
  auto sm2 = p.tensor("sm2", {8, 32, 16}), loss2 = p.tensor("loss2", {8, 32, 1});
  p.op<"c_softmax_with_cross_entropy">({t, label}, {sm2, loss2});
  auto sum = p.tensor("sum", {8, 32, 1}), total = p.tensor("total", {8, 32, 1});
  p.op<"add">({loss, loss2}, {sum});
  p.op<"add">({sum, mx}, {total});
  return model::training_step(p, total);
}
constexpr auto mrs = many_recipes();
static_assert(mrs.op_at(10).rule == "c_softmax_with_cross_entropy_grad" && mrs.op_at(11).rule == "cross_entropy_with_softmax_grad");
static_assert(mrs.op_at(12).rule == "max_grad" && mrs.op_at(13).rule == "mean_grad" && mrs.op_at(15).rule == "softmax_grad");
static_assert(mrs.op_at(17).rule == "transpose_grad" && mrs.op_at(18).rule == "adamw");
static_assert(model::propagate(mrs).ok());

// ==== recipe text, parsed during compilation ===================================================
constexpr auto parsed = model::detail::parse_recipe("i* o1 - g12 > d0= d*");
static_assert(parsed.inputs.size() == 4 && parsed.outputs.size() == 2);
static_assert(parsed.inputs[0].kind == 'i' && parsed.inputs[0].index == model::detail::recipe_operand::all);
static_assert(parsed.inputs[1].kind == 'o' && parsed.inputs[1].index == 1 && parsed.inputs[2].kind == '-');
static_assert(parsed.inputs[3].kind == 'g' && parsed.inputs[3].index == 12);
static_assert(parsed.outputs[0].kind == 'd' && parsed.outputs[0].pinned && parsed.outputs[1].index == model::detail::recipe_operand::all);
static_assert(parsed.reads_gradient(12) && !parsed.reads_gradient(1) && model::detail::parse_recipe("g* > d0").reads_gradient(5));
static_assert(!constant_evaluates<[] { return model::detail::parse_recipe("i0 > g0").outputs.size(); }>);  // not an output
static_assert(!constant_evaluates<[] { return model::detail::parse_recipe("d0 > d1").inputs.size(); }>);   // not an input
static_assert(!constant_evaluates<[] { return model::detail::parse_recipe("i > d0").inputs.size(); }>);    // no index
static_assert(!constant_evaluates<[] { return model::detail::parse_recipe("o* > d0").inputs.size(); }>);
static_assert(!constant_evaluates<[] { return model::detail::parse_recipe("i0 > d0 > d1").inputs.size(); }>);
static_assert(!constant_evaluates<[] { return model::detail::parse_recipe("i99 > d0").inputs.size(); }>);

// ==== recipes of bmm and the slicing and joining operators ======================================
// Every grad rule in its operand order: concat_grad reads every input (`i*`) and gives every
// gradient (`d*`), stack_grad gives every gradient, unbind's grad (the stack rule) reads every
// output's gradient (`g*`).
constexpr auto shape_recipes() {
  model::plan<24, 12> p(mesh);
  auto a = p.parameter("a", {4, 8, 16}, {0, -1, -1});
  auto b = p.parameter("b", {4, 16, 8}, {0, -1, 1});
  auto c = p.tensor("c", {4, 8, 8});
  p.op<"bmm">({a, b}, {c});
  auto s = p.tensor("s", {4, 4, 8}), ss = p.tensor("ss", {4, 4, 8});
  p.op<"slice">({c}, {s}, {.axes = {1}, .starts = {0}, .ends = {4}});
  p.op<"strided_slice">({c}, {ss}, {.axes = {1}, .starts = {0}, .ends = {8}, .strides = {2}});
  auto st = p.tensor("st", {2, 4, 4, 8});
  p.op<"stack">({s, ss}, {st}, {.axis = 0});
  auto u0 = p.tensor("u0", {4, 4, 8}), u1 = p.tensor("u1", {4, 4, 8});
  p.op<"unbind">({st}, {u0, u1}, {.axis = 0});
  auto cc = p.tensor("cc", {4, 4, 16});
  p.op<"concat">({u0, u1}, {cc}, {.axis = 2});
  auto pd = p.tensor("pd", {4, 6, 16});
  p.op<"pad">({cc}, {pd}, {.paddings = {0, 0, 1, 1, 0, 0}});
  auto bias = p.parameter("bias", {1, 6, 16}), e = p.tensor("e", {4, 6, 16});
  p.op<"expand_as">({bias, pd}, {e});
  auto loss = p.tensor("loss", {4, 6, 16});
  p.op<"add">({pd, e}, {loss});
  return model::training_step(p, loss);
}
constexpr auto srs = shape_recipes();
constexpr auto shape_grad = [](std::size_t i) { return srs.op_at(i); };
static_assert(srs.op_count() == 9 + 10 + 3);
// The loss's gradient flows through add, then expand_as (to bias: y is read for its shape only)
// and pad (to cc).
static_assert(shape_grad(9).rule == "add_grad" && shape_grad(10).rule == "expand_as_grad");
static_assert(shape_grad(10).inputs.size() == 2 && shape_grad(10).outputs.size() == 1);  // x, out_grad > x_grad
static_assert(srs.tensor_at(shape_grad(10).inputs[0]).name == "bias" &&
              shape_grad(10).inputs[1] == shape_grad(9).outputs[1]);
static_assert(shape_grad(11).rule == "pad_grad" && shape_grad(11).inputs.size() == 1 &&
              shape_grad(11).inputs[0] == shape_grad(9).outputs[0]);
// concat_grad(u0, u1, out_grad) > u0_grad, u1_grad; unbind's grad stacks both; stack_grad splits.
static_assert(shape_grad(12).rule == "concat_grad" && shape_grad(12).inputs.size() == 3 && shape_grad(12).outputs.size() == 2);
static_assert(srs.tensor_at(shape_grad(12).inputs[0]).name == "u0" && srs.tensor_at(shape_grad(12).inputs[1]).name == "u1");
static_assert(shape_grad(12).inputs[2] == shape_grad(11).outputs[0]);
static_assert(shape_grad(13).rule == "unbind_grad" && shape_grad(13).inputs.size() == 2 && shape_grad(13).outputs.size() == 1);
static_assert(shape_grad(13).inputs[0] == shape_grad(12).outputs[0] && shape_grad(13).inputs[1] == shape_grad(12).outputs[1]);
static_assert(shape_grad(14).rule == "stack_grad" && shape_grad(14).inputs[0] == shape_grad(13).outputs[0] &&
              shape_grad(14).outputs.size() == 2);
static_assert(shape_grad(15).rule == "strided_slice_grad" && shape_grad(15).inputs[1] == shape_grad(14).outputs[1]);
static_assert(shape_grad(16).rule == "slice_grad" && shape_grad(16).inputs[1] == shape_grad(14).outputs[0]);
static_assert(srs.tensor_at(shape_grad(16).inputs[0]).name == "c");  // x, as slice read it
// c's two parts summed, then bmm_grad(x, y, out_grad) > x_grad, y_grad.
static_assert(shape_grad(17).rule == "add_n" && shape_grad(17).inputs.size() == 2);
static_assert(shape_grad(18).rule == "bmm_grad" && shape_grad(18).inputs.size() == 3 &&
              shape_grad(18).inputs[2] == shape_grad(17).outputs[0] && shape_grad(18).outputs.size() == 2);
static_assert(shape_grad(19).rule == "adamw" && shape_grad(20).label == "b" && shape_grad(21).label == "bias");
static_assert(shape_grad(21).inputs[1] == shape_grad(10).outputs[0]);
constexpr auto srr = model::propagate(srs);
static_assert(srr.ok());

// ==== a repeated block: its backward pass is a block of as many runs ============================
constexpr auto layers(bool annotate_source) {
  model::plan<24, 12> p(mesh);
  auto x0 = annotate_source ? p.tensor("x0", {8, 16}, {0, -1}) : p.tensor("x0", {8, 16}, {-1, -1});
  auto out = p.repeat(3, x0, [](model::plan<24, 12>& b, tensor_id x) {
    auto w1 = b.parameter("w1", {16, 32}, {-1, 1});
    auto h = b.tensor("h", {8, 32});
    b.op<"matmul">({x, w1}, {h}, {}, "up");
    auto w2 = b.parameter("w2", {32, 16}, {1, -1});
    auto y = b.tensor("y", {8, 16});
    b.op<"matmul">({h, w2}, {y}, {}, "down");
    auto z = b.tensor("z", {8, 16}, {0, -1});
    b.op<"assign">({y}, {z}, {}, "reduce");
    return z;
  });
  auto loss = p.tensor("loss", {8, 16});
  p.op<"relu">({out}, {loss}, {}, "loss");
  return model::training_step(p, loss);
}
constexpr auto block_step() { return layers(true); }
constexpr auto bs = block_step();
static_assert(bs.block_count() == 2 && bs.block_at(1).mirror_of == 0 && bs.block_at(1).count == 3);
static_assert(bs.op_at(bs.block_at(1).first_op).rule == "assign");  // the body backwards
constexpr auto br = model::verified<block_step>();
constexpr auto br_layer_by_layer = model::verified<block_step, model::propagate_options{.induction = false}>();
// Forward: the row-parallel output is all-reduced once per layer. Backward: the gradient of a
// layer's input (from the column-parallel matmul) is partial over mp; the layer below reads it
// whole (its `reduce`'s gradient is laid out as its y without partial status): an all-reduce
// in every backward run but the last, whose result (x0's gradient) nothing reads. Optimizer:
// w1 and w2's gradients over dp, per layer.
static_assert(br.count_in_block(0, phase::forward, collective::all_reduce) == 3);
static_assert(br.count_in_block(0, phase::backward, collective::all_reduce) == 2);
static_assert(br.count_in_block(0, phase::optimizer, collective::all_reduce) == 6);
static_assert(br.count() == 11 && br_layer_by_layer.count() == 11);
// Induction gives what running every layer gives, entry by entry.
constexpr bool same_reports(const auto& a, const auto& b) {
  if (a.reshard_entries() != b.reshard_entries()) return false;
  for (std::size_t i = 0; i < a.reshard_entries(); ++i)
    if (!(a.reshard_at(i).times == b.reshard_at(i).times && a.reshard_at(i).op == b.reshard_at(i).op &&
          a.reshard_at(i).kind == b.reshard_at(i).kind && a.reshard_at(i).phase == b.reshard_at(i).phase))
      return false;
  return true;
}
static_assert(same_reports(br, br_layer_by_layer));

// ==== a training step built over several constant expressions ===============================
// 386 operators (two parts of detail::ops_per_part), a repeated block in the middle:
// training_step_of gives exactly what training_step gives.
constexpr auto long_forward() {
  model::plan<600, 392> p(mesh);
  auto x = p.tensor("x", {8, 16}, {0, -1});
  const auto chain = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto w = p.parameter("w", {16, 16}, {-1, i % 2});
      auto h = p.tensor("h", {8, 16});
      p.op<"matmul">({x, w}, {h});
      auto g = p.tensor("g", {8, 16});
      p.op<"gelu">({h}, {g});
      x = g;
    }
  };
  chain(96);
  x = p.repeat(4, x, [](model::plan<600, 392>& b, tensor_id in) {
    auto w = b.parameter("w", {16, 16}, {-1, 1});
    auto h = b.tensor("h", {8, 16});
    b.op<"matmul">({in, w}, {h});
    auto y = b.tensor("y", {8, 16}, {0, -1});
    b.op<"assign">({h}, {y});
    return y;
  });
  chain(96);
  return p;
}
constexpr auto long_fwd = long_forward();
constexpr tensor_id long_loss{long_fwd.tensor_count() - 1};
constexpr bool same_plans(const auto& a, const auto& b) {
  if (a.tensor_count() != b.tensor_count() || a.op_count() != b.op_count() || a.block_count() != b.block_count())
    return false;
  for (std::size_t t = 0; t < a.tensor_count(); ++t) {
    const auto &x = a.tensor_at(t), &y = b.tensor_at(t);
    if (!(x.name == y.name && x.shape == y.shape && x.producer == y.producer && x.annotated == y.annotated &&
          x.annotation == y.annotation && x.role == y.role && x.role_of == y.role_of && x.layout_of == y.layout_of))
      return false;
  }
  for (std::size_t i = 0; i < a.op_count(); ++i) {
    const auto &x = a.op_at(i), &y = b.op_at(i);
    if (!(x.rule == y.rule && x.label == y.label && x.inputs == y.inputs && x.outputs == y.outputs &&
          x.phase == y.phase && x.saved == y.saved))
      return false;
  }
  for (std::size_t k = 0; k < a.block_count(); ++k) {
    const auto &x = a.block_at(k), &y = b.block_at(k);
    if (!(x.first_op == y.first_op && x.end_op == y.end_op && x.count == y.count && x.input == y.input &&
          x.output == y.output && x.mirror_of == y.mirror_of && x.saved_begin == y.saved_begin &&
          x.first_run_at == y.first_run_at))
      return false;
  }
  return true;
}
constexpr auto& long_parts = model::training_step_of<long_fwd, long_loss>;
static_assert(long_fwd.op_count() == 386 && long_fwd.op_count() > model::detail::ops_per_part && long_parts.op_count() > 770);
constexpr auto long_whole = model::training_step(long_fwd, long_loss);  // (one constant expression)
constexpr auto long_other = model::training_step(long_fwd, tensor_id{long_loss.index - 1});
static_assert(same_plans(long_parts, long_whole));
static_assert(!same_plans(long_parts, long_other));
// It took two parts: the first leaves operators to run backwards.
using long_type = decltype(long_fwd);
constexpr std::size_t long_t2 = 6 * long_type::max_tensors, long_o2 = 3 * long_type::max_ops;
using long_work = model::detail::training_work<long_fwd, long_loss, model::training_options{}, long_t2, long_o2>;
static_assert(model::detail::staged_part<long_work, 0>.state.pending > 0);
static_assert(model::detail::staged_part<long_work, 1>.state.pending == 0);
static_assert(model::verified<[] { return model::training_step_of<long_fwd, long_loss>; }>().ok());
// Options and capacities pass through.
constexpr model::training_options zero{.shard_optimizer_states_on = 0};
constexpr auto long_zero = model::training_step<4000, 1200>(long_fwd, long_loss, zero);
static_assert(same_plans(model::training_step_of<long_fwd, long_loss, zero, 4000, 1200>, long_zero));

// A source laid out unlike the block's output: the first layer runs on another layout, and the
// backward pass's last run (that layer's) reads it. Induction still counts exactly.
constexpr auto uneven_step() { return layers(false); }
constexpr auto ur = model::verified<uneven_step>();
constexpr auto ur_layer_by_layer = model::verified<uneven_step, model::propagate_options{.induction = false}>();
static_assert(same_reports(ur, ur_layer_by_layer));
// The first layer reads x0 replicated: its weights' gradients are whole on each dp rank (no
// all-reduce), and its backward run gathers the gradient to y's first-run layout.
static_assert(ur.count(phase::optimizer, collective::all_reduce) == 4);
static_assert(ur.count_in_block(0, phase::backward, collective::all_gather) == 1);


// ==== errors ===================================================================================
// An operator without a grad recipe on the gradient's path.
static_assert(!constant_evaluates<[] {
  small_plan p(mesh);
  auto x = p.parameter("x", {2, 4, 4});
  auto z = p.tensor("z", {2});
  p.op<"det">({x}, {z});
  return model::training_step(p, z).op_count();
}>);
// ... but one off it needs none: no parameter reaches det.
static_assert(constant_evaluates<[] {
  small_plan p(mesh);
  auto w = p.parameter("w", {4, 4});
  auto x = p.tensor("x", {2, 4, 4}), z = p.tensor("z", {2}), v = p.tensor("v", {2, 4, 4});
  p.op<"det">({x}, {z});
  p.op<"matmul">({x, w}, {v});
  return model::training_step(p, v).op_count() == 2 + 1 + 1;
}>);
// An output whose gradient its grad operator does not read (topk's indices) passes none: det,
// which has no grad recipe, may read it on the way to the loss.
static_assert(constant_evaluates<[] {
  small_plan p(mesh);
  auto x = p.parameter("x", {4, 4, 4});
  auto v = p.tensor("v", {4, 4, 4}), i = p.tensor("i", {4, 4, 4}), d = p.tensor("d", {4}), loss = p.tensor("loss", {4, 4, 4});
  p.op<"topk">({x}, {v, i}, {.k = 4});
  p.op<"det">({i}, {d});
  p.op<"add">({v, d}, {loss});
  const auto s = model::training_step(p, loss);
  return s.op_at(3).rule == "add_grad" && s.op_at(4).rule == "topk_grad" && s.op_at(5).rule == "adamw";
}>);
// A parameter declared outside a block and read in it.
static_assert(!constant_evaluates<[] {
  model::plan<24, 12> p(mesh);
  auto x0 = p.tensor("x0", {8, 16});
  auto w = p.parameter("w", {16, 16});
  auto out = p.repeat(2, x0, [&](model::plan<24, 12>& b, tensor_id x) {
    auto y = b.tensor("y", {8, 16});
    b.op<"matmul">({x, w}, {y});
    return y;
  });
  return model::training_step(p, out).op_count();
}>);
// A backward operator that cannot run: the failure names its phase and its operands' roles.
constexpr auto sparse_step() {
  small_plan p(mesh);
  auto ids = p.tensor("ids", {8, 4}, {0, -1}, model::int64);
  auto table = p.parameter("table", {100, 16}, {-1, 1});
  auto e = p.tensor("e", {8, 4, 16});
  p.op<"embedding">({ids, table}, {e}, {.sparse = true}, "embed");
  return model::training_step(p, e);
}
constexpr auto sparse = model::try_propagate(sparse_step());
static_assert(!sparse.ok() && sparse.failed_operator() == 1 && sparse_step().op_at(1).rule == "embedding_grad");
constexpr bool contains(std::string_view text, std::string_view part) {
  for (std::size_t i = 0; i + part.size() <= text.size(); ++i)
    if (text.substr(i, part.size()) == part) return true;
  return false;
}
constexpr auto sparse_text = model::detail::describe_failure(sparse_step(), sparse);
static_assert(contains(sparse_text.view(), "operator 1 'embed' (embedding_grad, backward)"));
static_assert(contains(sparse_text.view(), "a sparse weight gradient"));

// A loss that is not a tensor of the plan.
static_assert(!constant_evaluates<[] { return model::training_step(mlp(), {99}).op_count(); }>);
// Optimizer states sharded on a mesh dim the mesh does not have.
static_assert(!constant_evaluates<[] { return model::training_step(mlp(), {5}, {.shard_optimizer_states_on = 2}).op_count(); }>);

int main() {}
