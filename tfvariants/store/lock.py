"""One writer per run folder: an advisory ``fcntl.flock`` on ``<run>/.lock``, held from
the moment a command first prepares the folder until the command ends, with the
holder (pid, host, command, since) written into the lock file itself.

- A second ``compare``/``serve``/``run``/``--resume`` on a held folder is refused in one
  line naming the holder.
- The kernel drops a flock when its process dies, so a lock file left by a killed run
  is not held: it is taken over, with a warning naming the dead holder.
- The lock is re-entrant within one process (a command takes it once, however many
  steps write), and ``release_all`` (the CLI's ``finally``) frees it; the file is
  removed on release, so a finished run leaves no ``.lock`` behind.
- ``holder_of`` tells a reader (``report``) that another process is writing a folder,
  without taking the lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tfvariants.errors import UserError

LOCK_FILE = ".lock"

# Folders this process holds: resolved root -> open lock descriptor.
_HELD: dict[Path, int] = {}
# Of those, the ones this command created: removed on release if still empty, so a
# command refused after taking the lock leaves nothing behind.
_CREATED: set[Path] = set()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


PID_MAX = 1 << 22  # Linux's largest pid_max: a larger "pid" is not one


def _read_holder(fd: int) -> dict[str, Any]:
    """The holder record, validated: anyone can write the file, so a deep, huge or
    mistyped record is taken as no record at all (never a traceback)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 4096)
        data = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    pid = data.get("pid")
    if not (isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < PID_MAX):
        return {}
    text = {k: data[k][:100] for k in ("host", "command", "since") if isinstance(data.get(k), str)}
    return {"pid": pid, **text}


def describe(holder: dict[str, Any]) -> str:
    """``pid 123 on host h (compare, since 2026-...)`` from a lock file's record."""
    pid, host = holder.get("pid", "?"), holder.get("host", "?")
    what = ", ".join(str(holder[k]) for k in ("command", "since") if holder.get(k))
    return f"pid {pid} on host {host}" + (f" ({what})" if what else "")


def _why_free(old: dict[str, Any]) -> str:
    """Why a lock file naming a holder could be taken: the kernel dropped its flock."""
    if old.get("host") != socket.gethostname():
        return "left it (it ran on another host, or the folder was copied)"
    if not _pid_alive(int(old["pid"])):
        return "is no longer running"
    return (
        "no longer holds it (that pid is alive, but now names another process, or "
        "the holder released the lock without removing the file)"
    )


def _open_lock(path: Path) -> int:
    # O_NOFOLLOW: a planted symlink never turns the lock into a write elsewhere.
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UserError(f"{path}: not a regular file; remove it")
    return fd


def _flock_briefly(fd: int, tries: int = 5) -> bool:
    """An exclusive flock, retried for half a second: a reader's holder_of takes a
    shared lock for an instant, which must not turn a run away."""
    for attempt in range(tries):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt < tries - 1:
                time.sleep(0.1)
    return False


def acquire(root: Path, command: str = "", *, created: bool = False) -> list[str]:
    """Take ``root``'s lock for this process (a no-op if it already holds it); returns
    warnings (a stale lock taken over). UserError, one line, if another process holds it."""
    key = Path(root).resolve()
    if key in _HELD:
        return []
    path = key / LOCK_FILE
    while True:
        try:
            fd = _open_lock(path)
        except OSError as exc:
            raise UserError(f"cannot lock {root}: {exc.strerror} ({path})") from None
        if not _flock_briefly(fd):
            holder = _read_holder(fd)
            os.close(fd)
            raise UserError(
                f"{root} is in use by {describe(holder)}: one run at a time per results "
                "folder; wait for it to finish or stop it (nothing was run or written)"
            ) from None
        # The holder before us may have removed the file between our open and our flock:
        # then we locked a file nobody else will see, so start again.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    warnings = []
    old = _read_holder(fd)
    if old.get("pid"):
        warnings.append(
            f"{root}: took over the lock of {describe(old)}, which {_why_free(old)} "
            "(an interrupted run; compare --resume continues it)"
        )
    record = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": command or " ".join([Path(sys.argv[0]).name, *sys.argv[1:3]]),
        "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode() + b"\n", 0)
        os.fsync(fd)
    except OSError as exc:  # a full disk: hold nothing, leave no lock file behind
        _give_up(key, fd, created)
        raise UserError(f"cannot lock {root}: cannot write {path} ({exc.strerror})") from None
    _HELD[key] = fd
    if created:
        _CREATED.add(key)
    return warnings


def _give_up(key: Path, fd: int, created: bool) -> None:
    try:
        (key / LOCK_FILE).unlink(missing_ok=True)  # we hold the flock: no one else uses it
        if created:
            key.rmdir()
    except OSError:
        pass
    os.close(fd)


def holds(root: Path) -> bool:
    return Path(root).resolve() in _HELD


def release(root: Path) -> None:
    key = Path(root).resolve()
    fd = _HELD.pop(key, None)
    if fd is None:
        return
    try:  # remove first, then unlock: a waiter re-checks the file it locked (see acquire)
        (key / LOCK_FILE).unlink(missing_ok=True)
    except OSError:
        pass  # a read-only folder now: the kernel still drops the lock below
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    if key in _CREATED:
        _CREATED.discard(key)
        try:
            key.rmdir()
        except OSError:
            pass  # not empty: the run wrote into it


def release_all() -> None:
    for root in list(_HELD):
        release(root)


def holder_of(root: Path) -> dict[str, Any] | None:
    """Who holds ``root``'s lock, if another process does (read without taking it)."""
    key = Path(root).resolve()
    path = key / LOCK_FILE
    if key in _HELD or not path.is_file() or path.is_symlink():
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd) or {"pid": "?"}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
