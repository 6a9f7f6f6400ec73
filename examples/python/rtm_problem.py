"""The Devito RTM problem the examples share: a two-layer model, one shot, the forward and adjoint
operators, and the chunks of time steps between snapshots. Knows nothing of mlbs."""

import time

import numpy as np
from devito import Eq, Function, Operator, TimeFunction, solve
from examples.seismic import AcquisitionGeometry, Receiver, demo_model


def build_problem(shape, nbl, tn, so):
    """A two-layer model, a smoothed copy to migrate with, one shot and a line of receivers."""
    kw = dict(shape=shape, spacing=(10.0,) * len(shape), nbl=nbl, nlayers=2, space_order=so)
    model = demo_model("layers-isotropic", **kw)
    model0 = demo_model("layers-isotropic", **kw)
    model0.smooth(("vp",))
    extent = [(n - 1) * 10.0 for n in shape]
    src = np.array([[e / 2 for e in extent[:-1]] + [20.0]])
    nrec = shape[0]
    rec = np.zeros((nrec, len(shape)))
    rec[:, 0] = np.linspace(0, extent[0], nrec)
    rec[:, 1:-1] = [e / 2 for e in extent[1:-1]]
    rec[:, -1] = 30.0
    geometry = AcquisitionGeometry(model, rec, src, t0=0.0, tn=tn, f0=0.010, src_type="Ricker")
    return model, model0, geometry


def forward_operator(model, geometry, so, usave=None):
    """Propagation with the source injected and the receivers sampled; with usave, Devito's snapshots."""
    u = TimeFunction(name="u", grid=model.grid, time_order=2, space_order=so)
    rec = Receiver(name="rec", grid=model.grid, time_range=geometry.time_axis, coordinates=geometry.rec_positions)
    src = geometry.src
    dt = model.grid.stepping_dim.spacing
    eqs = [Eq(u.forward, solve(model.m * u.dt2 - u.laplace + model.damp * u.dt, u.forward))]
    eqs += src.inject(field=u.forward, expr=src * dt**2 / model.m)
    eqs += rec.interpolate(expr=u)
    if usave is not None:
        eqs.append(Eq(usave, u))
    return Operator(eqs, subs=model.spacing_map, name="forward"), u, rec


def adjoint_operator(model, geometry, so, residual, image, snapshot, time_sub):
    """Back-propagation of the residual; at every snapshot step, image -= snapshot * v."""
    v = TimeFunction(name="v", grid=model.grid, time_order=2, space_order=so)
    dt = model.grid.stepping_dim.spacing
    eqs = [Eq(v.backward, solve(model.m * v.dt2 - v.laplace + model.damp * v.dt.T, v.backward))]
    eqs += residual.inject(field=v.backward, expr=residual * dt**2 / model.m)
    eqs.append(Eq(image, image - snapshot * v, implicit_dims=[time_sub]))
    return Operator(eqs, subs=model.spacing_map, name="adjoint")


def imaging(model0, geometry, so, rec, d_obs, time_sub):
    """The image and the compiled adjoint operator imaging with a snapshot passed to each chunk's apply:
    `adj.apply(..., snap=array)`, the array laid out as u's data with its halo (what was saved), which
    Devito then computes on in place."""
    residual = Receiver(name="residual", grid=model0.grid, time_range=geometry.time_axis,
                        coordinates=geometry.rec_positions)
    residual.data[:] = rec.data - d_obs.data
    image = Function(name="image", grid=model0.grid)
    snap = Function(name="snap", grid=model0.grid, space_order=so)
    adj = adjoint_operator(model0, geometry, so, residual, image, snap, time_sub)
    adj.cfunction  # compiled now: the timings are the propagation's, not the JIT compiler's
    return image, adj


def chunks(nt, every):
    """Forward chunks [k*every, k*every+every-1] up to the last step nt-2: (k, time_m, time_M)."""
    last = nt - 2
    return [(k, k * every, min(k * every + every - 1, last)) for k in range(last // every + 1)]


class Timer:
    def __init__(self):
        self.s = 0.0

    def __enter__(self):
        self.t = time.perf_counter()

    def __exit__(self, *exc):
        self.s += time.perf_counter() - self.t
