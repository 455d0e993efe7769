#!/usr/bin/env bash
# Clang evaluation steps per operator: the smallest -fconstexpr-steps under which
# `try_propagate` of a plan compiles (one constant expression), found by bisection, for a chain
# of N relus and for the GPT plan of examples/gpt with L layers propagated layer by layer.
# The difference between two sizes divided by the operators added is the cost per operator.
# Usage: bench/constexpr_steps.sh   (about 2 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cat >"$src/chain.cpp" <<'EOC'
#include <ctspmd/model/propagate.hpp>
using namespace ctspmd;
constexpr auto make() {
  model::plan<OPS + 1, OPS> p(process_mesh({2, 4}));
  auto x = p.tensor("x", {8, 16, 32}, {0, -1, 1});
  for (int i = 0; i < OPS; ++i) {
    auto y = p.tensor("y", {8, 16, 32});
    p.op<"relu">({x}, {y});
    x = y;
  }
  return p;
}
static_assert(model::try_propagate(make()).ok());
EOC
printf '#include "%s/examples/gpt/gpt_plan.hpp"\nstatic_assert(ctspmd::model::try_propagate(gpt::make_plan<OPS>(), {false}).ok());\n' \
  "$PWD" >"$src/gpt.cpp"
steps() {  # file, OPS
  local lo=1000 hi=64000000 mid
  while [ $((hi - lo)) -gt $((hi / 200)) ]; do
    mid=$(((lo + hi) / 2))
    if clang++ -std=c++20 -Iinclude -fsyntax-only -DOPS="$2" -fconstexpr-steps=$mid "$1" 2>/dev/null; then hi=$mid; else lo=$mid; fi
  done
  echo $hi
}
a=$(steps "$src/chain.cpp" 20) b=$(steps "$src/chain.cpp" 40)
echo "relu chain: 20 ops $a steps, 40 ops $b steps: $(((b - a) / 20)) per relu"
a=$(steps "$src/gpt.cpp" 1) b=$(steps "$src/gpt.cpp" 2)
echo "GPT: 1 layer $a steps, 2 layers $b steps: $((b - a)) per layer of 20 operators"
