// The shape rules at run time (squeeze, unsqueeze, the reshapes' gradient, tile and
// tile_grad, triu and triu_grad, expand_as, unbind, slice, strided_slice, pad): cases by type
// and by name, every error as a thrown spmd_error with its message, and the forward ->
// backward round trip of every non-grad rule.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/dist/format.hpp>
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace shape_rules_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using ints = std::vector<std::int64_t>;
using V = std::vector<dist_tensor_spec>;

const process_mesh mesh({2, 4});
const ctspmd_test::on_mesh spec{mesh};
const auto inv = error_kind::invalid_argument;

/// One round-trip case: inputs, the forward outputs' shapes, the attributes.
template <class Rule>
struct rt_case {
  std::vector<dist_tensor_spec> in;
  std::vector<tensor_shape> out;
  typename Rule::attributes attrs{};
};

/// Runs `gen` (which may decline a draw) `draws` times and checks the round trip of each case;
/// returns how many were checked (forward accepted them).
template <class Rule, class Gen>
int roundtrips(std::uint64_t seed, int draws, Gen gen) {
  ctspmd_test::rng r(seed);
  int checked = 0;
  for (int n = 0; n < draws; ++n) {
    const process_mesh m = ctspmd_test::random_mesh(r);
    const std::optional<rt_case<Rule>> c = gen(r, m);
    if (!c) continue;
    checked += ctspmd_test::check_roundtrip<Rule>(c->in, c->out, c->attrs) ? 1 : 0;
  }
  return checked;
}

/// A random shape of `rank` dims (sizes multiples of 12, or 1 one time in `one_in`).
tensor_shape random_shape(ctspmd_test::rng& r, std::int64_t rank, int one_in = 0) {
  tensor_shape s;
  for (std::int64_t d = 0; d < rank; ++d) s.push_back(one_in > 0 && r.uniform(1, one_in) == 1 ? 1 : 12 * r.uniform(1, 2));
  return s;
}
dist_tensor_spec random_spec(ctspmd_test::rng& r, const process_mesh& m, const tensor_shape& s) {
  return {s, {m, ctspmd_test::random_dims_mapping(r, s.size(), m.ndim())}};
}

// ==== squeeze / unsqueeze ===========================================================================

TEST_CASE("squeeze and unsqueeze") {
  const auto x = spec({1, 8, 1, 16}, {-1, 0, -1, 1});
  const auto f = rules::squeeze::infer_forward({x}, {.axis = {0, 2}});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{0, 1});
  CHECK(runtime::infer_forward("squeeze", V{x}, {{"axis", ints{0, 2}}}) == f);
  CHECK(runtime::infer_forward("squeeze", V{x}, {{"axis", ints{-4}}}, semantics::phi).outputs[0].dims_mapping() ==
        dims_mapping{0, -1, 1});
  const auto u = runtime::infer_forward("unsqueeze2", V{spec({8, 16}, {0, 1})}, {{"axis", ints{1, 2}}});
  CHECK(u.outputs[0].dims_mapping() == dims_mapping{0, -1, -1, 1});
  CHECK(u == rules::unsqueeze::infer_forward({spec({8, 16}, {0, 1})}, {.axis = {1, 2}}));
  CHECK(runtime::infer_backward("unsqueeze", V{spec({8, 16}, {-1, -1})}, V{spec({8, 16, 1}, {1, 0, -1})},
                                {{"axis", ints{-1}}})
            .inputs[0]
            .dims_mapping() == dims_mapping{1, 0});

  check_error([&] { (void)rules::squeeze::infer_forward({x}, {.axis = {4}}); }, inv,
              "squeeze: axis entry 4 is out of range for x of rank 4");
  check_error([&] { (void)rules::unsqueeze::infer_forward({spec({8, 16}, {0, 1})}, {.axis = {0, 4}}); }, inv,
              "unsqueeze: axis entry 4 is out of range [-4, 3] for an insertion into rank 3");
  check_error([&] { (void)rules::squeeze::infer_backward({x}, {spec({8, 15}, {-1, -1})}, {.axis = {0, 2}}); }, inv,
              "squeeze: output dim 1 has size 15, but the target shape gives 16");
}

