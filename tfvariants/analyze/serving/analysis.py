"""The serving analysis: stored serving cells grouped by configuration (variant, threads,
model, path, batching), with the throughput-vs-concurrency curve, latency percentiles,
LoadGen's verdict per cell, HTTP overhead, dollars per million predictions and the
cheapest configuration meeting a p99 bound, as plain data (units: serving/configs.py;
sentences: serving/sentences.py).

Every comparison (throughput, p99, $ per million predictions) is the training report's:
:func:`tfvariants.analyze.statistics.verdicts.statistic` on the rounds both sides have. The adaptive
rounds of ``serve --budget`` run :func:`model_reports` and ask
:func:`tfvariants.analyze.serving.configs.watched` for the same comparisons.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tfvariants.analyze.baseline import parse_baseline
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.serving.configs import (
    Config,
    Disturbed,
    ModelReport,
    ServingAnalysis,
    answered,
    compare_lower,
    operating_point,
    price_config,
    summarise_row,
)
from tfvariants.analyze.serving.sentences import conclude_model, last_look_sentence
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.analyze.statistics.adaptive import needed_more
from tfvariants.analyze.statistics.decide import Settings, run_settings
from tfvariants.analyze.statistics.interference import unclean_rounds, uses_disturbed
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.analyze.statistics.verdicts import Requested, pick_baseline
from tfvariants.options.serving import ServingOptions
from tfvariants.plan.serve import ServeKey
from tfvariants.store.rawfields import finite_number
from tfvariants.store.record import RunRecord
from tfvariants.store.rundir import RunContents, load_run_dir
from tfvariants.store.serving import ServeResult, serving
from tfvariants.store.training import ConfigKey


def analyze_serving(
    results_dir: Path, report: ReportSettings | None = None, *, pricing: Pricing | None = None
) -> ServingAnalysis | None:
    """Load a run folder and analyse its serving cells (:func:`analyze_serving_contents`)
    with ``report``'s settings, or with just a pricing (a test's or a script's question);
    a report is built by analyze/report/build.py."""
    report = report or ReportSettings(pricing=pricing)
    contents = load_run_dir(Path(results_dir), allow_mixed_hosts=report.allow_mixed_hosts)
    return analyze_serving_contents(contents, report, run_settings(contents.run, report.decision))


def analyze_serving_contents(
    contents: RunContents, report: ReportSettings, settings: Settings
) -> ServingAnalysis | None:
    """A loaded folder's serving cells analysed with the run's decision ``settings``
    (analyze/statistics/decide.py ``run_settings``, made once); None when it holds none."""
    run = contents.run
    cells = serving(r for _, r in sorted(contents.parsed.items()))
    if not cells:
        return None
    only_serving = len(cells) == len(contents.results)
    stored = run.options.p99_bound_ms if isinstance(run.options, ServingOptions) else None
    bound = report.p99_bound_ms or finite_number(stored) or 100.0
    pricing = report.pricing
    policy = report.disturbed or (
        run.options.disturbed_policy if isinstance(run.options, ServingOptions) else "auto"
    )
    disturbed = disturbed_of(cells, policy)
    reports = model_reports(
        cells,
        run,
        pricing=pricing,
        baseline=report.baseline,
        bound_ms=bound,
        settings=settings,
        disturbed=disturbed,
    )
    counts: dict[str, int] = {}
    for r in cells:
        counts[r.status] = counts.get(r.status, 0) + 1
    return ServingAnalysis(
        str(contents.results_dir),
        run,
        reports,
        cells,
        bound,
        pricing,
        counts,
        only_serving,
        contents,
        settings,
        disturbed,
    )


def disturbed_of(cells: list[ServeResult], policy: str) -> Disturbed:
    """The disturbed policy over a run's serving cells: each cell is one
    configuration-round (serving runs no attempt again)."""
    unclean, rounds = unclean_rounds([r for r in cells if r.ok], lambda r: r.cell)
    return Disturbed(policy, uses_disturbed(policy, unclean, rounds), unclean, rounds)


def model_reports(
    cells: list[ServeResult],
    run: RunRecord,
    *,
    pricing: Pricing | None,
    baseline: str | None,
    bound_ms: float,
    settings: Settings,
    disturbed: Disturbed | None = None,
) -> list[ModelReport]:
    """Configurations, operating points, costs and every comparison, per model: the one
    analysis the report shows and the adaptive rounds judge by. ``disturbed``: what the
    run's disturbed policy makes of its cells (:func:`disturbed_of`; None: excluded)."""
    use_disturbed = disturbed is not None and disturbed.used
    configs = {
        key: price_config(operating_point(_config(key, results, use_disturbed), bound_ms), pricing)
        for key, results in _by_config(cells).items()
    }

    variants = list(dict.fromkeys([*run.variants, *(k.variant for k in configs)]))
    models = list(dict.fromkeys(k.model for k in configs))
    base = parse_baseline(baseline)

    def rank(c: Config) -> tuple[int, int, str, int, float]:
        return (variants.index(c.variant), c.threads, c.path, c.max_batch_size, c.batch_timeout_ms)

    reports = [
        _model_report(
            m,
            sorted((c for c in configs.values() if c.model == m), key=rank),
            base,
            variants,
            bound_ms,
            pricing,
            settings,
            disturbed,
        )
        for m in models
    ]
    if run.adaptive is not None:
        # The run's figure, over every model's answered comparisons: one new run decides
        # them all, and the answer's next step counts it from the same ones.
        needed = needed_more(c for rep in reports for c in answered(rep))
        reports = [
            replace(rep, conclusions=last_look_sentence(rep.conclusions, run.adaptive, needed))
            for rep in reports
        ]
    return reports


