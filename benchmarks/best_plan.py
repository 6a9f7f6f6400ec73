#!/usr/bin/env python3
"""mlbs — the best plan a small run over one file tier allows, found by search.

The physical bound (docs/benchmarking.md) relaxes the run: it lets the file
tier work from the first write to the last read without asking which records
DRAM holds meanwhile. This script finds the shortest wall any plan reaches on
a small instance, so that a sweep point's gap can be split into the planner's
part and the bound's (docs/simulator.md, "FIFO over one tier ...").

The model (mlbs-sim's for one unlimited tier, without its sharing):
* the application computes `compute` seconds before each write and after
  each read; a write copies into a DRAM slot (one of `slots`) for `copy`
  seconds, a read needs its record in DRAM and frees its slot (handed over:
  `--copy-read` 0, as mlbs-sim counts it);
* the tier moves one record at a time, `tier` seconds each way, and a
  transfer once started runs to its end (mlbs-sim shares the tier among
  transfers and stops copies at the turn: plans that need either are not
  searched);
* a record's DRAM copy may be dropped once the tier holds it.
Whenever the tier is free the search branches on what it does next: write
down any record only DRAM holds, fetch the next record the reads need that
DRAM lacks in place of the one read furthest ahead (Cao et al.'s optimal
prefetching and replacement rules, which some optimal plan follows in their
model; this one adds the writes), or idle until the application's next call.
Branch and bound with dominance, checked against every plan on tiny runs
(--self-test): the best wall under those rules, an estimate of what any
planner can reach rather than a proof.

Usage: best_plan.py --records 8 --slots 2 --tier 0.015625 --compute 0.0117 --copy 0.00105 [--order fifo|lifo]
       best_plan.py --self-test
"""
import argparse
import sys


def best_wall(n, slots, tier, compute, copy=0.0, order="fifo", upper=float("inf"), copy_read=0.0, prune=True):
    """The shortest wall of any plan for the model above; `prune` False searches every plan (tiny runs only)."""
    reads = list(range(n)) if order == "fifo" else list(range(n - 1, -1, -1))
    pos = {r: i for i, r in enumerate(reads)}  # read position of each record
    calls = [("w", i) for i in range(n)] + [("r", r) for r in reads]
    best = [upper]
    plan = []  # the best plan's transfers: (start, "write"/"fetch", record)
    path = []
    seen = {}

    def next_use(rec, k):
        return pos[rec] if k <= n + pos[rec] else 1 << 30

    def victim(dram, on_tier, pinned, k):
        """The record DRAM drops for one more (read furthest ahead, the tier holding it), or None."""
        drop = [r for r in dram if r in on_tier and r not in pinned]
        return max(drop, key=lambda r: next_use(r, k)) if drop else None

    def app_until(t_limit, k, ready, dram, on_tier, pinned, reserved, copying):
        """Runs the application's calls issued up to t_limit: (k, ready, dram, blocked, copying), where
        `copying` is the last write's (record, end of its copy into the slot): the tier may take it after."""
        while k < len(calls) and ready <= t_limit:
            kind, rec = calls[k]
            if kind == "w":
                if len(dram) + len(reserved) >= slots:
                    v = victim(dram, on_tier, pinned, k)
                    if v is None:
                        return k, ready, dram, True, copying
                    dram = dram - {v}
                dram = dram | {rec}
                copying = (rec, ready + copy)
                ready += copy + (compute if k + 1 < n else 0.0)  # none between the last write and the first read
            else:
                if rec not in dram:
                    return k, ready, dram, True, copying
                dram = dram - {rec}
                ready += copy_read + compute
            k += 1
        return k, ready, dram, False, copying

    def lower(t, k, ready, dram):
        app = ready + sum(copy if calls[kk][0] == "w" else copy_read for kk in range(k, len(calls)))
        app += compute * sum(1 for kk in range(k, len(calls)) if calls[kk][0] == "r" or kk < n - 1)
        fetches = sum(1 for kk in range(max(k, n), len(calls)) if calls[kk][1] not in dram)
        return max(app, t + fetches * tier + (copy_read + compute if fetches else 0.0))

    def search(t, k, ready, blocked, dram, on_tier, copying):
        # The tier is free at t; the application issues call k at `ready`, or
        # retries it now if it was waiting for a slot or a record.
        if blocked:
            ready = max(ready, t)
        k, ready, dram, blocked, copying = app_until(t, k, ready, dram, on_tier, frozenset(), frozenset(), copying)
        if k == len(calls):
            if ready < best[0]:
                best[0] = ready
                plan[:] = path
            return
        in_copy = copying[0] if copying[1] > t + 1e-12 else None  # still being copied into its slot
        if prune:
            if lower(t, k, ready, dram) >= best[0] - 1e-12:
                return
            key = (k, blocked, dram, on_tier, in_copy)
            marks = seen.setdefault(key, [])
            if any(a <= t + 1e-12 and b <= ready + 1e-12 for a, b in marks):
                return
            marks.append((t, ready))
        end = t + tier
        # Fetch the next record the reads need that DRAM lacks, into a free
        # slot or in place of one read after it (do no harm).
        for kk in range(max(k, n), len(calls)):
            rec = calls[kk][1]
            if rec in dram:
                continue
            if rec in on_tier:
                d = dram
                if len(dram) >= slots:
                    v = victim(dram, on_tier, frozenset(), k)
                    d = dram - {v} if v is not None and next_use(v, k) > pos[rec] else None
                if d is not None:
                    k2, ready2, d2, b2, c2 = app_until(end - 1e-12, k, ready, d, on_tier, frozenset(), frozenset({rec}),
                                                       copying)
                    path.append((t, "fetch", rec))
                    search(end, k2, ready2, b2, d2 | {rec}, on_tier, c2)
                    path.pop()
            break
        # Write down any record only DRAM holds, once its copy into the slot is done.
        for rec in sorted(dram - on_tier - {in_copy}):
            k2, ready2, d2, b2, c2 = app_until(end - 1e-12, k, ready, dram, on_tier, frozenset({rec}), frozenset(),
                                               copying)
            path.append((t, "write", rec))
            search(end, k2, ready2, b2, d2, on_tier | {rec}, c2)
            path.pop()
        # Or idle until the application's next call, or the end of the copy under way.
        wake = [x for x in ((ready if not blocked else None), (copying[1] if in_copy is not None else None))
                if x is not None and x > t + 1e-12]
        if wake:
            search(min(wake), k, ready, blocked, dram, on_tier, copying)

    sys.setrecursionlimit(10000)
    search(0.0, 0, compute, False, frozenset(), frozenset(), (None, 0.0))
    best_wall.plan = list(plan)
    return best[0]


