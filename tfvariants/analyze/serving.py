"""The serving analysis: stored serving cells grouped by configuration (variant, threads,
model, path), with the throughput-vs-concurrency curve, latency percentiles, LoadGen's
verdict per cell, HTTP overhead, dollars per million predictions and the cheapest
configuration meeting a p99 bound, as plain data.

Every comparison (throughput, p99, $ per million predictions) is the training report's:
:func:`tfvariants.analyze.stats.compare` over the repeats (Hodges-Lehmann ratio with its
Mann-Whitney interval and a different / equivalent / undecided verdict). Throughput is
compared as time per prediction (1 / throughput), so "faster" reads as in training. The
adaptive rounds of ``serve --budget`` ask :func:`watched` for the same comparisons.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tfvariants.analyze import cautions, stats
from tfvariants.analyze.analysis import parse_baseline
from tfvariants.analyze.conclusions import interval_words, phrase
from tfvariants.analyze.decide import Settings, run_looks
from tfvariants.analyze.format import money, sig3
from tfvariants.analyze.frame import RunFrame, environments_of, logical_cpus_of
from tfvariants.analyze.pricing import Pricing
from tfvariants.analyze.verdicts import statistic
from tfvariants.plan.serve import serve_cell_id
from tfvariants.store.cellresult import PERCENTILES, ServeResult, serving
from tfvariants.store.disturbance import DISTURBED_SHARE
from tfvariants.store.rawfields import finite_number, get_path
from tfvariants.store.rundir import RunContents, load_run_dir

PCTS = PERCENTILES
RoundValues = dict[int, float]  # round (repeat index) -> one value
# The number each LoadGen scenario is judged by (the test compares it to the detail log).
HEADLINE = {"single_stream": "p90_ms", "server": "p99_ms", "offline": "throughput_per_s",
            "server_search": "max_qps_under_bound"}  # fmt: skip


def _median(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.median(xs) if xs else None


def _interval(values: Iterable[float | None]) -> stats.Interval | None:
    xs = [v for v in values if v is not None and v > 0]
    return stats.median_interval(xs) if xs else None


def _compare(a: Mapping[int, float], b: Mapping[int, float],
             settings: Settings) -> stats.Comparison | None:  # fmt: skip
    """a versus b (lower is better) by training's one statistic
    (:func:`tfvariants.analyze.verdicts.statistic`): on the rounds both have, so drift
    or an early stop cannot bias the ratio. None without a common round."""
    if not set(a) & set(b):
        return None
    return statistic(b, a, settings)


@dataclass
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

    @property
    def ok(self) -> list[ServeResult]:
        return [r for r in self.results if r.ok]

    def p99_by_round(self) -> RoundValues:
        """Per round, the p99 of the successful, undisturbed repeats (as training's
        verdicts leave disturbed cells out)."""
        return {r.round: v for r in self.ok if not r.disturbed
                if (v := r.percentiles_ms.get("p99_ms")) is not None and v > 0}  # fmt: skip

    def seconds_per_prediction(self) -> RoundValues:
        """Per round, 1 / throughput (the Server search: 1 / its highest QPS)."""
        out = {}
        for r in self.ok:
            v = r.max_qps_under_bound if self.scenario == "server_search" else r.throughput_per_s
            if v is not None and v > 0 and not r.disturbed:
                out[r.round] = 1 / v
        return out

    @property
    def reasons(self) -> list[str]:
        return sorted({str(r.reason) for r in self.results if not r.ok})


@dataclass
class Config:
    variant: str
    threads: int
    model: str
    path: str
    max_batch_size: int = 1
    batch_timeout_ms: float = 0.0
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

    @property
    def batching(self) -> str:
        if self.max_batch_size <= 1:
            return ""
        return f"batch {self.max_batch_size}/{self.batch_timeout_ms:g} ms"

    @property
    def label(self) -> str:
        b = f" {self.batching}" if self.batching else ""
        return f"{self.variant}@{self.threads} {self.path}{b}"

    @property
    def key(self) -> tuple[str, int, str, str, int, float]:
        return (self.variant, self.threads, self.model, self.path, self.max_batch_size,
                self.batch_timeout_ms)  # fmt: skip

    def row(self, scenario: str, concurrency: int) -> Row | None:
        return next((r for r in self.rows if (r.scenario, r.concurrency) ==
                     (scenario, concurrency)), None)  # fmt: skip

    def operating_seconds(self) -> RoundValues:
        """Per round, seconds per prediction at the operating point."""
        return self.operating_row.seconds_per_prediction() if self.operating_row else {}

    def curve(self) -> list[Row]:
        return sorted((r for r in self.rows if r.scenario == "concurrency"),
                      key=lambda r: r.concurrency)  # fmt: skip


@dataclass
class ModelReport:
    model: str
    configs: list[Config]
    baseline: Config | None
    cheapest: Config | None
    conclusions: list[str] = field(default_factory=list)
    runner_up: Config | None = None  # the next cheapest
    cheapest_cmp: stats.Comparison | None = None  # cheapest vs runner-up ($ per million)
    cheapest_decided: bool = False  # the claim "cheapest" holds: decided against the next

    def batch_sizes(self) -> list[int]:
        return sorted({c.max_batch_size for c in self.configs})


@dataclass
class ServingAnalysis:
    results_dir: str
    run: dict
    models: list[ModelReport]
    cells: list[ServeResult]  # every serving result, sorted by cell id
    p99_bound_ms: float
    pricing: Pricing | None
    counts: dict[str, int]
    only_serving: bool = True  # no training cells in the folder
    store: RunContents | None = None  # the run folder as loaded, with its named problems
    settings: Settings = field(default_factory=Settings)


def _summarise_row(row: Row) -> None:
    ok = row.ok
    row.throughput = _interval(r.throughput_per_s for r in ok)
    row.percentiles = {k: _median(r.percentiles_ms.get(k) for r in ok) for k in PCTS}
    row.validity = [r.validity for r in ok if r.validity]
    row.overhead_p50_ms = _median(r.http_overhead_p50_ms for r in ok)
    if row.scenario == "server_search":
        row.max_qps = _interval(r.max_qps_under_bound for r in ok)


def _operating_point(cfg: Config, bound_ms: float) -> None:
    """The highest throughput whose p99 met the bound: a concurrency point (median p99
    over repeats) or the Server QPS search; Offline has no latency and never counts."""
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
    if best is not None:
        cfg.throughput_under_bound, cfg.operating, cfg.operating_row = best


def _cost(cfg: Config, pricing: Pricing | None) -> None:
    iv = cfg.throughput_under_bound
    if pricing is None or iv is None:
        return
    found = pricing.instance_for(cfg.variant, cfg.threads, cfg.device)
    sel = pricing.catalog.price(found[0], as_of=pricing.as_of, tier=pricing.tier) if found else None
    if found is None or sel is None:
        return
    cfg.instance, cfg.per_hour = found[0].name, sel.per_hour

    def per_million(qps: float) -> float:
        return sel.per_hour / (qps * 3600) * 1e6 if qps > 0 else float("inf")

    cfg.costs = {k: sel.per_hour / 3600 * 1e6 * s for k, s in cfg.operating_seconds().items()}

    # Cost falls as throughput rises: the interval's ends swap.
    # The coverage carries over: without it the interval reads as none (and the ratio to
    # the baseline as a zero-width "1.17-1.17").
    cfg.cost_per_million = stats.Interval(per_million(iv.value), per_million(iv.hi),
                                          per_million(iv.lo), iv.method, iv.n,
                                          iv.coverage)  # fmt: skip


def decision_settings(run: dict, min_effect: float | None = None,
                      confidence: float | None = None) -> Settings:  # fmt: skip
    """The run's decision settings (given, else stored in run.json, else the defaults)
    and the number of looks of its stopping rule: the same for the report and rounds."""
    stored = run.get("options")
    opts: dict[str, Any] = stored if isinstance(stored, dict) else {}
    me = min_effect if min_effect is not None else finite_number(opts.get("min_effect"))
    conf = confidence if confidence is not None else finite_number(opts.get("confidence"))
    return Settings(me if me is not None else stats.MIN_EFFECT,
                    conf if conf is not None and 0.5 < conf < 1 else stats.CONFIDENCE,
                    run_looks(run))  # fmt: skip


def analyze_serving(
    results_dir: Path,
    *,
    pricing: Pricing | None = None,
    baseline: str | None = None,
    p99_bound_ms: float | None = None,
    allow_mixed_hosts: bool = False,
    min_effect: float | None = None,
    confidence: float | None = None,
) -> ServingAnalysis | None:
    """None when the folder holds no serving cells."""
    results_dir = Path(results_dir)
    contents = load_run_dir(results_dir, allow_mixed_hosts=allow_mixed_hosts)
    run = contents.run
    cells = serving(r for _, r in sorted(contents.parsed.items()))
    if not cells:
        return None
    only_serving = len(cells) == len(contents.results)
    bound = p99_bound_ms or finite_number(get_path(run, "options", "p99_bound_ms")) or 100.0
    settings = decision_settings(run, min_effect, confidence)
    reports = model_reports(cells, run, pricing=pricing, baseline=baseline, bound_ms=bound,
                            settings=settings)  # fmt: skip
    counts: dict[str, int] = {}
    for r in cells:
        counts[r.status] = counts.get(r.status, 0) + 1
    return ServingAnalysis(str(results_dir), run, reports, cells, bound, pricing, counts,
                           only_serving, contents, settings)  # fmt: skip


def model_reports(
    cells: list[ServeResult],
    run: dict,
    *,
    pricing: Pricing | None,
    baseline: str | None,
    bound_ms: float,
    settings: Settings,
) -> list[ModelReport]:
    """Configurations, operating points, costs and every comparison, per model: the one
    analysis the report shows and the adaptive rounds judge by."""
    configs: dict[tuple, Config] = {}
    for r in cells:
        key = r.serving_key
        cfg = configs.setdefault(key, Config(*key, device=r.device))
        row = cfg.row(r.scenario, r.concurrency)
        if row is None:
            row = Row(r.scenario, r.concurrency)
            cfg.rows.append(row)
        row.results.append(r)
        if r.shared_cpus and r.path != "inprocess":  # in-process always does
            cpus = ",".join(str(x) for x in r.server_cpus)
            cfg.shared_cpus = f"server and load generator share CPUs {cpus}"
        if r.oversubscribed:
            cfg.oversubscribed = True
    for cfg in configs.values():
        order = ("single_stream", "server", "server_search", "offline", "concurrency")
        cfg.rows.sort(key=lambda x: (order.index(x.scenario) if x.scenario in order else 9,
                                     x.concurrency))  # fmt: skip
        for row in cfg.rows:
            _summarise_row(row)
        _operating_point(cfg, bound_ms)
        _cost(cfg, pricing)

    variants = list(dict.fromkeys([*(run.get("variants") or []), *(k[0] for k in configs)]))
    models = list(dict.fromkeys(k[2] for k in configs))
    base = parse_baseline(baseline)
    return [
        _model_report(m, sorted((c for c in configs.values() if c.model == m),
                                key=lambda c: (variants.index(c.variant), c.threads, c.path,
                                               c.max_batch_size, c.batch_timeout_ms)),
                      base, bound_ms, pricing, settings)
        for m in models
    ]  # fmt: skip


def _pick_baseline(cfgs: list[Config], base: tuple | None) -> Config | None:
    """Given (--baseline), else a GPU configuration, else the first variant; among those
    the priced ones, within the host's CPUs, most threads, in-process, unbatched first."""
    if base is not None:
        pick = [c for c in cfgs if c.variant == base[0] and base[1] in (None, c.threads)]
    else:
        gpu = [c for c in cfgs if c.device == "gpu" and c.cost_per_million]
        pick = gpu or [c for c in cfgs if c.variant == cfgs[0].variant]
    priced = [c for c in pick if c.cost_per_million] or pick
    if not priced:
        return None
    return max(priced, key=lambda c: (not c.oversubscribed, c.threads, c.path == "inprocess",
                                      c.max_batch_size == 1))  # fmt: skip


