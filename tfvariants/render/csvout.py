"""The CSV export: one row per stored cell."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from tfvariants.analyze.analysis import Analysis, device_of
from tfvariants.analyze.fields import accuracy_of, get_path, training_time_s, warmup_time_s

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
        device = device_of(str(c.get("variant")), analysis.run, analysis.cells)
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


def write_serving_csv(serving: Any, path: Path) -> Path:
    """One row per serving cell (tfvariants.analyze.serving.serving_csv_rows)."""
    from tfvariants.analyze.serving import serving_csv_rows

    rows = serving_csv_rows(serving)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["cell_id"])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    tmp.replace(path)
    return path
