"""Raising a worker's CPU priority above other programs', where the system allows it.

Another program on a cell's CPUs takes time the cell then measures as its own. Waiting
for quiet (tfvariants.execute.quiet) and re-running disturbed cells deal with loads that
come and go; a load that stays (a background job, another terminal's build) can only be
shed by the scheduler. On Linux with autogroup scheduling (the default since 2.6.38
where the CPU controller of cgroups does not place processes), every session is one
scheduling group and competes as a whole, whatever its processes' nice values: a
`nice 19` job started from another terminal gets as much CPU as the worker. Each worker
leads its own session already (runner._execute), so its group can be given the weight
of nice -20: 88761 against 1024 for a nice-0 group, about 99 % of a contested CPU.
Measured on this project's 2-core machines: a busy loop shared its CPU 50/50 with a
nice-19 hog in another session, and got 98.8 % with its group at nice -20.

Lowering a nice value needs CAP_SYS_NICE (root, or granted, e.g. as an ambient
capability) or an RLIMIT_NICE that permits it (`USER - nice -10` in limits.conf lets
USER go down to nice -10; the kernel applies the same check to the autogroup's nice).
:func:`nice_grant` reads both and the worker asks for the lowest nice it may have, so a
partial grant is used down to its limit; without either the worker runs at normal
priority and the result says why, and how to get more (``advice``). It does nothing
for a container (its cgroup, set by the engine, competes instead), nor where the CPU
controller of cgroups places processes (cgroup v2 desktops: autogroup then does not
apply; there the weight of the cgroup the run was started in decides, and it is
recorded), nor against a hypervisor's steal: the cell's own measurement of others'
share stays the judge (tfvariants.store.cellresult).

Where the CPU controller of cgroup v2 decides and the cgroup the run was started in sits
in a parent delegated to this user (a systemd user session's ``app.slice``: the user's
own manager made it, so the user may create cgroups there and move processes between
them), a raised worker gets a cgroup of its own beside the run's, at a high
``cpu.weight`` (:func:`make_cell_group`): what ``systemd-run --user --scope -p
CPUWeight=...`` would do, without a user manager. It competes with its siblings (the
user's other terminals and apps) by weight, and is removed after the cell.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import resource
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

RAISED_NICE = -20  # the autogroup's and the process's nice when fully raised
# The highest nice that still shields: a group at nice -10 (weight 9548) against a nice-0
# session (1024) leaves the other about 1024 / 10572 = 9.7 % of a contested CPU, under
# the 10 % at which a cell counts as disturbed (store/disturbance.py DISTURBED_SHARE),
# so the shielded rule (judged by run-queue wait) stays as safe as the unshielded one.
# A grant above it (nice -5: 23 % for the other) still helps, but is not "shielded".
SHIELD_NICE = -10
CAP_SYS_NICE = 23  # its bit in /proc/PID/status CapEff
CGROUP_DEFAULT_WEIGHT = 100  # cgroup v2 cpu.weight of a sibling nobody raised
_EAGAIN_TRIES = 4  # the kernel sets an autogroup's nice at most every 100 ms (non-admin)

_PROC = Path("/proc")
_CGROUP = Path("/sys/fs/cgroup")
# cgroup v2's highest cpu.weight, for a cell's own cgroup: a sibling at the default 100
# keeps 1 % of a contested CPU.
CELL_WEIGHT = 10000
CELL_GROUP_PREFIX = "tfvariants-cell-"  # + the run's pid + a random tag


@dataclass(frozen=True)
class Priority:
    """What a worker ran at (``runner.priority`` in its result)."""

    requested: str  # options/interference.py PRIORITIES
    autogroup_nice: int | None  # the session group's nice, read back; None: unreadable
    nice: int | None  # the process's own nice, read back
    shielded: bool  # raised, and other sessions compete by group weight against it
    why: str | None = None  # when raised was asked for but not shielded: why not
    mechanism: str | None = None  # "cap_sys_nice", "rlimit_nice" or "cgroup_weight"
    value: int | None = None  # the nice granted, or the cgroup's cpu.weight
    advice: str | None = None  # one line: what the user can do to get more

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Grant:
    """The lowest nice this process may give a worker, what permits it, and (when it is
    not the full -20) the one line that says how to get more."""

    nice: int  # 0: nothing granted
    mechanism: str | None  # "cap_sys_nice", "rlimit_nice", None
    advice: str | None


def cap_eff(proc: Path = _PROC) -> int | None:
    """This process's effective capability set (/proc/self/status CapEff), or None."""
    try:
        for line in (proc / "self" / "status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def advice_line(user: str) -> str:
    """How a user gets the full shield (one line, for the report and the terminal)."""
    return (
        f"for a full shield allow nice -20: the line `{user} - nice -20` in "
        "/etc/security/limits.conf (then log in again), or CAP_SYS_NICE (systemd "
        "AmbientCapabilities=CAP_SYS_NICE, or `setpriv --inh-caps=+sys_nice "
        "--ambient-caps=+sys_nice`)"
    )


def nice_grant(
    *,
    getrlimit: Callable[[int], tuple[int, int]] = resource.getrlimit,
    caps: Callable[[], int | None] = cap_eff,
    user: Callable[[], str] = _user,
) -> Grant:
    """The lowest nice a worker may get: -20 with CAP_SYS_NICE, else what RLIMIT_NICE
    permits (a soft limit L allows nice 20 - L: L = 30 is nice -10), else 0."""
    eff = caps()
    if eff is not None and eff >> CAP_SYS_NICE & 1:
        return Grant(RAISED_NICE, "cap_sys_nice", None)
    soft, _ = getrlimit(resource.RLIMIT_NICE)
    lowest = RAISED_NICE if soft == resource.RLIM_INFINITY else max(RAISED_NICE, 20 - soft)
    advice = advice_line(user())
    if lowest >= 0:
        return Grant(0, None, advice)
    return Grant(lowest, "rlimit_nice", None if lowest == RAISED_NICE else advice)


def raise_in_child(nice: int = RAISED_NICE) -> None:
    """In the worker, before exec and after it leads a new session: ask for ``nice``
    (:func:`nice_grant`) for its autogroup and itself. Best effort (no exception may
    leave a preexec function); :func:`read_back` says afterwards what took effect."""
    for _ in range(_EAGAIN_TRIES):
        try:
            (_PROC / "self" / "autogroup").write_text(f"{nice}\n")
            break
        except BlockingIOError:  # another group's nice was set under 100 ms ago
            time.sleep(0.11)
        except OSError:
            break
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except OSError:
        pass


def autogroup_applies(proc: Path = _PROC, cgroup_root: Path = Path("/sys/fs/cgroup")) -> str | None:
    """None when autogroup weights decide between sessions for a process of ours, else
    why not. Autogroup is used only for tasks in the root CPU task group."""
    try:
        enabled = (proc / "sys" / "kernel" / "sched_autogroup_enabled").read_text().strip()
    except OSError:
        return "this kernel has no autogroup scheduling"
    if enabled != "1":
        return "autogroup scheduling is off (kernel.sched_autogroup_enabled = 0)"
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return None  # no cgroups: every task is in the root task group
    v2_path = None
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if "cpu" in controllers.split(","):  # cgroup v1 CPU controller
            return None if path == "/" else f"the CPU cgroup {path} decides, not autogroup"
        if controllers == "":
            v2_path = path
    if v2_path in (None, "/"):
        return None
    try:
        enabled_v2 = (cgroup_root / "cgroup.subtree_control").read_text().split()
    except OSError:
        return None
    if "cpu" in enabled_v2:
        return f"the CPU cgroup {v2_path} decides, not autogroup"
    return None


# The kernel's weight of nice -20 .. 0 (sched_prio_to_weight): what a session group gets
# against a nice-0 one is weight / (weight + 1024).
_WEIGHTS = tuple(
    int(w)
    for w in "88761 71755 56483 46273 36291 29154 23254 18705 14949 11916 "
    "9548 7620 6100 4904 3906 3121 2501 1991 1586 1277 1024".split()
)


def others_share_at(nice: int) -> float:
    """The share of a contested CPU a nice-0 session keeps against a group at ``nice``."""
    weight = _WEIGHTS[min(max(nice, RAISED_NICE), 0) - RAISED_NICE]
    return 1024 / (weight + 1024)


@functools.cache
def granted() -> Grant:
    """:func:`nice_grant` for this process, read once (before any worker is forked)."""
    return nice_grant()


def cgroup_weight(pid: int) -> int | None:
    """The cgroup v2 cpu.weight of the cgroup ``pid`` runs in, or None (cgroup v1, no CPU
    controller there, unreadable)."""
    proc, cgroup_root = _PROC, _CGROUP
    try:
        lines = (proc / str(pid) / "cgroup").read_text().splitlines()
        path = next(line.split(":", 2)[2] for line in lines if line.startswith("0::"))
        return int((cgroup_root / path.lstrip("/") / "cpu.weight").read_text())
    except (OSError, ValueError, IndexError, StopIteration):
        return None


@dataclass(frozen=True)
class CellGroup:
    """A cell's own cgroup v2 (made by :func:`make_cell_group`) at ``weight``; ``others``
    is the heaviest cpu.weight among its siblings when it was made."""

    path: Path
    relative: str  # as /proc/PID/cgroup names it: "/user.slice/.../tfvariants-cell-..."
    weight: int
    others: int

    def join(self) -> None:
        """In the worker, before exec: move itself (and so all it starts) into the group.
        Best effort (no exception may leave a preexec function); read_back checks."""
        try:
            (self.path / "cgroup.procs").write_text("0\n")
        except OSError:
            pass

    def holds(self, pid: int, proc: Path | None = None) -> bool:
        """Whether ``pid`` runs in this group."""
        try:
            lines = ((proc or _PROC) / str(pid) / "cgroup").read_text().splitlines()
        except OSError:
            return False
        return f"0::{self.relative}" in lines

    def remove(self) -> str | None:
        """After the cell, once nothing of it runs: remove the group; why not, if not."""
        try:
            self.path.rmdir()
        except OSError as exc:
            return f"cannot remove the cell's cgroup {self.path}: {exc.strerror}"
        return None


def own_cgroup(proc: Path | None = None) -> str | None:
    """This process's cgroup v2 path ("/user.slice/..."), or None: no cgroups, or the
    CPU controller of cgroup v1 places it."""
    try:
        lines = ((proc or _PROC) / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return None
    found = None
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if "cpu" in controllers.split(","):
            return None
        if line.startswith("0::"):
            found = path
    return found


def _weight(path: Path) -> int | None:
    try:
        return int((path / "cpu.weight").read_text())
    except (OSError, ValueError):
        return None


def make_cell_group(proc: Path | None = None, root: Path | None = None) -> CellGroup | None:
    """A cgroup for one raised worker, beside the one the run was started in, at
    CELL_WEIGHT; None where that cannot be done: no cgroup v2 CPU controller in the
    parent (then its weight would decide nothing), or a parent not delegated to this
    user (it may not create cgroups there, or move processes into them)."""
    proc, root = proc or _PROC, root or _CGROUP
    path = own_cgroup(proc)
    if not path or path == "/":
        return None
    parent = (root / path.strip("/")).parent
    try:
        if "cpu" not in (parent / "cgroup.subtree_control").read_text().split():
            return None
    except OSError:
        return None
    # Moving a process needs write access to the common ancestor's cgroup.procs.
    if not (os.access(parent, os.W_OK | os.X_OK) and os.access(parent / "cgroup.procs", os.W_OK)):
        return None
    _remove_stale(parent, proc)
    group = parent / f"{CELL_GROUP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        group.mkdir()
        (group / "cpu.weight").write_text(f"{CELL_WEIGHT}\n")
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        return None
    siblings = [_weight(p) for p in parent.iterdir() if p.is_dir() and p != group]
    others = max([w for w in siblings if w is not None], default=CGROUP_DEFAULT_WEIGHT)
    relative = "/" + str(group.relative_to(root))
    return CellGroup(group, relative, CELL_WEIGHT, others)


def _remove_stale(parent: Path, proc: Path) -> None:
    """Empty cell groups a killed run left (its pid is gone): removed, best effort."""
    for old in parent.glob(f"{CELL_GROUP_PREFIX}*"):
        pid = old.name[len(CELL_GROUP_PREFIX) :].split("-")[0]
        if pid.isdigit() and not (proc / pid).exists():
            with contextlib.suppress(OSError):
                old.rmdir()


def _cell_group_priority(cell_group: CellGroup, group: int | None, nice: int | None) -> Priority:
    """A worker in its own cgroup at a raised weight: shielded when the heaviest sibling
    keeps at most the share a nice -10 group leaves (the cell's others' share judges the
    rest: a sibling's own children, a parent's other loads)."""
    share = cell_group.others / (cell_group.others + cell_group.weight)
    shielded = share <= others_share_at(SHIELD_NICE)
    why = (
        None
        if shielded
        else f"a sibling cgroup at cpu.weight {cell_group.others} keeps {share:.0%}"
    )
    return Priority("raised", group, nice, shielded, why, "cgroup_weight", cell_group.weight)


def _cgroup_priority(pid: int, group: int | None, nice: int | None, why: str) -> Priority:
    """Where the CPU controller of cgroups decides: the weight of the worker's cgroup
    (inherited from the run's) is what counts, recorded; not taken as shielded, as the
    weights of its siblings are unknown here (the cell's others' share judges it)."""
    weight = cgroup_weight(pid)
    advice = (
        "to give the workers more of a contested CPU, start the run in a scope with a higher "
        "CPU weight, e.g. `systemd-run --user --scope -p CPUWeight=1000 tfvariants compare ...`"
    )
    if weight is None:  # cgroup v1, or v2 without the CPU controller's files
        return Priority("raised", group, nice, False, why)
    enough = weight >= 10 * CGROUP_DEFAULT_WEIGHT
    return Priority(
        "raised", group, nice, False, why, "cgroup_weight", weight, None if enough else advice
    )


def read_back(
    pid: int,
    requested: str,
    applies: str | None,
    grant: Grant | None = None,
    cell_group: CellGroup | None = None,
) -> Priority:
    """What the worker ``pid`` actually runs at, after :func:`raise_in_child` (and
    ``cell_group.join``). ``applies``: :func:`autogroup_applies`, read once per run;
    ``grant``: what was asked for (:func:`granted` by default)."""
    group: int | None = None
    try:
        text = (_PROC / str(pid) / "autogroup").read_text()  # "/autogroup-123 nice -20"
        group = int(text.rsplit("nice", 1)[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        nice: int | None = os.getpriority(os.PRIO_PROCESS, pid)
    except OSError:
        nice = None
    if requested != "raised":
        return Priority(requested, group, nice, False)
    grant = grant if grant is not None else granted()
    if applies is not None:
        if cell_group is not None and cell_group.holds(pid):
            return _cell_group_priority(cell_group, group, nice)
        return _cgroup_priority(pid, group, nice, applies)
    if group is None:
        return Priority(requested, None, nice, False, "the worker's autogroup could not be read")
    if group >= 0:
        why = "not permitted (raising priority needs CAP_SYS_NICE or an RLIMIT_NICE grant)"
        return Priority(requested, group, nice, False, why, advice=grant.advice)
    mechanism = grant.mechanism or "granted"
    advice = grant.advice if group > RAISED_NICE else None
    if group > SHIELD_NICE:
        why = (
            f"only nice {group} permitted ({mechanism}): other sessions keep "
            f"{others_share_at(group):.0%} of a contested CPU"
        )
        return Priority(requested, group, nice, False, why, mechanism, group, advice)
    return Priority(requested, group, nice, True, None, mechanism, group, advice)


def container(requested: str) -> Priority:
    """A container's worker: the engine's cgroup competes for it, not our session."""
    why = "a container's cgroup, set by the engine, decides" if requested == "raised" else None
    return Priority(requested, None, None, False, why)
