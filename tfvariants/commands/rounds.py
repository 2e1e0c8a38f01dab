"""`compare --budget`: which cells the next adaptive round needs (the Matrix loop asks).

Stateless on purpose: everything is recomputed from the stored results, so a resumed
run continues exactly where it stopped. The data are judged only at the stopping
rule's planned looks (tfvariants.analyze.adaptive); between looks the configurations
that were undecided at the last look keep running.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.analyze import adaptive, interference, stats, windows
from tfvariants.analyze.decide import Settings
from tfvariants.analyze.verdicts import (
    Requested,
    WorkloadVerdicts,
    measured,
    round_values,
    workload_verdicts,
)
from tfvariants.commands import argtypes
from tfvariants.errors import UserError
from tfvariants.execute.priority import DEFAULT as PRIORITY_DEFAULT
from tfvariants.execute.priority import PRIORITIES
from tfvariants.plan.cell import Cell
from tfvariants.plan.spec import MatrixSpec, round_order
from tfvariants.store.cellresult import AnyResult, ConfigKey, training

if TYPE_CHECKING:
    from rich.console import Console

    from tfvariants.analyze.frame import RunFrame
    from tfvariants.execute.matrix import MatrixOutcome

QUICK_BUDGET_S = 600.0  # --quick without --budget: 10 minutes
# --quick steady window up to the first look: seconds, steps. 6 s: about half of a quick
# cell's wall time once its fixed costs (import, trace, warm-up, epoch boundaries: ~5-6 s
# on 2 quiet cores) are paid, and still about twice the window the first look's variance
# split chose on quiet cores (K* = 1.6 windows of 2 s: docs/compare.md).
QUICK_WINDOW = (6.0, 50)
FULL_WINDOW = (10.0, 100)


def add_options(p: argparse.ArgumentParser) -> None:
    """compare's measurement and decision options."""
    p.add_argument("--budget", type=argtypes.duration, default=None, metavar="DURATION",
                   help="adaptive repeats: after --repeats rounds, keep running rounds of the "
                   "undecided comparisons until decided, --max-repeats, or this much time for "
                   "the whole run (e.g. 10m; default with --quick: 10m)")  # fmt: skip
    p.add_argument("--max-repeats", type=argtypes.repeats, default=None,
                   help="with --budget: at most this many repeats (default 20)")  # fmt: skip
    p.add_argument("--min-steady-s", type=argtypes.positive_float, default=None,
                   help="seconds of steady-state steps each cell measures after its warm-up "
                   "(default 10, also with --quick; not given, the adaptive rounds after "
                   "the first look measure a window planned from the first rounds)")  # fmt: skip
    p.add_argument("--min-steady-steps", type=argtypes.positive_int, default=None,
                   help="steady-state steps each cell measures after its warm-up (default 100; "
                   "--quick 50)")  # fmt: skip
    p.add_argument("--min-effect", type=argtypes.min_effect, default=None,
                   help="smallest difference that matters, e.g. 5%% (default): smaller ones "
                   "are 'equivalent'")  # fmt: skip
    p.add_argument(
        "--equivalence-band",
        type=argtypes.equivalence_band,
        default=None,
        help="'equivalent' means the interval lies within +/- this (default 5%%, or "
        "--min-effect when larger)",
    )
    p.add_argument("--confidence", type=argtypes.confidence, default=None,
                   help="confidence of the intervals, above 0.5 and at most 0.9999 (default 0.95)")  # fmt: skip
    add_interference_options(p)
    p.add_argument("--order-seed", type=argtypes.seed, default=None,
                   help="seed of each round's random order of configurations (default: drawn "
                   "for a new run and stored in run.json; a resume keeps it)")  # fmt: skip


