"""Statements across comparisons: "X was the fastest" holds with the stated confidence
as a whole, not just pair by pair.

Each verdict's 95 % covers that one comparison. A sentence that ranks configurations
rests on several comparisons at once, and chance adds up: five identical
configurations at 30 % noise gave "some pair different" in 8.5 % of runs (an
independent audit; 2.3-2.6 % per pair). Multiple comparisons with the best (Hsu 1984),
with Bonferroni's split: "g is the fastest" is said only when g's interval against
EVERY other configuration is "different" (lower), each at 1 - alpha/(m-1) for m
configurations. If the true best's m-1 intervals all hold (together at least 1 - alpha),
no other configuration can be called faster than it, and anything said of the true best
is right: so the sentence as a whole errs with at most alpha.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from tfvariants.analyze.statistics import stats, verdicts
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.verdict import Verdict

RoundValues = Mapping[int, float]


def family_settings(settings: Settings, comparisons: int) -> Settings:
    """The settings of each of ``comparisons`` comparisons so that all hold together with
    ``settings.confidence`` (Bonferroni)."""
    if comparisons < 1:
        raise ValueError(f"comparisons must be >= 1, got {comparisons}")
    alpha = 1 - settings.confidence
    return replace(settings, confidence=1 - alpha / comparisons)


@dataclass(frozen=True)
class Lead:
    """The candidate against each rival at the family's level."""

    decided: bool  # lower than every rival, each "different", all at the family level
    comparisons: Mapping[str, stats.Comparison | None]  # None: no common usable round
    settings: Settings  # each comparison's settings (the family's confidence split)
    confidence: float  # what the sentence as a whole holds with

    def covers(self) -> str:
        """What the confidence covers, in words."""
        m = len(self.comparisons)
        if m <= 1:
            return f"{self.confidence:.0%} confidence for the one comparison"
        return (
            f"{self.confidence:.0%} confidence for the whole ranking: each of its {m} "
            f"comparisons at {stats.percent(self.settings.confidence)} (Bonferroni)"
        )


def _compare(best: RoundValues, rival: RoundValues, settings: Settings) -> stats.Comparison | None:
    common = set(best) & set(rival)
    if not common or min([best[i] for i in common] + [rival[i] for i in common]) <= 0:
        return None
    return verdicts.statistic(rival, best, settings)  # the verdicts' one statistic


def lead(best: RoundValues, rivals: Mapping[str, RoundValues], settings: Settings) -> Lead:
    """Is ``best`` (round -> value, lower is better) decidedly lower than every rival?
    Each comparison is best / rival at the Bonferroni-split level of ``settings``."""
    each = family_settings(settings, max(len(rivals), 1))
    comparisons = {name: _compare(best, values, each) for name, values in rivals.items()}
    decided = bool(comparisons) and all(
        c is not None and c.verdict == Verdict.DIFFERENT and c.direction == "lower"
        for c in comparisons.values()
    )
    return Lead(decided, comparisons, each, settings.confidence)


def open_rivals(
    best: RoundValues, rivals: Mapping[str, RoundValues], settings: Settings
) -> list[str]:
    """The rivals that more rounds of ``best`` and them could still put behind it, while
    "``best`` was the fastest" is not yet decided: its comparisons with them are
    undecided at the family's level. Empty when the lead is decided, or when it cannot
    be: a rival equivalent to ``best``, ahead of it, or without a common round.

    The baseline comparisons stop at the look that decides them, which for a clear
    leader comes before its Bonferroni-split comparisons with its closest rivals have
    an interval that excludes 1; the rounds keep those few sides running, at the rule's
    planned looks (so within the family's error), until the sentence is decided or
    cannot be."""
    if len(rivals) < 2:
        return []  # one rival: the baseline comparison is the whole ranking
    found = lead(best, rivals, settings)
    if found.decided:
        return []
    undecided = []
    for name, c in found.comparisons.items():
        if c is None or c.verdict == Verdict.EQUIVALENT:
            return []
        if c.verdict == Verdict.DIFFERENT and c.direction != "lower":
            return []
        if c.verdict == Verdict.UNDECIDED:
            undecided.append(name)
    return undecided
