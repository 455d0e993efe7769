#ifndef CTSPMD_MODEL_PLAN_HPP
#define CTSPMD_MODEL_PLAN_HPP
/// \file Fixed-model plans: tensors and operators written as constexpr data.
///
/// A plan is a value built in a constexpr function, a few lines per operator:
///
///     model::plan<> p(mesh);
///     auto x = p.tensor("x", {8, 512, 1024}, {0, -1, -1});      // annotated
///     auto w = p.tensor("w", {1024, 4096}, {-1, 1});
///     auto y = p.tensor("y", {8, 512, 4096});                   // inferred
///     p.op<"matmul">({x, w}, {y});
///
/// Operators name a registered rule and take its typed attributes. `repeat` records a block
/// of operators that runs `count` times, its output feeding its input (a decoder layer): it is
/// built and stored once; each run has its own tensors (those the body declares), and
/// propagation verifies the block once it maps its input sharding to the same output sharding.
/// Capacities are template arguments; exceeding one is an error. `op` checks the operator's
/// declared outputs against the shapes its rule derives from the inputs' declared shapes, when
/// the rule derives them (`HasOutputShapes`): another rank or size, or inputs whose shapes the
/// rule rejects, is an error naming the operator (label or rule, index) and the output.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include <ctspmd/core/error.hpp>
#include <ctspmd/core/fixed_string.hpp>
#include <ctspmd/core/saturating.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/dist_tensor_spec.hpp>
#include <ctspmd/dist/named_mesh.hpp>
#include <ctspmd/registry/grad_attributes.hpp>
#include <ctspmd/registry/grad_recipes.hpp>
#include <ctspmd/registry/rules_by_name.hpp>

