"""Tests of mlbs-plot (tools/mlbs-plot/mlbs_plot.py).

Run from the repository root:  python3 -B -m unittest discover -s tests/plot -v
or as ctest does:              python3 -B tests/plot/test_mlbs_plot.py
The figure tests skip (with "matplotlib not installed") when matplotlib is
missing; the parsing, merging and binning tests need only the standard library.
Run as a script, the file exits 77 in that case (ctest's SKIP_RETURN_CODE).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PLOT_DIR = REPO / "tools" / "mlbs-plot"
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, str(PLOT_DIR))
sys.path.insert(0, str(HERE))

import make_fixtures  # noqa: E402
import mlbs_plot as mp  # noqa: E402

HAVE_MPL = importlib.util.find_spec("matplotlib") is not None
needs_mpl = unittest.skipUnless(HAVE_MPL, "matplotlib not installed")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; fails the caller's assertion if it is not a PNG."""
    data = path.read_bytes()
    if len(data) < 33 or data[:8] != PNG_SIGNATURE:
        raise AssertionError(f"{path} is not a PNG (signature)")
    length, ctype = struct.unpack(">I4s", data[8:16])
    if ctype != b"IHDR" or length != 13:
        raise AssertionError(f"{path}: first chunk is {ctype!r} ({length} bytes), not IHDR")
    width, height = struct.unpack(">II", data[16:24])
    if data[-12:-8] != b"\x00\x00\x00\x00" or data[-8:-4] != b"IEND":
        raise AssertionError(f"{path}: does not end with an IEND chunk")
    return width, height


def span(tid: int, cat: str, start: float, dur: float, nbytes: int = 0) -> mp.Span:
    return mp.Span(tid=tid, category=cat, start_s=start, dur_s=dur, bytes=nbytes)


