// The shape grad rules at run time (one section each): cases by type and by name under
// both semantics, partial out_grad, and every error as a thrown spmd_error with its message. (Grad rules have no reverse inference, so there is no round trip.)
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"

#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace shape_grads_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using ints = std::vector<std::int64_t>;
using V = std::vector<dist_tensor_spec>;

const process_mesh mesh({2, 4});
const process_mesh m22({2, 2});
const ctspmd_test::on_mesh spec{mesh};
const ctspmd_test::partial_on_mesh partial{mesh};
const auto inv = error_kind::invalid_argument;
const auto unimpl = error_kind::unimplemented;

// ==== slice_grad / strided_slice_grad ===============================================================

TEST_CASE("slice_grad and strided_slice_grad") {
  const V in{spec({16, 32, 8}, {-1, 0, -1}), spec({16, 16, 8}, {0, -1, 1})};
  const runtime::attribute_map attrs{{"axes", ints{1}}, {"starts", ints{4}}, {"ends", ints{20}},
                                     {"infer_flags", ints{1}}, {"decrease_axis", ints{}}};
  const auto g = runtime::infer_forward("slice_grad", in, attrs);
  CHECK(g == rules::slice_grad::infer_forward(in, {.axes = {1}, .starts = {4}, .ends = {20}, .infer_flags = {1}}));
  // the sliced dim is replicated in x, out_grad and x_grad; out_grad's other dims are kept
  CHECK(g.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(g.inputs[1].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(runtime::infer_forward("slice_grad", in, attrs, semantics::phi) == g);
  // decrease_axis
  const auto d = runtime::infer_forward("slice_grad", V{spec({16, 32, 8}, {-1, -1, -1}), spec({16, 8}, {1, 0})},
                                        {{"axes", ints{-2}}, {"starts", ints{3}}, {"ends", ints{4}}, {"decrease_axis", ints{1}}});
  CHECK(d.outputs[0].dims_mapping() == dims_mapping{1, -1, 0});
  // a partial out_grad stays partial, and so does x_grad (zero outside the slice under every reduce type)
  const auto p = runtime::infer_forward("slice_grad", V{in[0], partial({16, 16, 8}, {0, -1, -1}, 1, reduce_type::max)}, attrs);
  CHECK(p.outputs[0].partial_dims() == mesh_dims{1});
  CHECK(p.outputs[0].partial_reduce_type(1) == reduce_type::max);
  CHECK(p.inputs[1].partial_reduce_type(1) == reduce_type::max);

  const auto s = runtime::infer_forward("strided_slice_grad", V{spec({16, 32, 8}, {0, 1, -1}), spec({16, 10, 8}, {-1, -1, 1})},
                                        {{"axes", ints{1}}, {"starts", ints{1}}, {"ends", ints{30}}, {"strides", ints{3}}});
  CHECK(s.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(s.inputs[1].dims_mapping() == dims_mapping{0, -1, 1});

  check_error([&] { (void)runtime::infer_forward("slice_grad", V{in[0], spec({16, 8}, {-1, -1})}, attrs); }, inv,
              "slice_grad: out_grad has rank 2, but the slice of x has rank 3");
  check_error([&] { (void)runtime::infer_forward("slice_grad", V{in[0], spec({16, 15, 8}, {-1, -1, -1})}, attrs); }, inv,
              "slice_grad: out_grad dim 1 has size 15, but the slice of x gives 16");
  check_error([&] { (void)runtime::infer_forward("slice_grad", in, {{"axes", ints{3}}, {"starts", ints{0}}, {"ends", ints{1}}}); },
              inv, "slice_grad: axes entry 3 is out of range for x of rank 3");
  check_error(
      [&] {
        (void)runtime::infer_forward("strided_slice_grad", in, {{"axes", ints{1}}, {"starts", ints{0}}, {"ends", ints{1}}});
      },
      inv, "strided_slice_grad: axes has 1 entries, but strides has 0");
  check_error(
      [&] {
        (void)rules::slice_grad::infer_forward({spec({16, 32, 8}, {1, -1, -1}), spec({16, 16, 8}, {0, -1, -1})},
                                               {.axes = {1}, .starts = {4}, .ends = {20}});
      },
      unimpl, "sharded by two different mesh dims");
  check_error([&] { (void)runtime::infer_backward("slice_grad", in, V{in[0]}, attrs); }, unimpl,
              "a grad rule has no reverse inference");
}

// ==== pad_grad =======================================================================================

TEST_CASE("pad_grad") {
  const V in{spec({16, 8, 9}, {0, -1, 1})};
  const runtime::attribute_map attrs{{"paddings", ints{0, 0, 0, 0, 1, 2}}, {"pad_value", 0.0}};
  const auto g = runtime::infer_forward("pad_grad", in, attrs);
  CHECK(g == rules::pad_grad::infer_forward(in, {.paddings = {0, 0, 0, 0, 1, 2}}));
  CHECK(g.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  const auto p = runtime::infer_forward("pad_grad", V{partial({16, 8, 9}, {0, -1, -1}, 1, reduce_type::prod)}, attrs,
                                        semantics::phi);
  CHECK(p.outputs[0].partial_reduce_type(1) == reduce_type::prod);

  check_error([&] { (void)runtime::infer_forward("pad_grad", in, {{"paddings", ints{0, 0, 1, 2}}}); }, inv,
              "pad_grad: paddings has 4 entries, but out_grad of rank 3 needs 6");
  check_error([&] { (void)runtime::infer_forward("pad_grad", in, {{"paddings", ints{0, 0, -1, 0, 0, 0}}}); }, inv,
              "dim 1 has paddings -1 and 0; a padding is >= 0");
  check_error([&] { (void)runtime::infer_forward("pad_grad", in, {{"paddings", ints{0, 0, 0, 0, 5, 5}}}); }, inv,
              "out_grad dim 2 has size 9, less than its paddings 5 and 5");
  check_error([&] { (void)runtime::infer_forward("pad_grad", V{in[0], in[0]}, attrs); }, inv,
              "pad_grad: expects 1 input, got 2");
}

// ==== expand_as_grad =================================================================================

TEST_CASE("expand_as_grad") {
  // Paddle's expand_as test: mesh [2, 3], x [1, 48], out_grad [2, 32, 48] [0, 1, -1]
  const process_mesh m23({2, 3});
  const V in{{{1, 48}, {m23, {-1, -1}}}, {{2, 32, 48}, {m23, {0, 1, -1}}}};
  const auto g = runtime::infer_forward("expand_as_grad", in, {{"target_shape", ints{2, 32, 48}}});
  CHECK(g.inputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK(g.inputs[1].dims_mapping() == dims_mapping{0, 1, -1});
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK(g.outputs[0].partial_dims() == mesh_dims{0, 1});
  CHECK(runtime::infer_forward("expand_as_grad", in, {}, semantics::phi) == g);
  // avg parts pass through the sum; max parts are reduced first
  const auto a = runtime::infer_forward("expand_as_grad", V{spec({1, 48}, {-1, -1}), partial({4, 48}, {0, -1}, 1, reduce_type::avg)});
  CHECK(a.outputs[0].partial_dims() == mesh_dims{0, 1});
  CHECK(a.outputs[0].partial_reduce_type(1) == reduce_type::avg);
  const auto m = runtime::infer_forward("expand_as_grad", V{spec({1, 48}, {-1, -1}), partial({4, 48}, {0, -1}, 1, reduce_type::max)});
  CHECK(!m.inputs[1].is_partial());
  CHECK(m.outputs[0].partial_dims() == mesh_dims{0});

  check_error([&] { (void)runtime::infer_forward("expand_as_grad", V{spec({2, 32, 48}, {-1, -1, -1}), spec({32, 48}, {-1, -1})}); },
              inv, "expand_as_grad: x has rank 3, above out_grad's rank 2");
  check_error([&] { (void)runtime::infer_forward("expand_as_grad", V{spec({3, 48}, {-1, -1}), spec({2, 32, 48}, {-1, -1, -1})}); },
              inv, "x dim 0 has size 3, which neither equals out_grad dim 1 (32) nor is 1");
  check_error([&] { (void)runtime::infer_forward("expand_as_grad", in, {{"target_shape", ints{32, 48}}}); }, inv,
              "out_grad has rank 3, but target_shape has 2 entries");
  check_error([&] { (void)runtime::infer_forward("expand_as_grad", in, {{"target_shape", ints{2, 16, 48}}}); }, inv,
              "out_grad dim 1 has size 32, but target_shape gives 16");
}

// ==== stack_grad / unbind_grad =======================================================================

TEST_CASE("stack_grad and unbind_grad") {
  // Paddle's spmd_rule_test.cc: out_grad [3, 16, 8, 4] [-1, -1, 1, 0], axis 0
  const V in{{{3, 16, 8, 4}, {m22, {-1, -1, 1, 0}}}};
  const auto g = runtime::infer_forward("stack_grad", in, {{"axis", std::int64_t{0}}});
  REQUIRE(g.outputs.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(g.outputs[i].dims_mapping() == dims_mapping{-1, 1, 0});
  CHECK(g.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1, 0});
  const auto s = runtime::infer_forward("stack_grad", V{spec({8, 2}, {0, 1})}, {{"axis", std::int64_t{-1}}}, semantics::phi);
  REQUIRE(s.outputs.size() == 2);
  CHECK(s.inputs[0].dims_mapping() == dims_mapping{0, -1});
  CHECK(s.outputs[1].dims_mapping() == dims_mapping{0});
  const auto p = runtime::infer_forward("stack_grad", V{partial({2, 8}, {-1, 0}, 1, reduce_type::min)});
  CHECK(p.outputs[1].partial_reduce_type(1) == reduce_type::min);

  // unbind_grad stacks the outputs' gradients: the stack rule
  const V outs{spec({8, 16}, {0, -1}), spec({8, 16}, {0, 1})};
  const auto u = runtime::infer_forward("unbind_grad", outs, {{"axis", std::int64_t{1}}});
  CHECK(u == rules::stack::infer_forward(outs, {.axis = 1}));
  CHECK(u.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
  CHECK(runtime::infer_forward("unbind_grad", outs, {{"axis", std::int64_t{1}}}, semantics::phi).outputs[0].rank() == 3);

  check_error([&] { (void)runtime::infer_forward("stack_grad", V{spec({3, 16}, {-1, -1})}, {{"axis", std::int64_t{2}}}); }, inv,
              "stack_grad: axis 2 is out of range for out_grad of rank 2");
  check_error([&] { (void)runtime::infer_forward("stack_grad", V{spec({-1, 16}, {-1, -1})}); }, inv,
              "out_grad has size -1 on axis 0, which must be known and in [1, 16] (the number of gradients)");
  check_error([&] { (void)runtime::infer_backward("stack_grad", in, V{{{16, 8, 4}, {m22, {-1, -1, -1}}}}); }, unimpl,
              "a grad rule has no reverse inference");
}

// ==== concat_grad ====================================================================================

TEST_CASE("concat_grad") {
  // Paddle's spmd_rule_test.cc (ConcatGradInferSpmdDynamic), under phi
  const V in{{{16, 16, 16}, {m22, {-1, 0, 1}}},
             {{4, 16, 16}, {m22, {-1, 1, 0}}},
             {{2, 16, 16}, {m22, {-1, -1, 0}}},
             {{22, 16, 16}, {m22, {-1, 1, 0}}}};
  const auto g = runtime::infer_forward("concat_grad", in, {{"axis", std::int64_t{0}}}, semantics::phi);
  REQUIRE(g.outputs.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(g.outputs[i].dims_mapping() == dims_mapping{-1, 1, 0});
  for (std::size_t i = 0; i < 4; ++i) CHECK(g.inputs[i].dims_mapping() == dims_mapping{-1, 1, 0});
  // fluid: out_grad first, so it wins a mesh dim claimed by two axes
  const auto f = runtime::infer_forward(
      "concat_grad", V{spec({16, 8, 8}, {-1, -1, 0}), spec({4, 8, 8}, {-1, -1, -1}), spec({20, 8, 8}, {-1, 0, -1})});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
  CHECK(f.inputs[0].dims_mapping() == dims_mapping{-1, 0, -1});
  CHECK(f.inputs[2].dims_mapping() == dims_mapping{-1, 0, -1});
  // a partial out_grad: every gradient stays partial
  const auto p = runtime::infer_forward("concat_grad", V{spec({16, 16}, {-1, -1}), spec({4, 16}, {-1, -1}),
                                                          partial({20, 16}, {-1, 1}, 0, reduce_type::sum)},
                                        {}, semantics::phi);
  CHECK(p.outputs[1].partial_dims() == mesh_dims{0});
  CHECK(p.outputs[1].dims_mapping() == dims_mapping{-1, 1});

  const auto x0 = spec({16, 16}, {-1, -1}), x1 = spec({4, 16}, {-1, -1});
  check_error([&] { (void)runtime::infer_forward("concat_grad", V{x0, x1, spec({21, 16}, {-1, -1})}); }, inv,
              "concat_grad: out_grad has size 21 at the concat axis 0, but the inputs add up to 20");
  check_error([&] { (void)runtime::infer_forward("concat_grad", V{x0, spec({4, 8}, {-1, -1}), spec({20, 16}, {-1, -1})}); },
              inv, "x2 has size 8 at dim 1, but x1 has size 16 (only the concat axis may differ)");
  check_error([&] { (void)runtime::infer_forward("concat_grad", V{x0, x1, spec({20, 8}, {-1, -1})}); }, inv,
              "out_grad has size 8 at dim 1, but x1 has size 16 (only the concat axis may differ)");
  check_error([&] { (void)runtime::infer_forward("concat_grad", V{x0, x1, spec({20}, {-1})}); }, inv,
              "out_grad has rank 1, but x1 has rank 2");
  check_error([&] { (void)runtime::infer_forward("concat_grad", V{x0, x1, spec({20, 16}, {-1, -1})}, {{"axis", std::int64_t{2}}}); },
              inv, "axis 2 is out of range for inputs of rank 2");
  check_error([&] { (void)runtime::infer_forward("concat_grad", V{x0}); }, inv, "concat_grad: expects at least 2 inputs, got 1");
}

}  // namespace shape_grads_test
