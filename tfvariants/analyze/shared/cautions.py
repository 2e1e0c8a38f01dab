"""The report's cautions: a typed warning in plain words with a hint, and the checks
that raise them about one group of repeats (unstable, two clusters, too few,
oversubscribed). Intervals and verdicts are :mod:`tfvariants.analyze.statistics.stats`'s."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tfvariants.analyze.statistics import stats

UNSTABLE_SPREAD = 0.10  # std/mean of a group's repeats above which it is "unstable"


@dataclass(frozen=True)
class StatWarning:
    """A typed warning in plain words with an actionable hint."""

    kind: str  # unstable | bimodal | few_repeats | oversubscribed | failed | noisy_host | ...
    message: str
    hint: str = ""
    # Where several warnings of a kind are listed, the kind's meaning (BRIEF) is said once
    # and each says only whom it is about and its figures: "cifar10_cnn x@2: 17%".
    subject: str = ""
    figures: str = ""


# What a warning's figures mean, by kind: the report says it once above the list.
BRIEF = {
    "unstable": "the repeats' spread (std/mean); the farthest repeat, its time over the median",
}


def bimodal(values: Sequence[float]) -> str | None:
    """Plain words when repeats fall into two separate clusters, else None.

    Rule: split the sorted log values at their largest gap; both sides have >= 2
    repeats, the gap is >= 10 % and >= 2x the wider cluster's own range."""
    if len(values) < 4 or not all(math.isfinite(v) and v > 0 for v in values):
        return None
    xs = sorted(values)
    logs = [math.log(v) for v in xs]
    gaps = [(logs[i + 1] - logs[i], i) for i in range(len(logs) - 1)]
    gap, i = max(gaps)
    low, high = logs[: i + 1], logs[i + 1 :]
    if len(low) < 2 or len(high) < 2 or gap < math.log(1.10):
        return None
    if gap < 2 * max(low[-1] - low[0], high[-1] - high[0]):
        return None
    lo_med, hi_med = stats.median_of_sorted(xs[: i + 1]), stats.median_of_sorted(xs[i + 1 :])
    apart = hi_med / lo_med  # inf (not an error) beyond the float range
    return (
        f"two clusters: {len(low)} repeats near {lo_med:.3g} and {len(high)} near "
        f"{hi_med:.3g} ({apart:.2f}x apart)"
    )


def stability_warnings(label: str, values: Sequence[float]) -> list[StatWarning]:
    """Plain-words warnings about a group of repeats (spread, two clusters, few repeats)."""
    out: list[StatWarning] = []
    spread = stats.relative_spread(values)
    modes = bimodal(values)
    if modes:
        out.append(
            StatWarning(
                "bimodal",
                f"{label} is bimodal: {modes}. The machine switched between two speeds "
                "from run to run; a single run shows one of them at random",
                "run more repeats; check what else runs on this host",
            )
        )
    elif len(values) >= 2 and spread >= UNSTABLE_SPREAD:
        out.append(
            StatWarning(
                "unstable",
                f"{label} is unstable: repeats differ by {spread:.0%} (std/mean)",
                "run more repeats (--repeats, --budget) or close other programs",
                subject=label,
                figures=f"{spread:.0%}",
            )
        )
    if len(values) < stats.MIN_REPEATS:
        out.append(
            StatWarning(
                "few_repeats",
                f"{label} has only {len(values)} successful repeat(s): comparisons need "
                f"{stats.MIN_REPEATS} per side to decide anything",
                f"use --repeats {stats.DEFAULT_REPEATS} (the default) or --budget",
            )
        )
    return out


def oversubscribed_warning(label: str, threads: int, cpus: int) -> StatWarning:
    host = f"{cpus} CPUs" if cpus else "fewer CPUs"
    return StatWarning(
        "oversubscribed",
        f"{label}: emulates {threads} vCPUs on {host}: not representative",
        "run on a machine with at least that many logical CPUs",
    )
