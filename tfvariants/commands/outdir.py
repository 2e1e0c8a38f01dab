"""Output folders: checked before any work starts, so bad input writes nothing."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from tfvariants.errors import UserError


def default_run_dir(prefix: str = "run") -> Path:
    return Path("results") / f"{prefix}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def check_writable(path: Path) -> None:
    """Fail with one line if ``path`` cannot be created or written, creating nothing."""
    probe = path
    while not probe.exists():
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    if probe.exists() and not probe.is_dir():
        raise UserError(f"cannot write to {path}: {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"cannot write to {path}: {probe} is not writable")
