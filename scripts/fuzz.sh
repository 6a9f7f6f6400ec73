#!/usr/bin/env bash
# mlbs — runs every libFuzzer target for a bounded time (docs/fuzzing.md).
# Installs clang and libFuzzer (scripts/setup.sh --fuzz), builds the `fuzz`
# preset, then runs each target in turn for MLBS_FUZZ_SECONDS on its seed
# corpus fuzz/corpus/<name>/ (read only) and a working corpus
# build/fuzz/corpus/<name>/ (where new inputs go, kept between runs).
# Exits non-zero if any target crashes or reports a contract violation; the
# input that does it is left in build/fuzz/findings/<name>/ and its path
# printed (replay it: build/fuzz/fuzz/fuzz_<name> <file>). Works from any directory.
#
# Usage: scripts/fuzz.sh [-t SECONDS] [TARGET...]
#   TARGET: config_toml env journal log_index tier_spec values (default: all)
# Environment:
#   MLBS_FUZZ_SECONDS  seconds per target (default 60); -t overrides it
#   MLBS_FUZZ_JOBS     build jobs (default 2)
#   MLBS_FUZZ_ARGS     extra libFuzzer flags, e.g. "-max_len=8192"
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"

seconds=${MLBS_FUZZ_SECONDS:-60}
while getopts "t:h" opt; do
  case $opt in
    t) seconds=$OPTARG ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "mlbs fuzz: seconds must be a positive integer, not '$seconds'" >&2; exit 2; }

build=build/fuzz
all_targets=()
for src in fuzz/*.cpp; do
  name=$(basename "$src" .cpp)
  [[ $name == make_seeds ]] || all_targets+=("$name")
done
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ -f fuzz/$t.cpp ]] || { echo "mlbs fuzz: no target '$t' (have: ${all_targets[*]})" >&2; exit 2; }
done

bash scripts/setup.sh --fuzz
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "${MLBS_FUZZ_JOBS:-2}"

# The configuration targets share a dictionary of the words their parsers know.
dictionary() {
  case $1 in
    journal | log_index) ;;
    *) echo "-dict=fuzz/config.dict" ;;
  esac
}

failed=()
summary=()
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  findings=$build/findings/$t
  log=$build/fuzz-$t.log
  mkdir -p "$corpus"
  # The shipped example configuration is a seed too, as it is now.
  [[ $t != config_toml ]] || cp examples/mlbs.toml "$corpus/example-mlbs.toml"
  rm -rf "$findings"
  mkdir -p "$findings"
  printf '\n=== mlbs fuzz: %s for %ss ===\n' "$t" "$seconds"
  rc=0
  # shellcheck disable=SC2046,SC2086  # word splitting wanted
  timeout --kill-after=10 $((seconds + 120)) "$build/fuzz/fuzz_$t" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/" $(dictionary "$t") ${MLBS_FUZZ_ARGS:-} \
    "$corpus" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)  # none if the seeds crash
  line="$t: ${runs:-?} executions, coverage ${cov:-?} edges, corpus $(find "$corpus" -type f | wc -l) inputs"
  reproducers=$(find "$findings" -type f | sort)
  if ((rc != 0)) || [[ -n $reproducers ]]; then
    failed+=("$t")
    line+=", FAILED (exit $rc)"
    grep -E 'contract violated|ERROR: |SUMMARY: ' "$log" | head -5 || true
    for r in $reproducers; do echo "mlbs fuzz: $t: reproducer $r"; done
    echo "mlbs fuzz: $t: full log $log"
  fi
  echo "$line"
  summary+=("$line")
done

printf '\n=== mlbs fuzz: summary (%ss per target) ===\n' "$seconds"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "mlbs fuzz: FAILED (${failed[*]}): reproducers in $build/findings/"
  exit 1
fi
echo "mlbs fuzz: no findings"
