#!/usr/bin/env python3
"""mlbs-plot — figures from mlbs-bench's results (--json) and trace (--trace).

    mlbs-plot --json results.json [--trace trace.json [--run NAME]] --out DIR

writes into DIR

* timeline.png   Gantt chart of the trace: one row per thread, bars coloured by
                 category (compute, copy, blocked write, blocked read, I/O per
                 tier), each benchmark run shaded and named;
* bandwidth.png  bytes moved per file tier over time (MiB/s, binned), from the
                 trace's tier<N> spans (helper I/O of the library's modes);
* speedup.png    actual and expected speedup against the I/O ratio, per
                 workload and mode (grouped bars when there is one I/O ratio);
* breakdown.png  wall time per mode stacked as kernel / copy / blocked write /
                 blocked read / other.

    mlbs-plot --trace trace.json --tier-time [--run NAME]

prints instead, per run, where each file tier's time went: busy with copies
that landed, wasted on copies stopped before they landed ("cancelled"), idle
before its first copy, after its last and in between (the longest gap
named). A copy between two file tiers ("prefetch 2->1") keeps both busy.
Where the wall exceeds the physical bound, the bottleneck tier's idle and
wasted time says how much a better plan could win (docs/benchmarking.md,
"Where a tier's time went").

A plot whose input is missing or unusable is skipped with a message on stderr;
the paths written are printed on stdout. Exit status: 0 when at least one
figure was written, 1 when none was, 2 on bad usage.

Only matplotlib (Agg backend) and the standard library are used; matplotlib is
imported when the first figure is drawn, so the parsing, merging and binning
helpers work without it. See docs/benchmarking.md.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

MIB = float(1 << 20)

# --- categories ----------------------------------------------------------------

APP_CATEGORIES: tuple[str, ...] = ("compute", "copy", "write_block", "read_block")

CATEGORY_LABELS: dict[str, str] = {
    "compute": "compute",
    "copy": "copy",
    "write_block": "blocked in write()",
    "read_block": "blocked in read()",
}

CATEGORY_COLORS: dict[str, str] = {
    "compute": "#4c9a2a",      # green
    "copy": "#f0a500",         # amber
    "write_block": "#d62728",  # red
    "read_block": "#9b30c8",   # purple
}

# File tiers (tier<N>) in shades that stay apart from the application colours.
TIER_COLORS: tuple[str, ...] = ("#1f77b4", "#17becf", "#2c3e91", "#7f7f7f", "#8c564b", "#bcbd22")
OTHER_COLORS: tuple[str, ...] = ("#e377c2", "#aec7e8", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94")

_TIER_RE = re.compile(r"^tier(\d+)$")


def tier_index(category: str) -> Optional[int]:
    """N for a "tier<N>" category, None otherwise."""
    m = _TIER_RE.match(category)
    return int(m.group(1)) if m else None


def category_label(category: str) -> str:
    """Legend text for a trace category."""
    n = tier_index(category)
    if n is not None:
        return f"I/O on tier {n}"
    return CATEGORY_LABELS.get(category, category)


def category_order(categories: Iterable[str]) -> list[str]:
    """Application categories first (fixed order), then tiers by number, then the rest by name."""
    cats = set(categories)
    app = [c for c in APP_CATEGORIES if c in cats]
    tiers = sorted((c for c in cats if tier_index(c) is not None), key=lambda c: tier_index(c) or 0)
    rest = sorted(c for c in cats if c not in APP_CATEGORIES and tier_index(c) is None)
    return app + tiers + rest


def category_colors(categories: Iterable[str]) -> dict[str, str]:
    """A stable colour per category: fixed for application ones, by number for tiers."""
    colors: dict[str, str] = {}
    extra = 0
    for c in category_order(categories):
        n = tier_index(c)
        if c in CATEGORY_COLORS:
            colors[c] = CATEGORY_COLORS[c]
        elif n is not None:
            colors[c] = TIER_COLORS[n % len(TIER_COLORS)]
        else:
            colors[c] = OTHER_COLORS[extra % len(OTHER_COLORS)]
            extra += 1
    return colors


# --- the trace -----------------------------------------------------------------


@dataclass
class Span:
    """One complete event, times in seconds from the trace's first event."""

    tid: int
    category: str
    start_s: float
    dur_s: float
    bytes: int = 0
    name: str = ""
    count: int = 1  # events merged into this one

    @property
    def end_s(self) -> float:
        return self.start_s + self.dur_s


# mlbs-bench marks each (workload, mode, io_ratio) run with one span of this
# category on the application thread, named "<workload>-<mode>-r<ratio>".
RUN_CATEGORY = "run"


@dataclass
class Trace:
    spans: list[Span] = field(default_factory=list)   # activity: every category but "run"
    runs: list[Span] = field(default_factory=list)    # "run" spans, by start
    thread_names: dict[int, str] = field(default_factory=dict)
    dropped: int = 0  # events the recorder could not keep (otherData.dropped_events)

    @property
    def duration_s(self) -> float:
        return max((s.end_s for s in (*self.spans, *self.runs)), default=0.0)


