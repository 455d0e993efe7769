#include <ctspmd/model/propagate.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using model::collective;
using model::tensor_id;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 4});
using small_plan = model::plan<16, 8>;

// ==== all-reduce: a row-parallel matmul's partial output read by an add ==========================
constexpr auto row_parallel() {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 64}, {0, 1});
  auto w = p.tensor("w", {64, 32}, {1, -1});
  auto y = p.tensor("y", {8, 32});
  auto r = p.tensor("r", {8, 32}, {0, -1});
  auto z = p.tensor("z", {8, 32});
  p.op<"matmul">({x, w}, {y});
  p.op<"add">({r, y}, {z}, {}, "residual");
  return p;
}
constexpr auto rp = model::verified<row_parallel>();
static_assert(rp.ok() && rp.count() == 1 && rp.count(collective::all_reduce) == 1);
static_assert(rp.attr({2}).partial_dims() == mesh_dims{1});  // y: partial (sum) over mesh dim 1
static_assert(rp.dims_mapping({4}) == dims_mapping{0, -1});
constexpr auto& ar = rp.reshard_at(0);
static_assert(ar.op == 1 && ar.operand == 1 && !ar.on_output && ar.tensor == 2 && ar.mesh_dim == 1 && ar.times == 1);
static_assert(ar.block == -1 && ar.from.is_partial(1) && !ar.to.is_partial());
// y is 8 x 32 float32, sharded on dim 0 over 2: 512 bytes per device; all-reduce over 4 devices.
static_assert(ar.bytes == 2 * 3 * 512 / 4 && rp.bytes(collective::all_reduce) == ar.bytes);
static_assert(rp.bytes(collective::all_gather) == 0);

// ==== one all-reduce over a product group: a tensor partial over both mesh dims read replicated ==
// (a sum over mesh dims 0 and 1 at once: 8 devices); partial with two reduce types: two all-reduces
template <reduce_type Second>
constexpr auto both_partial() {
  small_plan p(mesh);
  tensor_dist_attr a(mesh, dims_mapping{-1, -1});
  a.set_partial_status({0});
  a.set_partial_status({1}, Second);
  auto y = p.tensor("y", {8, 32}, a);
  auto r = p.tensor("r", {8, 32}, {-1, -1});
  auto z = p.tensor("z", {8, 32});
  p.op<"add">({r, y}, {z}, {}, "residual");
  return p;
}
constexpr auto group = model::verified<both_partial<reduce_type::sum>>();
static_assert(group.reshard_entries() == 1 && group.count(collective::all_reduce) == 1);
static_assert(group.reshard_at(0).mesh_dim == 0 && group.reshard_at(0).group == 0b11);
// y is 8 x 32 float32 whole on each device: 1024 bytes; all-reduce over 2 x 4 devices
static_assert(group.reshard_at(0).bytes == 2 * 7 * 1024 / 8);
constexpr auto two = model::verified<both_partial<reduce_type::max>>();
static_assert(two.reshard_entries() == 2 && two.reshard_at(0).group == 0b01 && two.reshard_at(1).group == 0b10);
static_assert(two.reshard_at(0).bytes == 2 * 1 * 1024 / 2 && two.reshard_at(1).bytes == 2 * 3 * 1024 / 4);

// ==== a mesh dim of size 1 moves nothing ========================================================
// On [1, 4], y partial over both dims (and r split over the size-1 dim) read replicated: one
// all-reduce of 4 devices (a sum over both dims is one over their product group, listed under dim
// 0), and with another reduce type on dim 0 none there: partial or split over one device is the
// value itself.
template <reduce_type Second>
constexpr auto one_device_dim() {
  using plan_1x4 = model::plan<8, 4>;
  const process_mesh thin({1, 4});
  plan_1x4 p(thin);
  tensor_dist_attr a(thin, dims_mapping{-1, -1});
  a.set_partial_status({0});
  a.set_partial_status({1}, Second);
  auto y = p.tensor("y", {8, 32}, a);
  auto r = p.tensor("r", {8, 32}, {0, -1});
  auto z = p.tensor("z", {8, 32}, {-1, -1});
  p.op<"add">({r, y}, {z}, {}, "residual");
  return p;
}
constexpr auto thin_sum = model::verified<one_device_dim<reduce_type::sum>>();
static_assert(thin_sum.reshard_entries() == 1 && thin_sum.reshard_at(0).group == 0b11);
static_assert(thin_sum.reshard_at(0).kind == collective::all_reduce && thin_sum.reshard_at(0).bytes == 2 * 3 * 1024 / 4);
constexpr auto thin_max = model::verified<one_device_dim<reduce_type::max>>();
static_assert(thin_max.reshard_entries() == 1 && thin_max.reshard_at(0).mesh_dim == 1 && thin_max.count() == 1);

