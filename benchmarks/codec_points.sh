#!/usr/bin/env bash
# The codecs' targets at the demo's points (docs/codecs.md, "In mlbs-bench"):
# one mlbs-bench invocation per codec (each also runs sync), alternated so that
# the machine's drift falls on every codec alike. Prints one line per run:
# point, codec, layout, mlbs wall, kernel_s, wall - kernel_s, records encoded,
# the file tiers' ratio, and the result against sync's (bit-exact, or rtm's
# image error for a lossy codec).
#   benchmarks/codec_points.sh [ROUNDS] [BUILD_DIR]
#   MLBS_CODEC_POINTS  which points: io (rtm ratio 4), compute (rtm ratio 16),
#                      random (micro ratio 4); default "io compute random"
#   MLBS_CODEC_DIR     where the tiers go (default a temporary folder)
set -euo pipefail
rounds=${1:-2}
build=${2:-build/default}
bench=$build/tools/mlbs-bench
[[ -x $bench ]] || { echo "no $bench: build first (cmake --build --preset default)" >&2; exit 2; }
work=${MLBS_CODEC_DIR:-$(mktemp -d)}
[[ -n ${MLBS_CODEC_DIR:-} ]] || trap 'rm -rf "$work"' EXIT

# run WORKLOAD IO_RATIO CODEC [LAYOUT]
run() {
  rm -rf "$work/tiers" && mkdir -p "$work/tiers"
  "$bench" --workload "$1" --io-ratio "$2" --grid-bytes 16MiB --steps 128 --dram 32MiB \
    --fast "$work/tiers/f:96MiB" --fast-bw 1GiB --slow "$work/tiers/s" --slow-bw 200MiB \
    --modes mlbs --codec "$3" --codec-layout "${4:-rows}" --out "$work/out" --json "$work/run.json" >/dev/null 2>"$work/bench.log" ||
    { cat "$work/bench.log" >&2; exit 1; }
  python3 - "$work/run.json" "$1 ${2}" "$3" "${4:-rows}" <<'EOF'
import json, sys
runs = json.load(open(sys.argv[1]))
m = next(r for r in runs if r["mode"] == "mlbs")
exact = next(r for r in runs if r["mode"] == "sync")
s = m["mode_stats"]
err = m.get("image_rel_l2_error")
# The result against sync's: bit-exact (same checksum), or rtm's image error for a lossy codec.
if err is not None:
    result = f"image_err {err:.2e}"
else:
    key = "image_checksum" if "image_checksum" in m else "result_checksum"
    result = "bit-exact" if m.get(key) == exact.get(key) and m.get("mismatches", 0) == 0 else "DIFFERS"
print(f"{sys.argv[2]:9} {sys.argv[3]:17} {sys.argv[4]:6} wall {m['wall_s']:.3f} kernel {m['kernel_s']:.3f} "
      f"outside {m['wall_s'] - m['kernel_s']:.3f} encoded {s['encoded_records']:2} "
      f"ratio {m.get('codec_ratio', 0):.2f} {result}")
EOF
}

for _ in $(seq "$rounds"); do
  for point in ${MLBS_CODEC_POINTS:-io compute random}; do
    case $point in
      io) run rtm 4 none; run rtm 4 zstd:1
          for layout in rows planes flat; do run rtm 4 zfp:precision=20 $layout; done ;;
      compute) for c in none zstd:1 zfp:precision=20; do run rtm 16 $c; done ;;
      random) for c in none lz4 zstd:1; do run micro 4 $c; done ;;
      *) echo "unknown point '$point' (io, compute, random)" >&2; exit 2 ;;
    esac
  done
done
