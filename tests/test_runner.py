"""The runner against stub workers: a 'venv' variant whose interpreter is a script.

These exercise the real process handling (signals, timeouts, missing or bad result
files, the environment allowlist, CPU pinning) without TensorFlow.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from pathlib import Path

import pytest

from tfvariants.execute import containers
from tfvariants.execute.runner import RunOptions, run_cell
from tfvariants.plan.cell import Cell
from tfvariants.plan.topology import LogicalCpu, Topology
from tfvariants.store.result import load_result
from tfvariants.store.runfolder import RunFolder
from tfvariants.variants import WORKLOADS_PARENT, Variant
from tfvariants.variants import registry as variants_mod

STUB_HEAD = f"""#!{sys.executable}
import json, os, sys, time
args = sys.argv[1:]
request = json.loads(args[args.index("--request") + 1])
result_path = request["result"]
cell = request["cell"]
def write_ok(extra=None):
    data = {{"schema_version": 1, "kind": "tfvariants.cell", "cell": cell, "status": "ok",
            "timing": {{"epoch_times_s": [1.0, 0.5]}},
            "applied": {{"affinity": sorted(os.sched_getaffinity(0))}},
            "seen_env": dict(os.environ)}}
    data.update(extra or {{}})
    tmp = result_path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh)
    os.replace(tmp, result_path)
