"""Is the peak probe left out of the timed cells? An A/A with and without it.

    python benchmarks/peak_aa.py [--variant local] [--threads 2] [--workload mnist_cnn]
                                 [--repeats 6] [--out DIR] [--no-peak-first] [--dry-run]
                                 [--compare-arg=ARG ...]

Runs the same small compare twice: once with the peak probe (its cached peak for this
variant and thread count removed first, so the probe really runs) and once with
``--no-peak``. Nothing else differs, so the two runs are an A/A: if the probe were
inside a timed cell (or its load spilled into one), the cells of the first run would be
slower than those of the second.

It prints, per cell of both runs, the times the cells recorded (TensorFlow import,
warm-up, steady; the runner's wall time) next to the probe's own recorded seconds, and
checks that

* the probe ran (not read from the cache) in the first run and not at all in the second;
* it ended before the first cell started (run.json's ``probed_at`` against the cells'
  ``started_at``, both UTC whole seconds);
* the cells' median wall time differs between the runs by less than half the probe's
  seconds (were the probe inside a cell, that cell would carry all of it);
* the ratio of the runs' steady step times (with probe / without), from the project's
  own comparison (analyze/statistics/stats.compare: Hodges-Lehmann with the
  Mann-Whitney interval), covers 1 and lies within the +/-5 % band.

The summary goes to OUT/bench-peak-aa.json. The order of the two runs alternates with
--no-peak-first (a machine warming up or drifting favours the later run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

BAND = 0.05  # the equivalence band the A/A ratio must lie within


def clear_peak_cache(variant_name: str, threads: int) -> Path | None:
    """Remove the cached peak of ``variant_name`` at ``threads`` (so the probe runs);
    the path removed, or None when nothing was cached."""
    from tfvariants.plan.pinning import plan_pinning
    from tfvariants.plan.topology import read_topology
    from tfvariants.variants.peak import run as peakrun
    from tfvariants.variants.peak import theory
    from tfvariants.variants.registry import get_variant

    variant = get_variant(variant_name)
    binary = peakrun.binary_identity(variant)
    if binary is None:  # nothing is cached for a binary that cannot be identified
        return None
    plan = plan_pinning(threads, read_topology())
    path = peakrun.cache_path(peakrun.cache_key(binary, variant, plan, theory.read_cpu()))
    if not path.is_file():
        return None
    path.unlink()
    return path


def compare_command(args: argparse.Namespace, out: Path, peak: bool) -> list[str]:
    """The one compare of either run (the same but for --no-peak)."""
    command = [
        sys.executable,
        "-m",
        "tfvariants",
        "compare",
        "--workloads",
        args.workload,
        "--threads",
        str(args.threads),
        "--variants",
        args.variant,
        "--repeats",
        str(args.repeats),
        "--pricing",
        "none",
        "--out",
        str(out),
        "--output",
        str(out / "report.html"),
    ]
    command += args.compare_arg or []
    return command if peak else [*command, "--no-peak"]


def cell_rows(folder: Path) -> list[dict[str, Any]]:
    """Each training cell of a run folder: what it recorded of its own times."""
    from tfvariants.store.rundir import load_run_dir
    from tfvariants.store.training import training

    contents = load_run_dir(folder)
    rows = []
    for cell in training(contents.parsed.values()):
        if not cell.ok:
            continue
        rows.append(
            {
                "cell": cell.cell_id,
                "started_at": cell.raw.get("started_at"),
                "import_s": cell.overhead.get("import"),
                "warmup_s": cell.overhead.get("warm-up"),
                "steady_s": cell.overhead.get("steady"),
                "wall_s": cell.wall_s,
                "step_s": cell.steady_step_s,
            }
        )
    return sorted(rows, key=lambda r: str(r["started_at"]))


def probe_of(folder: Path, variant: str, threads: int) -> dict[str, Any] | None:
    """The peak record compare stored for (variant, threads), or None."""
    from tfvariants.store.runfile import load_run

    info = (load_run(folder).get("variant_info") or {}).get(variant) or {}
    found = (info.get("peak") or {}).get(str(threads))
    return found if isinstance(found, dict) else None


def _times(rows: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    return [float(r[key]) for r in rows if isinstance(r.get(key), (int, float))]


def _at(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None


def judge(
    with_peak: Sequence[Mapping[str, Any]],
    without: Sequence[Mapping[str, Any]],
    probe: Mapping[str, Any] | None,
    probe_in_other: bool,
) -> dict[str, Any]:
    """The A/A's checks (see the module's docstring) from both runs' cells and the probe."""
    from tfvariants.analyze.statistics import stats

    out: dict[str, Any] = {"probe_ran": probe is not None and probe.get("cached") is False}
    out["probe_s"] = probe.get("probe_s") if probe else None
    out["no_probe_in_no_peak_run"] = not probe_in_other
    probed, starts = _at((probe or {}).get("probed_at")), [_at(r["started_at"]) for r in with_peak]
    known = [s for s in starts if s is not None]
    out["probe_before_first_cell"] = None if probed is None or not known else probed <= min(known)
    walls = (_times(with_peak, "wall_s"), _times(without, "wall_s"))
    if all(walls) and isinstance(out["probe_s"], (int, float)):
        shift = statistics.median(walls[0]) - statistics.median(walls[1])
        out["wall_shift_s"] = shift
        out["wall_shift_below_half_probe"] = abs(shift) < out["probe_s"] / 2
    a, b = _times(with_peak, "step_s"), _times(without, "step_s")
    if a and b:
        c = stats.compare(a, b, min_effect=BAND, equivalence_band=BAND)
        lo, hi = c.ratio.lo, c.ratio.hi
        out["ratio"] = {
            "value": c.ratio.value,
            "interval": [lo, hi] if c.ratio.has_interval else None,
            "label": c.ratio.label,
            "verdict": c.verdict,
            "covers_1": c.ratio.has_interval and lo <= 1.0 <= hi,
            "within_band": c.ratio.has_interval and 1 / (1 + BAND) <= lo and hi <= 1 + BAND,
            "reasons": list(c.reasons),  # e.g. too few repeats for an interval
        }
    checks = [v for k, v in out.items() if k in _CHECKS]
    checks += [out["ratio"]["covers_1"]] if "ratio" in out else [False]
    out["passed"] = all(v is True for v in checks)
    return out