def _number(value: Any) -> Optional[float]:
    """A finite float from a JSON value, None for null, strings, NaN or anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def _thread_key(pid: Any, tid: Any) -> int:
    """One integer per (pid, tid); mlbs writes pid 1 only, so tid alone in that case."""
    t = int(tid) if isinstance(tid, (int, float)) and not isinstance(tid, bool) else 0
    p = int(pid) if isinstance(pid, (int, float)) and not isinstance(pid, bool) else 1
    return t if p == 1 else p * 1_000_000 + t


def parse_trace(doc: Any) -> Trace:
    """Chrome Trace Event JSON (object with traceEvents, or a bare array) to spans.

    Complete events ("ph": "X") become spans, "run" ones go to Trace.runs;
    "M"/thread_name events name the threads. Other phases are ignored. Times
    are shifted so the first span starts at 0 and converted from microseconds
    to seconds.
    """
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise ValueError("not a Chrome trace: expected {\"traceEvents\": [...]} or an array of events")
    spans: list[Span] = []
    names: dict[int, str] = {}
    for ev in events:
        if not isinstance(ev, dict):
            continue
        ph = ev.get("ph")
        key = _thread_key(ev.get("pid", 1), ev.get("tid", 0))
        if ph == "M":
            args = ev.get("args")
            if ev.get("name") == "thread_name" and isinstance(args, dict) and isinstance(args.get("name"), str):
                names[key] = args["name"]
            continue
        if ph != "X":
            continue
        ts = _number(ev.get("ts"))
        dur = _number(ev.get("dur"))
        if ts is None:
            continue
        args = ev.get("args")
        nbytes = _number(args.get("bytes")) if isinstance(args, dict) else None
        spans.append(Span(tid=key, category=str(ev.get("cat", "")) or "other",
                          start_s=ts * 1e-6, dur_s=max(dur or 0.0, 0.0) * 1e-6,
                          bytes=int(nbytes) if nbytes and nbytes > 0 else 0,
                          name=str(ev.get("name", ""))))
    if spans:
        t0 = min(s.start_s for s in spans)
        for s in spans:
            s.start_s -= t0
    spans.sort(key=lambda s: (s.tid, s.start_s))
    runs = sorted((s for s in spans if s.category == RUN_CATEGORY), key=lambda s: s.start_s)
    other = doc.get("otherData") if isinstance(doc, dict) else None
    dropped = _number(other.get("dropped_events")) if isinstance(other, dict) else None
    return Trace(spans=[s for s in spans if s.category != RUN_CATEGORY], runs=runs, thread_names=names,
                 dropped=int(dropped or 0))


def chosen_runs(trace: Trace, pattern: str) -> list[Span]:
    """The run named `pattern`, else the runs whose name contains it; ValueError naming the runs when none does."""
    chosen = [r for r in trace.runs if r.name == pattern] or [r for r in trace.runs if pattern in r.name]
    if not chosen:
        names = ", ".join(r.name for r in trace.runs[:12]) or "none: the trace has no \"run\" spans"
        more = f" (and {len(trace.runs) - 12} more)" if len(trace.runs) > 12 else ""
        raise ValueError(f"no run matches '{pattern}'; runs: {names}{more}")
    return chosen


def select_runs(trace: Trace, pattern: str) -> Trace:
    """The part of the trace covered by the run named `pattern`, else by the runs whose name contains it.

    The window goes from the first matching run's start to the last one's
    end; spans are clipped to it and times shifted to start at 0. Raises
    ValueError naming the available runs when none matches.
    """
    chosen = chosen_runs(trace, pattern)
    lo = min(r.start_s for r in chosen)
    hi = max(r.end_s for r in chosen)

    def clip(spans: Iterable[Span]) -> list[Span]:
        out = []
        for s in spans:
            start, end = max(s.start_s, lo), min(s.end_s, hi)
            if end > start or (s.dur_s == 0 and lo <= s.start_s <= hi):
                frac = (end - start) / s.dur_s if s.dur_s > 0 else 1.0
                out.append(Span(s.tid, s.category, start - lo, end - start, round(s.bytes * frac), s.name, s.count))
        return out

    return Trace(spans=clip(trace.spans), runs=clip(trace.runs), thread_names=dict(trace.thread_names),
                 dropped=trace.dropped)


def _natural_key(text: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def thread_label(trace: Trace, tid: int) -> str:
    return trace.thread_names.get(tid, f"thread {tid}")


def thread_rows(trace: Trace) -> tuple[list[str], dict[int, int]]:
    """Timeline rows: (row labels, row of each thread with spans).

    Threads of the same name share a row while their activity does not
    overlap in time: every mlbs runtime starts its own "helper 0", "helper 1",
    ..., and a benchmark runs one runtime after another. Application threads
    (any span outside tier<N>) come first, then helpers, by name.
    """
    extent: dict[int, tuple[float, float]] = {}
    for s in trace.spans:
        lo, hi = extent.get(s.tid, (s.start_s, s.end_s))
        extent[s.tid] = (min(lo, s.start_s), max(hi, s.end_s))
    app = {s.tid for s in trace.spans if tier_index(s.category) is None}
    by_name: dict[tuple[bool, str], list[int]] = {}
    for tid in extent:
        by_name.setdefault((tid not in app, thread_label(trace, tid)), []).append(tid)
    labels: list[str] = []
    row_of: dict[int, int] = {}
    for is_helper, name in sorted(by_name, key=lambda k: (k[0], _natural_key(k[1]))):
        lanes: list[tuple[int, float]] = []  # (row, end of its last thread)
        for tid in sorted(by_name[(is_helper, name)], key=lambda t: extent[t]):
            lane = next((i for i, (_, end) in enumerate(lanes) if end <= extent[tid][0]), None)
            if lane is None:
                labels.append(name if not lanes else f"{name} ({len(lanes) + 1})")
                lanes.append((len(labels) - 1, extent[tid][1]))
                lane = len(lanes) - 1
            else:
                lanes[lane] = (lanes[lane][0], extent[tid][1])
            row_of[tid] = lanes[lane][0]
    return labels, row_of


# --- where each file tier's time went (--tier-time) -----------------------------

_COPY_ENDS = re.compile(r"(\d+)\s*->\s*(\d+)")


def span_tiers(s: Span) -> set[int]:
    """The file tiers a helper span keeps busy: both ends of an "A->B" copy
    (DRAM, 0, is not a file tier), else the N of its tier<N> category.

    The library names a helper's span "<what> <src>-><dst>" and files it under
    one tier's category, so a copy between two file tiers shows on one row of
    the timeline; both tiers' bandwidth is spent on it. A removal ("remove N")
    moves no bytes and keeps no tier busy.
    """
    n = tier_index(s.category)
    if not n or s.name.startswith("remove"):
        return set()
    m = _COPY_ENDS.search(s.name)
    return {int(g) for g in m.groups()} - {0} if m else {n}


def _union(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _length(intervals: Iterable[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


@dataclass
class TierTime:
    """One file tier's time over a window (a run), in seconds."""

    tier: int
    window_s: float
    busy_s: float = 0.0      # copies that landed (union: parallel copies count once)
    wasted_s: float = 0.0    # copies stopped before they landed, while nothing that landed ran
    first_s: float = 0.0     # idle from the window's start to the first copy
    tail_s: float = 0.0      # idle from the last copy's end to the window's end
    gap_at_s: float = 0.0    # the longest idle time between two copies: its start
    gap_s: float = 0.0       # ... and its length

    @property
    def idle_s(self) -> float:
        return max(self.window_s - self.busy_s - self.wasted_s, 0.0)