def physical_bound(n, slots, tier, compute, copy=0.0, copy_read=0.0):
    """max(compute + copies, lead + least I/O + tail): the sweep's bound for one unlimited tier."""
    least_io = 2 * max(0, n - slots) * tier
    span = compute + least_io + compute if least_io else 0.0
    return max(2 * n * compute + (copy + copy_read) * n, span)


def self_test():
    """Checks the search on runs whose answer is known, and its pruning against every plan on tiny ones."""
    failures = []
    for n, slots, tier, compute in [(2, 2, 0.016, 0.012), (3, 3, 0.02, 0.0), (4, 4, 0.016, 0.005)]:
        w = best_wall(n, slots, tier, compute, 0.001)
        if abs(w - physical_bound(n, slots, tier, compute, 0.001)) > 1e-9:
            failures.append(f"a run that fits in DRAM: {w} is not its compute and copies")
    for n, slots in [(3, 1), (4, 2), (5, 2)]:
        for order in ("fifo", "lifo"):
            for compute in (0.0, 0.006, 0.012, 0.03):
                w = best_wall(n, slots, 0.016, compute, 0.001, order)
                b = physical_bound(n, slots, 0.016, compute, 0.001)
                if w < b - 1e-9:
                    failures.append(f"n={n} slots={slots} {order} compute={compute}: {w} below the bound {b}")
                if n <= 4 and abs(w - best_wall(n, slots, 0.016, compute, 0.001, order, prune=False)) > 1e-9:
                    failures.append(f"n={n} slots={slots} {order} compute={compute}: pruning lost the best plan")
    # Compute that covers the tier's work many times over: the kernels are the wall.
    w = best_wall(6, 2, 0.001, 0.05, 0.001)
    if abs(w - physical_bound(6, 2, 0.001, 0.05, 0.001)) > 1e-9:
        failures.append(f"compute-bound run: {w} is not its compute and copies")
    for f in failures:
        print("self-test: FAILED:", f)
    print("self-test: OK" if not failures else f"self-test: {len(failures)} failed")
    return 0 if not failures else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--records", type=int)
    ap.add_argument("--slots", type=int)
    ap.add_argument("--tier", type=float, help="seconds per record each way")
    ap.add_argument("--compute", type=float, default=0.0, help="seconds before each write and after each read")
    ap.add_argument("--copy", type=float, default=0.0, help="seconds per write's copy into its slot")
    ap.add_argument("--copy-read", type=float, default=0.0,
                    help="seconds per read's copy out of DRAM (0: the slot is handed over, as mlbs-sim models it)")
    ap.add_argument("--order", choices=["fifo", "lifo"], default="fifo")
    ap.add_argument("--upper", type=float, default=float("inf"),
                    help="a wall some plan reaches (mlbs-sim's): prunes the search; printed back if none beats it")
    ap.add_argument("--plan", action="store_true", help="also print the best plan's transfers")
    ap.add_argument("--self-test", action="store_true", help="check the search and exit")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if a.records is None or a.slots is None or a.tier is None:
        ap.error("--records, --slots and --tier are required")
    w = best_wall(a.records, a.slots, a.tier, a.compute, a.copy, a.order, upper=a.upper, copy_read=a.copy_read)
    bound = physical_bound(a.records, a.slots, a.tier, a.compute, a.copy, a.copy_read)
    beaten = "" if w < a.upper else " (no plan beats --upper)"
    print(f"best wall {w:.4f} s, physical bound {bound:.4f} s ({w / bound:.3f}x){beaten}")
    if a.plan:
        for start, op, rec in best_wall.plan:
            print(f"  {start:8.4f} {start + a.tier:8.4f}  {op:5}  id {rec}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