// ==== reduce-scatter: the same partial read by an add whose other input is sharded ===============
constexpr auto scatter() {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 64}, {0, 1});
  auto w = p.tensor("w", {64, 32}, {1, -1});
  auto y = p.tensor("y", {8, 32});
  auto r = p.tensor("r", {8, 32}, {0, 1});
  p.op<"matmul">({x, w}, {y});
  p.op<"add">({r, y}, {p.tensor("z", {8, 32})});
  return p;
}
constexpr auto rs = model::verified<scatter>();
static_assert(rs.count() == 1 && rs.count(collective::reduce_scatter) == 1);
static_assert(rs.reshard_at(0).to.dims_mapping() == dims_mapping{0, 1} && rs.reshard_at(0).bytes == 3 * 512 / 4);

// ==== all-gather: softmax needs its axis whole ============================================================
constexpr auto gather() {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 64}, {0, 1});
  p.op<"softmax">({x}, {p.tensor("y", {8, 64})});
  return p;
}
constexpr auto ag = model::verified<gather>();
static_assert(ag.count() == 1 && ag.count(collective::all_gather) == 1 && ag.dims_mapping({1}) == dims_mapping{0, -1});
static_assert(ag.reshard_at(0).bytes == 3 * (8 * 64 * 4 / 8));  // (n - 1) x the local shard

// ==== all-to-all: a mesh dim moves from one tensor dim to another =========================================
constexpr auto move() {
  small_plan p(mesh);
  auto a = p.tensor("a", {8, 8}, {1, -1});
  auto b = p.tensor("b", {8, 8}, {-1, 1});  // mesh dim 1 claimed by a's dim 0 first: b must follow
  p.op<"add">({a, b}, {p.tensor("c", {8, 8})});
  return p;
}
constexpr auto a2a = model::verified<move>();
static_assert(a2a.count() == 1 && a2a.count(collective::all_to_all) == 1 && a2a.reshard_at(0).operand == 1);

// ==== an annotated output: its cost shows upstream (local slice), or on the output itself ===============
constexpr auto pinned() {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 64}, {-1, -1});
  auto w = p.tensor("w", {64, 32}, {-1, -1});
  auto y = p.tensor("y", {8, 32}, {0, -1});  // pinned: rows on mesh dim 0
  p.op<"matmul">({x, w}, {y});
  auto s = p.tensor("s", {8, 32}, {0, 1});  // softmax cannot give its axis sharded
  p.op<"softmax">({y}, {s}, {}, "pinned.softmax");
  return p;
}
constexpr auto pin = model::verified<pinned>();
static_assert(pin.count() == 2 && pin.count(collective::local_slice) == 2);
static_assert(pin.reshard_at(0).op == 0 && !pin.reshard_at(0).on_output && pin.reshard_at(0).mesh_dim == 0);
static_assert(pin.reshard_at(0).to.dims_mapping() == dims_mapping{0, -1} && pin.reshard_at(0).bytes == 0);  // x sliced
static_assert(pin.reshard_at(1).op == 1 && pin.reshard_at(1).on_output && pin.reshard_at(1).mesh_dim == 1);
static_assert(pin.dims_mapping({3}) == dims_mapping{0, 1});  // the annotation wins

