"""Validation of command-line values shared by every command.

Each parser raises argparse.ArgumentTypeError, which argparse turns into one line
(``tfvariants CMD: error: argument --threads: ...``) and exit code 2 before anything is
written. The same parser (and so the same wording) serves every command that takes
the value.
"""

from __future__ import annotations

import argparse
import math
import re

from tfvariants.plan.cell import MAX_THREADS
from tfvariants.plan.spec import MAX_REPEATS

MAX_SEED = 2**32 - 1  # numpy's and TensorFlow's seed range
MAX_COUNT = 10**9  # epochs, samples, steps: far above any real schedule
MAX_TIMEOUT_S = 30 * 24 * 3600.0

# ASCII digits only: int() also takes "1_000" and other scripts' digits ("١٢").
_DIGITS = re.compile(r"[0-9]+", re.ASCII)


def whole_number(text: str, lo: int, hi: int) -> int:
    """``text`` as an int in [lo, hi], written with ASCII digits only."""
    s = str(text).strip()
    if not _DIGITS.fullmatch(s):
        raise argparse.ArgumentTypeError(f"expected a whole number from {lo} to {hi}, got {text!r}")
    value = int(s)
    if not lo <= value <= hi:
        raise argparse.ArgumentTypeError(f"expected a whole number from {lo} to {hi}, got {value}")
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
    try:
        value = float(str(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S):
        raise argparse.ArgumentTypeError(
            f"expected seconds greater than 0 and at most {MAX_TIMEOUT_S:g}, got {text}"
        )
    return value


def thread_list(text: str) -> list[int]:
    """'8,16,32,64' -> [8, 16, 32, 64]; order kept, duplicates dropped."""
    parts = [p.strip() for p in str(text).split(",")]
    if not str(text).strip() or any(not p for p in parts):
        raise argparse.ArgumentTypeError(f"expected thread counts like 8,16,32, got {text!r}")
    values = [threads(p) for p in parts]
    return list(dict.fromkeys(values))


def duration(text: str) -> float:
    """'10m', '90s', '1.5h' or plain seconds -> seconds (> 0)."""
    t = text.strip().lower()
    scale = {"s": 1.0, "m": 60.0, "h": 3600.0}.get(t[-1:], None)
    number = t[:-1] if scale else t
    try:
        value = float(number) * (scale or 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a duration like 10m, 90s or 1h, got {text!r}"
        ) from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


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
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a fraction like 0.05 or 5%, got {text!r}"
        ) from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (0% and 100%), got {text}")
    return value


_DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0}


def duration_s(text: str) -> float:
    """'100ms', '0.5s', '2m' -> seconds. A unit is required: '100' could mean either."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|s|min|m)\s*", str(text), re.ASCII)
    if not m:
        raise argparse.ArgumentTypeError(
            f"expected a duration with a unit like 100ms, 0.5s or 2m, got {text!r}"
        )
    value = float(m.group(1)) * _DURATION_UNITS[m.group(2)]
    if not 0 < value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(
            f"must be greater than 0 and at most {MAX_TIMEOUT_S:g} s, got {text!r}"
        )
    return value
