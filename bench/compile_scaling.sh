#!/usr/bin/env bash
# Compile seconds and peak compiler memory (max RSS) of verifying plans during compilation, with
# GCC and Clang at their default constexpr limits:
# - the GPT plans at 12, 24, 48 and 96 layers, with the repeated layer verified once
#   (induction) and layer by layer;
# - flat plans (Megatron MLP blocks written out) of 250, 500 and 1,000 operators, forward only
#   and as training steps (forward, backward, optimizer);
# - the Llama-3-8B plan of examples/llama at the same layer counts, forward only and its
#   training step, by induction;
# - "parsing": the same headers and plan code, nothing verified (subtract it to get the cost
#   of verification).
# Usage: bench/compile_scaling.sh [layers...]   (e.g. bench/compile_scaling.sh 12 96)
set -uo pipefail
cd "$(dirname "$0")/.."
layers=("${@:-12 24 48 96}")
read -r -a layers <<<"${layers[*]}"
printf "%-8s %-10s %-10s %10s %10s %12s  %s\n" compiler plan mode seconds "user s" "peak MB" result
run() {  # compiler, plan label, mode label, defines...
  local cxx=$1 label=$2 mode=$3
  shift 3
  local log
  log=$(mktemp)
  /usr/bin/time -f "%e %U %M" -o "$log.time" "$cxx" -std=c++20 -O2 -Iinclude "$@" -fsyntax-only bench/compile_scaling.cpp \
    >"$log" 2>&1
  local rc=$? secs user kb result
  read -r secs user kb < <(tail -n 1 "$log.time") || true
  if [ $rc -eq 0 ]; then result=ok; else result="fails: $(grep -m1 -oE 'constexpr[^:]*(limit|steps|ops)[^]]*' "$log" || grep -m1 error "$log" | cut -c1-80)"; fi
  printf "%-8s %-10s %-10s %10s %10s %12d  %s\n" "$cxx" "$label" "$mode" "$secs" "$user" $((kb / 1024)) "$result"
  rm -f "$log" "$log.time"
}
parse_only=$(mktemp --suffix=.cpp)
printf '#include "%s/examples/gpt/gpt_plan.hpp"\n#include "%s/examples/llama/llama_plan.hpp"\nint main() {}\n' "$PWD" "$PWD" >"$parse_only"
for cxx in g++ clang++; do
  /usr/bin/time -f "%e %U %M" -o "$parse_only.time" "$cxx" -std=c++20 -O2 -Iinclude -fsyntax-only "$parse_only"
  read -r secs user kb < <(tail -n 1 "$parse_only.time")
  printf "%-8s %-10s %-10s %10s %10s %12d  %s\n" "$cxx" "-" parsing "$secs" "$user" $((kb / 1024)) ok
  for n in "${layers[@]}"; do run "$cxx" "gpt-$n" induction -DLAYERS="$n" -DINDUCTION=1; done
  for n in "${layers[@]}"; do run "$cxx" "gpt-$n" per-layer -DLAYERS="$n" -DINDUCTION=0; done
  for n in 250 500 1000; do run "$cxx" "flat-$n" flat -DFLAT_OPS="$n"; done
  for n in 250 500 1000; do run "$cxx" "flat-$n" flat-step -DFLAT_OPS="$n" -DTRAINING=1; done
  for n in "${layers[@]}"; do run "$cxx" "llama-$n" forward -DLLAMA_LAYERS="$n" -DTRAINING=0; done
  for n in "${layers[@]}"; do run "$cxx" "llama-$n" step -DLLAMA_LAYERS="$n" -DTRAINING=1; done
done
rm -f "$parse_only" "$parse_only.time"
