"""`compare --budget`: which cells the next adaptive round needs (the Matrix loop asks).

Stateless on purpose: everything is recomputed from the stored results, so a resumed
run continues exactly where it stopped. The data are judged only at the stopping
rule's planned looks (tfvariants.analyze.adaptive); between looks the configurations
that were undecided at the last look keep running.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tfvariants.analyze import adaptive, interference, stats
from tfvariants.analyze.decide import choose_baseline
from tfvariants.analyze.fields import training_time_s
from tfvariants.commands import argtypes
from tfvariants.errors import UserError
from tfvariants.plan.cell import Cell
from tfvariants.plan.spec import round_order

QUICK_BUDGET_S = 600.0  # --quick without --budget: 10 minutes
QUICK_WINDOW = (5.0, 50)  # --quick steady window: seconds, steps
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
                   "(default 10; --quick 5)")  # fmt: skip
    p.add_argument("--min-steady-steps", type=argtypes.positive_int, default=None,
                   help="steady-state steps each cell measures after its warm-up (default 100; "
                   "--quick 50)")  # fmt: skip
    p.add_argument("--min-effect", type=argtypes.fraction, default=None,
                   help="smallest difference that matters, e.g. 5%% (default): smaller ones "
                   "are 'equivalent'")  # fmt: skip
    p.add_argument("--confidence", type=argtypes.fraction, default=None,
                   help="confidence of the intervals (default 0.95)")  # fmt: skip
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
    p.add_argument("--disturbed-retries", type=argtypes.retries, default=None,
                   help="attempts after a disturbed one, per cell, within the budget "
                   f"(default {interference.DISTURBED_RETRIES})")  # fmt: skip
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
        "min_effect": given_or_stored("min_effect", args.min_effect, argtypes.fraction, stats.MIN_EFFECT),
        "confidence": given_or_stored("confidence", args.confidence, argtypes.fraction, stats.CONFIDENCE),
        "budget_s": given_or_stored("budget_s", args.budget, argtypes.duration, QUICK_BUDGET_S if quick else None),
        "max_repeats": given_or_stored("max_repeats", args.max_repeats, argtypes.repeats,
                                       max(adaptive.DEFAULT_MAX_REPEATS, repeats)),
        "quiet_share": given_or_stored("quiet_share", args.quiet_share, argtypes.fraction, interference.QUIET_SHARE),
        "quiet_wait_s": given_or_stored("quiet_wait_s", args.quiet_wait, argtypes.wait, interference.QUIET_WAIT_S),
        "disturbed_share": given_or_stored("disturbed_share", args.disturbed_share, argtypes.fraction, interference.DISTURBED_SHARE),
        "disturbed_retries": given_or_stored("disturbed_retries", args.disturbed_retries, argtypes.retries, interference.DISTURBED_RETRIES),
        "disturbed_policy": given_or_stored("disturbed_policy", args.disturbed, str, "auto"),
        "order_seed": given_or_stored("order_seed", args.order_seed, argtypes.seed, None),
    }  # fmt: skip
    if o["order_seed"] is None:
        from tfvariants.plan.spec import new_order_seed

        o["order_seed"] = new_order_seed()
    if not o["confidence"] > 0.5:
        raise UserError(f"--confidence: must be above 0.5, got {o['confidence']}")
    if o["max_repeats"] < repeats:
        raise UserError(f"--max-repeats {o['max_repeats']} is below --repeats {repeats}")
    return o


def adaptive_hook(spec: Any, baseline: str | None, console: Any) -> tuple[Any, Any]:
    """(next_round, rule) when the run has a budget, else (None, None)."""
    from tfvariants.analyze.analysis import parse_baseline

    budget_s = spec.options.get("budget_s")
    if not budget_s:
        return None, None
    rule = adaptive.stopping_rule(spec.repeats, int(spec.options["max_repeats"]))
    hook = make_next_round(
        spec, rule, baseline=parse_baseline(baseline),
        min_effect=spec.options["min_effect"], confidence=spec.options["confidence"],
    )  # fmt: skip
    console.print(
        f"adaptive: looks after {', '.join(map(str, rule.looks))} repeats; more rounds only "
        f"while a comparison is undecided, within a budget of {budget_s / 60:.3g} min",
        highlight=False,
    )
    return hook, rule


def record(out: Path, rule: adaptive.StoppingRule, spec: Any, before: dict, outcome: Any,
           console: Any) -> None:  # fmt: skip
    """run.json's "adaptive": the rule, the budget, every round so far, why it stopped."""
    from tfvariants.store.rundir import update_run

    update_run(out, adaptive={
        **rule.to_json(), "budget_s": spec.options.get("budget_s"),
        "rounds": list(before.get("rounds") or []) + outcome.rounds,
        "stopped": outcome.stopped, "spent_s": round(outcome.spent_s, 1),
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
    return QuietGate(limit=float(spec.options["quiet_share"]), max_wait_s=wait_s)


def retry_options(spec: Any, gate: Any = None) -> dict[str, Any]:
    """Matrix.run's disturbed-cell settings: the one classification, the retry count, and
    no retries while the gate finds the load sustained (they would be disturbed too)."""
    limit = interference.limit_of(spec.options)
    return {
        "disturbed": lambda result: interference.disturbance(result, limit),
        "retries": int(spec.options.get("disturbed_retries") or 0),
        "retry_now": (lambda: not gate.sustained) if gate is not None else None,
    }


def print_disturbed(outcome: Any, console: Any) -> None:
    """How many cells run now were disturbed, what was run again, and what was not."""
    if not outcome.disturbed:
        return
    text = (
        f"{len(outcome.disturbed)} cell(s) disturbed by other processes (kept, left out of "
        f"the verdicts); {outcome.retried} attempt(s) run again"
    )
    if outcome.retries_left_out:
        text += f", {outcome.retries_left_out} not run again (retries or budget used up)"
    console.print(text, highlight=False, markup=False)


def summary(analysis: Any, out: Path, console: Any) -> None:
    """The first conclusions per workload, the host's noise, what stayed undecided."""
    for w in analysis.workloads:
        console.print(f"  {w.name}:", highlight=False, markup=False)  # "GPU vs ..." names none
        for line in w.conclusions[:2]:
            console.print(f"    {line}", highlight=False, markup=False)
    if analysis.noise is not None:
        console.print(f"  {analysis.noise.sentence()}", highlight=False, markup=False)
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


def make_next_round(
    spec: Any,
    rule: adaptive.StoppingRule,
    *,
    baseline: tuple[str, int | None] | None,
    min_effect: float,
    confidence: float,
) -> Any:
    devices = {v: (spec.variant_info.get(v) or {}).get("device", "cpu") for v in spec.variants}
    limit = interference.limit_of(spec.options)
    policy = interference.policy_of(spec.options)
    order = {
        (w, v, t): (spec.workloads.index(w), spec.variants.index(v), spec.threads.index(t))
        for w in spec.workloads
        for v in spec.variants
        for t in spec.threads
    }

    def next_round(stored: dict[str, dict]) -> tuple[list[Cell], str]:
        times: dict[adaptive.Config, dict[int, float]] = {}
        present: dict[adaptive.Config, set[int]] = {}
        rounds = 0
        over: set[tuple[str, int]] = set()
        # The same results the report judges: disturbed attempts are left out (unless
        # included), but a round they fill is not run again here (its retries ran).
        used, _ = interference.split(list(stored.values()), limit=limit, policy=policy)
        used_ids = {id(r) for r in used}
        for r in stored.values():
            c = r.get("cell") or {}
            key = (str(c.get("workload")), str(c.get("variant")), int(c.get("threads", 0)))
            if key not in order:
                continue
            rep = int(c.get("repeat", 0))
            present.setdefault(key, set()).add(rep)
            if (r.get("requested") or {}).get("oversubscribed") is True:
                over.add(key[1:])
            rounds = max(rounds, rep + 1)
            t = training_time_s(r) if r.get("status") == "ok" and id(r) in used_ids else None
            if t:
                times.setdefault(key, {})[rep] = t
        looks_done = [n for n in rule.looks if n <= rounds]
        if not looks_done:
            return [], f"only {rounds} round(s) stored, fewer than the first look"
        look = looks_done[-1]
        at_look = {k: [t for rep, t in v.items() if rep < look] for k, v in times.items()}
        pairs: list[adaptive.Pair] = []
        for w in spec.workloads:
            # The same baseline the report will use: given, else chosen per workload.
            if baseline is not None:
                threads = baseline[1] or max(spec.threads)
                base: tuple[str, int] | None = (baseline[0], threads)
            else:
                counts = {(v, t): len(xs) for (w2, v, t), xs in at_look.items() if w2 == w}
                base = choose_baseline(counts, devices, list(spec.variants), over)
            pairs += adaptive.watched_pairs([k for k in order if k[0] == w], base)
        open_pairs = adaptive.undecided(
            at_look, pairs, looks=rule.k, min_effect=min_effect, confidence=confidence
        )
        if not open_pairs:
            return [], f"every comparison was decided by the look after {look} repeats"
        if rounds >= rule.max_repeats:
            return [], (
                f"{len(open_pairs)} comparison(s) still undecided after the maximum of "
                f"{rule.max_repeats} repeats"
            )
        active = sorted(adaptive.active_configs(open_pairs), key=order.__getitem__)
        # An interrupted round is completed before a new one starts.
        gaps = [(k, rep) for k in active for rep in range(rounds) if rep not in present.get(k, ())]
        todo = gaps or [(k, rounds) for k in active]
        cells = [Cell(variant=k[1], threads=k[2], workload=k[0], repeat=rep) for k, rep in todo]
        cells = round_order(cells, spec.options.get("order_seed"), todo[0][1])
        return cells, f"{len(open_pairs)} comparison(s) undecided at the look after {look} repeats"

    return next_round
