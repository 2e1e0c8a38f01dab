"""The more-processes design's cheaper cells (analyze/training/processcells.py): planned
from the first look's cells, said with the repeats they fit in the budget left, and
measured by the rounds after the first look through compare's own loop (a fake runner)."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
import resultfactory as rf
from test_design_choice import NoisyHost, four_cores  # noqa: F401 (a fixture)

from tfvariants.analyze.training import processcells
from tfvariants.analyze.training.decomposition import Decomposition
from tfvariants.analyze.training.design import MORE_PROCESSES, choose, design_of
from tfvariants.cli import main
from tfvariants.commands.matrix_args import run_options_for
from tfvariants.execute import runner
from tfvariants.store.adaptiveplans import WindowBack, WindowPlan, design_record
from tfvariants.store.training import CellResult, parse_training


def timed(r: dict[str, Any], *, steady_s: float, steps: int, warmup_s: float, wall_s: float):
    """A result with the worker's steady window: 5 windows, a detected warm-up, a wall."""
    step = r["timing"]["steady_epoch_s"] / r["timing"]["steps_per_epoch"]
    rng = random.Random(json.dumps(r["cell"]))
    r["timing"].update(
        steady_s=steady_s,
        steady_steps=steps,
        warmup_s=warmup_s,
        steady_windows_s=[step * math.exp(rng.gauss(0, 0.01)) for _ in range(5)],
    )
    r["runner"]["wall_s"] = wall_s
    return r


def first_look(warm: dict[str, float]) -> list[CellResult]:
    """Five rounds of three configurations per workload, as the noisy host measured
    them: 14 s cells with a 6.8 s window of 110 steps."""
    return [
        parse_training(
            timed(
                rf.make_result(v, 2, w, rep),
                steady_s=6.8,
                steps=110,
                warmup_s=warm[w] * (0.5 + rep / 8),
                wall_s=14.0,
            )
        )
        for w in warm
        for v in ("tf-2.14", "intel-2.14", "intel-avx512-2.14")
        for rep in range(5)
    ]


def between(n: float = 0.03) -> Decomposition:
    """60 % between processes, 34 % over time (not evident), 6 % within."""
    return Decomposition(n, 0.06 * n, 0.6 * n, 0.34 * n, 0.3 * n, cells=30, configs=6, pairs=20)


def test_processes_that_differ_get_shorter_cells_and_more_repeats_in_the_budget() -> None:
    cells = processcells.plan(first_look({"mnist_cnn": 3.0, "cifar10_cnn": 4.0}), 5, 6.0, 50)
    assert cells is not None
    # Two of the first look's windows (6.8 s / 5 each), and their steps (110 / 5 each).
    assert cells.min_steady_s == pytest.approx(2.7) and cells.min_steady_steps == 44
    # The warm-up cap: each workload's longest MSER-5 cut at the first look.
    assert cells.warmup_max_s == {"mnist_cnn": 3.0, "cifar10_cnn": 4.0}
    assert cells.was_s == 14.0 and cells.cell_s < 11.0
    # 6 cells a round, 5 min left: 5 rounds of the cheaper cells, 3 of the old.
    assert processcells.rounds_in(300, 6, cells.cell_s) > processcells.rounds_in(300, 6, 14.0)
    design = choose(between(), "no duet", 20, cells, (300.0, 6))
    assert design.kind == MORE_PROCESSES and design.cells == cells
    assert "measures 2 of the first look's windows (2.7 s and 44 steady steps, was 6 s)" in (
        design.reason
    )
    assert "about 5 more repeats in the 5.0 min left (3 at the first look's cells)" in (
        design.reason
    )
    assert design_of(design_record(design.to_json())) == design  # a resume keeps the cells


def test_the_next_rounds_cells_run_the_cheaper_window_and_the_earlier_ones_do_not() -> None:
    cells = processcells.plan(first_look({"mnist_cnn": 3.0}), 5, 6.0, 50)
    assert cells is not None
    plan = cells.window_plan(WindowPlan(3.0, 6.0, 5, "K* = 1.3"))

    class Spec:
        options = rf_options()

    before = run_options_for(Spec, "mnist_cnn", 4, plan)
    after = run_options_for(Spec, "mnist_cnn", 5, plan)
    assert (before.min_steady_s, before.min_steady_steps, before.warmup_max_s) == (6.0, 50, None)
    assert (after.min_steady_s, after.min_steady_steps, after.warmup_max_s) == (2.7, 44, 3.0)
    assert "more-processes design" in plan.reason and "the window rule: K* = 1.3" in (plan.reason)
    # Where the window rule's check found the cheaper cells did not pay: all back.
    back = dataclasses.replace(plan, back={"mnist_cnn": WindowBack(6.0, 7, 1.2)})
    again = run_options_for(Spec, "mnist_cnn", 7, back)
    assert (again.min_steady_s, again.min_steady_steps, again.warmup_max_s) == (6.0, 50, None)


def rf_options() -> Any:
    from tfvariants.options.training import TrainingOptions

    return TrainingOptions(min_steady_s=6.0, min_steady_steps=50)


def test_cells_without_windows_plan_nothing() -> None:
    bare = [parse_training(rf.make_result("tf-2.14", 2, "mnist_cnn", rep)) for rep in range(5)]
    assert processcells.plan(bare, 5, 6.0, 50) is None
    assert choose(between(), None, 20, None, (300.0, 6)).cells is None


class TimedHost(NoisyHost):
    """The noisy host's cells with the worker's steady window, and the options each
    repeat ran with."""

    def __init__(self) -> None:
        super().__init__(round_sd=0.0, process_sd=0.2)
        self.options: dict[int, Any] = {}

    def __call__(self, cell, variant, options, folder, at=None, *, plan=None):
        stored = super().__call__(cell, variant, options, folder, at, plan=plan)
        path = folder.cells_dir / f"{cell.cell_id}.json"
        r = timed(json.loads(path.read_text()), steady_s=6.8, steps=110, warmup_s=2.0, wall_s=14)
        path.write_text(json.dumps(r))
        self.options.setdefault(cell.repeat, options)
        return type(stored).written(cell.cell_id, r, path)


def test_a_compiled_run_whose_processes_differ_measures_cheaper_processes_after_its_first_look(
    four_cores: None,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    fake = TimedHost()
    monkeypatch.setattr(runner, "run_cell", fake)
    assert main(["compare", "--preset", "compiled", "--threads", "2", "--workloads", "mnist_cnn",
                 "--variants", "tf-2.14,intel-2.14,intel-avx512-2.14", "--budget", "1h",
                 "--no-probe", "--max-repeats", "8", "--out", "results/c"]) in (0, 1)  # fmt: skip
    err = capsys.readouterr().err
    assert "design: more processes:" in err and "more repeats in the" in err
    # (the rounds from the next look on may go back: the window rule's check, which a
    # fake whose cells cost the same whatever their window cannot pass for sure)
    first, later = fake.options[4], fake.options[5]
    assert later.min_steady_s < first.min_steady_s
    assert later.min_steady_steps < first.min_steady_steps
    assert later.warmup_max_s == 2.0 and first.warmup_max_s is None
    adaptive = json.loads((tmp_path / "results/c/run.json").read_text())["adaptive"]
    assert adaptive["design"]["cells"]["min_steady_s"] == later.min_steady_s
    assert adaptive["window_plan"]["min_steady_steps"] == later.min_steady_steps
