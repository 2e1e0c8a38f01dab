"""The steady window planned at the first look is checked at the second, per workload
(tfvariants/rounds/training.py ``check_plan``): a workload whose cells with the planned
window cost more variance per second than the first look's goes back to the first
window (issue 25: cifar10_cnn's 3 s cells varied 3.3-6.7x as much per second)."""

from __future__ import annotations

import math
import statistics

import resultfactory as rf

from tfvariants.analyze.statistics import adaptive
from tfvariants.commands.matrix_args import run_options_for
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.spec import MatrixSpec
from tfvariants.rounds import training as rounds

OPTIONS = TrainingOptions(plan_window=True, min_steady_s=6.0, min_steady_steps=50)
INFO = {"local": {"kind": "local", "device": "cpu"}}
# Steady epoch seconds per round: the first five (6 s windows) vary by a few percent;
# then mnist_cnn stays as steady while cifar10_cnn's short-window cells scatter.
STEADY = {
    "mnist_cnn": [2.0, 2.06, 1.96, 2.04, 1.98, 2.01, 1.99],
    "cifar10_cnn": [2.0, 2.06, 1.96, 2.04, 1.98, 2.5, 1.9],
}


def _stored(rounds_: int, steadies: dict[str, list[float]] = STEADY) -> dict:
    stored = {}
    for w, steady in steadies.items():
        for r in range(rounds_):
            for t in (1, 2):
                res = rf.make_result("local", t, w, r, steady_epoch_s=steady[r] * (3 - t))
                # processes differ, the windows inside one agree: K&J plans short windows
                step = res["timing"]["steady_epoch_s"] / 100
                res["timing"].update(steady_windows_s=[step] * 5, steady_s=6.0 if r < 5 else 3.0)
                res["runner"]["wall_s"] = 10.5 if r < 5 else 7.8
                stored[f"{w}__local__t{t}__r{r}"] = res
    return stored


def _spec() -> MatrixSpec:
    return MatrixSpec(("local",), (1, 2), tuple(STEADY), 5, OPTIONS, INFO)


def test_a_workload_whose_short_window_cost_more_goes_back_from_the_second_look() -> None:
    spec = _spec()
    rule = adaptive.stopping_rule(5)
    assert rule.looks[:2] == (5, 7)
    hook = rounds.NextRoundHook(spec, rule, baseline=None)
    hook(rf.typed(_stored(5)))  # the first look plans; nothing to check yet
    plan = hook.window_plan
    assert plan is not None and plan.min_steady_s == 3.0 and plan.back is None
    hook(rf.typed(_stored(7)))  # the second look checks the plan on the cells it made
    plan = hook.window_plan
    assert plan is not None and plan.min_steady_s == 3.0 and plan.back is not None
    assert set(plan.back) == {"cifar10_cnn"}
    assert plan.back["cifar10_cnn"].from_repeat == 7
    assert plan.back["cifar10_cnn"].ratio > 1
    assert "checked per workload" in plan.reason
    assert "mnist_cnn 0." in plan.reason and "7 repeats, kept" in plan.reason
    assert "back to 6 s from repeat 7" in plan.reason
    # The cells: each workload's first rounds 6 s, then 3 s; cifar10_cnn 6 s again from 7.
    windows = {
        (w, r): run_options_for(spec, w, r, plan).min_steady_s
        for w in STEADY
        for r in (4, 5, 6, 7, 9)
    }
    assert [windows["mnist_cnn", r] for r in (4, 5, 6, 7, 9)] == [6.0, 3.0, 3.0, 3.0, 3.0]
    assert [windows["cifar10_cnn", r] for r in (4, 5, 6, 7, 9)] == [6.0, 3.0, 3.0, 6.0, 6.0]


def test_the_check_is_the_same_at_later_looks_and_needs_two_cells_a_configuration() -> None:
    spec = _spec()
    stored = rf.typed(_stored(7))
    at7 = rounds.plan_window(spec, stored, (5, 7, 10), 7)
    at10 = rounds.plan_window(spec, stored, (5, 7, 10), 10)
    assert at10.back == at7.back  # the same cells, the same answer
    assert rounds.plan_window(spec, stored, (5, 7, 10), 5).back is None
    assert rounds.plan_window(spec, stored, (5,), 5).back is None  # one look only
    # One round after the first look: no configuration has two planned cells to vary.
    one = {k: v for k, v in stored.items() if not k.endswith("__r6")}
    said = rounds.plan_window(spec, one, (5, 6, 10), 6)
    assert said.back is None and "checked" not in said.reason


def test_variance_per_second_pools_configurations_and_takes_the_median_wall() -> None:
    cells = rf.typed(
        {
            f"c{t}{r}": rf.make_result("local", t, "mnist_cnn", r, steady_epoch_s=s)
            for t, steadies in ((1, (2.0, 2.2)), (2, (1.0, 1.0)))
            for r, s in enumerate(steadies)
        }
    )
    found = rounds.variance_per_second(list(cells.values()))
    assert found is not None
    pooled, wall = found
    one = [r for r in cells.values() if r.threads == 1]
    expected = statistics.variance([math.log(r.training_time_s or 0) for r in one]) / 2
    assert abs(pooled - expected) < 1e-12  # the 2-thread pair adds a degree, no spread
    assert wall == statistics.median(r.wall_s or 0 for r in cells.values())
    assert rounds.variance_per_second([next(iter(cells.values()))]) is None


def test_a_workload_kept_at_one_look_is_checked_again_on_more_cells_at_the_next() -> None:
    spec = _spec()
    steadies = {
        "mnist_cnn": [*STEADY["mnist_cnn"], 2.6, 1.5, 2.4],  # rounds 7-9 scatter
        "cifar10_cnn": [*STEADY["cifar10_cnn"], 2.0, 2.0, 2.0],
    }
    stored = rf.typed(_stored(10, steadies))
    plan = rounds.plan_window(spec, stored, (5, 7, 10), 10)
    assert plan.back is not None
    assert plan.back["mnist_cnn"].from_repeat == 10  # kept at 7, back from 10
    assert plan.back["cifar10_cnn"].from_repeat == 7
    assert "mnist_cnn" in plan.reason and "back to 6 s from repeat 10" in plan.reason
    assert run_options_for(spec, "mnist_cnn", 9, plan).min_steady_s == 3.0
    assert run_options_for(spec, "mnist_cnn", 10, plan).min_steady_s == 6.0
