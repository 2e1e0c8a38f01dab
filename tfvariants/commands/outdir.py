"""Output folders: checked before any work starts, so bad input writes nothing."""

from __future__ import annotations

import argparse
import errno
import os
from datetime import datetime
from pathlib import Path

from tfvariants.errors import UserError


def default_run_dir(prefix: str = "run") -> Path:
    return Path("results") / f"{prefix}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def check_name_lengths(path: Path) -> None:
    """One line when a component of ``path`` is longer than the file system allows
    (os.stat and mkdir would raise ENAMETOOLONG later, half-way through a run)."""
    limit = 255
    anchor = Path(os.path.abspath(path))
    while not os.path.isdir(anchor) and anchor.parent != anchor:
        anchor = anchor.parent
    try:
        limit = os.pathconf(anchor, "PC_NAME_MAX")
    except (OSError, ValueError):
        pass
    for part in Path(path).parts:
        if len(os.fsencode(part)) > limit:
            raise UserError(
                f"cannot write to {str(path)[:80]}...: the name {part[:40]}... is "
                f"{len(os.fsencode(part))} bytes, longer than this file system's {limit}"
            )
    path_max = 4096
    try:
        path_max = os.pathconf(anchor, "PC_PATH_MAX")
    except (OSError, ValueError):
        pass
    size = len(os.fsencode(os.path.abspath(path)))
    if size >= path_max:  # PATH_MAX counts the final NUL
        raise UserError(
            f"cannot write to {str(path)[:80]}...: the path is {size} bytes, longer than "
            f"this system's {path_max - 1}"
        )


def out_dir(text: str) -> Path:
    """A results folder option's value (argparse type): an empty or blank name would
    silently mean the current folder."""
    if not text.strip() or "\0" in text:
        raise argparse.ArgumentTypeError(f"expected a folder name, got {text!r}")
    return Path(text)


def check_no_loop(path: Path, option: str = "") -> None:
    """One line when ``path`` passes through a loop of symbolic links (pathlib's
    exists() says False there, and resolve() raises)."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            where = f"{option} {path}" if option else f"cannot write to {path}"
            raise UserError(f"{where}: a loop of symbolic links") from None


def check_writable(path: Path) -> None:
    """Fail with one line if ``path`` cannot be created or written, creating nothing."""
    check_name_lengths(path)
    check_no_loop(path)
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
