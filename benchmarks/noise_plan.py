"""Which compares `make bench-noise` runs, in which order, with which budget, and which
quiet run each loaded one is set against (benchmarks/noise.py)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Protocol, TypeVar


class _Run(Protocol):
    scenario: str
    run: int


S = TypeVar("S", bound=_Run)

# The scenarios whose question is the A/A twin itself (issue 25; twin-membw: the same
# under the memory hog, issue 42), and the hog each scenario runs
TWIN_QUESTION = ("quiet", "twin-membw")
HOGS = {"twin-membw": "membw"}
BUDGETS = dict.fromkeys(TWIN_QUESTION, "10m")
DEFAULT_BUDGET = "8m"


def hog_of(scenario: str) -> str:
    """The hog a scenario runs: its own name but for twin-membw's (membw)."""
    return HOGS.get(scenario, scenario)


def budget_of(args: argparse.Namespace, name: str) -> str:
    """The compare's --budget for the run folder ``name`` ("quiet", "quiet-nice", ...)."""
    return args.budget or BUDGETS.get(name, DEFAULT_BUDGET)


def twin_later(name: str) -> bool:
    """Whether the twin waits until the 1-vs-2 comparisons are settled (compare --later):
    in every compare but the quiet and twin-membw scenarios', whose question is the twin
    itself (issues 25 and 42); elsewhere the question is 1 vs 2 threads, and the twin's
    cells in the first look made it a third longer (the 8 min of issue 26 held none under
    bursts)."""
    return name not in TWIN_QUESTION


def plan(
    scenarios: Sequence[str], runs: int, quiet: bool, shared: bool = False
) -> list[tuple[str, str, int]]:
    """(hog kind, folder name, run) in order: each loaded scenario after its quiet run,
    or with ``shared`` (--one-quiet) one quiet run per run before all its loaded ones:
    a third less time for two scenarios, the second one's yardstick a run older."""
    out = []
    for run in range(1, runs + 1):
        loaded = [s for s in scenarios if s != "quiet"]
        if quiet and shared and loaded:
            out.append(("quiet", "quiet-loaded", run))  # the loaded runs' 8 m budget
        for s in scenarios:
            if quiet and not shared and s != "quiet":
                out.append(("quiet", f"quiet-{s}", run))
            out.append((hog_of(s), s, run))
    return out


def yardstick(summaries: Sequence[S]) -> S | None:
    """The quiet run a loaded run is set against: the latest quiet run of the same run
    number since the last quiet one (None: the run had none, e.g. --no-quiet)."""
    if not summaries:
        return None
    run = summaries[-1].run
    for s in reversed(summaries):
        if s.run != run:
            return None
        if s.scenario.startswith("quiet"):
            return s
    return None
