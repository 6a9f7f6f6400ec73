#!/usr/bin/env bash
# The long crash test (docs/crash-testing.md): builds mlbs_crash in the default
# build, then, for each layout, SIGKILLs a child writing a persistent store
# MLBS_CRASH_KILLS times at random moments, recovering and checking the store
# after every kill. Prints each run's summary; exits non-zero if any run
# found a violation (its store is then kept; the rerun line says how to repeat
# it with the same seed). About 0.25 s per kill on a 2-core VM.
#
#   scripts/crash-test.sh                                  # 1000 kills x file, log
#   MLBS_CRASH_KILLS=200 MLBS_CRASH_LAYOUTS=log scripts/crash-test.sh --io-backend pread
#
# Environment:
#   MLBS_CRASH_KILLS    kills per layout (default 1000)
#   MLBS_CRASH_LAYOUTS  comma-separated layouts (default file,log)
#   MLBS_CRASH_SEED     seed of every run (default: one from the clock, printed)
#   MLBS_CRASH_DIR      where the stores go (default build/default/crash-test)
# Extra arguments go to mlbs_crash (e.g. --io-backend pread, --no-fast-tier,
# --helpers 1, --max-delay-ms 1000; see build/default/tests/mlbs_crash --help).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
build=build/default
bin=$build/tests/mlbs_crash
if [[ ! -f $build/build.ninja ]]; then
  bash scripts/setup.sh
  cmake --preset default >/dev/null
fi
cmake --build "$build" --target mlbs_crash >/dev/null

kills=${MLBS_CRASH_KILLS:-1000}
seed=${MLBS_CRASH_SEED:-$(date +%s)}
dir=${MLBS_CRASH_DIR:-$repo_root/$build/crash-test}
IFS=, read -r -a layouts <<<"${MLBS_CRASH_LAYOUTS:-file,log}"

failed=()
for layout in "${layouts[@]}"; do
  echo "=== mlbs crash test: layout $layout, $kills kills, seed $seed"
  if ! "$bin" --kills "$kills" --seed "$seed" --layout "$layout" --dir "$dir/$layout" "$@"; then
    failed+=("$layout")
  fi
done
if ((${#failed[@]})); then
  echo "mlbs crash test: FAILED (${failed[*]})"
  exit 1
fi
echo "mlbs crash test: PASSED (${layouts[*]}: $kills kills each)"
