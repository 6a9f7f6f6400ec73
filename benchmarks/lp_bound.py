#!/usr/bin/env python3
"""A tighter lower bound on a run's wall time: the least time any planner
could reach in mlbs-sim's model, from a linear program over the run's own
sequence of calls (docs/simulator.md, "A tighter bound: the run's own calls").

The physical bound (sim/bound.hpp) is max(compute, the least I/O time
capacity forces through the tiers): it lets every byte move at any moment.
A run cannot. A record leaves DRAM only once it is written, must be back in
DRAM when it is read, DRAM and every tier hold at most their capacity at
each call, and each tier moves at most bandwidth x time between two calls.
This program poses exactly those constraints, with the application's calls
as the clock:

  T_e        the time of call e (a write: its record is in DRAM; a read: it
             is delivered); T_{e+1} >= T_e + the application's compute and
             copies between them (more where it blocks); the first call
             after the compute before it; minimise the last call's time plus
             the compute after it.
  y[i,e,M]   the share of record i's bytes held on exactly the set M of
             tiers (bit 0: DRAM) at call e, while i lives (from its write to
             its last read; to the end if never read); all of it {DRAM} at
             its write, all of it in sets holding DRAM at each of its reads.
             The shares add up to 1: each byte is somewhere, counted once.
             DRAM and each tier hold at most their capacity at every call.
  f[i,e,edge] the share moved between calls e and e+1 along an edge: a copy
             onto tier t (M -> M + t), which costs t's bandwidth, and the
             source's too unless DRAM holds the bytes (DRAM's is not the
             limit), or a drop of the copy on t (M -> M - t), free. What a
             set holds at e+1 is what it held at e, plus what came in, less
             what went out; a file tier's reads and writes together take at
             most its bandwidth x (T_{e+1} - T_e).

Shares may be fractional: the program lets a record leave DRAM in pieces,
as a store in parts does (StoreOptions::parts), and ignores the helpers'
number and the tiers' latency. Every schedule mlbs-sim can produce whose
reads come from DRAM is feasible for it (the bytes a copy in flight has
moved count as arrived), so its optimum is a lower bound on the simulated
wall of any planner; in every point measured it also lies at or above the
physical bound (`--check` fails otherwise). It is tighter where the calls
leave the tiers no time: where DRAM holds few records, at the start before
the first writes, through the turn and at the end.

Input: the JSON lines of `mlbs_sim_sweep --points FILE` (every sweep point)
or `mlbs-sim ... --points FILE` (one run on a machine of your own). Output: per point,
KEY, the simulated wall over the physical bound and over the tighter of the
two bounds, and the two bounds; then a summary. Needs scipy (its HiGHS
interior-point solver), which scripts/setup.sh installs. A point of 32
records over three file tiers takes about 20 s, one of 96 several minutes.

  build/default/benchmarks/mlbs_sim_sweep --points points.jsonl > /dev/null
  benchmarks/lp_bound.py points.jsonl --only 'fifo/t1/n8/s2/*' [--max-records 32] [--check]
  benchmarks/lp_bound.py --self-test
"""

import argparse
import fnmatch
import json
import sys

try:
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix
except ImportError as e:  # a test skips (77) rather than fails where scipy is missing
    print(f"lp_bound: needs numpy and scipy ({e}); scripts/setup.sh installs them", file=sys.stderr)
    sys.exit(77)


