"""One worker process's life on the host: its output kept in a capped log, and nothing
it started left running after it.

A cell owns every process it starts. The worker leads its own session (a timeout or
Ctrl-C stops the whole group), but a workload can start children that outlive it: a
plain child stays in the group and is re-parented when the worker exits, a ``setsid``
daemon or a double-forked child leaves the group altogether. After the worker ends,
``Ownership.sweep`` finds them all, three ways, and kills them:

- the worker's process group (whatever stayed in it);
- the host's new descendants: the host is a child subreaper (``PR_SET_CHILD_SUBREAPER``),
  so an orphan below it is re-parented to the host, not to init, however it detached;
- processes carrying the cell's token in their environment (``TFV_CELL_TOKEN``, set in
  the worker's env and inherited): the fallback where the subreaper is not available.

Cells in flight in one host process at once (``compare --duet`` runs two) register
their token and process group (``_LIVE``): one cell's sweep leaves the other's group and
token-carrying processes alone, and a worker's start and a sweep never overlap
(``SPAWN_LOCK``: a child between fork and exec has neither its own group nor the token
yet). Any other process the host started during the cell would count as the cell's.

The log: the worker writes into a pipe, and a reader thread keeps the first
``LOG_HEAD_BYTES`` and the last ``LOG_TAIL_BYTES`` of it, with a line saying how much
was cut between them, so a workload printing gigabytes neither fills the disk nor the
host's memory. The host never reads the log back: the failure tail comes from memory.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import IO, Any

import psutil

from tfvariants.execute.priority import Priority

LOG_HEAD_BYTES = 1 << 20  # the first MiB of a worker's output is kept ...
LOG_TAIL_BYTES = 1 << 20  # ... and the last MiB; what lies between is cut
_LAST_BYTES = 64 << 10  # what the failure tail (result stderr_tail) is taken from
_READ_CHUNK = 1 << 16
CELL_TOKEN_ENV = "TFV_CELL_TOKEN"
_PR_SET_CHILD_SUBREAPER = 36
_SWEEPS = 5  # rounds of find-and-kill (a leftover may fork while it is being killed)
_REAP_S = 2.0  # how long a SIGKILLed leftover gets to disappear
ENGINE_GRACE_S = 10.0  # how long a container engine's helpers get to end after its client
# The cells in flight in this process: token -> their worker's process group (None until
# it started). Guarded by SPAWN_LOCK, which a worker's start and a sweep both hold.
_LIVE: dict[str, int | None] = {}
SPAWN_LOCK = threading.RLock()
# Set by a Ctrl-C that reached the main thread while cells ran on others (a duet): no
# worker starts any more, and one that ends is treated as interrupted, not judged.
_INTERRUPTED = threading.Event()


def interrupt_live() -> list[int]:
    """Mark the cells in flight interrupted; their workers' process groups (to stop)."""
    with SPAWN_LOCK:
        _INTERRUPTED.set()
        return [g for g in _LIVE.values() if g is not None]


def interrupted() -> bool:
    return _INTERRUPTED.is_set()


def clear_interrupt() -> None:
    """Before cells start again (a new pair; tests)."""
    _INTERRUPTED.clear()


@dataclass(frozen=True)
class Leftover:
    """A process (or container) a cell left running, killed after the cell."""

    pid: int  # 0 for a container
    name: str
    how: str  # "process group", "escaped" (left the group), "container"
    cmdline: str = ""
    cpu_s: float | None = None  # CPU time it had used (user + system): what it took

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def label(self) -> str:
        return (
            f"{self.name} (pid {self.pid}, {self.how})" if self.pid else f"{self.name} ({self.how})"
        )