def _compare_to_baseline(cfgs: list[Config], baseline: Config, settings: Settings) -> None:
    for c in cfgs:
        if c is baseline:
            continue
        for row in c.rows:
            b = baseline.row(row.scenario, row.concurrency)
            if b is None:
                continue
            row.throughput_cmp = _compare(row.seconds_per_prediction(),
                                          b.seconds_per_prediction(), settings)  # fmt: skip
            if row.scenario not in ("offline", "server_search"):  # no latency to speak of
                row.p99_cmp = _compare(row.p99_by_round(), b.p99_by_round(), settings)
        c.throughput_cmp = _compare(c.operating_seconds(), baseline.operating_seconds(), settings)
        c.cost_cmp = _compare(c.costs, baseline.costs, settings)
        c.cost_ratio = c.cost_cmp.ratio if c.cost_cmp is not None else None


def as_throughput(cmp: stats.Comparison | None) -> stats.Comparison | None:
    """A comparison of seconds per prediction as one of throughput (the ratio and its
    interval inverted; the verdict is the same)."""
    if cmp is None:
        return None
    r = cmp.ratio
    inv = stats.Interval(1 / r.value, 1 / r.hi, 1 / r.lo, r.method, r.n, r.coverage, r.looks,
                         r.together)  # fmt: skip
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


