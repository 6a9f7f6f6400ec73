"""Reader: another process reads a running writer's records (exact bytes), waits for them, sees it close."""

import multiprocessing as mp

import numpy as np
import pytest

import mlbs
from conftest import snapshot

SHAPE = (128, 128)


def _writer(tiers, ready, go, done):
    """The writer process: four records kept on a file tier for readers, then closes on request."""
    cfg = mlbs.Config(tiers=tiers, schedule="fifo", reader_retention="until-read")
    with mlbs.Runtime(cfg) as rt:
        s = rt.store("w", shape=SHAPE, dtype=np.float32)
        for i in range(2):
            s.write(i, snapshot(i, SHAPE))
        ready.set()
        go.wait()
        for i in range(2, 4):
            s.write(i, snapshot(i, SHAPE))
        done.wait()


@pytest.fixture
def writer(tiers):
    ctx = mp.get_context("spawn")   # a fresh interpreter, as another job would be
    ready, go, done = ctx.Event(), ctx.Event(), ctx.Event()
    p = ctx.Process(target=_writer, args=(tiers, ready, go, done))
    p.start()
    assert ready.wait(60), "the writer process did not start"
    yield mlbs.Config(tiers=tiers, schedule="fifo", reader_retention="until-read"), go, done
    go.set()
    done.set()
    p.join(60)
    if p.exitcode is None:   # never leave it behind: pytest's exit would wait for it
        p.kill()
        p.join()
    assert p.exitcode == 0


def test_reader_reads_exact_records_as_they_arrive(writer):
    """Records written before and after the reader attached are read back exact; wait() sees them arrive."""
    cfg, go, done = writer
    with mlbs.Reader(cfg, "w", shape=SHAPE, dtype=np.float32) as r:
        assert r.wait(0, 30) and r.wait(1, 30)
        np.testing.assert_array_equal(r.read(0), snapshot(0, SHAPE))
        go.set()
        assert r.wait(3, 30), "record 3 never became readable"
        out = np.empty(SHAPE[::-1], np.float32).T
        assert r.read(3, out=out) is out
        np.testing.assert_array_equal(out, snapshot(3, SHAPE))
        assert set(r.ids()) >= {0, 1, 2, 3}
        assert not r.wait(99, 0.05)
        with pytest.raises(ValueError, match="expected float32 arrays of shape"):
            r.read(1, out=np.empty(5, np.float32))
    with pytest.raises(mlbs.ShutdownError, match="reader is closed"):
        r.ids()


def test_reader_of_another_shape_gets_size_mismatch(writer):
    """A reader whose shape does not match the records: SizeMismatchError, not other bytes."""
    cfg, _, _ = writer
    r = mlbs.Reader(cfg, "w", shape=(64, 64), dtype=np.float32)
    assert r.wait(0, 30)
    with pytest.raises(mlbs.SizeMismatchError):
        r.read(0)


def test_reader_sees_the_writer_close(writer):
    """wait() on a record that never comes raises ShutdownError once the writer closes its store."""
    cfg, go, done = writer
    r = mlbs.Reader(cfg, "w", shape=SHAPE, dtype=np.float32)
    go.set()
    done.set()
    with pytest.raises(mlbs.ShutdownError):
        r.wait(1000, 60)


def test_reader_without_writer_is_unknown(tiers):
    """Attaching to a store no running writer has open: UnknownIdError."""
    with pytest.raises(mlbs.UnknownIdError):
        mlbs.Reader(mlbs.Config(tiers=tiers), "nobody", shape=4)