class PngCase(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="mlbs-plot-test-")
        self.tmp = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def assertPng(self, path: Path, min_side: int = 200, max_side: int = 8000) -> None:
        self.assertTrue(path.is_file(), f"{path} was not written")
        self.assertGreater(path.stat().st_size, 1000, f"{path} is (nearly) empty")
        w, h = png_size(path)
        self.assertTrue(min_side <= w <= max_side and min_side <= h <= max_side, f"{path}: {w}x{h}")

    def run_main(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = mp.main(list(argv))
        return rc, out.getvalue(), err.getvalue()


class TraceParsingTest(unittest.TestCase):
    def test_complete_events_become_spans_in_seconds_from_zero(self) -> None:
        doc = {"traceEvents": [
            {"ph": "X", "name": "a", "cat": "compute", "ts": 1000, "dur": 500, "pid": 1, "tid": 1},
            {"ph": "X", "name": "w", "cat": "tier1", "ts": 1250, "dur": 1000, "pid": 1, "tid": 2,
             "args": {"bytes": 4096}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "helper 0"}},
            {"ph": "i", "name": "instant", "ts": 5, "pid": 1, "tid": 1},
        ]}
        tr = mp.parse_trace(doc)
        self.assertEqual(len(tr.spans), 2)
        a, w = tr.spans
        self.assertAlmostEqual(a.start_s, 0.0)
        self.assertAlmostEqual(a.dur_s, 0.0005)
        self.assertAlmostEqual(w.start_s, 0.00025)
        self.assertEqual(w.bytes, 4096)
        self.assertEqual(tr.thread_names, {2: "helper 0"})
        self.assertEqual(tr.dropped, 0)
        self.assertEqual(mp.parse_trace({"otherData": {"dropped_events": 12}, "traceEvents": []}).dropped, 12)
        self.assertAlmostEqual(tr.duration_s, 0.00125)

    def test_bare_array_and_bad_documents(self) -> None:
        tr = mp.parse_trace([{"ph": "X", "cat": "copy", "ts": 0, "dur": 1, "tid": 3}])
        self.assertEqual([s.category for s in tr.spans], ["copy"])
        with self.assertRaises(ValueError):
            mp.parse_trace({"events": []})
        # Malformed events are ignored, not fatal.
        tr = mp.parse_trace({"traceEvents": [1, {"ph": "X", "ts": "soon"}, {"ph": "X", "ts": 2, "dur": None}]})
        self.assertEqual(len(tr.spans), 1)
        self.assertEqual(tr.spans[0].dur_s, 0.0)

    def test_application_threads_come_before_helpers(self) -> None:
        tr = mp.Trace(spans=[span(7, "tier2", 0, 1), span(3, "compute", 0, 1), span(5, "tier1", 0, 1),
                             span(9, "tier1", 0, 1)],
                      thread_names={7: "helper 10", 5: "helper 2", 3: "app", 9: "helper 1", 11: "idle"})
        labels, row = mp.thread_rows(tr)
        self.assertEqual(labels, ["app", "helper 1", "helper 2", "helper 10"])
        self.assertEqual(row, {3: 0, 9: 1, 5: 2, 7: 3})

    def test_threads_of_one_name_share_a_row_unless_they_overlap(self) -> None:
        # Two runtimes one after the other (tids 2, 3 then 4, 5), then two at once (6 and 7).
        names = {1: "app", 2: "helper 0", 3: "helper 1", 4: "helper 0", 5: "helper 1", 6: "helper 0", 7: "helper 0"}
        tr = mp.Trace(spans=[span(1, "compute", 0, 10), span(2, "tier1", 0, 1), span(3, "tier1", 0, 1),
                             span(4, "tier1", 2, 1), span(5, "tier2", 2, 1), span(6, "tier1", 5, 2),
                             span(7, "tier1", 6, 2)], thread_names=names)
        labels, row = mp.thread_rows(tr)
        self.assertEqual(labels, ["app", "helper 0", "helper 0 (2)", "helper 1"])
        self.assertEqual(row, {1: 0, 2: 1, 4: 1, 6: 1, 7: 2, 3: 3, 5: 3})

    def test_run_spans_are_kept_apart(self) -> None:
        tr = mp.parse_trace(make_fixtures.trace())
        self.assertEqual([r.name for r in tr.runs], ["rtm-sync-r2", "rtm-mlbs-r2", "rtm-writebehind-r2"])
        self.assertNotIn(mp.RUN_CATEGORY, {s.category for s in tr.spans})
        self.assertAlmostEqual(tr.duration_s, tr.runs[-1].end_s)
        labels, _ = mp.thread_rows(tr)
        self.assertEqual(labels, ["app", "helper 0", "helper 1"])  # two runtimes' helpers, one row each

    def test_select_runs_clips_and_shifts(self) -> None:
        tr = mp.Trace(spans=[span(1, "compute", 0.0, 3.0), span(2, "tier1", 1.5, 1.0, 100), span(2, "tier1", 4, 1)],
                      runs=[mp.Span(1, "run", 0.0, 1.0, name="micro-sync-r1"),
                            mp.Span(1, "run", 1.0, 1.0, name="micro-mlbs-r1"),
                            mp.Span(1, "run", 2.0, 3.0, name="rtm-mlbs-r1")])
        sel = mp.select_runs(tr, "micro-mlbs")
        self.assertEqual([(s.category, s.start_s, s.dur_s, s.bytes) for s in sel.spans],
                         [("compute", 0.0, 1.0, 0), ("tier1", 0.5, 0.5, 50)])
        self.assertEqual([r.name for r in sel.runs], ["micro-mlbs-r1"])
        exact = mp.Trace(runs=[mp.Span(1, "run", 0.0, 1.0, name="rtm-mlbs-r1"),
                               mp.Span(1, "run", 1.0, 1.0, name="rtm-mlbs-r16")])
        self.assertEqual([r.name for r in mp.select_runs(exact, "rtm-mlbs-r1").runs], ["rtm-mlbs-r1"])
        self.assertEqual(len(mp.select_runs(exact, "rtm-mlbs-r").runs), 2)
        both = mp.select_runs(tr, "mlbs")
        self.assertAlmostEqual(both.duration_s, 4.0)
        with self.assertRaises(ValueError) as cm:
            mp.select_runs(tr, "pagecache")
        self.assertIn("micro-sync-r1", str(cm.exception))

    def test_categories_order_labels_and_colors(self) -> None:
        cats = ["tier2", "custom", "read_block", "tier1", "compute"]
        self.assertEqual(mp.category_order(cats), ["compute", "read_block", "tier1", "tier2", "custom"])
        self.assertEqual(mp.category_label("tier3"), "I/O on tier 3")
        self.assertEqual(mp.category_label("write_block"), "blocked in write()")
        colors = mp.category_colors(cats)
        self.assertEqual(len(set(colors.values())), len(cats))
        self.assertIsNone(mp.tier_index("tierX"))


