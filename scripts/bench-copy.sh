#!/usr/bin/env bash
# Runs the copy micro-benchmarks (benchmarks/bench_copy.cpp) in the default
# build and prints, per size, mlbs's copy bandwidth as a ratio of the best
# baseline (memcpy on 1 or 2 threads) measured in the same run.
#
#   scripts/bench-copy.sh                       # every size, 5 repetitions (medians)
#   MLBS_BENCH_REPS=1 scripts/bench-copy.sh --benchmark_filter='/(4194304|67108864)/'
#
# Extra arguments go to the benchmark binary. MLBS_COPY / MLBS_COPY_THREADS
# apply (docs/fast-copy.md). Results JSON: build/default/benchmarks/copy.json.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
build=build/default
bin=$build/benchmarks/mlbs_bench_copy
if [[ ! -x $bin ]]; then
  bash scripts/setup.sh
  cmake --preset default
fi
cmake --build "$build" --target mlbs_bench_copy >/dev/null

json=$build/benchmarks/copy.json
# Repetitions in random order, so a burst of load from whoever shares the
# machine hits every contender alike; the table uses the medians.
"$bin" --benchmark_repetitions="${MLBS_BENCH_REPS:-5}" --benchmark_enable_random_interleaving=true \
       --benchmark_report_aggregates_only=true \
       --benchmark_out="$json" --benchmark_out_format=json "$@"
echo
python3 -B benchmarks/copy_ratios.py "$json"
