#!/usr/bin/env bash
# Transparent mode's tests with unmodified programs (docs/transparent.md):
# each case runs the same commands twice, plainly in one folder and under
# mlbs-run with another folder intercepted, then requires what the commands
# printed and the files they left to be byte-identical, and mlbs-run to have
# cached them (its summary names the files it cached).
#
#   check.sh CASE MLBS_RUN [SEMANTICS_PROGRAM]
#   CASE: semantics | semantics-small | coreutils | numpy | h5py | devito | errors | full | sigkill
set -euo pipefail

case_name=$1
run=$2
semantics=${3:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/mlbs-intercept-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/plain" "$work/cached" "$work/nvme"

fail() { echo "FAIL: $*" >&2; exit 1; }

# compare LABEL: the two runs' output and folders.
compare() {
  diff "$work/plain.out" "$work/cached.out" > "$work/out.diff" ||
    { head -40 "$work/out.diff"; fail "$1: the program printed other things under mlbs-run"; }
  (cd "$work/plain" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum) > "$work/plain.sum"
  (cd "$work/cached" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum) > "$work/cached.sum"
  diff "$work/plain.sum" "$work/cached.sum" ||
    fail "$1: the files differ at their real paths after the run"
  [[ -s $work/plain.sum ]] || fail "$1: the program left no file to compare"
  grep -q "cached [1-9][0-9]* file" "$work/cached.err" ||
    { cat "$work/cached.err"; fail "$1: mlbs-run cached nothing (was the library preloaded?)"; }
  echo "ok: $1 ($(wc -l < "$work/plain.sum") files identical)"
}

# run_both LABEL TIERS... -- COMMAND (runs COMMAND with DIR set to the folder)
run_both() {
  local label=$1; shift
  local opts=()
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  (cd "$work" && DIR="$work/plain" "$@") > "$work/plain.out" 2> "$work/plain.err" ||
    { cat "$work/plain.err"; fail "$label: the plain run failed"; }
  (cd "$work" && DIR="$work/cached" "$run" --intercept "$work/cached" "${opts[@]}" -- "$@") \
    > "$work/cached.out" 2> "$work/cached.err" || { cat "$work/cached.err"; fail "$label: the run under mlbs-run failed"; }
  compare "$label"
}

case $case_name in
  semantics)
    # Chunks of 16 MiB, a cache tier; then chunks of 1 MiB read back newest first.
    run_both "stdio and POSIX, 16 MiB chunks" --tiers "mem:64MiB,dir:$work/nvme:128MiB" -- sh -c "\"$semantics\" \"\$DIR\""
    rm -rf "$work/plain" "$work/cached" && mkdir -p "$work/plain" "$work/cached"
    run_both "stdio and POSIX, 1 MiB chunks, lifo" --chunk 1MiB --schedule lifo \
      --tiers "mem:8MiB,dir:$work/nvme:16MiB" -- sh -c "\"$semantics\" \"\$DIR\""
    ;;
  semantics-small)
    # Chunks of 64 KiB through 1 MiB of DRAM and 4 MiB of cache: every
    # operation crosses chunks, and records spill to both tiers below DRAM.
    run_both "stdio and POSIX, 64 KiB chunks" --chunk 64KiB --tiers "mem:1MiB,dir:$work/nvme:4MiB" \
      -- sh -c "\"$semantics\" \"\$DIR\""
    ;;
  coreutils)
    # dd allocates its buffer with aligned_alloc(page, bs), which ASan (preloaded
    # into every program here under the asan preset) refuses for a size that
    # is not a multiple of the page: there, odd sizes come from seek and skip.
    export BS_ODD=4099 BS_SMALL=777 BS_ONE=1 BS_LARGE=65537
    [[ ${MLBS_TEST_SANITIZER:-} == address ]] && export BS_ODD=8192 BS_SMALL=4096 BS_ONE=4096 BS_LARGE=69632
    script='set -e
      cd "$DIR"
      head -c 5000000 /dev/urandom > /dev/null
      seq 1 200000 > numbers.txt
      cp numbers.txt copy.txt
      cat numbers.txt >> copy.txt
      cat numbers.txt numbers.txt > twice.txt
      dd if=numbers.txt of=dd.bin bs=$BS_ODD status=none
      dd if=numbers.txt of=dd.bin bs=$BS_SMALL skip=13 seek=5000 conv=notrunc status=none
      dd if=/dev/zero of=holes.bin bs=$BS_ONE count=1 seek=3000000 oflag=seek_bytes status=none
      dd if=numbers.txt of=holes.bin bs=$BS_LARGE count=3 conv=notrunc status=none
      sort -r numbers.txt > sorted.txt
      tee teed.txt < sorted.txt | tail -n 3
      mv copy.txt moved.txt
      truncate -s 100000 moved.txt
      truncate -s 300000 twice.txt
      rm sorted.txt
      mkdir sub && cp -r moved.txt sub/ && mv sub sub2
      ls -l --time-style=+ . sub2 | sed "s/  */ /g" | cut -d" " -f1,5-
      wc -c numbers.txt copy.txt 2>&1 || true
      sha256sum moved.txt twice.txt dd.bin holes.bin teed.txt sub2/moved.txt
      cat dd.bin | sha256sum
      printf "by the shell, " > shell.txt && sh -c "printf \"by a child shell, \" >> shell.txt"
      printf "then the first again" >> shell.txt
      python3 -c "import os; f = open(\"exit.txt\", \"w\"); f.write(\"written, then _exit\"); f.flush(); os._exit(0)"'
    run_both "coreutils (cp, dd, cat >>, sort, tee, mv, truncate, rm), shells that _exit() in turn" --chunk 1MiB --tiers "mem:16MiB,dir:$work/nvme:32MiB" \
      -- sh -c "$script"
    ;;
  numpy)
    python3 -c 'import numpy' 2> /dev/null || { echo "numpy is not installed: skipped"; exit 77; }
    script='