namespace ctspmd::model {

/// The most repeated blocks a plan has (a training step adds one per forward block).
inline constexpr std::size_t max_blocks = 8;

/// A tensor of a plan.
struct tensor_id {
  std::size_t index = 0;
  friend constexpr bool operator==(tensor_id, tensor_id) = default;
};

namespace detail {
using ctspmd::detail::saturating_product;
using ctspmd::detail::saturating_sum;
template <class... T>
struct type_list {};
template <class... T, class U>
constexpr auto operator+(type_list<T...>, std::type_identity<U>) {
  if constexpr ((std::is_same_v<T, U> || ...))
    return type_list<T...>{};
  else
    return type_list<T..., U>{};
}
template <class... Rules>
constexpr auto attribute_types(rules::rule_list<Rules...>) {
  return (type_list<>{} + ... + std::type_identity<typename Rules::attributes>{});
}

/// One value of one of the types `T...` (all trivially copyable), which one being known from
/// elsewhere (an operator's rule): a balanced tree of unions, so that storing or reading a type
/// costs a constant-evaluation step per level (about log2 of the number of types), a fraction of
/// std::variant's compile time. Reading another type than the one stored is a compile error in
/// constant evaluation.
template <class T>
union leaf {
  T value;
  constexpr leaf() noexcept : value() {}
  constexpr leaf(const T& v) noexcept : value(v) {}  // NOLINT: converts like variant's
  template <class U>
  constexpr const U& get() const noexcept {
    return value;
  }
};
template <class Tree, class U>
inline constexpr bool holds = false;
template <class T, class U>
inline constexpr bool holds<leaf<T>, U> = std::is_same_v<T, U>;
template <class L, class R>
union node;
template <class L, class R, class U>
inline constexpr bool holds<node<L, R>, U> = holds<L, U> || holds<R, U>;
template <class L, class R>
union node {
  L left;
  R right;
  constexpr node() noexcept : left() {}
  template <class U>
    requires holds<L, U>
  constexpr node(const U& u) noexcept : left(u) {}  // NOLINT
  template <class U>
    requires(!holds<L, U> && holds<R, U>)
  constexpr node(const U& u) noexcept : right(u) {}  // NOLINT
  template <class U>
  constexpr const U& get() const noexcept {
    if constexpr (holds<L, U>)
      return left.template get<U>();
    else
      return right.template get<U>();
  }
};
// Pairs neighbours (a, b, c, d, e -> node<a, b>, node<c, d>, e) until one tree is left.
template <class Done, class Rest>
struct paired;
template <class... Done>
struct paired<type_list<Done...>, type_list<>> {
  using type = type_list<Done...>;
};
template <class... Done, class A>
struct paired<type_list<Done...>, type_list<A>> {
  using type = type_list<Done..., A>;
};
template <class... Done, class A, class B, class... Rest>
struct paired<type_list<Done...>, type_list<A, B, Rest...>> : paired<type_list<Done..., node<A, B>>, type_list<Rest...>> {};
template <class List>
struct tree_of : tree_of<typename paired<type_list<>, List>::type> {};
template <class A>
struct tree_of<type_list<A>> {
  using type = A;
};
template <class... T>
auto as_one_of(type_list<T...>) -> typename tree_of<type_list<leaf<T>...>>::type;
}  // namespace detail

/// The attributes of any registered rule (`a.get<Rule::attributes>()` reads them).
using any_attributes = decltype(detail::as_one_of(detail::attribute_types(rules::registered_rules{})));

namespace detail {
template <class Rule>
constexpr std::int64_t flops_thunk(cost_kind k, const local_operands& in, const local_operands& out, const any_attributes& a) {
  return rule_flops<Rule>(k, in, out, a.template get<typename Rule::attributes>());
}
template <class Rule>
constexpr std::int64_t model_flops_thunk(cost_kind k, const local_operands& in, const local_operands& out,
                                         const any_attributes& a) {
  return rule_model_flops<Rule>(k, in, out, a.template get<typename Rule::attributes>());
}
template <class Rule>
constexpr std::int64_t bytes_thunk(cost_kind k, const local_operands& in, const local_operands& out, const any_attributes& a) {
  return rule_bytes<Rule>(k, in, out, a.template get<typename Rule::attributes>());
}
}  // namespace detail

/// What an operator costs, from its registry entry (rules/kit/cost_traits.hpp): its rule (an index
/// into `rules::registered_rules`: `rule == rules::index_of<rules::adamw>`), its kind, and its
/// rule's FLOPs, model FLOPs and bytes.
struct operator_cost {
  std::size_t rule = rules::registered_rules::size;
  cost_kind kind = cost_kind::compute;
  std::int64_t (*flops)(cost_kind, const local_operands&, const local_operands&, const any_attributes&) = nullptr;
  std::int64_t (*bytes)(cost_kind, const local_operands&, const local_operands&, const any_attributes&) = nullptr;
  std::int64_t (*model_flops)(cost_kind, const local_operands&, const local_operands&, const any_attributes&) = nullptr;
};

namespace detail {
/// The cost of registry entry `Entry`'s operators.
template <std::size_t Entry>
inline constexpr operator_cost cost_at = [] {
  using rule = rules::registered_rule<rules::registry[Entry].rule>;
  return operator_cost{rules::registry[Entry].rule, rules::registry[Entry].kind, &flops_thunk<rule>, &bytes_thunk<rule>,
                       &model_flops_thunk<rule>};
}();
}  // namespace detail

/// The size of a tensor's elements, for the bytes a reshard moves: `model::float16`,
/// `model::int64`, ... or `element_size::of_bytes(n)`. (Not constructible from an int, so that
/// `p.tensor("x", {8}, {0})` can only mean the dims mapping {0}.)
class element_size {
 public:
  /// The largest element of any dtype (complex128).
  static constexpr std::int64_t max_bytes = 16;
  static constexpr element_size of_bytes(std::int64_t n) {
    if (n <= 0 || n > max_bytes)
      raise(make_error(error_kind::invalid_argument, "element_size",
                       "an element has {} bytes: a dtype's element has 1 to {}", n, max_bytes));
    element_size e;
    e.bytes_ = n;
    return e;
  }
  constexpr std::int64_t bytes() const noexcept { return bytes_; }

