"""A node lost mid-cell (a spot preemption, a node that died): the cell reruns on
another node of its type, up to a limit; each lost attempt is recorded in the cell's
result (``attempts``) with its reason and the node-seconds it cost, so the report and
the bill can count them. Past the limit the cell fails with the count in its reason.

The node-seconds of a lost attempt are measured by the driver: from the moment the cell
could start (its submission, or the end of the previous cell of its node type, whichever
is later) to the loss. Exact with one node per type (the study's layout); with several
nodes of a type, an upper bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

DEFAULT_RETRIES = 3  # reruns after a node loss before the cell fails (--preempt-retries)

# Ray's errors for a task whose node died under it (or the object it returned with it).
NODE_LOSS = ("NodeDiedError", "ObjectLostError", "OwnerDiedError")


def node_lost(exc: BaseException) -> bool:
    return type(exc).__name__ in NODE_LOSS or any(
        c.__name__ in NODE_LOSS for c in type(exc).__mro__
    )


@dataclass
class Attempts:
    """One cell's lost attempts so far, and when its current attempt could start."""

    instance: str
    could_start: float = field(default_factory=time.monotonic)
    lost: list[dict[str, Any]] = field(default_factory=list)

    def record(self, exc: BaseException, type_free_since: float) -> float:
        """A lost attempt: remember it, return its node-seconds."""
        now = time.monotonic()
        lost_s = max(0.0, now - max(self.could_start, type_free_since))
        self.lost.append(
            {
                "attempt": len(self.lost) + 1,
                "instance": self.instance,
                "reason": f"node lost mid-cell: {type(exc).__name__}",
                "lost_s": round(lost_s, 1),
            }
        )
        self.could_start = now
        return lost_s

    def failed_reason(self, limit: int) -> str:
        n = len(self.lost)
        return (
            f"node lost mid-cell ({self.instance}) {n} time{'s' if n != 1 else ''}, past the "
            f"limit of {limit} rerun{'s' if limit != 1 else ''} (--preempt-retries); "
            "the cell can be rerun with --resume"
        )
