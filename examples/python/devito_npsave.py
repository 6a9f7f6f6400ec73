"""Devito acoustic RTM that keeps its wavefield snapshots in files, as unmodified codes do: `np.save` of
each snapshot during the forward propagation, an fsync loop once it is done (the snapshots are durable
before the adjoint starts), then `np.load` of each in reverse while the adjoint back-propagates. It knows
nothing of mlbs: run it plainly, or under `mlbs-run` with its snapshot folder intercepted
(docs/transparent.md), and compare the time it spends in np.save, the fsync loop and np.load.

    python3 examples/python/devito_npsave.py --dir /scratch/snaps                 # 101^3 interior, 20-point layer
    mlbs-run --intercept /scratch/snaps --tiers mem:256MiB,dir:/nvme/cache:4GiB -- \\
        python3 examples/python/devito_npsave.py --dir /scratch/snaps

After the fsync loop it drops the files from the page cache (POSIX_FADV_DONTNEED), as a run far larger
than memory would find them when it reads them back. It prints one JSON line: the seconds in propagation,
np.save, the fsync loop and np.load, and the image's SHA-256 (equal in both runs).
"""

import argparse
import hashlib
import json
import os

import numpy as np
from devito import ConditionalDimension, configuration
from examples.seismic.acoustic import AcousticWaveSolver

from rtm_problem import Timer, build_problem, chunks, forward_operator, imaging


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="the snapshot folder")
    ap.add_argument("--shape", type=int, default=101, help="interior points per dimension (3D)")
    ap.add_argument("--nbl", type=int, default=20, help="absorbing layer width")
    ap.add_argument("--tn", type=float, default=1000.0, help="recording time, ms")
    ap.add_argument("--every", type=int, default=10, help="time steps between snapshots")
    ap.add_argument("--space-order", type=int, default=4)
    args = ap.parse_args()
    so, every = args.space_order, args.every
    configuration["log-level"] = "WARNING"

    model, model0, geometry = build_problem((args.shape,) * 3, args.nbl, args.tn, so)
    dt = model0.critical_dt
    d_obs, _, _ = AcousticWaveSolver(model, geometry, space_order=so).forward(vp=model.vp, dt=dt)
    nt = geometry.nt
    time_sub = ConditionalDimension("t_sub", parent=model0.grid.time_dim, factor=every)
    fwd, u, rec = forward_operator(model0, geometry, so)
    fwd.cfunction   # compiled now: the timings are the propagation's, not the JIT compiler's
    prop, save_t, sync_t, load_t = Timer(), Timer(), Timer(), Timer()
    path = lambda k: os.path.join(args.dir, f"u{k}.npy")  # noqa: E731

    for k, lo, hi in chunks(nt, every):
        if k > 0:
            with save_t:
                np.save(path(k), u.data_with_halo[lo % 3])
        with prop:
            fwd.apply(dt=dt, time_m=lo, time_M=hi)
    saved = [k for k, _, _ in chunks(nt, every) if k > 0]
    with sync_t:
        for k in saved:
            fd = os.open(path(k), os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)

    image, adj = imaging(model0, geometry, so, rec, d_obs, time_sub)
    for k, lo, hi in reversed(chunks(nt, every)):
        loaded = {}
        if k > 0:
            with load_t:
                loaded["snap"] = np.load(path(k))
        with prop:
            adj.apply(dt=dt, time_m=max(lo, 1), time_M=hi, **loaded)

    snap_bytes = os.path.getsize(path(saved[0]))
    print(json.dumps({"snapshots": len(saved), "snapshot_bytes": snap_bytes, "propagation_s": prop.s,
                      "save_s": save_t.s, "fsync_s": sync_t.s, "load_s": load_t.s,
                      "io_s": save_t.s + sync_t.s + load_t.s,
                      "image_sha256": hashlib.sha256(np.ascontiguousarray(image.data).tobytes()).hexdigest()}))


if __name__ == "__main__":
    main()
