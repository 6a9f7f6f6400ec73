"""mlbs.checkpointing: checkpoint_schedules' revolve and multistage schedules as explicit mlbs schedules."""

import numpy as np
import pytest

cs = pytest.importorskip("checkpoint_schedules")

import mlbs  # noqa: E402
import mlbs.checkpointing as ckp  # noqa: E402

H = 0.05


def step(x, n):
    return x + H * np.sin(x + n)


def adjoint_step(lam, x, n):
    return lam * (1.0 + H * np.cos(x + n))


def reference(x0, steps):
    xs = [x0]
    for n in range(steps):
        xs.append(step(xs[-1], n))
    lam = xs[-1].copy()
    for n in reversed(range(steps)):
        lam = adjoint_step(lam, xs[n], n)
    return lam


def test_plan_lists_reads_in_order_with_repeats():
    """Revolve(6, 2): checkpoints of steps 0, 3, 1 get ids 0, 1, 2; reads are Copy/Move in order."""
    p = ckp.plan(cs.Revolve(6, 2))
    assert (p.writes, p.order) == (3, [1, 1, 0, 2, 0])
    assert p.steps == 6 + 2 + 1 + 3 + 1 + 1   # the first sweep, then each re-computation


@pytest.mark.parametrize("make", [lambda: cs.Revolve(60, 5), lambda: cs.MultistageCheckpointSchedule(60, 2, 3)],
                         ids=["revolve", "multistage"])
def test_run_gives_the_reference_adjoint_with_checkpoints_spilled(tmp_path, make):
    """The adjoint equals the all-in-memory one bit for bit while most checkpoints sit on the file tier."""
    x0 = np.linspace(0.0, 2.0, 1 << 16)
    p = ckp.plan(make())
    cfg = mlbs.Config(tiers=[mlbs.Tier.memory(2 * (x0.nbytes + 4096)), mlbs.Tier.directory(str(tmp_path))],
                      schedule=p.order)
    with mlbs.Runtime(cfg) as rt:
        store = rt.store("ckpt", shape=x0.shape, dtype=x0.dtype)
        lam = ckp.run(make(), store, x0, step, adjoint_step, adjoint_final=lambda x: x.copy())
        st = rt.stats()
        assert store.ids() == [], "a checkpoint outlived its last read"
    np.testing.assert_array_equal(lam, reference(x0, 60))
    assert st["writes"] == p.writes and st["reads"] == len(p.order)
    assert st["tiers"][1]["bytes_in"] > 0, "nothing went to the file tier: the test did not spill"
    assert st["helper_cpu_ns"] > 0, "the helpers that spilled them used no CPU time"


def test_schedule_reading_a_checkpoint_never_stored_is_refused():
    """A Copy of a step no Forward stored: ValueError naming the step."""
    bad = [cs.Forward(0, 2, False, False, cs.StorageType.WORK), cs.Copy(1, cs.StorageType.RAM, cs.StorageType.WORK)]
    with pytest.raises(ValueError, match="step 1"):
        ckp.plan(bad)
