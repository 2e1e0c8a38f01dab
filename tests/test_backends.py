"""The backend-neutral worker: choosing a backend, thread settings before its import,
and (marker `envs`) a real worker on JAX in a requirement-spec environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfvariants.store.result import load_result
from workloads import backends
from workloads.protocol import RequestError, WorkerRequest

ROOT = Path(__file__).resolve().parent.parent


def test_choose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    assert backends.choose(None) == "tensorflow"
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    assert backends.choose(None) == "torch"
    assert backends.choose("jax") == "jax"
    with pytest.raises(ValueError, match="unknown Keras backend 'cntk'"):
        backends.choose("cntk")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_prepare_narrows_affinity_for_jax_only() -> None:
    """Run in a child: prepare() changes this process's affinity and environment."""
    code = (
        "import os, json; from workloads import backends\n"
        "cpus = tuple(sorted(os.sched_getaffinity(0))[:2])\n"
        "backends.prepare('tensorflow', cpus, 1, 1); a = sorted(os.sched_getaffinity(0))\n"
        "backends.prepare('jax', cpus, 1, 1); b = sorted(os.sched_getaffinity(0))\n"
        "print(json.dumps([a, b, os.environ['KERAS_BACKEND'], os.environ['OMP_NUM_THREADS']]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)  # fmt: skip
    tf_cpus, jax_cpus, backend, omp = json.loads(out.stdout)
    assert len(tf_cpus) == 2 and jax_cpus == tf_cpus[:1]  # XLA's pool follows affinity
    assert backend == "jax" and omp == "1"


def test_request_backend_field() -> None:
    req = WorkerRequest(workload="mnist_mlp", cell={}, result="/r.json", intra_op=1,
                        backend="jax")  # fmt: skip
    assert WorkerRequest.from_json(req.to_json()).backend == "jax"
    bad = req.to_json().replace('"jax"', '"cntk"')
    with pytest.raises(RequestError, match="'backend' must be"):
        WorkerRequest.from_json(bad)


@pytest.mark.envs
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_worker_on_jax_for_real(tmp_path: Path) -> None:
    """keras-jax is built (or reused from the cache: ~30 s, ~600 MB the first time) and
    a small mnist_cnn cell runs on JAX through the real runner, no TensorFlow in sight."""
    proc = subprocess.run(
        [sys.executable, "-m", "tfvariants", "run", "mnist_cnn", "--variant", "keras-jax",
         "--threads", "2", "--epochs", "2", "--samples", "256", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = load_result(tmp_path / "cells" / "mnist_cnn__keras-jax__t2__r0.json")
    assert res["status"] == "ok", res.get("reason")
    assert res["applied"]["backend"] == "jax" and res["applied"]["intra_op"] == 2
    assert res["applied"]["threads_via"] == "cpu affinity"
    backend = res["environment"]["backend"]
    assert backend["name"] == "jax" and backend["version"] == "0.10.2"
    assert backend["devices"] and backend["devices"][0].startswith(("cpu", "TFRT_CPU"))
    lock = res["environment"]["requirements_env"]["lock"]
    assert lock["jax"] == "0.10.2" and "tensorflow" not in lock and "keras" in lock
    assert "tensorflow" not in res["environment"]
    assert len(res["timing"]["epoch_times_s"]) == 2
    assert res["metrics"]["loss"] > 0
