"""Bad input: typed errors naming what was expected and what was given; C++ errors as mlbs.Error subclasses."""

import numpy as np
import pytest

import mlbs
from conftest import snapshot


@pytest.fixture
def store(runtime):
    return runtime.store("e", shape=(4, 5), dtype=np.float32)


def test_wrong_dtype_is_a_type_error_naming_both(store):
    """A float64 array for a float32 store: TypeError naming expected and given."""
    with pytest.raises(TypeError, match=r"expected float32 arrays of shape \(4, 5\), got float64 of shape \(4, 5\)"):
        store.write(1, np.zeros((4, 5)))


def test_wrong_shape_is_a_value_error_naming_both(store):
    """A transposed shape: ValueError naming expected and given."""
    with pytest.raises(ValueError, match=r"expected float32 arrays of shape \(4, 5\), got float32 of shape \(5, 4\)"):
        store.write(1, np.zeros((5, 4), np.float32))


def test_non_array_is_a_type_error(store):
    """A list is not taken for an array."""
    with pytest.raises(TypeError, match="got list"):
        store.write(1, [[0.0] * 5] * 4)


def test_read_only_out_is_a_value_error_and_keeps_the_record(store):
    """A read-only out= is refused before the record is consumed."""
    store.write(1, snapshot(1, (4, 5)))
    out = np.zeros((4, 5), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        store.read(1, out=out)
    with pytest.raises(TypeError, match="out= must be a writable array of float32 arrays of shape"):
        store.read(1, out=[0.0] * 20)
    with pytest.raises(ValueError, match=r"got float32 of shape \(20,\)"):
        store.read(1, out=np.zeros(20, np.float32))
    assert 1 in store
    np.testing.assert_array_equal(store.read(1), snapshot(1, (4, 5)))


def test_cpp_errors_map_to_their_classes_with_context(store):
    """UnknownIdError and DuplicateIdError carry errno, store and id, and are mlbs.Error and Exception."""
    with pytest.raises(mlbs.UnknownIdError) as e:
        store.read(99)
    assert isinstance(e.value, mlbs.Error) and isinstance(e.value, Exception)
    assert (e.value.errno, e.value.store, e.value.id) == (2, "e", 99)
    assert "id 99" in str(e.value)
    store.write(3, snapshot(3, (4, 5)))
    with pytest.raises(mlbs.DuplicateIdError) as e:
        store.write(3, snapshot(3, (4, 5)))
    assert e.value.id == 3


def test_record_of_another_size_is_refused_before_it_is_consumed(tmp_path):
    """A persistent record read through a store of another shape: SizeMismatchError, record kept."""
    cfg = mlbs.Config(tiers=f"mem:1MiB,dir:{tmp_path}", durability="persistent")
    with mlbs.Runtime(cfg) as rt:
        rt.store("p", shape=10, dtype=np.float64).write(1, np.arange(10.0))
    with mlbs.Runtime(cfg) as rt:
        s = rt.store("p", shape=20, dtype=np.float64)
        with pytest.raises(mlbs.SizeMismatchError, match="80 bytes, expected 160"):
            s.read(1)
        assert 1 in s


def test_config_errors_name_field_and_line():
    """A bad TOML value: ConfigError (also a ValueError) with field, source and line."""
    with pytest.raises(mlbs.ConfigError) as e:
        mlbs.Config.from_toml('schedule = "lifo"\ndurability = "forever"\n', "job.toml")
    assert isinstance(e.value, ValueError)
    assert (e.value.field, e.value.source, e.value.line) == ("durability", "job.toml", 2)
    with pytest.raises(mlbs.ConfigError, match="durability"):
        mlbs.Config(durability="forever")
    with pytest.raises(mlbs.ConfigError):
        mlbs.Config(tiers="mem:lots")
    with pytest.raises(TypeError, match="unknown keyword 'teirs'"):
        mlbs.Config(teirs="mem:1MiB")


def test_unusable_tier_path_is_a_tier_error(tmp_path):
    """A directory tier whose path is a file: TierError naming the tier."""
    (tmp_path / "plain-file").write_text("x")
    with pytest.raises(mlbs.TierError) as e:
        mlbs.Runtime(mlbs.Config(tiers=f"mem:1MiB,dir:{tmp_path / 'plain-file'}"))
    assert "plain-file" in str(e.value) and e.value.tier is not None


def test_bad_store_dtype_and_shape(runtime):
    """Non-numeric dtypes and negative dimensions are refused at store creation."""
    rt = runtime
    if True:
        with pytest.raises(TypeError, match="not numeric"):
            rt.store("s", shape=3, dtype=object)
        with pytest.raises(TypeError, match="not a numpy dtype"):
            rt.store("s", shape=3, dtype="no-such-type")
        with pytest.raises(ValueError, match="negative"):
            rt.store("s", shape=(3, -1))
        with pytest.raises(TypeError, match="not an int"):
            rt.store("s", shape=(3, 1.5))
