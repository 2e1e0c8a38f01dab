"""Reading MLPerf LoadGen's ``mlperf_log_detail.txt``: the ``:::MLLOG {json}`` records.

Stdlib only (the host's tests use it to check a report against the logs). A record's
JSON may span lines (LoadGen writes raw newlines inside string values).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MARKER = ":::MLLOG "
_DECODER = json.JSONDecoder(strict=False)  # strict=False: raw newlines inside strings


def parse_detail_text(text: str) -> dict[str, Any]:
    """key -> value of every record (a repeated key keeps its last value)."""
    out: dict[str, Any] = {}
    pos = text.find(MARKER)
    while pos >= 0:
        start = pos + len(MARKER)
        try:
            record, _end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            record = None  # a truncated record (killed run): skip it, keep the rest
        if isinstance(record, dict) and "key" in record:
            out[str(record["key"])] = record.get("value")
        pos = text.find(MARKER, start)
    return out


def parse_detail_log(path: str | Path) -> dict[str, Any]:
    return parse_detail_text(Path(path).read_text(encoding="utf-8", errors="replace"))


def _ms(ns: Any) -> float | None:
    return float(ns) / 1e6 if isinstance(ns, (int, float)) else None


def headline(records: dict[str, Any]) -> dict[str, Any]:
    """The numbers a report shows, named plainly, taken only from the detail log."""
    scenario = records.get("requested_scenario") or records.get("effective_scenario")
    throughput = records.get("result_completed_samples_per_sec")
    if throughput is None:
        throughput = records.get("result_samples_per_second")  # Offline
    if throughput is None:
        throughput = records.get("result_qps_without_loadgen_overhead")  # SingleStream
    out: dict[str, Any] = {
        "scenario": scenario,
        "validity": records.get("result_validity"),
        "invalid_reason": records.get("result_invalid_reason") or None,
        "early_stopping_met": records.get("early_stopping_met"),
        "min_duration_met": records.get("result_min_duration_met"),
        "min_queries_met": records.get("result_min_queries_met"),
        "perf_constraints_met": records.get("result_perf_constraints_met"),
        "early_stopping_result": records.get("early_stopping_result"),
        "query_count": records.get("result_query_count"),
        "throughput_per_s": float(throughput) if throughput is not None else None,
        "scheduled_per_s": records.get("result_scheduled_samples_per_sec"),
        "mean_ms": _ms(records.get("result_mean_latency_ns")),
        "max_ms": _ms(records.get("result_max_latency_ns")),
    }
    for p in ("50.00", "90.00", "95.00", "99.00", "99.90"):
        out[f"p{float(p):g}_ms"] = _ms(records.get(f"result_{p}_percentile_latency_ns"))
    return out
