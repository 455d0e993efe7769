#include <ctspmd/notation/einsum_notation.hpp>

using namespace ctspmd;

// ---- well-formed notations --------------------------------------------------------------------------
constexpr auto mm = parse_einsum("mk,kn->mn");
static_assert(mm.inputs.size() == 2 && mm.inputs[0] == "mk" && mm.inputs[1] == "kn" && mm.output == "mn");
constexpr auto three = parse_einsum("bsh,hd,de->bse");
static_assert(three.inputs.size() == 3 && three.inputs[2] == "de" && three.output == "bse");
constexpr auto scalar = parse_einsum("k,k->");  // a full contraction: rank-0 output
static_assert(scalar.inputs[0] == "k" && scalar.output.empty());
constexpr auto ones = parse_einsum("a11b,b->a1");  // '1' may repeat, in inputs and output
static_assert(ones.inputs[0] == "a11b" && ones.output == "a1");
constexpr auto upper = parse_einsum("aB,Bc->ac");
static_assert(upper.inputs[0] == "aB");
constexpr auto rank0 = parse_einsum(",a->a");  // a rank-0 operand
static_assert(rank0.inputs.size() == 2 && rank0.inputs[0].empty());

// ---- malformed: each error is invalid_argument and records the position first ------------------------
constexpr auto at = [](std::string_view s) { return try_parse_einsum(s).error().values[0]; };
static_assert(try_parse_einsum("mk,kn-.mn").kind() == error_kind::invalid_argument);
static_assert(at("mk,kn-.mn") == 5);      // '-' without '>'
static_assert(at("mk,k n->mn") == 4);     // a space
static_assert(at("mk,kn->m>n") == 8);     // '>' alone
static_assert(at("mk,kn->mn->") == 9);    // a second '->'
static_assert(at("mk,kn") == 5);          // no '->': the position is the end
static_assert(at("mk,kn->m,n") == 8);     // ',' in the output
static_assert(at("mm,kn->mn") == 1);      // a letter twice in one operand
static_assert(at("mk,kn->mm") == 8);      // a letter twice in the output
static_assert(at("mk,kn->mz") == 8);      // an output letter in no input
static_assert(at("abcdefghij->a") == 9);  // more than max_rank labels
static_assert(at("a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a->a") == 31);  // more than max_operands inputs
static_assert(try_parse_einsum("mk,kn-.mn").error().values[1] == '-');
