"""Raised worker priority (tfvariants.execute.priority): what the kernel grants, read back
from a real worker process, and the quiet gate that stops waiting behind it."""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping
from pathlib import Path

import pytest
from test_runner import TOPO, stub_variant

from tfvariants.analyze.statistics import interference
from tfvariants.execute import priority
from tfvariants.execute.quiet import QuietGate, QuietWait
from tfvariants.execute.runner import Conditions, RunOptions, run_cell
from tfvariants.plan.cell import Cell
from tfvariants.store.runfolder import RunFolder

AUTOGROUP = Path("/proc/self/autogroup").exists()
# The stub worker reports what it runs at, from inside.
REPORT = (
    'write_ok({"seen": {"autogroup": open("/proc/self/autogroup").read(), '
    '"nice": os.getpriority(os.PRIO_PROCESS, 0)}})\n'
)


def fake_proc(tmp_path: Path, enabled: str | None, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(cgroup)
    if enabled is not None:
        (proc / "sys" / "kernel").mkdir(parents=True)
        (proc / "sys" / "kernel" / "sched_autogroup_enabled").write_text(enabled + "\n")
    return proc


@pytest.mark.parametrize(
    ("enabled", "cgroup", "subtree", "applies"),
    [
        ("1", "4:memory:/x\n1:cpu,cpuacct:/\n0::/\n", "", True),  # v1, root CPU group
        ("1", "1:cpu,cpuacct:/libpod_parent/libpod-1\n", "", False),  # a container's
        ("0", "1:cpu:/\n", "", False),  # switched off
        (None, "1:cpu:/\n", "", False),  # a kernel without it
        ("1", "0::/user.slice/app.scope\n", "cpu memory", False),  # v2 desktop
        ("1", "0::/user.slice/app.scope\n", "memory pids", True),  # v2, no CPU controller
        ("1", "0::/\n", "cpu", True),  # v2, in the root
    ],
)
def test_autogroup_applies_only_in_the_root_cpu_group(tmp_path, enabled, cgroup, subtree, applies):
    proc = fake_proc(tmp_path, enabled, cgroup)
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.subtree_control").write_text(subtree + "\n")
    why = priority.autogroup_applies(proc, root)
    assert (why is None) is applies
    if not applies:
        assert why  # says why


def run_stub(tmp_path: Path, wanted: str, gate=None) -> Mapping:
    variant = stub_variant(tmp_path, REPORT)
    cell = Cell(variant="stub", threads=1, workload="mnist_mlp", repeat=0)
    return run_cell(
        cell,
        variant,
        RunOptions(timeout_s=30),
        RunFolder(tmp_path / "run"),
        topology=TOPO,
        at=Conditions(quiet=gate, priority=wanted),
    ).raw


@pytest.mark.skipif(not AUTOGROUP, reason="this kernel has no autogroup scheduling")
def test_a_raised_worker_runs_at_nice_minus_20_where_permitted_and_says_so(tmp_path):
    result = run_stub(tmp_path, "raised")
    got = result["runner"]["priority"]
    seen = result["seen"]
    if os.geteuid() == 0:  # CI runs as root: the kernel grants it
        assert got["autogroup_nice"] == -20 and got["nice"] == -20
        assert seen["autogroup"].rstrip().endswith("nice -20")
        assert seen["nice"] == -20  # before exec: every thread inherits it
        assert got["shielded"] is (priority.autogroup_applies() is None)
        assert got["mechanism"] == "cap_sys_nice" and got["value"] == -20
        assert got["advice"] is None
    else:
        assert got["shielded"] is False and "not permitted" in got["why"]
        assert seen["nice"] == os.getpriority(os.PRIO_PROCESS, 0)


@pytest.mark.skipif(not AUTOGROUP, reason="this kernel has no autogroup scheduling")
def test_a_normal_worker_keeps_its_priority(tmp_path):
    result = run_stub(tmp_path, "normal")
    got = result["runner"]["priority"]
    assert got == {"requested": "normal", "autogroup_nice": 0, "shielded": False, "why": None,
                   "nice": os.getpriority(os.PRIO_PROCESS, 0), "mechanism": None,
                   "value": None, "advice": None}  # fmt: skip
    assert result["seen"]["autogroup"].rstrip().endswith("nice 0")


def shielded_result(others: float | None, shielded: bool = True) -> dict:
    return {
        "status": "ok",
        "cpu": {"others_share": others, "steal_share": 0.0},
        "runner": {"priority": {"requested": "raised", "shielded": shielded}},
    }


def test_gate_skips_the_wait_only_after_a_shielded_clean_cell():
    waits: list[float] = []

    def fake_wait(cpus, *, limit, max_wait_s):
        waits.append(max_wait_s)
        return QuietWait(2.0, 0.5, False, limit, max_wait_s)

    gate = QuietGate(limit=0.1, max_wait_s=30.0, wait=fake_wait,
                     disturbed=lambda r: interference.disturbance(r, 0.1))  # fmt: skip
    assert gate([0]).quiet is False and len(waits) == 1  # nothing seen yet: waits
    gate.observe(shielded_result(0.01))
    skipped = gate([0])
    assert skipped.shielded and skipped.waited_s == 0.0 and len(waits) == 1
    gate.observe(shielded_result(0.30))  # the priority did not keep it clean
    assert not gate([0]).shielded and len(waits) == 2
    gate.observe(shielded_result(0.01, shielded=False))  # clean, but not shielded
    assert not gate([0]).shielded and len(waits) == 3
    gate.observe(shielded_result(None))  # nothing measured: no evidence
    assert not gate([0]).shielded and len(waits) == 4


def test_the_report_says_what_the_priority_did():
    from resultfactory import make_result

    from tfvariants.store.training import parse_training

    def cell(r: int, got: dict, quiet: dict | None = None) -> object:
        raw = make_result(repeat=r)
        raw["runner"] = {"priority": got, **({"quiet": quiet} if quiet else {})}
        return parse_training(raw)

    up = {"requested": "raised", "shielded": True}
    down = {"requested": "raised", "shielded": False, "why": "not permitted (needs root)"}
    results = [cell(0, up), cell(1, up, {"waited_s": 0.0, "shielded": True}), cell(2, down)]
    text = interference.summarise(results).sentence()
    assert "2 of 3 workers ran at raised priority" in text
    assert "got about 1 % of a contested CPU" in text
    assert "the others at normal priority: not permitted (needs root)" in text
    assert "1 cell(s) started without waiting for quiet" in text
    normal = [cell(0, {"requested": "normal", "shielded": False})]
    assert "priority" not in interference.summarise(normal).sentence()
    partial = {
        "requested": "raised",
        "shielded": True,
        "mechanism": "rlimit_nice",
        "value": -10,
        "advice": "allow `ann - nice -20`",
    }
    text = interference.summarise([cell(0, partial), cell(1, up)]).sentence()
    assert (
        "their session at nice -10 by rlimit_nice, so other programs' sessions got at "
        "most 10 % of a contested CPU" in text
    )
    assert text.endswith("To get more: allow `ann - nice -20`.")
    # Nothing raised (an unprivileged user): why, not what a raise would have done.
    text = interference.summarise([cell(0, down), cell(1, down)]).sentence()
    assert "None of 2 workers could run at raised priority: not permitted (needs root)" in text
    assert "contested CPU" not in text and "the others" not in text


SPIN = (
    "t0, c0 = time.monotonic(), time.process_time()\n"
    "while time.monotonic() - t0 < 2.0:\n"
    "    pass\n"
    'write_ok({"share": (time.process_time() - c0) / (time.monotonic() - t0)})\n'
)


@pytest.mark.skipif(
    not AUTOGROUP or os.geteuid() != 0 or priority.autogroup_applies() is not None,
    reason="needs autogroup scheduling in the root CPU group, and root",
)
def test_a_shielded_worker_keeps_its_cpu_from_a_nice_19_job_in_another_session(tmp_path):
    """The claim behind "shielded", on the real scheduler: a busy loop shares its CPU
    about evenly with a nice-19 job started from another session, and keeps nearly all
    of it when raised."""
    import subprocess
    import sys

    cpu = min(os.sched_getaffinity(0))  # TOPO's first CPU: the one a 1-thread cell gets

    def pin_and_nice() -> None:
        os.sched_setaffinity(0, {cpu})
        os.nice(19)

    hog = subprocess.Popen(
        [sys.executable, "-c", "import time\nt = time.time() + 30\nwhile time.time() < t: pass"],
        preexec_fn=pin_and_nice, start_new_session=True,
    )  # fmt: skip
    try:
        shares = {}
        for wanted in ("normal", "raised"):
            (tmp_path / wanted).mkdir()
            variant = stub_variant(tmp_path / wanted, SPIN)
            cell = Cell(variant="stub", threads=1, workload="mnist_mlp", repeat=0)
            result = run_cell(
                cell,
                variant,
                RunOptions(timeout_s=60),
                RunFolder(tmp_path / wanted),
                topology=TOPO,
                at=Conditions(priority=wanted),
            ).raw
            assert result["status"] == "ok", result.get("reason")
            shares[wanted] = result["share"]
    finally:
        hog.kill()
        hog.wait()
    assert shares["normal"] < 0.75  # the nice-19 job took its even share
    assert shares["raised"] > 0.9, shares
    print(shares)


# --- grants short of root: RLIMIT_NICE and CAP_SYS_NICE --------------------------------

NO_CAPS = 0x0
SYS_NICE = 1 << priority.CAP_SYS_NICE


def grant(soft: int, caps: int | None = NO_CAPS) -> priority.Grant:
    return priority.nice_grant(
        getrlimit=lambda _: (soft, soft), caps=lambda: caps, user=lambda: "ann"
    )


@pytest.mark.parametrize(
    ("soft", "caps", "nice", "mechanism", "advice"),
    [
        (0, NO_CAPS, 0, None, True),  # the usual default: nothing
        (20, NO_CAPS, 0, None, True),  # nice 0 only: nothing to raise
        (30, NO_CAPS, -10, "rlimit_nice", True),  # `ann - nice -10` in limits.conf
        (25, None, -5, "rlimit_nice", True),  # CapEff unreadable: the limit still counts
        (40, NO_CAPS, -20, "rlimit_nice", False),  # `ann - nice -20`: the full shield
        (resource.RLIM_INFINITY, NO_CAPS, -20, "rlimit_nice", False),
        (0, SYS_NICE, -20, "cap_sys_nice", False),  # an ambient CAP_SYS_NICE
        (0, SYS_NICE - 1, 0, None, True),  # every capability below it, not it
    ],
)
def test_the_grant_is_the_lowest_nice_the_system_permits(soft, caps, nice, mechanism, advice):
    got = grant(soft, caps)
    assert (got.nice, got.mechanism) == (nice, mechanism)
    assert (got.advice is not None) is advice
    if advice:
        assert "`ann - nice -20`" in got.advice and "CAP_SYS_NICE" in got.advice


def test_a_partial_rlimit_grant_is_used_down_to_its_limit_in_a_real_worker(tmp_path, monkeypatch):
    """RLIMIT_NICE cannot be raised on these machines (CAP_SYS_RESOURCE is withheld, even
    from root), so the limit reader is injected: a soft limit of 30 permits nice -10, and
    the worker asks for exactly that, no more."""
    if not AUTOGROUP:
        pytest.skip("this kernel has no autogroup scheduling")
    partial = grant(30)
    monkeypatch.setattr(priority, "granted", lambda: partial)
    result = run_stub(tmp_path, "raised")
    got, seen = result["runner"]["priority"], result["seen"]
    if os.geteuid() != 0 and not (priority.cap_eff() or 0) >> priority.CAP_SYS_NICE & 1:
        pytest.skip("the real kernel would refuse nice -10 to this user")
    assert seen["nice"] == -10 and seen["autogroup"].rstrip().endswith("nice -10")
    assert got["autogroup_nice"] == -10 and got["value"] == -10
    assert got["mechanism"] == "rlimit_nice"
    assert got["shielded"] is (priority.autogroup_applies() is None)  # -10: still shields
    assert "`" in got["advice"] and "nice -20" in got["advice"]  # how to get the rest


def test_read_back_says_what_a_partial_grant_bought(monkeypatch):
    """A group at nice -5 leaves others 23 % of a contested CPU: raised, not shielded."""
    monkeypatch.setattr(priority, "_PROC", Path("/nonexistent"))
    got = priority.read_back(os.getpid(), "raised", None, grant(25))
    assert got.autogroup_nice is None and not got.shielded  # unreadable: says so
    assert "could not be read" in (got.why or "")
    assert priority.others_share_at(-5) == pytest.approx(1024 / (3121 + 1024))
    assert priority.others_share_at(-10) < 0.10 <= priority.others_share_at(-9)
    assert priority.others_share_at(-20) < 0.012


def fake_group(tmp_path: Path, nice: int, cgroup: str = "0::/\n") -> Path:
    proc = tmp_path / "proc"
    (proc / "7").mkdir(parents=True)
    (proc / "7" / "autogroup").write_text(f"/autogroup-9 nice {nice}\n")
    (proc / "7" / "cgroup").write_text(cgroup)
    return proc


@pytest.mark.parametrize(
    ("nice", "shielded", "why"),
    [
        (-20, True, None),
        (-10, True, None),
        (-5, False, "only nice -5 permitted (rlimit_nice)"),
        (0, False, "not permitted"),
    ],
)
def test_read_back_grades_the_granted_nice(tmp_path, monkeypatch, nice, shielded, why):
    monkeypatch.setattr(priority, "_PROC", fake_group(tmp_path, nice))
    got = priority.read_back(7, "raised", None, grant(40 if nice == -20 else 30))
    assert got.shielded is shielded and got.autogroup_nice == nice
    assert (got.why or "").startswith(why or "")
    assert (got.value, got.mechanism) == ((nice, "rlimit_nice") if nice < 0 else (None, None))
    assert (got.advice is None) is (nice == -20)


def test_where_a_v2_cpu_cgroup_decides_its_weight_is_recorded(tmp_path, monkeypatch):
    proc = fake_group(tmp_path, 0, "0::/user.slice/app.scope\n")
    root = tmp_path / "cgroup"
    (root / "user.slice" / "app.scope").mkdir(parents=True)
    weight = root / "user.slice" / "app.scope" / "cpu.weight"
    monkeypatch.setattr(priority, "_PROC", proc)
    monkeypatch.setattr(priority, "_CGROUP", root)
    why = "the CPU cgroup /user.slice/app.scope decides, not autogroup"
    weight.write_text("100\n")
    got = priority.read_back(7, "raised", why, grant(0))
    assert (got.mechanism, got.value, got.shielded, got.why) == ("cgroup_weight", 100, False, why)
    assert "systemd-run --user --scope -p CPUWeight=" in (got.advice or "")
    weight.write_text("1000\n")
    got = priority.read_back(7, "raised", why, grant(0))
    assert got.value == 1000 and got.advice is None


# The host side of a raise, run as another user: priority.py is stdlib only, so it is
# loaded from its file by any Python that user may execute.
AS_USER = """
import importlib.util, json, os, subprocess, sys
spec = importlib.util.spec_from_file_location("prio", sys.argv[1])
prio = importlib.util.module_from_spec(spec)
sys.modules["prio"] = prio
spec.loader.exec_module(prio)
grant = prio.nice_grant()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"],
                         start_new_session=True, preexec_fn=lambda: prio.raise_in_child(grant.nice))
got = prio.read_back(child.pid, "raised", prio.autogroup_applies(), grant)
child.kill()
print(json.dumps({"uid": os.geteuid(), "grant": grant.nice, **got.to_json()}))
"""
TEST_USER = os.environ.get("TFV_TEST_USER", "tfvu")


def as_user(*caps: str) -> dict | None:
    """Run AS_USER as TEST_USER (with these ambient capabilities), or None if this host
    cannot (not root, no setpriv, no such user, no Python that user can run)."""
    import json
    import pwd
    import shutil
    import subprocess
    import sys

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        return None
    module = Path(priority.__file__).resolve()
    switch = ["setpriv", f"--reuid={TEST_USER}", f"--regid={TEST_USER}", "--init-groups"]
    if caps:
        flags = ",".join(f"+{c}" for c in caps)
        switch += [f"--inh-caps={flags}", f"--ambient-caps={flags}"]
    for python in (sys.executable, "/usr/bin/python3"):
        run = subprocess.run(
            [*switch, python, "-c", AS_USER, str(module)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
        if run.returncode == 0:
            return json.loads(run.stdout)
    return None


@pytest.mark.skipif(
    not AUTOGROUP or priority.autogroup_applies() is not None,
    reason="needs autogroup scheduling in the root CPU group",
)
def test_an_unprivileged_user_with_an_ambient_cap_sys_nice_gets_raised_workers():
    plain = as_user()
    if plain is None:
        pytest.skip(f"needs root, setpriv and a user {TEST_USER} (.ci/run creates it)")
    assert plain["uid"] != 0 and plain["grant"] == 0  # no RLIMIT_NICE on these machines
    assert plain["autogroup_nice"] == 0 and plain["shielded"] is False
    assert "not permitted" in plain["why"] and "nice -20" in plain["advice"]
    capable = as_user("sys_nice")
    assert capable is not None and capable["uid"] != 0
    assert capable["autogroup_nice"] == -20 and capable["nice"] == -20
    assert capable["shielded"] is True and capable["mechanism"] == "cap_sys_nice"
    assert capable["advice"] is None


# ---- cgroup v2: a delegated CPU controller (a fake /sys/fs/cgroup; this host has v1) ----

APP = "/user.slice/user-1000.slice/user@1000.service/app.slice"


def v2_tree(tmp_path: Path, subtree: str = "cpu memory pids", sibling: int = 100) -> Path:
    """A user session's app.slice (delegated: the user's manager made it) holding the
    terminal's scope the run starts in and another app's scope."""
    root = tmp_path / "cgroup"
    app = root / APP.strip("/")
    for scope, weight in (("term.scope", 100), ("other.scope", sibling)):
        (app / scope).mkdir(parents=True)
        (app / scope / "cpu.weight").write_text(f"{weight}\n")
    (app / "cgroup.subtree_control").write_text(subtree + "\n")
    (app / "cgroup.procs").write_text("")
    (root / "cgroup.subtree_control").write_text("cpu memory pids\n")
    return root


def v2_proc(tmp_path: Path, own: str = f"0::{APP}/term.scope\n") -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(own)
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "sys" / "kernel" / "sched_autogroup_enabled").write_text("1\n")
    return proc


def test_v2_detection_and_advice_with_a_fake_tree(tmp_path, monkeypatch):
    root, proc = v2_tree(tmp_path), v2_proc(tmp_path)
    why = priority.autogroup_applies(proc, root)
    assert why == f"the CPU cgroup {APP}/term.scope decides, not autogroup"
    assert priority.own_cgroup(proc) == f"{APP}/term.scope"
    (proc / "7").mkdir()
    (proc / "7" / "autogroup").write_text("/autogroup-9 nice 0\n")
    (proc / "7" / "cgroup").write_text(f"0::{APP}/term.scope\n")
    monkeypatch.setattr(priority, "_PROC", proc)
    monkeypatch.setattr(priority, "_CGROUP", root)
    got = priority.read_back(7, "raised", why, grant(0))  # no cell group: the run's weight
    assert (got.mechanism, got.value, got.shielded) == ("cgroup_weight", 100, False)
    assert "systemd-run --user --scope -p CPUWeight=" in got.advice


def test_a_delegated_v2_parent_gives_the_worker_its_own_weighted_cgroup(tmp_path, monkeypatch):
    root, proc = v2_tree(tmp_path), v2_proc(tmp_path)
    app = root / APP.strip("/")
    stale = app / f"{priority.CELL_GROUP_PREFIX}999999999-0a0b0c0d"  # a killed run's
    live = app / f"{priority.CELL_GROUP_PREFIX}4242-0a0b0c0d"  # a running run's
    stale.mkdir()
    live.mkdir()
    (proc / "4242").mkdir()
    group = priority.make_cell_group(proc, root)
    assert group is not None and group.path.parent == app
    assert group.path.name.startswith(f"{priority.CELL_GROUP_PREFIX}{os.getpid()}-")
    assert (group.path / "cpu.weight").read_text() == f"{priority.CELL_WEIGHT}\n"
    assert group.relative == f"{APP}/{group.path.name}" and group.others == 100
    assert not stale.exists() and live.exists()
    # the worker in it: recorded as the cgroup_weight mechanism, shielded (1 % for others)
    (proc / "7").mkdir()
    (proc / "7" / "cgroup").write_text(f"0::{group.relative}\n")
    monkeypatch.setattr(priority, "_PROC", proc)
    got = priority.read_back(7, "raised", "the CPU cgroup decides", grant(0), cell_group=group)
    assert (got.mechanism, got.value, got.shielded, got.why) == (
        "cgroup_weight",
        priority.CELL_WEIGHT,
        True,
        None,
    )
    # removed after the cell (the kernel's interface files go with the directory)
    for name in ("cpu.weight",):
        (group.path / name).unlink()
    assert group.remove() is None and not group.path.exists()


def test_a_heavy_sibling_cgroup_leaves_the_cell_unshielded(tmp_path, monkeypatch):
    root, proc = v2_tree(tmp_path, sibling=5000), v2_proc(tmp_path)
    group = priority.make_cell_group(proc, root)
    assert group is not None and group.others == 5000
    (proc / "7").mkdir()
    (proc / "7" / "cgroup").write_text(f"0::{group.relative}\n")
    monkeypatch.setattr(priority, "_PROC", proc)
    got = priority.read_back(7, "raised", "the CPU cgroup decides", grant(0), cell_group=group)
    assert got.mechanism == "cgroup_weight" and got.shielded is False
    assert got.why == "a sibling cgroup at cpu.weight 5000 keeps 33%"


@pytest.mark.parametrize(
    ("own", "subtree", "writable"),
    [
        (f"0::{APP}/term.scope\n", "memory pids", True),  # no CPU controller: weights idle
        (f"0::{APP}/term.scope\n", "cpu memory", False),  # not delegated to this user
        ("4:memory:/x\n1:cpu,cpuacct:/\n0::/\n", "cpu", True),  # cgroup v1 places the CPU
        ("0::/\n", "cpu", True),  # the root: autogroup decides
    ],
)
def test_no_cell_cgroup_where_it_cannot_be_made(tmp_path, monkeypatch, own, subtree, writable):
    root, proc = v2_tree(tmp_path, subtree), v2_proc(tmp_path, own)
    if not writable:  # as root every path is writable: what a user without delegation sees
        monkeypatch.setattr(priority.os, "access", lambda path, mode: False)
    assert priority.make_cell_group(proc, root) is None
    assert not list((root / APP.strip("/")).glob(f"{priority.CELL_GROUP_PREFIX}*"))


def test_a_raised_worker_joins_its_cell_cgroup_before_exec_and_it_is_removed(tmp_path, monkeypatch):
    """Through the runner: the group is made before the worker starts, the worker moves
    itself in before exec (it writes "0" to the group's cgroup.procs), and the group is
    removed once the cell has ended."""
    from tfvariants.execute import runner

    root = v2_tree(tmp_path)
    monkeypatch.setattr(priority, "_CGROUP", root)
    monkeypatch.setattr(priority, "own_cgroup", lambda proc=None: f"{APP}/term.scope")
    monkeypatch.setattr(runner, "_autogroup_applies", lambda: "the CPU cgroup decides")
    removed: list[Path] = []
    monkeypatch.setattr(priority.CellGroup, "remove", lambda self: removed.append(self.path))
    result = run_stub(tmp_path, "raised")
    assert result["status"] == "ok"
    groups = list((root / APP.strip("/")).glob(f"{priority.CELL_GROUP_PREFIX}*"))
    assert len(groups) == 1 and removed == groups
    assert (groups[0] / "cgroup.procs").read_text() == "0\n"  # written by the worker
    # a normal-priority worker gets none
    removed.clear()
    (tmp_path / "n").mkdir()
    assert run_stub(tmp_path / "n", "normal")["status"] == "ok"
    assert removed == [] and len(list(groups[0].parent.glob("tfvariants-cell-*"))) == 1
