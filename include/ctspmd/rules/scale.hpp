#ifndef CTSPMD_RULES_SCALE_HPP
#define CTSPMD_RULES_SCALE_HPP
/// \file The `scale` and `pow` rules: unary elementwise operators with attributes
/// (`out = scale * x + bias` or `scale * (x + bias)`; `out = x ^ y`).
///
/// They are the elementwise rule on one input (elementwise.hpp): x's layout is kept (merged
/// alone: under `phi` with the co-shard union), the output takes it, and partial status is
/// dropped, as phi's ScaleInferSpmd and PowInferSpmd do (a partial x is reduced first: neither a
/// bias nor a power commutes with the sum). Backward: x takes the output's mapping (same rank
/// and sizes). The attributes do not affect sharding. Both rules exist only in phi; they behave
/// the same under both semantics except for that merge policy.

#include <cstdint>

#include <ctspmd/rules/elementwise.hpp>
#include <ctspmd/rules/kit/labels_and_merges.hpp>
#include <ctspmd/rules/kit/rule_base.hpp>

namespace ctspmd::rules {

/// Attributes of `scale` (Paddle's defaults).
struct scale_attributes {
  double scale = 1.0;            ///< the factor
  double bias = 0.0;             ///< the addend
  bool bias_after_scale = true;  ///< scale * x + bias (else scale * (x + bias))
};

/// The scale rule (unary elementwise; see the file comment).
struct scale : rule_base<scale, scale_attributes> {
  static constexpr std::string_view name = "scale";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    return elementwise::forward(info, in, {}, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    return elementwise::backward(info, in, out, {}, s);
  }
};

/// Attributes of `pow` (Paddle's default).
struct pow_attributes {
  double y = 1.0;  ///< the exponent
};

/// The pow rule (unary elementwise; see the file comment). Named `power` in C++ so that it does
/// not hide `std::pow` where both are visible; its operator name is `pow`.
struct power : rule_base<power, pow_attributes> {
  static constexpr std::string_view name = "pow";
  static constexpr operand_count input_count{1};
  static constexpr operand_count output_count{1};

  /// x's shape.
  static constexpr status output_shapes(shape_list& out, spec_span in, const attributes&) {
    return shapes_of(out, in, {0});
  }
  static constexpr status forward(spmd_info& info, spec_span in, const attributes&, semantics s) {
    return elementwise::forward(info, in, {}, s);
  }
  static constexpr status backward(spmd_info& info, spec_span in, spec_span out, const attributes&, semantics s) {
    return elementwise::backward(info, in, out, {}, s);
  }
};

}  // namespace ctspmd::rules

#endif
