"""What one repeat of a workload cost, and where its time went (issue 25): the budget
buys repeats, so a reader needs to see how much of each one was the steady window that
the verdicts measure and how much was paid around it."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from tfvariants.analyze.training.groups import Group

# The parts of a cell's wall time (store/celltimes.py overhead_split), in the order a
# cell pays them; "other" is process start, the host's probes, the wait for quiet, writing.
PARTS = ("import", "build", "warm-up", "steady", "between epochs", "other")
WORDS = {"build": "data + model", "other": "the rest (process start, probes, writing)"}


def sentence(workload: str, groups: Sequence[Group], *, duet: bool = False) -> str | None:
    """One sentence: the mean wall time of a successful repeat of this workload, and the
    mean of each part over the repeats that recorded it (None without wall times).
    ``duet``: the cells ran two at a time, so a round took about half their sum."""
    cells = [r for g in groups for r in g.ok if r.wall_s is not None and r.wall_s > 0]
    if not cells:
        return None
    wall = statistics.fmean(r.wall_s for r in cells if r.wall_s is not None)
    said = []
    for part in PARTS:
        values = [r.overhead[part] for r in cells if part in r.overhead]
        if not values:
            continue
        mean = statistics.fmean(values)
        share = f" ({mean / wall:.0%})" if part == "steady" else ""
        said.append(f"{WORDS.get(part, part)} {mean:.1f} s{share}")
    where = f": {', '.join(said)}" if said else ""
    two = (
        " Two cells ran at a time (--duet), so a round of the comparisons took about half "
        "the sum of its cells' times."
        if duet
        else ""
    )
    return (
        f"{workload}: a repeat (one cell) took {wall:.1f} s of wall time on average over "
        f"{len(cells)} successful cells{where}.{two}"
    )