def named(tid: int, cat: str, start: float, dur: float, name: str) -> mp.Span:
    return mp.Span(tid=tid, category=cat, start_s=start, dur_s=dur, name=name)


class TierTimeTest(unittest.TestCase):
    def test_a_copy_between_file_tiers_keeps_both_busy_and_a_removal_neither(self) -> None:
        self.assertEqual(mp.span_tiers(named(2, "tier1", 0, 1, "prefetch 2->1")), {1, 2})
        self.assertEqual(mp.span_tiers(named(2, "tier2", 0, 1, "writeback 0->2")), {2})
        self.assertEqual(mp.span_tiers(named(2, "tier1", 0, 1, "copy 1->2 cancelled")), {1, 2})
        self.assertEqual(mp.span_tiers(named(2, "tier3", 0, 1, "fsync")), {3})
        self.assertEqual(mp.span_tiers(named(2, "tier1", 0, 1, "remove 1")), set())
        self.assertEqual(mp.span_tiers(named(1, "compute", 0, 1, "stencil")), set())

    def test_busy_wasted_and_idle_add_up_to_the_window(self) -> None:
        spans = [named(2, "tier2", 1.0, 2.0, "writeback 0->2"),
                 named(3, "tier2", 2.0, 2.0, "writeback 0->2"),          # parallel: counted once
                 named(2, "tier1", 5.0, 1.0, "copy 1->2 cancelled"),     # wasted on both tiers
                 named(3, "tier1", 5.5, 1.5, "prefetch 2->1"),           # overlaps the stopped copy
                 named(2, "tier2", 9.0, 0.5, "remove 2"),
                 named(1, "compute", 0.0, 10.0, "stencil")]
        t1, t2 = mp.tier_time(spans, 0.0, 10.0)
        self.assertEqual((t1.tier, t2.tier), (1, 2))
        self.assertAlmostEqual(t2.busy_s, 3.0 + 1.5)
        self.assertAlmostEqual(t2.wasted_s, 0.5)        # 5.0-5.5: nothing that landed ran then
        self.assertAlmostEqual(t2.idle_s, 10.0 - 4.5 - 0.5)
        self.assertAlmostEqual(t2.first_s, 1.0)
        self.assertAlmostEqual(t2.tail_s, 3.0)          # the removal keeps no tier busy
        self.assertAlmostEqual(t2.gap_s, 1.0)           # 4.0-5.0
        self.assertAlmostEqual(t2.gap_at_s, 4.0)
        self.assertAlmostEqual(t1.busy_s, 1.5)
        self.assertAlmostEqual(t1.first_s, 5.0)

    def test_spans_are_clipped_to_the_window(self) -> None:
        (tt,) = mp.tier_time([named(2, "tier1", 0.0, 4.0, "writeback 0->1")], 1.0, 3.0)
        self.assertAlmostEqual(tt.window_s, 2.0)
        self.assertAlmostEqual(tt.busy_s, 2.0)
        self.assertEqual((tt.first_s, tt.tail_s, tt.idle_s), (0.0, 0.0, 0.0))
        self.assertEqual(mp.tier_time([named(2, "tier1", 5.0, 1.0, "writeback 0->1")], 1.0, 3.0), [])

    def test_the_table_has_a_row_per_run_and_tier(self) -> None:
        tr = mp.Trace(spans=[named(2, "tier1", 0.5, 1.0, "writeback 0->1"),
                             named(2, "tier2", 2.5, 1.0, "prefetch 2->0")],
                      runs=[named(1, "run", 0.0, 2.0, "rtm-mlbs-r8"), named(1, "run", 2.0, 2.0, "rtm-sync-r8")])
        lines = mp.tier_time_table(tr).splitlines()
        self.assertTrue(lines[0].startswith("run"))
        self.assertEqual([line.split()[:4] for line in lines[1:]],
                         [["rtm-mlbs-r8", "1", "2.000", "1.000"], ["rtm-sync-r8", "2", "2.000", "1.000"]])
        with self.assertRaises(ValueError):
            mp.tier_time_table(mp.Trace(spans=[named(1, "compute", 0, 1, "stencil")]))

    def test_command_line_prints_the_chosen_runs_without_matplotlib(self) -> None:
        with tempfile.TemporaryDirectory(prefix="mlbs-plot-test-") as d:
            f = make_fixtures.write_all(Path(d))
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = mp.main(["--trace", str(f["trace"]), "--tier-time", "--run", "rtm-mlbs-r2"])
            self.assertEqual(rc, 0, err.getvalue())
            rows = [line.split() for line in out.getvalue().splitlines()[1:]]
            self.assertEqual([(r[0], r[1]) for r in rows], [("rtm-mlbs-r2", "1"), ("rtm-mlbs-r2", "2")])
            for r in rows:  # busy + wasted + idle = the run's wall
                self.assertAlmostEqual(float(r[3]) + float(r[4]) + float(r[5]), float(r[2]), places=2)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                self.assertEqual(mp.main(["--trace", str(f["trace"]), "--tier-time", "--run", "nope"]), 1)
            self.assertIn("no run matches 'nope'", err.getvalue())


