"""benchmarks/decide.py's runs on the product: one simulated comparison is a real run
folder run by the product's matrix loop (tfvariants/execute/matrix.py ``Matrix``) with
the training task's next-round hook (tfvariants/rounds/training.py ``NextRoundHook``,
whose decision is rounds/decide.py's), the cells given by a simulated cell runner
(``SimulatedCells``: it writes a drawn result where the real runner launches a
worker). The final A vs B comparison is read with ``look_verdicts``, the same
``workload_verdicts`` the report calls.

``run_matrix`` is the one place the benchmark builds and runs the matrix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import random
import statistics
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from decide_scenarios import Draw, Scenario

from tfvariants.analyze.statistics import adaptive, family, stats, verdicts
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.execute.matrix import Matrix
from tfvariants.execute.policy import Policy
from tfvariants.execute.record import StoredCell
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.cell import Cell
from tfvariants.plan.spec import MatrixSpec
from tfvariants.rounds.training import NextRoundHook, look_verdicts
from tfvariants.store import lock
from tfvariants.store.cellresult import AnyResult
from tfvariants.store.runfolder import RunFolder
from tfvariants.store.training import ConfigKey

WORKLOAD = "sim"
BASELINE, UNDER_TEST, COMPANION_SIDE = "B", "A", "C"  # variants; B is the baseline
SIDES = (BASELINE, UNDER_TEST, COMPANION_SIDE)
RIVALS = "DEFGH"  # a ranking scenario's further configurations (Scenario.rivals)


def sides_of(scn: Scenario) -> tuple[str, ...]:
    """The scenario's variants: B, A, C and its rivals."""
    return (*SIDES, *RIVALS[: len(scn.rivals)])


ORDER_SEED = 1  # the rounds' order (each side draws from its own stream: order is moot)
# Where the run folders go: memory-backed where the host has it (a run writes a file per
# cell, and the loop reads each back once).
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None

Rounds = dict[int, float]


@dataclass
class _Wander:
    phi: float
    sd: float
    w: float = field(default=0.0)

    def step(self, rng: random.Random, first: bool) -> float:
        if first:  # the stationary law from the start
            self.w = rng.gauss(0.0, self.sd)
        else:
            self.w = self.phi * self.w + rng.gauss(0.0, self.sd * math.sqrt(1 - self.phi**2))
        return math.exp(self.w)


class SimulatedCells:
    """The RunCell of a simulated machine: a cell's time drawn from its side's law and
    the machine's misbehaviour, stored as a training result (its projected full-schedule
    time is the value verdicts compare). Each side and the rounds draw from their own
    stream (seeded by ``key``), so a side's values do not depend on which others ran."""

    def __init__(self, scn: Scenario, key: str) -> None:
        self.scn = scn
        sides = sides_of(scn)
        self.rngs = {c: random.Random(f"{key}/{c}") for c in (*sides, "rounds")}
        companion = scn.b
        self.draws: dict[str, Draw] = {
            UNDER_TEST: scn.a,
            BASELINE: scn.b,
            COMPANION_SIDE: lambda r: scn.companion * companion(r),
        }
        for side, times in zip(RIVALS, scn.rivals, strict=False):
            self.draws[side] = lambda r, times=times: times * companion(r)
        # Every configuration wanders, each on its own rounds (the audit's case: a wander
        # on one side only is diluted in the ratio by the other's independent noise).
        self.wander = {c: _Wander(*scn.wander) for c in sides} if scn.wander[0] else {}
        self.disturbed: dict[int, bool] = {}  # round -> the machine disturbed it
        self.first: dict[str, int] = {}  # each side's first round (a --later one starts late)
        self.series: dict[str, Rounds] = {c: {} for c in sides}

    def __call__(self, cell: Cell, folder: RunFolder) -> StoredCell:
        rnd, side = cell.repeat, cell.variant
        if rnd not in self.disturbed:  # one draw per round, whichever cell comes first
            self.disturbed[rnd] = self.rngs["rounds"].random() < self.scn.machine.disturbed
        rng = self.rngs[side]
        v = self.draws[side](rng) * self.scn.machine.cell(rng, rnd, self.disturbed[rnd])
        if side in self.wander:
            v *= self.wander[side].step(rng, rnd == self.first.setdefault(side, rnd))
        self.series[side][rnd] = v
        result = simulated_result(cell, v)
        return StoredCell.written(cell.cell_id, result, folder.write_cell(cell.cell_id, result))


# A draw is relative (about 1); stored in milliseconds-as-seconds, so a heavy tail's
# rare extreme (1.9e7 was drawn) stays under the store's 30-day bound for a time, which
# refuses it as implausible. Verdicts compare ratios and ranks: the scale changes none.
SECONDS_PER_DRAW = 1e-3


def simulated_result(cell: Cell, draw: float) -> dict[str, Any]:
    """The smallest valid training result whose training time is ``draw`` scaled."""
    seconds = draw * SECONDS_PER_DRAW
    return {
        "schema_version": 1,
        "kind": "tfvariants.cell",
        "cell": cell.to_dict(),
        "status": "ok",
        "reason": None,
        "timing": {"epoch_times_s": [seconds]},
        "schedule": {"projected_full_s": seconds},
    }


