#include <ctspmd/core/fixed_string.hpp>

#include <string_view>

using ctspmd::fixed_string;

// ---- a literal becomes a structural value ------------------------------------------------
constexpr fixed_string s = "mk,kn->mn";
static_assert(s.size() == 9 && s.view() == "mk,kn->mn" && s[2] == ',');
static_assert(fixed_string("ab") == fixed_string("ab") && !(fixed_string("ab") == fixed_string("abc")));

// ---- usable as a template argument -------------------------------------------------------
template <fixed_string S>
constexpr std::size_t length = S.size();
static_assert(length<"bsh,hd->bsd"> == 11);
static_assert(length<""> == 0);