def tier_time(spans: Sequence[Span], start_s: float, end_s: float) -> list[TierTime]:
    """Per file tier (by number), its time over [start_s, end_s]: spans are clipped to the window."""
    landed: dict[int, list[tuple[float, float]]] = {}
    stopped: dict[int, list[tuple[float, float]]] = {}
    for s in spans:
        a, b = max(s.start_s, start_s), min(s.end_s, end_s)
        if b <= a:
            continue
        for t in span_tiers(s):
            (stopped if "cancelled" in s.name else landed).setdefault(t, []).append((a, b))
    out: list[TierTime] = []
    for t in sorted(set(landed) | set(stopped)):
        busy = _union(landed.get(t, []))
        every = _union(busy + stopped.get(t, []))
        tt = TierTime(tier=t, window_s=end_s - start_s, busy_s=_length(busy),
                      first_s=every[0][0] - start_s, tail_s=end_s - every[-1][1])
        tt.wasted_s = _length(every) - tt.busy_s
        for (_, b), (a, _) in zip(every, every[1:]):
            if a - b > tt.gap_s:
                tt.gap_at_s, tt.gap_s = b - start_s, a - b
        out.append(tt)
    return out


def tier_time_table(trace: Trace) -> str:
    """The --tier-time report: one row per (run, file tier); the whole trace as one window without runs."""
    windows = [(r.name, r.start_s, r.end_s) for r in trace.runs] or [("(trace)", 0.0, trace.duration_s)]
    rows = []
    for name, lo, hi in windows:
        for tt in tier_time(trace.spans, lo, hi):
            gap = f"{tt.gap_s:.3f} at {tt.gap_at_s:.3f}" if tt.gap_s >= 0.0005 else "-"
            rows.append(f"{name:<28} {tt.tier:>4} {tt.window_s:>8.3f} {tt.busy_s:>8.3f} {tt.wasted_s:>8.3f} "
                        f"{tt.idle_s:>8.3f} {tt.first_s:>8.3f} {tt.tail_s:>8.3f}  {gap}")
    if not rows:
        raise ValueError("no file tier spans (category tier<N>) in the trace")
    head = (f"{'run':<28} {'tier':>4} {'wall s':>8} {'busy':>8} {'wasted':>8} {'idle':>8} {'first':>8} "
            f"{'tail':>8}  longest idle gap (s, at)")
    return "\n".join([head, *rows]) + "\n"


# --- merging (timeline) -------------------------------------------------------


def merge_spans(spans: Sequence[Span], gap_s: float = 0.0) -> list[Span]:
    """Merges adjacent spans: consecutive on the same thread, same category, at most `gap_s` apart.

    A span of another category in between prevents the merge, so the picture
    does not change beyond the tolerated gap. Bytes and event counts add up.
    The result is sorted by (thread, start).
    """
    ordered = sorted(spans, key=lambda s: (s.tid, s.start_s))
    out: list[Span] = []
    for s in ordered:
        last = out[-1] if out else None
        if last is not None and last.tid == s.tid and last.category == s.category and s.start_s - last.end_s <= gap_s:
            last.dur_s = max(last.end_s, s.end_s) - last.start_s
            last.bytes += s.bytes
            last.count += s.count
            if last.name != s.name:
                last.name = ""
        else:
            out.append(Span(s.tid, s.category, s.start_s, s.dur_s, s.bytes, s.name, s.count))
    return out


def _overlaps(start_s: float, end_s: float, bin_s: float, n_bins: int) -> Iterable[tuple[int, float]]:
    """(bin, seconds of [start_s, end_s) inside it); what lies past the last bin counts in the last bin."""
    first = min(max(int(start_s / bin_s), 0), n_bins - 1)
    last = min(max(int(end_s / bin_s), 0), n_bins - 1)
    for i in range(first, last + 1):
        lo = start_s if i == first else i * bin_s
        hi = end_s if i == last else (i + 1) * bin_s
        if hi > lo:
            yield i, hi - lo


def downsample_spans(spans: Sequence[Span], column_s: float, n_columns: int) -> list[Span]:
    """Per thread, cuts time into columns and paints each with what the thread mostly did there.

    A column gets the category with the most time in it, or nothing when the
    thread was idle longer than it spent in any one category; neighbouring
    columns with the same category become one bar. At most `n_columns` bars
    per thread.
    """
    per_thread: dict[int, list[dict[str, float]]] = {}
    for s in spans:
        cols = per_thread.get(s.tid)
        if cols is None:
            cols = per_thread[s.tid] = [{} for _ in range(n_columns)]
        for i, t in _overlaps(s.start_s, s.end_s, column_s, n_columns):
            cols[i][s.category] = cols[i].get(s.category, 0.0) + t
    out: list[Span] = []
    for tid in sorted(per_thread):
        for i, col in enumerate(per_thread[tid]):
            if not col:
                continue
            cat, busy = max(col.items(), key=lambda kv: (kv[1], kv[0]))
            if busy < column_s - sum(col.values()):
                continue  # mostly idle
            last = out[-1] if out else None
            if last is not None and last.tid == tid and last.category == cat and \
                    abs(last.end_s - i * column_s) < column_s * 1e-6:
                last.dur_s += column_s
            else:
                out.append(Span(tid, cat, i * column_s, column_s))
    return out


