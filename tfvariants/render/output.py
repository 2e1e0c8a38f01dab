"""Writing an output file (report, CSV, imported catalog) so that nothing half-written
is ever left, and nothing that is not a regular file is ever replaced.

The rule, by what is at the path:

- nothing, or a regular file: a new temp file beside it, fsync, rename (atomic);
- a symbolic link to a regular file: that file is written, atomically, in place (the
  link stays a link); a link to nothing, or a loop of links, is refused;
- a device node or a FIFO (``/dev/null``, ``mkfifo`` pipes), or anything under
  ``/dev/`` or ``/proc/`` (``/dev/stdout``, ``/dev/fd/N``): written straight into,
  opened without creating, truncating or replacing anything (a FIFO with no reader is
  refused, not waited on);
- a folder, a socket: refused.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

from tfvariants.errors import UserError
from tfvariants.store.atomic import write_bytes_atomic

_SPECIAL_TREES = ("/dev/", "/proc/")


def _special_place(path: Path) -> bool:
    """``path``, or a link on the way to it, names something under /dev or /proc (an
    open descriptor like /dev/stdout resolves to wherever that descriptor points)."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links in a row
        if current.startswith(_SPECIAL_TREES):
            return True
        if not os.path.islink(current):
            return False
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
    return False


def write_through(path: Path, data: bytes) -> None:
    """Write ``data`` straight into an existing device or FIFO (never replacing it);
    O_APPEND, so a shell's ``>`` or ``>>`` redirection behind /dev/stdout is kept."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise UserError(f"cannot write {path}: a FIFO that no process reads") from None
        raise UserError(f"cannot write {path}: {exc.strerror}") from None
    try:
        fl = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, fl & ~os.O_NONBLOCK)  # a reader slower than us: wait
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def output_target(path: Path) -> tuple[Path, bool]:
    """Where an output for ``path`` goes and whether it is written straight in (see
    the module's rule); UserError, one line, for what is refused."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise UserError(f"{path} is a symbolic link to nothing: refusing to write") from None
        return path, False
    except OSError as exc:  # ELOOP, ENAMETOOLONG, EACCES
        raise UserError(f"cannot write {path}: {exc.strerror}") from None
    except ValueError as exc:  # a NUL byte
        raise UserError(f"cannot write {path}: {exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path} is a folder: give a file path, e.g. {path / 'index.html'}")
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode) or _special_place(path):
        return path, True
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path} is not a regular file, a device or a FIFO: refusing to write")
    if os.path.islink(path):
        return Path(os.path.realpath(path)), False
    return path, False


def write_text_atomic(path: Path, text: str) -> None:
    """``text`` as the output ``path`` by the module's rule: a regular file by a new temp
    file beside it (created exclusively: never through a link), fsync, then rename, so a
    reader sees the old file or the new one, and a failure (a read-only or full file
    system) leaves the old file and no temp file behind: one line."""
    target, straight = output_target(path)
    data = text.encode("utf-8", "replace")  # a folder name not in UTF-8 shows as "?"
    if straight:
        write_through(target, data)
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(target, data)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
