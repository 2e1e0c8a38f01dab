"""The next adaptive round, one rule for training and serving: after the last planned
look the stored rounds reached, stop (nothing to judge, everything decided, the maximum
of repeats) or run both sides of every open comparison again, completing an interrupted
round before a new one starts, in the round's own seeded order.

What a task judges at the look (training: analyze/statistics/verdicts.py; serving:
analyze/serving.py ``watched``) is its hook's part (rounds/training.py,
rounds/serving.py); the decision from it is this module's.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from tfvariants.analyze.statistics.adaptive import AT_LAST_LOOK, StoppingRule
from tfvariants.plan.spec import round_order

K = TypeVar("K", bound=Hashable)  # what one configuration's cells share in a round
C = TypeVar("C")  # a planned cell


@dataclass(frozen=True)
class Judged(Generic[K]):
    """What a task's hook found at the last look the stored rounds reached."""

    rounds: int  # rounds stored so far
    look: int | None  # the last planned look reached (None: not the first yet)
    judged: int  # comparisons judged at that look
    undecided: int  # of them still undecided
    active: Sequence[K]  # both sides of every undecided comparison, in run order
    present: Mapping[K, Collection[int]]  # the rounds with a file, per configuration
    # The first round of a configuration that started after the others (a ``later`` one):
    # its missing rounds before it are not gaps, as its comparison uses common rounds only.
    starts: Mapping[K, int] = field(default_factory=dict)


def same_basis(basis: Sequence[object], earlier: Sequence[object]) -> bool:
    """Whether a look is judged on what an earlier one was (its basis: the look, what it
    is judged with, every result before it, in order; the same objects or equal ones).
    The same basis judges the same, so a hook judges again only when it changes: at the
    next look, or after a change before this one (an interrupted round completed)."""
    if not earlier or len(basis) != len(earlier):
        return False
    return all(a is b or a == b for a, b in zip(basis, earlier, strict=True))


def next_round(
    judged: Judged[K],
    rule: StoppingRule,
    cells_of: Callable[[list[tuple[K, int]]], list[C]],
    seed: int | None,
    *,
    nothing_to_judge: str,
) -> tuple[list[C], str]:
    """The next round's cells (none: stop) and why."""
    at, n = judged.look, judged.undecided
    if at is None:
        return [], f"only {judged.rounds} round(s) stored, fewer than the first look"
    if not judged.judged:
        return [], nothing_to_judge
    if not n:
        return [], f"every comparison was decided by the look after {at} repeats"
    if judged.rounds >= rule.max_repeats:
        return [], (f"{n} comparison(s) {AT_LAST_LOOK} {rule.max_repeats} repeats")
    # An interrupted round is completed before a new one starts.
    gaps = [
        (k, rep)
        for k in judged.active
        for rep in range(judged.starts.get(k, 0), judged.rounds)
        if rep not in judged.present.get(k, ())
    ]
    todo = gaps or [(k, judged.rounds) for k in judged.active]
    cells = round_order(cells_of(todo), seed, todo[0][1])
    return cells, f"{n} comparison(s) undecided at the look after {at} repeats"