// ==== backward completion: a plan input nobody annotated takes what its consumer needs =============
constexpr auto completion() {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 64}, {0, 1});
  auto w = p.tensor("w", {64, 32});  // not annotated
  p.op<"matmul">({x, w}, {p.tensor("y", {8, 32})});
  return p;
}
constexpr auto done = model::verified<completion>();
static_assert(done.count() == 0 && done.dims_mapping({1}) == dims_mapping{1, -1});
static_assert(done.attr({2}).partial_dims() == mesh_dims{1});

// ==== repeated blocks: verified once, then by induction ==================================================
template <std::size_t Count, bool PartialSource>
constexpr auto stack() {
  small_plan p(mesh);
  auto src = p.tensor("src", {8, 64}, {0, -1});
  auto x0 = p.tensor("x0", {8, 64});
  if (PartialSource) {  // a row-parallel matmul: x0 partial over mesh dim 1 for the first run
    p.op<"matmul">({p.tensor("a", {8, 16}, {0, 1}), p.tensor("b", {16, 64}, {1, -1})}, {x0});
  } else {
    p.op<"relu">({src}, {x0});
  }
  auto out = p.repeat(Count, x0, [&](small_plan& b, tensor_id x) {
    auto h = b.tensor("h", {8, 32});
    b.op<"matmul">({x, b.tensor("w1", {64, 32}, {-1, 1})}, {h}, {}, "up");
    auto y = b.tensor("y", {8, 64});
    b.op<"matmul">({h, b.tensor("w2", {32, 64}, {1, -1})}, {y}, {}, "down");
    auto z = b.tensor("z", {8, 64});
    b.op<"add">({x, y}, {z}, {}, "residual");
    return z;
  });
  p.op<"relu">({out}, {p.tensor("final", {8, 64})});
  return p;
}
template <std::size_t Count, bool PartialSource, bool Induction>
constexpr auto stack_result = model::verified<stack<Count, PartialSource>, model::propagate_options{Induction}>();

static_assert(stack_result<5, false, true>.count() == 5 && stack_result<5, false, true>.count_in_block(0) == 5);
static_assert(stack_result<5, false, true>.count_in_block(0, collective::all_reduce) == 5);
static_assert(stack_result<5, false, true>.reshard_entries() == 1 && stack_result<5, false, true>.reshard_at(0).times == 5);
// Running every repetition gives the same report.
static_assert(stack_result<5, false, false>.count() == 5 && stack_result<5, false, false>.reshard_entries() == 1);
// A first run that differs (its input partial: two all-reduces, one per consumer) is counted once.
static_assert(stack_result<5, true, true>.count_in_block(0, collective::all_reduce) == 5 + 2);
static_assert(stack_result<5, true, true>.count() == stack_result<5, true, false>.count());
static_assert(stack_result<1, true, true>.count_in_block(0) == 3);
static_assert(stack_result<5, true, true>.dims_mapping({stack<5, true>().tensor_count() - 1}) == dims_mapping{0, -1});
static_assert(stack_result<5, false, true>.expect_in_block(stack<5, false>(), 0, collective::all_reduce, 5));
static_assert(!constant_evaluates<[] {
  return stack_result<5, false, true>.expect_in_block(stack<5, false>(), 0, collective::all_gather, 5);
}>);
static_assert(!constant_evaluates<[] {
  return stack_result<5, false, true>.expect_in_block(stack<5, false>(), 0, collective::all_reduce, 4);
}>);

// ==== plans that cannot be propagated: the operator's index, name and the rule's error ============
constexpr auto conflict() {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 64}, {-1, 1});
  auto w = p.tensor("w", {64, 32}, {0, -1});  // k on mesh dim 1 by x and on 0 by w
  p.op<"relu">({x}, {p.tensor("x2", {8, 64})});
  p.op<"matmul">({x, w}, {p.tensor("y", {8, 32})}, {}, "proj");
  return p;
}
constexpr auto bad = model::try_propagate(conflict());
static_assert(!bad.ok() && bad.failed_operator() == 1 && bad.error().op == "proj");
static_assert(bad.error().kind == error_kind::unimplemented && bad.error().values[0] == 'k');
static_assert(!constant_evaluates<[] { return model::propagate(conflict()); }>);