"""

TOPO = Topology(cpus=tuple(LogicalCpu(c, c, 0, 0) for c in sorted(os.sched_getaffinity(0))))


def stub_variant(tmp_path: Path, body: str, env: dict | None = None) -> Variant:
    script = tmp_path / "stub_python"
    script.write_text(STUB_HEAD + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return Variant(name="stub", kind="venv", python=str(script), env=env or {})


def run(tmp_path, body, timeout=30.0, threads=1, env=None):
    variant = stub_variant(tmp_path, body, env)
    cell = Cell(variant="stub", threads=threads, workload="mnist_mlp", repeat=0)
    out = tmp_path / "run"
    stored = run_cell(cell, variant, RunOptions(timeout_s=timeout), RunFolder(out), topology=TOPO)
    path = out / "cells" / f"{cell.cell_id}.json"
    assert stored.path == path and stored.status == stored.raw["status"]
    return stored.raw, path


def test_ok_result_is_stored_with_runner_info(tmp_path):
    result, path = run(tmp_path, "write_ok()\n")
    assert result["status"] == "ok"
    stored = load_result(path)
    assert stored["runner"]["exit_code"] == 0
    assert stored["runner"]["variant_kind"] == "venv"
    assert "workloads.worker" in stored["runner"]["command"]
    # no scratch folder left behind
    assert [p.name for p in path.parent.parent.iterdir() if p.name.startswith(".")] == []


def test_environment_is_an_allowlist_plus_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_API_TOKEN", "secret-value")
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")  # caller's setting must not leak
    result, _ = run(tmp_path, "write_ok()\n", env={"TF_ENABLE_ONEDNN_OPTS": "1"})
    seen = result["seen_env"]
    assert "MY_API_TOKEN" not in seen
    assert seen["TF_ENABLE_ONEDNN_OPTS"] == "1"
    assert seen["TF_NUM_INTRAOP_THREADS"] == "1"
    assert seen["OMP_NUM_THREADS"] == "1"
    assert seen["PYTHONPATH"] == WORKLOADS_PARENT


def test_worker_is_pinned_before_it_starts(tmp_path):
    result, _ = run(tmp_path, "write_ok()\n", threads=1)
    assert result["applied"]["affinity"] == [min(os.sched_getaffinity(0))]


def test_the_runner_returns_a_typed_record_of_what_it_stored(tmp_path):
    """run_cell's record: the stored file's status, reason and path, and how the worker ended."""
    variant = stub_variant(tmp_path, "os.kill(os.getpid(), 9)\n")
    cell = Cell(variant="stub", threads=1, workload="mnist_mlp", repeat=0)
    stored = run_cell(
        cell, variant, RunOptions(timeout_s=30), RunFolder(tmp_path / "r"), topology=TOPO
    )
    assert (stored.cell_id, stored.status) == (cell.cell_id, "failed")
    assert stored.reason == "worker killed by SIGKILL"
    assert stored.path == tmp_path / "r" / "cells" / f"{cell.cell_id}.json"
    assert dict(stored.raw) == load_result(stored.path)
    assert stored.outcome is not None and stored.outcome.exit_code == -9
    assert not stored.outcome.timed_out
    with pytest.raises(TypeError):
        stored.raw["status"] = "ok"  # type: ignore[index]  # read-only: the file is the truth


def test_a_skipped_cells_record_has_no_process_outcome(tmp_path, monkeypatch):
    monkeypatch.setattr(variants_mod, "_host_has_gpu", lambda: False)
    variant = Variant(name="gpu", kind="local", device="gpu")
    cell = Cell(variant="gpu", threads=1, workload="mnist_mlp")
    stored = run_cell(cell, variant, RunOptions(), RunFolder(tmp_path), topology=TOPO)
    assert stored.status == "skipped" and stored.outcome is None
    assert stored.reason and "no GPU" in stored.reason
    assert dict(stored.raw) == load_result(stored.path)


def test_sigkill_becomes_a_failed_result(tmp_path):
    body = "print('about to die', file=sys.stderr, flush=True)\nos.kill(os.getpid(), 9)\n"
    result, path = run(tmp_path, body)
    assert result["status"] == "failed"
    assert result["reason"] == "worker killed by SIGKILL"
    assert "about to die" in result["stderr_tail"]
    assert load_result(path)["status"] == "failed"


def test_sigsegv_is_named(tmp_path):
    result, _ = run(tmp_path, "os.kill(os.getpid(), 11)\n")
    assert result["reason"] == "worker killed by SIGSEGV"


def test_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "child.pid"
    body = (
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        f"open({str(marker)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    # generous: the stub must start its child before the timeout, even on a busy machine
    result, _ = run(tmp_path, body, timeout=6)
    assert result["status"] == "timeout"
    assert "6 s timeout" in result["reason"]
    assert time.monotonic() - started < 6 + 10  # SIGTERM took effect, no 60 s wait
    child = int(marker.read_text())
    time.sleep(0.2)
    assert (
        not Path(f"/proc/{child}").exists()
        or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    )


def test_exit_without_result_file(tmp_path):
    result, _ = run(tmp_path, "print('nothing to see')\nsys.exit(0)\n")
    assert result["status"] == "failed"
    assert "wrote no result file" in result["reason"]
    assert "nothing to see" in result["stderr_tail"]


def test_corrupt_result_file(tmp_path):
    result, _ = run(tmp_path, "open(result_path, 'w').write('{not json')\n")
    assert result["status"] == "failed"
    assert result["reason"].startswith("invalid result file")


def test_result_for_another_cell_is_rejected(tmp_path):
    result, _ = run(tmp_path, "cell['repeat'] = 7\nwrite_ok()\n")
    assert result["status"] == "failed"
    assert "different cell" in result["reason"]


def test_worker_reported_failure_keeps_its_reason(tmp_path):
    body = (
        "print('Traceback: boom', file=sys.stderr)\n"
        "write_ok({'status': 'failed', 'reason': 'DataUnavailable: no mnist.npz'})\nsys.exit(1)\n"
    )
    result, _ = run(tmp_path, body)
    assert result["status"] == "failed"
    assert result["reason"] == "DataUnavailable: no mnist.npz"
    assert "Traceback: boom" in result["stderr_tail"]


def test_missing_interpreter(tmp_path):
    variant = Variant(name="stub", kind="venv", python=str(tmp_path / "nope"))
    cell = Cell(variant="stub", threads=1, workload="mnist_mlp")
    result = run_cell(cell, variant, RunOptions(), RunFolder(tmp_path), topology=TOPO).raw
    assert result["status"] == "failed" and "cannot start worker" in result["reason"]


def test_gpu_variant_without_gpu_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(variants_mod, "_host_has_gpu", lambda: False)
    variant = Variant(name="gpu", kind="local", device="gpu")
    cell = Cell(variant="gpu", threads=1, workload="mnist_mlp")
    result = run_cell(cell, variant, RunOptions(), RunFolder(tmp_path), topology=TOPO).raw
    assert result["status"] == "skipped"
    assert "no GPU" in result["reason"]
    assert (
        json.loads((tmp_path / "cells" / f"{cell.cell_id}.json").read_text())["status"] == "skipped"
    )


@pytest.mark.parametrize("repeat", [0, 3])
def test_cell_id(repeat):
    assert Cell("pip", 16, "mnist_cnn", repeat).cell_id == f"mnist_cnn__pip__t16__r{repeat}"
    # a workload file: its stem + a hash of its path (two files x.py never share an id)
    assert re.fullmatch(
        r"my_model@[0-9a-f]{10}__pip__t2__r0", Cell("pip", 2, "/x/my_model.py").cell_id
    )
    assert Cell("pip", 2, "/x/my_model.py").cell_id != Cell("pip", 2, "/y/my_model.py").cell_id


def fake_engine(tmp_path: Path, running: str) -> tuple[Path, Path]:
    """An engine CLI that logs its arguments; ``container inspect`` answers ``running``
    (or fails, like an engine asked about a container that is gone, when empty)."""
    calls = tmp_path / "calls"
    engine = tmp_path / "podman"
    engine.write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\n'
        f'if [ "$1" = container ]; then [ -n "{running}" ] || exit 1; echo {running}; fi\n'
    )
    engine.chmod(0o755)
    return engine, calls


@pytest.mark.parametrize("running", ["true", "false", ""])
def test_a_cells_container_is_removed_after_it_and_named_if_it_still_ran(tmp_path, running):

    engine, calls = fake_engine(tmp_path, running)
    left = containers.remove_container([str(engine), "run", "--rm", "--name", "tfvariants-x1", "i"])
    assert containers.remove_container([sys.executable, "-m", "workloads.worker"]) is None
    said = calls.read_text().splitlines()
    assert said[0] == "container inspect --format {{.State.Running}} tfvariants-x1"
    if running:  # there: removed, whatever its state; named only when it was still running
        assert said[1:] == ["rm -f --time 2 tfvariants-x1"]
    else:
        assert said[1:] == []
    assert (left is not None) == (running == "true")
    if left is not None:
        assert left.name == "tfvariants-x1" and left.how == "container"


def test_runner_records_this_hosts_id_over_a_containers(tmp_path):
    from tfvariants.store.rundir import host_of
    from workloads.envprobe import host_id

    body = 'write_ok({"environment": {"host_id": "c0ffee", "in_container": True}})\n'
    _, path = run(tmp_path, body)
    stored = load_result(path)
    assert stored["runner"]["host_id"] == host_id() != "c0ffee"
    assert host_of(stored) == host_id()


def test_a_sigill_that_still_happens_is_named_as_such(tmp_path):
    # The up-front gate cannot see everything (an image, an op only some models reach).
    result, _ = run(tmp_path, "os.kill(os.getpid(), 4)\n")
    assert result["status"] == "failed"
    assert result["reason"].startswith("worker killed by SIGILL: the variant's binary used an "
                                       "instruction this CPU lacks")  # fmt: skip
    assert "rerunning will not help" in result["reason"]


def test_an_ok_cells_children_are_killed_and_named(tmp_path):
    import psutil

    body = (
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '599'])\n"
        "daemon = subprocess.Popen(['/bin/sleep', '598'], start_new_session=True, env={})\n"
        "write_ok({'pids': [child.pid, daemon.pid]})\n"
    )
    result, path = run(tmp_path, body)
    assert result["status"] == "ok"
    pids = load_result(path)["pids"]
    for pid in pids:
        with pytest.raises(psutil.NoSuchProcess):
            psutil.Process(pid).status()  # killed and reaped: not even a zombie
    killed = load_result(path)["runner"]["killed"]
    assert [(k["pid"], k["name"], k["how"]) for k in killed] == [
        (pids[0], "sleep", "process group"),
        (pids[1], "sleep", "escaped"),
    ]


def test_a_quiet_cell_kills_nothing(tmp_path):
    result, path = run(tmp_path, "write_ok()\n")
    assert result["status"] == "ok" and load_result(path)["runner"]["killed"] == []


def test_a_huge_output_is_cut_in_the_middle_of_the_log(tmp_path):
    """5 MiB printed: the log keeps the first and the last MiB and says what it cut."""
    body = (
        "sys.stdout.write('HEAD\\n' + 'x' * (5 << 20) + '\\nTAIL\\n')\n"
        "sys.stdout.flush()\n"
        "write_ok()\n"
    )
    result, path = run(tmp_path, body)
    log = Path(result["runner"]["log"]).read_bytes()
    assert result["status"] == "ok" and len(log) < (2 << 20) + 200
    assert log.startswith(b"HEAD\n") and log.endswith(b"\nTAIL\n")
    cut = (5 << 20) + 11 - (2 << 20)
    assert result["runner"]["log_cut_bytes"] == cut
    assert f"[tfvariants: {cut} bytes of output cut here".encode() in log


def test_a_log_on_a_full_disk_ends_the_cell_as_a_runner_error(tmp_path, monkeypatch):
    """A workload printing 100 MB onto a full disk: the failed write is the cell's
    recorded reason and the worker is stopped at once (nothing else drains its pipe, so
    it would hang to the cell timeout); no thread dies with a traceback."""
    import contextlib
    import errno
    import threading

    class FullDisk:
        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def flush(self) -> None:
            pass

    @contextlib.contextmanager
    def full_log(self, cid):  # noqa: ANN001, ANN202
        yield FullDisk()

    died: list = []
    monkeypatch.setattr(threading, "excepthook", died.append)
    monkeypatch.setattr(RunFolder, "log_file", full_log)
    body = "for _ in range(1600):\n    sys.stdout.write('x' * 65536)\nwrite_ok()\n"
    t0 = time.monotonic()
    result, path = run(tmp_path, body, timeout=120)
    assert time.monotonic() - t0 < 30, "the worker was left to its timeout"
    assert result["status"] == "failed", result.get("reason")
    assert "runner error: cannot write the cell's log: No space left on device" in result["reason"]
    assert died == [] and load_result(path)["status"] == "failed"


@pytest.mark.parametrize("held", ["finished", "unreadable"])
def test_a_cell_whose_slot_is_taken_runs_nothing_and_keeps_the_log(held, tmp_path):
    """A tampered file at a planned cell's name: refused before the worker runs, its
    log not replaced by a run whose result could never be stored."""
    from tfvariants.store.runfolder import StoreError

    cell = Cell(variant="stub", threads=1, workload="mnist_mlp", repeat=0)
    out = tmp_path / "run"
    (out / "cells").mkdir(parents=True)
    (out / "logs").mkdir()
    ok = {"schema_version": 1, "kind": "tfvariants.cell", "cell": cell.to_dict(), "status": "ok"}
    ok["timing"] = {"epoch_times_s": [1.0, 0.5]}
    text = json.dumps(ok) if held == "finished" else "{tampered"
    (out / "cells" / f"{cell.cell_id}.json").write_text(text)
    (out / "logs" / f"{cell.cell_id}.log").write_text("the measured run's log")
    variant = stub_variant(tmp_path, "write_ok()\n")
    with pytest.raises(StoreError):
        run_cell(cell, variant, RunOptions(timeout_s=30), RunFolder(out), topology=TOPO)
    assert (out / "logs" / f"{cell.cell_id}.log").read_text() == "the measured run's log"
    assert sorted(p.name for p in (out / "logs").iterdir()) == [f"{cell.cell_id}.log"]


def test_the_capped_log_holds_a_bounded_amount_whatever_is_printed():
    import io

    from tfvariants.execute.process import CappedLog

    sink = io.BytesIO()
    log = CappedLog(sink, head_bytes=1000, tail_bytes=2000)
    chunk = bytes(range(256)) * 256  # 64 KiB
    for _ in range(1600):  # 100 MiB
        log.feed(chunk)
        assert len(log._tail) <= 2 * 2000 + len(chunk) and len(log._last) <= 3 * len(chunk)
    log.finish()
    assert log.total == 1600 * len(chunk) and log.cut == log.total - 3000
    kept = sink.getvalue()
    assert kept[:1000] == chunk[:1000] and kept.endswith(chunk[-2000:])
    assert len(kept) < 3000 + 200
    log.feed(b"late")  # a writer the sweep missed: nothing more reaches the closed log
    assert sink.getvalue() == kept


def test_a_child_that_ended_on_its_own_is_reaped_not_reported(tmp_path):
    import psutil

    body = (
        "import subprocess\n"
        "done = subprocess.Popen(['true'], start_new_session=True)\n"
        "time.sleep(0.3)\n"  # it has ended; never waited for, it is a zombie
        "write_ok({'pids': [done.pid]})\n"
    )
    result, path = run(tmp_path, body)
    assert result["status"] == "ok" and load_result(path)["runner"]["killed"] == []
    with pytest.raises(psutil.NoSuchProcess):
        psutil.Process(load_result(path)["pids"][0]).status()


FAKE_PODMAN = f"""#!{sys.executable}
# A container engine's client: `run` writes the cell's result into the /out mount and
# leaves a helper behind that ends on its own (like podman's conmon and its cleanup).
import json, os, subprocess, sys
args = sys.argv[1:]
with open("ENGINE_LOG", "a") as fh:
    fh.write(" ".join(args[:2]) + "\\n")
