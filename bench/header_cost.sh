#!/usr/bin/env bash
# Compile cost of including ctspmd's headers: seconds for `-std=c++20 -fsyntax-only` on a TU
# that includes one header, next to a TU of the standard headers such a library needs.
# Medians of N runs (default 7), GCC and Clang, in one run so that ratios compare like with like.
#   bench/header_cost.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <algorithm>\n#include <array>\n#include <cstdint>\n#include <string_view>\n#include <span>\n#include <utility>\n' \
  > "$tmp/baseline.cpp"
echo '#include <ctspmd/ctspmd.hpp>' > "$tmp/umbrella.cpp"
echo '#include <ctspmd/rules/matmul.hpp>' > "$tmp/matmul.cpp"
echo '#include <ctspmd/runtime.hpp>' > "$tmp/runtime.cpp"

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
measure() {  # compiler, source
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e' "$1" -std=c++20 -fsyntax-only -Iinclude "$2" 2>&1 >/dev/null | tail -n 1
  done | median
}
printf '%-8s %-28s %8s %8s\n' compiler TU seconds ratio
for cxx in g++ clang++; do
  base=$(measure "$cxx" "$tmp/baseline.cpp")
  printf '%-8s %-28s %8s %8s\n' "$cxx" "standard headers (baseline)" "$base" "1.00"
  for tu in umbrella matmul runtime; do
    t=$(measure "$cxx" "$tmp/$tu.cpp")
    printf '%-8s %-28s %8s %8.2f\n' "$cxx" "$tu" "$t" "$(echo "$t / $base" | bc -l)"
  done
done
