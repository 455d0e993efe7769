// Declared output shapes at run time: a plan built at run time whose outputs do not have the
// shapes the rules derive throws spmd_error naming the operator; and, for every registered rule
// that derives its output shapes, the shapes it derives have the ranks its forward inference
// gives its outputs (a shape function and a rule that disagree are caught here).
#include <ctspmd/model/propagate.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "check_error.hpp"
#include "roundtrip.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace output_shapes_test {

using namespace ctspmd;
using model::tensor_id;

TEST_CASE("a plan built at run time with a wrong output shape throws at that operator") {
  const process_mesh mesh({2, 4});
  const std::int64_t k = 32;  // a run-time value
  const auto build = [&](const tensor_shape& w_shape, const tensor_shape& y_shape, std::string_view label) {
    model::plan<8, 4> p(mesh);
    auto x = p.tensor("x", {8, 16, k}, {0, -1, -1});
    p.op<"relu">({x}, {p.tensor("x1", {8, 16, k})});
    auto w = p.tensor("w", w_shape, {-1, 1});
    p.op<"matmul">({x, w}, {p.tensor("y", y_shape)}, {}, label);
    return p;
  };
  CHECK(build({k, 64}, {8, 16, 64}, "proj").op_count() == 2);
  ctspmd_test::check_error([&] { (void)build({k, 64}, {8, 16, 65}, "proj"); }, error_kind::invalid_argument,
                           "proj: operator 1: the output is declared with size 65 at dim 2, but the rule derives size 64");
  ctspmd_test::check_error([&] { (void)build({k, 64}, {8, 64}, ""); }, error_kind::invalid_argument,
                           "matmul: operator 1: output 0 is declared with rank 2, but the rule infers rank 3");
  // The inputs' shapes themselves (k 32 against 33), under the operator's label.
  ctspmd_test::check_error([&] { (void)build({k + 1, 64}, {8, 16, 64}, "proj"); }, error_kind::invalid_argument,
                           "proj: x's k size 32 differs from y's 33");
  // An operator with several outputs names the output.
  ctspmd_test::check_error(
      [&] {
        model::plan<8, 4> p(mesh);
        auto x = p.tensor("x", {8, 12});
        p.op<"split">({x}, {p.tensor("a", {8, 6}), p.tensor("b", {8, 5})}, {.num = 2, .axis = 1});
      },
      error_kind::invalid_argument,
      "split: operator 0: output 1 is declared with a size at dim 1 other than the size 6 the rule derives");
}

using ctspmd_test::rng;

// Random inputs for a rule: a number of inputs its input_count accepts, shapes drawn so that
// often enough they fit together (one shape for all, suffixes of one shape, windows sliding
// along one list of sizes as a matmul chain's, or independent), sizes from {1, 2, 4, 6}, and
// sometimes -1 (unknown).
std::vector<tensor_shape> random_shapes(rng& r, operand_count count) {
  const std::size_t hi = count.max < count.min + 3 ? count.max : count.min + 3;
  const auto n = static_cast<std::size_t>(r.uniform(static_cast<std::int64_t>(count.min), static_cast<std::int64_t>(hi)));
  constexpr std::int64_t sizes[] = {1, 2, 4, 6};
  std::vector<std::int64_t> base(40);  // (windows slide by at most 3 per input)
  for (auto& s : base) s = sizes[r.uniform(0, 3)];
  const auto strategy = r.uniform(0, 3);
  const auto rank = static_cast<std::size_t>(r.uniform(0, 4));
  std::vector<tensor_shape> shapes;
  std::size_t start = 0;
  for (std::size_t i = 0; i < n; ++i) {
    tensor_shape s;
    const std::size_t ri = strategy == 3 ? static_cast<std::size_t>(r.uniform(0, 4))
                          : strategy == 1 && r.coin() && rank > 0 ? rank - 1
                                                                   : rank;
    const std::size_t from = strategy == 2 ? start : strategy == 3 ? static_cast<std::size_t>(r.uniform(0, 6)) : rank - ri;
    for (std::size_t d = 0; d < ri; ++d) s.push_back(base[from + d]);
    if (strategy == 2 && ri > 0) start = from + ri - 1;  // the next input starts at this one's last size
    if (!s.empty() && r.uniform(0, 9) == 0) s[static_cast<std::size_t>(r.uniform(0, static_cast<std::int64_t>(s.size()) - 1))] = -1;
    shapes.push_back(s);
  }
  return shapes;
}