def app_events(p):
    """The application's calls in order, as mlbs-sim runs them: a list of
    (kind, record) and the least application time before each call, after
    the one before (compute and copies), and after the last."""
    n, parts = p["records"], p["parts"]
    size, copy_bw = p["record_bytes"], p["copy_bytes_per_s"]
    kappa = size / copy_bw
    order = p["order"]
    last_read = {}
    for k, rid in enumerate(order):
        last_read[rid] = k
    events, gaps = [], []
    pending = 0.0
    for i in range(n):
        if i % parts == 0:
            pending += p["compute_per_write_s"]
        pending += kappa  # the copy into its slot, before the record is in
        events.append(("w", i))
        gaps.append(pending)
        pending = 0.0
    pending += p["compute_at_turn_s"]
    for k, rid in enumerate(order):
        events.append(("r", rid))
        gaps.append(pending)
        pending = 0.0
        # Copied out of its slot (a store's parts, or a record read again later), as mlbs-sim charges it.
        if p["store_parts"] or last_read[rid] > k:
            pending += kappa
        if (k + 1) % parts == 0 or k + 1 == len(order):
            pending += p["compute_per_read_s"]
    return events, gaps, pending


class Program:
    """Collects variables and sparse rows for linprog."""

    def __init__(self):
        self.nvar = 0
        self.lo, self.hi = [], []
        self.rows, self.cols, self.vals, self.rhs = [], [], [], []
        self.nrow = 0
        self.erows, self.ecols, self.evals, self.erhs = [], [], [], []
        self.neq = 0

    def var(self, lo=0.0, hi=None):
        self.lo.append(lo)
        self.hi.append(hi)
        self.nvar += 1
        return self.nvar - 1

    def eq(self, terms, rhs):
        """sum(coef * var) == rhs"""
        self.neq = self._row(self.erows, self.ecols, self.evals, self.erhs, self.neq, terms, rhs)

    def le(self, terms, rhs):
        """sum(coef * var) <= rhs"""
        self.nrow = self._row(self.rows, self.cols, self.vals, self.rhs, self.nrow, terms, rhs)

    @staticmethod
    def _row(rows, cols, vals, rhs_list, row, terms, rhs):
        for v, c in terms:
            rows.append(row)
            cols.append(v)
            vals.append(c)
        rhs_list.append(rhs)
        return row + 1


