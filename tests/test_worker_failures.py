"""The real worker and CLI on failing workloads, without TensorFlow.

The worker imports the workload module before TensorFlow, so a workload that dies,
hangs or raises while being imported exercises the real process, signal and result
handling in seconds. (A worker that gets as far as TensorFlow goes through the same
code: the `tf`-marked tests cover that path.)
"""

from __future__ import annotations

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
