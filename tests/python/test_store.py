"""Store: records through three tiers, any strides in and out, arrays that own their memory."""

import numpy as np
import pytest

import mlbs
from conftest import snapshot


@pytest.mark.parametrize("schedule", ["lifo", "fifo", "unknown"])
def test_records_come_back_exact_through_three_tiers(tiers, schedule):
    """8 MiB of records through 1 MiB DRAM and a 2 MiB middle tier come back bit for bit in each schedule."""
    n = 32  # 32 x 256 KiB = 8 MiB
    with mlbs.Runtime(mlbs.Config(tiers=tiers, schedule=schedule)) as rt:
        s = rt.store("u", shape=(256, 256), dtype=np.float32)
        for i in range(n):
            s.write(i, snapshot(i, (256, 256)))
        order = range(n) if schedule == "fifo" else reversed(range(n))
        for i in order:
            np.testing.assert_array_equal(s.read(i), snapshot(i, (256, 256)))
        st = rt.stats()
    assert st["writes"] == n and st["reads"] == n
    assert st["tiers"][2]["bytes_in"] > 0, "the data never reached the last tier: the test did not spill"
    assert [t["kind"] for t in st["tiers"]] == ["memory", "directory", "directory"]


@pytest.mark.parametrize("schedule", ["lifo", "fifo"])
def test_records_kept_in_parts_come_back_exact(tiers, schedule):
    """A store in 4 parts writes each record as four and reads 8 MiB of them back bit for bit through three tiers."""
    n = 32
    with mlbs.Runtime(mlbs.Config(tiers=tiers, schedule=schedule)) as rt:
        s = rt.store("u", shape=(256, 256), dtype=np.float32, parts=4)
        for i in range(n):
            s.write(i, snapshot(i, (256, 256)))
        assert rt.stats()["writes"] == 4 * n
        info = s.info(0)
        assert info["size_bytes"] == 256 * 256 * 4 and len(info["part_tiers"]) == 4
        order = range(n) if schedule == "fifo" else reversed(range(n))
        for i in order:
            np.testing.assert_array_equal(s.read(i), snapshot(i, (256, 256)))
        with pytest.raises(mlbs.InvalidArgumentError, match="StoreOptions::parts is 0"):
            rt.store("none", shape=4, parts=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.complex128, np.bool_])
def test_every_numeric_dtype_round_trips(runtime, dtype):
    """Each numeric dtype keeps its values and dtype."""
    s = runtime.store(f"d-{np.dtype(dtype).name}", shape=(3, 5), dtype=dtype)
    a = (np.arange(15).reshape(3, 5) % 7).astype(dtype)
    s.write(1, a)
    b = s.read(1)
    assert b.dtype == np.dtype(dtype) and b.shape == (3, 5)
    np.testing.assert_array_equal(a, b)


def test_strided_inputs_are_written_in_logical_order(runtime):
    """Slices, transposes (Fortran order) and negative strides are written as their logical C-order content."""
    s = runtime.store("strided", shape=(6, 5), dtype=np.float64)
    base = np.arange(12 * 10, dtype=np.float64).reshape(12, 10)
    views = {
        1: base[::2, ::2],                         # gaps in both dimensions
        2: np.asfortranarray(base[:6, :5]),        # column-major
        3: base[:6, :5][::-1, ::-1],              # negative strides
        4: base.T[:6, :5],                         # transposed view
        5: np.broadcast_to(base[0, :5], (6, 5)),   # zero stride (read-only)
    }
    for i, v in views.items():
        s.write(i, v)
    for i, v in views.items():
        np.testing.assert_array_equal(s.read(i), v)


def test_read_fills_strided_out_and_returns_it(runtime):
    """read(out=) fills a non-contiguous writable view in place and returns the same object."""
    s = runtime.store("out", shape=(4, 6), dtype=np.int64)
    a = np.arange(24, dtype=np.int64).reshape(4, 6)
    s.write(7, a)
    backing = np.zeros((6, 4), dtype=np.int64)
    out = backing.T                                 # a Fortran-order view
    assert s.read(7, out=out) is out
    np.testing.assert_array_equal(out, a)
    np.testing.assert_array_equal(backing, a.T)     # landed in the caller's memory


def test_input_may_change_after_write(runtime):
    """write copies: changing the array at once does not change the record."""
    s = runtime.store("copy", shape=1000, dtype=np.float32)
    a = np.ones(1000, dtype=np.float32)
    s.write(0, a)
    a[:] = 42
    np.testing.assert_array_equal(s.read(0), np.ones(1000, dtype=np.float32))


def test_returned_array_owns_its_memory(runtime):
    """An array from read() stays valid and unchanged after later reads and after the runtime closes."""
    s = runtime.store("own", shape=(128, 128), dtype=np.float64)
    for i in range(4):
        s.write(i, snapshot(i, (128, 128), np.float64))
    kept = [s.read(i) for i in reversed(range(4))]
    assert all(k.flags.writeable and k.flags.c_contiguous for k in kept)
    runtime.close()
    for k, i in zip(kept, reversed(range(4))):
        np.testing.assert_array_equal(k, snapshot(i, (128, 128), np.float64))