def solve(p, time_limit=600.0):
    """The least wall time the program allows for point p (seconds), or None
    when the solver gives no answer within `time_limit` seconds."""
    events, gaps, tail = app_events(p)
    E = len(events)
    L = len(p["tiers"])
    size = float(p["record_bytes"])
    S = float(p["dram_bytes"])
    caps = [0.0] + [float(t["capacity_bytes"]) for t in p["tiers"]]
    bws = [0.0] + [float(t["bandwidth_bytes_per_s"]) for t in p["tiers"]]
    n = p["records"]
    written = {rid: e for e, (kind, rid) in enumerate(events) if kind == "w"}
    reads = {}
    for e, (kind, rid) in enumerate(events):
        if kind == "r":
            reads.setdefault(rid, set()).add(e)
    alive = {i: (written[i], max(reads[i]) if i in reads else E - 1) for i in range(n)}

    # The sets of tiers a record's bytes may be on at once (bit t: tier t, 0 = DRAM).
    sets = list(range(1, 1 << (L + 1)))
    # Moves between sets within an interval: a copy into tier t (from DRAM
    # when the bytes are there, which costs only t; else from one file tier
    # that holds them, which costs both), or a drop of the copy on t (free).
    edges = []  # (from set, to set, tiers whose bandwidth it takes)
    for M in sets:
        for t in range(L + 1):
            bit = 1 << t
            if M & bit:
                if M != bit:
                    edges.append((M, M & ~bit, ()))
                continue
            if M & 1:
                edges.append((M, M | bit, (t,)))
            else:
                for s_ in range(1, L + 1):
                    if M & (1 << s_):
                        edges.append((M, M | bit, (s_, t) if t else (s_,)))

    P = Program()
    T = [P.var(0.0, None) for _ in range(E)]
    y = {}
    for i, (a, b) in alive.items():
        for e in range(a, b + 1):
            read_here = e in reads.get(i, ())
            for M in sets:
                if e == a:  # just written: in DRAM only
                    lo = hi = 1.0 if M == 1 else 0.0
                else:
                    lo, hi = 0.0, (0.0 if read_here and not M & 1 else 1.0)
                y[i, e, M] = P.var(lo, hi)
    f = {}
    for i, (a, b) in alive.items():
        for e in range(a, b):
            for k in range(len(edges)):
                f[i, e, k] = P.var(0.0, None)

    # The application's clock.
    P.le([(T[0], -1.0)], -gaps[0])
    for e in range(E - 1):
        P.le([(T[e], 1.0), (T[e + 1], -1.0)], -gaps[e + 1])

    # Each interval moves shares between sets; what a set holds at the next call is what it held, plus what came in,
    # less what went out (so each byte is somewhere, once).
    into = {M: [] for M in sets}
    out_of = {M: [] for M in sets}
    for k, (M, N, _) in enumerate(edges):
        out_of[M].append(k)
        into[N].append(k)
    for i, (a, b) in alive.items():
        for e in range(a, b):
            for M in sets:
                terms = [(y[i, e + 1, M], 1.0), (y[i, e, M], -1.0)]
                terms += [(f[i, e, k], -1.0) for k in into[M]] + [(f[i, e, k], 1.0) for k in out_of[M]]
                P.eq(terms, 0.0)

    # Capacities at every call, bandwidth between calls.
    by_call = [[] for _ in range(E)]
    for i, (a, b) in alive.items():
        for e in range(a, b + 1):
            by_call[e].append(i)
    for e in range(E):
        for t in range(L + 1):
            cap = S if t == 0 else caps[t]
            if cap > 0:
                P.le([(y[i, e, M], size) for i in by_call[e] for M in sets if M & (1 << t)], cap)
    for e in range(E - 1):
        movers = [i for i in by_call[e] if alive[i][1] > e]
        for t in range(1, L + 1):
            terms = [(f[i, e, k], size / bws[t]) for i in movers for k, edge in enumerate(edges) if t in edge[2]]
            if terms:
                P.le(terms + [(T[e + 1], -1.0), (T[e], 1.0)], 0.0)

    c = np.zeros(P.nvar)
    c[T[E - 1]] = 1.0
    A = coo_matrix((P.vals, (P.rows, P.cols)), shape=(P.nrow, P.nvar)).tocsr()
    Aeq = coo_matrix((P.evals, (P.erows, P.ecols)), shape=(P.neq, P.nvar)).tocsr()
    # Interior point first: 20 s for a point the dual simplex had not solved in ten minutes; without presolve where
    # that fails (one point of the sweep, a solve error); the simplex last.
    for method, presolve in (("highs-ipm", True), ("highs-ipm", False), ("highs-ds", True)):
        res = linprog(c, A_ub=A, b_ub=np.array(P.rhs), A_eq=Aeq, b_eq=np.array(P.erhs),
                      bounds=list(zip(P.lo, P.hi)), method=method,
                      options={"time_limit": time_limit, "presolve": presolve})
        if res.status == 0:
            return res.fun + tail
    return None


