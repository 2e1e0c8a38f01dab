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
