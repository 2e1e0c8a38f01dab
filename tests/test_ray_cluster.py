"""`compare --executor ray` on a real multi-node Ray cluster on this machine (loopback
only): two simulated instance types, one cell per node at a time, a node killed mid-cell,
then --resume. Cells go through the real runner with a stand-in worker (a 'venv'
variant whose interpreter is a script), so no TensorFlow is needed.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parent.parent

# Ray binds the external interface unless told otherwise (DESIGN.md): keep it on loopback.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

STUB = """#!{python}
import json, os, sys, time
sys.path.insert(0, {root!r})
from tests.resultfactory import make_result
args = sys.argv[1:]
if args[:1] == ["-c"]:
    sys.exit(0)  # the readiness probe: this stand-in "has TensorFlow"
if "--request" in args:
    req = json.loads(args[args.index("--request") + 1])
    result_path, cell = req["result"], req["cell"]
else:
    result_path = args[args.index("--result") + 1]
    cell = json.loads(args[args.index("--cell") + 1])
control = {control!r}
hang = os.path.join(control, "hang-" + str(cell["threads"]) + "-" + str(cell["repeat"]))
forever = os.path.join(control, "always-" + str(cell["threads"]) + "-" + str(cell["repeat"]))
if os.path.exists(forever) or os.path.exists(hang):
    if os.path.exists(hang):
        os.remove(hang)  # hang once: the rerun (after a node loss or --resume) finishes
    with open(os.path.join(control, "pid"), "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(120)
time.sleep(0.7)
data = make_result(cell["variant"], cell["threads"], cell["workload"], cell["repeat"])
data["cell"] = cell
tmp = result_path + ".tmp"
with open(tmp, "w") as fh:
    json.dump(data, fh)
os.replace(tmp, result_path)
"""

CATALOG = """
name = "sim"
source = "test catalog"
[billing]
rule = "per_second"
minimum_seconds = 60
[default]
as_of = "2026-11"
tier = "spot"
[[instance]]
name = "sim-1"
vcpus = 1
prices = [{ as_of = "2026-11", on_demand = 0.04, spot = 0.01 }]
[[instance]]
name = "sim-2"
vcpus = 2
prices = [{ as_of = "2026-11", on_demand = 0.08, spot = 0.02 }]
[[instance]]
name = "sim-4"
vcpus = 4
prices = [{ as_of = "2026-11", on_demand = 0.16, spot = 0.04 }]
"""


def _ray():
    try:
        import ray  # noqa: F401
        from ray.cluster_utils import Cluster
    except ImportError:
        if os.environ.get("TFV_REQUIRE_RAY") == "1":
            pytest.fail("Ray is required (TFV_REQUIRE_RAY=1): pip install 'tfvariants[ray]'")
        pytest.skip("Ray not installed: pip install 'tfvariants[ray]'")
    return Cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    Cluster = _ray()
    # A shell starts background jobs with SIGINT ignored, and an ignored signal stays
    # ignored across exec: the Ray processes and the compare driver would then never see
    # the Ctrl-C this file sends (CI ran it that way; the Ctrl-C test hung). A Python
    # handler here is reset to the default in every child, as in an interactive shell.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    # The nodes build requirement-spec environments into one cache (they share this
    # machine's disk, so its file lock is the one concurrent cells of a node wait on),
    # and no package index answers: only local wheels install.
    saved = {k: os.environ.get(k) for k in ("TFVARIANTS_ENVS", "PIP_INDEX_URL")}
    os.environ["TFVARIANTS_ENVS"] = str(tmp_path_factory.mktemp("envs"))
    os.environ["PIP_INDEX_URL"] = "http://127.0.0.1:9/simple"
    local = {"node_ip_address": "127.0.0.1", "include_dashboard": False}
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, **local})
    nodes = {
        "sim-1": c.add_node(num_cpus=1, resources={"sim-1": 1}, **local),
        "sim-2": c.add_node(num_cpus=1, resources={"sim-2": 1}, **local),
    }
    c.wait_for_nodes()
    c.test_nodes = nodes
    yield c
    c.shutdown()
    signal.signal(signal.SIGINT, previous)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def setup(tmp_path):
    control = tmp_path / "control"
    control.mkdir()
    stub = tmp_path / "stub_python"
    stub.write_text(STUB.format(python=sys.executable, root=str(ROOT), control=str(control)))
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    variants = tmp_path / "variants.toml"
    variants.write_text(f'[variants.stub]\nkind = "venv"\npython = "{stub}"\n')
    catalog = tmp_path / "sim.toml"
    catalog.write_text(CATALOG)
    return tmp_path, control, variants, catalog


def _compare(cluster, tmp_path, variants, catalog, *extra, names="stub", out="run"):
    cmd = [
        sys.executable, "-m", "tfvariants", "compare", "--executor", "ray",
        "--ray-address", cluster.address, "--variants", names, "--variants-file", str(variants),
        "--workloads", "mnist_mlp", "--pricing", str(catalog),
        "--out", str(tmp_path / out), "--output", str(tmp_path / "report" / "index.html"),
        *extra,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path)  # fmt: skip


def _cells(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((out / "cells").glob("*.json"))}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_matrix_across_two_instance_types_node_loss_and_resume(cluster, setup):
    tmp_path, control, variants, catalog = setup
    (control / "hang-1-0").touch()  # the first sim-1 cell hangs until its node is killed
    proc = _compare(cluster, tmp_path, variants, catalog, "--threads", "1,2", "--repeats", "3",
                    "--preempt-retries", "0")  # fmt: skip
    pid_file = control / "pid"
    deadline = time.monotonic() + 90
    while not pid_file.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert pid_file.exists(), proc.communicate()[1]
    time.sleep(0.3)
    hung = int(pid_file.read_text())
    cluster.remove_node(cluster.test_nodes["sim-1"])
    # A replacement of the same type joins (an autoscaler would start one).
    cluster.test_nodes["sim-1"] = cluster.add_node(
        num_cpus=1, resources={"sim-1": 1}, node_ip_address="127.0.0.1"
    )
    _stdout, stderr = proc.communicate(timeout=150)
    assert proc.returncode == 1, stderr  # one cell failed

    out = tmp_path / "run"
    cells = _cells(out)
    assert len(cells) == 6
    lost = cells.pop("mnist_mlp__stub__t1__r0")
    assert lost["status"] == "failed"
    assert "node lost mid-cell (sim-1)" in lost["reason"]
    assert all(r["status"] == "ok" for r in cells.values()), {
        k: r.get("reason") for k, r in cells.items()
    }
    # Ray's dump about the dead node is in the cell's log, not on the terminal.
    log = (out / "logs" / "mnist_mlp__stub__t1__r0.log").read_text()
    assert "node it was running on is dead" in log
    assert "node it was running on is dead" not in stderr
    assert "mnist_mlp__stub__t1__r0" in stderr  # the summary names the failed cell
    # The worker of the lost cell did not outlive its node.
    deadline = time.monotonic() + 15
    while _alive(hung) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(hung)

    # Each cell ran on a node of its type, with the node's facts recorded...
    by_node: dict[str, list[tuple[float, float]]] = {}
    for r in cells.values():
        node = r["node"]
        assert node["instance"] == f"sim-{r['cell']['threads']}"
        assert node["simulated"] is True and node["real_instance"] is False
        assert node["kind"].startswith("simulated")
        assert node["cpus"] == os.cpu_count() and node["hostname"] and node["cpu_model"]
        assert r["requested"]["threads"] == r["cell"]["threads"]
        by_node.setdefault(node["node_id"], []).append(
            (node["task_started_at"], node["task_finished_at"])
        )
    # ...and never two at a time on one node.
    assert len(by_node) == 2  # sim-2 and the replacement sim-1 (the lost one finished none)
    for spans in by_node.values():
        spans.sort()
        for (_s0, e0), (s1, _e1) in zip(spans, spans[1:], strict=False):
            assert s1 >= e0, f"overlapping cells on one node: {spans}"
    run = json.loads((out / "run.json").read_text())
    declared = [h for h in run["hosts"] if h["kind"] == "ray-node"]
    assert {h["node_id"] for h in declared} >= set(by_node)
    assert all(h["simulated"] is True for h in declared)

    # --resume runs only the lost cell and leaves the finished ones untouched.
    before = {cid: _digest(out / "cells" / f"{cid}.json") for cid in cells}
    proc = _compare(cluster, tmp_path, variants, catalog, "--resume")
    _stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    after = _cells(out)
    assert after["mnist_mlp__stub__t1__r0"]["status"] == "ok"
    assert {cid: _digest(out / "cells" / f"{cid}.json") for cid in cells} == before
    assert "1 run now" in stderr


def _wait_for_pid(control: Path, proc) -> int:
    pid_file = control / "pid"
    deadline = time.monotonic() + 90
    while not pid_file.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert pid_file.exists(), proc.communicate()[1]
    time.sleep(0.3)
    pid = int(pid_file.read_text())
    pid_file.unlink()
    return pid


def _replace_node(cluster, inst: str) -> None:
    """The node of ``inst`` is lost (a spot preemption); a replacement joins."""
    cluster.remove_node(cluster.test_nodes[inst])
    cluster.test_nodes[inst] = cluster.add_node(
        num_cpus=1, resources={inst: 1}, node_ip_address="127.0.0.1"
    )


def test_a_node_lost_mid_cell_reruns_the_cell_on_a_replacement(cluster, setup):
    tmp_path, control, variants, catalog = setup
    (control / "hang-1-0").touch()
    proc = _compare(cluster, tmp_path, variants, catalog, "--threads", "1", "--repeats", "2")
    _wait_for_pid(control, proc)
    time.sleep(1.0)  # the lost attempt ran this long at least
    _replace_node(cluster, "sim-1")
    _stdout, stderr = proc.communicate(timeout=150)
    assert proc.returncode == 0, stderr
    cells = _cells(tmp_path / "run")
    assert {r["status"] for r in cells.values()} == {"ok"}
    rerun = cells["mnist_mlp__stub__t1__r0"]
    (lost,) = rerun["attempts"]
    assert lost["instance"] == "sim-1" and lost["reason"].startswith("node lost mid-cell")
    assert 1.0 <= lost["lost_s"] < 120
    assert "attempts" not in cells["mnist_mlp__stub__t1__r1"]
    assert "rerunning on another sim-1 node (1/3)" in stderr
    assert f"preemptions: 1 preemption (sim-1), {lost['lost_s']:.0f} s lost" in stderr
    html = (tmp_path / "report" / "index.html").read_text()
    assert "1 preemption (sim-1), " in html and " s lost ($0.0" in html


def test_every_node_of_a_type_lost_fails_the_cell_past_the_limit(cluster, setup):
    tmp_path, control, variants, catalog = setup
    (control / "always-1-0").touch()  # every attempt hangs until its node goes
    proc = _compare(cluster, tmp_path, variants, catalog, "--threads", "1", "--repeats", "1",
                    "--preempt-retries", "2")  # fmt: skip
    for _ in range(3):
        _wait_for_pid(control, proc)
        _replace_node(cluster, "sim-1")
    _stdout, stderr = proc.communicate(timeout=150)
    assert proc.returncode == 1, stderr
    failed = _cells(tmp_path / "run")["mnist_mlp__stub__t1__r0"]
    assert failed["status"] == "failed"
    assert "node lost mid-cell (sim-1) 3 times, past the limit of 2 reruns" in failed["reason"]
    assert [a["attempt"] for a in failed["attempts"]] == [1, 2, 3]
    assert "preemptions: 3 preemptions (sim-1)" in stderr


def test_missing_node_type_and_missing_variant_fail_with_reasons(cluster, setup):
    tmp_path, control, variants, catalog = setup
    variants.write_text(
        variants.read_text()
        + '[variants.nowhere]\nkind = "venv"\npython = "/no/such/python"\n'
        + '[variants.img]\nkind = "image"\nimage = "tfvariants-test-absent:1"\nengine = "docker"\n'
    )
    proc = _compare(cluster, tmp_path, variants, catalog, "--threads", "2,4", "--repeats", "1",
                    "--node-wait", "1", names="stub,nowhere,img")  # fmt: skip
    _o, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    cells = _cells(tmp_path / "run")
    assert cells["mnist_mlp__stub__t2__r0"]["status"] == "ok"
    for cid in ("mnist_mlp__stub__t4__r0", "mnist_mlp__nowhere__t4__r0"):
        assert cells[cid]["status"] == "failed"
        assert "no node of type sim-4 joined the cluster within 1 s" in cells[cid]["reason"]
    missing = cells["mnist_mlp__nowhere__t2__r0"]
    assert missing["status"] == "failed"
    assert "variant 'nowhere' is not available on node" in missing["reason"]
    assert "interpreter not found: /no/such/python" in missing["reason"]
    image = cells["mnist_mlp__img__t2__r0"]  # the dry run said: skipped on the nodes
    assert image["status"] == "skipped", image["reason"]
    assert "variant 'img' is not available on node" in image["reason"]


def test_ctrl_c_stops_the_cells_in_flight_and_resume_finishes(cluster, setup):
    import signal

    tmp_path, control, variants, catalog = setup
    (control / "hang-2-0").touch()
    proc = _compare(cluster, tmp_path, variants, catalog, "--threads", "2", "--repeats", "2")
    pid_file = control / "pid"
    deadline = time.monotonic() + 90
    while not pid_file.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert pid_file.exists(), proc.communicate()[1]
    hung = int(pid_file.read_text())
    proc.send_signal(signal.SIGINT)
    _o, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr
    assert not (tmp_path / "run" / "cells" / "mnist_mlp__stub__t2__r0.json").exists()
    deadline = time.monotonic() + 15
    while _alive(hung) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(hung)  # the node stopped the worker of the cancelled cell
    proc = _compare(cluster, tmp_path, variants, catalog, "--resume")
    _o, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert {r["status"] for r in _cells(tmp_path / "run").values()} == {"ok"}


def test_cell_timeout_on_a_node_is_a_timeout_result(cluster, setup):
    tmp_path, control, variants, catalog = setup
    (control / "hang-2-0").touch()
    proc = _compare(cluster, tmp_path, variants, catalog, "--threads", "2", "--repeats", "1",
                    "--timeout", "3")  # fmt: skip
    _o, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    result = _cells(tmp_path / "run")["mnist_mlp__stub__t2__r0"]
    assert result["status"] == "timeout" and "3 s timeout" in result["reason"]
    assert result["node"]["instance"] == "sim-2"


def test_study_preset_with_budget_runs_waves_and_the_report_says_where(cluster, setup):
    """The study preset at quick scale on the two simulated node types, with --budget:
    the adaptive rounds run as waves of Ray tasks (the stopping rule of local runs), and
    the report names each configuration's node type and that the nodes were simulated."""
    tmp_path, _control, variants, catalog = setup
    proc = _compare(
        cluster, tmp_path, variants, catalog, "--preset", "study-2017", "--quick",
        "--threads", "1,2", "--workloads", "mnist_mlp,mnist_cnn", "--repeats", "3",
        "--max-repeats", "5", "--budget", "10m",
    )  # fmt: skip
    _stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    out = tmp_path / "run"
    run = json.loads((out / "run.json").read_text())
    assert run["options"]["preset"]["name"] == "study-2017"
    adaptive = run["adaptive"]
    assert adaptive["budget_s"] == 600 and adaptive["stopped"]
    assert adaptive["rounds"] and all(r["wave"] == "ray" for r in adaptive["rounds"])
    cells = _cells(out)
    extra = [c for c in cells.values() if c["cell"]["repeat"] >= 3]
    assert extra and all(c["node"]["executor"] == "ray" for c in extra)
    assert len(cells) == 2 * 2 * 3 + sum(r["cells"] for r in adaptive["rounds"])
    html = (tmp_path / "report" / "index.html").read_text()
    section = html[html.index('id="where-ran"') :]
    section = section[: section.index("</table>")]
    for threads in (1, 2):
        row = next(r for r in section.split("<tr>") if f"stub@{threads}<" in r)
        assert f"sim-{threads}" in row and "simulated node" in row
    assert "Adaptive repeats: looks after" in html


def _stub_wheel(folder: Path) -> Path:
    """A tiny wheel whose 'tensorflow' and 'keras' import slowly in the build's import
    check (20 s): the build then holds the environment's lock long enough for the other
    node's cell to wait on it, whatever its worker's start-up takes."""
    import zipfile

    files = {
        # slow only in the build's import check (python -c), not in the cells' workers
        "tensorflow/__init__.py": "import sys, time\nif sys.argv[:1] == ['-c']:\n"
        "    time.sleep(20)\n__version__ = '0.0+stub'\n",
        "keras/__init__.py": "__version__ = '0.0+stub'\n",
        "tfstub-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tfstub\nVersion: 0.1\n",
        "tfstub-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    path = folder / "tfstub-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr(
            "tfstub-0.1.dist-info/RECORD",
            "".join(f"{n},,\n" for n in [*files, "tfstub-0.1.dist-info/RECORD"]),
        )
    return path


def test_a_requirement_spec_variant_is_built_on_the_nodes_once(cluster, setup):
    """Cells of a requirement-spec variant start together on two nodes (one machine,
    one environment cache): one builds it, the other waits on the lock and reuses it;
    both results name the environment. A spec no package index serves fails each of its
    cells with a one-line reason, quickly."""
    tmp_path, _control, variants, catalog = setup
    wheel = _stub_wheel(tmp_path)
    variants.write_text(
        variants.read_text()
        + f'[variants.req]\nkind = "requirements"\nrequirements = ["tfstub @ {wheel.as_uri()}"]\n'
        + '[variants.noindex]\nkind = "requirements"\nrequirements = ["tensorflow-cpu==2.14.0"]\n'
    )
    started = time.monotonic()
    proc = _compare(cluster, tmp_path, variants, catalog, "--threads", "1,2", "--repeats", "1",
                    names="req,stub,noindex")  # fmt: skip
    _o, stderr = proc.communicate(timeout=300)
    assert time.monotonic() - started < 240, stderr
    cells = _cells(tmp_path / "run")
    assert {cells[f"mnist_mlp__stub__t{t}__r0"]["status"] for t in (1, 2)} == {"ok"}
    envs = [cells[f"mnist_mlp__req__t{t}__r0"]["node"]["environment"] for t in (1, 2)]
    assert envs[0]["key"] == envs[1]["key"] and len(envs[0]["key"]) == 16
    assert envs[0]["import_check"] == "tensorflow 0.0+stub keras 0.0+stub imports"
    done = sorted(e["this_cell"] for e in envs)
    assert done[0].startswith("built ") and done[1].endswith("(built meanwhile)"), done
    logs = [(tmp_path / "run" / "logs" / f"mnist_mlp__req__t{t}__r0.log").read_text()
            for t in (1, 2)]  # fmt: skip
    assert sum("[build] installing tfstub" in log for log in logs) == 1
    for t in (1, 2):
        failed = cells[f"mnist_mlp__noindex__t{t}__r0"]
        assert failed["status"] == "failed"
        reason = failed["reason"]
        assert "variant 'noindex': building its environment:" in reason, reason
        assert "\n" not in reason and "Connection refused" in reason


# A TensorFlow build compiled for an extension no CPU here has (AVX512_FP16 stands for
# it): its package folder holds a framework library, and importing it stops in
# TensorFlow's cpu_feature_guard with the guard's own message.
UNRUNNABLE = """#!{python}
import sys
code = sys.argv[2] if sys.argv[1:2] == ["-c"] else ""
if "submodule_search_locations" in code:
    print({tf_dir!r})
elif code == "import tensorflow":
    sys.stderr.write("F cpu_feature_guard.cc:218] The TensorFlow library was compiled to use "
                     "AVX512_FP16 instructions, but these aren't available on your machine.\\n")
    sys.exit(134)
elif code:
    sys.exit(0)  # found by the readiness probe
else:
    sys.exit("this build runs no cell: the gate skips it")
"""


def test_the_isa_gate_runs_on_the_node_and_skips_a_build_it_cannot_run(cluster, setup, monkeypatch):
    """The gate is the node's: with it off on the driver, a build the node's CPU cannot
    run is still recorded as skipped by the node, with the guard's reason."""
    tmp_path, _control, variants, catalog = setup
    tf_dir = tmp_path / "unrunnable" / "tensorflow"
    tf_dir.mkdir(parents=True)
    (tf_dir / "libtensorflow_framework.so.2").write_text("a stand-in: tests/test_ray_cluster.py")
    python = tmp_path / "unrunnable" / "python"
    python.write_text(UNRUNNABLE.format(python=sys.executable, tf_dir=str(tf_dir)))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    variants.write_text(
        variants.read_text() + f'[variants.fp16]\nkind = "venv"\npython = "{python}"\n'
    )
    monkeypatch.setenv("TFVARIANTS_ISA_GATE", "off")  # the driver's; the nodes keep theirs
    proc = _compare(cluster, tmp_path, variants, catalog, "--threads", "1,2", "--repeats", "1",
                    names="fp16,stub")  # fmt: skip
    _o, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr
    cells = _cells(tmp_path / "run")
    for t, inst in ((1, "sim-1"), (2, "sim-2")):
        assert cells[f"mnist_mlp__stub__t{t}__r0"]["status"] == "ok"
        skipped = cells[f"mnist_mlp__fp16__t{t}__r0"]
        assert skipped["status"] == "skipped", skipped.get("reason")
        assert skipped["reason"].startswith("its TensorFlow is compiled for AVX512_FP16, which ")
        assert skipped["node"]["instance"] == inst and skipped["node"]["node_id"]