def _by_config(cells: list[ServeResult]) -> dict[ServeKey, list[ServeResult]]:
    out: dict[ServeKey, list[ServeResult]] = {}
    for r in cells:
        out.setdefault(r.serving_key, []).append(r)
    return out


_SCENARIOS = ("single_stream", "server", "server_search", "offline", "concurrency")


def _config(key: ServeKey, results: list[ServeResult], use_disturbed: bool) -> Config:
    """One configuration's rows (each summarised), in the scenarios' order."""
    by_row: dict[tuple[str, int], list[ServeResult]] = {}
    shared = None
    for r in results:
        by_row.setdefault((r.scenario, r.concurrency), []).append(r)
        if r.shared_cpus and r.path != "inprocess":  # in-process always does
            cpus = ",".join(str(x) for x in r.server_cpus)
            shared = f"server and load generator share CPUs {cpus}"
    rows = sorted(
        (summarise_row(sc, n, rs, use_disturbed) for (sc, n), rs in by_row.items()),
        key=lambda x: (
            _SCENARIOS.index(x.scenario) if x.scenario in _SCENARIOS else 9,
            x.concurrency,
        ),
    )
    return Config(
        key,
        device=results[0].device,
        rows=rows,
        shared_cpus=shared,
        oversubscribed=any(r.oversubscribed for r in results),
    )


def _pick_baseline(
    cfgs: list[Config], base: Requested | None, variants: list[str]
) -> Config | None:
    """The one baseline rule (analyze/baseline.py) on (variant, threads), counting each
    pair's usable rounds (priced ones when anything is priced: a baseline without a cost
    gives no cost ratios), then that pair's priced, in-process, unbatched configuration."""
    if not cfgs:
        return None
    model = cfgs[0].model
    priced = any(c.costs for c in cfgs)
    values: dict[ConfigKey, dict[int, float]] = {}
    for c in cfgs:
        values.setdefault(ConfigKey(model, c.variant, c.threads), {}).update(
            c.costs if priced else c.operating_seconds()
        )
    chosen = pick_baseline(
        list(values),
        values,
        devices={c.variant: c.device for c in cfgs},
        variant_order=variants,
        oversubscribed={(c.variant, c.threads) for c in cfgs if c.oversubscribed},
        requested=base,
        ran={ConfigKey(model, c.variant, c.threads) for c in cfgs if any(row.ok for row in c.rows)},
    )
    pick = [c for c in cfgs if chosen is not None and (c.variant, c.threads) == chosen[1:]]
    if not pick:
        return None
    return max(
        pick,
        key=lambda c: (
            c.cost_per_million is not None,
            c.path == "inprocess",
            c.max_batch_size == 1,
        ),
    )


def _compare_to_baseline(cfgs: list[Config], baseline: Config, settings: Settings) -> list[Config]:
    """The configurations, each with its comparisons to the baseline (marked as such)."""
    return [
        replace(c, is_baseline=True) if c is baseline else _compared(c, baseline, settings)
        for c in cfgs
    ]


def _compared(c: Config, baseline: Config, settings: Settings) -> Config:
    rows = []
    for row in c.rows:
        b = baseline.row(row.scenario, row.concurrency)
        if b is not None:
            row = replace(
                row,
                throughput_cmp=compare_lower(
                    row.seconds_per_prediction(), b.seconds_per_prediction(), settings
                ),
                p99_cmp=compare_lower(row.p99_by_round(), b.p99_by_round(), settings)
                if row.scenario not in ("offline", "server_search")  # no latency to speak of
                else None,
            )
        rows.append(row)
    cost_cmp = compare_lower(c.costs, baseline.costs, settings)
    return replace(
        c,
        rows=rows,
        operating_row=next(
            (n for o, n in zip(c.rows, rows, strict=True) if o is c.operating_row), None
        ),
        throughput_cmp=compare_lower(c.operating_seconds(), baseline.operating_seconds(), settings),
        cost_cmp=cost_cmp,
        cost_ratio=cost_cmp.ratio if cost_cmp is not None else None,
    )


def _model_report(
    model: str,
    cfgs: list[Config],
    base: Requested | None,
    variants: list[str],
    bound: float,
    pricing: Pricing | None,
    settings: Settings,
    disturbed: Disturbed | None,
) -> ModelReport:
    baseline = _pick_baseline(cfgs, base, variants)
    if baseline is not None:
        compared = _compare_to_baseline(cfgs, baseline, settings)
        baseline = next(n for o, n in zip(cfgs, compared, strict=True) if o is baseline)
        cfgs = compared
    # cheapest first (a stable sort: the first listed wins a tie)
    priced = sorted(
        ((c, iv) for c in cfgs if (iv := c.cost_per_million) is not None), key=lambda m: m[1].value
    )
    met = [c for c, _ in priced]
    # measured under load: a repeat its comparisons use was disturbed (said in its
    # sentences and verdict words)
    under_load = (disturbed is not None and disturbed.used) and any(
        r.disturbed for c in cfgs for row in c.rows for r in row.compared()
    )
    rep = ModelReport(model, cfgs, baseline, met[0] if met else None, under_load=under_load)
    if len(met) > 1:
        cmp = compare_lower(met[0].costs, met[1].costs, settings)
        rep = replace(
            rep,
            runner_up=met[1],
            cheapest_cmp=cmp,
            cheapest_decided=cmp is not None
            and cmp.verdict == Verdict.DIFFERENT
            and cmp.direction == "lower",
        )
    return replace(rep, conclusions=conclude_model(rep, bound, pricing, settings, disturbed))