@dataclass(frozen=True)
class ProcessOutcome:
    """What happened to one worker process, beside the result it wrote (or not)."""

    command: list[str]
    exit_code: int | None
    wall_s: float
    timed_out: bool = False
    start_error: str | None = None  # the worker could not be started (then exit_code None)
    priority: Priority | None = None
    killed: tuple[Leftover, ...] = ()
    log_cut_bytes: int = 0  # output cut from the middle of the log
    log_error: str | None = None  # the log could not be written: the worker was stopped
    tail: str = ""  # the end of the output (decoded), for a failure's stderr_tail

    def runner_fields(self) -> dict[str, Any]:
        """The process's part of a result's ``runner`` record."""
        fields: dict[str, Any] = {
            "command": self.command,
            "exit_code": self.exit_code,
            "wall_s": self.wall_s,
            "killed": [k.to_json() for k in self.killed],
        }
        if self.log_cut_bytes:
            fields["log_cut_bytes"] = self.log_cut_bytes
        if self.priority is not None:
            fields["priority"] = self.priority.to_json()
        return fields

    def warning(self, cid: str) -> str | None:
        """One line naming what had to be killed after the cell, or None."""
        if not self.killed:
            return None
        names = ", ".join(k.label() for k in self.killed[:5])
        more = f" and {len(self.killed) - 5} more" if len(self.killed) > 5 else ""
        left = f"cell {cid} left {len(self.killed)} process(es) running after its worker"
        return f"{left}, killed: {names}{more}"


# ---- the capped log ----


@dataclass
class CappedLog:
    """Copies a worker's output into ``sink``, keeping its head and its tail."""

    sink: IO[bytes]
    head_bytes: int = LOG_HEAD_BYTES
    tail_bytes: int = LOG_TAIL_BYTES
    written: int = 0  # bytes of the head written to the sink
    total: int = 0
    _tail: bytearray = field(default_factory=bytearray)
    _last: bytearray = field(default_factory=bytearray)
    closed: bool = False  # finished: a reader still running (a writer not killed) stops
    # A write to the sink failed (a full disk): said here, the reader keeps draining the
    # pipe (a worker blocked on it would hang to its timeout) and ``on_error`` runs once.
    error: str | None = None
    on_error: Callable[[], None] | None = None

    def _write(self, data: bytes) -> bool:
        if self.error is not None:
            return False
        try:
            self.sink.write(data)
            return True
        except (OSError, ValueError) as exc:  # ValueError: the sink was closed
            self.error = f"cannot write the cell's log: {getattr(exc, 'strerror', None) or exc}"
            if self.on_error is not None:
                self.on_error()
            return False

    def feed(self, chunk: bytes) -> None:
        if self.closed:
            return
        self.total += len(chunk)
        self._last += chunk
        if len(self._last) > 2 * _LAST_BYTES:  # trimmed in bulk: amortised O(1)
            del self._last[: len(self._last) - _LAST_BYTES]
        room = self.head_bytes - self.written
        if room > 0:
            if self._write(chunk[:room]):
                self.written += min(room, len(chunk))
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            if len(self._tail) > 2 * self.tail_bytes:
                del self._tail[: len(self._tail) - self.tail_bytes]

    def pump(self, fd: int) -> None:
        """Read ``fd`` to its end (a thread's body: blocks in read, never polls)."""
        while True:
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except OSError:
                return
            if not chunk:
                return
            self.feed(chunk)

    @property
    def cut(self) -> int:
        return max(0, self.total - self.written - self.tail_bytes)

    def finish(self) -> None:
        """Write the kept tail after the head, with a line saying what was cut."""
        self.closed = True
        tail = bytes(self._tail[-self.tail_bytes :]) if self.tail_bytes else b""
        if self.cut:
            self._write(
                f"\n[tfvariants: {self.cut} bytes of output cut here; the log keeps the first "
                f"{self.written} and the last {len(tail)} bytes]\n".encode()
            )
        self._write(tail)
        if self.error is None:
            try:
                self.sink.flush()
            except OSError as exc:
                self.error = f"cannot write the cell's log: {exc.strerror or exc}"

    def last_text(self) -> str:
        return bytes(self._last[-_LAST_BYTES:]).decode("utf-8", errors="replace")


def start_pump(log: CappedLog, fd: int) -> threading.Thread:
    thread = threading.Thread(target=log.pump, args=(fd,), name="worker-log", daemon=True)
    thread.start()
    return thread


# ---- ownership: nothing a cell started outlives it ----


@functools.cache
def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux >= 3.4), once."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False  # not Linux: the token and the process group still find most