def _p99_words(cmp: stats.Comparison) -> str:
    r = cmp.ratio
    if cmp.verdict == "different":
        return f"p99 {sig3(r.value)}x ({interval_words(r)}, decided)"
    if cmp.verdict == "equivalent":
        return f"p99 equivalent ({sig3(r.value)}x, {interval_words(r)})"
    return f"p99 ~{sig3(r.value)}x (undecided, {interval_words(r)})"


def _model_report(model: str, cfgs: list[Config], base: tuple | None, bound: float,
                  pricing: Pricing | None, settings: Settings) -> ModelReport:  # fmt: skip
    baseline = _pick_baseline(cfgs, base)
    if baseline is not None:
        baseline.is_baseline = True
        _compare_to_baseline(cfgs, baseline, settings)
    # cheapest first (a stable sort: the first listed wins a tie)
    priced = sorted(((c, iv) for c in cfgs if (iv := c.cost_per_million) is not None),
                    key=lambda m: m[1].value)  # fmt: skip
    met = [c for c, _ in priced]
    rep = ModelReport(model, cfgs, baseline, met[0] if met else None)
    within = f"p99 within {bound:g} ms"
    prices = ""
    if pricing is not None:
        prices = f"{pricing.catalog.name} prices, {pricing.effective_tier.replace('_', '-')}"
        prices += f" as of {pricing.effective_as_of}" if pricing.effective_as_of else ""
    currency = pricing.catalog.currency if pricing is not None else "USD"
    if met:
        c, iv = priced[0]
        thr = c.throughput_under_bound
        span = (
            f"{money(iv.lo, currency)}-{money(iv.hi, currency)}: {iv.label}"
            if iv.has_interval
            else iv.label
        )
        facts = (f"{money(iv.value, currency)} per million predictions ({span}); "
                 f"{sig3(thr.value if thr else None)} predictions/s ({c.operating}) on "
                 f"{c.instance} at {money(c.per_hour, currency)}/h ({prices})")  # fmt: skip
        if len(met) == 1:
            rep.conclusions.append(f"{model}: {c.label} is the only configuration that served it "
                                   f"with {within}: {facts}.")  # fmt: skip
        else:
            rep.runner_up = nxt = met[1]
            cmp = _compare(c.costs, nxt.costs, settings)
            rep.cheapest_cmp = cmp
            rep.cheapest_decided = (cmp is not None and cmp.verdict == "different"
                                    and cmp.direction == "lower")  # fmt: skip
            against = phrase(c, nxt, cmp, "cost") if cmp is not None else "no comparison"
            if rep.cheapest_decided:
                lead = f"{c.label} serves it cheapest with {within}"
            elif cmp is not None and cmp.verdict == "equivalent":
                lead = (f"{c.label} and {nxt.label} serve it about equally cheaply with {within} "
                        f"({c.label} lowest)")  # fmt: skip
            else:
                lead = (f"{c.label} had the lowest median cost with {within}, but it is not "
                        f"decided against the next cheapest")  # fmt: skip
            rep.conclusions.append(f"{model}: {lead}: {facts}; against the next cheapest: "
                                   f"{against}.")  # fmt: skip
    elif pricing is None:
        rep.conclusions.append(f"{model}: no prices given, so no cost per million predictions.")
    else:
        rep.conclusions.append(
            f"{model}: no configuration kept {within} (or none could be priced): try fewer "
            "requests in flight, more threads, batching, a larger --p99, or (over HTTP) the b64 encoding."
        )
    _gpu_sentences(rep, settings, within)
    _thread_sentences(rep, settings, within)
    ok = [r for c in cfgs for row in c.rows for r in row.ok]
    disturbed = [r for r in ok if r.disturbed]
    if disturbed:
        shares = sorted(r.others_share for r in disturbed if r.others_share is not None)
        span = ("more than a quarter" if not shares else f"{shares[0]:.0%}"
                if f"{shares[0]:.0%}" == f"{shares[-1]:.0%}"
                else f"{shares[0]:.0%}-{shares[-1]:.0%}")  # fmt: skip
        rep.conclusions.append(
            f"{len(disturbed)} of {len(ok)} successful cells were disturbed (other processes "
            f"used {span} of their CPUs during the load; the limit is {DISTURBED_SHARE:.0%}): "
            "they are in the tables and left out of every comparison, as in training."
        )
    shared: dict[str, list[str]] = {}  # every such configuration, not only the first
    for c in cfgs:
        if c.shared_cpus:
            shared.setdefault(c.shared_cpus, []).append(c.label)
    for where, labels in shared.items():
        rep.conclusions.append(
            f"{', '.join(labels)}: {where}, so the client's work is counted against the model "
            "(on a machine this small, expect lower throughput than a separate client would see)."
        )
    return rep


