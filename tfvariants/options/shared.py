"""The options every task declares alike (a cell's timeout, each round's order seed),
declared here once; each task's options class takes them as fields
(``timeout_s: float = shared.timeout()``), so the flag, the parser, the bound and the
record are one. Below them, the kinds of option several declare (a count, a time in
seconds, a duration): the parser and the stored bound of each kind in one place."""

from __future__ import annotations

from typing import Any, TypeVar

from tfvariants.options import argtypes, bounds, limits
from tfvariants.options import preset as presets
from tfvariants.options.declare import THIS_COMMAND, option
from tfvariants.options.preset import PresetRecord

T = TypeVar("T")


def timeout() -> float:
    """``timeout_s``: seconds per cell: the resuming command's, never the stored run's."""
    return seconds(
        1800.0,
        "seconds per cell",
        "--timeout",
        metavar="SECONDS",
        default_words="1800",
        resume=THIS_COMMAND,
    )


def order_seed() -> int | None:
    """``order_seed``: drawn for a new run and stored, kept by a resume. Left out of the
    record while unset: runs stored before serving rounds were shuffled have none."""
    field: int | None = option(
        None,
        "seed of each round's random order of configurations (default: drawn for a new "
        "run and stored in run.json; a resume keeps it)",
        flag="--order-seed",
        parse=argtypes.seed,
        problem=bounds.whole(0, limits.MAX_SEED),
        omit_none=True,
    )
    return field


def preset(*, omit_none: bool) -> PresetRecord | None:
    """``preset``: what the run records about the preset it started with (one record
    for every task: options/preset.py); a name given as text (serve --preset) is one.
    ``omit_none``: left out of run.json while unset (as that task's runs wrote it)."""
    field: PresetRecord | None = option(
        None,
        "the preset the run started with",
        parse=presets.named,
        problem=presets.problem,
        omit_none=omit_none,
        to_json=PresetRecord.to_json,
        of_json=presets.preset_record,
    )
    return field


def oversubscribe() -> bool | None:
    """``oversubscribe``: the opt-in to thread counts above the host's CPUs on the local
    executor (plan/fit.py). Stored only when given, and kept by a resume: the run was
    started knowing its cells take turns on fewer CPUs."""
    field: bool | None = option(
        None,
        "run thread counts above this host's CPUs anyway: such cells measure threads "
        "taking turns on the CPUs there are (marked oversubscribed), not a machine of "
        "that many vCPUs",
        flag="--oversubscribe",
        switch=True,
        problem=bounds.flag,
        omit_none=True,
    )
    return field


def count(default: T, help: str, flag: str, problem: bounds.Problem, **more: Any) -> T:
    """A whole-number count option (``--flag N``, parsed as a positive whole number
    unless ``parse`` says otherwise)."""
    more.setdefault("parse", argtypes.positive_int)
    return option(default, help, flag=flag, problem=problem, **more)


def seconds(default: T, help: str, flag: str, **more: Any) -> T:
    """A time in seconds (``--flag 10``: a positive number), bounded as every stored time."""
    more.setdefault("parse", argtypes.positive_float)
    return option(default, help, flag=flag, problem=limits.seconds_problem, **more)


def duration(default: T, help: str, flag: str, **more: Any) -> T:
    """A time given as a duration (``--flag 10m``), bounded as every stored time."""
    more.setdefault("parse", argtypes.duration)
    more.setdefault("metavar", "DURATION")
    return seconds(default, help, flag, **more)