 private:
  constexpr element_size() noexcept = default;
  std::int64_t bytes_ = 4;
};
inline constexpr element_size float16 = element_size::of_bytes(2), bfloat16 = element_size::of_bytes(2),
                              float32 = element_size::of_bytes(4), float64 = element_size::of_bytes(8),
                              int32 = element_size::of_bytes(4), int64 = element_size::of_bytes(8);

/// What a tensor holds: a value of the model, or (in a training step) the gradient of a tensor
/// or the optimizer state of a parameter.
enum class tensor_role : std::int8_t {
  value,
  gradient,
  optimizer_state,
  first_run_layout,  ///< no operator's: keeps the layout a block's first run gave `role_of`
};

/// A tensor as the plan declares it.
struct tensor_info {
  std::string_view name{};
  tensor_shape shape{};
  std::int64_t element_bytes = 4;
  bool annotated = false;       ///< `annotation` fixes its dist attributes
  tensor_dist_attr annotation{};
  std::int64_t producer = -1;   ///< index of the operator writing it; -1 for a plan input
  bool trainable = false;       ///< a parameter: a training step computes its gradient and updates it
  tensor_role role = tensor_role::value;
  std::int64_t role_of = -1;    ///< the tensor whose gradient or state it is (`name` is that tensor's)
  /// Pinned, like an annotation, to the layout tensor `layout_of` has when the operator writing
  /// it runs, without its partial status (a training step's updated parameter keeps the
  /// parameter's layout), or -1.
  std::int64_t layout_of = -1;
};

/// How a training step keeps the activations its backward pass reads (what `<ctspmd/model/cost.hpp>`
/// counts; the step's operators are the same under each).
enum class recompute : std::int8_t {
  none,       ///< every activation a grad operator reads is kept from the forward pass
  selective,  ///< the operators of the plan's `recomputable` regions (attention's core) run again
              ///< in backward: their outputs are not kept, their collectives are sent again
  full,       ///< of a repeated block, only each run's input is kept; the run's forward runs again
              ///< in backward, collectives included
};

/// Options of a training step (`<ctspmd/model/training.hpp>`): what its optimizer step shards and
/// in which precision the step keeps its state. A training step's plan keeps them (`training()`).
struct training_options {
  /// The data-parallel mesh dim over which ZeRO shards (optimizer states; with `zero_stage` 2 the
  /// gradients, with 3 the parameters too), or -1: states laid out as their parameters.
  std::int64_t shard_optimizer_states_on = -1;
  /// A second mesh dim ZeRO shards over with `shard_optimizer_states_on`, or -1: the states are
  /// then split over the product group of both (context parallelism's cp with dp, as Megatron's
  /// distributed optimizer does), each gradient reduce-scattered and each updated shard gathered
  /// over it in one collective.
  std::int64_t shard_optimizer_states_also_on = -1;
  /// ZeRO's stage, 1 to 3, with `shard_optimizer_states_on` (0: 1 when sharding, else none).
  std::int64_t zero_stage = 0;
  /// The element size of the optimizer's moments.
  std::int64_t state_element_bytes = 4;
  /// The element size of parameters' gradients (Megatron keeps them in fp32: 4), or 0: the
  /// parameter's.
  std::int64_t gradient_element_bytes = 0;
  /// The optimizer keeps a master copy of each parameter, of `state_element_bytes` elements, laid
  /// out as its moments (adamw's `master_param`): mixed-precision training.
  bool master_weights = false;
  model::recompute recompute = model::recompute::none;
  /// Under sequence parallelism, keep a gathered input (the output of a forward `assign` that
  /// all-gathers) for the backward pass; false (Megatron's default): keep its shard and gather it
  /// again in backward.
  bool keep_gathered_inputs = false;
  /// ZeRO's stage in force: 0 (none) to 3.
  constexpr std::int64_t stage() const noexcept {
    return shard_optimizer_states_on < 0 ? 0 : zero_stage == 0 ? 1 : zero_stage;
  }
  friend constexpr bool operator==(const training_options&, const training_options&) = default;
};

/// The phase of a training step an operator belongs to (a forward plan's are all `forward`).
enum class phase : std::int8_t { forward, backward, optimizer };
inline constexpr std::size_t phase_count = 3;
constexpr std::string_view to_string(phase p) noexcept {
  switch (p) {
    case phase::forward: return "forward";
    case phase::backward: return "backward";
    case phase::optimizer: return "optimizer";
  }
  return "unknown";
}

struct operator_info;
namespace detail {
/// The grad operator of an operator, as `<ctspmd/model/training.hpp>` derives it: its rule,
/// attributes and operands (the recipe, parsed: see registry/grad_recipes.hpp).
struct grad_operator;
}  // namespace detail

/// An operator: a registered rule, its attributes and its operand tensors.
struct operator_info {
  std::string_view rule{};   ///< the registered name, e.g. "matmul"
  std::string_view label{};  ///< the user's name for it, e.g. "attn.qkv" (may be empty)
  static_vector<std::uint16_t, max_operands> inputs{};
  static_vector<std::uint16_t, max_operands> outputs{};
  any_attributes attributes{};
  /// The rule's `try_infer_forward_into` / `try_infer_backward_into` (into an empty `spmd_info`).
  status (*forward)(spmd_info&, spec_span, const any_attributes&, semantics) = nullptr;
  status (*backward)(spmd_info&, spec_span, spec_span, const any_attributes&, semantics) = nullptr;
  model::phase phase = model::phase::forward;
  /// Per input, a tensor that keeps the input as this operator read it (after its reshard, if
  /// any), for a training step's grad operator to read; 0xffff for none.
  static_vector<std::uint16_t, max_operands> saved{};
  /// Its grad operator (for a training step), or null when the rule has no grad recipe.
  detail::grad_operator (*grad)(const operator_info&) = nullptr;
  /// In a `recomputable` region of the plan (selective recomputation runs it again in backward).
  bool recomputable = false;
  /// Bit k: input k (k < 32) is read for its shape and layout only (a grad operator's `iK#`).
  std::uint32_t shape_only = 0;
  /// What it costs (its rule's cost traits).
  operator_cost cost{};
  /// The FLOPs one device computes for it, and the bytes it reads and writes in the device's
  /// memory, from its operands as the device holds them (rules/kit/cost_traits.hpp).
  constexpr std::int64_t flops(const local_operands& in, const local_operands& out) const {
    return cost.flops == nullptr ? 0 : cost.flops(cost.kind, in, out, attributes);
  }
  constexpr std::int64_t bytes(const local_operands& in, const local_operands& out) const {
    return cost.bytes == nullptr ? 0 : cost.bytes(cost.kind, in, out, attributes);
  }
  /// The FLOPs utilisation figures count for it (a causal attention's whole).
  constexpr std::int64_t model_flops(const local_operands& in, const local_operands& out) const {
    return cost.model_flops == nullptr ? 0 : cost.model_flops(cost.kind, in, out, attributes);
  }
  /// The label, or the rule's name when there is none.
  constexpr std::string_view name() const noexcept { return label.empty() ? rule : label; }
};

/// Operators [first_op, end_op) run `count` times; `input` holds, in each run, the previous
/// run's `output` (in the first run: `source`'s value). The tensors the body declares,
/// (input, end_tensor), are each run's own: a run lays out its unannotated weights anew, as a
/// written-out layer would.
struct block_info {
  std::size_t first_op = 0, end_op = 0, count = 0;
  tensor_id source{}, input{}, output{};
  std::size_t end_tensor = 0;
  /// For the backward pass of a block in a training step: the forward block it runs backwards
  /// (its runs are that block's runs, last first), else -1.
  std::int64_t mirror_of = -1;
  /// For a forward block a training step runs backwards: the tensors [saved_begin, saved_end)
  /// keep its operators' inputs as they read them (`operator_info::saved`), and from
  /// `first_run_at` on, tensors keep the layouts of its first run's tensors (input, end_tensor)
  /// and then of those saved inputs, in order; else 0.
  std::size_t saved_begin = 0, saved_end = 0, first_run_at = 0;
  /// The block's number as the user's plan counts blocks (a backward block counts as its forward one).
  constexpr std::size_t number(std::size_t own_index) const noexcept {
    return mirror_of >= 0 ? static_cast<std::size_t>(mirror_of) : own_index;
  }
};

namespace detail {
template <class Rule>
constexpr status forward_thunk(spmd_info& info, spec_span in, const any_attributes& a, semantics s) {
  return Rule::try_infer_forward_into(info, in, a.template get<typename Rule::attributes>(), s);
}
template <class Rule>
constexpr status backward_thunk(spmd_info& info, spec_span in, spec_span out, const any_attributes& a, semantics s) {
  return Rule::try_infer_backward_into(info, in, out, a.template get<typename Rule::attributes>(), s);
}

struct grad_operator {
  std::string_view rule{};
  status (*forward)(spmd_info&, spec_span, const any_attributes&, semantics) = nullptr;
  status (*backward)(spmd_info&, spec_span, spec_span, const any_attributes&, semantics) = nullptr;
  any_attributes attributes{};
  const parsed_recipe* operands = nullptr;  ///< see registry/grad_recipes.hpp
  operator_cost cost{};
};

/// Raises `e`, the error of building operator `index` of a plan (a compile error in constant
/// evaluation, whose notes show `index` as this call's argument; a thrown `spmd_error` at run time).
constexpr void plan_fails_at_operator_build(std::size_t index, const error_info& e) {
  (void)index;
  raise(e);
}

/// Per rank, a replicated dist attr (on no mesh): the layout of the specs whose shapes a rule's
/// `output_shapes` reads (it reads only their shapes), built once.
inline constexpr auto replicated_of_rank = [] {
  std::array<tensor_dist_attr, max_rank + 1> a{};
  for (std::size_t r = 0; r <= max_rank; ++r) a[r] = tensor_dist_attr(process_mesh::empty(), ctspmd::dims_mapping(r, -1));
  return a;
}();

/// The grad operator of operator `f`, which runs the registered rule `Op`.
// Variables, not constexpr locals: constant evaluation of grad_thunk would look the recipe up
// and parse it again on every call.
template <fixed_string Op>
inline constexpr grad_recipe recipe_of = grad_recipes[find_grad_recipe(Op.view())];
template <fixed_string Op>
inline constexpr parsed_recipe parsed_recipe_of = parse_recipe(recipe_of<Op>.operands);

template <fixed_string Op>
constexpr grad_operator grad_thunk(const operator_info& f) {
  constexpr const grad_recipe& r = recipe_of<Op>;
  if constexpr (r.grad.empty()) {
    return {};
  } else {
    using grad_rule = rules::registered_rule<rules::registry[rules::registry_find(r.grad)].rule>;
    using from = typename rules::rule_for<Op>::attributes;
    return {r.grad, &forward_thunk<grad_rule>, &backward_thunk<grad_rule>,
            grad_attributes<typename grad_rule::attributes>(f.attributes.template get<from>()), &parsed_recipe_of<Op>,
            cost_at<rules::registry_find(r.grad)>};
  }
}

/// An operator running the rule registered under `Op`, with attributes `attrs`, in phase `ph`
/// (its operands to add).
template <fixed_string Op>
constexpr operator_info operator_of(const typename rules::rule_for<Op>::attributes& attrs, std::string_view label = "",
                                    phase ph = phase::forward) {
  using rule = rules::rule_for<Op>;
  operator_info o{Op.view(), label, {}, {}, attrs, &forward_thunk<rule>, &backward_thunk<rule>, ph};
  if constexpr (rules::has_rule<Op>) o.cost = cost_at<rules::registry_find(Op.view())>;
  return o;
}

template <std::size_t T, std::size_t O, std::size_t T2, std::size_t O2>
class step_builder;
}  // namespace detail

/// A model's sharding plan on one process mesh (at most MaxTensors tensors, MaxOps operators).
template <std::size_t MaxTensors = 64, std::size_t MaxOps = 64>
class plan {
 public:
  static_assert(MaxTensors <= 65535, "operators refer to tensors by 16-bit index");
  static constexpr std::size_t max_tensors = MaxTensors;
  static constexpr std::size_t max_ops = MaxOps;

