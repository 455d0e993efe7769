// Plans propagated at run time (the same constexpr code), and their errors as spmd_error.
#include <ctspmd/model/propagate.hpp>

#include <doctest/doctest.h>

#include "../examples/gpt/gpt_plan.hpp"
#include "check_error.hpp"

using namespace ctspmd;
using model::collective;
using model::tensor_id;

TEST_CASE("a plan built at run time propagates as at compile time") {
  constexpr auto at_compile_time = model::verified<gpt::make_plan<4>>();
  const auto plan = gpt::make_plan<4>();  // evaluated at run time
  const auto at_run_time = model::propagate(plan);
  CHECK(at_run_time.count() == at_compile_time.count());
  CHECK(at_run_time.count_in_block(0, collective::all_reduce) == 8);
  REQUIRE(at_run_time.reshard_entries() == at_compile_time.reshard_entries());
  for (std::size_t i = 0; i < plan.tensor_count(); ++i) CHECK(at_run_time.attr({i}) == at_compile_time.attr({i}));
  const auto sp = model::propagate(gpt::make_plan<4, gpt::variant::sequence_parallel>());
  CHECK(sp.count_in_block(0, collective::all_gather) == 8);
  CHECK(sp.count_in_block(0, collective::reduce_scatter) == 8);
}

TEST_CASE("shapes known only at run time") {
  // A plan whose sizes come from run-time values, e.g. a configuration file.
  const std::int64_t batch = 6, hidden = 96;
  const process_mesh mesh({3, 2});
  model::plan<8, 4> p(mesh);
  auto x = p.tensor("x", {batch, hidden}, {0, 1});
  auto w = p.tensor("w", {hidden, 2 * hidden}, {1, -1});
  auto y = p.tensor("y", {batch, 2 * hidden});
  p.op<"matmul">({x, w}, {y}, {}, "proj");
  p.op<"relu">({y}, {p.tensor("z", {batch, 2 * hidden})}, {}, "act");
  const auto prop = model::propagate(p);
  REQUIRE(prop.count() == 1);
  CHECK(prop.reshard_at(0).kind == collective::all_reduce);
  CHECK(prop.reshard_at(0).bytes == 2 * (batch * 2 * hidden * 4 / 3) / 2);
}

TEST_CASE("a plan that cannot be propagated throws, naming the operator") {
  const process_mesh mesh({2, 2});
  model::plan<8, 4> p(mesh);
  auto x = p.tensor("x", {8, 64}, {-1, 1});
  auto w = p.tensor("w", {64, 32}, {0, -1});
  p.op<"matmul">({x, w}, {p.tensor("y", {8, 32})}, {}, "proj");
  const auto r = model::try_propagate(p);
  CHECK_FALSE(r.ok());
  CHECK(r.failed_operator() == 0);
  ctspmd_test::check_error([&] { (void)model::propagate(p); }, error_kind::unimplemented,
                           "proj: tensor axis 'k' is sharded by two different mesh dims, 0 and 1");
  const auto plan = gpt::make_plan<2, gpt::variant::up_weight_by_rows>();
  const auto prop = model::propagate(plan);
  ctspmd_test::check_error([&] { (void)prop.expect_in_block(plan, 0, collective::all_reduce, 4); },
                           error_kind::precondition_not_met, "mlp.up: operator 18: input 0 needs an unexpected local_slice on mesh dim 1");
  ctspmd_test::check_error([&] { (void)p.tensor("bad", {4}, {2}); }, error_kind::invalid_argument,
                           "dims mapping entry 2 of tensor dim 0 is not -1 or a mesh dim in [0, 2)");
}
