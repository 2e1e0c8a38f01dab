"""The built-in requirement-spec variant ``tf-2.14`` on a real loopback Ray cluster:
built on a node from the package index with no manual step, then a real cell of a tiny
workload measured in it next to ``local``, on two simulated node types. Its own cluster
(tests/test_ray_cluster.py's nodes have no package index on purpose).

CI cost: one environment build (15-30 s with a warm uv cache; a fresh machine downloads
about 300-600 MB once into the user's normal uv cache, which this test does not isolate)
and four tiny real-TensorFlow cells.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_ray_cluster import CATALOG, ROOT, _ray

pytestmark = [pytest.mark.ray, pytest.mark.tf, pytest.mark.envs]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    Cluster = _ray()
    pytest.importorskip("tensorflow")  # ``local`` is this interpreter's TensorFlow
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    saved = os.environ.get("TFVARIANTS_ENVS")
    # A fresh environment cache, so the nodes really build; uv's download cache stays
    # the user's ($XDG_CACHE_HOME/uv or ~/.cache/uv), so only a fresh machine downloads.
    os.environ["TFVARIANTS_ENVS"] = str(tmp_path_factory.mktemp("envs"))
    local = {"node_ip_address": "127.0.0.1", "include_dashboard": False}
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, **local})
    c.add_node(num_cpus=1, resources={"sim-1": 1}, **local)
    c.add_node(num_cpus=1, resources={"sim-2": 1}, **local)
    c.wait_for_nodes()
    yield c
    c.shutdown()
    signal.signal(signal.SIGINT, previous)
    if saved is None:
        os.environ.pop("TFVARIANTS_ENVS", None)
    else:
        os.environ["TFVARIANTS_ENVS"] = saved


def test_tf_214_is_built_on_the_nodes_and_measured_next_to_local(cluster, tmp_path):
    catalog = tmp_path / "sim.toml"
    catalog.write_text(CATALOG)
    out = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "tfvariants", "compare", "--executor", "ray",
        "--ray-address", cluster.address, "--variants", "local,tf-2.14",
        "--workloads", "mnist_mlp", "--samples", "256", "--epochs", "1",
        "--threads", "1,2", "--repeats", "1", "--pricing", str(catalog),
        "--out", str(out), "--output", str(tmp_path / "report" / "index.html"),
    ]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    took = time.monotonic() - started
    built = list(Path(os.environ["TFVARIANTS_ENVS"]).glob("env-*/tfvariants-env.json"))
    build_s = [json.loads(p.read_text()).get("build_s") for p in built]
    print(f"tf-2.14 on the loopback cluster: {took:.0f} s (build {build_s} s), "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    cells = {p.stem: json.loads(p.read_text()) for p in (out / "cells").glob("*.json")}
    for t, inst in ((1, "sim-1"), (2, "sim-2")):
        for variant in ("local", "tf-2.14"):
            cell = cells[f"mnist_mlp__{variant}__t{t}__r0"]
            assert cell["status"] == "ok", (cell.get("reason"), proc.stderr[-2000:])
            assert cell["node"]["instance"] == inst
            assert cell["timing"]["samples_per_s"] > 0
        env = cells[f"mnist_mlp__tf-2.14__t{t}__r0"]["node"]["environment"]
        assert len(env["key"]) == 16
        assert env["import_check"].startswith("tensorflow 2.14.0 "), env
        assert "environment" not in cells[f"mnist_mlp__local__t{t}__r0"]["node"]
    keys = {cells[f"mnist_mlp__tf-2.14__t{t}__r0"]["node"]["environment"]["key"] for t in (1, 2)}
    assert len(keys) == 1  # one environment, named the same on both node types
    assert len(built) == 1 and json.loads(built[0].read_text())["variant"] == "tf-2.14"