def _throughput(c: Config) -> float:
    return c.throughput_under_bound.value if c.throughput_under_bound is not None else 0.0


def _cost_value(c: Config) -> float:
    """The cost per million (no cost sorts last)."""
    return c.cost_per_million.value if c.cost_per_million is not None else float("inf")


def _gpu_sentences(rep: ModelReport, settings: Settings, within: str) -> None:
    """How much faster (and cheaper) the GPU serves, right after the cheapest: against
    the fastest and the cheapest CPU configuration, each at its own operating point."""
    gpus = [c for c in rep.configs if c.device == "gpu"]
    if not gpus:
        return
    gpu_ok = [c for c in gpus if c.operating_row is not None]
    cpus = [c for c in rep.configs if c.device != "gpu" and c.operating_row is not None]
    if not gpu_ok:
        ran = any(r.ok for c in gpus for row in c.rows for r in row.results)
        why = ("none met the bound" if ran else
               "none ran (skipped: no GPU on this host?)")  # fmt: skip
        rep.conclusions.append(f"GPU: {', '.join(c.label for c in gpus)}: {why}, so the GPU "
                               "is not compared.")  # fmt: skip
        return
    if not cpus:
        return
    gpu = max(gpu_ok, key=_throughput)
    fastest = max(cpus, key=_throughput)
    parts = []
    t = _compare(gpu.operating_seconds(), fastest.operating_seconds(), settings)
    if t is not None:
        parts.append(f"throughput with {within}: " + phrase(gpu, fastest, t, "time"))
    costed = [c for c in cpus if c.costs]
    if gpu.costs and costed:
        cheap = min(costed, key=_cost_value)
        cc = _compare(gpu.costs, cheap.costs, settings)
        if cc is not None:
            parts.append("cost per million against the cheapest CPU configuration: "
                         + phrase(gpu, cheap, cc, "cost"))  # fmt: skip
    if parts:
        rep.conclusions.insert(1, f"GPU vs the fastest CPU configuration ({fastest.label}): "
                               + "; ".join(parts) + ".")  # fmt: skip