class MergeTest(unittest.TestCase):
    def test_touching_same_category_spans_merge_and_add_bytes(self) -> None:
        out = mp.merge_spans([span(1, "tier1", 0.0, 1.0, 10), span(1, "tier1", 1.0, 1.0, 5)])
        self.assertEqual(len(out), 1)
        self.assertAlmostEqual(out[0].dur_s, 2.0)
        self.assertEqual((out[0].bytes, out[0].count), (15, 2))

    def test_gap_tolerance(self) -> None:
        spans = [span(1, "compute", 0.0, 1.0), span(1, "compute", 1.5, 1.0)]
        self.assertEqual(len(mp.merge_spans(spans, 0.0)), 2)
        self.assertEqual(len(mp.merge_spans(spans, 0.4)), 2)
        merged = mp.merge_spans(spans, 0.5)
        self.assertEqual(len(merged), 1)
        self.assertAlmostEqual(merged[0].end_s, 2.5)

    def test_other_category_or_thread_in_between_prevents_merge(self) -> None:
        spans = [span(1, "compute", 0.0, 1.0), span(1, "copy", 1.0, 0.1), span(1, "compute", 1.1, 1.0),
                 span(2, "compute", 2.1, 1.0)]
        out = mp.merge_spans(spans, 10.0)
        self.assertEqual([(s.tid, s.category) for s in out], [(1, "compute"), (1, "copy"), (1, "compute"),
                                                               (2, "compute")])

    def test_nested_span_keeps_the_outer_end(self) -> None:
        out = mp.merge_spans([span(1, "tier1", 0.0, 5.0), span(1, "tier1", 1.0, 1.0)])
        self.assertEqual(len(out), 1)
        self.assertAlmostEqual(out[0].end_s, 5.0)

    def test_input_is_not_modified(self) -> None:
        spans = [span(1, "tier1", 0.0, 1.0, 1), span(1, "tier1", 1.0, 1.0, 1)]
        mp.merge_spans(spans)
        self.assertEqual([s.dur_s for s in spans], [1.0, 1.0])

    def test_reduce_leaves_small_traces_alone(self) -> None:
        tr = mp.parse_trace(make_fixtures.trace())
        bars, column_s = mp.reduce_spans(tr.spans, 20000, tr.duration_s)
        self.assertEqual(column_s, 0.0)
        self.assertLessEqual(len(bars), len(tr.spans))
        self.assertEqual(sum(b.count for b in bars), len(tr.spans))

    def test_reduce_caps_a_big_trace(self) -> None:
        tr = mp.parse_trace(make_fixtures.big_trace(8000))
        for cap in (3000, 300, 2):
            bars, column_s = mp.reduce_spans(tr.spans, cap, tr.duration_s)
            self.assertLessEqual(len(bars), cap, cap)
            self.assertGreater(len(bars), 0)
            self.assertGreater(column_s, 0.0)
        # Thread 1 computes 3/4 of the time: downsampled, compute is what it mostly did.
        bars, _ = mp.reduce_spans(tr.spans, 300, tr.duration_s)
        self.assertEqual({b.category for b in bars if b.tid == 1}, {"compute"})
        self.assertEqual({b.category for b in bars if b.tid == 2}, {"tier1"})

    def test_reduce_merges_helper_gaps_before_downsampling(self) -> None:
        # 1000 chunks with 1 ms gaps on one helper: merging gaps suffices, no downsampling.
        spans = [span(2, "tier1", i * 0.011, 0.010, 100) for i in range(1000)]
        bars, column_s = mp.reduce_spans(spans, 50, 11.0)
        self.assertEqual(column_s, 0.0)
        self.assertLessEqual(len(bars), 50)
        self.assertEqual(sum(b.bytes for b in bars), 100 * 1000)

    def test_downsample_paints_the_main_activity_and_leaves_idle_columns_empty(self) -> None:
        spans = [span(1, "compute", 0.0, 0.7), span(1, "copy", 0.7, 0.3),  # column 0: compute
                 span(1, "copy", 1.0, 0.2),                                 # column 1: mostly idle
                 span(1, "copy", 2.0, 0.6), span(1, "compute", 2.6, 0.4),   # column 2: copy
                 span(1, "copy", 3.0, 1.0)]                                 # column 3: copy
        out = mp.downsample_spans(spans, 1.0, 4)
        self.assertEqual([(s.category, s.start_s, s.dur_s) for s in out],
                         [("compute", 0.0, 1.0), ("copy", 2.0, 2.0)])


