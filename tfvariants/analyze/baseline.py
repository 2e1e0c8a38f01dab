"""The one baseline rule, for training and serving alike.

``--baseline VARIANT[@THREADS]`` is parsed here, once. The rule itself is
:func:`tfvariants.analyze.statistics.verdicts.pick_baseline`: the configuration asked for; VARIANT
alone: its most threads with usable values; by default
:func:`tfvariants.analyze.statistics.decide.choose_baseline` (the GPU if it has results, else among
the configurations within the host's CPUs the most threads, then the most usable
repeats, then the first variant). Training applies it per workload (its ratios and its
accuracy parity) and to every workload pooled (the header's label); serving per model on
(variant, threads), then takes that pair's priced, in-process, unbatched configuration.
"""

from __future__ import annotations

from tfvariants.analyze.statistics.verdicts import Requested
from tfvariants.errors import UserError


def parse_baseline(text: str | None) -> Requested | None:
    """``VARIANT`` or ``VARIANT@THREADS`` (None: the default rule)."""
    if not text:
        return None
    variant, sep, threads = text.partition("@")
    if not variant or (sep and not threads.isdigit()):
        raise UserError(f"--baseline {text!r}: expected VARIANT or VARIANT@THREADS")
    return variant, int(threads) if sep else None
