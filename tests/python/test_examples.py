"""The Python examples run and check their own results."""

import json
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def test_quickstart_image_matches_the_in_memory_reference(tmp_path):
    """examples/python/quickstart.py spills most snapshots to its file tier and reproduces the image exactly."""
    out = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py"), "--dir", str(tmp_path), "--n", "128",
                          "--steps", "200"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "image identical to the in-memory reference" in out.stdout
    spilled = float(out.stdout.split(" MiB went to")[0].split(", ")[-1])
    assert spilled > 0, out.stdout


def test_overhead_benchmark_runs(tmp_path):
    """benchmarks/python_overhead.py measures every call against its C++ loop and writes its JSON."""
    script = EXAMPLES.parents[1] / "benchmarks" / "python_overhead.py"
    out = subprocess.run([sys.executable, str(script), "--sizes", "256KiB", "--json", str(tmp_path / "o.json")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.loads((tmp_path / "o.json").read_text())
    assert [r["call"] for r in rows] == ["write", "read", "read(out=)"]
    assert all(r["cpp_ns"] > 0 and r["python_ns"] > 0 for r in rows)


def test_checkpointing_example_gradient_matches_the_reference(tmp_path):
    """examples/python/checkpointing.py (revolve and multistage) reproduces the all-in-memory gradient."""
    pytest.importorskip("checkpoint_schedules")
    for schedule in ("revolve", "multistage"):
        out = subprocess.run([sys.executable, str(EXAMPLES / "checkpointing.py"), "--steps", "80", "--size",
                              "65536", "--schedule", schedule, "--dir", str(tmp_path)],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert "gradient identical to the all-in-memory reference" in out.stdout


def test_devito_rtm_image_is_identical_to_devitos_in_memory_one(tmp_path):
    """examples/python/devito_rtm.py on a small 3D grid: snapshots through mlbs give Devito's image exactly."""
    pytest.importorskip("devito")
    out = subprocess.run([sys.executable, str(EXAMPLES / "devito_rtm.py"), "--shape", "31", "--nbl", "10", "--tn",
                          "250", "--dir", str(tmp_path), "--json", str(tmp_path / "rtm.json")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    figures = json.loads((tmp_path / "rtm.json").read_text())
    assert figures["mlbs"]["image_identical"]
    assert figures["mlbs"]["spilled_bytes"] > 0, "DRAM held every snapshot: the run was not out of core"
