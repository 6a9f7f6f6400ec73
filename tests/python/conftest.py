"""Shared fixtures of the mlbs Python tests (run by scripts/run-tests.sh)."""

import numpy as np
import pytest

import mlbs


@pytest.fixture
def tiers(tmp_path):
    """Three tiers: 1 MiB of DRAM, a 2 MiB-quota "burst buffer", an unlimited "PFS"."""
    (tmp_path / "bb").mkdir()
    (tmp_path / "pfs").mkdir()
    return f"mem:1MiB,dir:{tmp_path / 'bb'}:2MiB,dir:{tmp_path / 'pfs'}"


@pytest.fixture
def runtime(tiers):
    with mlbs.Runtime(mlbs.Config(tiers=tiers, schedule="lifo")) as rt:
        yield rt


def snapshot(i, shape=(64, 128), dtype=np.float32):
    """A record's content that differs in every element and between ids."""
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float64) * 1.25 + i * 1e4).astype(dtype).reshape(shape)