def spec_of(
    scn: Scenario, rule: adaptive.StoppingRule, confidence: float = stats.CONFIDENCE
) -> MatrixSpec:
    """The run a simulated comparison is: B, A and C at one thread on one workload, with
    the scenario's decision settings and the rule's looks (a budget: adaptive rounds)."""
    options = TrainingOptions(
        max_repeats=rule.max_repeats,
        confidence=confidence,
        min_effect=scn.min_effect,
        equivalence_band=scn.band,
        budget_s=24 * 3600.0,  # a day: never reached (the simulated cells take no time)
        order_seed=ORDER_SEED,
        plan_window=False,
        later=[UNDER_TEST] if scn.later else None,
    )
    return MatrixSpec(sides_of(scn), (1,), (WORKLOAD,), rule.looks[0], options)


@dataclass
class Run:
    """What one simulated run gave: the A vs B comparison at the last look, the repeats
    A ran, every side's values by round."""

    comparison: stats.Comparison
    repeats: int
    series: dict[str, Rounds]
    named: str | None = None  # the configuration "was the fastest" names (family.lead)


def run_matrix(scn: Scenario, key: str, rule: adaptive.StoppingRule) -> Run:
    """One simulated comparison through the product's loop, in a throwaway run folder."""
    spec = spec_of(scn, rule)
    cells = SimulatedCells(scn, key)
    baseline = (BASELINE, 1)
    hook = NextRoundHook(spec, rule, baseline=baseline)
    seen: list[Mapping[str, AnyResult]] = []

    def next_round(stored: Mapping[str, AnyResult]) -> tuple[list[Cell], str]:
        seen[:] = [stored]  # the last call's: every cell, the run's last round's too
        more, why = hook(stored)
        if scn.cut is not None and more and more[0].repeat >= scn.cut:
            return [], "budget"  # the budget's stop before a round (execute/policy.py)
        return more, why

    with tempfile.TemporaryDirectory(prefix="tfv-decide-", dir=SCRATCH) as tmp:
        out = Path(tmp) / "run"
        matrix = Matrix(spec, out)
        matrix.prepare(hosts=[])
        try:
            matrix.run(cells, policy=Policy(next_round=next_round))
        finally:
            # The folder's lock is held until its command ends (the CLI releases it):
            # one process runs thousands of these, so each gives its lock back.
            lock.release(out)
    # The report's comparison of what was stored, at the last look (every round is one);
    # cut by the budget between looks, the report's last look is at every stored round.
    final = rule
    if scn.cut is not None:
        final = dataclasses.replace(rule, looks=(max(map(len, cells.series.values())),))
    at = look_verdicts(spec, seen[0], final, baseline=baseline, settings=hook.settings)
    (wv,) = at.verdicts
    verdict = wv.verdicts.get(ConfigKey(WORKLOAD, UNDER_TEST, 1))
    named = fastest_named(cells.series, hook.settings)
    repeats = len(cells.series[UNDER_TEST])
    if verdict is None:  # a --later A that never started: nothing said about it
        return Run(NOT_RUN, repeats, cells.series, named)
    assert verdict.comparison is not None
    return Run(verdict.comparison, repeats, cells.series, named)


# What a run says of an A that never ran (a --later one whose turn never came): undecided
NOT_RUN = stats.Comparison(stats.Interval(1.0, 1.0, 1.0, "not run"), Verdict.UNDECIDED)


def fastest_named(series: Mapping[str, Rounds], settings: Any) -> str | None:
    """The configuration the report names "the fastest" (conclusions: the one with the
    shortest estimate, when its lead over every other is decided at the family's level),
    or None; the estimate here is its median ratio to the baseline on common rounds."""
    base = series[BASELINE]
    series = {side: values for side, values in series.items() if values}  # a --later unrun

    def speed(side: str) -> float:
        common = set(base) & set(series[side])
        return statistics.median(series[side][r] / base[r] for r in common) if common else 1.0

    best = min(series, key=speed)
    rivals = {side: values for side, values in series.items() if side != best}
    return best if family.lead(series[best], rivals, settings).decided else None


@contextlib.contextmanager
def method(name: str) -> Iterator[None]:
    """Within the block, the product's verdicts compare rounds by ``name``: its own
    "auto" (verdicts.ROUND_METHOD), "paired", "unpaired" (Mann-Whitney on the common
    rounds), or "pooled" (stats.compare on all repeats of each side: not a method the
    product has, the alternative the round methods were chosen against)."""
    real_method, real_statistic = verdicts.ROUND_METHOD, verdicts.statistic

    def pooled(
        base: Mapping[int, float],
        other: Mapping[int, float],
        settings: Any,
        dependence_r: float | None = None,  # the product's; pooled repeats have no rounds
    ) -> stats.Comparison:
        return stats.compare(
            list(other.values()),
            list(base.values()),
            min_effect=settings.min_effect,
            confidence=settings.confidence,
            looks=settings.looks,
            equivalence_band=settings.band,
        )

    if name == "pooled":
        verdicts.statistic = pooled  # type: ignore[assignment]
    else:
        verdicts.ROUND_METHOD = name
    try:
        yield
    finally:
        verdicts.ROUND_METHOD, verdicts.statistic = real_method, real_statistic
