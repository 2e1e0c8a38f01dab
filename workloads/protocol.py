"""The result-file contract shared by worker and host (stdlib only, no TensorFlow).

The host imports this module too, so the schema version lives in exactly one place.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
RESULT_KIND = "tfvariants.cell"
STATUSES = ("ok", "failed", "timeout", "skipped")


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """Write JSON so that a reader sees either the old file or the whole new one:
    temp file in the same folder, fsync, rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2, sort_keys=False, allow_nan=False, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
