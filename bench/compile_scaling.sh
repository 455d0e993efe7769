#!/usr/bin/env bash
# Compile seconds and peak compiler memory (max RSS) of verifying the GPT plans at 12, 24, 48
# and 96 layers, with GCC and Clang at their default constexpr limits, with the repeated layer
# verified once (induction) and layer by layer. Usage: bench/compile_scaling.sh [layers...]
set -uo pipefail
cd "$(dirname "$0")/.."
layers=("${@:-12 24 48 96}")
read -r -a layers <<<"${layers[*]}"
printf "%-8s %-8s %-10s %10s %12s  %s\n" compiler layers mode seconds "peak MB" result
for cxx in g++ clang++; do
  for induction in 1 0; do
    mode=$([ "$induction" = 1 ] && echo induction || echo per-layer)
    for n in "${layers[@]}"; do
      log=$(mktemp)
      /usr/bin/time -f "%e %M" -o "$log.time" "$cxx" -std=c++20 -O2 -Iinclude -DLAYERS="$n" -DINDUCTION="$induction" \
        -fsyntax-only bench/compile_scaling.cpp >"$log" 2>&1
      rc=$?
      read -r secs kb < <(tail -n 1 "$log.time") || true
      if [ $rc -eq 0 ]; then result=ok; else result="fails: $(grep -m1 -oE 'constexpr[^:]*(limit|steps|ops)[^]]*' "$log" || grep -m1 error "$log" | cut -c1-80)"; fi
      printf "%-8s %-8s %-10s %10s %12d  %s\n" "$cxx" "$n" "$mode" "$secs" $((kb / 1024)) "$result"
      rm -f "$log" "$log.time"
    done
  done
done
