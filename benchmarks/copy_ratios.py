#!/usr/bin/env python3
"""Ratio table of the copy micro-benchmarks (bench_copy.cpp).

Reads Google Benchmark JSON (--benchmark_out) and prints, per size, each
contender's bandwidth and mlbs's copy as a ratio of the best baseline
(std::memcpy on one thread, or on two: std::threads or OpenMP) measured in the same run. With
repetitions it uses the medians. Usage: copy_ratios.py RESULTS.json
"""
import json
import statistics
import sys
from collections import defaultdict

BASELINES = ["memcpy_1thread", "memcpy_2threads", "memcpy_openmp"]
OURS = "mlbs_bulk"
OTHERS = ["mlbs_bulk_src_plus_1", "mlbs_memcpy_threads", "mlbs_nt_threads", "mlbs_nt_1thread"]
TARGET = 0.90  # issue 4: >= 90% of the best copy loop above the L3 size


def size_label(n):
    return f"{n >> 30} GiB" if n >= 1 << 30 and n % (1 << 30) == 0 else f"{n >> 20} MiB"


def main(path):
    with open(path) as f:
        doc = json.load(f)
    rows = doc.get("benchmarks", [])
    medians = [r for r in rows if r.get("run_type") == "aggregate" and r.get("aggregate_name") == "median"]
    picked = medians or [r for r in rows if r.get("run_type", "iteration") == "iteration"]
    samples = defaultdict(list)  # (family, size) -> bytes/s
    for r in picked:
        parts = r.get("run_name", r["name"]).split("/")
        if len(parts) < 2 or "bytes_per_second" not in r:
            continue
        samples[(parts[0], int(parts[1]))].append(r["bytes_per_second"])
    bw = {k: statistics.median(v) for k, v in samples.items()}
    if not bw:
        print("copy_ratios: no results in", path)
        return 1

    ctx = doc.get("context", {})
    l3 = int(ctx.get("mlbs_l3_bytes", "0") or 0)
    print(f"mlbs copy: {ctx.get('mlbs_copy', '?')}")
    print(f"host: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs, "
          f"{'medians of repetitions' if medians else 'single runs'}; GiB/s")
    others = [o for o in OTHERS if any(k[0] == o for k in bw)]
    baselines = [b for b in BASELINES if any(k[0] == b for k in bw)]
    head = ["size", *baselines, OURS, "ratio", *(f"{o} (ratio)" for o in others)]
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    gib = float(1 << 30)
    for size in sorted({k[1] for k in bw}):
        base = [bw.get((b, size)) for b in baselines]
        best = max((b for b in base if b), default=None)
        ours = bw.get((OURS, size))
        cells = [size_label(size)] + [f"{b / gib:.2f}" if b else "-" for b in base]
        if ours and best:
            ratio = ours / best
            mark = ""
            if l3 and size > l3:
                mark = " ok" if ratio >= TARGET else " BELOW TARGET"
            cells += [f"{ours / gib:.2f}", f"{ratio:.2f}{mark}"]
        else:
            cells += ["-", "-"]
        for o in others:
            v = bw.get((o, size))
            cells.append(f"{v / gib:.2f} ({v / best:.2f})" if v and best else "-")
        print(" | ".join(cells))
    print(f"ratio = {OURS} / best baseline of the same run; target >= {TARGET:.2f} above the L3 "
          f"({size_label(l3) if l3 else 'unknown'})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
