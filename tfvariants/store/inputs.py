"""Reading an input file (a variants file, a pricing catalog or CSV, run.json, a cell,
the lock): regular files only, at most a stated size, never a hang.

A device (``/dev/zero``), a FIFO or a folder given where a file is read would either
never end or block forever: the file is opened without blocking (``O_NONBLOCK``: a
FIFO opens at once instead of waiting for a writer), checked to be a regular file,
and read in chunks up to its limit, so a signal (SIGTERM, SIGHUP, Ctrl-C) is honoured
between chunks and memory stays bounded whatever the file grows to while it is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tfvariants.errors import UserError

CHUNK = 1 << 20
# Limits by kind of input (far above any real file, far below what hurts the host).
VARIANTS_FILE_BYTES = 8 << 20
CATALOG_BYTES = 64 << 20
CSV_BYTES = 256 << 20  # SkyPilot's vms.csv of every cloud is a few MB


class InputError(UserError):
    """An input file that cannot be read; ``reason`` says why without the path."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.reason = reason


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _anonymous_pipe(fd: int) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
    except OSError:
        return False


def read_input(path: str | os.PathLike[str], limit: int, *, pipe: bool = False) -> bytes:
    """The bytes of the regular file ``path`` (a link to one is followed), at most
    ``limit`` bytes; InputError (one line, exit 2) for anything else. ``pipe``: a shell's
    pipe (``/dev/stdin``) is read too, to its end, within the same limit (a named FIFO
    is not: it may have no writer yet)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise InputError(path, f"cannot read ({reason})") from None
    try:
        st = os.fstat(fd)
        if pipe and stat.S_ISFIFO(st.st_mode) and _anonymous_pipe(fd):
            os.set_blocking(fd, True)  # a writer still writing: wait for it, not EAGAIN
        elif not stat.S_ISREG(st.st_mode):
            raise InputError(path, f"cannot read: {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise InputError(path, f"larger than {_size(limit)}: not read")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # it grew while we read it
                raise InputError(path, f"larger than {_size(limit)}: not read")
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


def read_input_text(path: str | os.PathLike[str], limit: int, *, pipe: bool = False) -> str:
    """``read_input`` decoded as UTF-8; a byte order mark at the start is dropped
    (spreadsheets write one), anything not UTF-8 is one line."""
    raw = read_input(path, limit, pipe=pipe)
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text (a binary file?)") from None


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def is_regular(path: Path) -> bool:
    """``path`` is (a link to) a regular file; False on any error."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
