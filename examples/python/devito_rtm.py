"""Devito acoustic RTM with its wavefield snapshots through mlbs, checked bit for bit against Devito's own.

Reverse Time Migration needs the forward wavefield again, in reverse order, while it back-propagates the
data residual. Devito's way keeps every snapshot in memory (`TimeFunction(save=...)` on a subsampled time
dimension); out of core, codes save them to files (`np.save`) and read them back (`np.load`), and wait for
that I/O. Here the forward and adjoint operators run in chunks of `--every` time steps
(`op.apply(time_m=..., time_M=...)`), the snapshot at each chunk's boundary goes to an mlbs store whose
DRAM budget is a quarter of the snapshot data (LIFO schedule: the helpers prefetch them back in reverse
while the adjoint runs), and the image must equal the in-memory reference's exactly. The copy into the
store overlaps the chunk's first two steps, and the adjoint computes on the returned array itself: what is
left in the application's way is a few hundred microseconds per snapshot.

    python3 examples/python/devito_rtm.py                       # 3D, 101^3 interior, 20-point absorbing layer
    python3 examples/python/devito_rtm.py --shape 41 --nbl 10 --tn 300   # a quick run
    python3 examples/python/devito_rtm.py --npsave               # also the np.save/np.load status quo

It prints the time in propagation (the operators), in mlbs's calls (blocking) and their ratio; with
--npsave the same for np.save + fsync / np.load with the files dropped from the page cache in between, as
a run far larger than RAM would find them. --json FILE writes the figures.
"""

import argparse
import json
import os
import pathlib
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from devito import ConditionalDimension, Function, TimeFunction, configuration
from examples.seismic import Receiver
from examples.seismic.acoustic import AcousticWaveSolver

import mlbs
from rtm_problem import Timer, adjoint_operator, build_problem, chunks, forward_operator, imaging


def run_reference(model0, geometry, so, every, d_obs, dt):
    """Devito's in-memory snapshotting: usave = TimeFunction(save=...) on a subsampled time dimension."""
    nt = geometry.nt
    time_sub = ConditionalDimension("t_sub", parent=model0.grid.time_dim, factor=every)
    usave = TimeFunction(name="usave", grid=model0.grid, time_order=0, save=len(chunks(nt, every)), time_dim=time_sub)
    fwd, _, rec = forward_operator(model0, geometry, so, usave)
    fwd.apply(dt=dt, time_m=0, time_M=nt - 2)
    residual = Receiver(name="residual", grid=model0.grid, time_range=geometry.time_axis,
                        coordinates=geometry.rec_positions)
    residual.data[:] = rec.data - d_obs.data
    image = Function(name="image", grid=model0.grid)
    adjoint_operator(model0, geometry, so, residual, image, usave, time_sub).apply(dt=dt, time_m=1, time_M=nt - 2)
    return np.array(image.data)