TEST_CASE("squeeze and unsqueeze forward -> backward round trip") {
  const int sq = roundtrips<rules::squeeze>(21, 400, [](ctspmd_test::rng& r, const process_mesh& m) {
    rt_case<rules::squeeze> c;
    const auto rank = r.uniform(0, 4);
    const auto s = random_shape(r, rank, 3);
    c.in.push_back(random_spec(r, m, s));
    tensor_shape o;
    for (std::int64_t d = 0; d < rank; ++d) {
      const bool listed = r.coin();
      if (listed) c.attrs.axis.push_back(r.coin() ? d : d - rank);
      if (!(listed && s[static_cast<std::size_t>(d)] == 1)) o.push_back(s[static_cast<std::size_t>(d)]);
    }
    if (c.attrs.axis.empty()) {  // every size-1 dim
      o.clear();
      for (auto v : s)
        if (v != 1) o.push_back(v);
    }
    c.out.push_back(o);
    return std::optional(c);
  });
  CHECK(sq > 300);
  const int usq = roundtrips<rules::unsqueeze>(22, 400, [](ctspmd_test::rng& r, const process_mesh& m) {
    rt_case<rules::unsqueeze> c;
    const auto rank = r.uniform(0, 4);
    const auto s = random_shape(r, rank, 4);
    c.in.push_back(random_spec(r, m, s));
    std::vector<std::int64_t> o(s.begin(), s.end());
    for (std::int64_t i = 0, n = r.uniform(0, 3); i < n; ++i) {
      const auto cur = static_cast<std::int64_t>(o.size());
      const auto a = r.uniform(-(cur + 1), cur);
      c.attrs.axis.push_back(a);
      o.insert(o.begin() + (a < 0 ? a + cur + 1 : a), 1);
    }
    c.out.push_back(tensor_shape(o));
    return std::optional(c);
  });
  CHECK(usq > 300);
}

// ==== the reshapes' gradient =======================================================================

TEST_CASE("reshape_grad (flatten_grad, reshape_grad, squeeze_grad, unsqueeze_grad)") {
  const std::vector<dist_tensor_spec> in{spec({8, 16, 8, 24}, {-1, -1, -1, -1}), spec({8, 128, 24}, {0, 1, -1})};
  const auto g = rules::reshape_grad::infer_forward(in);
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{0, 1, -1, -1});
  for (const char* name : {"flatten_grad", "reshape_grad", "squeeze_grad", "unsqueeze_grad"})
    CHECK_MESSAGE(runtime::infer_forward(name, in) == g, name);
  check_error([&] { (void)rules::reshape_grad::infer_forward({in[0], spec({8, 16}, {-1, -1})}); }, inv,
              "reshape_grad: out_grad has 128 elements (rank 2), but x has 24576 (rank 4)");
  check_error([&] { (void)runtime::infer_backward("squeeze_grad", in, V{in[0]}); }, error_kind::unimplemented,
              "a grad rule has no reverse inference");
}

// ==== tile / tile_grad ==============================================================================

TEST_CASE("tile and tile_grad") {
  // Paddle's test_tile_rule.py
  const auto x = spec({16, 16, 16}, {0, -1, 1});
  const auto f = runtime::infer_forward("tile", V{x}, {{"repeat_times", ints{2, 2, 1, 1}}});
  CHECK(f.inputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{-1, -1, -1, 1});
  const auto g = runtime::infer_forward("tile_grad", V{spec({16, 16, 16}, {-1, -1, -1}), spec({2, 32, 16, 16}, {0, -1, -1, 1})},
                                        {{"repeat_times", ints{2, 2, 1, 1}}}, semantics::phi);
  CHECK(g.outputs[0].dims_mapping() == dims_mapping{-1, -1, 1});
  CHECK(g.outputs[0].partial_dims() == mesh_dims{0});
  check_error([&] { (void)rules::tile::infer_forward({x}, {.repeat_times = {2, 0}}); }, inv,
              "tile: repeat_times entry 1 is 0; a repeat count is positive");
  check_error([&] { (void)rules::tile::infer_backward({x}, {spec({32, 16, 16}, {-1, -1, -1})}, {.repeat_times = {2, 2, 1, 1}}); },
              inv, "tile: the output has rank 3, but tiling x gives rank 4");
  check_error(
      [&] {
        (void)rules::tile_grad::infer_forward({spec({16, 16}, {-1, -1}), spec({16, 16}, {-1, -1})}, {.repeat_times = {2, 1}});
      },
      inv, "tile_grad: out_grad dim 0 has size 16, but tiling x gives 32");
}

