"""The CSV export: one row per stored cell (serving cells in a CSV of their own)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from tfvariants.analyze.report.build import Report
from tfvariants.analyze.serving.configs import PCTS, ServingAnalysis
from tfvariants.analyze.training import loadlabel, roofline
from tfvariants.analyze.training.analysis import Analysis
from tfvariants.render.output import write_text_atomic
from tfvariants.store.cellresult import ConfigKey

# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

CSV_COLUMNS = [
    "cell_id",
    "workload",
    "variant",
    "threads",
    "repeat",
    "status",
    "reason",
    "steady_epoch_s",
    "warmup_s",
    "training_time_s",
    "projected",
    "samples_per_s",
    "gflops_per_s",
    "accuracy",
    "chance_accuracy",
    "peak_rss_bytes",
    "oversubscribed",
    "instance",
    "price_per_hour",
    "price_tier",
    "billed_seconds",
    "cost",
    "currency",
    "warmup_steps",
    "steady_steps",
    "steady_step_s",
    "projected_lo_s",
    "projected_hi_s",
    "cpu_utilisation",
    "others_share",
    "disturbed",
    # the configuration's statistics, repeated on each of its cells
    "config_time_s",
    "config_time_lo_s",
    "config_time_hi_s",
    "config_time_interval",
    "time_ratio",
    "time_ratio_lo",
    "time_ratio_hi",
    "time_verdict",
    "ratio_interval",
    "time_more_repeats",
    "time_rounds",
    "cost_ratio",
    "cost_ratio_lo",
    "cost_ratio_hi",
    "cost_verdict",
]
CSV_COLUMNS += roofline.CSV_COLUMNS  # the configuration's share of the peaks


def _r(x: object) -> object:
    return float(f"{x:.6g}") if isinstance(x, float) else x


def _config_columns(analysis: Analysis) -> dict[ConfigKey, dict[str, Any]]:
    out: dict[ConfigKey, dict[str, Any]] = {}
    for w in analysis.workloads:
        for g in w.groups:
            row: dict[str, Any] = {}
            if g.time is not None:
                row.update(config_time_s=g.time.value, config_time_interval=g.time.label)
                if g.time.has_interval:
                    row.update(config_time_lo_s=g.time.lo, config_time_hi_s=g.time.hi)
            for kind, cmp in (("time", g.time_cmp), ("cost", g.cost_cmp)):
                if cmp is None:
                    continue
                row[f"{kind}_ratio"] = cmp.ratio.value
                row[f"{kind}_verdict"] = loadlabel.word(cmp.verdict, g.under_load)
                if cmp.ratio.has_interval:
                    row[f"{kind}_ratio_lo"], row[f"{kind}_ratio_hi"] = cmp.ratio.lo, cmp.ratio.hi
                if kind == "time":
                    row["ratio_interval"] = cmp.ratio.label
                    row["time_more_repeats"] = cmp.more_repeats
                    row["time_rounds"] = g.rounds_compared if g.verdict else None
            out[g.key] = row
    return out


def csv_rows(analysis: Analysis) -> list[dict[str, Any]]:
    rows = []
    pricing = analysis.pricing
    configs = _config_columns(analysis)
    peaks = roofline.csv_columns(roofline.roofline(analysis.workloads, analysis.run))
    for r in analysis.cells:
        t = r.training_time_s
        cost = pricing.cost(r.variant, r.threads, t, r.device) if (pricing and t) else None
        sched = r.get("schedule") or {}
        ci = r.get("schedule", "projected_full_ci_s")
        lo, hi = ci if isinstance(ci, list) and len(ci) == 2 else (None, None)
        rows.append(
            {
                "cell_id": r.cell_id,
                "workload": r.workload,
                "variant": r.variant,
                "threads": r.threads,
                "repeat": r.round,
                "status": r.status,
                "reason": r.reason or "",
                "steady_epoch_s": r.steady_epoch_s,
                "warmup_s": r.warmup_s,
                "training_time_s": t,
                "projected": bool(sched)
                and (
                    sched.get("ran_epochs") != sched.get("full_epochs")
                    or sched.get("ran_samples") != sched.get("full_samples")
                ),
                "samples_per_s": r.samples_per_s,
                "gflops_per_s": r.gflops_per_s,
                "accuracy": r.accuracy,
                "chance_accuracy": r.chance_accuracy,
                "peak_rss_bytes": r.peak_rss_bytes,
                "oversubscribed": r.oversubscribed,
                "instance": cost.instance if cost else "",
                "price_per_hour": cost.per_hour if cost else "",
                "price_tier": (cost.tier_word or cost.tier) if cost else "",
                "billed_seconds": cost.billed_seconds if cost else "",
                "cost": round(cost.cost, 6) if cost else "",
                "currency": pricing.catalog.currency if cost and pricing else "",
                "warmup_steps": r.get("timing", "warmup_steps"),
                "steady_steps": r.get("timing", "steady_steps"),
                "steady_step_s": r.steady_step_s,
                "projected_lo_s": lo,
                "projected_hi_s": hi,
                "cpu_utilisation": r.utilisation,
                "others_share": r.others_share,
                "disturbed": r.disturbed,
                **configs.get(r.key, {}),
                **peaks.get(r.key, {}),
            }
        )
        rows[-1] = {k: _r(v) for k, v in rows[-1].items()}
    return rows


def _cell_text(value: object) -> object:
    """None as empty; text that a spreadsheet would run as a formula, quoted with '."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def write_csv(analysis: Analysis, path: Path) -> Path:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for row in csv_rows(analysis):
        writer.writerow({k: _cell_text(v) for k, v in row.items()})
    write_text_atomic(Path(path), buf.getvalue())
    return Path(path)


def serving_csv_rows(sa: ServingAnalysis) -> list[dict[str, Any]]:
    rows = []
    for r in sa.cells:
        rows.append(
            {
                "cell_id": r.cell_id,
                "model": r.model,
                "scenario": r.scenario,
                "concurrency": r.concurrency,
                "path": r.path,
                "variant": r.variant,
                "threads": r.threads,
                "repeat": r.round,
                "status": r.status,
                "reason": r.reason or "",
                "throughput_per_s": r.throughput_per_s,
                **{k: r.percentiles_ms.get(k) for k in PCTS},
                "validity": r.validity,
                "max_qps_under_bound": r.max_qps_under_bound,
                "http_overhead_p50_ms": r.http_overhead_p50_ms,
                "shared_cpus": r.shared_cpus,
                "artifacts": r.get("artifacts"),
            }
        )
    return rows


def write_serving_csv(serving: ServingAnalysis, path: Path) -> Path:
    """One row per serving cell."""
    rows = serving_csv_rows(serving)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["cell_id"])
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell_text(v) for k, v in row.items()})
    write_text_atomic(Path(path), buf.getvalue())
    return Path(path)


def write_report_csv(report: Report, path: Path) -> None:
    """The training cells to ``path``; the serving cells there too when there are no
    training cells, else beside it as ``<stem>-serving<suffix>``."""
    training = report.training.workloads if report.training is not None else []
    if report.training is not None and training:
        write_csv(report.training, path)
    if report.serving is not None:
        path = Path(path)
        serving_path = path.with_name(f"{path.stem}-serving{path.suffix}") if training else path
        write_serving_csv(report.serving, serving_path)
