"""Checkpointed adjoints on mlbs: a schedule of the ``checkpoint_schedules`` package run through a store.

A revolve, multistage or two-level checkpointing schedule says, ahead of time, at which steps the forward
state is stored and in which order the stored states are read back (several times, for some). That is an
explicit mlbs schedule: :func:`plan` turns the checkpoint schedule into the ids mlbs will read, in order,
so the store places every checkpoint by its next use (Belady) across all its tiers, whatever tier the
checkpoint schedule had in mind (its ``RAM`` and ``DISK`` are both the store: mlbs decides). :func:`run`
executes the schedule with your forward and adjoint steps.

    from checkpoint_schedules import Revolve
    import mlbs, mlbs.checkpointing as ckp

    make = lambda: Revolve(steps, 10)              # a fresh schedule (they are consumed as run)
    p = ckp.plan(make())
    cfg = mlbs.Config(tiers="mem:1GiB,dir:/nvme/run", schedule=p.order)
    with mlbs.Runtime(cfg) as rt:
        store = rt.store("checkpoints", shape=x0.shape, dtype=x0.dtype)
        lam0 = ckp.run(make(), store, x0, forward=step, adjoint=adjoint_step, adjoint_final=dJ)

Needs ``pip install checkpoint-schedules``. See docs/python.md, "Checkpointed adjoints".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

try:
    from checkpoint_schedules import (
        Copy,
        EndForward,
        EndReverse,
        Forward,
        Move,
        Reverse,
        StorageType,
    )
except ImportError as e:  # pragma: no cover - exercised only without the package
    raise ImportError("mlbs.checkpointing needs the checkpoint_schedules package: "
                      "pip install checkpoint-schedules") from e

__all__ = ["Plan", "plan", "run"]


@dataclass
class Plan:
    """What a checkpoint schedule will do to the store."""

    order: list[int] = field(default_factory=list)
    """Record ids in the order they will be read (repeats included): ``mlbs.Config(schedule=order)``."""
    writes: int = 0
    """Checkpoints the schedule stores (record ids 0 .. writes-1, in the order they are written)."""
    steps: int = 0
    """Forward steps of the whole schedule (re-computations included)."""


def _walk(schedule: Iterable[Any], on_write=None, on_read=None, on_forward=None, on_reverse=None,
          on_end_forward=None) -> Plan:
    """Runs through the actions; ids are given to checkpoints in write order (a step may be stored twice)."""
    p = Plan()
    current: dict[int, int] = {}   # step -> id of its stored checkpoint
    for action in schedule:
        if isinstance(action, Forward):
            if action.write_ics:
                current[action.n0] = p.writes
                if on_write:
                    on_write(p.writes, action.n0)
                p.writes += 1
            if on_forward:
                on_forward(action)
            p.steps += action.n1 - action.n0
        elif isinstance(action, (Copy, Move)):
            if action.to_storage != StorageType.WORK:
                continue   # between two storages: the store's tiers are mlbs's business
            if action.n not in current:
                raise ValueError(f"the schedule reads a checkpoint of step {action.n} it never stored")
            ident = current[action.n]
            p.order.append(ident)
            if on_read:
                on_read(ident, action.n, isinstance(action, Move))
            if isinstance(action, Move):
                del current[action.n]
        elif isinstance(action, Reverse):
            if on_reverse:
                on_reverse(action)
        elif isinstance(action, EndReverse):
            break
        elif isinstance(action, EndForward):
            if on_end_forward:
                on_end_forward()
        else:
            raise TypeError(f"unknown checkpoint action {action!r}")
    return p


def plan(schedule: Iterable[Any]) -> Plan:
    """The reads (and writes) a checkpoint schedule will make, without running anything. Consumes it."""
    return _walk(schedule)


def run(schedule: Iterable[Any], store, state0: np.ndarray,
        forward: Callable[[np.ndarray, int], np.ndarray],
        adjoint: Callable[[Any, np.ndarray, int], Any],
        adjoint_final: Callable[[np.ndarray], Any]) -> Any:
    """Executes a checkpoint schedule with its checkpoints in ``store``; returns the adjoint at step 0.

    ``forward(x, n)`` returns the state at step n+1 from the state x at step n (it may work in place);
    ``adjoint(lam, x, n)`` returns the adjoint at step n from the adjoint ``lam`` at step n+1 and the
    forward state x at step n; ``adjoint_final(x)`` gives the adjoint at the last step from the state
    there (the derivative of the objective). ``store`` holds arrays
    of ``state0``'s shape and dtype and runs under the explicit schedule ``plan(...).order`` of an
    identical schedule (it releases each checkpoint after its last read). The states the adjoint needs
    between a forward and a reverse action (the schedule's "adjoint dependencies", a segment's steps) are
    kept in memory.
    """
    state = {"x": np.array(state0), "n": 0}
    deps: dict[int, np.ndarray] = {}
    lam = [None]

    def on_write(ident, n):
        if state["n"] != n:
            raise ValueError(f"the schedule stores step {n} while the state is at step {state['n']}")
        store.write(ident, state["x"])

    def on_read(ident, n, _last):
        state["x"] = store.read(ident)
        state["n"] = n

    def on_forward(a):
        if state["n"] != a.n0:
            raise ValueError(f"the schedule advances from step {a.n0} while the state is at step {state['n']}")
        x = state["x"]
        for n in range(a.n0, a.n1):
            if a.write_adj_deps:
                deps[n] = np.array(x)
            x = forward(x, n)
        state["x"], state["n"] = x, a.n1

    def on_reverse(a):
        for n in range(a.n1 - 1, a.n0 - 1, -1):
            lam[0] = adjoint(lam[0], deps[n], n)
        if a.clear_adj_deps:
            deps.clear()

    def on_end_forward():
        lam[0] = adjoint_final(state["x"])

    _walk(schedule, on_write, on_read, on_forward, on_reverse, on_end_forward)
    return lam[0]