def add_interference_options(p: argparse.ArgumentParser) -> None:
    """Waiting for quiet, and what counts as a disturbed cell (docs/compare.md)."""
    p.add_argument("--quiet-share", type=argtypes.fraction, default=None,
                   help="before each cell, wait until other processes used at most this share "
                   f"of its CPUs over the last second (default {interference.QUIET_SHARE * 100:.0f}%%)")  # fmt: skip
    p.add_argument("--quiet-wait", type=argtypes.wait, default=None, metavar="DURATION",
                   help="the longest wait for quiet before a cell; then it runs anyway, and "
                   f"says so (default {interference.QUIET_WAIT_S:g}s; 0: do not wait)")  # fmt: skip
    p.add_argument("--disturbed-share", type=argtypes.fraction, default=None,
                   help="a cell whose others' (or steal) share of its CPUs was above this is "
                   "disturbed: kept, listed, left out of the verdicts, and run again "
                   f"(default {interference.DISTURBED_SHARE * 100:.0f}%%)")  # fmt: skip
    p.add_argument("--shielded-share", type=argtypes.fraction, default=None,
                   help="a worker at raised priority (--priority) takes its CPU back when it "
                   "wants it, so it is disturbed when its threads waited for a CPU more than "
                   f"this share of the time (default {interference.SHIELDED_SHARE * 100:.0f}%%)")  # fmt: skip
    p.add_argument("--disturbed-retries", type=argtypes.retries, default=None,
                   help="attempts after a disturbed one, per cell, within the budget "
                   f"(default {interference.DISTURBED_RETRIES})")  # fmt: skip
    p.add_argument("--priority", choices=PRIORITIES, default=None,
                   help="raised (default): each worker's session at nice -20 where permitted "
                   "(root or CAP_SYS_NICE), so a background job cannot take its CPUs; "
                   "normal: as started. Each cell records what it got")  # fmt: skip
    add_disturbed_policy(p)


def add_disturbed_policy(p: argparse.ArgumentParser) -> None:
    p.add_argument("--disturbed", choices=interference.POLICIES, default=None,
                   help="disturbed cells in the verdicts: exclude, include, or auto (default: "
                   "excluded unless most cells of the run were disturbed)")  # fmt: skip


def options_from(
    args: argparse.Namespace, given_or_stored: Any, *, quick: bool, repeats: int
) -> dict:
    """The steady window, decision settings and budget, from args or the stored run."""
    window = QUICK_WINDOW if quick else FULL_WINDOW
    o: dict[str, Any] = {
        "min_steady_s": given_or_stored("min_steady_s", args.min_steady_s, argtypes.positive_float, window[0]),
        "min_steady_steps": given_or_stored("min_steady_steps", args.min_steady_steps, argtypes.positive_int, window[1]),
        "min_effect": given_or_stored("min_effect", args.min_effect, argtypes.min_effect, stats.MIN_EFFECT),
        "confidence": given_or_stored("confidence", args.confidence, argtypes.confidence, stats.CONFIDENCE),
        "equivalence_band": given_or_stored("equivalence_band", args.equivalence_band,
                                            argtypes.equivalence_band, None),
        "budget_s": given_or_stored("budget_s", args.budget, argtypes.duration, QUICK_BUDGET_S if quick else None),
        "max_repeats": given_or_stored("max_repeats", args.max_repeats, argtypes.repeats,
                                       max(adaptive.DEFAULT_MAX_REPEATS, repeats)),
        "quiet_share": given_or_stored("quiet_share", args.quiet_share, argtypes.fraction, interference.QUIET_SHARE),
        "quiet_wait_s": given_or_stored("quiet_wait_s", args.quiet_wait, argtypes.wait, interference.QUIET_WAIT_S),
        "disturbed_share": given_or_stored("disturbed_share", args.disturbed_share, argtypes.fraction, interference.DISTURBED_SHARE),
        "shielded_share": given_or_stored("shielded_share", args.shielded_share, argtypes.fraction, interference.SHIELDED_SHARE),
        "disturbed_retries": given_or_stored("disturbed_retries", args.disturbed_retries, argtypes.retries, interference.DISTURBED_RETRIES),
        "disturbed_policy": given_or_stored("disturbed_policy", args.disturbed, str, "auto"),
        "priority": given_or_stored("priority", args.priority, str, PRIORITY_DEFAULT),
        "order_seed": given_or_stored("order_seed", args.order_seed, argtypes.seed, None),
        # A window the user chose stays; else the adaptive rounds' window is planned from
        # the first look's variance components (tfvariants.analyze.windows).
        "plan_window": given_or_stored("plan_window", None, bool, args.min_steady_s is None),
    }  # fmt: skip
    if o["order_seed"] is None:
        from tfvariants.plan.spec import new_order_seed

        o["order_seed"] = new_order_seed()
    if o["priority"] not in PRIORITIES:
        raise UserError(f"run.json: options.priority {o['priority']!r} is not raised or normal")
    if o["max_repeats"] < repeats:
        raise UserError(f"--max-repeats {o['max_repeats']} is below --repeats {repeats}")
    return o


