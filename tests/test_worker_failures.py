"""The real worker and CLI on failing workloads, without TensorFlow.

The worker imports the workload module before TensorFlow, so a workload that dies,
hangs or raises while being imported exercises the real process, signal and result
handling in seconds. (A worker that gets as far as TensorFlow goes through the same
code: the `tf`-marked tests cover that path.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tfvariants.plan.cell import cell_id
from tfvariants.store.result import load_result

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tfvariants", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def workload(tmp_path: Path, name: str, top_level: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(
        f"{top_level}\n\n"
        f'SPEC = {{"name": "{name}", "batch_size": 32, "epochs": 1}}\n\n'
        "def load_data(source, *, data_dir, samples, seed):\n    raise AssertionError\n\n"
        "def build_model(keras, *, compile_options):\n    raise AssertionError\n"
    )
    return str(path)


def test_worker_killed_by_sigkill(tmp_path):
    wl = workload(tmp_path, "suicide", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    proc = cli("run", wl, "--threads", "1", "--out", str(tmp_path / "o"))
    assert proc.returncode == 1
    assert "worker killed by SIGKILL" in proc.stderr
    res = load_result(tmp_path / "o" / "cells" / f"{cell_id('local', 1, wl, 0)}.json")
    assert res["status"] == "failed" and res["reason"] == "worker killed by SIGKILL"
    assert res["runner"]["exit_code"] == -9


def test_worker_timeout(tmp_path):
    wl = workload(tmp_path, "sleepy", "import time\ntime.sleep(120)")
    proc = cli("run", wl, "--threads", "1", "--timeout", "5", "--out", str(tmp_path / "o"))
    assert proc.returncode == 1
    res = load_result(tmp_path / "o" / "cells" / f"{cell_id('local', 1, wl, 0)}.json")
    assert res["status"] == "timeout"
    assert res["reason"] == "no result within the 5 s timeout"


def test_workload_exception_is_a_failed_result(tmp_path):
    wl = workload(tmp_path, "broken", "raise RuntimeError('no data here')")
    proc = cli("run", wl, "--threads", "1", "--out", str(tmp_path / "o"))
    assert proc.returncode == 1
    res = load_result(tmp_path / "o" / "cells" / f"{cell_id('local', 1, wl, 0)}.json")
    assert res["status"] == "failed"
    assert res["reason"].endswith("no data here")
    assert "Traceback" in res["stderr_tail"]
    assert res["environment"]["cpu"]["logical_cpus"] >= 1  # recorded even on failure


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


SPAWNER = """import os, subprocess, sys, time
def note(pid):
    with open({pids!r}, "a") as fh:
        fh.write(f"{{pid}}\\n")
note(subprocess.Popen(["sleep", "599"]).pid)  # stays in the worker's group
note(subprocess.Popen([sys.executable, "-c", "while True: pass"]).pid)  # busy
# leaves the group and the session, without the environment it was given
note(subprocess.Popen(["/bin/sleep", "598"], start_new_session=True, env={{}}).pid)
if os.fork() == 0:  # a double-forked daemon
    os.setsid()
    if os.fork() == 0:
        note(os.getpid())
        os.execv("/bin/sleep", ["sleep", "597"])
    os._exit(0)
time.sleep(0.5)
{end}
"""


def test_nothing_a_cell_started_survives_it(tmp_path):
    """A workload's children (in its group, busy, a setsid daemon, a double fork) are
    killed after the cell, and the result names them."""
    pids_file = tmp_path / "pids"
    body = SPAWNER.format(pids=str(pids_file), end="raise RuntimeError('started')")
    wl = workload(tmp_path, "spawner", body)
    proc = cli("run", wl, "--threads", "1", "--out", str(tmp_path / "o"))
    pids = [int(p) for p in pids_file.read_text().split()]
    assert len(pids) == 4
    try:
        assert [p for p in pids if _alive(p)] == []
        res = load_result(tmp_path / "o" / "cells" / f"{cell_id('local', 1, wl, 0)}.json")
        assert res["status"] == "failed" and res["reason"].endswith("started")
        killed = {k["pid"]: k for k in res["runner"]["killed"]}
        assert set(pids) <= set(killed)
        assert killed[pids[0]]["how"] == "process group" and killed[pids[2]]["how"] == "escaped"
        assert killed[pids[1]]["cpu_s"] > 0  # the busy child: what it took is on record
        assert "left 4 process(es) running after its worker, killed: sleep" in proc.stderr
    finally:
        for pid in pids:  # never leave them to the next test, whatever failed
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_timed_out_cells_escaped_daemon_is_killed_too(tmp_path):
    pids_file = tmp_path / "pids"
    wl = workload(tmp_path, "spawner", SPAWNER.format(pids=str(pids_file), end="time.sleep(120)"))
    proc = cli("run", wl, "--threads", "1", "--timeout", "3", "--out", str(tmp_path / "o"))
    pids = [int(p) for p in pids_file.read_text().split()]
    try:
        assert proc.returncode == 1 and [p for p in pids if _alive(p)] == []
        res = load_result(tmp_path / "o" / "cells" / f"{cell_id('local', 1, wl, 0)}.json")
        assert res["status"] == "timeout"
        escaped = {k["pid"] for k in res["runner"]["killed"] if k["how"] == "escaped"}
        assert {pids[2], pids[3]} <= escaped  # the group went with the timeout's killpg
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_an_interrupted_cells_children_do_not_survive_it(tmp_path):
    """SIGTERM to the host mid-cell: the worker's group and what escaped it are gone
    when the command has ended."""
    import time

    pids_file = tmp_path / "pids"
    wl = workload(tmp_path, "spawner", SPAWNER.format(pids=str(pids_file), end="time.sleep(120)"))
    host = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfvariants",
            "run",
            wl,
            "--threads",
            "1",
            "--out",
            str(tmp_path / "o"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(pids) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
            pids = [int(p) for p in pids_file.read_text().split()] if pids_file.exists() else []
        assert len(pids) == 4
        host.send_signal(signal.SIGTERM)
        _, err = host.communicate(timeout=60)
        assert host.returncode != 0
        assert [p for p in pids if _alive(p)] == [], err
    finally:
        if host.poll() is None:
            host.kill()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
