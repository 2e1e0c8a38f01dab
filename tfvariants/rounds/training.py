"""The training task's adaptive rounds (``compare --budget``): which cells the next
round needs (the Matrix loop asks), and the steady window of the rounds after the first
look.

Stateless on purpose: everything is recomputed from the stored results, so a resumed
run continues exactly where it stopped. The data are judged only at the stopping rule's
planned looks (tfvariants.analyze.statistics.adaptive), by the same function the report uses
(tfvariants.analyze.statistics.verdicts); the decision from the verdicts is rounds/decide.py's.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tfvariants.analyze.statistics import adaptive, family, interference, windows
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.analyze.statistics.verdicts import (
    Requested,
    WorkloadVerdicts,
    measured,
    round_values,
    workload_verdicts,
)
from tfvariants.plan.cell import Cell
from tfvariants.plan.spec import MatrixSpec
from tfvariants.rounds.decide import Judged, next_round, same_basis
from tfvariants.store import adaptiveplans
from tfvariants.store.cellresult import AnyResult
from tfvariants.store.training import CellResult, ConfigKey, training


@dataclass(frozen=True)
class Look:
    """The stored rounds as the stopping rule judges them."""

    rounds: int  # rounds stored so far (highest repeat + 1)
    look: int | None  # the last planned look those rounds reached (None: not the first)
    present: Mapping[ConfigKey, frozenset[int]]  # rounds with any file, per configuration
    verdicts: tuple[WorkloadVerdicts, ...]  # at that look: the report's comparison
    # What the verdicts were judged on (rounds/decide.py ``same_basis``): the look, each
    # variant's device, the oversubscribed configurations, every training result before it.
    basis: tuple[Any, ...] = ()
    # The sides "X was the fastest" still waits on, per workload: its leader and the
    # rivals still undecided against it at the family's level (family.open_rivals).
    ranking: tuple[tuple[ConfigKey, ...], ...] = ()

    def judged_as(self, earlier: Look | None) -> bool:
        return earlier is not None and same_basis(self.basis, earlier.basis)


def look_verdicts(
    spec: MatrixSpec,
    stored: Mapping[str, AnyResult],
    rule: adaptive.StoppingRule,
    *,
    baseline: Requested | None,
    settings: Settings,
    earlier: Look | None = None,
) -> Look:
    """The verdicts at the last look reached, by the same function the report uses
    (:func:`tfvariants.analyze.statistics.verdicts.workload_verdicts`) on the repeats up to
    it; ``earlier``'s verdicts when they were judged on the same basis (between looks:
    the rounds after the look change none of them)."""
    planned = [ConfigKey(w, v, t) for w in spec.workloads for v, t in spec.configurations()]
    everything = training(stored.values())
    mine = [r for r in everything if r.key in set(planned)]
    present: dict[ConfigKey, set[int]] = {}
    for r in mine:
        present.setdefault(r.key, set()).add(r.round)
    rounds = max((r.round + 1 for r in mine), default=0)
    looks_done = [n for n in rule.looks if n <= rounds]
    frozen = {k: frozenset(v) for k, v in present.items()}
    if not looks_done:
        return Look(rounds, None, frozen, ())
    look = looks_done[-1]
    devices = {v: str((spec.variant_info.get(v) or {}).get("device", "cpu")) for v in spec.variants}
    devices.update({r.variant: r.device for r in mine})
    over = {(r.variant, r.threads) for r in mine if r.oversubscribed}
    before = (r for r in everything if r.round < look)
    basis = (look, tuple(sorted(devices.items())), frozenset(over), *before)
    at = Look(rounds, look, frozen, (), basis)
    if at.judged_as(earlier):
        assert earlier is not None
        return dataclasses.replace(at, verdicts=earlier.verdicts)
    seen = [r for r in mine if r.round < look]
    # Disturbed cells as the report treats them (the run's policy, over what is stored).
    quiet = interference.summarise(seen, policy=interference.policy_of(spec.options))
    values = round_values(seen, include_disturbed=quiet.included)
    ran = measured(seen)
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
    asked = {k: v for k, v in values.items() if k.variant not in explanatory(spec)}
    ranking = tuple(o for wv in verdicts if (o := open_ranking(wv, asked, settings)))
    return dataclasses.replace(at, verdicts=verdicts, ranking=ranking)


def open_ranking(
    wv: WorkloadVerdicts, values: Mapping[ConfigKey, Mapping[int, float]], settings: Settings
) -> tuple[ConfigKey, ...]:
    """The leader (the shortest estimate against the baseline, as the report ranks)
    and the rivals its "was the fastest" still waits on; () when it waits on none.
    ``values``: the configurations the question is about (a preset's explanatory ones
    and --later's run only once it is answered, so they do not hold the rounds open)."""
    if wv.baseline is None or wv.baseline not in values:
        return ()
    ratio = {wv.baseline: 1.0}
    ratio.update(
        (k, v.comparison.ratio.value)
        for k, v in wv.verdicts.items()
        if v.comparison is not None and k in values
    )
    leader = min(ratio, key=ratio.__getitem__)
    # Only a leader its baseline comparisons already set apart (faster than the baseline,
    # or the baseline ahead of every other): while one of those is open its own rounds
    # run anyway, and a leader by noise alone should not hold the others' rounds open.
    apart = [v for k, v in wv.verdicts.items() if k == leader or leader == wv.baseline]
    if not apart or any(
        v.comparison is None or v.comparison.verdict != Verdict.DIFFERENT for v in apart
    ):
        return ()
    rivals = {k: values[k] for k in ratio if k != leader}
    rest = family.open_rivals(values[leader], {str(k): v for k, v in rivals.items()}, settings)
    return (leader, *(k for k in rivals if str(k) in rest)) if rest else ()


def explanatory(spec: MatrixSpec) -> frozenset[str]:
    """The variants that wait while a comparison the answer is about is open: a
    preset's explanatory ones and the ``later`` ones (--later)."""
    o = spec.options
    return frozenset(o.preset.explanatory if o.preset else ()) | frozenset(o.later or ())


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
        self.settings = Settings.from_options(spec.options, rule.looks)
        configs = spec.configurations()
        self.order = {
            ConfigKey(w, v, t): (spec.workloads.index(w), configs.index((v, t)))
            for w in spec.workloads
            for v, t in configs
        }
        self.clock, self.started, self.spent_before = clock, clock(), spent_before
        self.looks: list[dict[str, Any]] = []
        self.last: Look | None = None  # the last call's look (its verdicts, reused until the next)
        # The steady window of the rounds after the first look (None: not planned): a
        # value of this run, recorded in run.json "adaptive", never written into the spec.
        self.window_plan: adaptiveplans.WindowPlan | None = None
        # Explanatory configurations wait while a comparison the question is about is
        # open; the ``later`` ones (--later) are not even in the first look.
        self.later = frozenset(spec.options.later or ())
        self.explanatory = explanatory(spec)

    def __call__(self, stored: Mapping[str, AnyResult]) -> tuple[list[Cell], str]:
        spec, rule, earlier = self.spec, self.rule, self.last
        at = look_verdicts(
            spec, stored, rule, baseline=self.baseline, settings=self.settings, earlier=earlier
        )
        self.last = at
        # Judged at the looks only: until the next look (or a change before this one),
        # the verdicts and the planned window are the ones made at this look.
        if at.look is not None and not at.judged_as(earlier):
            self._keep(at)
            if spec.options.plan_window:
                self.window_plan = plan_window(spec, stored, rule.looks, at.look)
        open_verdicts = [v for wv in at.verdicts for v in wv.open]
        # Explanatory configurations (a preset's, --later) wait while a comparison the
        # answer is about is open: they must not halve the main comparisons' rounds.
        main = [v for v in open_verdicts if v.config.variant not in self.explanatory]
        if main:
            open_verdicts = main
        # Both sides of every open comparison run again, and with the others settled,
        # each later configuration that has no verdict yet starts beside its baseline.
        waiting = [] if main else self._not_started(at)
        sides = {k for v in open_verdicts for k in (v.config, v.baseline)}
        # The ranking's sentence may wait on a few sides (its leader and closest rivals)
        # whose own comparisons are settled: they run on beside the open ones, so the
        # leader's rounds keep up with its rivals', at the rule's looks.
        ranking = list(at.ranking)
        sides |= {k for r in ranking for k in r}
        active = sorted(sides | {k for pair in waiting for k in pair}, key=self.order.__getitem__)
        judged = Judged(
            at.rounds,
            at.look,
            sum(len(wv.verdicts) for wv in at.verdicts)
            + len(waiting)
            + sum(len(r) - 1 for r in ranking),
            len(open_verdicts) + len(waiting) + sum(len(r) - 1 for r in ranking),
            active,
            at.present,
            self._starts(active, at),
        )
        return next_round(
            judged,
            rule,
            lambda todo: [
                Cell(variant=k.variant, threads=k.threads, workload=k.workload, repeat=rep)
                for k, rep in todo
            ],
            spec.options.order_seed,
            nothing_to_judge=f"no comparison to judge at the look after {at.look} repeats (a "
            "baseline and another configuration both need a successful repeat)",
        )

    def _not_started(self, at: Look) -> list[tuple[ConfigKey, ConfigKey]]:
        """(later configuration, its workload's baseline) for each later configuration
        without a verdict at this look: none of its cells is usable yet."""
        return [
            (k, wv.baseline)
            for wv in at.verdicts
            if wv.baseline is not None
            for k in self.order
            if k.workload == wv.workload and k.variant in self.later and k not in wv.verdicts
        ]

    def _starts(self, active: Sequence[ConfigKey], at: Look) -> dict[ConfigKey, int]:
        """Where each ``later`` configuration's rounds start: its first stored round, or
        the next round when it has none yet (recomputed from the stored cells, so a
        resume starts it where it did). The rounds before are not gaps to fill: they
        would be measured long after the baseline's same rounds, and its comparison
        uses the rounds both sides ran (pairing.compare_rounds)."""
        return {
            k: min(at.present[k], default=at.rounds) if k in at.present else at.rounds
            for k in active
            if k.variant in self.later
        }

    def _keep(self, at: Look) -> None:
        if self.looks and self.looks[-1]["after_repeats"] == at.look:
            return  # the same look again (a round that only filled gaps): keep the first
        verdicts = {
            f"{v.config.workload} {v.config.label} vs {v.baseline.label}": (
                {"verdict": v.comparison.verdict, "ratio": round(v.comparison.ratio.value, 4)}
                if v.comparison is not None
                else {"verdict": Verdict.UNDECIDED, "ratio": None}
            )
            for wv in at.verdicts
            for v in wv.verdicts.values()
        }
        at_s = round(self.spent_before + self.clock() - self.started, 1)
        self.looks.append({"after_repeats": at.look, "at_s": at_s, "verdicts": verdicts})


def plan_window(
    spec: MatrixSpec,
    stored: Mapping[str, AnyResult],
    looks: Sequence[int],
    at_look: int | None = None,
) -> adaptiveplans.WindowPlan:
    """The steady window of the rounds after the first look, from the undisturbed cells
    before it, the ones verdicts use (recomputed from the same cells on a resume, so it
    is the same window); from the second look on (``at_look``), checked per workload
    against the cells it made (:func:`check_plan`)."""
    first_look = looks[0]
    first = [r for r in training(stored.values()) if r.round < first_look and not r.disturbed]
    current = spec.options.min_steady_s
    chosen = windows.plan(windows.components(first), current)
    plan = adaptiveplans.WindowPlan(
        round(chosen.min_steady_s, 2),
        current,
        first_look,
        chosen.reason,
        components=chosen.components.to_json() if chosen.components else None,
        rule=windows.RULE,
    )
    reached = [n for n in looks[1:] if at_look is not None and n <= at_look]
    if chosen.min_steady_s == current or not reached:
        return plan
    usable = [r for r in training(stored.values()) if r.ok and not r.disturbed]
    back, words = check_plan(usable, spec.workloads, [first_look, *reached], current)
    reason = f"{plan.reason}; {words}" if words else plan.reason
    return dataclasses.replace(plan, reason=reason, back=back or None)


def variance_per_second(results: Sequence[CellResult]) -> tuple[float, float] | None:
    """The variance of a cell's log value (what verdicts compare) within a configuration,
    pooled, and the median wall time of a cell: their product is what one unit of
    information costs (Kalibera & Jones' objective). None without two cells of one
    configuration."""
    by: dict[ConfigKey, list[float]] = {}
    walls = [r.wall_s for r in results if r.wall_s is not None and r.wall_s > 0]
    for r in results:
        if r.training_time_s is not None and r.training_time_s > 0:
            by.setdefault(r.key, []).append(math.log(r.training_time_s))
    groups = [xs for xs in by.values() if len(xs) > 1]
    df = sum(len(xs) - 1 for xs in groups)
    if not df or not walls:
        return None
    pooled = sum(statistics.variance(xs) * (len(xs) - 1) for xs in groups) / df
    return pooled, statistics.median(walls)


def check_plan(
    results: Sequence[CellResult],
    workloads: Sequence[str],
    looks: Sequence[int],
    previous_s: float,
) -> tuple[dict[str, adaptiveplans.WindowBack], str]:
    """Per workload, whether the planned window paid: its cells (the rounds from the
    first look to each later look reached, in ``looks``) against the first look's, by
    variance x seconds per cell. The plan assumes the windows of one process
    independent; a slow phase of a few seconds (cifar10_cnn on a quiet 2-core host:
    +22 % for 3-5 s in about one cell in five) covers a short window whole, so a window
    shorter than such phases can cost more than it saves, and only the cells it made
    can tell. A workload whose planned cells cost more at a look goes back to
    ``previous_s`` from that look on; one that keeps the plan is checked again, on more
    cells, at the next look. Stateless: the same cells give the same answer at every
    later look and on a resume."""
    first = looks[0]
    back: dict[str, adaptiveplans.WindowBack] = {}
    said = []
    for w in workloads:
        before = variance_per_second([r for r in results if r.workload == w and r.round < first])
        if before is None or before[0] * before[1] <= 0:
            continue
        last: tuple[int, float] | None = None
        for look in looks[1:]:
            after = variance_per_second(
                [r for r in results if r.workload == w and first <= r.round < look]
            )
            if after is None:
                continue
            last = look, after[0] * after[1] / (before[0] * before[1])
            if last[1] > 1:
                back[w] = adaptiveplans.WindowBack(previous_s, look, round(last[1], 2))
                break
        if last is None:
            continue
        look, ratio = last
        then = f"back to {previous_s:g} s from repeat {look}" if w in back else "kept"
        said.append(f"{w} {ratio:.2f}x at the look after {look} repeats, {then}")
    if not said:
        return back, ""
    return back, (
        "checked per workload (variance x seconds per cell, the planned window against "
        f"{previous_s:g} s): " + "; ".join(said)
    )
