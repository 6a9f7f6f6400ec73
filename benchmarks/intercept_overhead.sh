#!/usr/bin/env bash
# The cost of transparent mode's interposition library to calls on files it
# does not intercept: bench_intercept run plainly, then with the library
# preloaded and another folder intercepted, alternated (3 rounds), side by side.
#   benchmarks/intercept_overhead.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build/default}
bench=$build/benchmarks/mlbs_bench_intercept
lib=$build/lib/mlbs/libmlbs_intercept.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/elsewhere" "$work/intercepted"
for round in 1 2 3; do
  "$bench" "$work/elsewhere" > "$work/plain.$round"
  MLBS_INTERCEPT="$work/intercepted" MLBS_RUN_TIERS=mem:64MiB LD_PRELOAD="$lib" \
    "$bench" "$work/elsewhere" > "$work/preloaded.$round"
done
echo "call            plain ns (3 rounds)        preloaded ns (3 rounds)     overhead (best vs best)"
paste "$work"/plain.{1,2,3} "$work"/preloaded.{1,2,3} | awk '{
  p = $2; if ($4 < p) p = $4; if ($6 < p) p = $6
  q = $8; if ($10 < q) q = $10; if ($12 < q) q = $12
  printf "%-14s %8s %8s %8s   %8s %8s %8s   %+6.1f ns (%+.1f%%)\n", $1, $2, $4, $6, $8, $10, $12, q - p, 100 * (q - p) / p }'
