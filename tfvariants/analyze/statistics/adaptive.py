"""The stopping rule for adaptive repeats: a small fixed number of looks.

Rounds of repeats run until every watched comparison is decided, the budget is spent,
or the last look is reached. Looking after every round would inflate false positives;
instead the data are looked at only at K planned repeat counts (5, 7, 10, 15, 20 by
default: evenly from the first to the maximum, plus the first count at which a paired
interval exists, 7, so that rounds slowed together, which only the paired method sees
through, are judged as soon as they can be), and
each look's interval has the level that keeps the chance that ANY look's interval
misses at alpha (repeated confidence intervals with Pocock's constant boundary:
:mod:`tfvariants.analyze.statistics.looks`; 98.4 % per look for the default rule at 95 %). When the
budget ends between looks, one last look is made at the repeats there are, in place of
the planned looks not reached, at the same level.

What is judged at a look is the report's own comparison
(:func:`tfvariants.analyze.statistics.verdicts.workload_verdicts`, via
``tfvariants.rounds.training.look_verdicts``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfvariants.analyze.statistics import looks as looks_mod
from tfvariants.analyze.statistics.stats import Comparison, smallest_decidable_n
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.store.record import AdaptiveRecord

DEFAULT_LOOKS = 4
DEFAULT_MAX_REPEATS = 20


@dataclass(frozen=True)
class StoppingRule:
    min_repeats: int
    max_repeats: int
    looks: tuple[int, ...]  # repeat counts after which the data are looked at

    @property
    def k(self) -> int:
        return len(self.looks)

    def to_json(self) -> dict:
        return {
            "min_repeats": self.min_repeats,
            "max_repeats": self.max_repeats,
            "looks": list(self.looks),
        }


def stopping_rule(
    min_repeats: int,
    max_repeats: int = DEFAULT_MAX_REPEATS,
    k: int = DEFAULT_LOOKS,
    confidence: float = 0.95,
) -> StoppingRule:
    """K looks evenly spaced from min_repeats to max_repeats (fewer if they coincide),
    plus one at the first repeat count at which a paired interval exists at the rule's
    per-look level, when that falls between the first two looks (see the module)."""
    if min_repeats < 1 or max_repeats < min_repeats or k < 1:
        raise ValueError("need 1 <= min_repeats <= max_repeats and k >= 1")
    if k == 1 or max_repeats == min_repeats:
        return StoppingRule(min_repeats, max_repeats, (max_repeats,) if k == 1 else (min_repeats,))
    step = (max_repeats - min_repeats) / (k - 1)
    looks = tuple(sorted({round(min_repeats + i * step) for i in range(k)}))
    # Searched up to the second look: a count there or beyond adds nothing.
    paired = _paired_first(looks, confidence, looks[1])
    if looks[0] < paired < looks[1]:
        with_paired = tuple(sorted((*looks, paired)))
        # The extra look lowers each look's level a little: it must still be the first
        # count with a paired interval (it is at 95 %: 7 before and after).
        if _paired_first(with_paired, confidence, looks[1]) == paired:
            looks = with_paired
    return StoppingRule(min_repeats, max_repeats, looks)


def _paired_first(looks: tuple[int, ...], confidence: float, limit: int) -> int:
    """The fewest rounds (up to ``limit``) for which a paired interval exists at each
    look's level under these looks."""
    return smallest_decidable_n(looks_mod.per_look_alpha(confidence, looks), limit, paired=True)


# A run that reached its last look undecided is not helped by more budget: its looks
# were planned up to --max-repeats. A --resume with a larger --max-repeats adds looks
# the plan did not have, and the stated confidence no longer holds (docs/methods.md).
LAST_LOOK_NEXT = (
    "a new run planned from the start with a larger last look, e.g. --max-repeats {repeats} "
    "(and a --budget that fits it); a --resume with a larger --max-repeats adds looks the "
    "plan did not have and weakens the stated confidence"
)


# What to do when every undecided comparison sits so near an edge for its noise that no
# practical number of repeats settles it (bands.more_repeats: None): a larger last look
# would not either.
QUIETER_NEXT = "a quieter machine: at this noise no practical number of repeats would settle it"


def needed_more(cmps: Iterable[Comparison]) -> int | None:
    """The most repeats per side an undecided comparison needs ("about N more repeats
    per side"): the figure the run's next step is for. None: no undecided comparison; 0:
    none of the undecided ones gave a figure (:data:`QUIETER_NEXT`)."""
    more = [c.more_repeats or 0 for c in cmps if c.verdict == Verdict.UNDECIDED]
    return max(more) if more else None


def last_look_repeats(needed: int | None, last: int) -> int:
    """The --max-repeats of the new run that decides what stopped undecided at the last
    look ``last``: ``needed`` (:func:`needed_more`) beyond it, never under twice it
    (twice it alone when ``needed`` is None: no comparison counted is undecided, or none
    was counted, e.g. a report with no answer). The one figure the answer's next step,
    the command's closing line and the serving report's sentence give, so a reader is
    told one number. The floor: ``needed`` is a rough estimate (an interval's width ~
    1/sqrt(n)), and a new run planned barely past this one on it would likely stop
    undecided at its own last look again."""
    return max(2 * last, last + (needed or 0))


def last_look_next(needed: int | None, last: int) -> str:
    """The next step of a run stopped undecided at its last look, in full (why not a
    --resume), with :func:`last_look_repeats`' figure; the answer's :data:`QUIETER_NEXT`
    when the undecided comparisons gave none (``needed`` 0), as its next step says."""
    if needed == 0:
        return QUIETER_NEXT
    return LAST_LOOK_NEXT.format(repeats=last_look_repeats(needed, last))


AT_LAST_LOOK = "still undecided after the maximum of"  # in run.json's adaptive.stopped


def at_last_look(stopped: object) -> bool:
    """The adaptive rounds stopped undecided at the planned last look."""
    return isinstance(stopped, str) and AT_LAST_LOOK in stopped


def last_look_of(record: AdaptiveRecord | None) -> int | None:
    """The repeats of the last look, when the run stopped undecided there (None: it did
    not): what a next step must go beyond."""
    if record is None or not at_last_look(record.stopped):
        return None
    return int(record.max_repeats or DEFAULT_MAX_REPEATS)
