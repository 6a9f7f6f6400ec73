#!/usr/bin/env python3
"""Synthetic mlbs-bench outputs for the mlbs-plot tests (and to look at the figures).

    python3 tests/plot/make_fixtures.py DIR   # writes DIR/results.json, results_single.json, trace.json

The shapes follow what mlbs-bench writes (docs/benchmarking.md): a JSON array
of result objects, one per (workload, mode, io_ratio), and a Chrome trace
with, per run, a "run" span named <workload>-<mode>-r<ratio> on the
application thread, the application's compute / copy / write_block /
read_block spans, and for the library's modes tier<N> spans (with bytes) on
helper threads that every runtime starts afresh ("helper 0", "helper 1").
The numbers are made up but consistent with the model.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

MIB = 1 << 20
MODES = ("sync", "mlbs", "writebehind", "pagecache")
WORKLOADS = ("micro", "rtm")


def _record(workload: str, mode: str, io_ratio: int, rng: random.Random) -> dict[str, Any]:
    steps = 240
    snapshots = steps // io_ratio
    grid = 8 * MIB
    kernel = 0.05 * steps
    copy = 0.0 if mode == "sync" else 0.004 * snapshots
    io_model = 2 * snapshots * grid / (200 * MIB)        # write + read at 200 MiB/s
    reference = kernel + io_model                         # the sync wall time
    bound = {"sync": kernel + io_model, "mlbs": max(kernel + copy, io_model),
             "writebehind": max(kernel + copy, 0.5 * io_model) + 0.5 * io_model,
             "pagecache": kernel + copy + 0.7 * io_model}[mode]
    wall = bound * (1.0 if mode == "sync" else rng.uniform(1.03, 1.2))
    blocked = max(wall - kernel - copy - 0.05, 0.0)
    rec: dict[str, Any] = {
        "workload": workload, "mode": mode, "io_ratio": io_ratio,
        "grid_bytes": grid, "grid_dims": "128x128x128", "steps": steps, "snapshots": snapshots,
        "bytes_written": snapshots * grid, "bytes_read": snapshots * grid,
        "wall_s": wall, "kernel_s": kernel, "hash_s": 0.1 * kernel, "copy_s": copy,
        "write_block_s": blocked * 0.45, "read_block_s": blocked * 0.55, "finish_s": 0.01,
        "io_s_model": io_model, "overlap_bound_s": max(kernel + copy, io_model),
        "expected_speedup": reference / max(kernel + copy, io_model) if mode != "sync" else reference / bound,
        "actual_speedup": reference / wall,
        "tier_stats": [
            {"name": "mem", "bytes_in": snapshots * grid, "bytes_out": snapshots * grid, "busy_s": 0.0,
             "bandwidth_bytes_per_s": 0.0},
            {"name": "slow", "bytes_in": snapshots * grid, "bytes_out": snapshots * grid, "busy_s": io_model,
             "bandwidth_bytes_per_s": 200.0 * MIB},
        ],
        "result_checksum": "00c0ffee00c0ffee", "verified": True, "mismatches": 0,
        "reference_only": False, "config": {}, "mode_stats": {},
    }
    if workload == "rtm":
        rec["image_checksum"] = "5be1c0a77e0d2f11"
    return rec


def results(io_ratios: tuple[int, ...] = (1, 2, 4, 8), seed: int = 7) -> list[dict[str, Any]]:
    """One record per (workload, mode, io_ratio), sync first, as mlbs-bench orders them."""
    rng = random.Random(seed)
    return [_record(w, m, r, rng) for r in io_ratios for w in WORKLOADS for m in MODES]


class _TraceWriter:
    """Builds Chrome trace events; times in microseconds."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.events: list[dict[str, Any]] = []
        self.next_tid = 2                 # 1 is the application thread

    def x(self, name: str, cat: str, tid: int, ts: float, dur: float, nbytes: int = 0) -> None:
        ev: dict[str, Any] = {"name": name, "cat": cat, "ph": "X", "ts": round(ts, 3), "dur": round(dur, 3),
                              "pid": 1, "tid": tid}
        if nbytes:
            ev["args"] = {"bytes": nbytes}
        self.events.append(ev)

    def name_thread(self, tid: int, name: str) -> None:
        self.events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}})

    def compute(self, t: float) -> float:
        d = self.rng.uniform(9_000, 11_000)
        self.x("stencil", "compute", 1, t, d)
        return t + d

    def sync_run(self, t: float, snapshots: int) -> float:
        """The reference: every write and read blocks the application for the whole transfer."""
        for _ in range(snapshots):
            t = self.compute(self.compute(t))
            d = self.rng.uniform(35_000, 45_000)
            self.x("write", "write_block", 1, t, d)
            t += d
        for _ in range(snapshots):
            d = self.rng.uniform(30_000, 40_000)
            self.x("read", "read_block", 1, t, d)
            t = self.compute(self.compute(t + d))
        return t

    def library_run(self, t: float, snapshots: int, tiers: tuple[int, ...], chunks: int = 4) -> float:
        """mlbs: writes behind and prefetches on two fresh helpers; tier 2 is slower than tier 1."""
        snap = 8 * MIB
        helpers = [self.next_tid, self.next_tid + 1]
        self.next_tid += 2
        for h, tid in enumerate(helpers):
            self.name_thread(tid, f"helper {h}")
        free = {tid: t for tid in helpers}
        for i in range(snapshots):  # forward
            t = self.compute(self.compute(t))
            if i > 8 and self.rng.random() < 0.3:
                d = self.rng.uniform(500, 3_000)
                self.x("write blocked", "write_block", 1, t, d, snap)
                t += d
            d = self.rng.uniform(700, 900)
            self.x("copy into slot", "copy", 1, t, d, snap)
            t += d
            tid = min(free, key=lambda k: free[k])
            start = max(free[tid], t)
            tier = tiers[i % len(tiers)]
            for _ in range(chunks):
                d = self.rng.uniform(2_000, 3_000) * (2.5 if tier == 2 else 1.0)
                self.x(f"writeback 0->{tier}", f"tier{tier}", tid, start, d, snap // chunks)
                start += d
            free[tid] = start
        for i in reversed(range(snapshots)):  # backward
            tid = min(free, key=lambda k: free[k])
            start = max(free[tid], t - 12_000)  # prefetch issued a little ahead of the read
            tier = tiers[i % len(tiers)]
            for _ in range(chunks):
                d = self.rng.uniform(1_500, 2_500) * (2.5 if tier == 2 else 1.0)
                self.x(f"prefetch {tier}->0", f"tier{tier}", tid, start, d, snap // chunks)
                start += d
            free[tid] = start
            if start > t:
                self.x("read blocked", "read_block", 1, t, start - t, snap)
                t = start
            d = self.rng.uniform(600, 800)
            self.x("copy out of slot", "copy", 1, t, d, snap)
            t = self.compute(self.compute(t + d))
        return t


def trace(snapshots: int = 24, seed: int = 3) -> dict[str, Any]:
    """An mlbs-bench --trace of rtm at I/O ratio 2 in three modes: sync, mlbs (tiers 1 and 2),
    writebehind (tier 1 only), each run marked by a "run" span."""
    w = _TraceWriter(seed)
    w.name_thread(1, "app")
    t = 250_000.0  # the trace's origin is the process start, not the first event
    for mode in ("sync", "mlbs", "writebehind"):
        start = t
        if mode == "sync":
            t = w.sync_run(t, snapshots // 2)
        else:
            t = w.library_run(t, snapshots, (1, 1, 2) if mode == "mlbs" else (1,))
        t += 2_000
        w.x(f"rtm-{mode}-r2", "run", 1, start, t - start)
        t += 5_000
    events = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "mlbs"}}] + w.events
    return {"displayTimeUnit": "ms", "otherData": {"producer": "mlbs"}, "traceEvents": events}


def big_trace(n: int = 60_000) -> dict[str, Any]:
    """Many tiny back-to-back events (a long run traced at fine grain)."""
    events: list[dict[str, Any]] = []
    t = 0.0
    cats = ("compute", "compute", "compute", "copy")
    for i in range(n):
        d = 50.0 + (i % 7)
        events.append({"ph": "X", "name": "e", "cat": cats[i % 4], "ts": t, "dur": d, "pid": 1, "tid": 1})
        events.append({"ph": "X", "name": "io", "cat": "tier1", "ts": t, "dur": d, "pid": 1, "tid": 2,
                       "args": {"bytes": 65536}})
        t += d + (1.0 if i % 3 else 0.0)
    return {"traceEvents": events}


def write_all(out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "results": out / "results.json",
        "results_single": out / "results_single.json",
        "trace": out / "trace.json",
    }
    files["results"].write_text(json.dumps(results(), indent=1))
    files["results_single"].write_text(json.dumps(results(io_ratios=(2,)), indent=1))
    files["trace"].write_text(json.dumps(trace()))
    return files


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: make_fixtures.py DIR", file=sys.stderr)
        sys.exit(2)
    for path in write_all(Path(sys.argv[1])).values():
        print(path)
