// The by-name runtime layer: the table generated from the registry, attribute conversion
// through Hana reflection, and every validation error.
#include <ctspmd/runtime.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"

#include <algorithm>
#include <string>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace runtime_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using runtime::attribute_map;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};
const std::vector<dist_tensor_spec> mm_in{spec({64, 32}, {1, 0}), spec({32, 48}, {-1, -1})};

TEST_CASE("the by-name table holds every registry name, sorted") {
  CHECK(runtime::rule_table.size() == rules::registry.size());
  for (std::size_t i = 1; i < runtime::rule_table.size(); ++i)
    CHECK(runtime::rule_table[i - 1].name < runtime::rule_table[i].name);
  for (const auto& e : rules::registry) CHECK_MESSAGE(runtime::has_rule(e.name), std::string(e.name));
  CHECK_FALSE(runtime::has_rule("matmull"));
  CHECK_FALSE(runtime::has_rule(""));
}

TEST_CASE("a by-name call gives the typed call's answer") {
  CHECK(runtime::infer_forward("matmul", mm_in) == rules::matmul::infer_forward(mm_in));
  const std::vector<dist_tensor_spec> t_in{spec({32, 64}, {0, 1}), spec({32, 48}, {-1, -1})};
  CHECK(runtime::infer_forward("matmul", t_in, {{"trans_x", true}}) ==
        rules::matmul::infer_forward(t_in, {.trans_x = true}));
  const std::vector<dist_tensor_spec> out{spec({64, 48}, {0, 1})};
  CHECK(runtime::infer_backward("matmul", mm_in, out) == rules::matmul::infer_backward(mm_in, out));
  const std::vector<dist_tensor_spec> emb{spec({4, 16}, {1, -1}), spec({512, 768}, {0, -1})};
  CHECK(runtime::infer_forward("lookup_table_v2", emb) == rules::embedding::infer_forward(emb));
  CHECK(runtime::infer_forward("einsum", mm_in, {{"notation", std::string("mk,kn->mn")}}) ==
        rules::matmul::infer_forward(mm_in));
}

TEST_CASE("attributes are converted by reflection, with defaults and type checks") {
  const auto a = runtime::to_attributes<rules::embedding_attributes>("embedding", {{"sparse", true}});
  CHECK(a.sparse);
  CHECK(a.padding_idx == -1);  // absent: the default
  const auto d = runtime::describe_attributes<rules::matmul_attributes>();
  REQUIRE(d.size() == 2);
  CHECK(d[0].name == "trans_x");
  CHECK(d[0].type == "bool");
  CHECK(d[0].default_value == runtime::attribute(false));

  check_error([] { (void)runtime::infer_forward("matmul", mm_in, {{"trans_x", std::int64_t{1}}}); },
              error_kind::invalid_argument, "matmul: attribute 'trans_x' must be bool, not int");
  check_error([] { (void)runtime::infer_forward("matmul", mm_in, {{"trans_y", 1.0}}); }, error_kind::invalid_argument,
              "attribute 'trans_y' must be bool, not float");
  check_error([] { (void)runtime::infer_forward("embedding", mm_in, {{"padding_idx", std::string("0")}}); },
              error_kind::invalid_argument, "attribute 'padding_idx' must be int, not string");
  check_error([] { (void)runtime::infer_forward("embedding", mm_in, {{"padding_idx", std::vector<std::int64_t>{0}}}); },
              error_kind::invalid_argument, "attribute 'padding_idx' must be int, not int list");
  check_error([] { (void)runtime::infer_forward("matmul", mm_in, {{"transpose", true}}); },
              error_kind::invalid_argument, "matmul: unknown attribute 'transpose'; accepted: trans_x, trans_y");
  // The error names the operator as it was called.
  check_error([] { (void)runtime::infer_forward("lookup_table_v2", mm_in, {{"sparse", true}, {"x", true}}); },
              error_kind::invalid_argument, "lookup_table_v2: unknown attribute 'x'; accepted: padding_idx, sparse");
}

TEST_CASE("unknown operators are not_found, with the closest names") {
  check_error([] { (void)runtime::infer_forward("matmull", mm_in); }, error_kind::not_found,
              "no rule is registered for operator 'matmull'; closest: matmul");
  check_error([] { (void)runtime::infer_forward("lookup_table", mm_in); }, error_kind::not_found,
              "closest: lookup_table_v2");
  check_error([] { (void)runtime::infer_backward("qqqqqqqq", mm_in, mm_in); }, error_kind::not_found,
              "no rule is registered for operator 'qqqqqqqq'");
}