constexpr auto wrong_outputs() {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 64});
  p.op<"relu">({x}, {p.tensor("a", {8, 64}), p.tensor("b", {8, 64})});  // relu has one output
  return p;
}
static_assert(model::try_propagate(wrong_outputs()).error().values[0] == 2);
static_assert(model::try_propagate(wrong_outputs()).error().op == "relu");

constexpr auto read_before_write() {
  small_plan p(mesh);
  auto a = p.tensor("a", {8, 64});
  auto b = p.tensor("b", {8, 64});
  p.op<"relu">({b}, {p.tensor("c", {8, 64})});
  p.op<"relu">({a}, {b});
  return p;
}
static_assert(model::try_propagate(read_before_write()).failed_operator() == 0);

constexpr auto bad_rank() {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 64}, {0, 1});
  p.op<"matmul">({x}, {p.tensor("y", {8})});  // one input
  return p;
}
static_assert(model::try_propagate(bad_rank()).error().kind == error_kind::invalid_argument);

// Building a bad plan is an error too.
static_assert(!constant_evaluates<[] {
  small_plan p(mesh);
  auto x = p.tensor("x", {8}, {0});
  p.op<"relu">({x}, {x});
  p.op<"relu">({x}, {x});  // written twice
  return p.op_count();
}>);
static_assert(!constant_evaluates<[] {
  small_plan p(mesh);
  return p.tensor("x", {8}, tensor_dist_attr(process_mesh({8}), {0})).index;  // another mesh
}>);
static_assert(!constant_evaluates<[] {
  model::plan<2, 2> p(mesh);
  (void)p.tensor("a", {1}), (void)p.tensor("b", {1});
  return p.tensor("c", {1}).index;  // beyond MaxTensors
}>);
static_assert(!constant_evaluates<[] {
  small_plan p(mesh);
  const tensor_id bogus{3};
  p.op<"relu">({bogus}, {});  // not a tensor of the plan
  return 0;
}>);

// ==== classification of every transition =============================================================
namespace d = model::detail;
constexpr d::mesh_dim_state rep{}, shard0{d::mesh_dim_state::shard, 0}, shard1{d::mesh_dim_state::shard, 1},
    part{d::mesh_dim_state::partial, 0};
static_assert(d::classify(part, rep) == collective::all_reduce && d::classify(part, shard0) == collective::reduce_scatter);
static_assert(d::classify(shard0, rep) == collective::all_gather && d::classify(shard0, shard1) == collective::all_to_all);
static_assert(d::classify(rep, shard1) == collective::local_slice && d::classify(rep, part) == collective::local_partial);
static_assert(model::to_string(collective::reduce_scatter) == "reduce_scatter");

// ==== each run of a repeated block has its own tensors ===========================================
// Three layers `matmul(x, w) -> y; relu(y) -> z` with an unannotated weight w declared in the
// layer, on a [2, 2] mesh: the first layer's w takes x's k sharding (so y is partial and relu
// all-reduces it); the later layers read a replicated x, and their own w is laid out for it.
constexpr process_mesh mesh22({2, 2});
template <bool Repeated>
constexpr auto layers() {
  model::plan<16, 8> p(mesh22);
  auto x0 = p.tensor("x0", {8, 16, 32}, {0, -1, 1});
  auto layer = [](model::plan<16, 8>& b, tensor_id x) {
    auto w = b.tensor("w", {32, 32});
    auto y = b.tensor("y", {8, 16, 32});
    b.op<"matmul">({x, w}, {y});
    auto z = b.tensor("z", {8, 16, 32});
    b.op<"relu">({y}, {z});
    return z;
  };
  if (Repeated) {
    p.repeat(3, x0, layer);
  } else {
    auto x = x0;
    for (int i = 0; i < 3; ++i) x = layer(p, x);
  }
  return p;
}
constexpr auto repeated_layers = model::verified<layers<true>>();
constexpr auto written_layers = model::verified<layers<false>>();
static_assert(written_layers.count() == 1 && written_layers.count(collective::all_reduce) == 1);
static_assert(repeated_layers.count() == 1 && repeated_layers.count(collective::all_reduce) == 1);
static_assert(repeated_layers.bytes(collective::all_reduce) == written_layers.bytes(collective::all_reduce));
// The last run's weight is laid out for a replicated x; its output is the written-out one's.
static_assert(repeated_layers.dims_mapping({layers<true>().tensor_count() - 1}) == dims_mapping{0, -1, -1});
static_assert(repeated_layers.dims_mapping({layers<true>().tensor_count() - 3}) == dims_mapping{-1, -1});
// Without induction every run is propagated: the same report.
static_assert(model::verified<layers<true>, model::propagate_options{false}>().count() == 1);
// A body's operators write only the body's tensors.
static_assert(!constant_evaluates<[] {
  model::plan<16, 8> p(mesh22);
  auto x0 = p.tensor("x0", {8, 32}, {0, -1});
  auto outside = p.tensor("outside", {8, 32});
  p.repeat(2, x0, [&](model::plan<16, 8>& b, tensor_id x) {
    b.op<"relu">({x}, {outside});
    return outside;
  });
  return p.op_count();
}>);

