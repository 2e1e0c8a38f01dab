"""Atomic file writes: a reader sees the old file or the whole new one, and no write
follows a symbolic link. The run folder (store/runfolder.py) and the report's outputs
(render/output.py) write through it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot: the rename itself is still atomic
    finally:
        os.close(fd)


def write_bytes_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """``data`` as ``path``: temp file in the same folder (created exclusively, so never
    through a link), fsync, rename over the directory entry (a link there is replaced,
    not followed). An OSError leaves no temp file and the old file untouched."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