TEST_CASE("rule errors carry the called name") {
  check_error([] { (void)runtime::infer_forward("matmul", std::span(mm_in).first(1)); }, error_kind::invalid_argument,
              "matmul: expects 2 inputs, got 1");
  const std::vector<dist_tensor_spec> conflict{spec({4, 16}, {0, -1}), spec({512, 768}, {0, -1})};
  check_error([&] { (void)runtime::infer_forward("lookup_table_v2", conflict); }, error_kind::precondition_not_met,
              "lookup_table_v2: tensor axes 'a' and 'j' are sharded by the same mesh dim 0");
  const std::vector<dist_tensor_spec> other_mesh{spec({4, 4}, {-1, -1}), dist_tensor_spec({4, 4}, process_mesh({6}))};
  check_error([&] { (void)runtime::infer_forward("matmul", other_mesh); }, error_kind::invalid_argument,
              "matmul: input 1 is on another process mesh");
  check_error([] { (void)runtime::infer_forward("einsum", mm_in, {{"notation", std::string("mk,kn")}}); },
              error_kind::invalid_argument, "einsum: notation position 5: no '->' before the output");
}

TEST_CASE("operands are validated when they are built") {
  // The runtime layer takes dist_tensor_specs, whose constructors reject what is invalid.
  check_error([] { (void)tensor_shape(10, 1); }, error_kind::invalid_argument, "exceed");
  check_error([] { (void)spec({4, 4}, {0, 0}); }, error_kind::invalid_argument, "mesh dim 0 shards both tensor dim 0");
  check_error([] { (void)spec({4, 4}, {2, -1}); }, error_kind::invalid_argument, "is not -1 or a mesh dim in [0, 2)");
  check_error([] { (void)spec({4, 4}, {0}); }, error_kind::invalid_argument, "the dims mapping has 1 entries but the tensor has rank 2");
  check_error([] { (void)spec({4, -3}, {0, -1}); }, error_kind::invalid_argument, "tensor dim 1 has size -3");
  check_error(
      [] {
        tensor_dist_attr a(mesh, {-1, -1});
        a.set_partial_status({2});
      },
      error_kind::invalid_argument, "partial dim 2 is not a mesh dim in [0, 2)");
}

TEST_CASE("phi's attribute names are accepted beside fluid's") {
  const std::vector<dist_tensor_spec> x{spec({8, 6}, {0, 1})};
  CHECK(runtime::infer_forward("sum", x, {{"axis", std::vector<std::int64_t>{1}}, {"keepdim", true}}) ==
        rules::reduction::infer_forward(x, {.axis = {1}, .keep_dim = true}));
  check_error([&] { runtime::infer_forward("sum", x, {{"keep_dim", true}, {"keepdim", false}}); },
              error_kind::invalid_argument, "sum: attribute 'keep_dim' is also given as 'keepdim'");
  const auto listed = runtime::rule("sum").attributes();
  CHECK(std::any_of(listed.begin(), listed.end(), [](const auto& a) { return a.name == "keep_dim" && a.alias == "keepdim"; }));
}

TEST_CASE("an attribute error names the operator and the attribute") {
  const std::vector<dist_tensor_spec> x{spec({8, 6}, {0, 1})};
  check_error([&] { runtime::infer_forward("sum", x, {{"axis", std::vector<std::int64_t>(20, 0)}}); },
              error_kind::invalid_argument, "sum: attribute 'axis' has 20 entries, above the 9 it can hold");
  check_error([&] { runtime::infer_forward("max", x, {{"reduce", std::string("median")}}); }, error_kind::invalid_argument,
              "max: attribute 'reduce' must be reduce type (sum, max, min, prod, avg, any, all), not \"median\"");
}

TEST_CASE("a by-name call takes the semantics") {
  const process_mesh m3({2, 2, 2});
  const std::vector<dist_tensor_spec> in{{{64, 32}, {m3, {{0}, {1}}}}, {{32, 48}, {m3, {{2}, {0}}}}};
  CHECK(runtime::infer_forward("matmul", in, {}, semantics::phi) == rules::matmul::infer_forward(in, {}, semantics::phi));
  CHECK_THROWS_AS(runtime::infer_forward("matmul", in), spmd_error);  // k on two mesh dims: fluid refuses
  const std::vector<dist_tensor_spec> out{{{64, 48}, {m3, {{0, 1}, {2}}}}};
  CHECK(runtime::infer_backward("matmul", in, out, {}, semantics::phi) ==
        rules::matmul::infer_backward(in, out, {}, semantics::phi));
}

}  // namespace runtime_test
