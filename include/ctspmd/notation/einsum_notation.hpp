#ifndef CTSPMD_NOTATION_EINSUM_NOTATION_HPP
#define CTSPMD_NOTATION_EINSUM_NOTATION_HPP
/// \file Einsum notation: `"bsh,hd->bsd"`, one label per dim of each operand, operands
/// separated by `,`, `->` before the output's labels. Letters absent from the output are
/// contracted. `'1'` marks a size-1 dim (never sharded).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctspmd/core/config.hpp>
#include <ctspmd/core/error.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/notation/axes.hpp>

namespace ctspmd {

/// A parsed einsum notation: each input's labels, then the output's.
struct einsum_notation {
  static_vector<axes_string, max_operands> inputs;
  axes_string output;
  friend constexpr bool operator==(const einsum_notation&, const einsum_notation&) = default;
};

/// Parses an einsum notation. Every error is an `invalid_argument` whose first value is the
/// 0-based position of the offending character in `s`.
constexpr result<einsum_notation> try_parse_einsum(std::string_view s) {
  constexpr std::string_view op = "einsum notation";
  einsum_notation n;
  n.inputs.push_back({});
  bool in_output = false;
  for (std::size_t p = 0; p < s.size(); ++p) {
    const char c = s[p];
    axes_string& current = in_output ? n.output : n.inputs.back();
    if (c == '-' && p + 1 < s.size() && s[p + 1] == '>') {
      if (in_output) return make_error(error_kind::invalid_argument, op, "notation position {}: a second '->'", p);
      in_output = true;
      ++p;
    } else if (c == ',' && !in_output) {
      if (n.inputs.size() == max_operands)
        return make_error(error_kind::invalid_argument, op, "notation position {}: more than max_operands = {} inputs", p,
                          max_operands);
      n.inputs.push_back({});
    } else if (!is_axis_label(c)) {
      return make_error(error_kind::invalid_argument, op,
                        "notation position {}: '{c}' is not an axis label (a-z, A-Z, '1'), ',' before the '->', or '->'", p, c);
    } else if (current.size() == max_rank) {
      return make_error(error_kind::invalid_argument, op, "notation position {}: an operand has more than max_rank = {} labels",
                        p, max_rank);
    } else if (c != broadcast_label && current.contains(c)) {
      return make_error(error_kind::invalid_argument, op, "notation position {}: label '{c}' appears twice in one operand", p, c);
    } else {
      if (in_output) {
        bool found = false;
        for (const auto& in : n.inputs) found = found || in.contains(c);
        if (!found && c != broadcast_label)
          return make_error(error_kind::invalid_argument, op, "notation position {}: output label '{c}' occurs in no input", p, c);
      }
      current.push_back(c);
    }
  }
  if (!in_output) return make_error(error_kind::invalid_argument, op, "notation position {}: no '->' before the output", s.size());
  return n;
}

/// Throwing form of `try_parse_einsum`.
constexpr einsum_notation parse_einsum(std::string_view s) { return try_parse_einsum(s).value(); }

}  // namespace ctspmd

#endif
