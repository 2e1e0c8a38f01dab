"""A catalog's field checks: finite numbers in range, printable text, real dates, no
unknown keys; each error names the file, instance and field."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from datetime import datetime
from typing import TypeGuard

from tfvariants.errors import UserError

_DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?", re.ASCII)


def field_at(path: str, inst: str | None, fld: str) -> str:
    return f"{path}: instance {inst!r}, field {fld!r}" if inst else f"{path}: field {fld!r}"


# Where a value sits, for an error: a string, or a function making it only when an error
# is raised (formatting it for each of a whole cloud's 100k instances costs seconds).
Where = str | Callable[[], str]


def at(where: Where) -> str:
    return where if isinstance(where, str) else where()


def finite_number(value: object, where: Where, *, positive: bool = True) -> float:
    """A finite number: > 0 (a price), or >= 0 with ``positive=False`` (a minimum)."""
    if type(value) is float and 0 < value <= 1e300:  # the common case, checked first
        return value
    where = at(where)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{where}: expected a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(f"{where}: expected a finite number, got {value!r}")
    if abs(value) > 1e300:  # tomllib reads integers of any size; no float holds 10**400
        raise UserError(f"{where}: expected a plausible number, got {str(value)[:40]}")
    if value < 0 or (positive and value == 0):
        raise UserError(
            f"{where}: must be {'greater than 0' if positive else '0 or more'}, got {value!r}"
        )
    return float(value) + 0.0  # -0.0 -> 0.0


def printable(value: object, where: Where, *, required: bool = True) -> str:
    """A catalog's text: a string of printable characters (no newline, no escape
    sequence: it lands in one-line messages, tables and the report)."""
    if not isinstance(value, str) or (required and not value.strip()):
        raise UserError(f"{at(where)}: expected a non-empty string, got {str(value)[:40]!r}")
    if not value.isprintable():
        raise UserError(f"{at(where)}: control characters are not allowed, got {value[:40]!r}")
    return value


def known_fields(table: dict, fields: tuple[str, ...], where: Where) -> None:
    """Refuse a key the catalog format does not have (a typo would be silently ignored)."""
    if table.keys() <= _field_set(fields):  # one set test per table, in C, at 100k tables
        return
    unknown = [k for k in table if k not in fields]
    if unknown:
        raise UserError(f"{at(where)}: unknown field {unknown[0]!r} (fields: {', '.join(fields)})")


@functools.lru_cache(maxsize=64)
def _field_set(fields: tuple[str, ...]) -> frozenset[str]:
    return frozenset(fields)


def valid_date(text: object) -> TypeGuard[str]:
    """YYYY-MM or YYYY-MM-DD naming a real month (and day)."""
    return isinstance(text, str) and bool(_DATE.fullmatch(text)) and _real_date(text)


@functools.lru_cache(maxsize=4096)
def _real_date(text: str) -> bool:
    # Memoised: a catalog of 100k instances names a few dozen dates (strptime is slow).
    try:
        datetime.strptime(text, "%Y-%m-%d" if len(text) == 10 else "%Y-%m")
    except ValueError:
        return False
    return True
