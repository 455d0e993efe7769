// The README's tutorial 4: a Megatron MLP annotated in DTensor, JAX and Shardy layouts,
// verified at compile time, and every tensor printed in the four languages at run time.

#include <ctspmd/interop.hpp>
#include <ctspmd/model/propagate.hpp>
using namespace ctspmd;
using namespace ctspmd::literals;

constexpr named_mesh mesh({2, 4}, {"dp", "mp"});   // a process_mesh with dim names beside it

constexpr auto mlp() {
  model::plan<> p(mesh);
  auto x  = p.tensor("x", {8, 512, 1024}, "P('dp', None, None)"_pspec);            // JAX
  auto w1 = p.tensor("w1", {1024, 4096}, "[Replicate(), Shard(1)]"_placements);     // DTensor
  auto w2 = p.tensor("w2", {4096, 1024}, R"(#sdy.sharding<@mesh, [{"mp"}, {}]>)"_sdy); // Shardy
  auto h  = p.tensor("h", {8, 512, 4096});
  auto z  = p.tensor("z", {8, 512, 1024});
  p.op<"matmul">({x, w1}, {h});
  p.op<"matmul">({h, w2}, {z});
  return p;
}
constexpr auto prop = model::verified<mlp>();
static_assert(to_placements(prop.attr({3})) == "[Shard(0), Shard(2)]");
static_assert(to_sdy(mesh, prop.attr({4})) == R"(#sdy.sharding<@mesh, [{"dp"}, {}, {}], unreduced={"mp"}>)");

// Conversions as functions (try_... return a result whose error names the column):
static_assert(from_partition_spec(mesh, "P(('mp', 'dp'))", 2) == tensor_dist_attr(mesh, {{1, 0}, {}}));
static_assert(to_placements(tensor_dist_attr(mesh, {{1, 0}, {}})) == "[_StridedShard(0, split_factor=4), Shard(0)]");
static_assert(!try_from_placements(mesh, "[Shard(0), Replicate()", 2));  // column 23: ',' or ']' expected
// A rule's operand: dist_tensor_spec({8, 1024}, placements(mesh, "[Shard(0), Replicate()]")).

#include <ctspmd/dist/format.hpp>

#include <cstdio>
#include <string>

int main() {
  const auto& plan = prop;
  const char* names[] = {"x", "w1", "w2", "h", "z"};
  for (std::uint16_t t = 0; t < 5; ++t) {
    const auto& a = plan.attr({t});
    const auto spec = try_to_partition_spec(mesh, a);
    std::printf("%-3s %-32s %-26s %-22s %s\n", names[t], to_string(a).c_str(), std::string(to_placements(a).view()).c_str(),
                spec ? std::string(spec->view()).c_str() : "(partial: no PartitionSpec)",
                std::string(to_sdy(mesh, a).view()).c_str());
  }
}
