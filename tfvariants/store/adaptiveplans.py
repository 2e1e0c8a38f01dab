"""The adaptive rounds' plans as run.json keeps them ("adaptive.window_plan",
"adaptive.look_plan", "adaptive.design"): typed records, made by the rounds (rounds/training.py,
rounds/serving.py), written with ``to_json`` and structured here once when run.json is
read (store/record.py), so that no reader outside store/ reads them by string keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tfvariants.store.rawfields import finite_number as _number
from tfvariants.store.rawfields import whole_number as _whole


@dataclass(frozen=True)
class WindowBack:
    """A workload whose planned window cost more than it saved at a look: from
    ``from_repeat`` on, its cells measure ``min_steady_s`` again."""

    min_steady_s: float
    from_repeat: int
    ratio: float  # variance x seconds per cell, planned window / previous one

    def to_json(self) -> dict[str, Any]:
        return {"min_steady_s": self.min_steady_s, "from_repeat": self.from_repeat,
                "ratio": self.ratio}  # fmt: skip


@dataclass(frozen=True)
class WindowPlan:
    """The steady window of a training run's rounds from ``from_repeat`` on (the first
    look): the window rule's (rounds/training.py ``plan_window``), or the more-processes
    design's cheaper cells (analyze/training/processcells.py)."""

    min_steady_s: float
    previous_s: float
    from_repeat: int
    reason: str
    components: Mapping[str, Any] | None = None  # the rule's inputs, for the reader
    rule: str | None = None  # the rule, in words
    back: Mapping[str, WindowBack] | None = None  # workload -> its window again
    min_steady_steps: int | None = None  # the more-processes design's
    warmup_max_s: Mapping[str, float] | None = None  # workload -> its warm-up cap

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "min_steady_s": self.min_steady_s,
            "previous_s": self.previous_s,
            "reason": self.reason,
            "components": None if self.components is None else dict(self.components),
            "rule": self.rule,
            "from_repeat": self.from_repeat,
            "back": None if self.back is None else {w: b.to_json() for w, b in self.back.items()},
            "min_steady_steps": self.min_steady_steps,
            "warmup_max_s": None if self.warmup_max_s is None else dict(self.warmup_max_s),
        }
        return {k: v for k, v in record.items() if v is not None}


def window_plan(recorded: object) -> WindowPlan | None:
    """run.json's "adaptive.window_plan", typed; None when absent or not whole."""
    if not isinstance(recorded, Mapping):
        return None
    chosen, previous = _number(recorded.get("min_steady_s")), _number(recorded.get("previous_s"))
    start = _whole(recorded.get("from_repeat"))
    if chosen is None or previous is None or start is None:
        return None
    back, caps = recorded.get("back"), recorded.get("warmup_max_s")
    components = recorded.get("components")
    return WindowPlan(
        chosen,
        previous,
        start,
        str(recorded.get("reason")),
        components=components if isinstance(components, Mapping) else None,
        rule=recorded.get("rule") if isinstance(recorded.get("rule"), str) else None,
        back=_backs(back) if isinstance(back, Mapping) else None,
        min_steady_steps=_whole(recorded.get("min_steady_steps")),
        warmup_max_s={str(w): float(s) for w, s in caps.items() if _number(s) is not None}
        if isinstance(caps, Mapping)
        else None,
    )


def _backs(recorded: Mapping[str, Any]) -> dict[str, WindowBack]:
    backs = {}
    for workload, back in recorded.items():
        seconds = _number(back.get("min_steady_s")) if isinstance(back, Mapping) else None
        start = _whole(back.get("from_repeat")) if isinstance(back, Mapping) else None
        if seconds is not None and start is not None:
            backs[str(workload)] = WindowBack(seconds, start, _number(back.get("ratio")) or 0.0)
    return backs


@dataclass(frozen=True)
class LookPlan:
    """How a serving run's last look was planned from its budget (rounds/serving.py
    ``plan_last_look``)."""

    round_s: float  # one round's estimated cost, with the margin
    budget_s: float
    last_look: int
    first_look: int
    margin: float  # the margin on a round's cost
    cap: int  # the planned last look at most

    def to_json(self) -> dict[str, Any]:
        return {
            "round_s": round(self.round_s, 1),
            "budget_s": self.budget_s,
            "last_look": self.last_look,
            "first_look": self.first_look,
            "margin": self.margin,
            "cap": self.cap,
        }


def look_plan(recorded: object) -> LookPlan | None:
    """run.json's "adaptive.look_plan", typed; None when absent or not whole."""
    if not isinstance(recorded, Mapping):
        return None
    round_s, budget_s = _number(recorded.get("round_s")), _number(recorded.get("budget_s"))
    last, first = _whole(recorded.get("last_look")), _whole(recorded.get("first_look"))
    if round_s is None or budget_s is None or last is None:
        return None
    margin, cap = _number(recorded.get("margin")), _whole(recorded.get("cap"))
    return LookPlan(round_s, budget_s, last, first or 0, margin or 0.0, cap or last)


@dataclass(frozen=True)
class CellsRecord:
    """The more-processes design's cheaper cells (analyze/training/processcells.py
    ``ProcessCells``, which adds their words): the steady window and warm-up cap of the
    rounds from ``from_repeat`` on, and what a cell is expected to cost."""

    from_repeat: int
    min_steady_s: float
    min_steady_steps: int
    warmup_max_s: Mapping[str, float]  # per workload
    cell_s: float  # expected wall time of a cell from here (median)
    was_s: float  # a first-look cell's (median)
    previous_s: float  # the steady window the first look measured

    def to_json(self) -> dict[str, Any]:
        return {
            "from_repeat": self.from_repeat,
            "min_steady_s": self.min_steady_s,
            "min_steady_steps": self.min_steady_steps,
            "warmup_max_s": dict(self.warmup_max_s),
            "cell_s": self.cell_s,
            "was_s": self.was_s,
            "previous_s": self.previous_s,
        }


def cells_record(recorded: object) -> CellsRecord | None:
    """run.json's record of the cheaper cells (in the design), typed; None when absent
    or not whole."""
    if not isinstance(recorded, Mapping):
        return None
    caps = recorded.get("warmup_max_s")
    at, steps = _whole(recorded.get("from_repeat")), _whole(recorded.get("min_steady_steps"))
    seconds = [_number(recorded.get(k)) for k in ("min_steady_s", "cell_s", "was_s", "previous_s")]
    if not isinstance(caps, Mapping) or at is None or steps is None or None in seconds:
        return None
    steady_s, cell_s, was_s, previous_s = (float(n or 0) for n in seconds)
    warm = {str(w): float(c) for w, c in caps.items() if _number(c) is not None}
    return CellsRecord(at, steady_s, steps, warm, cell_s, was_s, previous_s)


@dataclass(frozen=True)
class DesignRecord:
    """The measurement design a training run's first look chose, as run.json keeps it
    (analyze/training/design.py ``Design``, which says it)."""

    kind: str
    reason: str
    switched: bool  # the rounds after the first look ran side by side
    cells: CellsRecord | None  # more processes: the cheaper cells


def design_record(recorded: object) -> DesignRecord | None:
    """run.json's "adaptive.design", typed; None when absent or without a kind."""
    if not isinstance(recorded, Mapping) or not isinstance(recorded.get("kind"), str):
        return None
    reason = recorded.get("reason")
    return DesignRecord(
        recorded["kind"],
        reason if isinstance(reason, str) else "",
        recorded.get("switched") is True,
        cells_record(recorded.get("cells")),
    )
