"""Validation of command-line values shared by every command.

Each parser raises argparse.ArgumentTypeError, which argparse turns into one line
(``tfvariants CMD: error: argument --threads: ...``) and exit code 2 before anything is
written. The same parser (and so the same wording) serves every command that takes
the value.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

from tfvariants.options import limits
from tfvariants.options.limits import MAX_THREADS

MAX_SEED = limits.MAX_SEED
MAX_COUNT = limits.MAX_COUNT
MAX_REPEATS = limits.MAX_REPEATS
MAX_TIMEOUT_S = limits.MAX_SECONDS

# ASCII digits only: int() also takes "1_000" and other scripts' digits ("١٢", "２").
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
decimal = limits.decimal  # finite, ASCII digits: no "inf", "nan", "1_0", "١"


def shown(text: object, limit: int = 40) -> str:
    """A user's value quoted for a one-line message: repr (newlines escaped), cut short."""
    r = repr(text)
    return r if len(r) <= limit else r[: limit - 4] + "...'"


def names(text: str) -> list[str]:
    """A comma list of names, each once, in the order given."""
    parts = [p.strip() for p in str(text).split(",")]
    if not str(text).strip() or any(not p for p in parts):
        raise argparse.ArgumentTypeError(f"expected a comma list of names, got {shown(text)}")
    return list(dict.fromkeys(parts))


def names_problem(value: object) -> str | None:
    """A stored list of names that is not one (run.json's check)."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        return "expected a list of names"
    return None


def whole_number(text: str, lo: int, hi: int) -> int:
    """``text`` as an int in [lo, hi], written with ASCII digits only."""
    s = str(text).strip()
    if not _DIGITS.fullmatch(s):
        raise argparse.ArgumentTypeError(
            f"expected a whole number from {lo} to {hi}, got {shown(text)}"
        )
    # Compare lengths first: int() refuses over 4,300 digits, and 10**5000 is just too big.
    value = int(s) if len(s.lstrip("0")) <= len(str(hi)) else hi + 1
    if not lo <= value <= hi:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from {lo} to {hi}, got {shown(s, 24)[1:-1]}"
        )
    return value


def threads(text: str) -> int:
    return whole_number(text, 1, MAX_THREADS)


def seed(text: str) -> int:
    return whole_number(text, 0, MAX_SEED)


def repeats(text: str) -> int:
    return whole_number(text, 1, MAX_REPEATS)


def repeat_index(text: str) -> int:
    return whole_number(text, 0, MAX_REPEATS - 1)


def positive_int(text: str) -> int:
    """A count such as epochs, samples or steps per epoch."""
    return whole_number(text, 1, MAX_COUNT)


def positive_float(text: str) -> float:
    """Seconds (a timeout): finite, > 0, at most 30 days."""
    value = decimal(text)
    problem = limits.seconds_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(f"expected {problem}, got {shown(text)}")
    assert value is not None  # seconds_problem refuses None
    return value


def thread_list(text: str) -> list[int]:
    """'8,16,32,64' -> [8, 16, 32, 64]; order kept, duplicates dropped."""
    parts = [p.strip() for p in str(text).split(",")]
    if not str(text).strip() or any(not p for p in parts):
        raise argparse.ArgumentTypeError(f"expected thread counts like 8,16,32, got {text!r}")
    values = [threads(p) for p in parts]
    return list(dict.fromkeys(values))


def duration(text: str) -> float:
    """'10m', '90s', '1.5h' or plain seconds -> seconds (> 0, at most 30 days)."""
    t = text.strip().lower()
    scale = {"s": 1.0, "m": 60.0, "h": 3600.0}.get(t[-1:], None)
    number = decimal(t[:-1] if scale else t)
    if number is None:
        raise argparse.ArgumentTypeError(
            f"expected a duration like 10m, 90s or 1h, got {shown(text)}"
        )
    value = number * (scale or 1.0)  # may overflow to inf: refused below
    problem = limits.seconds_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(f"expected {problem}, got {shown(text)}")
    return value


def budget(text: str) -> float:
    """A run's time budget: a duration of at least 1 s (a smaller one would be shown,
    and planned, as 0 s)."""
    value = duration(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1s, got {shown(text)}")
    return value


def _fraction_value(text: str) -> float:
    t = text.strip()
    value = decimal(t[:-1]) if t.endswith("%") else decimal(t)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected a fraction like 0.05 or 5%, got {shown(text)}")
    return value / 100 if t.endswith("%") else value


def wait(text: str) -> float:
    """Like ``duration`` ('30s', '1m'), but 0 (do not wait) is allowed; at most an hour."""
    if text.strip() in ("0", "0s"):
        return 0.0
    value = duration(text)
    if value > 3600:
        raise argparse.ArgumentTypeError(f"must be at most 1h, got {text}")
    return value


def retries(text: str) -> int:
    """Attempts after a disturbed one, per cell: 0 (none) to 10."""
    return whole_number(text, 0, 10)


def fraction(text: str) -> float:
    """'5%' or '0.05' -> 0.05; must lie in [0, 1)."""
    value = _fraction_value(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(
            f"must be between 0 and 1 (0% and 100%), got {shown(text)}"
        )
    return value


def _bounded_fraction(text: str, problem_of: Callable[[float], str | None]) -> float:
    """A fraction checked against the bound ``problem_of`` gives (limits.py: shared with
    the run.json loader)."""
    value = _fraction_value(text)
    problem = problem_of(value)
    if problem:
        raise argparse.ArgumentTypeError(f"expected {problem}, got {shown(text)}")
    return value


def min_effect(text: str) -> float:
    """--min-effect: '5%' or '0.05'."""
    return _bounded_fraction(text, limits.min_effect_problem)


def equivalence_band(text: str) -> float:
    """--equivalence-band: '5%' or '0.05', above 0 and below 1."""
    return _bounded_fraction(text, limits.equivalence_band_problem)


def confidence(text: str) -> float:
    """--confidence: above 0.5 and at most 0.9999 ('95%' or '0.95')."""
    return _bounded_fraction(text, limits.confidence_problem)


_DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0}


def duration_s(text: str) -> float:
    """'100ms', '0.5s', '2m' -> seconds. A unit is required: '100' could mean either."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|s|min|m)\s*", str(text), re.ASCII)
    if not m:
        raise argparse.ArgumentTypeError(
            f"expected a duration with a unit like 100ms, 0.5s or 2m, got {shown(text)}"
        )
    value = float(m.group(1)) * _DURATION_UNITS[m.group(2)]
    if not 0 < value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(
            f"must be greater than 0 and at most {MAX_TIMEOUT_S:g} s, got {shown(text)}"
        )
    return value


def milliseconds(text: str) -> float:
    """A duration with a unit ('100ms', '0.5s'), in milliseconds (serve's --p99)."""
    return duration_s(text) * 1e3


def rate(text: str) -> float:
    """Requests per second (serve's --server-qps): finite, above 0, at most 1e9."""
    value = decimal(text)
    if value is None or not 0 < value <= 1e9:
        raise argparse.ArgumentTypeError(
            f"expected a number greater than 0 and at most 1e9, got {shown(text)}"
        )
    return value


def count_or_auto(text: str) -> int | None:
    """A count, or 'auto' (None: the callee picks, e.g. serve's --min-queries)."""
    return None if str(text).strip().lower() == "auto" else positive_int(text)
