"""The report: statistics + pricing over stored result files -> one self-contained HTML
file (and optionally a CSV with one row per cell).

It reads results/<run>/run.json (when present) and results/<run>/cells/*.json and
nothing else: the run never renders, and a report can be re-made any time.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tfvariants import __version__, stats
from tfvariants.errors import UserError
from tfvariants.matrix import RUN_FILE, stored_results
from tfvariants.pricing import CellCost, Pricing
from tfvariants.svgchart import PALETTE, Bar, bar_chart

TEMPLATE_DIR = Path(__file__).parent / "templates"


@dataclass
class Group:
    """All repeats of one (workload, variant, threads)."""

    workload: str
    variant: str
    threads: int
    device: str = "cpu"
    results: list[dict] = field(default_factory=list)
    time: stats.Interval | None = None  # projected full-schedule training time, s
    steady: stats.Interval | None = None  # steady epoch time, s
    warmup_s: float | None = None
    samples_per_s: float | None = None
    gflops_per_s: float | None = None
    accuracy: float | None = None
    chance: float | None = None
    peak_rss_bytes: int | None = None
    oversubscribed: bool = False
    oversubscription_ratio: float = 1.0
    times: list[float] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    cost: CellCost | None = None  # at the median time
    cost_iv: stats.Interval | None = None
    time_cmp: stats.Comparison | None = None
    cost_cmp: stats.Comparison | None = None
    is_baseline: bool = False
    warnings: list[stats.StatWarning] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.variant}@{self.threads}"

    @property
    def ok(self) -> list[dict]:
        return [r for r in self.results if r.get("status") == "ok"]

    def n(self, status: str) -> int:
        return sum(1 for r in self.results if r.get("status") == status)

    @property
    def reasons(self) -> list[str]:
        return sorted(
            {
                str(r.get("reason"))
                for r in self.results
                if r.get("status") != "ok" and r.get("reason")
            }
        )

    @property
    def flags(self) -> list[str]:
        out = []
        if self.oversubscribed:
            out.append(f"oversubscribed x{self.oversubscription_ratio:g}")
        for status in ("failed", "timeout", "skipped"):
            if self.n(status):
                out.append(f"{self.n(status)} {status}")
        if (
            self.time_cmp is not None
            and not self.is_baseline
            and self.time_cmp.verdict == "not significant"
        ):
            out.append("not significant")
        return out


@dataclass
class WorkloadReport:
    name: str
    groups: list[Group]
    baseline: Group | None
    fastest: Group | None = None
    cheapest: Group | None = None
    pareto: list[Group] = field(default_factory=list)
    conclusions: list[str] = field(default_factory=list)
    time_chart: Any = None
    cost_chart: Any = None


@dataclass
class Analysis:
    results_dir: str
    run: dict
    workloads: list[WorkloadReport]
    baseline_label: str
    pricing: Pricing | None
    environments: dict[str, dict[str, str]]
    raw_environments: dict[str, list[tuple[str, str]]]
    warnings: list[stats.StatWarning]
    counts: dict[str, int]
    logical_cpus: int | None
    generated_at: str
    cells: list[dict]


# ---- reading values out of results (fail soft: a missing key is just "n/a") ----


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _first(d: Any, *paths: tuple[str, ...]) -> Any:
    for path in paths:
        v = _get(d, *path)
        if v not in (None, "", [], {}):
            return v
    return None


def training_time_s(result: dict) -> float | None:
    """The (projected) full-schedule training time of a cell: what a user would pay for."""
    v = _get(result, "schedule", "projected_full_s")
    if isinstance(v, (int, float)) and v > 0:
        return float(v)
    epochs = _get(result, "timing", "epoch_times_s")
    if isinstance(epochs, list) and epochs:
        return float(sum(epochs))
    return None


def _num(v: Any) -> float | None:
    return (
        float(v)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        else None
    )


def _median(values: Iterable[Any]) -> float | None:
    xs = [x for x in (_num(v) for v in values) if x is not None]
    return statistics.median(xs) if xs else None


def _warmup_s(result: dict) -> float | None:
    epochs = _get(result, "timing", "epoch_times_s")
    n = _get(result, "timing", "warmup_epochs") or 0
    if isinstance(epochs, list) and isinstance(n, int) and n > 0 and len(epochs) >= n:
        return float(sum(epochs[:n]))
    return None


def _accuracy(result: dict) -> float | None:
    return _num(_first(result, ("metrics", "val_accuracy"), ("metrics", "accuracy")))


def environment_summary(env: dict) -> dict[str, str]:
    """The fields a reader compares across variants, from workloads.envprobe output."""

    def text(v: Any) -> str:
        if v is None:
            return "n/a"
        if isinstance(v, bool):
            return "on" if v else "off"
        if isinstance(v, list):
            return ", ".join(str(x) for x in v) if v else "none"
        if isinstance(v, dict):
            return ", ".join(f"{k}={text(x)}" for k, x in v.items()) or "none"
        return str(v)

    missing = _first(
        env,
        ("tensorflow", "missing_instructions"),
        ("tensorflow", "missing_isa"),
        ("missing_isa",),
    )
    if missing is None:  # an empty list is an answer: the binary lacks nothing
        missing = _get(env, "tensorflow", "missing_instructions")
    gpu = _first(env, ("tensorflow", "gpus"), ("gpu", "devices"), ("gpu", "name"), ("gpu",))
    if gpu is None and isinstance(_get(env, "tensorflow", "gpus"), list):
        gpu = "none"
    return {
        "TensorFlow": text(_first(env, ("tensorflow", "version"), ("tf_version",))),
        "Compiler": text(
            _first(env, ("tensorflow", "compiler_version"), ("tensorflow", "compiler"))
        ),
        "Instructions the binary lacks": text(missing),
        "oneDNN": text(
            _first(
                env,
                ("tensorflow", "onednn", "state"),
                ("onednn", "state"),
                ("onednn", "enabled"),
                ("onednn",),
            )
        ),
        "GPU": text(gpu),
        "CPU": text(_first(env, ("cpu", "model"), ("cpu", "model_name"))),
    }


def _flatten(d: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(d, dict):
        out: list[tuple[str, str]] = []
        for k, v in d.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(d, list) and len(d) > 12:
        return [(prefix, ", ".join(str(x) for x in d[:12]) + f", ... ({len(d)} items)")]
    return [(prefix, str(d))]


# ---- analysis ----


def parse_baseline(text: str | None) -> tuple[str, int | None] | None:
    if not text:
        return None
    variant, sep, threads = text.partition("@")
    if not variant or (sep and not threads.isdigit()):
        raise UserError(f"--baseline {text!r}: expected VARIANT or VARIANT@THREADS")
    return variant, int(threads) if sep else None


def _order(values: Iterable[Any], preferred: list | None) -> list:
    seen = list(dict.fromkeys(values))
    pref = [v for v in (preferred or []) if v in seen]
    return pref + sorted((v for v in seen if v not in pref), key=str)


def _device(variant: str, run: dict, results: list[dict]) -> str:
    dev = _get(run, "variant_info", variant, "device")
    if dev in ("cpu", "gpu"):
        return dev
    return "gpu" if variant == "gpu" else "cpu"


def _planned_ids(run: dict) -> list[str]:
    """Cell ids the run's matrix (run.json) planned; empty without run.json."""
    from tfvariants.runner import Cell

    try:
        return [
            Cell(str(v), int(t), str(w), r).cell_id
            for v in run.get("variants", [])
            for t in run.get("threads", [])
            for w in run.get("workloads", [])
            for r in range(int(run.get("repeats", 0)))
        ]
    except (TypeError, ValueError):
        return []


