"""The serving analysis's units: a Row is every repeat of one (configuration, scenario,
concurrency), a Config one serving configuration with its rows, operating point under
the p99 bound and cost, a ModelReport one model's configurations and comparisons; and
the comparisons the adaptive rounds of ``serve --budget`` watch.

Every comparison is the training report's statistic
(:func:`tfvariants.analyze.statistics.verdicts.statistic`); throughput is compared as time per
prediction (1 / throughput), so "faster" reads as in training.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.shared.format import sig3
from tfvariants.analyze.statistics import stats
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.verdicts import statistic
from tfvariants.plan.serve import ServeKey, batching_words, serve_label
from tfvariants.store.cellresult import FromKey
from tfvariants.store.record import RunRecord
from tfvariants.store.rundir import RunContents
from tfvariants.store.serving import PERCENTILES, ServeResult

PCTS = PERCENTILES

RoundValues = dict[int, float]  # round (repeat index) -> one value
# The number each LoadGen scenario is judged by (the test compares it to the detail log).

HEADLINE = {
    "single_stream": "p90_ms",
    "server": "p99_ms",
    "offline": "throughput_per_s",
    "server_search": "max_qps_under_bound",
}


def _median(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.median(xs) if xs else None


def _interval(values: Iterable[float | None]) -> stats.Interval | None:
    xs = [v for v in values if v is not None and v > 0]
    return stats.median_interval(xs) if xs else None


def compare_lower(
    a: Mapping[int, float], b: Mapping[int, float], settings: Settings
) -> stats.Comparison | None:
    """a versus b (lower is better) by training's one statistic
    (:func:`tfvariants.analyze.statistics.verdicts.statistic`): on the rounds both have, so drift
    or an early stop cannot bias the ratio. None without a common round."""
    if not set(a) & set(b):
        return None
    return statistic(b, a, settings)


@dataclass(frozen=True)
class Row:
    """All repeats of one (configuration, scenario, concurrency): the percentile table."""

    scenario: str
    concurrency: int
    results: list[ServeResult] = field(default_factory=list)
    throughput: stats.Interval | None = None
    percentiles: dict[str, float | None] = field(default_factory=dict)
    validity: list[str] = field(default_factory=list)  # LoadGen's verdict per repeat
    overhead_p50_ms: float | None = None
    max_qps: stats.Interval | None = None  # server_search
    # against the baseline configuration's same row (None for the baseline itself)
    throughput_cmp: stats.Comparison | None = None  # as time per prediction
    p99_cmp: stats.Comparison | None = None
    # the run's disturbed policy uses disturbed repeats (analyze/statistics/interference.py)
    use_disturbed: bool = False

    @property
    def ok(self) -> list[ServeResult]:
        return [r for r in self.results if r.ok]

    def compared(self) -> list[ServeResult]:
        """The repeats comparisons use: successful, and undisturbed unless the policy
        uses disturbed ones (as training's verdicts)."""
        return [r for r in self.ok if self.use_disturbed or not r.disturbed]

    def p99_by_round(self) -> RoundValues:
        """Per round, the p99 of the repeats comparisons use."""
        return {
            r.round: v
            for r in self.compared()
            if (v := r.percentiles_ms.get("p99_ms")) is not None and v > 0
        }

    def seconds_per_prediction(self) -> RoundValues:
        """Per round, 1 / throughput (the Server search: 1 / its highest QPS)."""
        out = {}
        for r in self.compared():
            v = r.max_qps_under_bound if self.scenario == "server_search" else r.throughput_per_s
            if v is not None and v > 0:
                out[r.round] = 1 / v
        return out

    @property
    def reasons(self) -> list[str]:
        return sorted({str(r.reason) for r in self.results if not r.ok})


@dataclass(frozen=True)
class Config:
    """All rows of one serving configuration (plan/serve.py ``ServeKey``)."""

    key: ServeKey
    device: str = "cpu"
    rows: list[Row] = field(default_factory=list)
    shared_cpus: str | None = None  # "server and load generator share CPUs 0,1"
    oversubscribed: bool = False
    operating: str | None = None  # where the cost's throughput comes from
    throughput_under_bound: stats.Interval | None = None
    instance: str | None = None
    per_hour: float | None = None
    cost_per_million: stats.Interval | None = None
    cost_ratio: stats.Interval | None = None  # cost_cmp's ratio
    is_baseline: bool = False
    operating_row: Row | None = None
    costs: RoundValues = field(default_factory=dict)  # $ per million, per round
    # against the baseline, each at its operating point
    throughput_cmp: stats.Comparison | None = None
    cost_cmp: stats.Comparison | None = None

    # What one configuration is: read through its key (store/cellresult.py FromKey).
    variant = FromKey[str]()
    threads = FromKey[int]()
    model = FromKey[str]()
    path = FromKey[str]()
    max_batch_size = FromKey[int]()
    batch_timeout_ms = FromKey[float]()

    @property
    def batching(self) -> str:
        return batching_words(self.key)

    @property
    def label(self) -> str:
        return serve_label(self.key)

    def row(self, scenario: str, concurrency: int) -> Row | None:
        return next(
            (r for r in self.rows if (r.scenario, r.concurrency) == (scenario, concurrency)), None
        )

    def operating_seconds(self) -> RoundValues:
        """Per round, seconds per prediction at the operating point."""
        return self.operating_row.seconds_per_prediction() if self.operating_row else {}

    def curve(self) -> list[Row]:
        return sorted(
            (r for r in self.rows if r.scenario == "concurrency"), key=lambda r: r.concurrency
        )


@dataclass(frozen=True)
class ModelReport:
    model: str
    configs: list[Config]
    baseline: Config | None
    cheapest: Config | None
    conclusions: list[str] = field(default_factory=list)
    runner_up: Config | None = None  # the next cheapest
    cheapest_cmp: stats.Comparison | None = None  # cheapest vs runner-up ($ per million)
    cheapest_decided: bool = False  # the claim "cheapest" holds: decided against the next
    under_load: bool = False  # its comparisons use disturbed repeats (the run's policy)

    def batch_sizes(self) -> list[int]:
        return sorted({c.max_batch_size for c in self.configs})


@dataclass(frozen=True)
class Disturbed:
    """The run's disturbed policy over its serving cells: "exclude", "include" or
    "auto" (analyze/statistics/interference.py), whether the comparisons use disturbed
    repeats, and the configuration-rounds with no undisturbed repeat, of all."""

    policy: str
    used: bool
    unclean: int
    rounds: int


@dataclass(frozen=True)
class ServingAnalysis:
    results_dir: str
    run: RunRecord  # run.json, typed at the store (store/record.py)
    models: list[ModelReport]
    cells: list[ServeResult]  # every serving result, sorted by cell id
    p99_bound_ms: float
    pricing: Pricing | None
    counts: dict[str, int]
    only_serving: bool = True  # no training cells in the folder
    store: RunContents | None = None  # the run folder as loaded, with its named problems
    settings: Settings = field(default_factory=Settings)
    disturbed: Disturbed | None = None  # what the disturbed policy did (None: no cells)

    @property
    def look_plan(self) -> str | None:
        """How the adaptive rounds' last look was planned from the budget (None: fixed)."""
        from tfvariants.analyze.serving.sentences import look_plan_sentence

        adaptive = self.run.adaptive
        return look_plan_sentence(adaptive.look_plan) if adaptive is not None else None


def summarise_row(
    scenario: str, concurrency: int, results: list[ServeResult], use_disturbed: bool = False
) -> Row:
    """One (configuration, scenario, concurrency)'s repeats and their medians."""
    ok = [r for r in results if r.ok]
    return Row(
        scenario,
        concurrency,
        results,
        use_disturbed=use_disturbed,
        throughput=_interval(r.throughput_per_s for r in ok),
        percentiles={k: _median(r.percentiles_ms.get(k) for r in ok) for k in PCTS},
        validity=[r.validity for r in ok if r.validity],
        overhead_p50_ms=_median(r.http_overhead_p50_ms for r in ok),
        max_qps=_interval(r.max_qps_under_bound for r in ok)
        if scenario == "server_search"
        else None,
    )


def operating_point(cfg: Config, bound_ms: float) -> Config:
    """``cfg`` with the highest throughput whose p99 met the bound: a concurrency point
    (median p99 over repeats) or the Server QPS search; Offline has no latency and never
    counts."""
    best: tuple[stats.Interval, str, Row] | None = None
    for row in cfg.rows:
        if row.scenario == "concurrency" and row.throughput is not None:
            p99 = row.percentiles.get("p99_ms")
            if p99 is not None and p99 <= bound_ms:
                cand = (row.throughput, f"{row.concurrency} in flight, p99 {sig3(p99)} ms", row)
                best = cand if best is None or cand[0].value > best[0].value else best
        elif row.scenario == "server_search" and row.max_qps is not None:
            cand = (row.max_qps, "LoadGen Server QPS search", row)
            best = cand if best is None or cand[0].value > best[0].value else best
    if best is None:
        return cfg
    iv, operating, row = best
    return replace(cfg, throughput_under_bound=iv, operating=operating, operating_row=row)


def price_config(cfg: Config, pricing: Pricing | None) -> Config:
    """``cfg`` with its instance, price and cost per million predictions (none: as it is)."""
    iv = cfg.throughput_under_bound
    if pricing is None or iv is None:
        return cfg
    found = pricing.instance_for(cfg.variant, cfg.threads, cfg.device)
    sel = pricing.catalog.price(found[0], as_of=pricing.as_of, tier=pricing.tier) if found else None
    if found is None or sel is None:
        return cfg

    def per_million(qps: float) -> float:
        return sel.per_hour / (qps * 3600) * 1e6 if qps > 0 else float("inf")

    return replace(
        cfg,
        instance=found[0].name,
        per_hour=sel.per_hour,
        costs={k: sel.per_hour / 3600 * 1e6 * s for k, s in cfg.operating_seconds().items()},
        # Cost falls as throughput rises: the interval's ends swap.
        # The coverage carries over: without it the interval reads as none (and the ratio
        # to the baseline as a zero-width "1.17-1.17").
        cost_per_million=stats.Interval(
            per_million(iv.value),
            per_million(iv.hi),
            per_million(iv.lo),
            iv.method,
            iv.n,
            iv.coverage,
        ),
    )


def as_throughput(cmp: stats.Comparison | None) -> stats.Comparison | None:
    """A comparison of seconds per prediction as one of throughput (the ratio and its
    interval inverted; the verdict is the same)."""
    if cmp is None:
        return None
    r = cmp.ratio
    inv = replace(r, value=1 / r.value, lo=1 / r.hi, hi=1 / r.lo)
    return replace(cmp, ratio=inv)  # the bands and named warnings stay with the verdict


def saturated_row(c: Config) -> Row | None:
    """The closed-loop row with the most requests in flight that has a throughput
    comparison: what is compared when no point met the latency bound."""
    rows = [r for r in c.curve() if r.throughput_cmp is not None]
    return rows[-1] if rows else None


def watched(report: ModelReport) -> list[tuple[Config, Config, stats.Comparison]]:
    """The comparisons a serving run must decide (what ``serve --budget`` runs more
    rounds for): each configuration against the baseline on its headline (the cost per
    million predictions when priced, else the throughput within the bound, else when no
    point met the bound the throughput at the most requests in flight), and the cheapest
    against the next cheapest."""
    out = []
    b = report.baseline
    for c in report.configs:
        if b is None or c is b:
            continue
        cmp = c.cost_cmp if c.cost_cmp is not None else c.throughput_cmp
        row = saturated_row(c)
        if cmp is None and row is not None:
            cmp = row.throughput_cmp
        if cmp is not None:
            out.append((c, b, cmp))
    if report.cheapest_cmp is not None and report.runner_up is not None:
        if report.cheapest is not None:
            out.append((report.cheapest, report.runner_up, report.cheapest_cmp))
    return out


def beyond_the_bound(report: ModelReport) -> list[tuple[Config, Config, stats.Comparison, Row]]:
    """The watched comparisons of the configurations with no comparison at a point
    within the bound, each with the row it was made at (:func:`saturated_row`): the
    answer's lines under its table, whose rows can only say "p99 over"."""
    out = []
    for c, b, cmp in watched(report):
        row = saturated_row(c)
        if c.cost_cmp is None and c.throughput_cmp is None and row is not None:
            out.append((c, b, cmp, row))
    return out


def answered(report: ModelReport) -> list[stats.Comparison]:
    """A model's comparisons the answer shows (its rows' costs against the baseline,
    then :func:`beyond_the_bound`'s): one list, so the answer's next step and the
    report's last-look sentence count their figure from the same comparisons."""
    costs = [c.cost_cmp for c in report.configs if c.cost_cmp is not None and not c.is_baseline]
    return costs + [cmp for _, _, cmp, _ in beyond_the_bound(report)]