def adaptive_hook(
    spec: MatrixSpec, baseline: str | None, console: Console, spent_before: float = 0.0
) -> tuple[NextRoundHook | None, adaptive.StoppingRule | None]:
    """(next_round, rule) when the run has a budget, else (None, None)."""
    from tfvariants.analyze.analysis import parse_baseline

    budget_s = spec.options.get("budget_s")
    if not budget_s:
        return None, None
    rule = adaptive.stopping_rule(
        spec.repeats, int(spec.options["max_repeats"]),
        confidence=float(spec.options["confidence"]),
    )  # fmt: skip
    hook = NextRoundHook(
        spec, rule, baseline=parse_baseline(baseline),
        min_effect=spec.options["min_effect"], confidence=spec.options["confidence"],
        spent_before=spent_before,
        equivalence_band=spec.options.get("equivalence_band"),
    )  # fmt: skip
    console.print(
        f"adaptive: looks after {', '.join(map(str, rule.looks))} repeats; more rounds only "
        f"while a comparison is undecided, within a budget of {budget_s / 60:.3g} min",
        highlight=False,
    )
    return hook, rule


def record(out: Path, rule: adaptive.StoppingRule, spec: MatrixSpec, before: dict[str, Any],
           outcome: MatrixOutcome, console: Console,
           hook: NextRoundHook | None = None) -> None:  # fmt: skip
    """run.json's "adaptive": the rule, the budget, every round and look so far, why it
    stopped."""
    from tfvariants.store.rundir import update_run

    looks = list(before.get("looks_made") or []) + (hook.looks if hook is not None else [])
    update_run(out, adaptive={
        **rule.to_json(), "budget_s": spec.options.get("budget_s"),
        "rounds": list(before.get("rounds") or []) + outcome.rounds,
        "looks_made": looks,
        "stopped": outcome.stopped, "spent_s": round(outcome.spent_s, 1),
        "window_plan": spec.options.get("window_plan") or before.get("window_plan"),
    })  # fmt: skip
    if outcome.stopped:
        console.print(
            f"adaptive repeats stopped: {outcome.stopped}; the report uses every stored "
            "repeat, so its verdicts may be firmer than those at the last look",
            highlight=False,
            markup=False,
        )


def quiet_gate(spec: Any) -> Any:
    """The wait for quiet before each cell, with the run's settings (None: no wait)."""
    from tfvariants.execute.quiet import QuietGate

    wait_s = float(spec.options.get("quiet_wait_s") or 0.0)
    if wait_s <= 0:
        return None
    return QuietGate(
        limit=float(spec.options["quiet_share"]),
        max_wait_s=wait_s,
        disturbed=interference.rule_of(spec.options),
    )


def retry_options(spec: Any, gate: Any = None) -> dict[str, Any]:
    """Matrix.run's disturbed-cell settings: the one classification, the retry count, and
    no retries while the gate finds the load sustained (they would be disturbed too)."""
    return {
        "disturbed": interference.rule_of(spec.options),
        "retries": int(spec.options.get("disturbed_retries") or 0),
        "retry_now": (lambda: not gate.sustained) if gate is not None else None,
    }


def print_disturbed(outcome: Any, console: Any) -> None:
    """How many cells run now were disturbed, what was run again, and what was not."""
    from tfvariants.execute.matrix import RETRY_MISSES

    if not outcome.disturbed:
        return
    text = (
        f"{len(outcome.disturbed)} cell(s) disturbed by other processes (kept; the report "
        f"says whether the verdicts use them); {outcome.retried} attempt(s) run again"
    )
    if outcome.retries_left_out:
        text += (
            f", {outcome.retries_left_out} not run again (retries or budget used up, or a "
            "sustained load)"
        )
    if outcome.retries_stopped:
        text += (
            f"; retries stopped for {outcome.retries_stopped} of them because "
            f"{RETRY_MISSES} retries in a row were disturbed again (the interference "
            "outlasts a cell; an undisturbed cell turns retries back on)"
        )
    console.print(text, highlight=False, markup=False)


