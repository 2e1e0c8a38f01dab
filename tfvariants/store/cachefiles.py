"""The tool's caches (``$XDG_CACHE_HOME/tfvariants``: census, ISA gate verdicts, peaks,
oneDNN probes, environments, big TOML catalogs' tables), read by the rule every input
follows.

A cache entry is an input like any other: the bounded reader (regular file only, never
a FIFO's hang or ``/dev/zero``'s memory), then JSON, then a check of every field's type
and range. An entry that fails is ignored with one named warning and measured again, so
a poisoned number never reaches a report. A cache folder that cannot be used (a file, a
link loop, ``/proc``, read-only) means going on without a cache, said once.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tfvariants.errors import one_line
from tfvariants.store.atomic import write_bytes_atomic
from tfvariants.store.inputs import InputError, read_input

ENTRY_BYTES = 4 << 20  # a census, verdict, peak or environment record is a few KB
Check = Callable[[dict[str, Any]], "str | None"]

_said: set[str] = set()
_said_lock = threading.Lock()


def warn_once(text: str) -> None:
    """One ``tfvariants: warning:`` line, the first time this text is said."""
    with _said_lock:
        if text in _said:
            return
        _said.add(text)
    print(f"tfvariants: warning: {one_line(text)}", file=sys.stderr)


def home() -> Path:
    """``$XDG_CACHE_HOME/tfvariants`` (a relative value is ignored, as the XDG spec says),
    else ``~/.cache/tfvariants``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tfvariants"


def unusable(folder: Path) -> str | None:
    """Why the tool cannot read and write in ``folder`` (made if missing), or None."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not stat.S_ISDIR(os.stat(folder).st_mode):
            return "not a folder"
        return None if os.access(folder, os.W_OK | os.X_OK) else "not writable"
    except (OSError, ValueError, RuntimeError) as exc:  # ValueError: a NUL byte
        return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def usable(folder: Path) -> Path | None:
    """``folder`` when the tool can use it; else None, said once (the caller then runs
    without this cache)."""
    why = unusable(folder)
    if why is None:
        return folder
    warn_once(f"cache folder {folder} cannot be used ({why}): going on without this cache")
    return None


def read_entry(path: Path | None, check: Check, limit: int = ENTRY_BYTES) -> dict[str, Any] | None:
    """The cache entry at ``path`` (at most ``limit`` bytes), or None when there is none
    or it fails ``check`` (a named warning: it is ignored and rebuilt)."""
    if path is None or not os.path.lexists(path):
        return None
    try:
        data = json.loads(read_input(path, limit).decode("utf-8"))
        why = check(data) if isinstance(data, dict) else "not a JSON object"
    except InputError as exc:
        why = exc.reason
    except UnicodeDecodeError:
        why = "not UTF-8 text"
    except RecursionError:
        why = "nested too deeply"
    except ValueError as exc:  # JSON errors, and an integer of over 4300 digits
        why = f"not JSON ({str(exc)[:80]})"
    if why is None:
        return data
    warn_once(f"cache entry {path}: ignored ({why}); found again")
    return None


def write_entry(path: Path | None, data: dict[str, Any]) -> None:
    """Store an entry; a cache that cannot take it (full, a folder in its place) is
    said once and the run goes on: a cache is never worth a failed command."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # compact, by the C encoder: a catalog's tables are 100k instances (an indent: 6x slower)
        write_bytes_atomic(path, json.dumps(data, allow_nan=False, default=str).encode())
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        warn_once(f"cache entry {path}: not stored ({why})")


# Field checks: each returns why a value is not acceptable, or None.


def number(value: object, low: float, high: float, *, whole: bool = False) -> bool:
    """A real number (not a bool), finite, within [low, high]; an int when ``whole``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if whole and not isinstance(value, int):
        return False
    return math.isfinite(value) and low <= value <= high


def optional_number(value: object, low: float, high: float) -> bool:
    return value is None or number(value, low, high)


def text(value: object, limit: int = 4000) -> bool:
    return value is None or (isinstance(value, str) and len(value) <= limit)


def bad_fields(record: dict[str, Any], rules: dict[str, Callable[[object], bool]]) -> str | None:
    """The first field of ``record`` that breaks its rule (a missing field is None)."""
    for field, ok in rules.items():
        if not ok(record.get(field)):
            return f"field {field!r} is {one_line(repr(record.get(field)))[:60]}"
    return None