  /// A plan on `mesh` whose rules follow semantics `s` (fluid by default).
  constexpr explicit plan(const process_mesh& mesh, semantics s = semantics::fluid) : mesh_(mesh), semantics_(s) {}
  /// A plan on a mesh whose dims have names (which layouts in JAX's and Shardy's languages use).
  constexpr explicit plan(const named_mesh& mesh, semantics s = semantics::fluid) : mesh_(mesh), semantics_(s) {}

  /// A tensor whose dist attributes are inferred.
  constexpr tensor_id tensor(std::string_view name, const tensor_shape& shape, element_size element = float32) {
    return add_tensor({name, shape, element.bytes(), false, {}, -1});
  }
  /// A tensor annotated with `mapping` on the plan's mesh.
  constexpr tensor_id tensor(std::string_view name, const tensor_shape& shape, const dims_mapping& mapping,
                             element_size element = float32) {
    return tensor(name, shape, tensor_dist_attr(mesh_, mapping), element);
  }
  /// A tensor annotated with `attr` (which may be partial).
  constexpr tensor_id tensor(std::string_view name, const tensor_shape& shape, const tensor_dist_attr& attr,
                             element_size element = float32) {
    if (!(attr.process_mesh() == mesh_))
      raise(make_error(error_kind::invalid_argument, "plan", "tensor {} is annotated on another process mesh",
                       tensor_count_));
    dist_tensor_spec::check(shape, attr).check();
    return add_tensor({name, shape, element.bytes(), true, attr, -1});
  }

