// runtime::add_operator builds, by name, the operators the typed API builds.
#include <ctspmd/runtime/plan.hpp>

#include <doctest/doctest.h>

#include <memory>

#include "check_error.hpp"

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace runtime_plan_test {

using namespace ctspmd;

bool same_operator(const model::operator_info& a, const model::operator_info& b) {
  return a.rule == b.rule && a.label == b.label && a.inputs == b.inputs && a.outputs == b.outputs &&
         a.forward == b.forward && a.backward == b.backward && a.grad == b.grad && a.phase == b.phase &&
         a.recomputable == b.recomputable && runtime::operator_attributes(a) == runtime::operator_attributes(b);
}

TEST_CASE("add_operator: the typed API's operator, by name") {
  auto typed = std::make_unique<runtime::plan>(process_mesh({2, 4}));
  auto named = std::make_unique<runtime::plan>(process_mesh({2, 4}));
  for (auto* p : {typed.get(), named.get()}) {
    p->tensor("x", {8, 16, 64}, {0, -1, -1});
    p->parameter("w", {64, 32}, {-1, 1});
    p->tensor("y", {8, 16, 32});
    p->tensor("z", {8, 32, 16});
  }
  typed->op<"matmul">({{0}, {1}}, {{2}}, {}, "proj");
  typed->op<"transpose">({{2}}, {{3}}, {.perm = {0, 2, 1}});
  const model::tensor_id in[] = {{0}, {1}}, out[] = {{2}}, y[] = {{2}}, z[] = {{3}};
  runtime::add_operator(*named, "matmul", in, out, {}, "proj");
  runtime::add_operator(*named, "transpose", y, z, {{"perm", std::vector<std::int64_t>{0, 2, 1}}});
  REQUIRE(named->op_count() == 2);
  CHECK(same_operator(typed->op_at(0), named->op_at(0)));
  CHECK(same_operator(typed->op_at(1), named->op_at(1)));
  CHECK((named->op_at(0).grad != nullptr));
  CHECK(std::get<std::vector<std::int64_t>>(runtime::operator_attributes(named->op_at(1)).at("perm")) ==
        std::vector<std::int64_t>{0, 2, 1});

  const auto r = runtime::propagate(*named);
  REQUIRE(r->ok());
  CHECK(r->dims_mapping({3}) == dims_mapping{0, 1, -1});
  const auto step = runtime::training_step(*named, {3});
  const auto rs = runtime::propagate(*step);
  REQUIRE(rs->ok());
  CHECK(runtime::cost(*step, *rs, model::h100_cluster(step->mesh())).memory().parameters == 64 * 32 * 4 / 4);
}

TEST_CASE("add_operator: unknown names, bad attributes and the plan's checks are errors") {
  auto p = std::make_unique<runtime::plan>(process_mesh({2}));
  const auto x = p->tensor("x", {8, 4});
  const auto y = p->tensor("y", {8, 5});
  const model::tensor_id in[] = {x}, out[] = {y};
  ctspmd_test::check_error([&] { runtime::add_operator(*p, "rellu", in, out); }, error_kind::not_found, "closest: relu");
  ctspmd_test::check_error([&] { runtime::add_operator(*p, "relu", in, out, {{"alpha", 1.0}}); }, error_kind::invalid_argument, "unknown attribute 'alpha'");
  ctspmd_test::check_error([&] { runtime::add_operator(*p, "relu", in, out); }, error_kind::invalid_argument, "size 5 at dim 1");
  CHECK(p->op_count() == 0);
}

}  // namespace runtime_plan_test