class BinningTest(unittest.TestCase):
    def test_span_inside_one_bin(self) -> None:
        self.assertEqual(mp.bin_bytes([span(1, "tier1", 0.2, 0.5, 100)], 1.0, 3), [100.0, 0.0, 0.0])

    def test_span_across_bins_is_spread_by_time(self) -> None:
        bins = mp.bin_bytes([span(1, "tier1", 0.5, 2.0, 400)], 1.0, 3)
        for got, want in zip(bins, [100.0, 200.0, 100.0]):
            self.assertAlmostEqual(got, want)

    def test_zero_length_span_and_overflow_keep_the_total(self) -> None:
        spans = [span(1, "tier1", 1.5, 0.0, 50), span(1, "tier1", 2.5, 2.0, 100), span(1, "tier1", 9.0, 1.0, 7)]
        bins = mp.bin_bytes(spans, 1.0, 3)
        self.assertAlmostEqual(bins[1], 50.0)
        self.assertAlmostEqual(bins[2], 107.0)
        self.assertAlmostEqual(sum(bins), 157.0)

    def test_spans_without_bytes_are_ignored_and_bad_bins_rejected(self) -> None:
        self.assertEqual(mp.bin_bytes([span(1, "compute", 0, 1)], 0.5, 2), [0.0, 0.0])
        with self.assertRaises(ValueError):
            mp.bin_bytes([], 0.0, 3)

    def test_choose_bin_width_is_round(self) -> None:
        self.assertAlmostEqual(mp.choose_bin_s(12.0), 0.1)
        self.assertAlmostEqual(mp.choose_bin_s(1.7), 0.02)
        self.assertAlmostEqual(mp.choose_bin_s(0.0), 1e-3)

    def test_tier_bandwidth_in_mib_per_s(self) -> None:
        tr = mp.Trace(spans=[span(2, "tier1", 0.0, 1.0, 64 << 20), span(3, "tier2", 1.0, 1.0, 32 << 20),
                             span(1, "compute", 0.0, 2.0)])
        width, series = mp.tier_bandwidth(tr, 1.0)
        self.assertEqual(width, 1.0)
        self.assertEqual(list(series), ["tier1", "tier2"])
        self.assertEqual(series["tier1"], [64.0, 0.0])
        self.assertEqual(series["tier2"], [0.0, 32.0])

    def test_total_bytes_of_the_fixture_trace_are_conserved(self) -> None:
        tr = mp.parse_trace(make_fixtures.trace())
        width, series = mp.tier_bandwidth(tr)
        moved = sum(v * width * mp.MIB for s in series.values() for v in s)
        self.assertAlmostEqual(moved / sum(s.bytes for s in tr.spans if mp.tier_index(s.category) is not None),
                               1.0, places=9)


