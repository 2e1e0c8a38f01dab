"""The compiled preset's measurement design (analyze/training/design.py, commands/
design.py): the rule from the noise decomposition, and the switch through compare's own
loop with a fake runner: side by side where rounds move together, more processes where
processes differ, recorded in run.json and kept by a resume; a user's --duet untouched."""

from __future__ import annotations

import json
import math
import random
import threading
from pathlib import Path
from typing import Any

import pytest
import resultfactory as rf

from tfvariants.analyze.training.decomposition import Decomposition
from tfvariants.analyze.training.design import (
    AS_PLANNED,
    MORE_PROCESSES,
    SIDE_BY_SIDE,
    choose,
    design_of,
)
from tfvariants.cli import main
from tfvariants.execute import runner
from tfvariants.execute.record import StoredCell
from tfvariants.plan.topology import LogicalCpu, Topology
from tfvariants.store.adaptiveplans import design_record

FOUR_CORES = Topology(tuple(LogicalCpu(i, i, 0, 0) for i in range(4)))


def parts(within: float, between: float, time: float, se: float = 0.01) -> Decomposition:
    total = within + between + time
    return Decomposition(total, within, between, time, se * total, cells=30, configs=6, pairs=20)


def test_the_rule_follows_the_largest_part_with_its_thresholds() -> None:
    assert choose(parts(0.1, 0.3, 0.6)).kind == SIDE_BY_SIDE
    assert choose(parts(0.1, 0.3, 0.6)).switched
    # Half of the variance over time is the threshold; just below it, processes lead.
    assert choose(parts(0.0, 0.51, 0.49)).kind == MORE_PROCESSES
    assert choose(parts(0.1, 0.5, 0.4)).kind == MORE_PROCESSES
    assert "only more processes help" in choose(parts(0.1, 0.5, 0.4)).reason
    # sigma 10 % -> 9 per side: a run that stops at 8 is told what would reach it.
    short = choose(Decomposition(0.01, 0.0, 0.01, 0.0, 0.001, 30, 6, 20), max_repeats=8)
    assert "about 9 repeats per side" in short.reason and "--max-repeats 9" in short.reason
    assert choose(parts(0.6, 0.2, 0.2)).kind == AS_PLANNED
    assert choose(None).kind == AS_PLANNED


def test_an_over_time_share_within_its_noise_switches_nothing() -> None:
    # 60 % over time, but its standard error is 40 % of the variance: not 2 errors above 0.
    assert choose(parts(0.1, 0.3, 0.6, se=0.4)).kind == AS_PLANNED


def test_where_side_by_side_cannot_run_it_says_why_and_switches_nothing() -> None:
    d = choose(parts(0.1, 0.3, 0.6), "two 2-thread cells at once need 4 CPUs")
    assert d.kind == AS_PLANNED and not d.switched
    assert "side by side would cancel" in d.reason and "need 4 CPUs" in d.reason
    assert design_of(design_record(d.to_json())) == d
    assert design_of(design_record({"kind": "other"})) is None


class NoisyHost:
    """runner.run_cell under a noise of known parts: each round's cells share a factor
    (``round_sd``), each process has its own (``process_sd``). Records whether a cell ran
    on a duet's plan; a duet's filler (``stop`` given) waits until stopped."""

    def __init__(self, round_sd: float, process_sd: float) -> None:
        self.round_sd, self.process_sd = round_sd, process_sd
        self.lock = threading.Lock()
        self.calls: list[tuple[str, int, bool]] = []

    def __call__(self, cell, variant, options, folder, at=None, *, plan=None):
        stop = at.stop if at is not None else None
        if stop is not None:
            stop.wait(2.0)
            return StoredCell.written(cell.cell_id, {"status": "failed"}, folder.cells_dir / "f")
        shared = random.Random(f"round {cell.repeat}").gauss(0, self.round_sd)
        own = random.Random(f"{cell.cell_id} {cell.attempt}").gauss(0, self.process_sd)
        factor = 0.75 if cell.variant == "intel-avx512-2.14" else 1.0
        r = rf.make_result(cell.variant, cell.threads, cell.workload, cell.repeat,
                           steady_epoch_s=2.0 * factor * math.exp(shared + own))  # fmt: skip
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r))
        with self.lock:
            self.calls.append((cell.cell_id, cell.repeat, plan is not None))
        return StoredCell.written(cell.cell_id, r, path)


@pytest.fixture
def four_cores(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import tfvariants.commands.compare as compare
    import tfvariants.variants as variants_pkg

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tfvariants.plan.spec.logical_cpus", lambda: 4)
    monkeypatch.setattr("tfvariants.plan.topology.read_topology", lambda *a, **k: FOUR_CORES)
    monkeypatch.setattr(variants_pkg, "ensure_built", lambda v, log: None)
    monkeypatch.setattr(variants_pkg, "skip_reason", lambda v: None)
    monkeypatch.setattr(compare, "ready_variants", lambda objs, engine: objs)


def _compiled(*extra: str) -> int:
    return main(["compare", "--preset", "compiled", "--threads", "2", "--workloads", "mnist_cnn",
                 "--variants", "tf-2.14,intel-2.14,intel-avx512-2.14,local", "--budget", "1h",
                 "--no-probe", "--max-repeats", "8", "--out", "results/c", *extra])  # fmt: skip


def _design(tmp_path: Path) -> dict[str, Any]:
    run = json.loads((tmp_path / "results/c/run.json").read_text())
    return run["adaptive"]["design"]


def test_rounds_that_move_together_switch_the_rest_to_side_by_side(
    four_cores: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    fake = NoisyHost(round_sd=0.3, process_sd=0.01)
    monkeypatch.setattr(runner, "run_cell", fake)
    assert _compiled() in (0, 1)
    first = [duet for _, repeat, duet in fake.calls if repeat < 5]
    after = [duet for _, repeat, duet in fake.calls if repeat >= 5]
    assert first and not any(first)  # the first look: one cell at a time
    assert after and all(after)  # the rounds after it: side by side
    err = capsys.readouterr().err
    assert "design: side by side:" in err
    assert _design(tmp_path)["kind"] == SIDE_BY_SIDE and _design(tmp_path)["switched"]
    html = (tmp_path / "reports/c/index.html").read_text()
    assert "design: side by side:" in html
    # A resume keeps the design: its rounds run side by side from the start.
    fake.calls.clear()
    assert _compiled("--resume", "--max-repeats", "10") in (0, 1)
    assert "kept from this run's first look" in capsys.readouterr().err
    assert fake.calls and all(duet for *_, duet in fake.calls)


def test_processes_that_differ_are_said_to_need_more_processes(
    four_cores: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    fake = NoisyHost(round_sd=0.0, process_sd=0.2)
    monkeypatch.setattr(runner, "run_cell", fake)
    assert _compiled() in (0, 1)
    assert not any(duet for *_, duet in fake.calls)
    assert "design: more processes:" in capsys.readouterr().err
    assert _design(tmp_path)["kind"] == MORE_PROCESSES


def test_a_users_duet_is_never_changed(
    four_cores: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    fake = NoisyHost(round_sd=0.0, process_sd=0.2)
    monkeypatch.setattr(runner, "run_cell", fake)
    assert _compiled("--duet") in (0, 1)
    assert all(duet for *_, duet in fake.calls)
    assert "design:" not in capsys.readouterr().err
    assert _design(tmp_path) is None
