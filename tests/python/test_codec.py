"""Codecs from Python (docs/codecs.md): Config(codec=...), exact lossless round trips, ZFP's bound on
3-D arrays (coded over their planes), 2-D arrays coded over their rows, the counters, and bad specs as
ConfigError."""

import numpy as np
import pytest

import mlbs


def wave(i, shape=(16, 32, 32)):
    """A smooth packet in zeros: what an early wavefield snapshot looks like."""
    z, y, x = np.meshgrid(*[np.linspace(-1, 1, n) for n in shape], indexing="ij")
    r2 = (x - 0.3 * np.sin(i)) ** 2 + y**2 + z**2
    return (np.exp(-r2 * 20) * np.cos(r2 * 10 + i)).astype(np.float32)


@pytest.mark.parametrize("codec", ["lz4", "zstd:1"])
def test_lossless_codec_round_trips_exactly(tiers, codec):
    with mlbs.Runtime(mlbs.Config(tiers=tiers, schedule="lifo", codec=codec, codec_when="always")) as rt:
        s = rt.store("u", (16, 32, 32), np.float32)
        for i in range(24):
            s.write(i, wave(i))
        for i in reversed(range(24)):
            np.testing.assert_array_equal(s.read(i), wave(i))
        st = rt.stats()
        assert st["encoded_records"] > 0
        assert st["encoded_bytes"] * 2 < st["encoded_raw_bytes"]


def test_zfp_keeps_its_bound_on_3d_arrays(tiers):
    with mlbs.Runtime(mlbs.Config(tiers=tiers, schedule="lifo", codec="zfp:accuracy=1e-4", codec_when="always")) as rt:
        s = rt.store("u", (16, 32, 32), np.float32)
        for i in range(24):
            s.write(i, wave(i))
        for i in reversed(range(24)):
            assert np.max(np.abs(s.read(i) - wave(i))) <= 1e-4
        assert rt.stats()["encoded_records"] > 0


def test_zfp_codes_2d_arrays_over_their_rows(tiers):
    """The same smooth field stored as a 2-D array takes fewer bytes than as a flat one (ZFP in 2-D)."""
    field = wave(0, shape=(8, 64, 64)).reshape(512, 64)
    stored = {}
    for shape in [(512, 64), (512 * 64,)]:
        with mlbs.Runtime(mlbs.Config(tiers=tiers, schedule="lifo", codec="zfp:precision=20",
                                      codec_when="always")) as rt:
            s = rt.store("u", shape, np.float32)
            for i in range(24):
                s.write(i, field.reshape(shape))
            for i in reversed(range(24)):
                assert np.max(np.abs(s.read(i).reshape(field.shape) - field)) < 1e-4
            st = rt.stats()
            assert st["encoded_records"] > 0
            stored[len(shape)] = st["encoded_bytes"] / st["encoded_raw_bytes"]
    assert stored[2] < 0.9 * stored[1]


def test_zfp_on_an_integer_store_is_refused(tiers):
    with mlbs.Runtime(mlbs.Config(tiers=tiers, codec="zfp:precision=20")) as rt:
        with pytest.raises(mlbs.InvalidArgumentError, match="float or double"):
            rt.store("counts", (8,), np.int32)


def test_bad_codec_is_a_config_error():
    with pytest.raises(mlbs.ConfigError, match="zstd's level"):
        mlbs.Config(codec="zstd:0")
    assert mlbs.Config(codec="zstd").codec == "zstd:1"
    assert mlbs.Config().codec_when == "needed"
    with pytest.raises(mlbs.ConfigError, match="expected needed or always"):
        mlbs.Config(codec_when="sometimes")


def test_a_store_chooses_its_own_codec(tiers):
    with mlbs.Runtime(mlbs.Config(tiers=tiers, schedule="lifo", codec_when="always")) as rt:
        packed = rt.store("packed", (16, 32, 32), np.float32, codec="zfp:precision=24")
        plain = rt.store("plain", (16, 32, 32), np.float32)
        for i in range(24):
            packed.write(i, wave(i))
            plain.write(i, wave(i))
        for i in reversed(range(24)):
            assert np.max(np.abs(packed.read(i) - wave(i))) < 1e-4
            np.testing.assert_array_equal(plain.read(i), wave(i))
        st = rt.stats()
        assert 0 < st["encoded_records"] <= 24, "only the store with a codec encodes"
        with pytest.raises(mlbs.ConfigError, match="store 'bad'"):
            rt.store("bad", 8, codec="zstd:0")
