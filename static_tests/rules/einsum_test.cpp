#include <ctspmd/rules/einsum.hpp>
#include <ctspmd/rules/matmul.hpp>

#include "../test_support.hpp"

using namespace ctspmd;
using ctspmd::rules::dynamic_einsum;
using ctspmd::rules::einsum;
using ctspmd_test::constant_evaluates;

constexpr process_mesh mesh({2, 3});
constexpr ctspmd_test::on_mesh spec{mesh};

// ==== einsum<"..."> =============================================================================
using proj = einsum<"bsh,hd->bsd">;
static_assert(proj::notation.inputs[0] == "bsh" && proj::notation.output == "bsd");

// The contracted h is sharded: the weight follows, and the output is partial (sum) on its mesh dim.
constexpr auto row_par = proj::infer_forward({spec({4, 16, 32}, {0, -1, 1}), spec({32, 64}, {-1, -1})});
static_assert(row_par.inputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(row_par.inputs[1].dims_mapping() == dims_mapping{1, -1});
static_assert(row_par.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(row_par.outputs[0].partial_dims() == mesh_dims{1});
static_assert(row_par.outputs[0].partial_reduce_type(1) == reduce_type::sum);
// d sharded: column parallel, nothing partial.
constexpr auto col_par = proj::infer_forward({spec({4, 16, 32}, {0, -1, -1}), spec({32, 64}, {-1, 1})});
static_assert(col_par.outputs[0].dims_mapping() == dims_mapping{0, -1, 1} && !col_par.outputs[0].is_partial());

// Three operands; two contracted letters sharded on two mesh dims: partial on both.
using chain = einsum<"ij,jk,kl->il">;
constexpr auto chained = chain::infer_forward({spec({4, 8}, {-1, 0}), spec({8, 6}, {-1, 1}), spec({6, 2}, {-1, -1})});
static_assert(chained.inputs[1].dims_mapping() == dims_mapping{0, 1});
static_assert(chained.inputs[2].dims_mapping() == dims_mapping{1, -1});
static_assert(chained.outputs[0].dims_mapping() == dims_mapping{-1, -1});
static_assert(chained.outputs[0].partial_dims() == mesh_dims{0, 1});

// '1' labels and size-1 dims are never sharded.
using bias_add = einsum<"b1h,h->bh">;
constexpr auto ones = bias_add::infer_forward({spec({4, 1, 8}, {0, 1, -1}), spec({8}, {-1})});
static_assert(ones.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
static_assert(ones.outputs[0].dims_mapping() == dims_mapping{0, -1});
using outer = einsum<"i,j->ij">;
constexpr auto size1 = outer::infer_forward({spec({1}, {0}), spec({5}, {1})});
static_assert(size1.inputs[0].dims_mapping() == dims_mapping{-1});
static_assert(size1.outputs[0].dims_mapping() == dims_mapping{-1, 1});

// Conflicts: a mesh dim claimed by two letters stays with the first; a letter on two mesh
// dims is unimplemented.
constexpr auto first = proj::infer_forward({spec({4, 16, 32}, {0, -1, -1}), spec({32, 64}, {-1, 0})});
static_assert(first.outputs[0].dims_mapping() == dims_mapping{0, -1, -1} && first.inputs[1].dims_mapping() == dims_mapping{-1, -1});
static_assert(proj::try_infer_forward({spec({4, 16, 32}, {-1, -1, 0}), spec({32, 64}, {1, -1})}).kind() ==
              error_kind::unimplemented);

// matmul is the einsum "mk,kn->mn" (the same machinery gives the same answers).
constexpr auto mm_x = spec({64, 32}, {1, 0});
constexpr auto mm_y = spec({32, 48}, {-1, -1});
static_assert(einsum<"mk,kn->mn">::infer_forward({mm_x, mm_y}) == rules::matmul::infer_forward({mm_x, mm_y}));

// Errors: operand counts and ranks against the notation.
constexpr auto rank_err = proj::try_infer_forward({spec({4, 32}, {-1, -1}), spec({32, 64}, {-1, -1})});
static_assert(rank_err.kind() == error_kind::invalid_argument && rank_err.error().op == "einsum");
static_assert(rank_err.error().values == std::array<std::int64_t, 4>{0, 2, 3, 0});
static_assert(!proj::try_infer_forward({spec({4, 16, 32}, {-1, -1, -1})}));
static_assert(!constant_evaluates<[] { return proj::infer_forward({spec({4, 32}, {-1, -1}), spec({32, 64}, {-1, -1})}); }>);

// ---- backward ----------------------------------------------------------------------------------------
constexpr auto back = proj::infer_backward({spec({4, 16, 32}, {-1, -1, 1}), spec({32, 64}, {0, -1})},
                                           {spec({4, 16, 64}, {0, -1, 1})});
static_assert(back.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});  // h is contracted: replicated
static_assert(back.inputs[1].dims_mapping() == dims_mapping{-1, 1});
static_assert(back.outputs[0].dims_mapping() == dims_mapping{0, -1, 1});
static_assert(!proj::try_infer_backward({spec({4, 16, 32}, {-1, -1, -1}), spec({32, 64}, {-1, -1})},
                                        {spec({4, 64}, {-1, -1})}));  // output rank 2, notation 3
static_assert(!proj::try_infer_backward({spec({4, 16, 32}, {-1, -1, -1}), spec({32, 64}, {-1, -1})}, {}));

// ==== dynamic_einsum: the notation as an attribute ===================================================
static_assert(dynamic_einsum::name == "einsum");
static_assert(dynamic_einsum::infer_forward({spec({4, 16, 32}, {0, -1, 1}), spec({32, 64}, {-1, -1})},
                                            {.notation = "bsh,hd->bsd"}) == row_par);
static_assert(dynamic_einsum::infer_backward({spec({4, 16, 32}, {-1, -1, 1}), spec({32, 64}, {0, -1})},
                                             {spec({4, 16, 64}, {0, -1, 1})}, {.notation = "bsh,hd->bsd"}) == back);
constexpr auto malformed = dynamic_einsum::try_infer_forward({spec({4}, {-1})}, {.notation = "a-b"});
static_assert(malformed.kind() == error_kind::invalid_argument && malformed.error().values[0] == 1 &&
              malformed.error().op == "einsum");
static_assert(!dynamic_einsum::try_infer_forward({spec({4}, {-1})}));  // an empty notation has no '->'

// ---- the contracted labels, from which the forward reads the output's partial dims --------------
constexpr bool contracted_are(std::string_view notation, std::string_view expected) {
  const auto c = rules::detail::contracted_labels(*try_parse_einsum(notation));
  return std::string_view(c.data(), c.size()) == expected;
}
static_assert(contracted_are("bsh,hd->bsd", "h"));
static_assert(contracted_are("ij,jk,kl->il", "jk"));  // each once, in order of appearance
static_assert(contracted_are("i1,ij->j", "i"));       // '1' is no label
static_assert(contracted_are("ab,ab->ab", ""));

// ==== phi: co-shard unions ===========================================================================
namespace phi_cases {
using ctspmd_test::co;
using ctspmd_test::is;
constexpr process_mesh m3({2, 2, 2});
constexpr auto contracted = proj::infer_forward({co(m3, {4, 16, 32}, {{0}, {}, {1}}), co(m3, {32, 64}, {{2}, {}})}, {},
                                                semantics::phi);
static_assert(is(contracted.inputs[0], {{0}, {}, {1, 2}}) && is(contracted.outputs[0], {{0}, {}, {}}) &&
              contracted.outputs[0].partial_dims() == mesh_dims{1, 2});
static_assert(!proj::try_infer_forward({co(m3, {4, 16, 32}, {{0}, {}, {1}}), co(m3, {32, 64}, {{2}, {}})}));
}  // namespace phi_cases