def self_test():
    """Runs whose least wall is known by hand; fails if the program is broken."""
    mib = 1 << 20
    base = {"key": "t", "helpers": 2, "copy_bytes_per_s": 1e30, "record_bytes": 16 * mib, "parts": 1,
            "store_parts": False, "compute_at_turn_s": 0.0}
    failures = 0

    def check(name, p, want, tol=1e-6):
        nonlocal failures
        got = solve(p)
        ok = got is not None and abs(got - want) <= tol * max(1.0, want)
        print(f"lp_bound self-test: {name}: {got} (want {want}) {'ok' if ok else 'FAILED'}")
        failures += 0 if ok else 1

    bw = 16 * mib  # one record per second
    # Everything fits in DRAM: the compute alone.
    check("fits in DRAM", dict(base, dram_bytes=64 * mib, records=4, order=[3, 2, 1, 0],
                               tiers=[{"capacity_bytes": 0, "bandwidth_bytes_per_s": bw, "latency_s": 0}],
                               compute_per_write_s=1.0, compute_per_read_s=1.0), 8.0)
    # DRAM for one record, two records, no compute: record 0 must go down
    # before record 1 is written (1 s) and come back after record 1 is read (1 s).
    check("one slot, two records", dict(base, dram_bytes=16 * mib, records=2, order=[1, 0],
                                        tiers=[{"capacity_bytes": 0, "bandwidth_bytes_per_s": bw, "latency_s": 0}],
                                        compute_per_write_s=0.0, compute_per_read_s=0.0), 2.0)
    # The same in FIFO order: 0 goes down before 1 is written (1 s); between
    # the last write and the first read, 1 goes down and 0 comes up (2 s: DRAM
    # holds one of them at each call); 1 comes up after 0 is read (1 s).
    check("one slot, FIFO", dict(base, dram_bytes=16 * mib, records=2, order=[0, 1],
                                 tiers=[{"capacity_bytes": 0, "bandwidth_bytes_per_s": bw, "latency_s": 0}],
                                 compute_per_write_s=0.0, compute_per_read_s=0.0), 4.0)
    # Compute covers the tier: one record down during the next compute and up
    # during the previous one: the compute alone (2 s per call, 4 calls).
    check("compute covers", dict(base, dram_bytes=16 * mib, records=2, order=[1, 0],
                                 tiers=[{"capacity_bytes": 0, "bandwidth_bytes_per_s": bw, "latency_s": 0}],
                                 compute_per_write_s=2.0, compute_per_read_s=2.0), 8.0)
    print(f"lp_bound self-test: {'OK' if failures == 0 else 'FAILED'}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("points", nargs="?", help="JSON lines from mlbs_sim_sweep --points or mlbs-sim --points")
    ap.add_argument("--only", default="*", help="keys to solve (a glob)")
    ap.add_argument("--max-records", type=int, default=96, help="skip points with more records (after parts)")
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per program")
    ap.add_argument("--check", action="store_true",
                    help="fail unless every program lies between the physical bound and the simulated wall")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        sys.exit(1 if self_test() else 0)
    if not a.points:
        ap.error("give the points file, or --self-test")
    rows = []
    broken = []
    with open(a.points) as f:
        for line in f:
            p = json.loads(line)
            if not fnmatch.fnmatch(p["key"], a.only) or p["records"] > a.max_records:
                continue
            lp = solve(p, a.time_limit)
            if lp is None:
                print(f"{p['key']} no answer", flush=True)
                continue
            lp = max(lp, 0.0)
            # Both are lower bounds of the simulated wall; the program never looser than the physical bound.
            if lp > p["wall_s"] * (1 + 1e-6) or lp < p["bound_s"] * (1 - 1e-6):
                broken.append(p["key"])
            tight = max(lp, p["bound_s"])
            rows.append((p["key"], p["wall_s"] / p["bound_s"], p["wall_s"] / tight))
            print(f"{p['key']} {p['wall_s'] / p['bound_s']:.4f} {p['wall_s'] / tight:.4f} "
                  f"bound {p['bound_s']:.4f} lp {lp:.4f}", flush=True)
    if rows:
        phys = sorted(r[1] for r in rows)
        lp = sorted(r[2] for r in rows)
        print(f"# {len(rows)} points: above 1.05x the physical bound {sum(v > 1.05 for v in phys)}, "
              f"above 1.05x the program's {sum(v > 1.05 for v in lp)}; median {phys[len(phys) // 2]:.4f} -> "
              f"{lp[len(lp) // 2]:.4f}, max {phys[-1]:.4f} -> {lp[-1]:.4f}")
    if a.check:
        if broken or not rows:
            print(f"lp_bound check: FAILED: {len(broken)} of {len(rows)} points outside [bound, wall]: "
                  f"{' '.join(broken[:10])}")
            sys.exit(1)
        print(f"lp_bound check: OK ({len(rows)} points within [physical bound, simulated wall])")


if __name__ == "__main__":
    main()