// Inputs for a rule whose operands the generic draw above does not fit together: drawn to fit.
template <class R>
std::vector<tensor_shape> random_inputs(rng& r) {
  const auto size = [&] { return r.uniform(1, 3) * 2; };
  const std::int64_t b = size(), s = size(), h = 4, hk = r.coin() ? 4 : 2, d = size(), e = size();
  if constexpr (std::is_same_v<R, rules::c_embedding_grad>) {  // weight, x, out_grad
    return {{e, d}, {b, s}, {b, s, d}};
  } else if constexpr (std::is_same_v<R, rules::flash_attention_grad>) {  // q, k, v, out, lse, seed, mask, out_grad
    return {{b, s, h, d}, {b, e, hk, d}, {b, e, hk, 2}, {b, s, h, 2}, {b, h, s}, {2}, {}, {b, s, h, 2}};
  } else if constexpr (std::is_same_v<R, rules::fused_rope>) {  // q, k, v, sin, cos, position_ids (all but q optional)
    const auto maybe = [&](tensor_shape t) { return r.coin() ? tensor_shape{} : t; };
    return {{b, s, h, d}, maybe({b, s, hk, d}), maybe({b, s, hk, d}), maybe({1, s, 1, d}), maybe({1, s, 1, d}), maybe({b, s})};
  } else if constexpr (std::is_same_v<R, rules::fused_rope_grad>) {  // sin, cos, position_ids, the out grads
    const auto maybe = [&](tensor_shape t) { return r.coin() ? tensor_shape{} : t; };
    return {maybe({1, s, 1, d}), maybe({1, s, 1, d}), maybe({b, s}), {b, s, h, d}, maybe({b, s, hk, d}), maybe({b, s, hk, d})};
  } else if constexpr (std::is_same_v<R, rules::layer_norm_grad>) {  // x, scale, bias, mean, variance, out_grad
    const bool affine = r.coin();
    return {{b, s, d}, affine ? tensor_shape{d} : tensor_shape{}, affine ? tensor_shape{d} : tensor_shape{}, {b, s}, {b, s},
            {b, s, d}};
  } else if constexpr (std::is_same_v<R, rules::moe_gate_dispatch_grad>) {
    // combine_weights [S, K], scatter_index [K, S], expert_id [S, K], grad_y [E, C, H], grad_combine_weights [S, K]
    return {{s, 2}, {2, s}, {s, 2}, {e, 3, d}, {s, 2}};
  } else {
    return random_shapes(r, R::input_count);
  }
}

