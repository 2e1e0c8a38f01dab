"""`serve --budget`: which serving cells the next adaptive round needs (the Matrix asks).

The same stopping rule as ``compare --budget`` (:mod:`tfvariants.analyze.statistics.adaptive`: K
planned looks, each interval at the per-look level of tfvariants.analyze.statistics.looks) and the
same comparisons as the report: the serving analysis
(:func:`tfvariants.analyze.serving.model_reports`) is run on the repeats stored before the
last look, and a configuration runs another round while one of its watched comparisons
(:func:`tfvariants.analyze.serving.watched`) is undecided. Stateless: everything is
recomputed from the stored results, so a resumed run continues where it stopped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.statistics import adaptive
from tfvariants.options.decision import settings
from tfvariants.options.serving import ServingOptions
from tfvariants.plan.serve import ServeCell, ServeKey, ServeSpec, plan_serve_cells
from tfvariants.rounds.decide import Judged, next_round
from tfvariants.store.cellresult import AnyResult, serving

NextServeRound = Callable[[Mapping[str, AnyResult]], tuple[list[ServeCell], str]]


def config_key(cell: ServeCell) -> ServeKey:
    """What one configuration is (plan/serve.py ``ServeKey``)."""
    return cell.key


def make_next_round(
    spec: ServeSpec,
    rule: adaptive.StoppingRule,
    *,
    pricing: Pricing | None,
    baseline: str | None,
) -> NextServeRound:
    from tfvariants.analyze.serving.analysis import model_reports
    from tfvariants.analyze.serving.configs import watched

    run = {"variants": list(spec.variants), "variant_info": spec.variant_info}
    o = ServingOptions.of(spec.options)
    # The run's decision settings by the one reader the report uses, at the rule's looks.
    decision = settings(spec.options, rule.looks)
    bound = o.p99_bound_ms
    planned = plan_serve_cells(spec, range(1))

    def hook(stored: Mapping[str, AnyResult]) -> tuple[list[ServeCell], str]:
        cells = serving(stored.values())
        present: dict[tuple, set[int]] = {}
        for r in cells:
            present.setdefault((r.serving_key, r.scenario, r.concurrency), set()).add(r.round)
        rounds = 1 + max((rep for reps in present.values() for rep in reps), default=-1)
        looks_done = [n for n in rule.looks if n <= rounds]
        look = looks_done[-1] if looks_done else None
        pairs, undecided = [], []
        if look is not None:
            at_look = [r for r in cells if r.round < look]
            reports = model_reports(
                at_look, run, pricing=pricing, baseline=baseline, bound_ms=bound, settings=decision
            )
            pairs = [(a, b, cmp) for rep in reports for a, b, cmp in watched(rep)]
            undecided = [(a, b) for a, b, cmp in pairs if cmp.verdict == "undecided"]
        keys = {cfg.key for pair in undecided for cfg in pair}
        # A configuration's cells (each scenario and concurrency), in the planned order.
        judged = Judged(
            rounds,
            look,
            len(pairs),
            len(undecided),
            [c for c in planned if config_key(c) in keys],
            {c: present.get((config_key(c), c.scenario, c.concurrency), set()) for c in planned},
        )
        return next_round(
            judged,
            rule,
            lambda todo: [dataclasses.replace(c, repeat=rep) for c, rep in todo],
            o.order_seed,
            nothing_to_judge=f"nothing to compare at the look after {look} repeats",
        )

    return hook


def order_seed(out: Path, resume: bool) -> int | None:
    """Each round's order seed: a resumed run keeps its own (its cells and their order
    must not change; None for runs stored before serving rounds were shuffled), a new
    run draws one (stored in run.json)."""
    from tfvariants.plan.spec import new_order_seed

    if resume:
        from tfvariants.store.runfile import load_run

        # run.json alone: the matrix loads the cells (once) when it resumes
        stored = (load_run(out).get("options") or {}).get("order_seed")
        return stored if isinstance(stored, int) and not isinstance(stored, bool) else None
    return new_order_seed()
