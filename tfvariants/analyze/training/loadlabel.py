"""Verdicts that say what they are about: a comparison whose rounds came from disturbed
cells (store/disturbance.py) measured the machine under load, not the configurations on
a quiet machine, and says so wherever it is shown (the summary's sentences, the verdict
table, the end of compare, the CSV).

Why: an unprivileged quick compare under a sustained `nice 19` load decided mnist_cnn
1 vs 2 threads at 1.33x (1.29-1.42) and cifar10_cnn at 2.06x (1.82-2.29), every cell
disturbed; the same day's quiet runs gave 1.71-1.77x and 1.43-1.56x, outside both
intervals. The report said "no verdict rests on a clean measurement" far below, while
its sentences presented the ratios as the answer. A load changes the ratio itself (it
takes a share of one thread's CPU and more of two threads'), so no correction is
applied: the verdict stands for what was measured, and is labelled.

A round counts as under load for a configuration when the value the verdicts used for
it came from a disturbed cell (only possible when the run's policy uses disturbed
cells: every attempt of that round was disturbed, analyze/statistics/verdicts.py
round_values), or from a *busy* one: a multi-thread cell at raised priority whose CPUs
others filled to 25 % or more. The rule does not call that disturbed (the worker takes
its CPUs back when it wants them), yet such cells stepped up to 1.27x slow: as root
under a sustained `nice 19` hog, cifar10_cnn's 2-thread cells had others at 22-28 % of
their CPUs and stepped x1.27, and the verdict said 1.24x (1.19-1.29) against the quiet
1.43-1.58x (analyze/training/noise.py SHIELDED_BUSY_SHARE, docs/measurements.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.analyze.training.noise import busy_at_raised_priority

if TYPE_CHECKING:
    from tfvariants.analyze.training.groups import Group
    from tfvariants.store.training import CellResult

QUIET_MAY_DIFFER = "on a quiet machine the ratio may differ"


def loaded_rounds(results: Iterable[CellResult], used: Iterable[int]) -> set[int]:
    """Of the rounds ``used`` in verdicts, those whose value came from a cell under load:
    the attempt the verdicts use (the first undisturbed one, else the first: the order
    of round_values) was disturbed, or busy at raised priority."""
    first: dict[int, CellResult] = {}
    for r in sorted((r for r in results if r.ok), key=lambda r: (r.disturbed, r.attempt)):
        first.setdefault(r.round, r)
    return {
        k for k in used if k in first and (first[k].disturbed or busy_at_raised_priority(first[k]))
    }


def under_load(a: object, b: object) -> tuple[int, int] | None:
    """(rounds under load, rounds compared) for a comparison of two training groups
    (analyze/groups.py Group: ``results`` and ``round_times``) on the rounds both have;
    None for anything else (a serving configuration) or no common round."""
    ra, rb = getattr(a, "round_times", None), getattr(b, "round_times", None)
    if not isinstance(ra, dict) or not isinstance(rb, dict):
        return None
    common = set(ra) & set(rb)
    if not common:
        return None
    loaded = loaded_rounds(getattr(a, "results", ()), common)
    loaded |= loaded_rounds(getattr(b, "results", ()), common)
    return len(loaded), len(common)


def note(loaded: tuple[int, int] | None) -> str:
    """ "" for a clean comparison, else e.g. "under load: 5 of 5 rounds from disturbed
    cells; on a quiet machine the ratio may differ"."""
    if loaded is None or not loaded[0]:
        return ""
    k, n = loaded
    return f"under load: {k} of {n} rounds from disturbed or busy cells; {QUIET_MAY_DIFFER}"


def qualify(text: str, a: object, b: object) -> str:
    """A sentence about a versus b (ending in its parenthesis, conclusions.phrase) with
    the load note inside that parenthesis when the comparison rests on disturbed cells."""
    said = note(under_load(a, b))
    return inside(text, said) if said else text


def inside(text: str, said: str) -> str:
    """``said`` inside the closing parenthesis of ``text`` (or in one of its own)."""
    if text.endswith(")"):
        return f"{text[:-1]}; {said})"
    return f"{text} ({said})"


def word(verdict_word: str, loaded: tuple[int, int] | None) -> str:
    """A verdict table's word ("faster") with "under load" when it rests on disturbed
    cells; the baseline and n/a stay as they are."""
    if loaded is None or not loaded[0] or verdict_word in (Verdict.BASELINE, "n/a"):
        return verdict_word
    return f"{verdict_word} under load"


def mark(groups: Iterable[Group], baseline: Group | None) -> list[Group]:
    """The groups, each with its comparison with its workload's baseline: ``under_load``."""
    return [
        replace(
            g,
            under_load=under_load(g, baseline)
            if baseline is not None and g is not baseline
            else None,
        )
        for g in groups
    ]
