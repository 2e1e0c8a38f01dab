"""Real TensorFlow in real workers (marked `tf`: slow, run by `make test` and CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfvariants.result import load_result

pytestmark = [pytest.mark.tf, pytest.mark.usefixtures("needs_tf")]

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tfvariants", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_run_writes_a_valid_result(tmp_path):
    out = tmp_path / "x"
    proc = cli("run", "mnist_mlp", "--threads", "1", "--epochs", "2", "--samples", "1024",
               "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    res = load_result(out / "cells" / "mnist_mlp__local__t1__r0.json")
    assert res["status"] == "ok"
    timing = res["timing"]
    assert len(timing["epoch_times_s"]) == 2 and timing["warmup_epochs"] == 1
    assert timing["steps_per_epoch"] == 8 and timing["samples_per_epoch"] == 1024
    assert timing["samples_per_s"] > 0 and timing["step_times_s"]
    assert res["schedule"]["full_epochs"] == 20 and res["schedule"]["projected_full_s"] > 0
    assert res["flops_per_step"] > 0 and res["gflops_per_s"] > 0
    assert res["memory"]["peak_rss_bytes"] > 50e6
    tf_env = res["environment"]["tensorflow"]
    assert tf_env["version"].startswith("2.")
    assert isinstance(tf_env["missing_instructions"], list)  # guard message parsed
    assert res["applied"]["env"]["TF_ENABLE_ONEDNN_OPTS"] == "1"
    # learnable synthetic data: accuracy clearly above chance
    assert res["metrics"]["accuracy"] > res["chance_accuracy"] + 0.2


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_threads_1_and_2_apply_different_masks_and_pools(tmp_path):
    seen = {}
    for n in (1, 2):
        proc = cli("run", "mnist_mlp", "--threads", str(n), "--epochs", "1", "--samples", "256",
                   "--out", str(tmp_path))  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        res = load_result(tmp_path / "cells" / f"mnist_mlp__local__t{n}__r0.json")
        seen[n] = res["applied"]
    assert len(seen[1]["affinity"]) == 1 and len(seen[2]["affinity"]) == 2
    assert seen[1]["intra_op"] == 1 and seen[2]["intra_op"] == 2
    assert seen[1]["env"]["OMP_NUM_THREADS"] == "1" and seen[2]["env"]["OMP_NUM_THREADS"] == "2"


WORKLOAD_TEMPLATE = """
SPEC = {{"name": "{name}", "batch_size": 32, "epochs": 1}}

def load_data(source, *, data_dir, samples, seed):
    {body}

def build_model(keras, *, compile_options):
    raise AssertionError("not reached")
"""


def custom(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(WORKLOAD_TEMPLATE.format(name=name, body=body))
    return str(path)


def test_real_worker_killed_by_sigkill(tmp_path):
    wl = custom(tmp_path, "suicide", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    proc = cli("run", wl, "--threads", "1", "--out", str(tmp_path / "o"))
    assert proc.returncode == 1
    res = load_result(tmp_path / "o" / "cells" / "suicide__local__t1__r0.json")
    assert res["status"] == "failed" and res["reason"] == "worker killed by SIGKILL"


def test_real_worker_timeout(tmp_path):
    wl = custom(tmp_path, "sleepy", "import time; time.sleep(120)")
    proc = cli("run", wl, "--threads", "1", "--timeout", "20", "--out", str(tmp_path / "o"))
    assert proc.returncode == 1
    res = load_result(tmp_path / "o" / "cells" / "sleepy__local__t1__r0.json")
    assert res["status"] == "timeout"


def test_workload_exception_is_a_failed_result(tmp_path):
    wl = custom(tmp_path, "broken", "raise RuntimeError('no data here')")
    proc = cli("run", wl, "--threads", "1", "--out", str(tmp_path / "o"))
    assert proc.returncode == 1
    res = load_result(tmp_path / "o" / "cells" / "broken__local__t1__r0.json")
    assert res["status"] == "failed"
    assert res["reason"] == "RuntimeError: no data here"
    assert "Traceback" in res["stderr_tail"]
    assert res["environment"]["tensorflow"]["version"]


def test_env_probe_in_variant():
    proc = cli("env", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["variant"]["tensorflow"]["version"].startswith("2.")