def test_steady_read_loop_swaps_slots(runtime):
    """A loop of reads whose arrays are dropped is served by O(1) slot swaps, not copies."""
    s = runtime.store("swap", shape=(64, 64), dtype=np.float32)
    for i in range(8):
        s.write(i, snapshot(i, (64, 64)))
    for i in reversed(range(8)):
        np.testing.assert_array_equal(s.read(i), snapshot(i, (64, 64)))
    assert runtime.stats()["buffer_swaps"] >= 6


def test_ids_contains_erase_flush_info(runtime):
    """ids/contains/erase/flush/info behave as in C++."""
    s = runtime.store("ops", shape=16, dtype=np.uint8)
    for i in (5, 1, 9):
        s.write(i, np.full(16, i, dtype=np.uint8))
    assert s.ids() == [1, 5, 9]
    assert 5 in s and s.contains(9) and 2 not in s
    s.erase(5)
    assert s.ids() == [1, 9]
    s.flush()
    info = s.info(9)
    assert info["id"] == 9 and info["size_bytes"] == 16 and 0 in info["tiers"]
    assert info["checksum"] is not None and info["lineage"][0][1] == -1


def test_zero_dimensional_and_empty_shapes(runtime):
    """A scalar store and an empty-array store round-trip."""
    scalar = runtime.store("scalar", shape=(), dtype=np.float64)
    scalar.write(0, np.array(3.5))
    value = scalar.read(0)
    assert value.shape == () and value == 3.5 and scalar.nbytes == 8
    empty = runtime.store("empty", shape=(0, 4), dtype=np.float32)
    empty.write(0, np.zeros((0, 4), np.float32))
    assert empty.read(0).shape == (0, 4)


def test_store_properties(runtime):
    """name, shape, dtype and nbytes describe the store; repr names them."""
    s = runtime.store("props", shape=(3, 4), dtype="f8")
    assert (s.name, s.shape, s.dtype, s.nbytes) == ("props", (3, 4), np.dtype(np.float64), 96)
    assert "props" in repr(s) and "float64" in repr(s)
    assert runtime.store("default", shape=2).dtype == np.float64
    assert runtime.store("np-ints", shape=(np.int64(3), np.int32(4))).shape == (3, 4)


def test_persistent_store_is_recovered_by_a_new_runtime(tmp_path):
    """Persistent records flushed by one runtime are listed and read back exact by the next."""
    cfg = mlbs.Config(tiers=f"mem:1MiB,dir:{tmp_path}", schedule="fifo", durability="persistent")
    with mlbs.Runtime(cfg) as rt:
        s = rt.store("ckpt", shape=(100, 100), dtype=np.float64)
        for i in range(10):
            s.write(i, snapshot(i, (100, 100), np.float64))
        s.flush()
        assert all(s.info(i)["durable"] for i in range(10))
    with mlbs.Runtime(cfg) as rt:
        s = rt.store("ckpt", shape=(100, 100), dtype=np.float64)
        assert s.ids() == list(range(10))
        for i in range(10):
            np.testing.assert_array_equal(s.read(i), snapshot(i, (100, 100), np.float64))


def test_persistent_store_in_parts_reopens_with_its_count(tmp_path):
    """A persistent store in 3 parts is read back exact by the next runtime in 3 parts, and refused whole or in 2."""
    cfg = mlbs.Config(tiers=f"mem:1MiB,dir:{tmp_path}", schedule="fifo", durability="persistent")
    with mlbs.Runtime(cfg) as rt:
        s = rt.store("ckpt", shape=(100, 100), dtype=np.float64, parts=3)
        for i in range(6):
            s.write(i, snapshot(i, (100, 100), np.float64))
        s.flush()
        assert all(s.info(i)["durable"] for i in range(6))
    with mlbs.Runtime(cfg) as rt:
        for other, said in [(2, "opened in 2"), (1, "opened whole")]:
            with pytest.raises(mlbs.InvalidArgumentError, match=f"keeps its records in 3 parts and is {said}"):
                rt.store("ckpt", shape=(100, 100), dtype=np.float64, parts=other)
        s = rt.store("ckpt", shape=(100, 100), dtype=np.float64, parts=3)
        assert s.ids() == list(range(6))
        for i in range(6):
            np.testing.assert_array_equal(s.read(i), snapshot(i, (100, 100), np.float64))


def test_auto_parts_chooses_from_the_array_and_dram(tiers):
    """parts="auto" under 1 MiB of DRAM: 256 KiB arrays (four fit) whole, 512 KiB arrays (two fit) in 4 parts, exact."""
    with mlbs.Runtime(mlbs.Config(tiers=tiers, schedule="lifo")) as rt:  # 1 MiB of DRAM
        whole = rt.store("whole", shape=(256, 256), dtype=np.float32, parts="auto")
        split = rt.store("split", shape=(512, 256), dtype=np.float32, parts="auto")
        assert (whole.parts, split.parts) == (1, 4)
        for i in range(8):
            split.write(i, snapshot(i, (512, 256)))
        for i in reversed(range(8)):
            np.testing.assert_array_equal(split.read(i), snapshot(i, (512, 256)))
        with pytest.raises(TypeError, match="auto"):
            rt.store("bad", shape=4, parts="some")
        with pytest.raises(mlbs.InvalidArgumentError, match="parts= is -1"):
            rt.store("bad", shape=4, parts=-1)
