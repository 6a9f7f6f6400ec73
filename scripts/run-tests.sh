#!/usr/bin/env bash
# mlbs — THE test command. Installs the build dependencies (scripts/setup.sh),
# builds and tests the `default` preset (every test), the Python package
# (pip install . and its pytest suite), then builds the `tsan`
# preset and runs the engine and integration tests under ThreadSanitizer, then
# the `asan` preset (AddressSanitizer + UBSan) over every test, and the Python
# suite again against an instrumented extension.
# Works from any directory. Exits non-zero if any stage fails; the last line
# says which.
#
# Environment:
#   MLBS_TEST_TIMEOUT  per-test timeout in seconds (default 600)
#   MLBS_TEST_JOBS     tests run in parallel (default 2)
#   MLBS_SKIP_TSAN=1   skip the ThreadSanitizer stage (local iteration only)
#   MLBS_SKIP_ASAN=1   skip the AddressSanitizer stage (local iteration only)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"

timeout_s=${MLBS_TEST_TIMEOUT:-600}
test_jobs=${MLBS_TEST_JOBS:-2}
start_s=$SECONDS
failed=()
skipped=""
stage="setup"

# The failed tests of a ctest stage, each with the end of its output, printed
# again at the very end: CI shows only the tail of a long log, and the three
# stages' output would otherwise bury the failure of the first.
failed_tests=""
note_failures() {  # note_failures <preset>
  local dir="build/$1/Testing/Temporary"
  [[ -f $dir/LastTestsFailed.log ]] || return 0
  local name
  while IFS=: read -r _ name; do
    failed_tests+=$'\n'"--- [$1] $name: the end of its output ---"$'\n'
    failed_tests+=$(awk -v t="$name" '
      $0 ~ "^[0-9]+/[0-9]+ Test: " && $3 == t { on = 1; next }
      on && /^<end of output>/ { exit }
      on { print }' "$dir/LastTest.log" | tail -n 40)
  done < "$dir/LastTestsFailed.log"
}

finish() {
  local rc=$?
  local elapsed=$((SECONDS - start_s))
  [[ -n $failed_tests ]] && printf '\n=== mlbs run-tests: failed tests ===%s\n' "$failed_tests"
  if ((rc == 0 && ${#failed[@]} == 0)); then
    if [[ -n $skipped ]]; then
      echo "mlbs run-tests: PASSED (${skipped} SKIPPED by MLBS_SKIP_*) in ${elapsed}s"
    else
      echo "mlbs run-tests: ALL PASSED (default + python + tsan + asan) in ${elapsed}s"
    fi
  else
    ((${#failed[@]})) || failed=("$stage")
    echo "mlbs run-tests: FAILED (${failed[*]}) after ${elapsed}s"
    ((rc != 0)) || rc=1
  fi
  exit "$rc"
}
trap finish EXIT

# Each banner says how long the run has taken so far: CI keeps only the log, and
# its stages' lengths are what shows where the time budget goes.
banner() { printf '\n=== mlbs run-tests: %s (at %ds) ===\n' "$*" $((SECONDS - start_s)); }

banner "setup"
stage="setup"
bash scripts/setup.sh

# --- default preset: everything ------------------------------------------------
banner "configure + build (default)"
stage="build default"
cmake --preset default
cmake --build --preset default

banner "ctest (default, all tests)"
stage="ctest default"
if ! ctest --preset default -j "$test_jobs" --output-on-failure --timeout "$timeout_s"; then
  failed+=("ctest default")
  note_failures default
fi

# --- the Python package: built as users build it, then its pytest suite --------
# (in a virtual environment of its own, so the test installs nothing into the
# system's Python; it sees the system's numpy and pytest). Not under the
# sanitizers: the interpreter is not instrumented.
banner "python package (pip install . + pytest)"
stage="python"
venv=build/python/venv
[[ -x $venv/bin/python ]] || python3 -m venv --system-site-packages "$venv"
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
       --config-settings=build-dir=build/python/{wheel_tag} . ||
   ! "$venv/bin/python" -m pytest -q -o faulthandler_timeout="$timeout_s" tests/python; then
  failed+=("python")
fi

# --- tsan preset: engine and integration tests ---------------------------------
if [[ ${MLBS_SKIP_TSAN:-0} == 1 ]]; then
  banner "tsan stage skipped (MLBS_SKIP_TSAN=1)"
  skipped="tsan"
else
  banner "configure + build (tsan)"
  stage="build tsan"
  cmake --preset tsan
  cmake --build --preset tsan

  banner "ctest (tsan, -L 'unit|integration')"
  stage="ctest tsan"
  if ! TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
       ctest --preset tsan -L 'unit|integration' -j "$test_jobs" \
             --output-on-failure --timeout "$timeout_s"; then
    failed+=("ctest tsan")
  note_failures tsan
  fi
fi

# --- asan preset: AddressSanitizer + UBSan over every test -----------------------
if [[ ${MLBS_SKIP_ASAN:-0} == 1 ]]; then
  banner "asan stage skipped (MLBS_SKIP_ASAN=1)"
  skipped="${skipped:+$skipped, }asan"
else
  banner "configure + build (asan)"
  stage="build asan"
  cmake --preset asan
  cmake --build --preset asan

  banner "ctest (asan + ubsan, all tests)"
  stage="ctest asan"
  if ! ctest --preset asan -j "$test_jobs" --output-on-failure --timeout "$timeout_s"; then
    failed+=("ctest asan")
  note_failures asan
  fi

  # The Python extension (its strided copies, block cache, error translation)
  # and the library under it, instrumented, driven by the same pytest suite.
  # The interpreter is not instrumented: the runtimes are preloaded, and leak
  # detection is off (CPython leaves its own allocations at exit).
  banner "python package under ASan + UBSan (pytest)"
  stage="python asan"
  venv=build/python/venv-asan
  [[ -x $venv/bin/python ]] || python3 -m venv --system-site-packages "$venv"
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
         --config-settings=build-dir=build/python/asan-{wheel_tag} \
         --config-settings=cmake.define.MLBS_SANITIZE=address --config-settings=cmake.build-type=Debug . ||
     ! ASAN_OPTIONS=detect_leaks=0 \
       LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
       "$venv/bin/python" -m pytest -q -o faulthandler_timeout="$timeout_s" tests/python; then
    failed+=("python asan")
  fi
fi

((${#failed[@]} == 0))