def _missing_cells(run: dict, stored: dict) -> list[str]:
    return [cid for cid in _planned_ids(run) if cid not in stored]


def analyze(
    results_dir: Path,
    *,
    pricing: Pricing | None = None,
    baseline: str | None = None,
    min_effect: float = stats.MIN_EFFECT,
) -> Analysis:
    """Group stored results, compute statistics, costs, comparisons and conclusions."""
    results_dir = Path(results_dir)
    run_path = results_dir / RUN_FILE
    run: dict = {}
    if run_path.is_file():
        try:
            run = json.loads(run_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UserError(f"{run_path}: unreadable ({exc})") from None
    stored = stored_results(results_dir)
    if not stored:
        raise UserError(f"{results_dir}: no result files in {results_dir / 'cells'}")
    cells = [r for _, r in sorted(stored.items())]
    cpus = run.get("logical_cpus") if isinstance(run.get("logical_cpus"), int) else None
    if cpus is None:
        cpus = next(
            (
                c
                for c in (_get(r, "environment", "cpu", "logical_cpus") for r in cells)
                if isinstance(c, int)
            ),
            None,
        )

    groups: dict[tuple[str, str, int], Group] = {}
    for r in cells:
        c = r["cell"]
        key = (str(c.get("workload")), str(c.get("variant")), int(c.get("threads", 0)))
        g = groups.setdefault(key, Group(key[0], key[1], key[2], _device(key[1], run, cells)))
        g.results.append(r)

    variants = _order((k[1] for k in groups), run.get("variants"))
    workloads = _order((k[0] for k in groups), run.get("workloads"))
    base = parse_baseline(baseline)
    if base is None:
        first = variants[0]
        base = (first, max(k[2] for k in groups if k[1] == first))
    elif base[0] not in variants:
        raise UserError(
            f"--baseline {baseline}: no results for variant {base[0]!r} (have: {', '.join(variants)})"
        )
    if base[1] is None:
        base = (base[0], max(k[2] for k in groups if k[1] == base[0]))
    baseline_label = f"{base[0]}@{base[1]}"

    all_warnings: list[stats.StatWarning] = []
    over: dict[int, list[str]] = {}
    for g in groups.values():
        _summarise(g, pricing, cpus)
        all_warnings += [w for w in g.warnings if w.kind != "oversubscribed"]
        if g.oversubscribed:
            over.setdefault(g.threads, []).append(g.label)
    # One line per thread count, not one per cell: the same fact repeated drowns the rest.
    for threads, labels in sorted(over.items()):
        configs = ", ".join(dict.fromkeys(labels))
        w = stats.oversubscribed_warning(configs, threads, cpus or 0)
        all_warnings.insert(0, w)

    missing = _missing_cells(run, stored)
    if missing:
        planned = len(missing) + sum(1 for cid in stored if cid in _planned_ids(run))
        all_warnings.insert(
            0,
            stats.StatWarning(
                "incomplete",
                f"{len(missing)} of {planned} planned cells have no result "
                f"(e.g. {', '.join(missing[:3])}): the run was interrupted or is still going",
                f"finish it with: tfvariants compare --resume --out {results_dir}",
            ),
        )

    reports = []
    for w in workloads:
        wgroups = sorted(
            (g for g in groups.values() if g.workload == w),
            key=lambda g: (variants.index(g.variant), g.threads),
        )
        bgroup = groups.get((w, base[0], base[1]))
        wr = WorkloadReport(w, wgroups, bgroup)
        _compare_to_baseline(wr, min_effect)
        if wr.baseline is None or wr.baseline.time is None:
            all_warnings.append(
                stats.StatWarning(
                    "no_baseline",
                    f"{w}: the baseline {baseline_label} has no successful runs, so no ratios",
                    "pick another --baseline (VARIANT@THREADS) or --resume the failed cells",
                )
            )
        _conclude(wr, baseline_label, cpus, pricing)
        _charts(wr, baseline_label, variants, pricing)
        reports.append(wr)

    envs: dict[str, dict[str, str]] = {}
    raw_envs: dict[str, list[tuple[str, str]]] = {}
    for v in variants:
        env = next(
            (
                r.get("environment")
                for r in cells
                if r["cell"].get("variant") == v and isinstance(r.get("environment"), dict)
            ),
            None,
        )
        if env:
            envs[v] = environment_summary(env)
            raw_envs[v] = _flatten(env)
    counts: dict[str, int] = {}
    for r in cells:
        counts[str(r.get("status"))] = counts.get(str(r.get("status")), 0) + 1
    return Analysis(
        results_dir=str(results_dir),
        run=run,
        workloads=reports,
        baseline_label=baseline_label,
        pricing=pricing,
        environments=envs,
        raw_environments=raw_envs,
        warnings=all_warnings,
        counts=counts,
        logical_cpus=cpus,
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        cells=cells,
    )


def _summarise(g: Group, pricing: Pricing | None, cpus: int | None) -> None:
    ok = g.ok
    g.oversubscribed = any(bool(_get(r, "requested", "oversubscribed")) for r in g.results)
    ratios = [_num(_get(r, "requested", "oversubscription_ratio")) for r in g.results]
    g.oversubscription_ratio = max([x for x in ratios if x] or [g.threads / cpus if cpus else 1.0])
    if not g.oversubscribed and cpus and g.threads > cpus and g.device == "cpu":
        g.oversubscribed, g.oversubscription_ratio = True, g.threads / cpus
    label = f"{g.workload} {g.label}"
    if g.oversubscribed:
        g.warnings.append(
            stats.oversubscribed_warning(
                label, g.threads, cpus or int(g.threads / g.oversubscription_ratio)
            )
        )
    for status in ("failed", "timeout"):
        if g.n(status):
            g.warnings.append(
                stats.StatWarning(
                    status,
                    f"{label}: {g.n(status)} of {len(g.results)} repeats {status} ({'; '.join(g.reasons)[:200]})",
                    "read the cell's stderr_tail in results/<run>/cells/, fix, then rerun with --resume",
                )
            )
    if g.n("skipped"):
        g.warnings.append(
            stats.StatWarning(
                "skipped",
                f"{label} was skipped: {'; '.join(g.reasons)[:200]}",
                "run it on a host that has what it needs",
            )
        )
    g.times = [t for t in (training_time_s(r) for r in ok) if t]
    if not g.times:
        return
    g.time = stats.median_interval(g.times)
    steadies = [x for x in (_num(_get(r, "timing", "steady_epoch_s")) for r in ok) if x]
    g.steady = stats.median_interval(steadies) if steadies else None
    g.warmup_s = _median(_warmup_s(r) for r in ok)
    g.samples_per_s = _median(_get(r, "timing", "samples_per_s") for r in ok)
    g.gflops_per_s = _median(_get(r, "gflops_per_s") for r in ok)
    g.accuracy = _median(_accuracy(r) for r in ok)
    g.chance = _num(
        next((r.get("chance_accuracy") for r in ok if r.get("chance_accuracy") is not None), None)
    )
    rss = [x for x in (_num(_get(r, "memory", "peak_rss_bytes")) for r in ok) if x]
    g.peak_rss_bytes = int(max(rss)) if rss else None
    g.warnings += stats.stability_warnings(label, steadies or g.times)
    if pricing is not None:
        g.cost = pricing.cost(g.variant, g.threads, g.time.value, g.device)
        if g.cost is not None:
            per_s = g.cost.per_hour / 3600
            bill = pricing.catalog.billing.billed_seconds
            g.costs = [per_s * bill(t) for t in g.times]
            # Billing is monotone in time, so the time interval maps to a cost interval.
            g.cost_iv = stats.Interval(
                g.cost.cost,
                per_s * bill(g.time.lo),
                per_s * bill(g.time.hi),
                g.time.method,
                g.time.n,
            )


def _compare_to_baseline(wr: WorkloadReport, min_effect: float) -> None:
    b = wr.baseline
    if b is None or not b.times:
        return
    b.is_baseline = True
    for g in wr.groups:
        if not g.times:
            continue
        if g is b:
            one = stats.Interval(1.0, 1.0, 1.0, "exact", len(g.times))
            g.time_cmp = stats.Comparison(one, None, None, "baseline")
            if g.costs:
                g.cost_cmp = stats.Comparison(one, None, None, "baseline")
            continue
        g.time_cmp = stats.compare(g.times, b.times, min_effect=min_effect)
        if g.costs and b.costs:
            g.cost_cmp = _cost_compare(g, b, min_effect)


def _cost_compare(g: Group, b: Group, min_effect: float) -> stats.Comparison:
    cmp = stats.compare(g.costs, b.costs, min_effect=min_effect)
    if g.cost_iv and b.cost_iv and g.cost_iv.value > 0 and b.cost_iv.value > 0:
        ratio = stats.ratio_interval(g.cost_iv, b.cost_iv)
        return stats.Comparison(ratio, cmp.p_value, cmp.ci_overlap, cmp.verdict, cmp.reasons)
    return cmp


def _speed_phrase(a: Group, b: Group, cmp: stats.Comparison) -> str:
    r = cmp.ratio
    if cmp.verdict == "faster":
        lo, hi = (1 / r.hi if r.hi else math.inf), 1 / r.lo if r.lo else math.inf
        return f"{a.label} was {1 / r.value:.2f}x faster than {b.label} (significant; 95% interval {lo:.2f}-{hi:.2f}x)"
    if cmp.verdict == "slower":
        return f"{a.label} was {r.value:.2f}x slower than {b.label} (significant; 95% interval {r.lo:.2f}-{r.hi:.2f}x the time)"
    return (
        f"{a.label} vs {b.label}: no significant difference shown (time ratio {r.value:.2f}, "
        f"not significant: {'; '.join(cmp.reasons) or 'too little data'})"
    )


def _conclude(
    wr: WorkloadReport, baseline_label: str, cpus: int | None, pricing: Pricing | None
) -> None:
    with_time = [g for g in wr.groups if g.time is not None]
    if not with_time:
        wr.conclusions.append(
            f"{wr.name}: no configuration finished successfully, so there is nothing to compare."
        )
        return
    wr.fastest = min(with_time, key=lambda g: g.time.value)  # type: ignore[union-attr]
    costed = [g for g in with_time if g.cost is not None]
    if costed:
        wr.cheapest = min(costed, key=lambda g: g.cost.cost)  # type: ignore[union-attr]
        wr.pareto = [
            g
            for g in costed
            if not any(
                h.time.value <= g.time.value
                and h.cost.cost <= g.cost.cost  # type: ignore[union-attr]
                and (h.time.value < g.time.value or h.cost.cost < g.cost.cost)  # type: ignore[union-attr]
                for h in costed
            )
        ]
    host = f"On {cpus} logical CPUs" if cpus else "On this host"
    said: set[frozenset] = set()  # pairs already compared in a sentence
    b = wr.baseline if wr.baseline is not None and wr.baseline.time is not None else None
    f = wr.fastest
    if b is None:
        wr.conclusions.append(
            f"{host}, {f.label} was the fastest for {wr.name} ({_dur(f.time.value)} for the full schedule); "  # type: ignore[union-attr]
            f"the baseline {baseline_label} has no successful runs, so no comparison is claimed."
        )
    elif f is b:
        others = [g for g in with_time if g is not b and g.time_cmp is not None]
        wr.conclusions.append(
            f"{host}, the baseline {b.label} was the fastest for {wr.name} ({_dur(b.time.value)} for the full schedule)."
        )  # type: ignore[union-attr]
        if others:
            runner_up = min(others, key=lambda g: g.time.value)  # type: ignore[union-attr]
            cmp = stats.compare(b.times, runner_up.times)
            wr.conclusions.append(f"Against the next best: {_speed_phrase(b, runner_up, cmp)}.")
            said.add(frozenset((runner_up.label, b.label)))
    else:
        wr.conclusions.append(
            f"{host}, for {wr.name}, {_speed_phrase(f, b, f.time_cmp)}; it was the fastest configuration."
        )  # type: ignore[arg-type]
        said.add(frozenset((f.label, b.label)))
    # Thread scaling per variant: most vs fewest threads (the question a 2-core --quick run answers).
    for v in dict.fromkeys(g.variant for g in with_time):
        vg = sorted((g for g in with_time if g.variant == v), key=lambda g: g.threads)
        if len(vg) >= 2:
            hi, lo = vg[-1], vg[0]
            if frozenset((hi.label, lo.label)) not in said:
                cmp = stats.compare(hi.times, lo.times)
                wr.conclusions.append(f"Threads: {_speed_phrase(hi, lo, cmp)}.")
    if wr.cheapest is not None and pricing is not None:
        c = wr.cheapest
        text = f"Cheapest: {c.label} at {_money(c.cost.cost)} per full training run on {c.cost.instance}"  # type: ignore[union-attr]
        if c.cost_cmp is not None and c is not b:
            r = c.cost_cmp.ratio
            sig = "significant" if c.cost_cmp.significant else "not significant"
            text += f" ({r.value:.2f}x the baseline's cost, {sig})"
        wr.conclusions.append(text + ".")
    flagged = [g.label for g in (wr.fastest, wr.cheapest) if g is not None and g.oversubscribed]
    if flagged:
        wr.conclusions.append(
            f"Caution: {', '.join(dict.fromkeys(flagged))} ran with more threads than this host has CPUs: "
            "these numbers do not show how a machine with that many vCPUs behaves."
        )


def _charts(
    wr: WorkloadReport, baseline_label: str, variants: list[str], pricing: Pricing | None
) -> None:
    colors = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(variants)}

    def bars(kind: str) -> list[Bar]:
        out = []
        for g in wr.groups:
            cmp = g.time_cmp if kind == "time" else g.cost_cmp
            if cmp is None:
                why = (
                    "; ".join(
                        sorted({str(r.get("status")) for r in g.results if r.get("status") != "ok"})
                    )
                    or "no data"
                )
                if g.times and kind == "cost":
                    why = "no price for this instance"
                elif g.times:
                    why = "no baseline"
                out.append(Bar(g.label, None, color=colors[g.variant], note=why))
                continue
            r = cmp.ratio
            note = {"baseline": "baseline", "not significant": "n.s."}.get(cmp.verdict, "")
            label = g.label + (" *" if g.oversubscribed else "")
            hi = r.hi if math.isfinite(r.hi) else None
            out.append(
                Bar(label, r.value, r.lo, hi, colors[g.variant], note, emphasis=cmp.verdict == "baseline",
                    faded=cmp.verdict == "not significant")
            )  # fmt: skip
        return out

    foot = "* more threads than host CPUs" if any(g.oversubscribed for g in wr.groups) else ""
    wr.time_chart = bar_chart(
        f"{wr.name}: training time vs {baseline_label}", bars("time"), footnote=foot
    )
    if pricing is not None:
        wr.cost_chart = bar_chart(
            f"{wr.name}: training cost vs {baseline_label}", bars("cost"), footnote=foot
        )


