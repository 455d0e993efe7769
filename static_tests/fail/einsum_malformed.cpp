// expect: malformed_einsum_notation
// A malformed einsum notation ("-." where "->" was meant) does not compile.
#include <ctspmd/rules/einsum.hpp>

#ifdef CTSPMD_KO
using rule = ctspmd::rules::einsum<"bsh,hd-.bsd">;
#else
using rule = ctspmd::rules::einsum<"bsh,hd->bsd">;
#endif
static_assert(rule::notation.inputs.size() == 2);
