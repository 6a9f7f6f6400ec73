#!/usr/bin/env python3
"""Compares two outputs of mlbs_sim_sweep (docs/simulator.md, "Sweeping the planner").

    sweep_compare.py BEFORE AFTER [--top N]

Prints each output's median, p90, max and points above 1.05x, how many points
got better or worse by more than 0.005, the N largest changes each way, and
the mean and count above 1.05x per class (schedule / file tiers / DRAM slots /
fast tiers' share).
"""
import argparse
from collections import defaultdict


def load(path):
    points = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and not line.startswith("#"):
                points[parts[0]] = float(parts[1])
    return points


def summary(points):
    v = sorted(points.values())
    return "median %.4f  p90 %.4f  max %.4f  above 1.05x %d" % (
        v[len(v) // 2], v[len(v) * 9 // 10], v[-1], sum(x > 1.05 for x in v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    a, b = load(args.before), load(args.after)
    keys = [k for k in a if k in b]
    print("before:", summary(a))
    print("after: ", summary(b))
    better = sorted(((a[k] - b[k], k) for k in keys if b[k] < a[k] - 0.005), reverse=True)
    worse = sorted(((b[k] - a[k], k) for k in keys if b[k] > a[k] + 0.005), reverse=True)
    print("better %d, worse %d (by more than 0.005)" % (len(better), len(worse)))
    for d, k in worse[:args.top]:
        print("  worse  %.3f  %s  %.3f -> %.3f" % (d, k, a[k], b[k]))
    for d, k in better[:args.top]:
        print("  better %.3f  %s  %.3f -> %.3f" % (d, k, a[k], b[k]))
    classes = defaultdict(lambda: ([], []))
    for k in keys:
        p = k.split("/")
        c = "/".join((p[0], p[1], p[3], p[4]))
        classes[c][0].append(a[k])
        classes[c][1].append(b[k])
    print("class                   before (mean / above 1.05x)   after")
    for c in sorted(classes):
        x, y = classes[c]
        print("  %-22s %.3f / %2d            %.3f / %2d" % (
            c, sum(x) / len(x), sum(v > 1.05 for v in x), sum(y) / len(y), sum(v > 1.05 for v in y)))


if __name__ == "__main__":
    main()