class ResultsTest(unittest.TestCase):
    def test_load_results(self) -> None:
        recs = make_fixtures.results()
        self.assertEqual(mp.load_results(recs), recs)
        self.assertEqual(mp.load_results({"results": recs}), recs)
        with self.assertRaises(ValueError):
            mp.load_results([])
        with self.assertRaises(ValueError):
            mp.load_results("nope")

    def test_repeats_collapse_to_the_run_of_median_wall_time(self) -> None:
        runs = [{"workload": "micro", "mode": "mlbs", "io_ratio": 8, "repeat": k, "wall_s": w}
                for k, w in enumerate([1.7, 1.5, 1.6])]
        runs.append({"workload": "micro", "mode": "mlbs", "io_ratio": 8, "repeat": 3, "wall_s": 0.1, "error": "x"})
        runs.append({"workload": "micro", "mode": "sync", "io_ratio": 8, "repeat": 0, "wall_s": 4.0})
        out = mp.median_repeats(runs)
        self.assertEqual([(r["mode"], r["wall_s"]) for r in out], [("mlbs", 1.6), ("sync", 4.0)])
        recs = make_fixtures.results()
        self.assertEqual(mp.median_repeats(recs), recs, "no repeats: unchanged")

    def test_groups(self) -> None:
        recs = make_fixtures.results()
        self.assertEqual(mp.workloads_of(recs), ["micro", "rtm"])
        self.assertEqual(mp.modes_of(recs), ["sync", "mlbs", "writebehind", "pagecache"])
        self.assertEqual(mp.io_ratios_of(recs), [1.0, 2.0, 4.0, 8.0])

    def test_mode_colors_are_stable_and_distinct(self) -> None:
        a = mp.mode_colors(["sync", "mlbs", "pagecache"])
        b = mp.mode_colors(["mlbs", "custom-1", "custom-2", "sync"])
        self.assertEqual(a["mlbs"], b["mlbs"])
        self.assertEqual(a["sync"], b["sync"])
        self.assertEqual(len(set(b.values())), 4)

    def test_zero_speedup_means_undefined(self) -> None:
        self.assertIsNone(mp.speedup({"actual_speedup": 0}, "actual_speedup"))
        self.assertIsNone(mp.speedup({"actual_speedup": None}, "actual_speedup"))
        self.assertIsNone(mp.speedup({}, "expected_speedup"))
        self.assertEqual(mp.speedup({"expected_speedup": 2.5}, "expected_speedup"), 2.5)

    def test_breakdown_other_is_the_rest_of_wall_time(self) -> None:
        parts = mp.breakdown_of({"wall_s": 10.0, "kernel_s": 6.0, "copy_s": 1.0, "write_block_s": 0.5,
                                 "read_block_s": None})
        self.assertEqual(parts, {"kernel_s": 6.0, "copy_s": 1.0, "write_block_s": 0.5, "read_block_s": 0.0,
                                 "other_s": 2.5})
        # Parts larger than the wall time (clock skew) never give a negative "other".
        self.assertEqual(mp.breakdown_of({"wall_s": 1.0, "kernel_s": 2.0})["other_s"], 0.0)


