"""Real TensorFlow in real workers (marked `tf`: slow, run by `make test` and CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfvariants.store.result import load_result

pytestmark = [pytest.mark.tf, pytest.mark.usefixtures("needs_tf")]

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tfvariants", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_run_writes_valid_results_with_the_applied_pinning(tmp_path):
    """One real worker per thread count (TensorFlow imports are the slow part)."""
    seen = {}
    for n in (1, 2):
        proc = cli("run", "mnist_mlp", "--threads", str(n), "--epochs", "2", "--samples", "1024",
                   "--out", str(tmp_path))  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        seen[n] = load_result(tmp_path / "cells" / f"mnist_mlp__local__t{n}__r0.json")
    res = seen[1]
    assert res["status"] == "ok"
    timing = res["timing"]
    assert len(timing["epoch_times_s"]) == 2 and timing["warmup_steps"] >= 1
    assert timing["window"]["mode"] == "whole-epochs" and not timing["window"]["stopped_early"]
    assert timing["steps_per_epoch"] == 8 and timing["samples_per_epoch"] == 1024
    assert timing["samples_per_s"] > 0 and timing["step_times_s"]
    assert res["schedule"]["full_epochs"] == 20 and res["schedule"]["projected_full_s"] > 0
    assert res["flops_per_step"] > 0 and res["gflops_per_s"] > 0
    assert res["memory"]["peak_rss_bytes"] > 50e6
    tf_env = res["environment"]["tensorflow"]
    assert tf_env["version"].startswith("2.")
    assert isinstance(tf_env["missing_instructions"], list)  # guard message parsed
    assert res["applied"]["env"]["TF_ENABLE_ONEDNN_OPTS"] == "1"
    assert "tf_data_iterators" not in res["applied"]  # whole epochs: Keras as users run it
    # learnable synthetic data: accuracy clearly above chance
    assert res["metrics"]["accuracy"] > res["chance_accuracy"] + 0.2
    # different pinning, read back inside the worker
    one, two = seen[1]["applied"], seen[2]["applied"]
    assert len(one["affinity"]) == 1 and len(two["affinity"]) == 2
    assert one["intra_op"] == 1 and two["intra_op"] == 2
    assert one["env"]["OMP_NUM_THREADS"] == "1" and two["env"]["OMP_NUM_THREADS"] == "2"


def test_steady_window_stops_training_and_projects_the_full_schedule(tmp_path):
    """Without --epochs a worker trains until the window is met, not a whole schedule."""
    from workloads.protocol import WorkerRequest

    req = WorkerRequest(
        "mnist_mlp", {"variant": "local", "threads": 1, "workload": "mnist_mlp", "repeat": 0},
        str(tmp_path / "r.json"), intra_op=1, cpus=(0,), samples=1024,
        min_steady_s=1.0, min_steady_steps=30,
    )  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "workloads.worker", *req.to_argv()], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = load_result(tmp_path / "r.json")
    t, s = res["timing"], res["schedule"]
    assert t["window"] == {"min_s": 1.0, "min_steps": 30, "met": True, "stopped_early": True,
                           "mode": "steady-window"}  # fmt: skip
    assert t["steady_steps"] >= 30 and t["steady_s"] >= 1.0 and t["warmup_steps"] >= 1
    assert s["ran_steps"] < s["full_steps"]  # stopped long before 20 epochs of 60k samples
    assert s["ran_epochs"] >= 2  # the time between epochs is measured on a later epoch
    assert len(t["steady_windows_s"]) == 5
    assert min(t["steady_windows_s"]) <= t["steady_step_s"] <= max(t["steady_windows_s"])
    lo, hi = s["projected_full_ci_s"]
    assert 0 < lo < s["projected_full_s"] < hi < 3 * lo  # an interval, not 0.5 s - 30 min
    assert 0 < res["cpu"]["utilisation"] <= 1.5 and res["cpu"]["cpus_pinned"] == 1
    # Each epoch's tf.data iterator is held (workloads.iterhold), one start-up per epoch.
    assert res["applied"]["tf_data_iterators"].startswith("held")
    assert len(t["start_gaps_s"]) == s["ran_epochs"]
    # which steps others disturbed (workloads.stepload): one share per recorded step
    assert len(t["step_others_share"]) == len(t["step_times_s"])
    assert all(x is None or 0 <= x <= 1 for x in t["step_others_share"])
    clean = t["clean"]
    assert clean["steady_steps"] == t["steady_steps"] >= clean["clean_steps"]
    assert (clean["step_mean_s"] is None) == (clean["clean_steps"] == 0)
    assert clean["limit"] == 0.10 and clean["sample_s"] == 0.25


def test_env_probe_in_variant():
    proc = cli("env", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["variant"]["tensorflow"]["version"].startswith("2.")
