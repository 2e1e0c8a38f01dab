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

It needs CAP_SYS_NICE (root, or granted); without it the worker runs at normal priority
and the result says why. It does nothing for a container (its cgroup, set by the engine,
competes instead), nor where the CPU controller of cgroups places processes (cgroup v2
desktops: autogroup then does not apply), nor against a hypervisor's steal: the cell's
own measurement of others' share stays the judge (tfvariants.store.cellresult).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PRIORITIES = ("raised", "normal")
DEFAULT = "raised"
RAISED_NICE = -20  # the autogroup's and the process's nice when raised

_PROC = Path("/proc")


@dataclass(frozen=True)
class Priority:
    """What a worker ran at (``runner.priority`` in its result)."""

    requested: str  # PRIORITIES
    autogroup_nice: int | None  # the session group's nice, read back; None: unreadable
    nice: int | None  # the process's own nice, read back
    shielded: bool  # raised, and other sessions compete by group weight against it
    why: str | None = None  # when raised was asked for but not shielded: why not

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def raise_in_child() -> None:
    """In the worker, before exec and after it leads a new session: ask for nice -20 for
    its autogroup and itself. Best effort (no exception may leave a preexec function);
    :func:`read_back` says afterwards what took effect."""
    try:
        (_PROC / "self" / "autogroup").write_text(f"{RAISED_NICE}\n")
    except OSError:
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, 0, RAISED_NICE)
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


def read_back(pid: int, requested: str, applies: str | None) -> Priority:
    """What the worker ``pid`` actually runs at, after :func:`raise_in_child`.
    ``applies``: :func:`autogroup_applies`, read once per run."""
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
    why = None
    if group != RAISED_NICE:
        why = (
            "not permitted (raising priority needs root or CAP_SYS_NICE)"
            if group is not None
            else "the worker's autogroup could not be read"
        )
    elif applies is not None:
        why = applies
    return Priority(requested, group, nice, why is None, why)


def container(requested: str) -> Priority:
    """A container's worker: the engine's cgroup competes for it, not our session."""
    why = "a container's cgroup, set by the engine, decides" if requested == "raised" else None
    return Priority(requested, None, None, False, why)