@needs_mpl
class PlotTest(PngCase):
    def test_timeline(self) -> None:
        self.assertPng(mp.plot_timeline(mp.parse_trace(make_fixtures.trace()), self.tmp / "timeline.png"))

    def test_timeline_of_a_big_trace_is_capped(self) -> None:
        tr = mp.parse_trace(make_fixtures.big_trace(8000))
        self.assertPng(mp.plot_timeline(tr, self.tmp / "t.png", max_bars=400))

    def test_bandwidth(self) -> None:
        self.assertPng(mp.plot_bandwidth(mp.parse_trace(make_fixtures.trace()), self.tmp / "bw.png"))

    def test_speedup_lines_and_single_ratio_bars(self) -> None:
        self.assertPng(mp.plot_speedup(make_fixtures.results(), self.tmp / "s.png"))
        self.assertPng(mp.plot_speedup(make_fixtures.results(io_ratios=(2,)), self.tmp / "s1.png"))

    def test_breakdown_with_one_and_several_ratios_an_unverified_and_a_failed_run(self) -> None:
        recs = make_fixtures.results()
        recs[4]["verified"] = False
        recs[5].update(error="cannot write /pfs/x: No space left on device", verified=False, wall_s=0.0)
        self.assertPng(mp.plot_breakdown(recs, self.tmp / "b.png"))
        self.assertPng(mp.plot_breakdown(make_fixtures.results(io_ratios=(2,)), self.tmp / "b1.png"))

    def test_timeline_and_bandwidth_of_one_run(self) -> None:
        tr = mp.select_runs(mp.parse_trace(make_fixtures.trace()), "rtm-mlbs")
        self.assertPng(mp.plot_timeline(tr, self.tmp / "t.png"))
        self.assertPng(mp.plot_bandwidth(tr, self.tmp / "bw.png"))

    def test_many_narrow_runs(self) -> None:
        spans = [{"ph": "X", "cat": "run", "name": f"readafterwrite-writebehind-r{i}", "ts": i * 1000.0,
                  "dur": 1000.0 if i % 10 else 500_000.0, "tid": 1} for i in range(60)]
        spans += [{"ph": "X", "cat": "tier1", "name": "w", "ts": i * 1000.0, "dur": 900, "tid": 2,
                   "args": {"bytes": 4096}} for i in range(60)]
        tr = mp.parse_trace(spans)
        self.assertPng(mp.plot_timeline(tr, self.tmp / "t.png"))
        self.assertPng(mp.plot_bandwidth(tr, self.tmp / "bw.png"))

    def test_one_workload_one_mode_with_nulls(self) -> None:
        rec: dict[str, Any] = {"workload": "writeonly", "mode": "sync", "io_ratio": 1, "wall_s": 3.0,
                               "kernel_s": 2.0, "copy_s": None, "expected_speedup": 0, "actual_speedup": 1.0}
        self.assertPng(mp.plot_speedup([rec], self.tmp / "s.png"))
        self.assertPng(mp.plot_breakdown([rec], self.tmp / "b.png"))

    def test_inputs_without_anything_to_draw_raise_value_error(self) -> None:
        with self.assertRaises(ValueError):
            mp.plot_timeline(mp.Trace(), self.tmp / "t.png")
        with self.assertRaises(ValueError):
            mp.plot_bandwidth(mp.parse_trace({"traceEvents": [{"ph": "X", "cat": "compute", "ts": 0, "dur": 5}]}),
                              self.tmp / "bw.png")
        with self.assertRaises(ValueError):
            mp.plot_speedup([{"mode": "sync", "actual_speedup": 0, "expected_speedup": 0}], self.tmp / "s.png")
        with self.assertRaises(ValueError):
            mp.plot_breakdown([{"mode": "sync"}], self.tmp / "b.png")
        self.assertEqual(list(self.tmp.iterdir()), [])