  /// A tensor annotated with a layout in another framework's language (`placements("[Shard(0),
  /// Replicate()]")`, `partition_spec("P('dp', None)")`, `"P('dp')"_pspec`: `<ctspmd/interop.hpp>`),
  /// resolved on the plan's mesh unless bound to one: any `layout` with `resolve(mesh, rank)`.
  template <class Layout, class = decltype(std::declval<const Layout&>().resolve(std::declval<const named_mesh&>(),
                                                                                 std::size_t{}))>
  constexpr tensor_id tensor(std::string_view name, const tensor_shape& shape, const Layout& layout,
                             element_size element = float32) {
    return tensor(name, shape, tensor_dist_attr(layout.resolve(mesh_, shape.size())), element);
  }

  /// A parameter: a tensor, declared with `tensor`'s arguments, whose gradient a training step
  /// (`<ctspmd/model/training.hpp>`) computes and whose value its optimizer updates.
  constexpr tensor_id parameter(std::string_view name, const tensor_shape& shape, element_size element = float32) {
    return trainable(tensor(name, shape, element));
  }
  constexpr tensor_id parameter(std::string_view name, const tensor_shape& shape, const dims_mapping& mapping,
                                element_size element = float32) {
    return trainable(tensor(name, shape, mapping, element));
  }
  constexpr tensor_id parameter(std::string_view name, const tensor_shape& shape, const tensor_dist_attr& attr,
                                element_size element = float32) {
    return trainable(tensor(name, shape, attr, element));
  }
  template <class Layout, class = decltype(std::declval<const Layout&>().resolve(std::declval<const named_mesh&>(),
                                                                                 std::size_t{}))>
  constexpr tensor_id parameter(std::string_view name, const tensor_shape& shape, const Layout& layout,
                                element_size element = float32) {
    return trainable(tensor(name, shape, layout, element));
  }