def _thread_sentences(rep: ModelReport, settings: Settings, within: str) -> None:
    """Most vs fewest threads per variant, path and batching, at each one's operating
    point (what a run at 1..CPUs threads answers)."""
    groups: dict[tuple, list[Config]] = {}
    for c in rep.configs:
        groups.setdefault((c.variant, c.path, c.max_batch_size, c.batch_timeout_ms), []).append(c)
    for cs in groups.values():
        if len(cs) < 2:
            continue
        lo, hi = min(cs, key=lambda c: c.threads), max(cs, key=lambda c: c.threads)
        cmp = _compare(hi.operating_seconds(), lo.operating_seconds(), settings)
        if cmp is not None:
            rep.conclusions.append(f"Threads ({within}): {phrase(hi, lo, cmp, 'time')}.")
            continue
        # No operating point on one side: the throughput at the most requests in
        # flight both ran, said to be outside the bound.
        common = sorted({r.concurrency for r in hi.curve()} & {r.concurrency for r in lo.curve()})
        rows = [(hi.row("concurrency", n), lo.row("concurrency", n)) for n in common]
        cmps = [(n, _compare(a.seconds_per_prediction(), b.seconds_per_prediction(), settings))
                for n, (a, b) in zip(common, rows, strict=True) if a is not None and b is not None]  # fmt: skip
        found = [(n, cm) for n, cm in cmps if cm is not None]
        missing = " and ".join(c.label for c in (hi, lo) if c.operating_row is None)
        if found:
            n, at_n = found[-1]
            rep.conclusions.append(f"Threads (at {n} in flight; {missing} kept no point with "
                                   f"{within}): {phrase(hi, lo, at_n, 'time')}.")  # fmt: skip
        else:
            rows_ok = [r for c in (hi, lo) for r in c.rows if r.ok]
            if any(x.disturbed for r in rows_ok for x in r.ok):
                why = "no round with undisturbed repeats on both sides (below)"
            else:
                why = f"{missing} kept no point with {within}"
            rep.conclusions.append(f"Threads: {hi.label} vs {lo.label} not compared: {why}.")


