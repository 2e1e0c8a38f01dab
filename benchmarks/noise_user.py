"""`make bench-noise --user NAME`: each compare as an unprivileged user, and each loaded
scenario against the quiet run before it (benchmarks/noise.py).

Most people who run tfvariants are not root, and without root (or CAP_SYS_NICE, or an
RLIMIT_NICE grant) no worker is shielded: the bench as root says nothing about them.
With --user the hog stays this script's (its own session, as before), and only the
compare runs as NAME, through `setpriv` (util-linux), with NAME's HOME and no
capability unless --user-caps grants one as an ambient capability (e.g. sys_nice: what
systemd's AmbientCapabilities=CAP_SYS_NICE gives a service).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: str
    caps: tuple[str, ...] = ()  # ambient capabilities, e.g. ("sys_nice",)


def find_user(name: str, caps: Sequence[str] = ()) -> User | str:
    """The user to run compares as, or why not (one line for stderr)."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return f"--user {name}: no such user (create it: useradd -m {name})"
    if entry.pw_uid == 0:
        return f"--user {name}: that is root; name an unprivileged user"
    if os.geteuid() != 0:
        return "--user needs this script to run as root (it switches to the user)"
    if not shutil.which("setpriv"):
        return "--user needs setpriv (util-linux) on PATH"
    bad = [c for c in caps if not c.replace("_", "").isalnum()]
    if bad:
        return f"--user-caps {','.join(bad)}: a capability name such as sys_nice"
    return User(name, entry.pw_uid, entry.pw_gid, entry.pw_dir, tuple(caps))


def as_user(
    command: Sequence[str], user: User | None, env: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """``command`` and its environment, run as ``user`` (unchanged without one)."""
    if user is None:
        return list(command), dict(env)
    switch = ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups"]
    if user.caps:
        flags = ",".join(f"+{c}" for c in user.caps)
        switch += [f"--inh-caps={flags}", f"--ambient-caps={flags}"]
    moved = {**env, "HOME": user.home, "USER": user.name, "LOGNAME": user.name}
    return [*switch, "--", *command], moved


def give(paths: Sequence[Path], user: User | None) -> None:
    """The benchmark's folders (made by this script) to the user who writes into them."""
    if user is None:
        return
    for path in paths:
        os.chown(path, user.uid, user.gid)


def preflight(python: str, user: User, cwd: Path, env: Mapping[str, str]) -> str | None:
    """None when ``user`` can import tfvariants with ``python`` here, and that Python can
    start itself again as the runner starts each worker, else why not. The second check
    matters: setpriv starts ``python`` before the user's own lookups apply, so a venv
    whose interpreter lives in a folder the user cannot enter (a root-made venv over
    /root/.pyenv) passes the first and fails every worker with "Permission denied"."""
    probe = (
        "import subprocess, sys, tfvariants; "
        "subprocess.run([sys.executable, '-c', 'pass'], check=True)"
    )
    command, moved = as_user([python, "-c", probe], user, env)
    try:
        done = subprocess.run(
            command, env=moved, cwd=cwd, capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"--user {user.name}: cannot start {python}: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"--user {user.name} cannot run {python} with tfvariants here: {last}"
    return None


def against_quiet(loaded: dict[str, dict[str, Any]], quiet: dict[str, dict[str, Any]]) -> None:
    """Per workload of a loaded run: the quiet run's ratio (measured just before, in the
    same benchmark), whether the loaded interval covers it, and whether the loaded
    verdict is honest: not a plain "decided" whose interval excludes the quiet ratio
    (a verdict labelled "under load", analyze/training/loadlabel.py, is honest)."""
    for workload, c in loaded.items():
        q = quiet.get(workload)
        if q is None or c.get("interval") is None:
            continue
        lo, hi = c["interval"]
        covers = lo is not None and hi is not None and lo <= q["ratio"] <= hi
        labelled = bool(c.get("under_load") and c["under_load"][0])
        c["quiet_ratio"] = q["ratio"]
        c["covers_quiet"] = covers
        c["honest"] = covers or c["verdict"] != "different" or labelled