  /// Annotates tensor `t`, declared without a layout, with `attr`, as if declared so (what
  /// `model::apply` does with the layouts `model::search` chose; an operator's output is then
  /// pinned). A block's input, or a tensor already annotated, is an error.
  constexpr void annotate(tensor_id t, const tensor_dist_attr& attr) { lay_out(t, attr, false); }

  /// Replaces the layout tensor `t` was declared or annotated with (none: as `annotate`): a
  /// built plan edited, such as a model of `<ctspmd/models/...>` with one weight laid out
  /// otherwise. A block's input is an error; on any error the tensor is left as it was.
  constexpr void reannotate(tensor_id t, const tensor_dist_attr& attr) { lay_out(t, attr, true); }

  /// Leaves tensor `t`'s layout to propagation (or to `model::search`, which lays out an
  /// unannotated `assign` output as a reshard point): a built plan edited, as with `reannotate`.
  /// A block's input (never annotated) is an error.
  constexpr void unannotate(tensor_id t) {
    auto& info = tensors_[checked(t)];
    if (info.producer == block_input)
      raise(make_error(error_kind::invalid_argument, "plan", "tensor {} is a block's input: it has no layout of its own", t.index));
    info.annotated = false;
    info.annotation = {};
  }

  /// The first tensor declared with name `name`; none is an error naming it.
  constexpr tensor_id tensor_named(std::string_view name) const {
    for (std::size_t t = 0; t < tensor_count_; ++t)
      if (tensors_[t].name == name) return {t};
    raise(make_error(error_kind::not_found, name, "the plan has no tensor of this name"));  // "w_down: ..."
    return {};
  }

  /// The operator `Op` (a registered name) reading `inputs` and writing `outputs`.
  template <fixed_string Op>
  constexpr void op(std::initializer_list<tensor_id> inputs, std::initializer_list<tensor_id> outputs,
                    const typename rules::rule_for<Op>::attributes& attrs = {}, std::string_view label = "") {
    op<Op>(std::span<const tensor_id>(inputs.begin(), inputs.size()),
           std::span<const tensor_id>(outputs.begin(), outputs.size()), attrs, label);
  }
  /// The same with operands in spans (operands known at run time: `runtime::add_operator`).
  template <fixed_string Op>
  constexpr void op(std::span<const tensor_id> inputs, std::span<const tensor_id> outputs,
                    const typename rules::rule_for<Op>::attributes& attrs = {}, std::string_view label = "") {
    using rule = rules::rule_for<Op>;
    if (op_count_ == MaxOps)
      raise(make_error(error_kind::invalid_argument, "plan", "more than {} operators (raise plan's MaxOps)", MaxOps));
    operator_info o = detail::operator_of<Op>(attrs, label);
    o.recomputable = recomputable_;
    if constexpr (detail::find_grad_recipe(Op.view()) < detail::grad_recipe_count) o.grad = &detail::grad_thunk<Op>;
    for (auto t : inputs) o.inputs.push_back(checked(t));
    for (auto t : outputs) {
      o.outputs.push_back(checked(t));
      auto& produced = tensors_[t.index];
      if (produced.producer != -1)
        raise(make_error(error_kind::invalid_argument, "plan", "operator {} writes tensor {}, already written by operator {}",
                         op_count_, t.index, produced.producer));
      produced.producer = static_cast<std::int64_t>(op_count_);
    }
    if constexpr (HasOutputShapes<rule>) check_output_shapes<rule>(o, attrs);
    ops_[op_count_++] = o;
  }

