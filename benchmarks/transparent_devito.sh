#!/usr/bin/env bash
# Transparent mode's measured example (docs/transparent.md): the unmodified
# Devito RTM that keeps its snapshots with np.save / np.load
# (examples/python/devito_npsave.py), run plainly and under mlbs-run,
# alternated, each run after the page cache was dropped (root only; else it
# says so). Prints each run's JSON line and the ratio of the time spent in
# np.save, the fsync loop and np.load.
#   benchmarks/transparent_devito.sh [ROUNDS] [BUILD_DIR]
#   MLBS_DEVITO_DIR   where the snapshots and the cache tier go (default a temporary folder)
#   MLBS_DEVITO_TIERS the tiers in front of the snapshot folder (default mem:256MiB,dir:<dir>/cache:2GiB)
#   MLBS_DEVITO_ARGS  more arguments for the example (e.g. "--shape 61 --nbl 10")
set -euo pipefail
rounds=${1:-3}
build=${2:-build/default}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run=$build/tools/mlbs-run
[[ -x $run ]] || { echo "no $run: build first (cmake --build --preset default)" >&2; exit 2; }
work=${MLBS_DEVITO_DIR:-$(mktemp -d)}
tiers=${MLBS_DEVITO_TIERS:-mem:256MiB,dir:$work/cache:2GiB}
read -r -a extra <<< "${MLBS_DEVITO_ARGS:-}"
example=$repo/examples/python/devito_npsave.py

fresh() {  # empty snapshot and cache folders, nothing of them in the page cache
  rm -rf "$work/snaps" "$work/cache" && mkdir -p "$work/snaps" "$work/cache"
  sync
  if [[ -w /proc/sys/vm/drop_caches ]]; then echo 3 > /proc/sys/vm/drop_caches; else echo "(page cache not dropped: not root)" >&2; fi
}

io_of() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])["io_s"])' "$1"; }

for round in $(seq 1 "$rounds"); do
  fresh
  plain=$(python3 "$example" --dir "$work/snaps" "${extra[@]}")
  echo "plain $plain"
  fresh
  cached=$("$run" --quiet --intercept "$work/snaps" --tiers "$tiers" -- python3 "$example" --dir "$work/snaps" "${extra[@]}")
  echo "mlbs-run $cached"
  echo "round $round: np.save + fsync + np.load $(io_of "$plain") s plainly, $(io_of "$cached") s under mlbs-run:" \
    "ratio $(python3 -c "print(round($(io_of "$cached") / $(io_of "$plain"), 3))")"
done
[[ -n ${MLBS_DEVITO_DIR:-} ]] || rm -rf "$work"
