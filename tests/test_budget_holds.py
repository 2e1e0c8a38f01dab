"""A budget that holds (issue 42): a run ends within 10 % of --budget, probes included,
unless --at-least-first-look asks otherwise; when the first look cannot fit it is said
after the first round, the run stops with every cell stored, and the resume command it
prints reaches the first look. On a fake clock: each fake cell advances it by the time a
slowed cell takes (a busy machine), nothing waits in real time."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import resultfactory as rf

from tfvariants.cli import main
from tfvariants.commands import compare, serve
from tfvariants.execute import policy, runner
from tfvariants.execute.record import StoredCell
from tfvariants.store.result import write_json_atomic

PROBES_S = 30.0  # what the fake probes take of the budget


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch, tmp_path):
    c = Clock()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(policy, "run_clock", c)
    monkeypatch.setattr("tfvariants.plan.spec.logical_cpus", lambda: 2)

    def probes(info, objs, probe, count_isa=False):
        c.now += PROBES_S
        for name in objs:
            info.setdefault(name, {})["onednn"] = {"isa": "fake", "noop": [], "changes": []}

    monkeypatch.setattr(compare, "probe_variants", probes)
    monkeypatch.setattr(compare, "measure_peaks", lambda *a: None)
    monkeypatch.setattr(compare, "ready_variants", lambda objs, engine: objs)
    return c


class SlowCells:
    """Training cells that take ``seconds`` each on the fake clock (``jump`` times that
    from the ``after``-th cell on: a load that starts mid-run), 2 threads 1.4x faster
    unless ``same``."""

    def __init__(
        self, clock: Clock, seconds: float, *, jump: float = 1.0, after: int = 0, same: bool = False
    ):
        self.clock, self.seconds, self.jump, self.after = clock, seconds, jump, after
        self.same = same
        self.calls: list[str] = []

    def __call__(self, cell, variant, options, folder, at=None):
        self.calls.append(cell.cell_id)
        took = self.seconds * (self.jump if self.after and len(self.calls) > self.after else 1)
        self.clock.now += took
        speed, noise = (0.0, 0.3) if self.same else (0.5, 0.02)
        r = rf.make_result(cell.variant, cell.threads, cell.workload, cell.repeat,
                           steady_epoch_s=2.0 / cell.threads**speed, noise=noise)  # fmt: skip
        r["runner"]["wall_s"] = took
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.write_text(json.dumps(r))
        return StoredCell.written(cell.cell_id, r, path)


def _run(argv: list[str], clock: Clock) -> tuple[int, float]:
    """The exit code and the seconds the command took on the fake clock."""
    t0 = clock.now
    code = main(argv)
    return code, clock.now - t0


def _resume_command(err: str) -> list[str]:
    """The resume command the stop line printed (after "to reach it, "), as argv."""
    found = re.search(r"to reach it, tfvariants (.*?--budget \d+m)", err)
    assert found, err
    return shlex.split(found.group(1))


def _cells(out: Path) -> set[str]:
    return {p.stem for p in (out / "cells").glob("*.json")}


def test_compare_on_a_busy_machine_stops_within_its_budget_and_resumes_to_the_first_look(
    clock, monkeypatch, capsys
):
    slow = SlowCells(clock, 90.0)  # 10 planned cells of 90 s: 15.5 min with the probes
    monkeypatch.setattr(runner, "run_cell", slow)
    argv = ["compare", "--threads", "1,2", "--workloads", "mnist_mlp", "--budget", "10m",
            "--out", "res", "--verbose"]  # fmt: skip
    code, took = _run(argv, clock)
    assert code == 1  # planned cells not run
    assert took <= 1.10 * 600 and took == PROBES_S + 6 * 90  # the 7th would end past it
    err = capsys.readouterr().err
    assert "probes and census: 30s of the 10m00s budget" in err
    # after the first round (2 cells), one line: the first look cannot fit, and the estimate
    (note,) = [x for x in err.splitlines() if x.startswith("note: the first look cannot fit")]
    assert "ends after about 15m30s" in note and "--budget 20m" in note
    assert err.index(note) < err.index("mnist_mlp__local__t1__r2")
    run = json.loads(Path("res/run.json").read_text())
    assert run["adaptive"]["spent_s"] == pytest.approx(took, abs=0.1)
    assert run["adaptive"]["looks_made"] == []
    assert "(4 planned cell(s) not run)" in run["adaptive"]["stopped"]
    assert _cells(Path("res")) == set(slow.calls)  # every cell run is stored
    html = Path("reports/res/index.html").read_text()
    assert "to reach it, tfvariants compare --threads 1,2" in html  # the report says it too
    again = _resume_command(err)
    assert again == ["compare", "--threads", "1,2", "--workloads", "mnist_mlp", "--verbose",
                     "--resume", "--out", "res", "--budget", "20m"]  # fmt: skip
    code, took = _run(again, clock)
    assert code == 0
    run = json.loads(Path("res/run.json").read_text())
    assert [look["after_repeats"] for look in run["adaptive"]["looks_made"]] == [5]
    assert run["adaptive"]["spent_s"] <= 1200 and len(_cells(Path("res"))) == 10


def test_adaptive_rounds_under_a_load_that_starts_mid_run_end_within_the_budget(clock, monkeypatch):
    # 20 s cells until the first look, 60 s after it (the rounds' estimate, a median of
    # cells before, is too short); identical configurations: undecided
    slow = SlowCells(clock, 20.0, jump=3.0, after=10, same=True)
    monkeypatch.setattr(runner, "run_cell", slow)
    argv = ["compare", "--threads", "1,2", "--workloads", "mnist_mlp", "--budget", "10m",
            "--max-repeats", "100", "--out", "res"]  # fmt: skip
    code, took = _run(argv, clock)
    assert code == 0  # a round cut at the budget leaves no cell missing
    run = json.loads(Path("res/run.json").read_text())
    assert run["adaptive"]["rounds"] and run["adaptive"]["stopped"].startswith(
        "budget: the next cell would overrun the 10m00s budget (1 cell(s) of this round not run)"
    )
    # the next 60 s cell would start at 530 s: 530 + 1.25 x 60 > 600, so it does not
    assert took == PROBES_S + 10 * 20 + 5 * 60 <= 1.10 * 600
    assert run["adaptive"]["spent_s"] == pytest.approx(took, abs=0.1)
    assert _cells(Path("res")) == set(slow.calls)


def test_at_least_first_look_runs_past_the_budget_to_reach_it(clock, monkeypatch, capsys):
    slow = SlowCells(clock, 90.0)
    monkeypatch.setattr(runner, "run_cell", slow)
    argv = ["compare", "--threads", "1,2", "--workloads", "mnist_mlp", "--budget", "10m",
            "--at-least-first-look", "--out", "res"]  # fmt: skip
    code, took = _run(argv, clock)
    assert code == 0 and took == PROBES_S + 10 * 90
    run = json.loads(Path("res/run.json").read_text())
    assert run["options"]["at_least_first_look"] is True
    assert [look["after_repeats"] for look in run["adaptive"]["looks_made"]] == [5]
    err = capsys.readouterr().err
    assert "the run overruns it to reach the first look (--at-least-first-look)" in err


def test_the_compiled_preset_holds_its_budget(clock, monkeypatch, capsys):
    import tfvariants.variants as variants_pkg

    monkeypatch.setattr(variants_pkg, "ensure_built", lambda v, log: None)
    monkeypatch.setattr(variants_pkg, "skip_reason", lambda v: None)
    slow = SlowCells(clock, 40.0)  # 10-12 s planned: a machine loaded about 4x
    monkeypatch.setattr(runner, "run_cell", slow)
    code, took = _run(["compare", "--preset", "compiled", "--out", "res"], clock)
    budget = 15 * 60
    assert took <= 1.10 * budget
    err = capsys.readouterr().err
    assert "note: the first look cannot fit the 15m00s budget" in err
    assert _cells(Path("res")) == set(slow.calls)
    run = json.loads(Path("res/run.json").read_text())
    assert run["adaptive"]["spent_s"] == pytest.approx(took, abs=0.1)
    assert run["adaptive"]["looks_made"] == []
    again = _resume_command(err)
    code, took = _run(again, clock)
    run = json.loads(Path("res/run.json").read_text())
    assert [look["after_repeats"] for look in run["adaptive"]["looks_made"]][:1] == [5]
    budget = int(again[-1].rstrip("m")) * 60
    assert run["adaptive"]["spent_s"] <= 1.10 * budget


class SlowServeCells:
    """Serving cells of ``seconds`` each on the fake clock, 1 thread 8 % faster."""

    def __init__(self, clock: Clock, seconds: float):
        self.clock, self.seconds = clock, seconds
        self.calls: list[str] = []

    def __call__(self, cell, variant, options, folder):
        self.calls.append(cell.cell_id)
        self.clock.now += self.seconds
        noise = [1.0, 0.93, 1.06, 0.97, 1.04, 0.95, 1.02, 0.99, 1.07, 0.94]
        thr = 55.0 * (1.08 if cell.threads == 1 else 1.0) * noise[len(self.calls) % 10]
        result = {
            "schema_version": 1,
            "kind": "tfvariants.serve_cell",
            "cell": cell.to_dict(),
            "status": "ok",
            "reason": None,
            "metrics": {"throughput_per_s": thr, "p99_ms": 20.0, "validity": None},
            "placement": {"shared": True, "server_cpus": [0, 1]},
            "runner": {"wall_s": self.seconds},
        }
        path = folder.cells_dir / f"{cell.cell_id}.json"
        write_json_atomic(path, result)
        return StoredCell.written(cell.cell_id, result, path)


def test_serve_holds_its_budget_and_resumes_to_the_first_look(clock, monkeypatch, capsys):
    monkeypatch.setattr(serve, "ready_variants", lambda objs, engine: objs)
    slow = SlowServeCells(clock, 20.0)  # 10 planned cells of 20 s against 2 minutes
    monkeypatch.setattr(runner, "run_cell", slow)
    argv = ["serve", "--models", "noop", "--variants", "local", "--threads", "1,2",
            "--scenarios", "concurrency", "--concurrency", "1", "--path", "inprocess",
            "--budget", "2m", "--out", "res"]  # fmt: skip
    code, took = _run(argv, clock)
    assert took <= 1.10 * 120 and took == 5 * 20  # the 6th would end past it
    err = capsys.readouterr().err
    assert "note: the first look cannot fit the 2m00s budget" in err
    assert _cells(Path("res")) == set(slow.calls)
    again = _resume_command(err)
    assert again[:2] == ["serve", "--models"] and again[-2:] == ["--budget", "5m"]
    code, took = _run(again, clock)
    run = json.loads(Path("res/run.json").read_text())
    assert run["adaptive"]["looks"][0] == 5 and len(_cells(Path("res"))) >= 10
    assert run["adaptive"]["spent_s"] <= 1.10 * 300