import numpy as np, os, sys
d = os.environ["DIR"]
a = np.arange(3_000_000, dtype=np.float32)
for k in range(12):
    np.save(os.path.join(d, f"u{k}.npy"), a * k)
for k in range(12):  # an fsync loop, as a checkpoint writer would
    fd = os.open(os.path.join(d, f"u{k}.npy"), os.O_RDONLY)
    os.fsync(fd); os.close(fd)
for k in reversed(range(12)):
    b = np.load(os.path.join(d, f"u{k}.npy"))
    print(k, b.shape, b.dtype, float(b.sum()), bool((b == a * k).all()))
np.savez(os.path.join(d, "both.npz"), a=a, b=a[::7])
z = np.load(os.path.join(d, "both.npz"))
print(float(z["a"].sum()), float(z["b"].sum()), os.path.getsize(os.path.join(d, "u3.npy")))
'
    run_both "numpy np.save / fsync / np.load" --chunk 4MiB --tiers "mem:24MiB,dir:$work/nvme:48MiB" \
      --trace "$work/trace.json" -- python3 -c "$script"
    # --trace: the helpers' spans of every process that cached a file, in one Chrome trace.
    python3 - "$work/trace.json" <<'PY' || fail "--trace: no merged trace with the helpers' copies"
import json, sys
t = json.load(open(sys.argv[1]))
spans = [e for e in t["traceEvents"] if e.get("ph") == "X"]
assert spans and all(isinstance(e["pid"], int) and e["pid"] > 1 for e in spans), "spans under the processes' pids"
assert t["otherData"]["processes"] >= 1
print("ok: --trace", len(spans), "spans")
PY
    ;;
  h5py)
    python3 -c 'import h5py' 2> /dev/null || { echo "h5py is not installed: skipped"; exit 77; }
    script='
