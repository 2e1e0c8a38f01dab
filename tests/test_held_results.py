"""The results the matrix loop holds for its next-round hook (store/heldresults.py) are
what a reload of the run folder gives after every round, and the hooks judge only at
the stopping rule's looks with the answers of judging after every round."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import resultfactory as rf

from tfvariants.analyze.statistics import adaptive
from tfvariants.execute.matrix import Matrix
from tfvariants.execute.policy import Policy
from tfvariants.execute.record import StoredCell
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.cell import Cell
from tfvariants.plan.spec import MatrixSpec
from tfvariants.rounds import training as rounds
from tfvariants.store.cellresult import AnyResult
from tfvariants.store.rundir import load_run_dir
from tfvariants.store.runfolder import RunFolder

SPEC = MatrixSpec(("pip", "compiled"), (1,), ("mnist_cnn",), 3, TrainingOptions(budget_s=3600.0))


class Runner:
    """Writes a result per cell as the runner does; one cell says it ran on a host the
    run does not declare, and the run can be stopped (Ctrl-C) at a given call."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.calls = 0
        self.interrupt_at = interrupt_at

    def __call__(self, cell: Cell, folder: RunFolder) -> StoredCell:
        self.calls += 1
        if self.calls == self.interrupt_at:
            raise KeyboardInterrupt
        speed = 0.7 if cell.variant == "compiled" else 1.0
        result = rf.make_result(
            cell.variant, 1, cell.workload, cell.repeat, steady_epoch_s=2 * speed, noise=0.05
        )
        if (cell.variant, cell.repeat) == ("compiled", 5):
            result["runner"] = {"host_id": "another-host"}
        return StoredCell.written(cell.cell_id, result, folder.write_cell(cell.cell_id, result))


def _rounds_up_to(last: int, out: Path, seen: list[list[tuple[str, AnyResult]]]) -> Any:
    def next_round(stored: Mapping[str, AnyResult]) -> tuple[list[Cell], str]:
        reload = load_run_dir(out).parsed
        assert list(stored.items()) == list(reload.items())  # the same, in a load's order
        seen.append(list(stored.items()))
        rnd = 1 + max(r.round for r in stored.values())
        if rnd > last:
            return [], "enough"
        return [Cell(v, 1, "mnist_cnn", rnd) for v in SPEC.variants], "more"

    return next_round


def test_the_hook_gets_what_a_reload_of_the_folder_gives_after_every_round(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    seen: list[list[tuple[str, AnyResult]]] = []
    # Stopped in round 4, then resumed: the resume starts from the folder once.
    first = Matrix(SPEC, out).run(
        Runner(interrupt_at=10), policy=Policy(_rounds_up_to(6, out, seen))
    )
    assert first.was_interrupted and len(seen) == 2
    matrix = Matrix(SPEC, out)
    matrix.prepare(resume=True, hosts=[])
    matrix.run(Runner(), policy=Policy(_rounds_up_to(6, out, seen)))
    # The cell from the undeclared host is stored but not counted (a load leaves it out).
    foreign = Cell("compiled", 1, "mnist_cnn", 5).cell_id
    assert (out / "cells" / f"{foreign}.json").is_file()
    assert foreign not in dict(seen[-1]) and len(seen) == 5
    assert len(seen[-1]) == 7 * 2 - 2  # compiled's interrupted round 4 never ran again


def _stored(rounds_: int) -> dict[str, Any]:
    out = {}
    for r in range(rounds_):
        for v, s in (("pip", 1.0), ("compiled", 1.02)):
            res = rf.make_result(v, 1, "mnist_cnn", r, steady_epoch_s=2 * s, noise=0.2, seed=r)
            out[rf.cell_id(res)] = res
    return out


def test_the_training_hook_judges_at_the_looks_only_and_answers_as_judging_every_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = MatrixSpec(
        ("pip", "compiled"), (1,), ("mnist_cnn",), 5, TrainingOptions(budget_s=3600.0)
    )
    rule = adaptive.stopping_rule(5, 12)
    judged = []
    real = rounds.workload_verdicts

    def counting(*args: Any, **kwargs: Any) -> Any:
        judged.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(rounds, "workload_verdicts", counting)
    hook = rounds.NextRoundHook(spec, rule, baseline=None)
    everything = rf.typed(_stored(rule.max_repeats))
    looks_reached = set()
    for n in range(rule.looks[0], rule.max_repeats + 1):
        stored = {cid: r for cid, r in everything.items() if r.round < n}
        cells, why = hook(stored)
        fresh = rounds.NextRoundHook(spec, rule, baseline=None)  # judges on every call
        assert (cells, why) == fresh(stored)
        looks_reached.add(max(k for k in rule.looks if k <= n))
        if not cells:
            break
    assert len(looks_reached) >= 3
    # Once per look reached by this hook (the fresh hooks judged once per call each).
    assert len(judged) == len(looks_reached) + (n - rule.looks[0] + 1)
    assert [look["after_repeats"] for look in hook.looks] == sorted(looks_reached)
