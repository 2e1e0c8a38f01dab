"""`compare`'s run options (resolved into TrainingOptions: given, stored, or the
quick-scale defaults), the adaptive rounds' set-up and record (the hook itself:
tfvariants/rounds/training.py), the wait for quiet and the disturbed-cell retries, and
the closing summary."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.analyze.statistics import adaptive, interference
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.errors import UserError
from tfvariants.execute.eta import fmt_s
from tfvariants.options import declare
from tfvariants.options.decision import DecisionOptions
from tfvariants.options.training import COMPARE_DECISION, INTERFERENCE, TrainingOptions
from tfvariants.plan.spec import MatrixSpec
from tfvariants.plan.task import MatrixPlan, PlannedCell
from tfvariants.rounds.training import NextRoundHook
from tfvariants.store.record import AdaptiveRecord, RunRecord

if TYPE_CHECKING:
    from rich.console import Console

    from tfvariants.analyze.report.answer import Answer
    from tfvariants.analyze.shared.frame import RunFrame
    from tfvariants.analyze.training.design import Design
    from tfvariants.execute.matrix import MatrixOutcome
    from tfvariants.execute.quiet import QuietGate

QUICK_BUDGET_S = 600.0  # --quick without --budget: 10 minutes
# --quick steady window up to the first look: seconds, steps. 6 s: about half of a quick
# cell's wall time once its fixed costs (import, trace, warm-up, epoch boundaries: ~5-6 s
# on 2 quiet cores) are paid, and still about twice the window the first look's variance
# split chose on quiet cores (K* = 1.6 windows of 2 s: docs/methods.md).
QUICK_WINDOW = (6.0, 50)
FULL_WINDOW = (10.0, 100)


def add_options(p: argparse.ArgumentParser) -> None:
    """compare's measurement and decision options (declared in options/training.py)."""
    declare.add_arguments(
        p,
        TrainingOptions,
        ("budget_s", *COMPARE_DECISION),
        default_words={
            "budget_s": "off; --quick 10m",
            "min_steady_s": "10, also with --quick; not given, the adaptive rounds after the first "
            "look measure a window planned from the first rounds",
            "min_steady_steps": "100; --quick 50",
        },
    )
    add_interference_options(p)
    declare.add_arguments(p, TrainingOptions, ("order_seed",))


def add_interference_options(p: argparse.ArgumentParser) -> None:
    """Waiting for quiet, and what counts as a disturbed cell (docs/methods.md)."""
    declare.add_arguments(p, TrainingOptions, INTERFERENCE)
    add_disturbed_policy(p)


def add_disturbed_policy(p: argparse.ArgumentParser) -> None:
    declare.add_arguments(p, DecisionOptions, ("disturbed_policy",))


def training_options(
    args: argparse.Namespace,
    stored: RunRecord,
    *,
    repeats: int,
    per_workload: dict[str, dict[str, int]] | None = None,
    preset: Mapping[str, Any] | None = None,
) -> TrainingOptions:
    """The run's options: given, else the stored run's (a resume), else the ``preset``
    layer's (commands/presets.py ``apply``), else the defaults (the steady window and the
    budget depend on --quick)."""
    sopts = stored.options_as_stored()  # a resume's layer: only what run.json holds
    layer = preset or {}
    before = stored.options if isinstance(stored.options, TrainingOptions) else None
    quick = bool(args.quick or (before is not None and before.quick) or layer.get("quick"))
    window = QUICK_WINDOW if quick else FULL_WINDOW
    given = {n: getattr(args, n, None) for n in declare.declared(TrainingOptions)}
    # (--preset names a preset; the options hold its record: the layer's or the stored one)
    given.update(quick=quick, per_workload=per_workload, preset=None)
    duet = bool(getattr(args, "duet", False))
    if duet and before is not None and not before.duet:
        raise UserError(
            "--duet: this run's cells were measured one at a time; a resume cannot change that"
        )
    given["duet"] = duet or None
    fallback = {
        "min_steady_s": window[0],
        "min_steady_steps": window[1],
        "budget_s": QUICK_BUDGET_S if quick else None,
        "max_repeats": max(adaptive.DEFAULT_MAX_REPEATS, repeats),
        # A window the user chose stays; else the adaptive rounds' window is planned from
        # the first look's variance components (tfvariants.analyze.statistics.windows).
        "plan_window": args.min_steady_s is None,
    }
    values = declare.resolve(TrainingOptions, given, sopts, fallback, layer)
    if before is not None:  # a resume: a kept option stays (a rejudged one: store/rundir.py)
        declare.kept_changes(TrainingOptions, given, values, before)
    if layer.get("preset") is not None:  # a new preset run: the settings it resolved
        from tfvariants.commands.presets import with_settings

        band, effect = values["equivalence_band"], values["min_effect"]
        values["preset"] = with_settings(values["preset"], band, effect)
    if values["order_seed"] is None:
        from tfvariants.plan.spec import new_order_seed

        values["order_seed"] = new_order_seed()
    if values["max_repeats"] < repeats:
        raise UserError(f"--max-repeats {values['max_repeats']} is below --repeats {repeats}")
    return TrainingOptions(**values)


