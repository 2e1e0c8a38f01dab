"""Thread counts this host cannot emulate (issue 41, item 4): compare and serve stop in
one line before any probe or cell, unless --oversubscribe; a dry run and the Ray
executor are not refused; `run` keeps marking its one cell (tfvariants/plan/fit.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tfvariants.cli import main
from tfvariants.commands import compare
from tfvariants.execute import runner
from tfvariants.plan.fit import beyond_host, refusal


@pytest.fixture
def two_cpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tfvariants.plan.spec.logical_cpus", lambda: 2)

    def must_not(*a: object, **k: object) -> None:
        pytest.fail("a probe or a cell ran")

    for name in ("probe_variants", "measure_peaks", "ready_variants"):
        monkeypatch.setattr(compare, name, must_not)
    monkeypatch.setattr(runner, "run_cell", must_not)
    return tmp_path


def test_the_counts_beyond_the_host_leave_out_gpu_variants() -> None:
    configs = [("local", 1), ("local", 8), ("local", 64), ("gpu", 8), ("pip", 8)]
    assert beyond_host(configs, 2, {"gpu"}) == [8, 64]
    assert beyond_host(configs, 64, {"gpu"}) == []


def test_the_refusal_names_the_counts_the_measure_and_the_ways_on() -> None:
    line = refusal("compare", [8, 16, 32, 64], 2, [1, 2])
    assert line.startswith("--threads: 8, 16, 32 and 64 do not fit this host's 2 CPU(s)")
    for words in ("64 threads taking turns on 2 CPU(s)", "not a 64-vCPU machine",
                  "--threads 1,2", "--executor ray", "--dry-run", "--oversubscribe"):  # fmt: skip
        assert words in line
    assert "--executor" not in refusal("serve", [4], 2, [1])
    assert refusal("serve", [4], 2, [1]).startswith("--threads: 4 does not fit")


def test_compare_beyond_the_host_stops_in_one_line_writing_nothing(
    two_cpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", "--threads", "8,16,32,64", "--workloads", "mnist_mlp"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tfvariants: error: --threads: 8, 16, 32")
    assert "--threads 1,2 (what fits here)" in err
    assert os.listdir(two_cpus) == []


def test_a_fixed_thread_count_beyond_the_host_is_refused_too(
    two_cpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", "--threads", "1", "--variants", "local,xla@4"]) == 2
    assert "--threads: 4 does not fit this host's 2 CPU(s)" in capsys.readouterr().err
    assert os.listdir(two_cpus) == []


def test_a_dry_run_beyond_the_host_is_the_bill_not_a_refusal(
    two_cpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", "--threads", "8,16,32,64", "--workloads", "mnist_mlp",
                 "--dry-run"]) == 0  # fmt: skip
    assert "do not fit" not in capsys.readouterr().err
    assert os.listdir(two_cpus) == []


def test_oversubscribe_runs_the_cells_marked_and_a_resume_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_compare import FakeRunCell, _fake_probe

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tfvariants.plan.spec.logical_cpus", lambda: 2)
    monkeypatch.setattr(compare, "probe_variants", _fake_probe)
    monkeypatch.setattr(compare, "measure_peaks", lambda *a: None)
    fake = FakeRunCell(interrupt_at=5)
    monkeypatch.setattr(runner, "run_cell", fake)
    argv = ["compare", "--threads", "2,4", "--workloads", "mnist_mlp", "--repeats", "3",
            "--out", "res", "--oversubscribe"]  # fmt: skip
    assert main(argv) == 130  # interrupted after 4 cells
    run = json.loads((tmp_path / "res/run.json").read_text())
    assert run["options"]["oversubscribe"] is True
    cells = [json.loads(p.read_text()) for p in (tmp_path / "res/cells").glob("*.json")]
    assert {c["requested"]["oversubscribed"] for c in cells if c["cell"]["threads"] == 4} == {True}
    again = FakeRunCell()
    monkeypatch.setattr(runner, "run_cell", again)
    assert main(["compare", "--resume", "--out", "res"]) == 0  # no refusal: kept
    assert len(again.calls) == 2 * 3 - 4


def test_serve_beyond_the_host_stops_in_one_line_writing_nothing(
    two_cpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--threads", "1,4", "--out", "r"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--threads: 4 does not fit" in err
    assert os.listdir(two_cpus) == []
