"""What `make bench-noise` (benchmarks/noise.py) prints beside its run lines: one
comparison in words, and what others' share of the CPUs did to the cells' step time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def comparison_words(c: dict[str, Any]) -> str:
    """ "different 1.33x (1.29-1.42) under load 5/5; quiet 1.71x NOT covered (labelled)"."""
    text = f"{c['verdict']} {c['ratio']:.2f}x"
    lo, hi = c.get("interval") or (None, None)
    if lo is not None and hi is not None:
        text += f" ({lo:.2f}-{hi:.2f})"
    else:
        text += " (no interval)"
    loaded = c.get("under_load")
    if loaded and loaded[0]:
        text += f" under load {loaded[0]}/{loaded[1]}"
    if "quiet_ratio" in c:
        covered = "covered" if c["covers_quiet"] else "NOT covered"
        text += f"; quiet {c['quiet_ratio']:.2f}x {covered}"
        if not c["honest"]:
            text += ", presented as plain decided"
    return text


def twin_words(verdict: str, detail: dict[str, Any] | None) -> str:
    """ "undecided 1.02x (0.95-1.16) after 7 repeats, about 74 more": how far the A/A
    twin stayed from "equivalent" (the verdict alone without its detail)."""
    if not detail:
        return verdict
    text = f"{verdict} {detail['ratio']:.3f}x"
    lo, hi = detail.get("interval") or (None, None)
    if lo is not None and hi is not None:
        text += f" ({lo:.3f}-{hi:.3f})"
    text += f" after {detail['repeats']} repeats"
    if detail.get("more_repeats"):
        text += f", about {detail['more_repeats']} more"
    return text


SHARE_BINS = (0.0, 0.05, 0.10, 0.25, 0.50, 0.75, 1.01)


def share_table(dirs: Sequence[Path]) -> list[str]:
    """What others' share did to the cells' steady step time, per configuration: the
    median step time in each band of others' share, against the quietest band (the
    measurement behind --disturbed-share, repeated on every run of this benchmark)."""
    from statistics import median

    from tfvariants.store.rundir import load_run_dir
    from tfvariants.store.training import CellResult

    by: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for d in dirs:
        if not (d / "cells").is_dir():
            continue
        for r in load_run_dir(d).parsed.values():
            if (
                isinstance(r, CellResult)
                and r.ok
                and r.steady_step_s
                and r.others_share is not None
            ):
                by.setdefault((r.workload, r.threads), []).append((r.others_share, r.steady_step_s))
    lines = []
    for (workload, threads), rows in sorted(by.items()):
        bands = []
        for lo, hi in zip(SHARE_BINS, SHARE_BINS[1:], strict=False):
            steps = [s for o, s in rows if lo <= o < hi]
            if steps:
                bands.append((lo, hi, len(steps), median(steps)))
        if not bands:
            continue
        base = bands[0][3]
        text = "; ".join(
            f"{lo:.0%}-{min(hi, 1):.0%}: n={n} {step * 1e3:.0f} ms (x{step / base:.2f})"
            for lo, hi, n, step in bands
        )
        lines.append(f"{workload} t{threads}: steady step by others' share: {text}")
    return lines