# ---- formatting helpers (also used by the template) ----


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def _money(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"${v:.4f}" if v < 1 else f"${v:.2f}"


def _interval(iv: stats.Interval | None, fmt: Any = _dur) -> str:
    if iv is None:
        return "n/a"
    if iv.method in ("none", "exact") or iv.lo == iv.hi:
        return fmt(iv.value)
    value, lo, hi = fmt(iv.value), fmt(iv.lo), fmt(iv.hi)
    unit = value.rpartition(" ")[2] if " " in value else ""
    if unit and lo.endswith(" " + unit) and hi.endswith(" " + unit):  # "10.0 min (9.7-10.2)"
        return f"{value} ({lo[: -len(unit) - 1]}-{hi[: -len(unit) - 1]})"
    return f"{value} ({lo}-{hi})"


def _ratio(cmp: stats.Comparison | None) -> str:
    if cmp is None:
        return "n/a"
    if cmp.verdict == "baseline":
        return "1 (baseline)"
    r = cmp.ratio
    hi = f"{r.hi:.2f}" if math.isfinite(r.hi) else "inf"
    mark = "" if cmp.significant else "~"
    word = {"faster": "lower", "slower": "higher"}.get(cmp.verdict, "n.s.")
    return f"{mark}{r.value:.2f} ({r.lo:.2f}-{hi}) {word}"


def _interval_sub(iv: stats.Interval | None, fmt: Any = _dur) -> str:
    """Only the interval part, e.g. "9.7-10.2 min" ("" when there is none)."""
    if iv is None or iv.method in ("none", "exact") or iv.lo == iv.hi:
        return ""
    lo, hi = fmt(iv.lo), fmt(iv.hi)
    unit = hi.rpartition(" ")[2] if " " in hi else ""
    if unit and lo.endswith(" " + unit):
        lo = lo[: -len(unit) - 1]
    return f"{lo}-{hi}"


def _ratio_main(cmp: stats.Comparison | None) -> str:
    if cmp is None:
        return "n/a"
    if cmp.verdict == "baseline":
        return "1 (baseline)"
    return f"{'' if cmp.significant else '~'}{cmp.ratio.value:.2f}x"


def _ratio_sub(cmp: stats.Comparison | None) -> str:
    if cmp is None or cmp.verdict == "baseline":
        return ""
    r = cmp.ratio
    word = {"faster": "lower", "slower": "higher"}.get(cmp.verdict, "n.s.")
    if r.lo == r.hi:
        return word
    hi = f"{r.hi:.2f}" if math.isfinite(r.hi) else "inf"
    return f"{r.lo:.2f}-{hi}, {word}"


def _mem(b: int | None) -> str:
    return "n/a" if b is None else f"{b / 2**20:.0f} MiB"


def _num_fmt(v: float | None, digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:,.{digits}f}"


def render_html(analysis: Analysis) -> str:
    """The report as one self-contained HTML string (autoescaped)."""
    from jinja2 import Environment, FileSystemLoader

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        dur=_dur, money=_money, interval=_interval, ratio=_ratio, mem=_mem, num=_num_fmt
    )
    env.filters.update(ratio_main=_ratio_main, ratio_sub=_ratio_sub, interval_sub=_interval_sub)
    env.filters["money_sub"] = lambda iv: _interval_sub(iv, _money).replace("-$", "-")
    return env.get_template("report.html").render(a=analysis, version=__version__)


