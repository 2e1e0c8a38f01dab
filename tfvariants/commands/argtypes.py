"""Validation of command-line values shared by several commands.

Each parser raises argparse.ArgumentTypeError, which the CLI turns into one line
and exit code 2 before anything is written.
"""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    try:
        value = int(text.strip())
    except (ValueError, AttributeError):
        raise argparse.ArgumentTypeError(
            f"expected a positive whole number, got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def thread_list(text: str) -> list[int]:
    """'8,16,32,64' -> [8, 16, 32, 64]; order kept, duplicates dropped."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise argparse.ArgumentTypeError(f"expected thread counts like 8,16,32, got {text!r}")
    values = [positive_int(p) for p in parts]
    return list(dict.fromkeys(values))


_DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0}


def duration_s(text: str) -> float:
    """'100ms', '0.5s', '2m' -> seconds. A unit is required: '100' could mean either."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|min|m)\s*", str(text))
    if not m:
        raise argparse.ArgumentTypeError(
            f"expected a duration with a unit like 100ms, 0.5s or 2m, got {text!r}"
        )
    value = float(m.group(1)) * _DURATION_UNITS[m.group(2)]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text!r}")
    return value
