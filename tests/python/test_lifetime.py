"""Close and threads: use after close raises, close waits for calls in flight, blocking calls release the GIL."""

import threading
import time

import numpy as np
import pytest

import mlbs
from conftest import snapshot


def test_store_used_after_runtime_close_raises(runtime):
    """Every store call after its runtime closed raises ShutdownError (an mlbs.Error), never crashes."""
    s = runtime.store("s", shape=8, dtype=np.float64)
    s.write(1, np.ones(8))
    runtime.close()
    assert runtime.closed and s.closed
    for call in (lambda: s.write(2, np.ones(8)), lambda: s.read(1), lambda: s.read(1, out=np.empty(8)),
                 lambda: 1 in s, s.ids, s.flush, lambda: s.erase(1), lambda: s.info(1),
                 runtime.stats, lambda: runtime.store("t", shape=1), lambda: runtime.config):
        with pytest.raises(mlbs.ShutdownError, match="closed"):
            call()
    runtime.close()   # idempotent


def test_closed_store_leaves_runtime_running(runtime):
    """Closing (or leaving the with block of) a store ends that handle only."""
    with runtime.store("a", shape=4, dtype=np.int32) as a:
        a.write(1, np.arange(4, dtype=np.int32))
    with pytest.raises(mlbs.ShutdownError):
        a.ids()
    b = runtime.store("b", shape=4, dtype=np.int32)
    b.write(1, np.arange(4, dtype=np.int32))
    assert b.ids() == [1]


def test_store_keeps_its_runtime_alive(tiers):
    """A store made from a temporary Runtime object keeps working: the store holds the runtime."""
    s = mlbs.Runtime(mlbs.Config(tiers=tiers)).store("kept", shape=16, dtype=np.float32)
    s.write(0, np.arange(16, dtype=np.float32))
    np.testing.assert_array_equal(s.read(0), np.arange(16, dtype=np.float32))


def test_blocking_read_releases_the_gil(tmp_path):
    """While one thread waits 1 s in read() for a slow tier, another Python thread never stops for long."""
    slow = tmp_path / "slow"
    slow.mkdir()
    tier = mlbs.Tier.directory(str(slow))
    tier.faults = "read:delay=1s"
    cfg = mlbs.Config(tiers=[mlbs.Tier.memory("1MiB"), tier], schedule="unknown")
    with mlbs.Runtime(cfg) as rt:
        s = rt.store("slow", shape=(256, 256), dtype=np.float32)   # 256 KiB records: 4 fit in DRAM
        for i in range(12):
            s.write(i, snapshot(i, (256, 256)))
        s.flush()
        assert 0 not in s.info(0)["tiers"], "record 0 is still in DRAM: read() would not wait"
        done = threading.Event()
        took = []

        def reader():
            start = time.perf_counter()
            s.read(0)        # the oldest: on the slow tier, behind the delay
            took.append(time.perf_counter() - start)
            done.set()

        t = threading.Thread(target=reader)
        last = time.perf_counter()
        t.start()
        longest = 0.0
        while not done.is_set():   # the longest time this thread could not run
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
        t.join()
        assert took[0] >= 0.9, "read() did not wait for the slow tier: the test proves nothing"
        assert longest < 0.5, f"this thread stood still {longest:.3f} s while read() waited: the GIL was held"


def test_close_from_another_thread_while_calls_are_in_flight(tiers):
    """A worker writing and reading in a loop sees ShutdownError after another thread closes the runtime."""
    rt = mlbs.Runtime(mlbs.Config(tiers=tiers, schedule="unknown"))
    s = rt.store("busy", shape=(128, 128), dtype=np.float64)
    errors = []
    progressed = threading.Event()

    def worker():
        try:
            i = 0
            while True:
                s.write(i, snapshot(i, (128, 128), np.float64))
                np.testing.assert_array_equal(s.read(i), snapshot(i, (128, 128), np.float64))
                i += 1
                if i == 5:
                    progressed.set()
        except mlbs.ShutdownError as e:
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    progressed.wait()
    rt.close()
    t.join()
    assert len(errors) == 1 and "closed" in str(errors[0])


def test_threads_on_separate_stores_run_concurrently(runtime):
    """Four threads, each on its own store, write and read back exact bytes."""
    failures = []

    def work(k):
        try:
            s = runtime.store(f"t{k}", shape=(64, 64), dtype=np.float32)
            for i in range(20):
                s.write(i, snapshot(100 * k + i, (64, 64)))
            for i in reversed(range(20)):
                np.testing.assert_array_equal(s.read(i), snapshot(100 * k + i, (64, 64)))
        except Exception as e:  # noqa: BLE001 — reported below
            failures.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