def adaptive_hook(
    spec: MatrixSpec, baseline: str | None, console: Console, spent_before: float = 0.0
) -> tuple[NextRoundHook | None, adaptive.StoppingRule | None]:
    """(next_round, rule) when the run has a budget, else (None, None)."""
    from tfvariants.analyze.baseline import parse_baseline

    o = spec.options
    if not o.budget_s:
        return None, None
    rule = stopping_rule(spec, console)
    hook = NextRoundHook(
        spec,
        rule,
        baseline=parse_baseline(baseline),
        spent_before=spent_before,
    )
    return hook, rule


def stopping_rule(
    spec: MatrixPlan[PlannedCell, DecisionOptions], console: Console
) -> adaptive.StoppingRule:
    """The adaptive rounds' stopping rule of a run with a budget (training and serving
    alike), said on the console."""
    o = spec.options
    max_repeats = o.max_repeats or max(adaptive.DEFAULT_MAX_REPEATS, spec.repeats)
    rule = adaptive.stopping_rule(spec.repeats, max_repeats, confidence=o.confidence)
    console.print(
        f"adaptive: looks after {', '.join(map(str, rule.looks))} repeats; more rounds only "
        f"while a comparison is undecided, within a budget of {(o.budget_s or 0) / 60:.3g} min",
        highlight=False,
    )
    return rule


def record(
    out: Path,
    rule: adaptive.StoppingRule,
    spec: MatrixPlan[PlannedCell, DecisionOptions],
    before: AdaptiveRecord | None,
    outcome: MatrixOutcome,
    console: Console,
    hook: NextRoundHook | None = None,
    design: Design | None = None,
) -> None:
    """run.json's "adaptive": the rule, the budget, every round and look so far, why it
    stopped, the design chosen at the first look (commands/design.py). A stop at the last
    look gets its next step once the report has its figure (:func:`last_look_next`)."""
    from tfvariants.store.rundir import update_run

    # what a resumed run recorded before (typed at the store), then this command's
    looks = [dict(x) for x in before.looks_made] if before is not None else []
    looks += hook.looks if hook is not None else []
    plan = hook.window_plan if hook is not None else None
    plan = plan or (before.window_plan if before is not None else None)
    done = [dict(r) for r in before.rounds] if before is not None else []
    update_run(
        out,
        adaptive={
            **rule.to_json(),
            "budget_s": spec.options.budget_s,
            "rounds": done + outcome.rounds,
            "looks_made": looks,
            "stopped": outcome.stopped,
            "spent_s": round(outcome.spent_s, 1),
            "window_plan": plan.to_json() if plan is not None else None,
            "design": design.to_json()
            if design is not None
            else (before.design if before is not None else None),
        },
    )
    if outcome.stopped:
        console.print(
            f"adaptive repeats stopped: {outcome.stopped}; the report uses every stored "
            "repeat, so its verdicts may be firmer than those at the last look",
            highlight=False,
            markup=False,
        )


def last_look_next(frame: RunFrame, answer: Answer | None, console: Console) -> None:
    """A run stopped undecided at its planned last look: the next step in full (a new
    run, not a --resume), with the --max-repeats the answer's next step gives (one rule,
    adaptive.last_look_repeats, on the answer's comparisons: no answer, none of them)."""
    last = adaptive.last_look_of(frame.run.adaptive)
    if last is None:
        return
    needed = answer.needed_more if answer is not None else None
    step = adaptive.last_look_next(needed, last)
    console.print(f"at the last look ({last} repeats), next: {step}", highlight=False, markup=False)


def quiet_gate(spec: MatrixSpec) -> QuietGate | None:
    """The wait for quiet before each cell, with the run's settings (None: no wait)."""
    from tfvariants.execute.quiet import QuietGate

    o = spec.options
    wait_s = o.quiet_wait_s or 0.0
    if wait_s <= 0:
        return None
    return QuietGate(
        limit=o.quiet_share,
        max_wait_s=wait_s,
        disturbed=interference.rule_of(spec.options),
        budget_s=o.budget_s,  # the waits take at most a share of it
    )


