// The rules' cost traits (rules/kit/cost_traits.hpp): every registered name has them, by default or
// its rule's own; each kind's defaults; the formulas of the rules that state their own; local
// sizes of uneven shards; saturation.
#include <ctspmd/model/plan.hpp>

#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include "../../test_support.hpp"

using namespace ctspmd;

namespace {
constexpr process_mesh mesh({2, 4});
constexpr tensor_dist_attr replicated2(mesh, {-1, -1}), rows(mesh, {0, -1}), cols(mesh, {-1, 1}), both(mesh, {0, 1});
constexpr tensor_shape m8x16{8, 16}, m16x32{16, 32}, m32x16{32, 16}, v16{16}, scalar{};
constexpr tensor_dist_attr replicated1(mesh, {-1}), replicated0(mesh, dims_mapping{});

/// `n` operands of shape [8, 16], replicated, of 2 bytes an element.
constexpr local_operands same(std::size_t n) {
  local_operands l;
  for (std::size_t k = 0; k < n; ++k) l.push_back(m8x16, replicated2, 2);
  return l;
}

// ---- every registered name has cost traits ---------------------------------------------------
// Its rule's kind (but for the names the registry sets apart), a FLOP and a byte formula; on
// eight inputs and four outputs of [8, 16] (as many as any rule's formula reads), each kind's
// figures: views and reshard points nothing, data movement bytes but no FLOPs, compute both (one
// FLOP an output element and every operand's bytes, unless the rule states its own).
template <std::size_t I>
constexpr bool has_traits() {
  constexpr const auto& e = rules::registry[I];
  constexpr const model::operator_cost& c = model::detail::cost_at<I>;
  using rule = rules::registered_rule<rules::registry[I].rule>;
  if (c.flops == nullptr || c.bytes == nullptr || c.rule != e.rule) return false;
  const bool set_apart = e.name == "assign" || e.name == "assign_out_";
  if (set_apart == (c.kind == cost_kind_of<rule>)) return false;
  const local_operands in = same(8), out = same(4);
  const model::any_attributes attrs = typename rule::attributes{};
  const std::int64_t flops = c.flops(c.kind, in, out, attrs), bytes = c.bytes(c.kind, in, out, attrs);
  switch (c.kind) {
    case cost_kind::view:
    case cost_kind::communication: return flops == 0 && bytes == 0;
    case cost_kind::moves: return flops == 0 && bytes > 0;
    case cost_kind::compute:
      return (HasBytes<rule> ? bytes > 0 : bytes == 12 * 128 * 2) && (HasFlops<rule> ? flops > 0 : flops == 4 * 128);
  }
  return false;
}
template <std::size_t... I>
constexpr bool every_name_has_traits(std::index_sequence<I...>) {
  // An array, not a fold: Clang 14 nests a fold expression of more than 256 operands too deep.
  constexpr bool has[] = {has_traits<I>()...};
  for (bool h : has)
    if (!h) return false;
  return true;
}
static_assert(every_name_has_traits(std::make_index_sequence<rules::registry.size()>{}));

// The kinds a reader expects, by name.
constexpr cost_kind kind_of(std::string_view name) { return rules::registry[rules::registry_find(name)].kind; }
static_assert(kind_of("assign") == cost_kind::communication && kind_of("add") == cost_kind::compute);
static_assert(kind_of("reshape") == cost_kind::view && kind_of("reshape2") == cost_kind::view &&
              kind_of("squeeze") == cost_kind::view && kind_of("unsqueeze2") == cost_kind::view &&
              kind_of("flatten") == cost_kind::view);
static_assert(kind_of("transpose2") == cost_kind::moves && kind_of("slice") == cost_kind::moves &&
              kind_of("concat") == cost_kind::moves && kind_of("lookup_table_v2") == cost_kind::moves &&
              kind_of("c_embedding") == cost_kind::moves && kind_of("gather") == cost_kind::moves &&
              kind_of("squeeze_grad") == cost_kind::moves && kind_of("unbind_grad") == cost_kind::moves &&
              kind_of("cast") == cost_kind::moves && kind_of("assign_out_") == cost_kind::moves);
static_assert(kind_of("matmul_v2") == cost_kind::compute && kind_of("flash_attention") == cost_kind::compute &&
              kind_of("tile_grad") == cost_kind::compute && kind_of("adamw") == cost_kind::compute &&
              kind_of("softmax") == cost_kind::compute && kind_of("embedding_grad") == cost_kind::compute);
static_assert(to_string(cost_kind::moves) == "moves" && to_string(cost_kind::communication) == "communication");

// ---- local sizes -------------------------------------------------------------------------------
constexpr tensor_shape odd{9, 6};
constexpr tensor_dist_attr odd_split(mesh, {0, 1});  // 9 over 2: 5; 6 over 4: 2
static_assert([] {
  local_operands l;
  l.push_back(odd, odd_split, 4);
  l.push_back(scalar, replicated0, 8);
  return l.dim(0, 0) == 5 && l.dim(0, -1) == 2 && l.dim(0, 1) == 2 && l.elements(0) == 10 && l.bytes(0) == 40 &&
         l.rank(1) == 0 && l.dim(1, 0) == 1 && l.elements(1) == 1 && l.total_bytes() == 48;
}());
static_assert([] {  // elements the caller counted are taken as given
  local_operands l;
  l.push_back(odd, odd_split, 4, 7);
  return l.elements(0) == 7 && l.bytes(0) == 28;
}());
static_assert(!ctspmd_test::constant_evaluates<[] {  // an operand that is not there
  local_operands l;
  return l.elements(0);
}>);
static_assert(!ctspmd_test::constant_evaluates<[] {  // a size unknown until run time
  local_operands l;
  const tensor_shape unknown{-1, 16};
  l.push_back(unknown, replicated2, 2);
  return l.elements(0);
}>);

// ---- the rules' own formulas -------------------------------------------------------------------
// matmul: x [8, 16] rows over mesh dim 0 (4 rows a device), y [16, 32] columns over mesh dim 1 (8
// a device): 2 x (4 x 16) x 8.
constexpr auto matmul_cost = model::detail::cost_at<rules::registry_find("matmul")>;
constexpr auto matmul_grad_cost = model::detail::cost_at<rules::registry_find("matmul_grad")>;
static_assert([] {
  local_operands in, out;
  in.push_back(m8x16, rows, 2);
  in.push_back(m16x32, cols, 2);
  const tensor_shape y_shape{8, 32};
  out.push_back(y_shape, both, 2);
  const model::any_attributes plain = rules::matmul_attributes{};
  return matmul_cost.flops(matmul_cost.kind, in, out, plain) == 1024 &&
         matmul_grad_cost.flops(matmul_grad_cost.kind, in, out, plain) == 2048 &&
         matmul_cost.bytes(matmul_cost.kind, in, out, plain) == (64 + 128 + 32) * 2;
}());
static_assert([] {  // trans_y: y [32, 16], its output dim n first
  local_operands in, out;
  in.push_back(m8x16, rows, 2);
  const tensor_dist_attr y_rows(mesh, {1, -1});
  in.push_back(m32x16, y_rows, 2);
  const tensor_shape y_shape{8, 32};
  out.push_back(y_shape, both, 2);
  return matmul_cost.flops(matmul_cost.kind, in, out, rules::matmul_attributes{.trans_y = true}) == 1024;
}());
static_assert([] {  // y a vector: 2 x x's elements
  local_operands in, out;
  in.push_back(m8x16, replicated2, 2);
  in.push_back(v16, replicated1, 2);
  const tensor_shape y_shape{8};
  out.push_back(y_shape, replicated1, 2);
  return matmul_cost.flops(matmul_cost.kind, in, out, rules::matmul_attributes{}) == 256;
}());
static_assert([] {  // saturates, never wraps: x of 2^62 rows
  constexpr std::int64_t huge = std::int64_t{1} << 62;
  local_operands in, out;
  const tensor_shape x{huge, 16}, y{16, 32}, xy{huge, 32};
  in.push_back(x, replicated2, 2);
  in.push_back(y, replicated2, 2);
  out.push_back(xy, replicated2, 2);
  constexpr auto most = std::numeric_limits<std::int64_t>::max();
  return matmul_cost.flops(matmul_cost.kind, in, out, rules::matmul_attributes{}) == most &&
         matmul_cost.bytes(matmul_cost.kind, in, out, rules::matmul_attributes{}) == most;
}());

// flash_attention: q, k, v [2, 8, 4, 16]: 4 x (q's 1,024 elements) x (k's length 8), halved when
// causal; its grad twice that. Its bytes leave out the probabilities unless returned.
constexpr tensor_shape qkv{2, 8, 4, 16}, probs{2, 4, 8, 8}, lse{2, 4, 8}, seed{2};
constexpr tensor_dist_attr replicated4(mesh, {-1, -1, -1, -1}), replicated3(mesh, {-1, -1, -1});
constexpr local_operands attention_in() {
  local_operands in;
  for (int k = 0; k < 3; ++k) in.push_back(qkv, replicated4, 2);
  return in;
}
constexpr local_operands attention_out() {
  local_operands out;
  out.push_back(qkv, replicated4, 2);
  out.push_back(probs, replicated4, 2);
  out.push_back(lse, replicated3, 4);
  out.push_back(seed, replicated1, 8);
  return out;
}
constexpr auto attention_cost = model::detail::cost_at<rules::registry_find("flash_attention")>;
constexpr auto attention_grad_cost = model::detail::cost_at<rules::registry_find("flash_attention_grad")>;
static_assert(attention_cost.flops(attention_cost.kind, attention_in(), attention_out(),
                                   rules::flash_attention_attributes{}) == 4 * 1024 * 8);
static_assert(attention_cost.flops(attention_cost.kind, attention_in(), attention_out(),
                                   rules::flash_attention_attributes{.causal = true}) == 2 * 1024 * 8);
static_assert(attention_grad_cost.flops(attention_grad_cost.kind, attention_in(), attention_out(),
                                        rules::flash_attention_grad_attributes{.causal = true}) == 4 * 1024 * 8);
static_assert(attention_cost.bytes(attention_cost.kind, attention_in(), attention_out(),
                                   rules::flash_attention_attributes{}) == 4 * 2048 + 64 * 4 + 16);
static_assert(attention_cost.bytes(attention_cost.kind, attention_in(), attention_out(),
                                   rules::flash_attention_attributes{.return_softmax = true}) ==
              4 * 2048 + 512 * 2 + 64 * 4 + 16);

// ---- the kinds' defaults -----------------------------------------------------------------------
// compute: one FLOP an output element, scalars not counted; every operand's bytes.
static_assert([] {
  local_operands in, out;
  in.push_back(m8x16, rows, 2);  // 64 elements a device
  out.push_back(m8x16, rows, 4);
  out.push_back(scalar, replicated0, 4);
  return default_flops(cost_kind::compute, out) == 64 &&
         default_bytes(cost_kind::compute, in, out) == 64 * 2 + 64 * 4 + 4;
}());
// moves: no FLOPs; each output element read once and written once.
static_assert([] {
  local_operands in, out;
  in.push_back(m8x16, replicated2, 2);
  out.push_back(m8x16, both, 2);  // 4 x 4 a device
  return default_flops(cost_kind::moves, out) == 0 && default_bytes(cost_kind::moves, in, out) == 2 * 16 * 2;
}());
static_assert(default_flops(cost_kind::view, same(1)) == 0 && default_bytes(cost_kind::view, same(1), same(1)) == 0);
static_assert(default_bytes(cost_kind::communication, same(1), same(1)) == 0);

// An operator of a plan carries its registry entry's traits.
static_assert([] {
  const auto o = model::detail::operator_of<"lookup_table_v2">({});
  const auto a = model::detail::operator_of<"assign">({});
  return o.cost.kind == cost_kind::moves && o.cost.rule == rules::index_of<rules::embedding> &&
         a.cost.kind == cost_kind::communication && a.cost.rule == rules::index_of<rules::elementwise>;
}());

}  // namespace
