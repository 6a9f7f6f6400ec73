"""Config and Tier from Python: keywords, spec strings, schedules, files and the environment."""

import pytest

import mlbs


def test_keywords_set_fields_and_defaults_stay():
    """Config(**kw) sets those fields; the others keep the C++ defaults."""
    c = mlbs.Config(tiers="mem:64MiB,dir:/tmp/x:1GiB", schedule="fifo", durability="persistent",
                    helper_threads=2, checksums=False, io_chunk_bytes="4MiB", layout="log")
    assert [t.kind for t in c.tiers] == ["memory", "directory"]
    assert c.tiers[0].capacity_bytes == 64 << 20 and c.tiers[1].capacity_bytes == 1 << 30
    assert (c.schedule, c.durability, c.helper_threads, c.checksums) == ("fifo", "persistent", 2, False)
    assert (c.io_chunk_bytes, c.layout) == (4 << 20, "log")
    with pytest.raises(TypeError, match="unknown keyword 'validate'"):
        mlbs.Config(validate=True)
    d = mlbs.Config()
    assert d.schedule == "lifo" and d.durability == "scratch" and d.checksums and d.live_catalog
    assert d.copy_ahead and not mlbs.Config(copy_ahead=False).copy_ahead


def test_tiers_from_objects_and_mixed_lists():
    """tiers takes Tier objects, spec strings, or a mix; Tier.memory/directory take sizes as strings."""
    c = mlbs.Config(tiers=[mlbs.Tier.memory("256MiB"), "dir:/nvme/run:4GiB", mlbs.Tier.directory("/pfs")])
    assert [(t.kind, t.path, t.capacity_bytes) for t in c.tiers] == [
        ("memory", "", 256 << 20), ("directory", "/nvme/run", 4 << 30), ("directory", "/pfs", 0)]
    t = mlbs.Tier.directory("/bb", 1 << 30)
    t.bandwidth_bytes_per_s = "200MiB"
    t.io_backend = "pread"
    t.layout = "log"
    assert (t.bandwidth_bytes_per_s, t.io_backend, t.layout) == (200 << 20, "pread", "log")
    t.layout = None
    assert t.layout is None
    assert repr(t) == "mlbs.Tier('dir+pread:/bb:1GiB')"
    assert len(mlbs.Tier.parse("mem:1MiB,dir:/a,dir:/b")) == 3


def test_schedules_as_names_hints_and_explicit_orders():
    """schedule is a name, lifo:N or fifo:N, or a list of ids (a revolve order), and reads back the same."""
    assert mlbs.Config(schedule="lifo:40").schedule == "lifo:40"
    assert mlbs.Config(schedule="fifo:12").schedule == "fifo:12"
    assert mlbs.Config(schedule=[3, 1, 2, 1]).schedule == [3, 1, 2, 1]
    assert mlbs.Config(schedule="unknown").schedule == "unknown"


def test_from_toml_and_file(tmp_path):
    """Config.from_toml and from_file read the documented TOML."""
    text = 'schedule = "fifo"\ndurability = "persistent"\n[[tier]]\nkind = "memory"\ncapacity = "8MiB"\n' \
           '[[tier]]\nkind = "directory"\npath = "/tmp/pfs"\n'
    c = mlbs.Config.from_toml(text)
    assert (c.schedule, c.durability, len(c.tiers)) == ("fifo", "persistent", 2)
    p = tmp_path / "mlbs.toml"
    p.write_text(text)
    assert mlbs.Config.from_file(str(p)).tiers[0].capacity_bytes == 8 << 20


def test_from_env(monkeypatch):
    """Config.from_env applies MLBS_* variables."""
    monkeypatch.setenv("MLBS_TIERS", "mem:32MiB,dir:/tmp/envtier")
    monkeypatch.setenv("MLBS_SCHEDULE", "fifo")
    c = mlbs.Config.from_env()
    assert c.tiers[0].capacity_bytes == 32 << 20 and c.tiers[1].path == "/tmp/envtier" and c.schedule == "fifo"


def test_runtime_reports_its_config(tiers):
    """Runtime.config is the configuration it runs with; rank 0 of 1 without MPI."""
    with mlbs.Runtime(mlbs.Config(tiers=tiers, schedule="fifo")) as rt:
        assert rt.config.schedule == "fifo" and len(rt.config.tiers) == 3
        assert (rt.rank, rt.ranks) == (0, 1)


def test_every_config_property_is_a_keyword():
    """Config(**kw) accepts every property Config has, and round-trips the defaults."""
    d = mlbs.Config()
    props = [n for n, v in vars(mlbs.Config).items() if isinstance(v, property)]
    assert len(props) >= 13, props
    c = mlbs.Config(**{n: getattr(d, n) for n in props})
    assert repr(c) == repr(d)
