"""mlbs from Python: a toy reverse-time-migration loop whose snapshots go through mlbs.

The forward pass propagates a 2D acoustic wave and writes a snapshot every few steps; the backward
pass reads them back in reverse (a LIFO schedule) and cross-correlates them into an image. The same
image is computed with the snapshots kept in a Python list, and the two must match bit for bit.

    python3 examples/python/quickstart.py [--dir DIR] [--n 256] [--steps 400] [--every 4]

The DRAM budget is a quarter of the snapshot data, so most snapshots live on the file tier between
the two passes while the helper threads overlap that I/O with the stencil computation.
"""

import argparse
import pathlib
import tempfile
import time

import numpy as np

import mlbs


def step(u_prev, u, c2):
    """One second-order finite-difference time step of the 2D wave equation (periodic edges)."""
    lap = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4.0 * u
    return 2.0 * u - u_prev + c2 * lap


def forward(n, steps, every, save):
    """Propagates a point source; save(k, u) receives snapshot k."""
    c2 = np.full((n, n), 0.2, dtype=np.float32)
    c2[n // 2:, :] = 0.3                        # a reflector halfway down
    u_prev = np.zeros((n, n), np.float32)
    u = np.zeros((n, n), np.float32)
    u[n // 8, n // 2] = 1.0
    for t in range(steps):
        u_prev, u = u, step(u_prev, u, c2)
        if t % every == 0:
            save(t // every, u)
    return c2


def backward(n, steps, every, c2, load):
    """Back-propagates a receiver wavefield and cross-correlates it with the snapshots (LIFO)."""
    image = np.zeros((n, n), np.float32)
    r_prev = np.zeros((n, n), np.float32)
    r = np.zeros((n, n), np.float32)
    r[n // 8, :] = 1e-3
    for t in reversed(range(steps)):
        r_prev, r = r, step(r_prev, r, c2)
        if t % every == 0:
            image += load(t // every) * r
    return image


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", help="the file tier's folder (default: a temporary one)")
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--every", type=int, default=4)
    args = ap.parse_args()
    n, steps, every = args.n, args.steps, args.every

    # The reference: every snapshot kept in memory.
    kept = {}
    c2 = forward(n, steps, every, lambda k, u: kept.__setitem__(k, u.copy()))
    reference = backward(n, steps, every, c2, kept.pop)

    snapshots = (steps + every - 1) // every
    dram = max(snapshots * n * n * 4 // 4, 4 * n * n * 4)   # a quarter of the snapshot data
    with tempfile.TemporaryDirectory() as scratch:
        folder = pathlib.Path(args.dir or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        cfg = mlbs.Config(tiers=[mlbs.Tier.memory(dram), mlbs.Tier.directory(str(folder))], schedule="lifo")
        with mlbs.Runtime(cfg) as rt:
            store = rt.store("wavefield", shape=(n, n), dtype=np.float32)
            start = time.perf_counter()
            c2 = forward(n, steps, every, store.write)
            image = backward(n, steps, every, c2, store.read)
            wall = time.perf_counter() - start
            st = rt.stats()

    blocked = (st["write_block_ns"] + st["read_block_ns"]) / 1e9
    spilled = st["tiers"][1]["bytes_in"]
    print(f"{snapshots} snapshots of {n}x{n} float32 ({snapshots * n * n * 4 / 2**20:.1f} MiB), "
          f"DRAM {dram / 2**20:.1f} MiB, {spilled / 2**20:.1f} MiB went to {folder}")
    print(f"wall {wall:.2f} s, blocked in mlbs {blocked:.3f} s ({100 * blocked / wall:.1f}%)")
    if not np.array_equal(image, reference):
        raise SystemExit("image differs from the in-memory reference")
    print("image identical to the in-memory reference")


if __name__ == "__main__":
    main()