TEST_CASE("tile forward -> backward round trip") {
  const int n = roundtrips<rules::tile>(23, 400, [](ctspmd_test::rng& r, const process_mesh& m) {
    rt_case<rules::tile> c;
    const auto rank = r.uniform(0, 3);
    const auto s = random_shape(r, rank, 4);
    c.in.push_back(random_spec(r, m, s));
    const auto k = r.uniform(0, rank + 2);
    for (std::int64_t i = 0; i < k; ++i) c.attrs.repeat_times.push_back(r.coin() ? 1 : r.uniform(2, 3));
    const auto n_out = std::max(rank, k);
    tensor_shape o;
    for (std::int64_t j = 0; j < n_out; ++j) {
      const auto xi = j - (n_out - rank);
      const auto ri = j - (n_out - k);
      o.push_back((xi >= 0 ? s[static_cast<std::size_t>(xi)] : 1) *
                  (ri >= 0 ? c.attrs.repeat_times[static_cast<std::size_t>(ri)] : 1));
    }
    c.out.push_back(o);
    return std::optional(c);
  });
  CHECK(n > 300);
}

// ==== triu / triu_grad =============================================================================

TEST_CASE("triu, tril_triu and triu_grad") {
  const auto x = spec({8, 16, 16}, {0, 1, -1});
  const auto f = rules::triu::infer_forward({x}, {.diagonal = 1});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(runtime::infer_forward("triu", V{x}, {{"diagonal", std::int64_t{1}}}) == f);
  CHECK(runtime::infer_forward("tril_triu", V{x}, {{"diagonal", std::int64_t{0}}, {"lower", true}}) == f);
  CHECK(runtime::infer_forward("triu_grad", V{x}, {{"diagonal", std::int64_t{1}}}) == f);
  check_error([&] { (void)rules::triu::infer_forward({spec({8}, {0})}); }, inv,
              "triu: x has rank 1, but the mask needs rank >= 2");
  check_error([&] { (void)rules::triu_grad::infer_forward({spec({8}, {0})}); }, inv,
              "triu_grad: x has rank 1, but the mask needs rank >= 2");
}

TEST_CASE("triu forward -> backward round trip") {
  const int n = roundtrips<rules::triu>(24, 300, [](ctspmd_test::rng& r, const process_mesh& m) {
    rt_case<rules::triu> c;
    const auto s = random_shape(r, r.uniform(2, 4));
    c.in.push_back(random_spec(r, m, s));
    c.out.push_back(s);
    c.attrs.diagonal = r.uniform(-2, 2);
    return std::optional(c);
  });
  CHECK(n == 300);
}

// ==== expand_as ====================================================================================

TEST_CASE("expand_as") {
  const std::vector<dist_tensor_spec> in{spec({1, 16}, {-1, 1}), spec({4, 8, 16}, {1, 0, -1})};
  const auto f = runtime::infer_forward("expand_as", in);
  CHECK(f.inputs[0].dims_mapping() == dims_mapping{-1, -1});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{1, 0, -1});
  const dist_tensor_spec absent{{}, {mesh, dims_mapping{}}};
  CHECK(runtime::infer_forward("expand_as", V{spec({8, 1}, {0, -1}), absent}, {{"target_shape", ints{3, 8, 5}}})
            .outputs[0]
            .dims_mapping() == dims_mapping{-1, 0, -1});
  check_error([&] { (void)rules::expand_as::infer_forward({spec({3, 16}, {-1, -1}), in[1]}); }, inv,
              "expand_as: x dim 0 has size 3, which neither equals target dim 1 (8) nor is 1");
  check_error([&] { (void)rules::expand_as::infer_forward({spec({8}, {-1}), absent}); }, inv,
              "expand_as: x has rank 1, above the target shape's rank 0");
}