  /// A block run `count` times (count >= 1), e.g. the layers of a decoder:
  /// `body(plan&, tensor_id input) -> tensor_id output` adds its operators once; `input`
  /// stands for `source` in the first run and for the previous run's output after. Returns
  /// the last run's output. The body's operators write only tensors the body declares. Blocks
  /// do not nest (propagation and training steps run one block after another).
  template <class Body>
  constexpr tensor_id repeat(std::size_t count, tensor_id source, Body&& body) {
    if (count == 0) raise(make_error(error_kind::invalid_argument, "plan", "a block repeats at least once"));
    if (count > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()))  // costs count runs in int64
      raise(make_error(error_kind::invalid_argument, "plan", "a block repeats more than {} times",
                       std::numeric_limits<std::int64_t>::max()));
    if (in_block_)
      raise(make_error(error_kind::invalid_argument, "plan",
                       "a repeat inside a repeated block's body: nested repeated blocks are not supported (write the "
                       "inner block's runs out)"));
    if (block_count_ == blocks_.size())
      raise(make_error(error_kind::invalid_argument, "plan", "more than {} repeated blocks", blocks_.size()));
    const auto& s = tensors_[checked(source)];
    const tensor_id input = add_tensor({s.name, s.shape, s.element_bytes, false, {}, block_input});
    block_info b{op_count_, 0, count, source, input, {}};
    in_block_ = true;
    b.output = body(*this, input);
    in_block_ = false;
    b.end_op = op_count_;
    b.end_tensor = tensor_count_;
    checked(b.output);
    for (std::size_t i = b.first_op; i < b.end_op; ++i)
      for (auto t : ops_[i].outputs)
        if (t <= input.index)
          raise(make_error(error_kind::invalid_argument, "plan",
                           "operator {} of a repeated block writes tensor {}, declared outside the block", i, t));
    if (b.output.index <= input.index && b.output != input)
      raise(make_error(error_kind::invalid_argument, "plan", "a repeated block's output (tensor {}) is declared outside it",
                       b.output.index));
    if (!(tensors_[b.output.index].shape == s.shape))
      raise(make_error(error_kind::invalid_argument, "plan", "a repeated block's output (tensor {}) must have its input's shape",
                       b.output.index));
    blocks_[block_count_++] = b;
    return b.output;
  }

  /// Marks the operators `body(plan&)` adds as a region that selective recomputation
  /// (`recompute::selective`) runs again in backward instead of keeping its outputs: Megatron's
  /// choice is attention's core (QK^T, softmax, its dropout, the product with V).
  template <class Body>
  constexpr void recomputable(Body&& body) {
    const bool outer = recomputable_;
    recomputable_ = true;
    body(*this);
    recomputable_ = outer;
  }

  constexpr const process_mesh& mesh() const noexcept { return mesh_; }
  /// The options a training step was built with (a forward plan's are the defaults).
  constexpr const training_options& training() const noexcept { return training_; }
  constexpr ctspmd::semantics semantics() const noexcept { return semantics_; }
  constexpr std::size_t tensor_count() const noexcept { return tensor_count_; }
  constexpr std::size_t op_count() const noexcept { return op_count_; }
  constexpr std::size_t block_count() const noexcept { return block_count_; }
  constexpr const tensor_info& tensor_at(std::size_t i) const { return tensors_[index_check(i, tensor_count_)]; }
  constexpr const operator_info& op_at(std::size_t i) const { return ops_[index_check(i, op_count_)]; }
  constexpr const block_info& block_at(std::size_t i) const { return blocks_[index_check(i, block_count_)]; }

  /// `producer` of a block's input tensor: written by the block's previous run.
  static constexpr std::int64_t block_input = -2;

