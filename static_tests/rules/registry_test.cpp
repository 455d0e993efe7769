#include <ctspmd/rules/registry.hpp>

#include <boost/hana/length.hpp>
#include <type_traits>

using namespace ctspmd;

// ---- compile-time lookup by every registered name -----------------------------------------
static_assert(std::is_same_v<rules::rule_for<"embedding">, rules::embedding>);
static_assert(std::is_same_v<rules::rule_for<"lookup_table_v2">, rules::embedding>);
static_assert(rules::has_rule<"embedding"> && rules::has_rule<"lookup_table_v2">);
static_assert(!rules::has_rule<"embeding"> && !rules::has_rule<"">);
static_assert(std::is_same_v<rules::rule_for<"matmul">, rules::matmul>);
static_assert(std::is_same_v<rules::rule_for<"einsum">, rules::dynamic_einsum>);
static_assert(decltype(boost::hana::length(rules::registry))::value == 4);

// ---- a looked-up rule is callable -------------------------------------------------------------
constexpr process_mesh mesh({4});
static_assert(rules::rule_for<"lookup_table_v2">::infer_forward(
                  {dist_tensor_spec({8}, {mesh, {0}}), dist_tensor_spec({100, 8}, {mesh, {-1, -1}})})
                  .outputs[0]
                  .dims_mapping() == dims_mapping{0, -1});
