"""The CSV export: one row per stored cell."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from tfvariants.analyze.analysis import Analysis
from tfvariants.analyze.fields import accuracy_of, get_path, training_time_s, warmup_time_s
from tfvariants.plan.cell import cell_id
from tfvariants.render.output import write_text_atomic

# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

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
        device = analysis.devices.get(str(c["variant"]), "cpu")
        cost = (
            pricing.cost(str(c["variant"]), int(c["threads"]), t, device)
            if (pricing and t)
            else None
        )
        sched = r.get("schedule") or {}
        rows.append({
            "cell_id": cell_id(c["variant"], c["threads"], c["workload"], c.get("repeat", 0)),
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
            "price_tier": cost.tier if cost else "", "billed_seconds": cost.billed_seconds if cost else "",
            "cost": round(cost.cost, 6) if cost else "",
        })  # fmt: skip
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
