"""The serving analysis: stored serving cells grouped by configuration (variant, threads,
model, path), with the throughput-vs-concurrency curve, latency percentiles, LoadGen's
verdict per cell, HTTP overhead, dollars per million predictions and the cheapest
configuration meeting a p99 bound, as plain data.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfvariants.analyze import stats
from tfvariants.analyze.analysis import parse_baseline
from tfvariants.analyze.format import money, sig3
from tfvariants.analyze.frame import RunFrame, environments_of, logical_cpus_of
from tfvariants.analyze.pricing import Pricing
from tfvariants.plan.serve import serve_cell_id
from tfvariants.store.cellresult import PERCENTILES, ServeResult, finite_number, get_path, serving
from tfvariants.store.rundir import RunContents, load_run_dir

PCTS = PERCENTILES
# The number each LoadGen scenario is judged by (the test compares it to the detail log).
HEADLINE = {"single_stream": "p90_ms", "server": "p99_ms", "offline": "throughput_per_s",
            "server_search": "max_qps_under_bound"}  # fmt: skip


def _median(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.median(xs) if xs else None


def _interval(values: Iterable[float | None]) -> stats.Interval | None:
    xs = [v for v in values if v is not None and v > 0]
    return stats.median_interval(xs) if xs else None


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

    @property
    def ok(self) -> list[ServeResult]:
        return [r for r in self.results if r.ok]

    @property
    def reasons(self) -> list[str]:
        return sorted({str(r.reason) for r in self.results if not r.ok})


@dataclass
class Config:
    variant: str
    threads: int
    model: str
    path: str
    device: str = "cpu"
    rows: list[Row] = field(default_factory=list)
    shared_cpus: str | None = None  # "server and load generator share CPUs 0,1"
    oversubscribed: bool = False
    operating: str | None = None  # where the cost's throughput comes from
    throughput_under_bound: stats.Interval | None = None
    instance: str | None = None
    per_hour: float | None = None
    cost_per_million: stats.Interval | None = None
    cost_ratio: stats.Interval | None = None
    is_baseline: bool = False

    @property
    def label(self) -> str:
        return f"{self.variant}@{self.threads} {self.path}"

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
    best: tuple[stats.Interval, str] | None = None
    for row in cfg.rows:
        if row.scenario == "concurrency" and row.throughput is not None:
            p99 = row.percentiles.get("p99_ms")
            if p99 is not None and p99 <= bound_ms:
                cand = (row.throughput, f"{row.concurrency} in flight, p99 {sig3(p99)} ms")
                best = cand if best is None or cand[0].value > best[0].value else best
        elif row.scenario == "server_search" and row.max_qps is not None:
            cand = (row.max_qps, "LoadGen Server QPS search")
            best = cand if best is None or cand[0].value > best[0].value else best
    if best is not None:
        cfg.throughput_under_bound, cfg.operating = best


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

    # Cost falls as throughput rises: the interval's ends swap.
    # The coverage carries over: without it the interval reads as none (and the ratio to
    # the baseline as a zero-width "1.17-1.17").
    cfg.cost_per_million = stats.Interval(per_million(iv.value), per_million(iv.hi),
                                          per_million(iv.lo), iv.method, iv.n,
                                          iv.coverage)  # fmt: skip


def analyze_serving(
    results_dir: Path,
    *,
    pricing: Pricing | None = None,
    baseline: str | None = None,
    p99_bound_ms: float | None = None,
    allow_mixed_hosts: bool = False,
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
    configs: dict[tuple[str, int, str, str], Config] = {}
    for r in cells:
        cfg = configs.setdefault(r.config, Config(*r.config, device=r.device))
        row = next((x for x in cfg.rows if (x.scenario, x.concurrency) ==
                    (r.scenario, r.concurrency)), None)  # fmt: skip
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
        _operating_point(cfg, bound)
        _cost(cfg, pricing)

    variants = list(dict.fromkeys([*(run.get("variants") or []), *(k[0] for k in configs)]))
    models = list(dict.fromkeys(k[2] for k in configs))
    base = parse_baseline(baseline)
    reports = []
    for m in models:
        mcfgs = sorted((c for c in configs.values() if c.model == m),
                       key=lambda c: (variants.index(c.variant), c.threads, c.path))  # fmt: skip
        reports.append(_model_report(m, mcfgs, base, bound, pricing))
    counts: dict[str, int] = {}
    for r in cells:
        counts[r.status] = counts.get(r.status, 0) + 1
    return ServingAnalysis(str(results_dir), run, reports, cells, bound, pricing, counts,
                           only_serving, contents)  # fmt: skip


def _model_report(model: str, cfgs: list[Config], base: tuple | None, bound: float,
                  pricing: Pricing | None) -> ModelReport:  # fmt: skip
    gpu = [c for c in cfgs if c.device == "gpu" and c.cost_per_million]
    if base is not None:
        pick = [c for c in cfgs if c.variant == base[0] and base[1] in (None, c.threads)]
    else:
        pick = gpu or [c for c in cfgs if c.variant == cfgs[0].variant]
    priced = [c for c in pick if c.cost_per_million] or pick
    baseline = (max(priced, key=lambda c: (c.threads, c.path == "inprocess")) if priced
                else None)  # fmt: skip
    if baseline is not None:
        baseline.is_baseline = True
        for c in cfgs:
            if c.cost_per_million and baseline.cost_per_million:
                c.cost_ratio = stats.ratio_interval(c.cost_per_million, baseline.cost_per_million)
    # Cheapest first (a stable sort: the first listed wins a tie).
    met = sorted(
        ((c, iv) for c in cfgs if (iv := c.cost_per_million) is not None),
        key=lambda m: m[1].value,
    )
    rep = ModelReport(model, cfgs, baseline, met[0][0] if met else None)
    currency = pricing.catalog.currency if pricing is not None else "USD"
    if met:
        cheapest, iv = met[0]
        span = (
            f"{money(iv.lo, currency)}-{money(iv.hi, currency)}: {iv.label}"
            if iv.has_interval
            else iv.label
        )
        thr = cheapest.throughput_under_bound
        rep.conclusions.append(
            f"{model}: the cheapest configuration with p99 within {bound:g} ms is "
            f"{cheapest.label} at {money(iv.value, currency)} per million predictions ({span}); "
            f"{sig3(thr.value if thr else None)} predictions/s ({cheapest.operating}), "
            f"billed as {cheapest.instance}."
        )
        if len(met) > 1:  # the runner-up with its interval, so overlap is visible
            nxt, niv = met[1]
            rep.conclusions[-1] += (
                f" Next: {nxt.label} at {money(niv.value, currency)}"
                + (f" ({money(niv.lo, currency)}-{money(niv.hi, currency)})" if niv.has_interval else "")
                + (" (the intervals overlap: not clearly cheaper)."
                   if iv.has_interval and niv.has_interval and niv.lo <= iv.hi else ".")
            )  # fmt: skip
    elif pricing is None:
        rep.conclusions.append(f"{model}: no prices given, so no cost per million predictions.")
    else:
        rep.conclusions.append(
            f"{model}: no configuration kept p99 within {bound:g} ms (or none could be priced): "
            "try fewer requests in flight, more threads, or run the concurrency / server_search scenarios."
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
        warnings=[stats.StatWarning(n.kind, n.message, n.hint) for n in notices],
        counts=dict(sa.counts), logical_cpus=logical_cpus_of(sa.run),
        variants=list(dict.fromkeys(r.variant for r in sa.cells)), store=sa.store, serving=sa,
    )  # fmt: skip
