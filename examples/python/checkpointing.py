"""A checkpointed adjoint on mlbs: revolve (or multistage) from checkpoint_schedules, Belady placement by mlbs.

The gradient of J = sum(x_N**2)/2 for a nonlinear time stepper x_{n+1} = x_n + h*sin(x_n) (one state of
--size elements per step) is computed three ways: storing every state in memory (the reference), and
with a checkpointing schedule whose checkpoints live in an mlbs store whose DRAM holds only a few of them
(the rest go to the file tier, and come back ahead of their reads because mlbs knows the read order from
the schedule). The gradients must be identical.

    python3 examples/python/checkpointing.py [--steps 200] [--snaps 12] [--schedule revolve|multistage]
"""

import argparse
import tempfile

import numpy as np
from checkpoint_schedules import MultistageCheckpointSchedule, Revolve

import mlbs
import mlbs.checkpointing as ckp

H = 0.01


def forward(x, n):
    return x + H * np.sin(x)


def adjoint(lam, x, n):
    return lam * (1.0 + H * np.cos(x))   # (d x_{n+1} / d x_n)^T lam


def reference_gradient(x0, steps):
    states = [x0]
    for n in range(steps):
        states.append(forward(states[-1], n))
    lam = states[-1].copy()
    for n in reversed(range(steps)):
        lam = adjoint(lam, states[n], n)
    return lam


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--snaps", type=int, default=12, help="checkpoints the schedule may hold at once")
    ap.add_argument("--size", type=int, default=1 << 18, help="elements of the state (float64)")
    ap.add_argument("--schedule", choices=["revolve", "multistage"], default="revolve")
    ap.add_argument("--dir", help="the file tier's folder (default: a temporary one)")
    args = ap.parse_args()

    def make():
        if args.schedule == "revolve":
            return Revolve(args.steps, args.snaps)
        return MultistageCheckpointSchedule(args.steps, args.snaps // 2, args.snaps - args.snaps // 2)

    x0 = np.linspace(0.0, 3.0, args.size)
    expected = reference_gradient(x0, args.steps)

    p = ckp.plan(make())
    state_bytes = x0.nbytes
    dram = 3 * (state_bytes + 4096)   # three checkpoints in DRAM: the others wait on the file tier
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        cfg = mlbs.Config(tiers=[mlbs.Tier.memory(dram), mlbs.Tier.directory(folder)], schedule=p.order)
        with mlbs.Runtime(cfg) as rt:
            store = rt.store("checkpoints", shape=x0.shape, dtype=x0.dtype)
            grad = ckp.run(make(), store, x0, forward, adjoint, adjoint_final=lambda x: x.copy())
            st = rt.stats()
    print(f"{args.schedule}: {args.steps} steps, {p.writes} checkpoints written, {len(p.order)} reads "
          f"({len(p.order) - len(set(p.order))} repeated), {p.steps} forward steps computed")
    print(f"DRAM {dram / 2**20:.1f} MiB for {state_bytes / 2**20:.1f} MiB states: "
          f"{st['tiers'][1]['bytes_in'] / 2**20:.1f} MiB went to the file tier, {st['prefetches']} prefetches, "
          f"blocked {(st['read_block_ns'] + st['write_block_ns']) / 1e6:.1f} ms")
    if not np.array_equal(grad, expected):
        raise SystemExit("the gradient differs from the all-in-memory reference")
    print("gradient identical to the all-in-memory reference")


if __name__ == "__main__":
    main()
