"""`serve --budget`: which serving cells the next adaptive round needs (the Matrix asks).

The same stopping rule as ``compare --budget`` (:mod:`tfvariants.analyze.adaptive`: K
planned looks, each interval at the per-look level of tfvariants.analyze.looks) and the
same comparisons as the report: the serving analysis
(:func:`tfvariants.analyze.serving.model_reports`) is run on the repeats stored before the
last look, and a configuration runs another round while one of its watched comparisons
(:func:`tfvariants.analyze.serving.watched`) is undecided. Stateless: everything is
recomputed from the stored results, so a resumed run continues where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from tfvariants.analyze import adaptive
from tfvariants.analyze.decide import Settings
from tfvariants.analyze.pricing import Pricing
from tfvariants.options.serving import ServingOptions
from tfvariants.plan.serve import ServeCell, ServeSpec, plan_serve_cells
from tfvariants.plan.spec import round_order
from tfvariants.store.cellresult import AnyResult, serving

NextServeRound = Callable[[Mapping[str, AnyResult]], tuple[list[ServeCell], str]]


def config_key(cell: ServeCell) -> tuple[str, int, str, str, int, float]:
    """What one configuration is (the analysis's Config.key, ServeResult.serving_key)."""
    wait = cell.batch_timeout_ms if cell.max_batch_size > 1 else 0.0
    return (cell.variant, cell.threads, cell.model, cell.path, cell.max_batch_size, wait)


def make_next_round(
    spec: ServeSpec,
    rule: adaptive.StoppingRule,
    *,
    pricing: Pricing | None,
    baseline: str | None,
) -> NextServeRound:
    from tfvariants.analyze.serving import model_reports, watched

    run = {"variants": list(spec.variants), "variant_info": spec.variant_info}
    o = ServingOptions.of(spec.options)
    settings = Settings(o.min_effect, o.confidence, rule.looks)
    bound = o.p99_bound_ms
    planned = plan_serve_cells(spec, range(1))

    def next_round(stored: Mapping[str, AnyResult]) -> tuple[list[ServeCell], str]:
        cells = serving(stored.values())
        present: dict[tuple, set[int]] = {}
        for r in cells:
            present.setdefault((r.serving_key, r.scenario, r.concurrency), set()).add(r.round)
        rounds = 1 + max((rep for reps in present.values() for rep in reps), default=-1)
        looks_done = [n for n in rule.looks if n <= rounds]
        if not looks_done:
            return [], f"only {rounds} round(s) stored, fewer than the first look"
        look = looks_done[-1]
        at_look = [r for r in cells if r.round < look]
        reports = model_reports(
            at_look, run, pricing=pricing, baseline=baseline, bound_ms=bound, settings=settings
        )
        pairs = [(a, b, cmp) for rep in reports for a, b, cmp in watched(rep)]
        if not pairs:
            return [], f"nothing to compare at the look after {look} repeats"
        open_pairs = [(a, b) for a, b, cmp in pairs if cmp.verdict == "undecided"]
        if not open_pairs:
            return [], f"every comparison was decided by the look after {look} repeats"
        if rounds >= rule.max_repeats:
            return [], (
                f"{len(open_pairs)} comparison(s) still undecided after the maximum of "
                f"{rule.max_repeats} repeats"
            )
        active = {cfg.key for pair in open_pairs for cfg in pair}
        # An interrupted round is completed before a new one starts.
        todo = [
            (c, rep)
            for c in planned
            if config_key(c) in active
            for rep in range(rounds)
            if rep not in present.get((config_key(c), c.scenario, c.concurrency), ())
        ]
        if not todo:
            todo = [(c, rounds) for c in planned if config_key(c) in active]
        out = [
            ServeCell(
                c.variant,
                c.threads,
                c.model,
                c.scenario,
                c.path,
                c.concurrency,
                rep,
                c.max_batch_size,
                c.batch_timeout_ms,
            )
            for c, rep in todo
        ]
        out = round_order(out, o.order_seed, todo[0][1])
        return out, f"{len(open_pairs)} comparison(s) undecided at the look after {look} repeats"

    return next_round


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