_CHECKS = (
    "probe_ran",
    "no_probe_in_no_peak_run",
    "probe_before_first_cell",
    "wall_shift_below_half_probe",
)


def _s(x: object) -> str:
    return f"{x:8.2f}" if isinstance(x, (int, float)) else f"{'-':>8}"


def print_cells(name: str, rows: Sequence[Mapping[str, Any]]) -> None:
    name = f"{name}:".ljust(21)
    print(f"{name}{'import':>8} {'warm-up':>8} {'steady':>8} {'wall':>8} {'step ms':>8}  cell")
    for r in rows:
        step = r["step_s"] * 1000 if isinstance(r["step_s"], (int, float)) else None
        times = " ".join(_s(r[k]) for k in ("import_s", "warmup_s", "steady_s", "wall_s"))
        print(f"{' ' * len(name)}{times} {_s(step)}  {r['cell']}")


def print_verdict(summary: Mapping[str, Any]) -> None:
    print(
        f"peak probe: {_s(summary['probe_s']).strip()} s, ran (not cached): "
        f"{summary['probe_ran']}, before the first cell: {summary['probe_before_first_cell']}, "
        f"absent from the --no-peak run: {summary['no_probe_in_no_peak_run']}"
    )
    if "wall_shift_s" in summary:
        print(
            f"median cell wall time, with minus without the probe: "
            f"{summary['wall_shift_s']:+.2f} s (below half the probe's seconds: "
            f"{summary['wall_shift_below_half_probe']})"
        )
    ratio = summary.get("ratio")
    if ratio is None:
        print("no steady step times in one of the runs: no ratio")
    else:
        lo_hi = ratio["interval"]
        span = f"[{lo_hi[0]:.3f}, {lo_hi[1]:.3f}]" if lo_hi else "no interval"
        if not lo_hi and ratio["reasons"]:
            span += f" ({'; '.join(ratio['reasons'])})"
        print(
            f"steady step time, with / without the probe: {ratio['value']:.3f} {span} "
            f"({ratio['label']}): covers 1: {ratio['covers_1']}; within +/-{BAND:.0%}: "
            f"{ratio['within_band']}; verdict {ratio['verdict']}"
        )
    print("A/A passed" if summary["passed"] else "A/A FAILED")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/peak_aa.py", description=__doc__)
    p.add_argument("--variant", default="local")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workload", default="mnist_cnn")
    p.add_argument("--repeats", type=int, default=6)
    p.add_argument("--out", type=Path)
    p.add_argument(
        "--compare-arg",
        action="append",
        metavar="ARG",
        help="passed to both compares (repeatable), e.g. --compare-arg=--samples=2000",
    )
    p.add_argument("--no-peak-first", action="store_true", help="run the --no-peak twin first")
    p.add_argument("--dry-run", action="store_true", help="print the two compares and stop")
    args = p.parse_args(argv)
    root = args.out or Path("results") / f"bench-peak-aa-{datetime.now():%Y%m%d-%H%M%S}"
    runs = [(root / "with-peak", True), (root / "no-peak", False)]
    if args.no_peak_first:
        runs.reverse()
    if args.dry_run:
        for out, peak in runs:
            print(" ".join(compare_command(args, out, peak)))
        return 0
    for out, peak in runs:
        if peak:
            cleared = clear_peak_cache(args.variant, args.threads)
            print(f"cleared the cached peak: {cleared or 'none was cached'}", flush=True)
        command = compare_command(args, out, peak)
        print("== " + " ".join(command), flush=True)
        if subprocess.run(command).returncode != 0:
            print(f"peak_aa: the compare into {out} failed", file=sys.stderr)
            return 1
    with_peak, without = cell_rows(root / "with-peak"), cell_rows(root / "no-peak")
    probe = probe_of(root / "with-peak", args.variant, args.threads)
    other = probe_of(root / "no-peak", args.variant, args.threads) is not None
    summary = judge(with_peak, without, probe, other)
    print_cells("with the probe", with_peak)
    print_cells("without (--no-peak)", without)
    print_verdict(summary)
    result = {**summary, "cells": {"with_peak": with_peak, "no_peak": without}}
    (root / "bench-peak-aa.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
