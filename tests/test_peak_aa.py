"""The peak probe stays out of the timed cells: structurally (compare probes before the
matrix, and the cells' times are the worker's whatever the probe did) and the A/A
benchmark's checks (benchmarks/peak_aa.py) on fixtures."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from tfvariants.execute import probe as probe_mod
from tfvariants.variants.peak import run as peakrun

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import peak_aa  # noqa: E402


def test_the_probe_runs_before_the_matrix_and_leaves_the_cells_times_alone(tmp_path, monkeypatch):
    from test_compare import FakeRunCell

    from tfvariants.cli import main
    from tfvariants.commands import compare
    from tfvariants.execute import runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(compare, "probe_variants", lambda *a, **k: None)
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:abc")
    events: list[str] = []
    in_cell: list[bool] = [False]

    def probe(variant, plan, priority="normal"):
        assert not in_cell[0], "a peak probe ran while a cell was being timed"
        events.append("probe")
        return {"measured": True, "gflops_per_s": 50.0, "kernels": {}, "wall_s": 7.0}

    fake = FakeRunCell()

    def run_cell(cell, *a, **k):
        in_cell[0] = True
        events.append("cell")
        try:
            return fake(cell, *a, **k)
        finally:
            in_cell[0] = False

    monkeypatch.setattr(probe_mod, "peak_probe", probe)
    monkeypatch.setattr(runner, "run_cell", run_cell)
    argv = ["compare", "--threads", "1,2", "--workloads", "mnist_cnn", "--repeats", "2"]
    argv += ["--pricing", "none"]
    assert main([*argv, "--out", "P", "-o", "p.html"]) == 0
    # every probe before the first cell (measure_peaks is called before the matrix)
    assert events[:2] == ["probe", "probe"] and set(events[2:]) == {"cell"}
    assert main([*argv, "--out", "N", "-o", "n.html", "--no-peak"]) == 0
    assert "probe" not in events[events.index("cell") :]

    def times(folder: str) -> dict[str, object]:
        cells = sorted((tmp_path / folder / "cells").glob("*.json"))
        return {p.name: json.loads(p.read_text())["timing"] for p in cells}

    # the cells' timing fields are what the worker recorded: the probe's 7 s are nowhere
    assert times("P") == times("N") and times("P")
    stored = json.loads((tmp_path / "P/run.json").read_text())["variant_info"]["local"]["peak"]
    assert stored["1"]["probe_s"] == 7.0 and stored["1"]["probed_at"]


def _rows(step: float, wall: float, start: str, n: int = 6) -> list[dict]:
    return [
        {
            "cell": f"c{i}",
            "started_at": start,
            "import_s": 2.0,
            "warmup_s": 1.0,
            "steady_s": 5.0,
            "wall_s": wall + 0.01 * i,
            "step_s": step * (1 + 0.002 * (i - n / 2)),
        }
        for i in range(n)
    ]


PROBE = {"cached": False, "probe_s": 6.0, "probed_at": "2026-01-01T10:00:05+00:00"}


def test_the_a_a_passes_when_the_runs_agree():
    quiet = _rows(0.010, 20.0, "2026-01-01T10:00:05+00:00")
    got = peak_aa.judge(quiet, _rows(0.010, 20.0, "2026-01-01T11:00:00+00:00"), PROBE, False)
    assert got["passed"] and got["probe_before_first_cell"] and got["probe_ran"]
    assert got["ratio"]["covers_1"] and got["ratio"]["within_band"]
    assert got["ratio"]["value"] == pytest.approx(1.0)
    assert got["wall_shift_s"] == pytest.approx(0.0)


def test_the_a_a_fails_a_probe_inside_the_cells():
    # the probe's seconds in every cell's wall, its load slowing the steps, after a start
    inside = _rows(0.0115, 26.0, "2026-01-01T10:00:04+00:00")
    got = peak_aa.judge(inside, _rows(0.010, 20.0, "2026-01-01T11:00:00+00:00"), PROBE, False)
    assert not got["passed"]
    assert got["probe_before_first_cell"] is False
    assert got["wall_shift_below_half_probe"] is False
    assert not got["ratio"]["covers_1"] and got["ratio"]["verdict"] == "different"
    # a cached peak (the probe did not run) or one in the --no-peak run: not an A/A
    quiet = _rows(0.010, 20.0, "2026-01-01T10:00:05+00:00")
    other = _rows(0.010, 20.0, "2026-01-01T11:00:00+00:00")
    assert not peak_aa.judge(quiet, other, {**PROBE, "cached": True}, False)["passed"]
    assert not peak_aa.judge(quiet, other, PROBE, True)["passed"]


def test_the_two_compares_differ_only_by_no_peak(tmp_path):
    args = argparse.Namespace(
        workload="mnist_cnn", threads=2, variant="local", repeats=6, compare_arg=None
    )
    a = peak_aa.compare_command(args, tmp_path / "x", True)
    b = peak_aa.compare_command(args, tmp_path / "x", False)
    assert b == [*a, "--no-peak"] and "--no-probe" not in a
    args.compare_arg = ["--samples=2000"]
    assert peak_aa.compare_command(args, tmp_path / "x", False)[-2:] == [
        "--samples=2000",
        "--no-peak",
    ]