import h5py, numpy as np, os
d = os.environ["DIR"]
a = np.arange(4_000_000, dtype=np.float64).reshape(2000, 2000)
with h5py.File(os.path.join(d, "data.h5"), "w", track_order=True) as f:
    f.create_dataset("a", data=a, track_times=False)
    f.create_dataset("c", data=a[:100] * 2, chunks=(10, 2000), track_times=False)
    g = f.create_group("g", track_order=True)
    g.attrs["note"] = "cached"
with h5py.File(os.path.join(d, "data.h5"), "r+") as f:
    f["a"][500:510] = -1
with h5py.File(os.path.join(d, "data.h5"), "r") as f:
    print(float(f["a"][...].sum()), float(f["c"][...].sum()), f["g"].attrs["note"])
'
    run_both "h5py write, update, read" --chunk 1MiB --tiers "mem:8MiB,dir:$work/nvme:16MiB" -- python3 -c "$script"
    ;;
  devito)
    # examples/python/devito_npsave.py, a small grid: the same image and the
    # same .npy files, the snapshots spilling from DRAM to the cache tier.
    python3 -c "import devito" 2> /dev/null || { echo "skipped: no devito"; exit 77; }
    example=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/examples/python/devito_npsave.py
    run_both "Devito RTM with np.save / np.load" --chunk 1MiB --tiers "mem:4MiB,dir:$work/nvme:8MiB" \
      -- sh -c "python3 \"$example\" --dir \"\$DIR\" --shape 31 --nbl 10 --tn 250 |
                python3 -c 'import json, sys; print(json.load(sys.stdin)[\"image_sha256\"])'"
    ;;
  sigkill)
    # A writer fsync()s files and logs each one after its fsync() returned;
    # SIGKILL at a random moment; every file it logged must be intact.
    writer=$semantics  # the fsync_writer program
    for round in 1 2 3 4 5; do
      rm -rf "$work/cached" && mkdir -p "$work/cached" && rm -f "$work/log"
      "$run" --quiet --intercept "$work/cached" --chunk 1MiB --tiers "mem:8MiB,dir:$work/nvme:16MiB" \
        -- "$writer" "$work/cached" "$work/log" 2> "$work/writer.err" &
      launcher=$!
      sleep "0.$((RANDOM % 9 + 1))"
      # (pkill without the sanitizer runtimes the asan preset preloads: under
      # them it once hung at its start, in glibc's textdomain lock.)
      LD_PRELOAD= pkill -KILL -f "^$writer $work/cached" || true
      wait "$launcher" || true
      [[ -s $work/log ]] || { echo "round $round: killed before any fsync"; continue; }
      "$writer" "$work/cached" "$work/log" --verify || fail "round $round: a file fsync'ed before SIGKILL is not intact"
    done
    echo "ok: sigkill"
    ;;
  errors)
    # Bad input is refused before the program starts, with a message and status 2.
    expect_refusal() {  # expect_refusal TEXT ARGS...
      local text=$1; shift
      if "$run" "$@" -- true > "$work/err.out" 2>&1; then fail "mlbs-run $* was accepted"; fi
      grep -q -- "$text" "$work/err.out" || { cat "$work/err.out"; fail "mlbs-run $*: no '$text' in its message"; }
    }
    expect_refusal "no such folder" --intercept "$work/nowhere" --tiers mem:64MiB
    expect_refusal "not a size" --intercept "$work/cached" --tiers "mem:lots"
    expect_refusal "must hold two chunks" --intercept "$work/cached" --tiers mem:16MiB
    expect_refusal "inside the intercepted folder" --intercept "$work" --tiers "mem:64MiB,dir:$work/nvme"
    expect_refusal "required" --tiers mem:64MiB
    # A read-only real file: the program's own open() fails with EACCES, as
    # without mlbs-run (as root the program runs as nobody: root writes anyway).
    as_user=()
    if [[ $(id -u) == 0 ]]; then
      as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
      chmod 755 "$work" && chmod 1777 "$work/cached"
    fi
    echo data > "$work/cached/ro.txt" && chmod 0444 "$work/cached/ro.txt"
    if "${as_user[@]}" "$run" --quiet --intercept "$work/cached" --tiers mem:64MiB \
        -- sh -c "echo more >> \"$work/cached/ro.txt\"" 2> "$work/ro.err"; then
      fail "writing a read-only file was accepted"
    fi
    grep -qi "permission denied" "$work/ro.err" || { cat "$work/ro.err"; fail "no EACCES for a read-only file"; }
    [[ $(cat "$work/cached/ro.txt") == data ]] || fail "the read-only file changed"
    rm -f "$work/cached/ro.txt"
    # Two processes writing one file at once (each would write back its own
    # copy of the other's chunks): the second open fails with EBUSY and a
    # message naming the file; the first writer's bytes are intact.
    "$run" --quiet --intercept "$work/cached" --tiers mem:64MiB -- sh -c '
      exec 3> "$1/shared.bin"; printf first >&3
      if sh -c "exec 4>> \"$1/shared.bin\"" 2> "$2"; then echo "second writer accepted"; fi
      exec 3>&-' sh "$work/cached" "$work/second.err" > "$work/shared.out" 2> "$work/shared.err" ||
      { cat "$work/shared.err"; fail "the first writer failed"; }
    ! grep -q accepted "$work/shared.out" || fail "a second process opened a file another writes"
    grep -q "shared.bin is open for writing in another process" "$work/second.err" ||
      { cat "$work/second.err"; fail "no message naming the shared file"; }
    [[ $(cat "$work/cached/shared.bin") == first ]] || fail "the first writer's file changed"
    rm -f "$work/cached/shared.bin"
    # One writer after another, each with the file open in turn: accepted.
    "$run" --quiet --intercept "$work/cached" --tiers mem:64MiB -- sh -c '
      printf one > "$1/turns.txt" && sh -c "printf two >> \"$1/turns.txt\"" && printf three >> "$1/turns.txt"' \
      sh "$work/cached" 2> "$work/turns.err" || { cat "$work/turns.err"; fail "writers in turn were refused"; }
    [[ $(cat "$work/cached/turns.txt") == onetwothree ]] || fail "writers in turn: $(cat "$work/cached/turns.txt")"
    rm -f "$work/cached/turns.txt"
    # A fast tier too small for anything: records go to the folder directly, nothing is lost.
    run_both "a cache tier of one page" --chunk 1MiB --tiers "mem:4MiB,dir:$work/nvme:4KiB" \
      -- sh -c 'seq 1 300000 > "$DIR/n.txt" && cp "$DIR/n.txt" "$DIR/m.txt" && sha256sum "$DIR/m.txt" | cut -c1-64'
    ;;
  full)
    # The real folder fills up: the program learns it (ENOSPC) by its fsync()
    # at the latest, as on a plain file system, and mlbs-run's status and
    # message name the file: never silence. A 1 MiB tmpfs takes 4 MiB.
    mount -t tmpfs -o size=1m tmpfs "$work/cached" 2> /dev/null || { echo "skipped: cannot mount a tmpfs"; exit 77; }
    trap 'umount "$work/cached"; rm -rf "$work"' EXIT
    script='
import os, sys
try:
    with open(os.path.join(sys.argv[1], "big.bin"), "wb") as f:
        f.write(b"x" * (4 << 20))
        f.flush()
        os.fsync(f.fileno())
    print("no error")
except OSError as e:
    print("errno", e.errno)
'
    status=0
    "$run" --quiet --intercept "$work/cached" --tiers mem:64MiB -- python3 -c "$script" "$work/cached" \
      > "$work/full.out" 2> "$work/full.err" || status=$?
    [[ $(cat "$work/full.out") == "errno 28" ]] || { cat "$work/full.out" "$work/full.err"; fail "the program did not see ENOSPC"; }
    (( status != 0 )) || fail "mlbs-run exited 0 although a file could not be completed"
    grep -q "big.bin" "$work/full.err" || { cat "$work/full.err"; fail "mlbs-run's message does not name the file"; }
    echo "ok: full"
    ;;
  *) fail "unknown case $case_name" ;;
esac