// ==== what a rule infers must fit the declared outputs =============================================
// A rule that derives its output shapes (`output_shapes`) is checked when the plan is built
// (static_tests/model/shapes_test.cpp); one that does not, such as `replicated`, by rank when
// it is propagated.
constexpr auto wrong_output_rank() {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 16, 32}, {0, -1, -1});
  p.op<"replicated">({x}, {p.tensor("y", {8, 64})}, {}, "fallback");  // the rule infers rank 3
  p.op<"relu">({x}, {p.tensor("r", {8, 16, 32})});
  return p;
}
constexpr auto rank_failure = model::try_propagate(wrong_output_rank());
static_assert(!rank_failure.ok() && rank_failure.failed_operator() == 0 && rank_failure.error().op == "fallback");
static_assert(rank_failure.error().values[0] == 0 && rank_failure.error().values[2] == 2 &&
              rank_failure.error().values[3] == 3);
// matmul [8, 16, 32] x [32, 64] derives [8, 16, 64]: declaring [8, 64] fails to build.
static_assert(!constant_evaluates<[] {
  small_plan p(mesh);
  auto x = p.tensor("x", {8, 16, 32}, {0, -1, -1});
  auto w = p.tensor("w", {32, 64}, {-1, 1});
  p.op<"matmul">({x, w}, {p.tensor("y", {8, 64})}, {}, "proj");
  return p.op_count();
}>);

// ==== MaxReshards: a one-operator plan with eight reshards ============================================
constexpr process_mesh mesh2222({2, 2, 2, 2});
constexpr auto eight_reshards() {
  model::plan<4, 1> p(mesh2222);
  tensor_dist_attr partial_everywhere(mesh2222, {-1, -1});  // a reduce type per mesh dim: no product group
  partial_everywhere.set_partial_status({0});
  partial_everywhere.set_partial_status({1}, reduce_type::max);
  partial_everywhere.set_partial_status({2}, reduce_type::min);
  partial_everywhere.set_partial_status({3}, reduce_type::prod);
  auto x = p.tensor("x", {8, 8}, partial_everywhere);
  auto y = p.tensor("y", {8, 8}, partial_everywhere);
  p.op<"add">({x, y}, {p.tensor("out", {8, 8})});  // x and y all-reduced on each mesh dim
  return p;
}
static_assert(model::default_max_reshards(1) == 4 && model::default_max_reshards(1000) == 1256);
static_assert(!model::try_propagate(eight_reshards()).ok());
static_assert(model::try_propagate(eight_reshards()).error().values[0] == 4);
static_assert(model::try_propagate<8>(eight_reshards()).count(collective::all_reduce) == 8);
static_assert(model::verified<eight_reshards, model::propagate_options{}, 8>().count() == 8);

// ==== a failure names the inputs in conflict ===============================================================
static_assert(bad.failure_involves(0) && bad.failure_involves(1) && bad.failed_operand() == 0);
static_assert(!rank_failure.failure_involves(0) && rank_failure.failed_operand() == -1);