TEST_CASE("expand_as forward -> backward round trip") {
  const int n = roundtrips<rules::expand_as>(25, 400, [](ctspmd_test::rng& r, const process_mesh& m) {
    rt_case<rules::expand_as> c;
    const auto k = r.uniform(0, 4);
    const auto ys = random_shape(r, k);
    tensor_shape xs;
    for (std::int64_t i = r.uniform(0, k); i < k; ++i) xs.push_back(r.coin() ? 1 : ys[static_cast<std::size_t>(i)]);
    c.in.push_back(random_spec(r, m, xs));
    c.in.push_back(random_spec(r, m, ys));
    c.out.push_back(ys);
    return std::optional(c);
  });
  CHECK(n == 400);
}

// ==== unbind =======================================================================================

TEST_CASE("unbind") {
  // Paddle's test_unbind_rule.py
  const process_mesh m23({2, 3});
  const dist_tensor_spec x({64, 2, 48}, {m23, {0, -1, 1}});
  const auto f = runtime::infer_forward("unbind", V{x}, {{"axis", std::int64_t{1}}});
  REQUIRE(f.outputs.size() == 2);
  CHECK(f.outputs[1].dims_mapping() == dims_mapping{0, 1});
  check_error([&] { (void)rules::unbind::infer_forward({x}, {.axis = 3}); }, inv,
              "unbind: axis 3 is out of range for x of rank 3");
  check_error([&] { (void)rules::unbind::infer_forward({dist_tensor_spec({64, -1}, {m23, {-1, -1}})}, {.axis = 1}); },
              inv, "unbind: x has size -1 on axis 1: unbind needs a known size in [1, 16] (one output per slice)");
  check_error(
      [&] {
        (void)rules::unbind::infer_backward({x}, {dist_tensor_spec({64, 48}, {m23, {0, 1}})}, {.axis = 1});
      },
      inv, "unbind: x has size 2 on axis 1, so 2 outputs, but got 1");
}

TEST_CASE("unbind forward -> backward round trip") {
  const int n = roundtrips<rules::unbind>(26, 300, [](ctspmd_test::rng& r, const process_mesh& m) {
    rt_case<rules::unbind> c;
    const auto rank = r.uniform(1, 4);
    auto s = random_shape(r, rank);
    const auto axis = r.uniform(-rank, rank - 1);
    const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
    s[a] = r.uniform(1, 4);
    c.in.push_back(random_spec(r, m, s));
    c.attrs.axis = axis;
    tensor_shape o;
    for (std::size_t d = 0; d < s.size(); ++d)
      if (d != a) o.push_back(s[d]);
    c.out.assign(static_cast<std::size_t>(s[a]), o);
    return std::optional(c);
  });
  CHECK(n == 300);
}

// ==== slice / strided_slice ========================================================================

TEST_CASE("slice and strided_slice") {
  const auto x = spec({16, 32, 48}, {0, 1, -1});
  const auto f = runtime::infer_forward("slice", V{x},
                                        {{"axes", ints{1}}, {"starts", ints{4}}, {"ends", ints{12}}, {"infer_flags", ints{1}},
                                         {"decrease_axis", ints{}}});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  const auto s = runtime::infer_forward("strided_slice", V{x},
                                        {{"axes", ints{0}}, {"starts", ints{0}}, {"ends", ints{16}}, {"strides", ints{2}}});
  CHECK(s.outputs[0].dims_mapping() == dims_mapping{-1, 1, -1});
  check_error([&] { (void)rules::slice::infer_forward({x}, {.axes = {0, 1}, .starts = {0}, .ends = {1, 1}}); }, inv,
              "slice: axes has 2 entries, but starts has 1 and ends 2");
  check_error(
      [&] {
        (void)rules::slice::infer_forward({x}, {.axes = {0}, .starts = {0}, .ends = {2}, .decrease_axis = {0}});
      },
      inv, "slice: decrease_axis drops dim 0, but its slice holds 2 elements, not 1");
  check_error(
      [&] {
        (void)rules::strided_slice::infer_forward({x}, {.axes = {0}, .starts = {0}, .ends = {1}, .strides = {0}});
      },
      inv, "strided_slice: strides entry 0 is 0");
}

