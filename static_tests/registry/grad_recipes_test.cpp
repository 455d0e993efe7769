// The grad recipes (registry/grad_recipes.hpp) against the registry: every registered forward
// name has a recipe (a grad operator, or an empty one: no gradient flows through it) or stands
// in `grad_recipes_missing` with its reason, so registering a rule forces the decision. A name is
// a grad, not a forward name, if a recipe names it as its grad operator or it is a recipe's
// forward name followed by "_grad" (Paddle's `softmax_with_cross_entropy_grad`, whose recipe uses
// the same rule under `cross_entropy_with_softmax_grad`).
#include <ctspmd/model/training.hpp>
#include <ctspmd/registry/grad_recipes.hpp>

#include <cstddef>
#include <string_view>
#include <type_traits>

using namespace ctspmd;
using model::detail::grad_recipe_count;
using model::detail::grad_recipes;
using model::detail::grad_recipes_missing;

namespace {

constexpr bool has_recipe(std::string_view name) { return model::detail::find_grad_recipe(name) < grad_recipe_count; }

constexpr bool is_missing(std::string_view name) {
  for (const auto& m : grad_recipes_missing)
    if (m.forward == name) return true;
  return false;
}

constexpr bool is_grad(std::string_view name) {
  for (const auto& r : grad_recipes)
    if (r.grad == name) return true;
  constexpr std::string_view suffix = "_grad";
  return name.ends_with(suffix) && has_recipe(name.substr(0, name.size() - suffix.size()));
}

/// The first registered forward name that has neither a recipe nor a place in
/// `grad_recipes_missing`, or "" if there is none.
constexpr std::string_view first_undecided() {
  for (const auto& e : rules::registry)
    if (!has_recipe(e.name) && !is_grad(e.name) && !is_missing(e.name)) return e.name;
  return "";
}

template <std::size_t N>
constexpr fixed_string<N + 1> as_fixed_string(std::string_view s) {
  char chars[N + 1] = {};
  for (std::size_t i = 0; i < N; ++i) chars[i] = s[i];
  return fixed_string<N + 1>(chars);
}

/// Fails to compile for a name (shown in the instantiation's template argument).
template <fixed_string Name>
constexpr bool decided() {
  // The registered forward operator named in this instantiation has no grad recipe.
  static_assert(Name.size() == 0,
                "a registered forward operator has no grad recipe: give it one in registry/grad_recipes.hpp (an empty "
                "grad name if no gradient flows through it), or list it, with the reason, in grad_recipes_missing");
  return true;  // the static_assert above is the one error
}

/// Each forward name has one recipe at most, and none of the names without one has one.
constexpr bool recipes_unique_and_apart() {
  for (std::size_t i = 0; i < grad_recipe_count; ++i)
    for (std::size_t j = i + 1; j < grad_recipe_count; ++j)
      if (grad_recipes[i].forward == grad_recipes[j].forward) return false;
  for (const auto& m : grad_recipes_missing)
    if (has_recipe(m.forward) || rules::registry_find(m.forward) == rules::registry.size() || m.why.empty())
      return false;
  return true;
}

}  // namespace

// ==== every forward name decided ==============================================================
static_assert(decided<as_fixed_string<first_undecided().size()>(first_undecided())>());
static_assert(recipes_unique_and_apart());

// ==== the decisions, by example ===============================================================
// An elementwise function trains through the generic unary grad rule, under Paddle's grad name.
static_assert(grad_recipes[model::detail::find_grad_recipe("acos")].grad == "acos_grad");
static_assert(std::is_same_v<rules::rule_for<"acos_grad">, rules::elementwise_unary_grad>);
static_assert(std::is_same_v<rules::rule_for<"fmax_grad">, rules::elementwise_binary_grad>);
// Comparisons, optimizers and piecewise-constant functions pass no gradient.
static_assert(grad_recipes[model::detail::find_grad_recipe("less_than")].grad.empty());
static_assert(grad_recipes[model::detail::find_grad_recipe("adamw")].grad.empty());
static_assert(grad_recipes[model::detail::find_grad_recipe("floor")].grad.empty());
// det has no grad rule yet: no recipe, and a reason.
static_assert(!has_recipe("det") && is_missing("det"));
// Grad names are not forward names.
static_assert(is_grad("matmul_grad") && is_grad("softmax_with_cross_entropy_grad") && !is_grad("matmul"));

// ==== a training step through the new recipes =================================================
constexpr auto elementwise_step() {
  model::plan<8, 4> p(process_mesh({2}));
  auto w = p.parameter("w", {4, 8}, {-1, 0});
  auto a = p.tensor("a", {4, 8}), b = p.tensor("b", {4, 8}), c = p.tensor("c", {4, 8}), m = p.tensor("m", {4, 8});
  p.op<"acos">({w}, {a});
  p.op<"expm1">({a}, {b});
  p.op<"floor">({a}, {c});  // no gradient through it
  p.op<"fmax">({b, c}, {m});
  return model::training_step(p, m);
}
static_assert(elementwise_step().op_at(4).rule == "fmax_grad" && elementwise_step().op_at(5).rule == "expm1_grad" &&
              elementwise_step().op_at(6).rule == "acos_grad");