def summary(analysis: RunFrame, out: Path, console: Console) -> None:
    """The first conclusions per workload, the host's noise, what stayed undecided."""
    from tfvariants.analyze.analysis import Analysis

    if not isinstance(analysis, Analysis):
        return  # no training cells to sum up
    for w in analysis.workloads:
        console.print(f"  {w.name}:", highlight=False, markup=False)  # "GPU vs ..." names none
        for line in w.conclusions[:2]:
            console.print(f"    {line}", highlight=False, markup=False)
    if analysis.noise is not None:
        console.print(f"  {analysis.noise.sentence()}", highlight=False, markup=False)
        # A busy machine's caveats belong beside the ratios they qualify, not only in the
        # report (a "shielded busy" speed-up may be understated).
        for caution in analysis.noise.warnings:
            console.print(f"  caution: {caution.message}", highlight=False, markup=False)
    quiet = getattr(analysis, "interference", None)
    if quiet is not None and quiet.cells:
        console.print(f"  {quiet.sentence()}", highlight=False, markup=False)
    undecided = [
        f"{w.name} {g.label}"
        for w in analysis.workloads
        for g in w.groups
        if g.time_cmp is not None and g.time_cmp.verdict == "undecided"
    ]
    if undecided:
        console.print(
            f"  undecided against the baseline: {', '.join(undecided)} (the report says about "
            f"how many more repeats would decide; continue with: tfvariants compare --resume "
            f"--out {out} --budget 10m)",
            highlight=False,
            markup=False,
        )


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
    (:func:`tfvariants.analyze.verdicts.workload_verdicts`) on the repeats up to it."""
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

    def __init__(self, spec: MatrixSpec, rule: adaptive.StoppingRule, *,
                 baseline: Requested | None, min_effect: float, confidence: float,
                 spent_before: float = 0.0, clock: Callable[[], float] = time.monotonic,
                 equivalence_band: float | None = None) -> None:  # fmt: skip
        self.spec, self.rule, self.baseline = spec, rule, baseline
        self.settings = Settings(min_effect, confidence, rule.looks, equivalence_band)
        configs = spec.configurations()
        self.order = {
            ConfigKey(w, v, t): (spec.workloads.index(w), configs.index((v, t)))
            for w in spec.workloads
            for v, t in configs
        }
        self.clock, self.started, self.spent_before = clock, clock(), spent_before
        self.looks: list[dict[str, Any]] = []

    def __call__(self, stored: Mapping[str, AnyResult]) -> tuple[list[Cell], str]:
        spec, rule = self.spec, self.rule
        at = look_verdicts(spec, stored, rule, baseline=self.baseline, settings=self.settings)
        if at.look is None:
            return [], f"only {at.rounds} round(s) stored, fewer than the first look"
        self._keep(at)
        if spec.options.get("plan_window"):
            plan_window(spec, stored, rule.looks[0])
        open_verdicts = [v for wv in at.verdicts for v in wv.open]
        if not any(wv.verdicts for wv in at.verdicts):
            return [], (
                f"no comparison to judge at the look after {at.look} repeats (a baseline and "
                "another configuration both need a successful repeat)"
            )
        if not open_verdicts:
            return [], f"every comparison was decided by the look after {at.look} repeats"
        if at.rounds >= rule.max_repeats:
            return [], (
                f"{len(open_verdicts)} comparison(s) still undecided after the maximum of "
                f"{rule.max_repeats} repeats"
            )
        # Both sides of every open comparison run again.
        active = sorted({k for v in open_verdicts for k in (v.config, v.baseline)},
                        key=self.order.__getitem__)  # fmt: skip
        # An interrupted round is completed before a new one starts.
        gaps = [(k, rep) for k in active for rep in range(at.rounds)
                if rep not in at.present.get(k, ())]  # fmt: skip
        todo = gaps or [(k, at.rounds) for k in active]
        cells = [Cell(variant=k.variant, threads=k.threads, workload=k.workload, repeat=rep)
                 for k, rep in todo]  # fmt: skip
        cells = round_order(cells, spec.options.get("order_seed"), todo[0][1])
        return cells, (
            f"{len(open_verdicts)} comparison(s) undecided at the look after {at.look} repeats"
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


def plan_window(spec: MatrixSpec, stored: Mapping[str, AnyResult], first_look: int) -> None:
    """The steady window of the rounds after the first look, from the undisturbed cells
    before it, the ones verdicts use (recomputed from the same cells on a resume, so it
    is the same window)."""
    first = [r for r in training(stored.values()) if r.round < first_look and not r.disturbed]
    current = float(spec.options["min_steady_s"])
    chosen = windows.plan(windows.components(first), current)
    spec.options["window_plan"] = {**chosen.to_json(), "from_repeat": first_look}