TEST_CASE("slice forward -> backward round trip") {
  const int n = roundtrips<rules::slice>(27, 300, [](ctspmd_test::rng& r, const process_mesh& m) {
    rt_case<rules::slice> c;
    const auto rank = r.uniform(1, 4);
    const auto s = random_shape(r, rank);
    c.in.push_back(random_spec(r, m, s));
    tensor_shape o;
    for (std::int64_t d = 0; d < rank; ++d) {
      const auto size = s[static_cast<std::size_t>(d)];
      if (r.coin()) {
        o.push_back(size);
        continue;
      }
      const auto b = r.uniform(0, size - 1);
      const auto e = r.uniform(b + 1, size);
      c.attrs.axes.push_back(d);
      c.attrs.starts.push_back(b);
      c.attrs.ends.push_back(e);
      if (e - b == 1 && r.coin())
        c.attrs.decrease_axis.push_back(d);
      else
        o.push_back(e - b);
    }
    c.out.push_back(o);
    return std::optional(c);
  });
  CHECK(n == 300);
}

// ==== pad ==========================================================================================

TEST_CASE("pad") {
  const auto x = spec({8, 16, 4}, {0, 1, -1});
  const auto f = runtime::infer_forward("pad", V{x}, {{"paddings", ints{0, 0, 1, 2, 0, 0}}, {"pad_value", 0.5}});
  CHECK(f.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  check_error([&] { (void)rules::pad::infer_forward({x}, {.paddings = {0, 0}}); }, inv,
              "pad: paddings has 2 entries, but x of rank 3 needs 6");
  check_error([&] { (void)rules::pad::infer_forward({x}, {.paddings = {0, 0, 0, -1, 0, 0}}); }, inv,
              "pad: dim 1 has paddings 0 and -1; a padding is >= 0");
}

TEST_CASE("pad forward -> backward round trip") {
  const int n = roundtrips<rules::pad>(28, 300, [](ctspmd_test::rng& r, const process_mesh& m) {
    rt_case<rules::pad> c;
    const auto s = random_shape(r, r.uniform(0, 4));
    c.in.push_back(random_spec(r, m, s));
    tensor_shape o;
    for (auto v : s) {
      const auto before = r.coin() ? 0 : r.uniform(1, 3);
      const auto after = r.coin() ? 0 : r.uniform(1, 3);
      c.attrs.paddings.push_back(before);
      c.attrs.paddings.push_back(after);
      o.push_back(v + before + after);
    }
    c.out.push_back(o);
    return std::optional(c);
  });
  CHECK(n == 300);
}

TEST_CASE("strided_slice forward -> backward round trip") {
  const int n = roundtrips<rules::strided_slice>(29, 300, [](ctspmd_test::rng& r, const process_mesh& m) {
    rt_case<rules::strided_slice> c;
    const auto rank = r.uniform(1, 4);
    const auto s = random_shape(r, rank);
    c.in.push_back(random_spec(r, m, s));
    tensor_shape o = s;
    for (std::int64_t d = 0; d < rank; ++d) {
      if (r.coin()) continue;
      const auto size = s[static_cast<std::size_t>(d)];
      const auto step = r.coin() ? r.uniform(1, 3) : -r.uniform(1, 3);
      const auto b = r.uniform(-size, size - 1);
      const auto e = r.uniform(-size - 1, size);
      c.attrs.axes.push_back(d);
      c.attrs.starts.push_back(b);
      c.attrs.ends.push_back(e);
      c.attrs.strides.push_back(step);
      o[static_cast<std::size_t>(d)] = rules::detail::slice_length(size, b, e, step);
    }
    c.out.push_back(o);
    return std::optional(c);
  });
  CHECK(n == 300);
}

}  // namespace shape_rules_test