def retry_options(spec: MatrixSpec, gate: QuietGate | None = None) -> dict[str, Any]:
    """The loop policy's disturbed-cell settings (execute.policy.Policy): the one
    classification, the retry count, and no retries while the gate finds the load
    sustained (they would be disturbed too)."""
    return {
        "disturbed": interference.rule_of(spec.options),
        "retries": spec.options.disturbed_retries or 0,
        "retry_now": (lambda: not gate.sustained) if gate is not None else None,
    }


def print_disturbed(outcome: MatrixOutcome, console: Console) -> None:
    """How many cells run now were disturbed, what was run again, and what was not."""
    from tfvariants.execute.policy import RETRY_MISSES

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
    from tfvariants.analyze.training.analysis import Analysis

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
        if analysis.noise.duet:
            console.print(f"  {analysis.noise.duet}", highlight=False, markup=False)
    quiet = getattr(analysis, "interference", None)
    if quiet is not None and quiet.cells:
        console.print(f"  {quiet.sentence()}", highlight=False, markup=False)
    undecided = [
        f"{w.name} {g.label}"
        for w in analysis.workloads
        for g in w.groups
        if g.time_cmp is not None and g.time_cmp.verdict == Verdict.UNDECIDED
    ]
    if undecided:
        stopped = analysis.run.adaptive.stopped if analysis.run.adaptive else None
        reach = (stopped or "").partition("to reach it, ")[2]
        if adaptive.at_last_look(stopped):  # more budget would not help: last_look_next said why
            step = "the run reached its last look: see 'next' above"
        elif reach:  # stopped at the budget before the first look: the command that reaches it
            step = f"the first look was not reached; continue with: {reach}"
        else:
            step = f"continue with: tfvariants compare --resume --out {out} --budget 10m"
        console.print(
            f"  undecided against the baseline: {', '.join(undecided)} (the report says about "
            f"how many more repeats would decide; {step})",
            highlight=False,
            markup=False,
        )


def resume_command(argv: Sequence[str], out: Path) -> str:
    """The command line that continues this run, before its ``--budget``: the same
    arguments, with ``--resume --out OUT`` in place of any given."""
    import shlex

    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--budget", "--out"):
            skip = True
        elif arg != "--resume" and not arg.startswith(("--budget=", "--out=")):
            kept.append(arg)
    return "tfvariants " + shlex.join([*kept, "--resume", "--out", str(out)])


def said_probes(budget_s: float | None, seconds: float, console: Console) -> None:
    """What the checks, probes and census before the first cell took of the budget (they
    count in it: the budget is the whole command's time)."""
    if budget_s:
        console.print(
            f"probes and census: {fmt_s(seconds)} of the {fmt_s(budget_s)} budget",
            highlight=False,
            markup=False,
        )


def announce(spec: MatrixSpec, out: Path, moved: list[str], console: Console) -> None:
    """What the folder's checks moved aside, and the matrix about to run."""
    from rich.markup import escape

    for line in moved:
        console.print(f"[yellow]quarantined[/] {escape(line)}", highlight=False)
    configs = spec.configurations()
    cells = len(configs) * len(spec.workloads) * spec.repeats
    fixed = "".join(f"; {v} at {t} threads only" for v, t in spec.fixed_threads.items())
    console.print(
        f"[bold]compare[/]: {len(configs)} configuration(s) ({len(spec.variants)} variant(s), "
        f"threads {','.join(map(str, spec.threads))}{fixed}) x {len(spec.workloads)} "
        f"workload(s) x {spec.repeats} repeat(s) = {cells} cells -> {escape(str(out))}",
        highlight=False,
    )


def print_outcome(outcome: MatrixOutcome, console: Console) -> None:
    """The cells' statuses after the matrix ran, and the first problems."""
    from rich.markup import escape

    ok, skipped = outcome.count("ok"), outcome.count("skipped")
    failed, timeout = outcome.count("failed"), outcome.count("timeout")
    console.print(
        f"{ok} ok, {failed} failed, {timeout} timed out, {skipped} skipped of "
        f"{outcome.planned} cells ({len(outcome.ran)} run now)",
        highlight=False,
    )
    for cid in outcome.problems[:20]:
        console.print(
            f"  [red]{outcome.statuses[cid]}[/] {escape(cid)}: "
            f"{escape(outcome.reasons.get(cid, ''))}",
            highlight=False,
        )