def reduce_spans(spans: Sequence[Span], max_bars: int, duration_s: float) -> tuple[list[Span], float]:
    """Bars to draw, at most `max_bars` of them (and at least one per busy thread).

    Adjacent same-category spans are merged across gaps below 1/20000 of the
    run (under a pixel); while too many remain the tolerated gap doubles, up
    to 1/200 of the run. If that is not enough (categories interleave finely)
    the threads are downsampled to columns (`downsample_spans`). Returns (bars,
    column width in seconds, or 0 when no downsampling was needed).
    """
    gap = duration_s / 20000.0 if duration_s > 0 else 0.0
    bars = merge_spans(spans, gap)
    while len(bars) > max_bars and 0 < gap < duration_s / 200.0:
        gap *= 2.0
        bars = merge_spans(bars, gap)
    if len(bars) <= max_bars or duration_s <= 0:
        return bars, 0.0
    n_threads = len({s.tid for s in spans})
    n_columns = max(max_bars // max(n_threads, 1), 1)
    column_s = duration_s / n_columns
    return downsample_spans(spans, column_s, n_columns), column_s


# --- binning (bandwidth) ------------------------------------------------------


def bin_bytes(spans: Iterable[Span], bin_s: float, n_bins: int) -> list[float]:
    """Bytes per time bin [i*bin_s, (i+1)*bin_s), each span's bytes spread evenly over its duration.

    A zero-length span puts all its bytes in the bin holding its start. Bytes
    beyond the last bin go into the last bin, so the total is conserved.
    """
    if bin_s <= 0 or n_bins <= 0:
        raise ValueError("bin_s and n_bins must be positive")
    bins = [0.0] * n_bins
    for s in spans:
        if s.bytes <= 0:
            continue
        if s.dur_s <= 0:
            bins[min(max(int(s.start_s / bin_s), 0), n_bins - 1)] += s.bytes
            continue
        parts = list(_overlaps(s.start_s, s.end_s, bin_s, n_bins))
        if len(parts) == 1:
            bins[parts[0][0]] += s.bytes  # exact when the span fits in one bin
            continue
        for i, t in parts:
            bins[i] += s.bytes * (t / s.dur_s)
    return bins


MAX_BINS = 100_000


def choose_bin_s(duration_s: float, target_bins: int = 120) -> float:
    """A round bin width (1, 2 or 5 times a power of ten seconds) giving about `target_bins` bins."""
    if duration_s <= 0:
        return 1e-3
    raw = duration_s / target_bins
    exp = math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0 ** exp >= raw:
            return m * 10.0 ** exp
    return 10.0 ** (exp + 1)


def tier_bandwidth(trace: Trace, bin_s: Optional[float] = None) -> tuple[float, dict[str, list[float]]]:
    """(bin width, {tier category: MiB/s per bin}) for every tier<N> category that moved bytes."""
    width = bin_s if bin_s and bin_s > 0 else choose_bin_s(trace.duration_s)
    width = max(width, trace.duration_s / MAX_BINS)  # a tiny --bin must not allocate millions of bins
    n_bins = max(1, math.ceil(trace.duration_s / width)) if trace.duration_s > 0 else 1
    by_tier: dict[str, list[Span]] = {}
    for s in trace.spans:
        if tier_index(s.category) is not None and s.bytes > 0:
            by_tier.setdefault(s.category, []).append(s)
    series = {cat: [b / width / MIB for b in bin_bytes(spans, width, n_bins)]
              for cat, spans in by_tier.items()}
    return width, {c: series[c] for c in category_order(series)}


# --- results (--json) ---------------------------------------------------------


def load_results(doc: Any) -> list[dict[str, Any]]:
    """The result records: the array mlbs-bench writes (an object with "results" is accepted too)."""
    if isinstance(doc, dict) and isinstance(doc.get("results"), list):
        doc = doc["results"]
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list):
        raise ValueError("expected an array of result objects")
    records = [r for r in doc if isinstance(r, dict) and "mode" in r]
    if not records:
        raise ValueError("no result objects (with a \"mode\") in it")
    return records