class Ownership:
    """The processes one cell owns. Make it just before the worker starts; ``env()``
    goes into the worker's environment, ``sweep(pgid)`` after the worker has ended."""

    def __init__(self) -> None:
        self.subreaper = become_subreaper()
        self.token = uuid.uuid4().hex
        self._me = psutil.Process()
        self._before = {p.pid for p in self._children()}
        with SPAWN_LOCK:
            _LIVE[self.token] = None

    def env(self) -> dict[str, str]:
        return {CELL_TOKEN_ENV: self.token}

    def spawned(self, pgid: int) -> None:
        """The worker started, leading group ``pgid`` (call with SPAWN_LOCK held)."""
        _LIVE[self.token] = pgid

    def close(self) -> None:
        """The cell is over: its group and token are no longer another cell's to spare."""
        with SPAWN_LOCK:
            _LIVE.pop(self.token, None)

    def _others(self) -> tuple[set[int], set[str]]:
        """The groups and tokens of the other cells in flight in this process."""
        others = {t: g for t, g in _LIVE.items() if t != self.token}
        return {g for g in others.values() if g is not None}, set(others)

    def _another_cells(self, proc: psutil.Process, groups: set[int], tokens: set[str]) -> bool:
        if not (groups or tokens):
            return False
        try:
            if os.getpgid(proc.pid) in groups:
                return True
            return proc.environ().get(CELL_TOKEN_ENV) in tokens
        except (psutil.Error, OSError):
            return False

    def _children(self) -> list[psutil.Process]:
        try:
            return list(self._me.children(recursive=True))
        except psutil.Error:
            return []

    def _new_children(self) -> list[psutil.Process]:
        return [proc for proc in self._children() if proc.pid not in self._before]

    def _find(self, pgid: int | None, escaped: bool) -> dict[int, tuple[psutil.Process, str]]:
        found: dict[int, tuple[psutil.Process, str]] = {}
        groups, tokens = self._others()
        for proc in self._new_children() if escaped else []:
            if not self._another_cells(proc, groups, tokens):
                found[proc.pid] = (proc, "escaped")
        for proc in psutil.process_iter():
            if proc.pid in (os.getpid(), 0, 1):
                continue
            try:
                in_group = pgid is not None and os.getpgid(proc.pid) == pgid
                if in_group:
                    found[proc.pid] = (proc, "process group")
                elif escaped and proc.pid not in found and self._carries_token(proc):
                    found[proc.pid] = (proc, "escaped")
            except (psutil.Error, OSError):
                continue  # gone, or not ours to read
        return found

    def _carries_token(self, proc: psutil.Process) -> bool:
        return bool(proc.environ().get(CELL_TOKEN_ENV) == self.token)

    def sweep(self, pgid: int | None, engine: bool = False) -> tuple[Leftover, ...]:
        """Kill (SIGKILL) everything the cell left running; what had to be killed.
        Orphans that already exited are only reaped (they are not reported).

        ``engine``: the worker was a container engine's client. The workload ran inside
        the container (removed by name); what the client left on the host is the
        engine's own (podman's conmon and cleanup, a rootless pause process): given
        ``ENGINE_GRACE_S`` to end, reaped, never killed; only the client's group is."""
        try:
            with SPAWN_LOCK:
                return self._sweep(pgid, engine)
        finally:
            self.close()

    def _sweep(self, pgid: int | None, engine: bool) -> tuple[Leftover, ...]:
        if engine:
            _reap(self._new_children(), ENGINE_GRACE_S)
        killed: dict[int, Leftover] = {}
        zombies: set[int] = set()
        for _ in range(_SWEEPS):
            live = []
            for pid, (proc, how) in self._find(pgid, escaped=not engine).items():
                try:
                    if proc.status() == psutil.STATUS_ZOMBIE:
                        if pid not in zombies:  # ended on its own: reaped below, once
                            zombies.add(pid)
                            live.append(proc)
                        continue
                    info = _leftover(proc, how)
                    proc.send_signal(signal.SIGKILL)
                except psutil.Error:
                    continue
                killed.setdefault(pid, info)
                live.append(proc)
            if not live:
                break
            _reap(live)
        return tuple(killed.values())


def _leftover(proc: psutil.Process, how: str) -> Leftover:
    """What a leftover is, read just before it is killed."""
    with proc.oneshot():
        times = proc.cpu_times()
        cpu_s = round(times.user + times.system, 3)
        return Leftover(proc.pid, proc.name(), how, " ".join(proc.cmdline())[:200], cpu_s)


def _reap(procs: Iterable[psutil.Process], timeout_s: float = _REAP_S) -> None:
    """Wait for processes to end (this reaps our children, the subreaper's orphans
    included, so none stays a zombie)."""
    procs = list(procs)
    if not procs:
        return
    try:
        psutil.wait_procs(procs, timeout=timeout_s)
    except psutil.Error:
        pass