@needs_mpl
class CommandLineTest(PngCase):
    def fixtures(self) -> dict[str, Path]:
        return make_fixtures.write_all(self.tmp / "in")

    def test_all_four_figures(self) -> None:
        f = self.fixtures()
        out = self.tmp / "out"
        rc, stdout, _ = self.run_main("--json", str(f["results"]), "--trace", str(f["trace"]), "--out", str(out))
        self.assertEqual(rc, 0)
        names = ["timeline.png", "bandwidth.png", "speedup.png", "breakdown.png"]
        self.assertEqual(stdout.split(), [str(out / n) for n in names])
        for n in names:
            self.assertPng(out / n)

    def test_missing_trace_file_skips_its_figures_with_a_message(self) -> None:
        f = self.fixtures()
        out = self.tmp / "out"
        rc, stdout, stderr = self.run_main("--json", str(f["results_single"]), "--trace", str(self.tmp / "none.json"),
                                           "--out", str(out))
        self.assertEqual(rc, 0)
        self.assertIn("does not exist", stderr)
        self.assertIn("timeline.png and bandwidth.png skipped", stderr)
        self.assertEqual(sorted(p.name for p in out.iterdir()), ["breakdown.png", "speedup.png"])
        self.assertEqual(len(stdout.split()), 2)

    def test_nothing_usable_exits_1(self) -> None:
        bad = self.tmp / "bad.json"
        bad.write_text("{not json")
        empty = self.tmp / "empty.json"
        empty.write_text("[]")
        rc, stdout, stderr = self.run_main("--json", str(bad), "--trace", str(empty), "--out", str(self.tmp / "o"))
        self.assertEqual(rc, 1)
        self.assertEqual(stdout, "")
        self.assertIn("not valid JSON", stderr)
        self.assertIn("timeline.png skipped", stderr)

    def test_trace_only(self) -> None:
        f = self.fixtures()
        rc, stdout, stderr = self.run_main("--trace", str(f["trace"]), "--out", str(self.tmp / "o"), "--bin", "0.05",
                                           "--title", "test box")
        self.assertEqual(rc, 0)
        self.assertEqual([Path(p).name for p in stdout.split()], ["timeline.png", "bandwidth.png"])
        self.assertIn("no --json", stderr)

    def test_run_selection(self) -> None:
        f = self.fixtures()
        rc, stdout, _ = self.run_main("--trace", str(f["trace"]), "--run", "rtm-writebehind-r2",
                                      "--out", str(self.tmp / "o"))
        self.assertEqual(rc, 0)
        self.assertEqual(len(stdout.split()), 2)
        rc, stdout, stderr = self.run_main("--trace", str(f["trace"]), "--run", "nope", "--out", str(self.tmp / "p"))
        self.assertEqual(rc, 1)
        self.assertIn("no run matches 'nope'; runs: rtm-sync-r2, rtm-mlbs-r2", stderr)

    def test_unwritable_output_is_a_message(self) -> None:
        f = self.fixtures()
        blocker = self.tmp / "file"
        blocker.write_text("not a folder")
        rc, stdout, stderr = self.run_main("--json", str(f["results"]), "--out", str(blocker / "sub"))
        self.assertEqual(rc, 1)
        self.assertIn("speedup.png not written", stderr)

    def test_usage_errors(self) -> None:
        for argv in (["--out", "x"], ["--json", "r.json"], ["--json", "r", "--out", "x", "--max-bars", "0"]):
            with self.assertRaises(SystemExit) as cm, contextlib.redirect_stderr(io.StringIO()):
                mp.parse_args(argv)
            self.assertEqual(cm.exception.code, 2, argv)

    def test_wrapper_script_runs(self) -> None:
        f = self.fixtures()
        out = self.tmp / "w"
        env = dict(os.environ, PYTHON=sys.executable)
        proc = subprocess.run([str(PLOT_DIR / "mlbs-plot"), "--json", str(f["results"]), "--out", str(out)],
                              capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([Path(p).name for p in proc.stdout.split()], ["speedup.png", "breakdown.png"])
        self.assertPng(out / "speedup.png")
        proc = subprocess.run([str(PLOT_DIR / "mlbs-plot"), "--help"], capture_output=True, text=True, env=env,
                              timeout=60)
        self.assertEqual(proc.returncode, 0)
        self.assertIn("usage: mlbs-plot", proc.stdout)


if __name__ == "__main__":
    # For ctest: exit 77 (SKIP_RETURN_CODE) when everything else passed but the
    # figure tests could not run for lack of matplotlib; 1 on any failure.
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(0 if HAVE_MPL else 77)