def median_repeats(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per (workload, mode, io_ratio): of repeated runs (--repeat), the one of median wall_s.

    The rule of mlbs-bench's targets table: runs that failed are left out
    (unless all did), the others sorted by wall_s, the lower middle kept; the
    groups keep the order of their first record.
    """
    groups: dict[tuple[str, str, Any], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((str(r.get("workload", "?")), str(r.get("mode", "?")), r.get("io_ratio")), []).append(r)
    out: list[dict[str, Any]] = []
    for runs in groups.values():
        ok = [r for r in runs if not r.get("error") and _number(r.get("wall_s")) is not None] or runs
        ok = sorted(ok, key=lambda r: _number(r.get("wall_s")) or 0.0)
        out.append(ok[(len(ok) - 1) // 2])
    return out


def _unique(values: Iterable[Any]) -> list[Any]:
    seen: list[Any] = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def workloads_of(records: Sequence[dict[str, Any]]) -> list[str]:
    return _unique(str(r.get("workload", "?")) for r in records)


def modes_of(records: Sequence[dict[str, Any]]) -> list[str]:
    return _unique(str(r.get("mode", "?")) for r in records)


def io_ratios_of(records: Sequence[dict[str, Any]]) -> list[float]:
    return sorted({v for v in (_number(r.get("io_ratio")) for r in records) if v is not None})


# mlbs-bench's modes keep their colour from one figure to the next; others take the rest in turn.
KNOWN_MODE_COLORS: dict[str, str] = {"mlbs": "#1f77b4", "sync": "#7f7f7f", "sync-fast": "#8c564b",
                                     "writebehind": "#ff7f0e", "pagecache": "#2ca02c", "adios2": "#9467bd"}
OTHER_MODE_COLORS: tuple[str, ...] = ("#d62728", "#e377c2", "#bcbd22", "#17becf", "#393b79", "#637939")


def speedup(record: dict[str, Any], key: str) -> Optional[float]:
    """actual_speedup / expected_speedup, None when missing or not positive (mlbs-bench writes 0 for
    "undefined": no successful sync reference)."""
    v = _number(record.get(key))
    return v if v is not None and v > 0 else None


def mode_colors(modes: Sequence[str]) -> dict[str, str]:
    others = [m for m in modes if m not in KNOWN_MODE_COLORS]
    return {m: KNOWN_MODE_COLORS.get(m) or OTHER_MODE_COLORS[others.index(m) % len(OTHER_MODE_COLORS)]
            for m in modes}


BREAKDOWN_PARTS: tuple[tuple[str, str, str], ...] = (
    ("kernel_s", "kernel", CATEGORY_COLORS["compute"]),
    ("copy_s", "copy", CATEGORY_COLORS["copy"]),
    ("write_block_s", "blocked in write()", CATEGORY_COLORS["write_block"]),
    ("read_block_s", "blocked in read()", CATEGORY_COLORS["read_block"]),
    ("other_s", "other", "#c7c7c7"),
)


def breakdown_of(record: dict[str, Any]) -> dict[str, float]:
    """kernel/copy/write_block/read_block seconds and other = wall minus their sum (at least 0)."""
    parts = {key: max(_number(record.get(key)) or 0.0, 0.0) for key, _, _ in BREAKDOWN_PARTS[:-1]}
    wall = _number(record.get("wall_s")) or 0.0
    parts["other_s"] = max(wall - sum(parts.values()), 0.0)
    return parts


def _fmt_seconds(t: float) -> str:
    if t >= 1.0:
        return f"{t:.3g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    return f"{t * 1e6:.3g} us"


def _fmt_ratio(r: Optional[float]) -> str:
    return "?" if r is None else f"{r:g}"


# --- drawing --------------------------------------------------------------------


def _pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (imported on first use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path, dpi: int) -> Path:
    """Writes the figure as PNG (creating its folder) and frees it, also on failure."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    finally:
        _pyplot().close(fig)
    return path


RUN_FONT_PT = 7.0


def _draw_runs(ax: Any, runs: Sequence[Span], x_max: float, dpi: int) -> tuple[float, int]:
    """Shades each benchmark run's time in alternating greys and names it above the axes.

    Names are horizontal when every one fits its run's width, else vertical;
    a run too narrow even for a vertical name, or whose name would run into
    its neighbour's, goes unnamed. Returns (the title padding the names need,
    in points; how many runs went unnamed).
    """
    if not runs or x_max <= 0:
        return 6.0, 0
    fig = ax.get_figure()
    axes_px = ax.get_position().width * fig.get_figwidth() * dpi
    px_per_s = axes_px / x_max
    char_px = 0.6 * RUN_FONT_PT * dpi / 72.0
    line_px = 1.3 * RUN_FONT_PT * dpi / 72.0
    for i, r in enumerate(runs):
        ax.axvspan(r.start_s, r.end_s, facecolor="#f1f1f1" if i % 2 == 0 else "#e3e3e3", edgecolor="none",
                   zorder=0)
    transform = ax.get_xaxis_transform()  # x in data, y in axes fraction
    horizontal = all(len(r.name) * char_px + 4 <= r.dur_s * px_per_s for r in runs)
    unnamed = 0
    free_px = -math.inf  # left edge of the space not yet taken by a name
    for r in sorted(runs, key=lambda r: r.start_s + r.dur_s / 2):
        center = r.start_s + r.dur_s / 2
        half_px = (len(r.name) * char_px if horizontal else line_px) / 2
        if (not horizontal and r.dur_s * px_per_s < line_px) or center * px_per_s - half_px < free_px:
            unnamed += 1
            continue
        ax.text(center, 1.005, r.name, transform=transform, ha="center", va="bottom", fontsize=RUN_FONT_PT,
                rotation=0 if horizontal else 90, color="#444444", clip_on=False)
        free_px = center * px_per_s + half_px
    if horizontal:
        return 6.0 + 1.4 * RUN_FONT_PT, unnamed
    return 8.0 + max(len(r.name) for r in runs) * 0.6 * RUN_FONT_PT, unnamed


def plot_timeline(trace: Trace, path: Path, max_bars: int = 20000, title: str = "",
                  dpi: int = 110) -> Path:
    """Gantt chart: one row per thread, bars coloured by category, time in seconds.

    Benchmark runs ("run" spans) shade the background and are named above the
    chart. Traces with more than `max_bars` bars are merged, then downsampled
    (`reduce_spans`); the title says so.
    """
    if not trace.spans:
        raise ValueError("the trace has no complete (\"X\") events")
    plt = _pyplot()
    from matplotlib.patches import Patch

    duration = trace.duration_s
    x_max = duration * 1.01 if duration > 0 else 1.0
    bars, column_s = reduce_spans(trace.spans, max_bars, duration)
    labels, row = thread_rows(trace)
    cats = category_order({s.category for s in trace.spans})
    colors = category_colors(cats)

    fig, ax = plt.subplots(figsize=(14, 1.8 + 0.42 * len(labels)))
    ax.set_xlim(0, x_max)
    pad, unnamed = _draw_runs(ax, trace.runs, x_max, dpi)
    # Long categories first, so shorter ones (copies, blocking) stay visible on top.
    draw_order = [c for c in ("compute",) if c in cats] + [c for c in cats if tier_index(c) is not None] + \
                 [c for c in cats if c != "compute" and tier_index(c) is None]
    min_w = duration / 4000.0 if duration > 0 else 0.0  # at least ~a pixel wide
    for z, cat in enumerate(draw_order):
        per_row: dict[int, list[tuple[float, float]]] = {}
        for s in bars:
            if s.category == cat:
                per_row.setdefault(row[s.tid], []).append((s.start_s, max(s.dur_s, min_w)))
        for r, xs in per_row.items():
            ax.broken_barh(xs, (r - 0.38, 0.76), facecolors=colors[cat], edgecolor="none", zorder=2 + z)

    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlabel("time (s)")
    ax.grid(axis="x", color="#d0d0d0", zorder=1)
    note = f"{len(trace.spans)} events, {len(bars)} bars"
    if trace.runs:
        note += f", {len(trace.runs)} run{'s' if len(trace.runs) > 1 else ''}"
    if column_s:
        note += f"; downsampled to {_fmt_seconds(column_s)} columns showing the main activity"
    if unnamed:
        note += f"; {unnamed} narrow runs unnamed (--run NAME zooms)"
    if trace.dropped:
        note += f"; {trace.dropped} events DROPPED by the recorder"
    ax.set_title(f"{_heading(title, 'Timeline')}  ({note})", fontsize=11, pad=pad)
    handles = [Patch(facecolor=colors[c], label=category_label(c)) for c in cats]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="category")
    return _save(fig, path, dpi)