// ==== plans longer than one constant expression can verify ==============================================
// A chain of 600 relus: `verified` spreads it over constant expressions of
// `detail::runs_per_step` operators, each well within Clang's default step limit.
constexpr auto long_chain() {
  model::plan<601, 600> p(mesh);
  auto x = p.tensor("x", {8, 16}, {0, 1});
  for (int i = 0; i < 600; ++i) {
    auto y = p.tensor("y", {8, 16});
    p.op<"relu">({x}, {y});
    x = y;
  }
  return p;
}
constexpr auto chain = model::verified<long_chain>();
static_assert(chain.ok() && chain.count() == 0 && chain.dims_mapping({600}) == dims_mapping{0, 1});

// ==== a co-shard moving whole is one all-to-all; a reshard's collectives listed as they run ========
// On [2, 2, 2] (phi), x [8, 8, 16] float32 split [[0, 2], [1], []] read as [[], [], [0, 2]]: mesh
// dims 0 and 2 move together from dim 0 to dim 2, one all-to-all over their 4 devices on the
// local 2 x 4 x 16 part (3/4 of 512 bytes), then mesh dim 1's all-gather (of 8 x 4 x 4: 512).
constexpr process_mesh cube({2, 2, 2});
constexpr auto co_shard_move() {
  small_plan p(cube, semantics::phi);
  auto x = p.tensor("x", {8, 8, 16}, tensor_dist_attr(cube, multi_dims_mapping{{0, 2}, {1}, {}}));
  p.op<"assign">({x}, {p.tensor("y", {8, 8, 16}, tensor_dist_attr(cube, multi_dims_mapping{{}, {}, {0, 2}}))});
  return p;
}
constexpr auto whole = model::verified<co_shard_move>();
static_assert(whole.reshard_entries() == 2 && whole.reshard_at(0).kind == collective::all_to_all &&
              whole.reshard_at(0).group == 0b101 && whole.reshard_at(0).bytes == 3 * 512 / 4);
static_assert(whole.reshard_at(1).kind == collective::all_gather && whole.reshard_at(1).bytes == 512);
// Mesh dims reordered on one tensor dim ([[0, 1]] -> [[1, 0]]) are no such move: each device
// receives all of its new part (4 x 4 bytes), none being the part of the old order it holds.
constexpr auto reorder() {
  small_plan p(cube, semantics::phi);
  auto x = p.tensor("x", {16}, tensor_dist_attr(cube, multi_dims_mapping{{0, 1}}));
  p.op<"assign">({x}, {p.tensor("y", {16}, tensor_dist_attr(cube, multi_dims_mapping{{1, 0}}))});
  return p;
}
constexpr auto reordered = model::verified<reorder>();
static_assert(reordered.reshard_entries() == 1 && reordered.reshard_at(0).kind == collective::all_to_all &&
              reordered.reshard_at(0).group == 0b011 && reordered.reshard_at(0).bytes == 16);
// Partial over both dims of [2, 4], read split over mesh dim 0: the all-reduce over mesh dim 1
// runs (and is listed) before the reduce-scatter over mesh dim 0, on the whole 8 x 8 (256 bytes).
constexpr auto reduce_then_scatter() {
  small_plan p(mesh);
  tensor_dist_attr a(mesh, dims_mapping{-1, -1});
  a.set_partial_status({0, 1});
  auto y = p.tensor("y", {8, 8}, a);
  p.op<"assign">({y}, {p.tensor("z", {8, 8}, {0, -1})});
  return p;
}
constexpr auto ordered = model::verified<reduce_then_scatter>();
static_assert(ordered.reshard_entries() == 2 && ordered.reshard_at(0).kind == collective::all_reduce &&
              ordered.reshard_at(0).mesh_dim == 1 && ordered.reshard_at(0).bytes == 2 * 3 * 256 / 4);
static_assert(ordered.reshard_at(1).kind == collective::reduce_scatter && ordered.reshard_at(1).mesh_dim == 0 &&
              ordered.reshard_at(1).bytes == 256 / 2);
