"""Raised worker priority (tfvariants.execute.priority): what the kernel grants, read back
from a real worker process, and the quiet gate that stops waiting behind it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_runner import TOPO, stub_variant

from tfvariants.analyze import interference
from tfvariants.execute import priority
from tfvariants.execute.quiet import QuietGate, QuietWait
from tfvariants.execute.runner import RunOptions, run_cell
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


def run_stub(tmp_path: Path, wanted: str, gate=None) -> dict:
    variant = stub_variant(tmp_path, REPORT)
    cell = Cell(variant="stub", threads=1, workload="mnist_mlp", repeat=0)
    return run_cell(cell, variant, RunOptions(timeout_s=30), RunFolder(tmp_path / "run"),
                    topology=TOPO, quiet=gate, priority=wanted)  # fmt: skip


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
    else:
        assert got["shielded"] is False and "not permitted" in got["why"]
        assert seen["nice"] == os.getpriority(os.PRIO_PROCESS, 0)


@pytest.mark.skipif(not AUTOGROUP, reason="this kernel has no autogroup scheduling")
def test_a_normal_worker_keeps_its_priority(tmp_path):
    result = run_stub(tmp_path, "normal")
    got = result["runner"]["priority"]
    assert got == {"requested": "normal", "autogroup_nice": 0, "shielded": False, "why": None,
                   "nice": os.getpriority(os.PRIO_PROCESS, 0)}  # fmt: skip
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

    from tfvariants.store.cellresult import parse_training

    def cell(r: int, got: dict, quiet: dict | None = None) -> object:
        raw = make_result(repeat=r)
        raw["runner"] = {"priority": got, **({"quiet": quiet} if quiet else {})}
        return parse_training(raw)

    up = {"requested": "raised", "shielded": True}
    down = {"requested": "raised", "shielded": False, "why": "not permitted (needs root)"}
    results = [cell(0, up), cell(1, up, {"waited_s": 0.0, "shielded": True}), cell(2, down)]
    text = interference.summarise(results).sentence()
    assert "2 of 3 workers ran at raised priority" in text
    assert "the others at normal priority: not permitted (needs root)" in text
    assert "1 cell(s) started without waiting for quiet" in text
    normal = [cell(0, {"requested": "normal", "shielded": False})]
    assert "priority" not in interference.summarise(normal).sentence()


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
            result = run_cell(cell, variant, RunOptions(timeout_s=60), RunFolder(tmp_path / wanted),
                              topology=TOPO, priority=wanted)  # fmt: skip
            assert result["status"] == "ok", result.get("reason")
            shares[wanted] = result["share"]
    finally:
        hog.kill()
        hog.wait()
    assert shares["normal"] < 0.75  # the nice-19 job took its even share
    assert shares["raised"] > 0.9, shares
    print(shares)