def plot_bandwidth(trace: Trace, path: Path, bin_s: Optional[float] = None, title: str = "",
                   dpi: int = 110) -> Path:
    """Per-tier bandwidth over time (MiB/s per bin) from the tier<N> spans' bytes.

    A span's bytes are spread evenly over its duration; a copy between two
    file tiers counts in its destination tier (the category mlbs gives it).
    """
    width, series = tier_bandwidth(trace, bin_s)
    if not series:
        raise ValueError("the trace has no tier<N> events with bytes (baseline modes do their I/O on the "
                         "application thread: see timeline.png)")
    plt = _pyplot()
    colors = category_colors(series)
    duration = trace.duration_s
    x_max = duration * 1.01 if duration > 0 else 1.0
    fig, ax = plt.subplots(figsize=(14, 4.8))
    ax.set_xlim(0, x_max)
    pad, unnamed = _draw_runs(ax, trace.runs, x_max, dpi)
    for cat, mib_s in series.items():
        xs = [i * width for i in range(len(mib_s) + 1)]
        total_gib = sum(mib_s) * width / 1024.0
        ax.stairs(mib_s, xs, color=colors[cat], linewidth=1.5, zorder=3,
                  label=f"tier {tier_index(cat)}: {total_gib:.2f} GiB, peak {max(mib_s):.0f} MiB/s")
    if len(series) > 1:
        total = [sum(v) for v in zip(*series.values())]
        xs = [i * width for i in range(len(total) + 1)]
        ax.stairs(total, xs, color="black", linewidth=0.9, linestyle=":", label="all tiers", zorder=4)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("MiB/s")
    ax.set_ylim(bottom=0)
    ax.grid(color="#d0d0d0", zorder=1)
    note = f"bins of {_fmt_seconds(width)}"
    if unnamed:
        note += f"; {unnamed} narrow runs unnamed (--run NAME zooms)"
    if trace.dropped:
        note += f"; {trace.dropped} events DROPPED: bandwidth understated"
    ax.set_title(f"{_heading(title, 'Bandwidth per tier')}  ({note})", fontsize=11, pad=pad)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="helper I/O")
    return _save(fig, path, dpi)


def _heading(title: str, default: str) -> str:
    """`default`, prefixed by the user's title when there is one."""
    return f"{title}: {default}" if title else default


IO_RATIO_LABEL = "I/O ratio (a snapshot every N steps)"
SPEEDUP_LABEL = "speedup over sync"


def _grid(n: int, max_cols: int = 3) -> tuple[int, int]:
    cols = min(n, max_cols)
    return math.ceil(n / cols), cols


def plot_speedup(records: Sequence[dict[str, Any]], path: Path, title: str = "", dpi: int = 110) -> Path:
    """Speedup against the I/O ratio per workload: actual (solid, per mode), expected (dashed).

    With a single I/O ratio in the results: grouped bars per workload, one bar
    per mode (actual), expected as a dashed black tick across each bar.
    """
    usable = [r for r in records if speedup(r, "actual_speedup") is not None
              or speedup(r, "expected_speedup") is not None]
    if not usable:
        raise ValueError("no result has a positive actual_speedup or expected_speedup")
    plt = _pyplot()
    from matplotlib.lines import Line2D

    workloads = workloads_of(usable)
    modes = modes_of(usable)
    colors = mode_colors(modes)
    ratios = io_ratios_of(usable)

    if len(ratios) <= 1:
        return _speedup_bars(usable, path, workloads, modes, colors, ratios, title, dpi)

    nrows, ncols = _grid(len(workloads))
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 4.2 * nrows), squeeze=False)
    log_x = ratios[0] > 0 and ratios[-1] / ratios[0] >= 4  # ratios are usually a geometric series
    for k, wl in enumerate(workloads):
        ax = axes[k // ncols][k % ncols]
        for mode in modes:
            rs = sorted((r for r in usable if str(r.get("workload", "?")) == wl and str(r.get("mode")) == mode),
                        key=lambda r: _number(r.get("io_ratio")) or 0.0)
            for key, style in (("actual_speedup", dict(linestyle="-", marker="o")),
                               ("expected_speedup", dict(linestyle="--", marker=None))):
                pts = [(_number(r.get("io_ratio")), speedup(r, key)) for r in rs]
                pts = [(x, y) for x, y in pts if x is not None and y is not None]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colors[mode], linewidth=1.6,
                            markersize=5, **style)
        ax.axhline(1.0, color="#888888", linewidth=0.8, linestyle=":")
        if log_x:
            ax.set_xscale("log")
        if len(ratios) <= 8:
            ax.set_xticks(ratios)
            ax.set_xticklabels([_fmt_ratio(r) for r in ratios])
            ax.minorticks_off()
        ax.set_xlabel(IO_RATIO_LABEL)
        ax.set_ylabel(SPEEDUP_LABEL)
        ax.set_ylim(bottom=0)
        ax.grid(color="#e5e5e5")
        ax.set_title(f"workload: {wl}", fontsize=11)
    for k in range(len(workloads), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    handles = [Line2D([], [], color=colors[m], marker="s", linestyle="", markersize=9, label=m) for m in modes]
    handles += [Line2D([], [], color="black", linestyle="-", marker="o", label="actual"),
                Line2D([], [], color="black", linestyle="--", label="expected (model)")]
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 0.95), frameon=False, title="mode")
    fig.suptitle(_heading(title, "Speedup vs I/O ratio"), fontsize=12)
    fig.tight_layout()
    return _save(fig, path, dpi)


