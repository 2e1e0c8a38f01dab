"""The training task's run options (``compare``, ``run``): each declared once.

To add an option: add a field here (default, help, flag, parser, bounds, identity),
then read it as ``spec.options.<name>`` where it is used; the command line, run.json's
record and the check of a stored run follow from the declaration.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfvariants.options import argtypes, bounds, interference, shared
from tfvariants.options.cell import CellOptions
from tfvariants.options.decision import ADAPTIVE, JUDGED, DecisionOptions
from tfvariants.options.declare import KEPT, REJUDGED, option
from tfvariants.options.preset import PresetRecord


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%%"


_SHARE = bounds.number(0, 1, below_hi=True)  # argtypes.fraction's range


def _share(default: float, help: str, flag: str, resume: str = KEPT) -> float:
    """A share of a cell's CPUs (``--flag 0.1`` or ``10%``), shown as a percentage."""
    return option(
        default,
        help,
        flag=flag,
        resume=resume,
        parse=argtypes.fraction,
        problem=_SHARE,
        default_words=_pct(default),
    )


@dataclass(frozen=True)
class TrainingOptions(CellOptions, DecisionOptions):
    """What every training cell of a run is measured and judged with."""

    quiet_share: float = _share(
        interference.QUIET_SHARE,
        "before each cell, wait until other processes used at most "
        "this share of its CPUs over the last second",
        "--quiet-share",
    )
    quiet_wait_s: float = option(
        interference.QUIET_WAIT_S,
        "the longest wait for quiet before a cell; then it runs anyway, and says so",
        flag="--quiet-wait",
        parse=argtypes.wait,
        problem=bounds.number(0, 3600),
        metavar="DURATION",
        default_words=f"{interference.QUIET_WAIT_S:g}s; 0: do not wait",
    )
    disturbed_share: float = _share(
        interference.DISTURBED_SHARE,
        "a cell whose others' (or steal) share of its CPUs was "
        "above this is disturbed: kept, listed, left out of the verdicts, and run again",
        "--disturbed-share",
        REJUDGED,
    )
    shielded_share: float = _share(
        interference.SHIELDED_SHARE,
        "a worker at raised priority (--priority) takes its CPU "
        "back when it wants it, so it is disturbed when its threads waited for a CPU more than "
        "this share of the time",
        "--shielded-share",
        REJUDGED,
    )
    disturbed_retries: int = option(
        interference.DISTURBED_RETRIES,
        "attempts after a disturbed one, per cell, within the budget",
        flag="--disturbed-retries",
        parse=argtypes.retries,
        problem=bounds.whole(0, 10),
        default_words=str(interference.DISTURBED_RETRIES),
    )
    priority: str = option(
        interference.PRIORITY_DEFAULT,
        "raised (default): each worker's session at the lowest nice permitted (-20 with "
        "CAP_SYS_NICE, else what RLIMIT_NICE allows), so a background job cannot take its "
        "CPUs; normal: as started. Each cell records what it got",
        flag="--priority",
        choices=interference.PRIORITIES,
    )
    order_seed: int | None = shared.order_seed()
    # Configurations that explain rather than answer (an A/A twin, an ISA cap): with a
    # budget they must not take rounds from the comparisons the question is about, so
    # they start only when those are settled, compared on the rounds both sides ran.
    later: list[str] | None = option(
        None,
        "variants whose rounds start only once every other comparison is settled, in the "
        "budget left (configurations that explain rather than answer; needs a budget); "
        "fewer rounds, less power: a 1.2x at 10 percent noise, started once an equally hard "
        "comparison is settled, was found in 41 percent of simulated runs, against 94 from "
        "the start",
        flag="--later",
        parse=argtypes.names,
        problem=argtypes.names_problem,
        metavar="VARIANTS",
        omit_none=True,
    )
    # Duet measurement (execute/duet.py): two cells of a round at once on disjoint CPUs.
    # Stored, and kept by a resume: a run's cells are all measured one way.
    duet: bool = option(
        False,
        "duet measurement: run two cells of a round at once on disjoint CPUs (one "
        "thread count; needs twice its CPUs on separate cores), so interference hits both "
        "sides of a comparison alike; ratios, not absolute times, are its answer "
        "(docs/compare.md)",
        flag="--duet",
        switch=True,
        problem=bounds.flag,
    )
    oversubscribe: bool | None = shared.oversubscribe()
    # A window the user chose stays; else the adaptive rounds' window is planned from the
    # first look's variance components (tfvariants.analyze.statistics.windows).
    plan_window: bool = option(False, "plan the later rounds' steady window", problem=bounds.flag)
    per_workload: dict[str, dict[str, int]] | None = option(
        None, "each workload's quick scale", problem=bounds.record, omit_none=True
    )
    preset: PresetRecord | None = shared.preset(omit_none=True)


# compare's measurement and decision options, in the order --help lists them
COMPARE_DECISION = (*ADAPTIVE, "later", "min_steady_s", "min_steady_steps", *JUDGED)
INTERFERENCE = (
    "quiet_share",
    "quiet_wait_s",
    "disturbed_share",
    "shielded_share",
    "disturbed_retries",
    "priority",
)
