#ifndef CTSPMD_MODEL_STAGED_HPP
#define CTSPMD_MODEL_STAGED_HPP
/// \file One computation spread over several constant expressions: the chain `verified`,
/// `training_step_of`, `verified_cost` and `searched` are built on.
///
/// A compiler bounds the work of one constant expression (Clang: 1,048,576 evaluation steps by
/// default; GCC: 33,554,432 operations), and a long plan's propagation, training step, cost or
/// search takes more. Each is written as a resumable object (`resume` does a budget of work and
/// returns) and described by a *work* type:
///
///     struct my_work {
///       static constexpr auto start();                        // the object after the first part
///       static constexpr void resume(auto& state);            // one more part
///       static constexpr bool finished(const auto& state, std::size_t part);  // after part `part`
///     };
///
/// `staged_part<Work, K>` is the object after part K, a constant of its own computed from part
/// K - 1's; `staged_result<Work>` is the first finished one. The parts are a chain of variables,
/// not of calls, so their number is bounded by the template instantiation depth (some 900), not
/// by the constant-evaluation call depth (512 in Clang). `finished` gets the part's index so that
/// a work whose number of parts is known beforehand can stop there (a part that fails with a
/// compile error then does not lead to endless parts).
#include <cstddef>

namespace ctspmd::model::detail {

/// The state of `Work` after part `Part` (see the file comment).
template <class Work, std::size_t Part>
inline constexpr auto staged_part = [] {
  if constexpr (Part == 0) {
    return Work::start();
  } else {
    auto state = staged_part<Work, Part - 1>;
    Work::resume(state);
    return state;
  }
}();

/// The first part after which `Work` is finished, from part `Part` on.
template <class Work, std::size_t Part = 0>
inline constexpr std::size_t last_staged_part = [] {
  if constexpr (Work::finished(staged_part<Work, Part>, Part))
    return Part;
  else
    return last_staged_part<Work, Part + 1>;
}();

/// The finished state of `Work`.
template <class Work>
inline constexpr const auto& staged_result = staged_part<Work, last_staged_part<Work>>;

}  // namespace ctspmd::model::detail

#endif