def run_chunked(model0, geometry, so, every, d_obs, dt, save, load):
    """The same RTM in chunks; save(k, array) stores snapshot k, load(k) returns it as an array.

    Returns the image and the seconds spent propagating, saving and loading."""
    nt = geometry.nt
    time_sub = ConditionalDimension("t_sub", parent=model0.grid.time_dim, factor=every)
    fwd, u, rec = forward_operator(model0, geometry, so)
    fwd.cfunction   # compiled now: the timings are the propagation's, not the JIT compiler's
    prop, io_save, io_load = Timer(), Timer(), Timer()
    with ThreadPoolExecutor(max_workers=1) as saver:
        for k, lo, hi in chunks(nt, every):
            # u at time lo (in u's time buffer lo % 3) is the boundary snapshot; snapshot 0 (zero) is never
            # imaged. With its halo that buffer is one contiguous block: a single copy. (u.data[t % 3], the
            # domain alone, is a strided view: 20% fewer bytes, but packed first, two passes.)
            if k == 0:
                with prop:
                    fwd.apply(dt=dt, time_m=lo, time_M=hi)
                continue
            snapshot = u.data_with_halo[lo % 3]
            if hi - lo < 2:
                with io_save:
                    save(k, snapshot)
                with prop:
                    fwd.apply(dt=dt, time_m=lo, time_M=hi)
                continue
            # The buffer is overwritten only at step lo + 2 (it then receives u at lo + 3): the copy runs in
            # another thread (save releases the GIL, and so does Devito's operator) during steps lo and
            # lo + 1, and this thread waits for it, if at all, before step lo + 2.
            with io_save:
                pending = saver.submit(save, k, snapshot)
            with prop:
                fwd.apply(dt=dt, time_m=lo, time_M=lo + 1)
            with io_save:
                pending.result()
            with prop:
                fwd.apply(dt=dt, time_m=lo + 2, time_M=hi)
    # Each chunk passes the loaded array as the imaging equation's snapshot: Devito computes on that memory
    # itself, which for mlbs is the DRAM slot the record was prefetched into, handed over without a copy.
    image, adj = imaging(model0, geometry, so, rec, d_obs, time_sub)
    for k, lo, hi in reversed(chunks(nt, every)):
        loaded = {}
        if k > 0:
            with io_load:
                loaded["snap"] = load(k)
        with prop:
            adj.apply(dt=dt, time_m=max(lo, 1), time_M=hi, **loaded)
    return np.array(image.data), prop.s, io_save.s, io_load.s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", type=int, default=101, help="interior points per dimension (3D)")
    ap.add_argument("--nbl", type=int, default=20, help="absorbing layer width")
    ap.add_argument("--tn", type=float, default=1000.0, help="recording time, ms")
    ap.add_argument("--every", type=int, default=10, help="time steps between snapshots")
    ap.add_argument("--space-order", type=int, default=4)
    ap.add_argument("--dir", help="the file tier's folder (default: a temporary one)")
    ap.add_argument("--dram-fraction", type=float, default=0.25, help="DRAM budget / snapshot data")
    ap.add_argument("--npsave", action="store_true", help="also run the np.save/np.load status quo")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    so, every = args.space_order, args.every
    configuration["log-level"] = "WARNING"   # not a line per operator call

    model, model0, geometry = build_problem((args.shape,) * 3, args.nbl, args.tn, so)
    dt = model0.critical_dt
    d_obs, _, _ = AcousticWaveSolver(model, geometry, space_order=so).forward(vp=model.vp, dt=dt)
    reference = run_reference(model0, geometry, so, every, d_obs, dt)

    grid_shape = tuple(int(n) for n in model0.grid.shape)
    snap_shape = TimeFunction(name="probe", grid=model0.grid, time_order=2, space_order=so).data_with_halo.shape[1:]
    snap_bytes = int(np.prod(snap_shape)) * 4
    nsnaps = len(chunks(geometry.nt, every)) - 1
    dram = max(int(args.dram_fraction * nsnaps * snap_bytes), 2 * (snap_bytes + 4096))
    figures = {"grid": list(grid_shape), "nt": geometry.nt, "snapshots": nsnaps, "snapshot_bytes": snap_bytes,
               "dram_bytes": dram}
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        cfg = mlbs.Config(tiers=[mlbs.Tier.memory(dram), mlbs.Tier.directory(folder)], schedule=f"lifo:{nsnaps}")
        with mlbs.Runtime(cfg) as rt:
            store = rt.store("u", shape=snap_shape, dtype=np.float32)
            image, prop_s, save_s, load_s = run_chunked(model0, geometry, so, every, d_obs, dt, store.write,
                                                        store.read)
            io_s = save_s + load_s
            stats = rt.stats()
        identical = bool(np.array_equal(image, reference))
        figures["mlbs"] = {"propagation_s": prop_s, "blocking_s": io_s, "write_s": save_s, "read_s": load_s,
                           "blocking_share": io_s / prop_s,
                           "image_identical": identical, "spilled_bytes": stats["tiers"][1]["bytes_in"]}
        print(f"grid {grid_shape}, {geometry.nt} steps, {nsnaps} snapshots of {snap_bytes / 2**20:.1f} MiB "
              f"({nsnaps * snap_bytes / 2**30:.2f} GiB), DRAM {dram / 2**20:.0f} MiB")
        print(f"mlbs:    propagation {prop_s:7.2f} s, in mlbs calls {io_s:6.3f} s = {100 * io_s / prop_s:5.2f}% "
              f"of propagation (write {save_s:.3f} s, read {load_s:.3f} s, blocked waiting "
              f"{(stats['write_block_ns'] + stats['read_block_ns']) / 1e9:.3f} s); "
              f"{stats['tiers'][1]['bytes_in'] / 2**20:.0f} MiB went to the file tier")

        if args.npsave:
            def save(k, a):
                with open(os.path.join(folder, f"u{k}.npy"), "wb") as f:
                    np.save(f, a)
                    f.flush()
                    os.fsync(f.fileno())
                    os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)   # as a run >> RAM finds it

            def load(k):
                return np.load(os.path.join(folder, f"u{k}.npy"))

            np_image, np_prop, np_save, np_load = run_chunked(model0, geometry, so, every, d_obs, dt, save, load)
            np_io = np_save + np_load
            figures["npsave"] = {"propagation_s": np_prop, "blocking_s": np_io, "write_s": np_save, "read_s": np_load,
                                 "blocking_share": np_io / np_prop,
                                 "image_identical": bool(np.array_equal(np_image, reference))}
            print(f"np.save: propagation {np_prop:7.2f} s, in np.save/np.load {np_io:6.3f} s = "
                  f"{100 * np_io / np_prop:5.2f}% of propagation (save + fsync {np_save:.3f} s, load {np_load:.3f} s)")

    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(figures, indent=2))
    if not identical:
        raise SystemExit("the image differs from Devito's in-memory reference")
    print("image identical to Devito's in-memory TimeFunction(save=...) reference")


if __name__ == "__main__":
    main()
