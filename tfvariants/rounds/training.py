"""The training task's adaptive rounds (``compare --budget``): which cells the next
round needs (the Matrix loop asks), and the steady window of the rounds after the first
look.

Stateless on purpose: everything is recomputed from the stored results, so a resumed
run continues exactly where it stopped. The data are judged only at the stopping rule's
planned looks (tfvariants.analyze.statistics.adaptive), by the same function the report uses
(tfvariants.analyze.statistics.verdicts); the decision from the verdicts is rounds/decide.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tfvariants.analyze.statistics import adaptive, interference, windows
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.verdicts import (
    Requested,
    WorkloadVerdicts,
    measured,
    round_values,
    workload_verdicts,
)
from tfvariants.options import decision
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.cell import Cell
from tfvariants.plan.spec import MatrixSpec
from tfvariants.rounds.decide import Judged, next_round
from tfvariants.store.cellresult import AnyResult, ConfigKey, training


@dataclass(frozen=True)
class Look:
    """The stored rounds as the stopping rule judges them."""

    rounds: int  # rounds stored so far (highest repeat + 1)
    look: int | None  # the last planned look those rounds reached (None: not the first)
    present: Mapping[ConfigKey, frozenset[int]]  # rounds with any file, per configuration
    verdicts: tuple[WorkloadVerdicts, ...]  # at that look: the report's comparison


def look_verdicts(
    spec: MatrixSpec,
    stored: Mapping[str, AnyResult],
    rule: adaptive.StoppingRule,
    *,
    baseline: Requested | None,
    settings: Settings,
) -> Look:
    """The verdicts at the last look reached, by the same function the report uses
    (:func:`tfvariants.analyze.statistics.verdicts.workload_verdicts`) on the repeats up to it."""
    planned = [ConfigKey(w, v, t) for w in spec.workloads for v, t in spec.configurations()]
    mine = [r for r in training(stored.values()) if r.key in set(planned)]
    present: dict[ConfigKey, set[int]] = {}
    for r in mine:
        present.setdefault(r.key, set()).add(r.round)
    rounds = max((r.round + 1 for r in mine), default=0)
    looks_done = [n for n in rule.looks if n <= rounds]
    frozen = {k: frozenset(v) for k, v in present.items()}
    if not looks_done:
        return Look(rounds, None, frozen, ())
    look = looks_done[-1]
    seen = [r for r in mine if r.round < look]
    # Disturbed cells as the report treats them (the run's policy, over what is stored).
    quiet = interference.summarise(seen, policy=interference.policy_of(spec.options))
    values = round_values(seen, include_disturbed=quiet.included)
    ran = measured(seen)
    devices = {v: str((spec.variant_info.get(v) or {}).get("device", "cpu")) for v in spec.variants}
    devices.update({r.variant: r.device for r in mine})
    over = {(r.variant, r.threads) for r in mine if r.oversubscribed}
    verdicts = tuple(
        workload_verdicts(
            [k for k in planned if k.workload == w],
            values,
            settings,
            devices=devices,
            variant_order=spec.variants,
            oversubscribed=over,
            requested=baseline,
            ran=ran,
        )
        for w in spec.workloads
    )
    return Look(rounds, look, frozen, verdicts)


class NextRoundHook:
    """The adaptive rounds' ``next_round``: judges the stored rounds at the last look
    reached and returns the next round's cells (none: stop, and why). Each look it makes
    is kept in ``looks`` (run.json "adaptive.looks_made"): after how many repeats, when
    (seconds of this run's compare time), and every comparison's verdict then, so a
    reader can tell when each comparison was decided."""

    def __init__(
        self,
        spec: MatrixSpec,
        rule: adaptive.StoppingRule,
        *,
        baseline: Requested | None,
        spent_before: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec, self.rule, self.baseline = spec, rule, baseline
        # The run's decision settings by the one reader the report uses, at the rule's looks.
        self.settings = decision.settings(spec.options, rule.looks)
        configs = spec.configurations()
        self.order = {
            ConfigKey(w, v, t): (spec.workloads.index(w), configs.index((v, t)))
            for w in spec.workloads
            for v, t in configs
        }
        self.clock, self.started, self.spent_before = clock, clock(), spent_before
        self.looks: list[dict[str, Any]] = []
        # The steady window of the rounds after the first look (None: not planned): a
        # value of this run, recorded in run.json "adaptive", never written into the spec.
        self.window_plan: dict[str, Any] | None = None
        preset = TrainingOptions.of(spec.options).preset or {}
        self.explanatory = frozenset(preset.get("explanatory") or ())

    def __call__(self, stored: Mapping[str, AnyResult]) -> tuple[list[Cell], str]:
        spec, rule = self.spec, self.rule
        at = look_verdicts(spec, stored, rule, baseline=self.baseline, settings=self.settings)
        if at.look is not None:
            self._keep(at)
            if TrainingOptions.of(spec.options).plan_window:
                self.window_plan = plan_window(spec, stored, rule.looks[0])
        open_verdicts = [v for wv in at.verdicts for v in wv.open]
        # A preset's explanatory configurations wait while a comparison its answer is
        # about is open: they must not halve the main comparisons' rounds.
        main = [v for v in open_verdicts if v.config.variant not in self.explanatory]
        if main:
            open_verdicts = main
        # Both sides of every open comparison run again.
        active = sorted(
            {k for v in open_verdicts for k in (v.config, v.baseline)}, key=self.order.__getitem__
        )
        judged = Judged(
            at.rounds,
            at.look,
            sum(len(wv.verdicts) for wv in at.verdicts),
            len(open_verdicts),
            active,
            at.present,
        )
        return next_round(
            judged,
            rule,
            lambda todo: [
                Cell(variant=k.variant, threads=k.threads, workload=k.workload, repeat=rep)
                for k, rep in todo
            ],
            TrainingOptions.of(spec.options).order_seed,
            nothing_to_judge=f"no comparison to judge at the look after {at.look} repeats (a "
            "baseline and another configuration both need a successful repeat)",
        )

    def _keep(self, at: Look) -> None:
        if self.looks and self.looks[-1]["after_repeats"] == at.look:
            return  # the same look again (a round that only filled gaps): keep the first
        verdicts = {
            f"{v.config.workload} {v.config.variant}@{v.config.threads} vs "
            f"{v.baseline.variant}@{v.baseline.threads}": (
                {"verdict": v.comparison.verdict, "ratio": round(v.comparison.ratio.value, 4)}
                if v.comparison is not None
                else {"verdict": "undecided", "ratio": None}
            )
            for wv in at.verdicts
            for v in wv.verdicts.values()
        }
        at_s = round(self.spent_before + self.clock() - self.started, 1)
        self.looks.append({"after_repeats": at.look, "at_s": at_s, "verdicts": verdicts})


def plan_window(
    spec: MatrixSpec, stored: Mapping[str, AnyResult], first_look: int
) -> dict[str, Any]:
    """The steady window of the rounds after the first look, from the undisturbed cells
    before it, the ones verdicts use (recomputed from the same cells on a resume, so it
    is the same window)."""
    first = [r for r in training(stored.values()) if r.round < first_look and not r.disturbed]
    current = TrainingOptions.of(spec.options).min_steady_s
    chosen = windows.plan(windows.components(first), current)
    return {**chosen.to_json(), "from_repeat": first_look}