def _speedup_bars(records: Sequence[dict[str, Any]], path: Path, workloads: list[str], modes: list[str],
                  colors: dict[str, str], ratios: list[float], title: str, dpi: int) -> Path:
    plt = _pyplot()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    width = 0.8 / max(len(modes), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 + len(workloads) * len(modes) * 0.9), 4.8))
    top = 0.0
    for w, wl in enumerate(workloads):
        for m, mode in enumerate(modes):
            rec = next((r for r in records if str(r.get("workload", "?")) == wl and str(r.get("mode")) == mode), None)
            if rec is None:
                continue
            x = w - 0.4 + width * (m + 0.5)
            actual = speedup(rec, "actual_speedup")
            expected = speedup(rec, "expected_speedup")
            if actual is not None:
                ax.bar(x, actual, width * 0.9, color=colors[mode], zorder=2)
                ax.text(x, actual, f"{actual:.2f}", ha="center", va="bottom", fontsize=8)
                top = max(top, actual)
            if expected is not None:
                ax.plot([x - width * 0.38, x + width * 0.38], [expected, expected], color="black",
                        linestyle="--", linewidth=1.4, zorder=3)
                top = max(top, expected)
    ax.axhline(1.0, color="#888888", linewidth=0.8, linestyle=":", zorder=1)
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels(workloads)
    ax.set_xlabel("workload")
    ax.set_ylabel(SPEEDUP_LABEL)
    ax.set_ylim(0, top * 1.15 if top > 0 else 1.0)
    ax.grid(axis="y", color="#e5e5e5", zorder=0)
    ratio = f" at I/O ratio {_fmt_ratio(ratios[0])}" if ratios else ""
    ax.set_title(_heading(title, "Speedup") + ratio, fontsize=11)
    handles = [Patch(facecolor=colors[m], label=f"{m} (actual)") for m in modes]
    handles.append(Line2D([], [], color="black", linestyle="--", label="expected (model)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, path, dpi)


def _breakdown_axes(ax: Any, rs: Sequence[dict[str, Any]], xs: Sequence[float]) -> None:
    """Stacked bars of `rs` at positions `xs`, with the wall time above and a mark when not verified."""
    top_all = max([_number(r.get("wall_s")) or 0.0 for r in rs] + [1e-9])
    for x, rec in zip(xs, rs):
        if rec.get("error"):
            ax.text(x, top_all * 0.02, "FAILED", ha="center", va="bottom", fontsize=7, color="white",
                    fontweight="bold", rotation=90, zorder=4,
                    bbox=dict(facecolor="#d62728", edgecolor="none", pad=1.5))
            continue
        parts = breakdown_of(rec)
        bottom = 0.0
        for key, _, color in BREAKDOWN_PARTS:
            ax.bar(x, parts[key], 0.75, bottom=bottom, color=color, edgecolor="white", linewidth=0.5, zorder=2)
            bottom += parts[key]
        wall = _number(rec.get("wall_s")) or 0.0
        top = max(bottom, wall)
        ax.text(x, top, f"{wall:.3g}s", ha="center", va="bottom", fontsize=8)
        if rec.get("verified") is False:
            ax.text(x, top * 0.5, "NOT\nVERIFIED", ha="center", va="center", fontsize=7, color="white",
                    fontweight="bold", zorder=4, bbox=dict(facecolor="#d62728", edgecolor="none", pad=1.5))


def plot_breakdown(records: Sequence[dict[str, Any]], path: Path, title: str = "", dpi: int = 110) -> Path:
    """Stacked bars per mode of kernel / copy / blocked write / blocked read / other wall time.

    One panel per workload. With several I/O ratios the panels are stacked
    vertically and each panel groups its bars by I/O ratio.
    """
    usable = [r for r in records if _number(r.get("wall_s")) is not None]
    if not usable:
        raise ValueError("no result has wall_s")
    plt = _pyplot()
    from matplotlib.patches import Patch

    workloads = workloads_of(usable)
    modes = modes_of(usable)
    ratios = io_ratios_of(usable)
    several = len(ratios) > 1
    # Positions: modes side by side, one empty slot between I/O ratio groups.
    slot = {(r, m): g * (len(modes) + 1) + k for g, r in enumerate(ratios) for k, m in enumerate(modes)} \
        if several else {}
    n_slots = len(ratios) * (len(modes) + 1) - 1 if several else len(modes)
    if several:
        nrows, ncols = len(workloads), 1
    else:
        nrows, ncols = _grid(len(workloads), 2)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False,
                             figsize=(max(5.0, 1.5 + 0.6 * n_slots) * ncols, (4.9 if several else 4.6) * nrows))
    for k, wl in enumerate(workloads):
        ax = axes[k // ncols][k % ncols]
        rs = [r for r in usable if str(r.get("workload", "?")) == wl]
        if several:
            rs = [r for r in rs if _number(r.get("io_ratio")) is not None]
            xs = [float(slot[(_number(r.get("io_ratio")), str(r.get("mode")))]) for r in rs]
        else:
            rs.sort(key=lambda r: modes.index(str(r.get("mode"))))
            xs = [float(i) for i in range(len(rs))]
        _breakdown_axes(ax, rs, xs)
        ax.set_xticks(xs)
        ax.set_xticklabels([str(r.get("mode")) for r in rs], fontsize=8,
                           rotation=30 if several and max(len(m) for m in modes) > 6 else 0)
        if several:  # group names between the panel's title and its bars
            for g, ratio in enumerate(ratios):
                center = g * (len(modes) + 1) + (len(modes) - 1) / 2.0
                ax.text(center, 1.01, f"I/O ratio {_fmt_ratio(ratio)}", transform=ax.get_xaxis_transform(),
                        ha="center", va="bottom", fontsize=9, fontweight="bold")
        ax.set_xlim(-0.7, n_slots - 0.3)
        ax.set_ylabel("wall time (s)")
        ax.margins(y=0.12)
        ax.set_ylim(bottom=0)
        ax.grid(axis="y", color="#e5e5e5", zorder=0)
        ax.set_title(f"workload: {wl}", fontsize=11, pad=20 if several else 6)
    for k in range(len(workloads), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    handles = [Patch(facecolor=c, label=label) for _, label, c in reversed(BREAKDOWN_PARTS)]
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 0.95), frameon=False, title="wall time")
    fig.suptitle(_heading(title, "Where the wall time goes"), fontsize=12)
    fig.tight_layout(h_pad=2.5 if several else None)
    return _save(fig, path, dpi)


# --- command line ---------------------------------------------------------------


def _read_json(path: Path, what: str) -> Optional[Any]:
    try:
        with path.open("r", encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        _skip(f"{what} {path} does not exist")
    except (OSError, UnicodeDecodeError) as e:
        _skip(f"cannot read {what} {path}: {e}")
    except json.JSONDecodeError as e:
        _skip(f"{what} {path} is not valid JSON: {e}")
    return None


def _skip(message: str) -> None:
    print(f"mlbs-plot: {message}", file=sys.stderr)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="mlbs-plot",
        description="Figures from mlbs-bench results (--json) and traces (--trace): "
                    "timeline.png, bandwidth.png (from the trace), speedup.png, breakdown.png (from the results).")
    p.add_argument("--json", type=Path, help="results written by mlbs-bench --json")
    p.add_argument("--trace", type=Path, help="Chrome trace written by mlbs-bench --trace")
    p.add_argument("--out", type=Path, help="folder for the PNG files (created); required unless --tier-time")
    p.add_argument("--tier-time", action="store_true",
                   help="print where each file tier's time went per run (of --trace; --run selects) instead of "
                        "drawing figures")
    p.add_argument("--max-bars", type=int, default=20000,
                   help="most bars the timeline draws: adjacent same-category bars are merged, then threads "
                        "downsampled, to fit (default 20000)")
    p.add_argument("--run", metavar="NAME",
                   help="timeline and bandwidth of the run NAME only, or of the runs whose name contains NAME "
                        "(mlbs-bench names them <workload>-<mode>-r<ratio>, e.g. rtm-mlbs-r4)")
    p.add_argument("--bin", type=float, default=None, metavar="SECONDS",
                   help="bandwidth bin width in seconds (default: about 120 bins over the run)")
    p.add_argument("--title", default="", help="text put before every figure's title (e.g. the machine)")
    p.add_argument("--dpi", type=int, default=110, help="resolution of the PNG files (default 110)")
    args = p.parse_args(argv)
    if args.tier_time:
        if args.trace is None:
            p.error("--tier-time needs --trace")
    elif args.out is None:
        p.error("the following arguments are required: --out")
    if args.json is None and args.trace is None:
        p.error("give --json, --trace or both")
    if args.max_bars < 1:
        p.error("--max-bars must be at least 1")
    if args.bin is not None and args.bin <= 0:
        p.error("--bin must be positive")
    if not 20 <= args.dpi <= 600:
        p.error("--dpi must be in [20, 600]")
    return args


def _attempt(name: str, draw: Callable[[], Path], written: list[Path]) -> None:
    """Draws one figure; a ValueError (nothing to draw) or OSError (cannot write) skips it with a message."""
    try:
        written.append(draw())
    except ValueError as e:
        _skip(f"{name} skipped: {e}")
    except OSError as e:
        _skip(f"{name} not written: {e}")


def trace_figures(args: argparse.Namespace) -> list[Path]:
    """timeline.png and bandwidth.png from --trace (restricted to --run)."""
    if args.trace is None:
        _skip("no --trace: timeline.png and bandwidth.png skipped")
        return []
    doc = _read_json(args.trace, "trace")
    try:
        trace = parse_trace(doc) if doc is not None else None
        if trace is not None and args.run:
            trace = select_runs(trace, args.run)
    except ValueError as e:
        _skip(f"trace {args.trace}: {e}")
        trace = None
    if trace is None:
        _skip("timeline.png and bandwidth.png skipped")
        return []
    written: list[Path] = []
    tr = trace
    _attempt("timeline.png", lambda: plot_timeline(tr, args.out / "timeline.png", args.max_bars, args.title,
                                                   args.dpi), written)
    _attempt("bandwidth.png", lambda: plot_bandwidth(tr, args.out / "bandwidth.png", args.bin, args.title,
                                                     args.dpi), written)
    return written


def result_figures(args: argparse.Namespace) -> list[Path]:
    """speedup.png and breakdown.png from --json."""
    if args.json is None:
        _skip("no --json: speedup.png and breakdown.png skipped")
        return []
    doc = _read_json(args.json, "results")
    try:
        records = load_results(doc) if doc is not None else None
    except ValueError as e:
        _skip(f"results {args.json}: {e}")
        records = None
    if records is None:
        _skip("speedup.png and breakdown.png skipped")
        return []
    written: list[Path] = []
    recs = median_repeats(records)
    _attempt("speedup.png", lambda: plot_speedup(recs, args.out / "speedup.png", args.title, args.dpi), written)
    _attempt("breakdown.png", lambda: plot_breakdown(recs, args.out / "breakdown.png", args.title, args.dpi),
             written)
    return written


def print_tier_time(args: argparse.Namespace) -> int:
    """--tier-time: the table on stdout; 1 with a message when the trace has nothing to report."""
    doc = _read_json(args.trace, "trace")
    if doc is None:
        return 1
    try:
        trace = parse_trace(doc)
        if args.run:
            trace.runs = chosen_runs(trace, args.run)  # each its own window
        sys.stdout.write(tier_time_table(trace))
    except ValueError as e:
        _skip(f"trace {args.trace}: {e}")
        return 1
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.tier_time:
        return print_tier_time(args)
    try:
        _pyplot()
    except ImportError:
        _skip("matplotlib is not installed (scripts/setup.sh installs it: python3 -m pip install matplotlib)")
        return 1
    written = trace_figures(args) + result_figures(args)
    for path in written:
        print(path)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