CSV_COLUMNS = [
    "cell_id", "workload", "variant", "threads", "repeat", "status", "reason",
    "steady_epoch_s", "warmup_s", "training_time_s", "projected", "samples_per_s",
    "gflops_per_s", "accuracy", "chance_accuracy", "peak_rss_bytes", "oversubscribed",
    "instance", "price_per_hour", "price_tier", "billed_seconds", "cost",
]  # fmt: skip


def csv_rows(analysis: Analysis) -> list[dict[str, Any]]:
    rows = []
    pricing = analysis.pricing
    for r in analysis.cells:
        c = r["cell"]
        t = training_time_s(r) if r.get("status") == "ok" else None
        device = _device(str(c.get("variant")), analysis.run, analysis.cells)
        cost = (
            pricing.cost(str(c["variant"]), int(c["threads"]), t, device)
            if (pricing and t)
            else None
        )
        sched = r.get("schedule") or {}
        rows.append({
            "cell_id": f"{c.get('workload')}__{c.get('variant')}__t{c.get('threads')}__r{c.get('repeat')}",
            "workload": c.get("workload"), "variant": c.get("variant"), "threads": c.get("threads"),
            "repeat": c.get("repeat"), "status": r.get("status"), "reason": r.get("reason") or "",
            "steady_epoch_s": _get(r, "timing", "steady_epoch_s"), "warmup_s": _warmup_s(r),
            "training_time_s": t,
            "projected": bool(sched) and (sched.get("ran_epochs") != sched.get("full_epochs")
                                          or sched.get("ran_samples") != sched.get("full_samples")),
            "samples_per_s": _get(r, "timing", "samples_per_s"), "gflops_per_s": r.get("gflops_per_s"),
            "accuracy": _accuracy(r), "chance_accuracy": r.get("chance_accuracy"),
            "peak_rss_bytes": _get(r, "memory", "peak_rss_bytes"),
            "oversubscribed": bool(_get(r, "requested", "oversubscribed")),
            "instance": cost.instance if cost else "", "price_per_hour": cost.per_hour if cost else "",
            "price_tier": cost.tier if cost else "", "billed_seconds": cost.billed_seconds if cost else "",
            "cost": round(cost.cost, 6) if cost else "",
        })  # fmt: skip
    return rows


def write_csv(analysis: Analysis, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in csv_rows(analysis):
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    tmp.replace(path)
    return path


def write_report(
    results_dir: Path,
    out: Path,
    *,
    pricing: Pricing | None = None,
    baseline: str | None = None,
    csv_path: Path | None = None,
) -> Analysis:
    """Analyse results_dir and write the HTML report (atomically) and optional CSV."""
    analysis = analyze(results_dir, pricing=pricing, baseline=baseline)
    html = render_html(analysis)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
    if csv_path is not None:
        write_csv(analysis, csv_path)
    return analysis
