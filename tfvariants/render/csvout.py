"""The CSV export: one row per stored cell."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from tfvariants.analyze.analysis import Analysis
from tfvariants.analyze.fields import accuracy_of, get_path, training_time_s, warmup_time_s
from tfvariants.plan.cell import cell_id_of
from tfvariants.render.output import write_text_atomic

# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

CSV_COLUMNS = [
    "cell_id", "workload", "variant", "threads", "repeat", "status", "reason",
    "steady_epoch_s", "warmup_s", "training_time_s", "projected", "samples_per_s",
    "gflops_per_s", "accuracy", "chance_accuracy", "peak_rss_bytes", "oversubscribed",
    "instance", "price_per_hour", "price_tier", "billed_seconds", "cost",
    "warmup_steps", "steady_steps", "steady_step_s", "projected_lo_s", "projected_hi_s",
    "cpu_utilisation", "others_share",
    # the configuration's statistics, repeated on each of its cells
    "config_time_s", "config_time_lo_s", "config_time_hi_s", "config_time_interval",
    "time_ratio", "time_ratio_lo", "time_ratio_hi", "time_verdict", "ratio_interval",
    "time_more_repeats", "cost_ratio", "cost_ratio_lo", "cost_ratio_hi", "cost_verdict",
]  # fmt: skip


def _r(x: Any) -> Any:
    return float(f"{x:.6g}") if isinstance(x, float) else x


def _config_columns(analysis: Analysis) -> dict[tuple, dict[str, Any]]:
    out: dict[tuple, dict[str, Any]] = {}
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
                row[f"{kind}_verdict"] = cmp.verdict
                if cmp.ratio.has_interval:
                    row[f"{kind}_ratio_lo"], row[f"{kind}_ratio_hi"] = cmp.ratio.lo, cmp.ratio.hi
                if kind == "time":
                    row["ratio_interval"] = cmp.ratio.label
                    row["time_more_repeats"] = cmp.more_repeats
            out[(g.workload, g.variant, g.threads)] = row
    return out


def csv_rows(analysis: Analysis) -> list[dict[str, Any]]:
    rows = []
    pricing = analysis.pricing
    configs = _config_columns(analysis)
    for r in analysis.cells:
        c = r["cell"]
        t = training_time_s(r) if r.get("status") == "ok" else None
        device = analysis.devices.get(str(c["variant"]), "cpu")
        cost = (
            pricing.cost(str(c["variant"]), int(c["threads"]), t, device)
            if (pricing and t)
            else None
        )
        sched = r.get("schedule") or {}
        rows.append({
            "cell_id": cell_id_of(c),
            "workload": c.get("workload"), "variant": c.get("variant"), "threads": c.get("threads"),
            "repeat": c.get("repeat"), "status": r.get("status"), "reason": r.get("reason") or "",
            "steady_epoch_s": get_path(r, "timing", "steady_epoch_s"), "warmup_s": warmup_time_s(r),
            "training_time_s": t,
            "projected": bool(sched) and (sched.get("ran_epochs") != sched.get("full_epochs")
                                          or sched.get("ran_samples") != sched.get("full_samples")),
            "samples_per_s": get_path(r, "timing", "samples_per_s"), "gflops_per_s": r.get("gflops_per_s"),
            "accuracy": accuracy_of(r), "chance_accuracy": r.get("chance_accuracy"),
            "peak_rss_bytes": get_path(r, "memory", "peak_rss_bytes"),
            "oversubscribed": bool(get_path(r, "requested", "oversubscribed")),
            "instance": cost.instance if cost else "", "price_per_hour": cost.per_hour if cost else "",
            "price_tier": (cost.tier_word or cost.tier) if cost else "", "billed_seconds": cost.billed_seconds if cost else "",
            "cost": round(cost.cost, 6) if cost else "",
            "warmup_steps": get_path(r, "timing", "warmup_steps"),
            "steady_steps": get_path(r, "timing", "steady_steps"),
            "steady_step_s": get_path(r, "timing", "steady_step_s"),
            "projected_lo_s": (sched.get("projected_full_ci_s") or [None, None])[0],
            "projected_hi_s": (sched.get("projected_full_ci_s") or [None, None])[1],
            "cpu_utilisation": get_path(r, "cpu", "utilisation"),
            "others_share": get_path(r, "cpu", "others_share"),
            **configs.get((str(c.get("workload")), str(c.get("variant")), int(c.get("threads", 0))), {}),
        })  # fmt: skip
        rows[-1] = {k: _r(v) for k, v in rows[-1].items()}
    return rows


def _cell_text(value: Any) -> Any:
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


def write_serving_csv(serving: Any, path: Path) -> Path:
    """One row per serving cell (tfvariants.analyze.serving.serving_csv_rows)."""
    from tfvariants.analyze.serving import serving_csv_rows

    rows = serving_csv_rows(serving)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["cell_id"])
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell_text(v) for k, v in row.items()})
    write_text_atomic(Path(path), buf.getvalue())
    return Path(path)