 private:
  constexpr void lay_out(tensor_id t, const tensor_dist_attr& attr, bool replace) {
    auto& info = tensors_[checked(t)];
    if (info.producer == block_input || (info.annotated && !replace))
      raise(make_error(error_kind::invalid_argument, "plan",
                       "tensor {} is a block's input or already annotated: it cannot be annotated", t.index));
    if (!(attr.process_mesh() == mesh_))
      raise(make_error(error_kind::invalid_argument, "plan", "tensor {} is annotated on another process mesh", t.index));
    dist_tensor_spec::check(info.shape, attr).check();
    info.annotated = true;
    info.annotation = attr;
  }
  static constexpr std::size_t index_check(std::size_t i, std::size_t n) {
    if (i >= n) raise(make_error(error_kind::invalid_argument, "plan", "index {} is out of range ({} entries)", i, n));
    return i;
  }
  constexpr std::uint16_t checked(tensor_id t) const {
    if (t.index >= tensor_count_)
      raise(make_error(error_kind::invalid_argument, "plan", "tensor {} is not a tensor of this plan", t.index));
    return static_cast<std::uint16_t>(t.index);
  }
  /// The shapes operator `o` (the next one) declares for its outputs against those its rule
  /// derives from its inputs' declared shapes: the same rank, and the same size at every dim
  /// (-1, unknown, matches any size). Operand counts the rule does not take are left to
  /// propagation, which reports them.
  template <class Rule>
  constexpr void check_output_shapes(const operator_info& o, const typename Rule::attributes& attrs) {
    if (!Rule::input_count.accepts(o.inputs.size())) return;
    // (Scratch buffers of the plan, reused: building them per operator would cost a plan of
    // 1,000 operators a third of Clang's constexpr step limit.)
    for (std::size_t k = 0; k < o.inputs.size(); ++k) {
      const auto& shape = tensors_[o.inputs[k]].shape;
      shape_inputs_[k] = dist_tensor_spec(shape, detail::replicated_of_rank[shape.size()]);
    }
    shape_list& derived = derived_shapes_;
    derived.clear();
    if (auto st = Rule::output_shapes(derived, {shape_inputs_.data(), o.inputs.size()}, attrs); !st) {
      error_info e = st.error();
      e.op = o.name();
      detail::plan_fails_at_operator_build(op_count_, e);
    }
    if (derived.size() != o.outputs.size()) return;
    for (std::size_t j = 0; j < derived.size(); ++j) {
      const auto& declared = tensors_[o.outputs[j]].shape;
      const auto& want = derived[j];
      if (declared.size() != want.size())
        detail::plan_fails_at_operator_build(
            op_count_, make_error(error_kind::invalid_argument, o.name(),
                                  "operator {}: output {} is declared with rank {}, but the rule infers rank {}",
                                  op_count_, j, declared.size(), want.size()));
      for (std::size_t d = 0; d < want.size(); ++d)  // (four values per message: with one output, its size)
        if (declared[d] != want[d] && declared[d] != -1 && want[d] != -1)
          detail::plan_fails_at_operator_build(
              op_count_,
              derived.size() == 1
                  ? make_error(error_kind::invalid_argument, o.name(),
                               "operator {}: the output is declared with size {} at dim {}, but the rule derives size {}",
                               op_count_, declared[d], d, want[d])
                  : make_error(error_kind::invalid_argument, o.name(),
                               "operator {}: output {} is declared with a size at dim {} other than the size {} the "
                               "rule derives",
                               op_count_, j, d, want[d]));
    }
  }

  constexpr tensor_id trainable(tensor_id t) {
    tensors_[t.index].trainable = true;
    return t;
  }
  constexpr tensor_id add_tensor(const tensor_info& t) {
    if (tensor_count_ == MaxTensors)
      raise(make_error(error_kind::invalid_argument, "plan", "more than {} tensors (raise plan's MaxTensors)", MaxTensors));
    tensors_[tensor_count_] = t;
    return {tensor_count_++};
  }

  template <std::size_t, std::size_t, std::size_t, std::size_t>
  friend class detail::step_builder;

  named_mesh mesh_;  ///< names, if given, only resolve named layouts
  ctspmd::semantics semantics_ = ctspmd::semantics::fluid;
  std::array<tensor_info, MaxTensors> tensors_{};
  std::array<operator_info, MaxOps> ops_{};
  std::array<block_info, max_blocks> blocks_{};
  std::size_t tensor_count_ = 0, op_count_ = 0, block_count_ = 0;
  training_options training_{};
  bool recomputable_ = false;  ///< `op` is inside `recomputable`
  bool in_block_ = false;      ///< `repeat`'s body is running
  // Scratch of `check_output_shapes`: the operator's inputs as specs, the shapes its rule derives.
  std::array<dist_tensor_spec, max_operands> shape_inputs_{};
  shape_list derived_shapes_{};
};

}  // namespace ctspmd::model

#endif
