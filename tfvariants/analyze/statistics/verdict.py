"""The verdict of one comparison, and the words a table says a decided one in.

Every comparison (:func:`tfvariants.analyze.statistics.stats.verdict_of`) gives a
:class:`Verdict`, and every reader of one (the report, the adaptive rounds, the answer
table, the CSV, the templates) names it through the enum, never by its word. The values
are the words the CSV and the terminal have always printed: a ``StrEnum`` member is its
word wherever it is written, formatted or compared with a stored string.
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """What one comparison (a configuration against its baseline) says."""

    DIFFERENT = "different"  # the interval lies beyond +/- the minimum effect
    EQUIVALENT = "equivalent"  # the two one-sided tests' interval lies inside the band
    UNDECIDED = "undecided"  # neither yet: more repeats may decide
    BASELINE = "baseline"  # the baseline against itself

    @property
    def decided(self) -> bool:
        """Needs no more repeats: different or equivalent."""
        return self in (Verdict.DIFFERENT, Verdict.EQUIVALENT)

    @property
    def word(self) -> str:
        """How a heading or a ratio's note says it: "decided" for different."""
        return "decided" if self is Verdict.DIFFERENT else self.value


class Said(StrEnum):
    """A decided verdict in a table's or a sentence's words: which side is lower."""

    FASTER = "faster"
    SLOWER = "slower"
    CHEAPER = "cheaper"
    DEARER = "dearer"
    MORE_EXPENSIVE = "more expensive"  # the summary's sentences


TIME_WORDS = (Said.FASTER, Said.SLOWER)  # (lower, higher) of a time
COST_WORDS = (Said.CHEAPER, Said.DEARER)  # (lower, higher) of a cost