if args[0] != "run":
    sys.exit(1)  # container inspect: gone (--rm did its work)
out = next(v.split(":")[0] for v in args if v.endswith(":/out:rw"))
request = json.loads(args[-1])
with open(os.path.join(out, "result.json"), "w") as fh:
    json.dump({{"schema_version": 1, "kind": "tfvariants.cell", "cell": request["cell"],
               "status": "ok", "timing": {{"epoch_times_s": [1.0, 0.5]}}}}, fh)
subprocess.Popen(["sleep", "LINGER"], start_new_session=True)
"""


@pytest.mark.parametrize("linger", ["0.5", "599"])
def test_a_container_engines_helpers_are_its_own(tmp_path, monkeypatch, linger):
    """What an engine's client leaves on the host (re-parented to it) is the engine's:
    one that ends on its own is reaped, one that stays (a rootless pause process) is
    neither killed nor reported; the workload ran in the container, removed by name."""
    import psutil

    from tfvariants.execute import process
    from tfvariants.variants import engine as engines

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = FAKE_PODMAN.replace("LINGER", linger).replace("ENGINE_LOG", str(tmp_path / "engine.log"))
    (bin_dir / "podman").write_text(fake)
    (bin_dir / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(engines, "require_engine", lambda preferred=None: "podman")
    monkeypatch.setattr(engines, "image_exists", lambda engine, image: True)
    monkeypatch.setattr(Variant, "skip_reason", lambda self: None)
    monkeypatch.setattr(process, "ENGINE_GRACE_S", 3.0)
    variant = Variant(name="img", kind="image", image="tfvariants/x:1", engine="podman")
    cell = Cell(variant="img", threads=1, workload="mnist_mlp", repeat=0)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    result = run_cell(cell, variant, RunOptions(timeout_s=30), RunFolder(tmp_path / "r")).raw
    helpers = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    try:
        assert result["status"] == "ok", result.get("reason")
        assert result["runner"]["killed"] == []
        alive = [p.status() != psutil.STATUS_ZOMBIE for p in helpers]
        assert alive == ([True] if linger == "599" else [])  # ended: reaped, no zombie
        log = (tmp_path / "engine.log").read_text().splitlines()
        assert log == ["run --rm", "container inspect"]
    finally:
        for p in helpers:
            p.kill()
        psutil.wait_procs(helpers, timeout=5)
