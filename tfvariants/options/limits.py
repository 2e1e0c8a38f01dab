"""The bounds of the values a run's options may hold, in one place: the command-line
parsers (options/argtypes.py) and the run.json loader (store/runfile.py) both check
against them, so a value refused on the command line is refused in a stored run too,
before any cell runs.

Each ``*_problem`` function returns what was expected (for the error message) when the
value is out of bounds, else None.
"""

from __future__ import annotations

import math
import re

MAX_SECONDS = 30 * 24 * 3600.0  # a timeout, a budget, a steady window: at most 30 days
MAX_SEED = 2**32 - 1  # numpy's and TensorFlow's seed range
MAX_COUNT = 10**9  # epochs, samples, steps: far above any real schedule
MAX_REPEATS = 10_000  # repeats per configuration
# The most vCPUs a cell may emulate (the command line and the result loader agree).
MAX_THREADS = 4096
# Above 0.9999 the statistics' level (split over up to --max-repeats looks) comes so close
# to 1 that float arithmetic cannot represent it; no number of repeats would decide.
CONFIDENCE_MIN, CONFIDENCE_MAX = 0.5, 0.9999


# ASCII digits only: float() also takes "1_000", other scripts' digits ("١٢", "２"),
# "inf", "nan" and "infinity".
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def decimal(text: str) -> float | None:
    """``text`` as a finite number written with ASCII digits (a sign, a point and an
    exponent allowed), else None: not "inf", "nan", "1_0", "١", nor 1e309 (overflow).
    Negative zero becomes 0."""
    s = str(text).strip()
    if not _DECIMAL.fullmatch(s):
        return None
    value = float(s)
    return value + 0.0 if math.isfinite(value) else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) > 1e300:
        return None  # a huge JSON integer has no float
    value = float(value)
    return value if math.isfinite(value) else None


def seconds_problem(value: object) -> str | None:
    """Seconds (a timeout, a budget, a steady window): finite, > 0, at most 30 days."""
    v = _number(value)
    if v is None or not 0 < v <= MAX_SECONDS:
        return f"seconds greater than 0 and at most {MAX_SECONDS:g}"
    return None


def confidence_problem(value: object) -> str | None:
    """The intervals' confidence: above 0.5, at most 0.9999."""
    v = _number(value)
    if v is None or not CONFIDENCE_MIN < v <= CONFIDENCE_MAX:
        return f"a confidence above {CONFIDENCE_MIN:g} and at most {CONFIDENCE_MAX:g}"
    return None


def equivalence_band_problem(value: object) -> str | None:
    """The band "equivalent" is judged against: a fraction in (0, 1)."""
    v = _number(value)
    if v is None or not 0 < v < 1:
        return "a fraction above 0 and below 1, like 0.05"
    return None


def min_effect_problem(value: object) -> str | None:
    """The smallest difference that matters: a fraction in [0, 1)."""
    v = _number(value)
    if v is None or not 0 <= v < 1:
        return "a fraction from 0 up to (not including) 1, like 0.05"
    return None