// Attributes for a rule that takes none by default that fit, drawn for the inputs.
template <class R>
typename R::attributes random_attributes(rng& r, const std::vector<tensor_shape>& in) {
  typename R::attributes a{};
  const auto rank = in.empty() ? std::size_t{0} : in[0].size();
  const auto some_axis = [&] { return rank == 0 ? std::int64_t{0} : r.uniform(-static_cast<std::int64_t>(rank), static_cast<std::int64_t>(rank) - 1); };
  if constexpr (std::is_same_v<R, rules::split>) {
    a.axis = some_axis();
    if (r.coin())
      a.num = r.uniform(1, 2);
    else
      a.sections = {r.uniform(0, 2), -1};
  } else if constexpr (std::is_same_v<R, rules::transpose> || std::is_same_v<R, rules::transpose_grad>) {
    for (std::size_t d = 0; d < rank; ++d) a.perm.push_back(static_cast<std::int64_t>(rank - 1 - d));
  } else if constexpr (std::is_same_v<R, rules::reshape>) {
    a.shape = r.coin() ? static_vector<std::int64_t, max_rank>{-1} : static_vector<std::int64_t, max_rank>{0, -1};
  } else if constexpr (std::is_same_v<R, rules::slice> || std::is_same_v<R, rules::slice_grad>) {
    a.axes = {some_axis()}, a.starts = {0}, a.ends = {1};
    if (r.coin()) a.decrease_axis = a.axes;
  } else if constexpr (std::is_same_v<R, rules::strided_slice> || std::is_same_v<R, rules::strided_slice_grad>) {
    a.axes = {some_axis()}, a.starts = {0}, a.ends = {6}, a.strides = {r.uniform(1, 3)};
  } else if constexpr (std::is_same_v<R, rules::tile> || std::is_same_v<R, rules::tile_grad>) {
    for (std::int64_t d = r.uniform(0, 3); d > 0; --d) a.repeat_times.push_back(r.uniform(1, 3));
  } else if constexpr (std::is_same_v<R, rules::unsqueeze>) {
    a.axis = {0};
  } else if constexpr (std::is_same_v<R, rules::pad> || std::is_same_v<R, rules::pad_grad>) {
    for (std::size_t d = 0; d < 2 * rank && d < rules::max_paddings; ++d) a.paddings.push_back(r.uniform(0, 1));
  } else if constexpr (std::is_same_v<R, rules::one_hot>) {
    a.num_classes = r.uniform(1, 5);
  } else if constexpr (std::is_same_v<R, rules::moe_gate_dispatch>) {
    a.k = 1, a.capacity = r.uniform(1, 4);
  } else if constexpr (std::is_same_v<R, rules::layer_norm_grad>) {
    a.begin_norm_axis = 2;
  } else if constexpr (std::is_same_v<R, rules::dynamic_einsum>) {
    // Elementwise as einsum: each input right-aligned on the longest one's letters.
    static std::string notation;  // (the attribute is a view)
    std::size_t longest = 0;
    for (const auto& s : in) longest = s.size() > longest ? s.size() : longest;
    constexpr std::string_view letters = "abcd";
    notation.clear();
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (i > 0) notation.push_back(',');
      notation.append(letters.substr(longest - in[i].size(), in[i].size()));
    }
    notation.append("->");
    notation.append(letters.substr(0, longest));
    a.notation = notation;
  } else if constexpr (requires { a.axis = std::int64_t{}; }) {
    if (r.coin()) a.axis = some_axis();
  }
  return a;
}

struct coverage {
  std::string_view name;
  int accepted = 0;  // cases that forward and output_shapes both accept
};

template <class R>
coverage check_rule(const process_mesh& mesh) {
  rng r(0x5eed0000 + R::name.size() * 131 + static_cast<std::uint64_t>(R::name[0]));
  coverage c{R::name};
  for (int trial = 0; trial < 600; ++trial) {
    const auto shapes = random_inputs<R>(r);
    const auto attrs = random_attributes<R>(r, shapes);
    std::vector<dist_tensor_spec> in;
    for (const auto& s : shapes) in.emplace_back(s, mesh);
    const auto fwd = R::try_infer_forward(std::span<const dist_tensor_spec>(in), attrs);
    const auto derived = R::try_output_shapes(std::span<const dist_tensor_spec>(in), attrs);
    if (!fwd || !derived) continue;
    ++c.accepted;
    INFO(R::name, ": inputs ", shapes.size(), ", case ", trial);
    REQUIRE(derived->size() == fwd->outputs.size());
    for (std::size_t j = 0; j < derived->size(); ++j) CHECK((*derived)[j].size() == fwd->outputs[j].rank());
    // Backward inference, which checks its outputs' shapes against the inputs', accepts outputs of
    // the derived shapes (with forward's layouts). Grad rules have none.
    std::vector<dist_tensor_spec> out;
    for (std::size_t j = 0; j < derived->size(); ++j) out.emplace_back((*derived)[j], fwd->outputs[j]);
    const auto bwd = R::try_infer_backward(std::span<const dist_tensor_spec>(in), std::span<const dist_tensor_spec>(out), attrs);
    if (!bwd && bwd.error().kind == error_kind::invalid_argument) FAIL_CHECK(to_string(bwd.error()));
  }
  return c;
}

template <class... R>
std::vector<coverage> check_all(rules::rule_list<R...>, const process_mesh& mesh) {
  std::vector<coverage> all;
  (
      [&] {
        if constexpr (HasOutputShapes<R>) all.push_back(check_rule<R>(mesh));
      }(),
      ...);
  return all;
}

TEST_CASE("output_shapes: the derived shapes have the ranks forward inference gives") {
  const auto all = check_all(rules::registered_rules{}, process_mesh({2, 2}));
  CHECK(all.size() >= 100);
  std::string uncovered;
  for (const auto& c : all)
    if (c.accepted == 0) uncovered += std::string(c.name) + " ";
  CHECK_MESSAGE(uncovered.empty(), "no accepted case for: " << uncovered);
}

}  // namespace output_shapes_test