def serving_csv_rows(sa: ServingAnalysis) -> list[dict[str, Any]]:
    rows = []
    for r in sa.cells:
        rows.append({
            "cell_id": r.cell_id, "model": r.model, "scenario": r.scenario,
            "concurrency": r.concurrency, "path": r.path, "variant": r.variant,
            "threads": r.threads, "repeat": r.round, "status": r.status,
            "reason": r.reason or "", "throughput_per_s": r.throughput_per_s,
            **{k: r.percentiles_ms.get(k) for k in PCTS}, "validity": r.validity,
            "max_qps_under_bound": r.max_qps_under_bound,
            "http_overhead_p50_ms": r.http_overhead_p50_ms,
            "shared_cpus": r.shared_cpus, "artifacts": r.get("artifacts"),
        })  # fmt: skip
    return rows


serving_cell_id = serve_cell_id  # the template and CSV name it so


def serving_frame(sa: ServingAnalysis) -> RunFrame:
    """The report's frame (header, warnings, environments) for a run with no training
    cells: a RunFrame, not a training analysis with nothing in it."""
    envs, raw = environments_of(sa.cells, dict.fromkeys(r.variant for r in sa.cells), ok_only=True)
    base = next((m.baseline.label for m in sa.models if m.baseline), "n/a")
    notices = sa.store.notices() if sa.store is not None else []
    return RunFrame(
        results_dir=sa.results_dir, run=sa.run, baseline_label=base, pricing=sa.pricing,
        environments=envs, raw_environments=raw,
        warnings=[cautions.StatWarning(n.kind, n.message, n.hint) for n in notices],
        counts=dict(sa.counts), logical_cpus=logical_cpus_of(sa.run),
        variants=list(dict.fromkeys(r.variant for r in sa.cells)), store=sa.store, serving=sa,
    )  # fmt: skip
