"""The run folder's owner: collision-free cell ids (and the migration of old names), the
per-folder lock, writes that never follow a link or replace a finished result, private
scratch folders removed on every exit path, and the report slot."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import resultfactory as rf
from test_runner import TOPO, stub_variant

from tfvariants.cli import main
from tfvariants.errors import UserError
from tfvariants.execute import runner
from tfvariants.execute.record import StoredCell
from tfvariants.execute.runner import RunOptions, run_cell
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.cell import MAX_ID_BYTES, Cell, cell_id, encode_part, legacy_cell_id
from tfvariants.plan.serve import ServeCell
from tfvariants.plan.spec import MatrixSpec
from tfvariants.store import cleanup, lock
from tfvariants.store.rundir import load_run_dir
from tfvariants.store.runfile import RUN_SCHEMA_VERSION, load_run, local_host, new_run
from tfvariants.store.runfolder import RunFolder
from workloads.envprobe import host_id

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD_FILE = """SPEC = {"name": "%s", "batch_size": 32, "epochs": 1}
def load_data(source, *, data_dir, samples, seed):
    raise AssertionError
def build_model(keras, *, compile_options):
    raise AssertionError
"""


def fake_run_cell(calls: list[str]):
    """A runner that stores an ok result where the real one would, without a worker."""

    def run(cell, variant, options, folder, at=None):
        calls.append(cell.cell_id)
        result = rf.make_result(cell.variant, cell.threads, cell.workload, cell.repeat)
        result["runner"]["host_id"] = host_id()
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.write_text(json.dumps(result))
        return StoredCell.written(cell.cell_id, result, path)

    return run


# ---- ids ----

TRICKY = ["x__y", "y", "x", "x_", "_x", "x___y", "a%5Fb", "a_%5Fb", "a@b", "a/b", "~", "_",
          "__", "a__", "%", "%25", "é__ü", "a b", ""]  # fmt: skip


def test_encoded_parts_never_hold_the_separator_and_decode_back():
    from urllib.parse import unquote

    for text in TRICKY:
        part = encode_part(text)
        assert "__" not in part and not part.startswith("_") and not part.endswith("_")
        assert unquote(part) == text  # percent-escapes only: one string per part


def test_ids_are_injective_over_tricky_names():
    ids = {}
    for v in TRICKY[:-1]:
        for w in [*TRICKY[:-1], "/a/mnist_mlp__x.py", "/b/mnist_mlp__x.py", "mnist_mlp"]:
            for t in (1, 12):
                cid = cell_id(v, t, w, 0)
                assert cid not in ids, (ids.get(cid), (v, w, t))
                ids[cid] = (v, w, t)


def test_the_issues_example_gives_four_ids():
    cells = [Cell(v, 1, w) for v in ("x__y", "y") for w in ("mnist_mlp", "/d/mnist_mlp__x.py")]
    assert len({c.cell_id for c in cells}) == 4
    # what used to happen: two of them shared one id, so one result overwrote another
    assert len({legacy_cell_id(c.variant, 1, c.workload, 0) for c in cells}) == 3


def test_a_workload_file_gets_its_stem_and_a_stable_hash_of_its_path():
    a, b = cell_id("local", 1, "/a/model.py", 0), cell_id("local", 1, "/b/model.py", 0)
    assert a.startswith("model@") and b.startswith("model@") and a != b
    assert a == cell_id("local", 1, "/a/model.py", 0)  # stable: the result's cell gives it back
    s1 = ServeCell("local", 1, "/a/m.keras", "offline", "inprocess").cell_id
    s2 = ServeCell("local", 1, "/b/m.keras", "offline", "inprocess").cell_id
    assert s1 != s2 and s1.startswith("serve__m@")


def test_long_names_give_short_distinct_ids():
    a, b = cell_id("v" * 300 + "a", 1, "mnist_mlp", 0), cell_id("v" * 300 + "b", 1, "mnist_mlp", 0)
    assert a != b and len(a.encode()) <= MAX_ID_BYTES and len(b.encode()) <= MAX_ID_BYTES


def test_compare_with_colliding_names_keeps_four_results(tmp_path, monkeypatch, capsys):
    """The issue's case end to end: variants x__y and y x workloads mnist_mlp and a file
    mnist_mlp__x.py: four cells ran, four files remain, the report has four."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "v.toml").write_text(
        '[variants.x__y]\nbase = "local"\n[variants.y]\nbase = "local"\n'
    )
    wl = tmp_path / "mnist_mlp__x.py"
    wl.write_text(WORKLOAD_FILE % "mnist_mlp__x")
    calls: list[str] = []
    monkeypatch.setattr(runner, "run_cell", fake_run_cell(calls))
    code = main(["compare", "--variants-file", "v.toml", "--variants", "x__y,y", "--threads", "1",
                 "--workloads", f"mnist_mlp,{wl}", "--repeats", "1", "--no-probe",
                 "--pricing", "none", "--out", "R"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert len(calls) == 4 and len(set(calls)) == 4
    assert len(list((tmp_path / "R" / "cells").glob("*.json"))) == 4
    assert len(load_run_dir(tmp_path / "R").results) == 4


# ---- the migration of folders named by legacy ids ----


def test_a_folder_with_legacy_names_loads_and_resume_renames_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    wl = tmp_path / "mine.py"
    wl.write_text(WORKLOAD_FILE % "mine")
    result = rf.make_result("local", 1, str(wl), 0)
    result["runner"]["host_id"] = host_id()
    d = tmp_path / "R"
    (d / "cells").mkdir(parents=True)
    (d / "logs").mkdir()
    old = legacy_cell_id("local", 1, str(wl), 0)
    assert old == "mine__local__t1__r0"
    (d / "cells" / f"{old}.json").write_text(json.dumps(result))
    (d / "logs" / f"{old}.log").write_text("the log")
    options = TrainingOptions(
        quick=False, data="synthetic", min_steady_s=10.0, min_steady_steps=100, seed=0
    )
    spec = MatrixSpec(("local",), (1,), (str(wl),), 1, options)
    run = {**new_run(spec, [local_host()]), "schema_version": 2}
    (d / "run.json").write_text(json.dumps(run))
    contents = load_run_dir(d)  # read-only: the legacy name is read as is
    new = cell_id("local", 1, str(wl), 0)
    assert list(contents.results) == [new] and not contents.duplicates
    calls: list[str] = []
    monkeypatch.setattr(runner, "run_cell", fake_run_cell(calls))
    resume = ["compare", "--resume", "--out", "R", "--no-probe", "--pricing", "none"]
    assert main([*resume, "--trust-workloads"]) == 0  # the folder names a workload file
    assert calls == []  # nothing re-run
    assert f"renamed cells/{old}.json -> cells/{new}.json" in capsys.readouterr().err
    assert sorted(p.name for p in (d / "cells").iterdir()) == [f"{new}.json"]
    assert (d / "logs" / f"{new}.log").read_text() == "the log"
    assert load_run(d)["schema_version"] == RUN_SCHEMA_VERSION
    assert json.loads((d / "run.json").read_text())["schema_version"] == RUN_SCHEMA_VERSION


# ---- writes ----


def test_a_finished_result_is_never_overwritten(tmp_path):
    folder = RunFolder(tmp_path / "R")
    ok = rf.make_result("local", 1, "mnist_mlp", 0)
    folder.write_cell("c", {**ok, "status": "failed", "reason": "x"})
    folder.write_cell("c", ok)  # a failed attempt is replaced (resume)
    with pytest.raises(UserError, match="already holds a finished result"):
        folder.write_cell("c", {**ok, "status": "failed", "reason": "again"})
    assert json.loads(folder.cell_path("c").read_text())["status"] == "ok"
    folder.cell_path("u").write_text("{")
    with pytest.raises(UserError, match="cannot be read"):
        folder.write_cell("u", ok)
    assert not list((tmp_path / "R").rglob("*.tmp"))


def test_a_symlinked_log_is_replaced_never_written_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "run"
    (out / "logs").mkdir(parents=True)
    cell = Cell(variant="stub", threads=1, workload="mnist_mlp", repeat=0)
    (out / "logs" / f"{cell.cell_id}.log").symlink_to(victim)
    variant = stub_variant(tmp_path, "print('worker output', flush=True)\nwrite_ok()\n")
    result = run_cell(cell, variant, RunOptions(timeout_s=30), RunFolder(out), topology=TOPO).raw
    assert result["status"] == "ok"
    assert victim.read_text() == "precious"
    log = out / "logs" / f"{cell.cell_id}.log"
    assert not log.is_symlink() and "worker output" in log.read_text()


def test_a_symlinked_cells_folder_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "R").mkdir()
    (tmp_path / "R" / "cells").symlink_to(elsewhere)
    with pytest.raises(UserError, match="symbolic link"):
        RunFolder(tmp_path / "R").write_cell("c", rf.make_result())
    assert list(elsewhere.iterdir()) == []


def test_scratch_is_private_inside_the_run_and_removed(tmp_path):
    body = (
        "d = os.path.dirname(result_path)\n"
        "write_ok({'scratch': d, 'mode': oct(os.stat(d).st_mode & 0o7777)})\n"
    )
    variant = stub_variant(tmp_path, body)
    out = tmp_path / "run"
    cell = Cell(variant="stub", threads=1, workload="mnist_mlp", repeat=0)
    result = run_cell(cell, variant, RunOptions(timeout_s=30), RunFolder(out), topology=TOPO).raw
    assert result["mode"] == "0o700"
    assert Path(result["scratch"]).parent == out / ".scratch"
    assert not Path(result["scratch"]).exists() and not (out / ".scratch").exists()


def test_stale_scratch_and_temps_are_removed_by_the_next_run(tmp_path, monkeypatch, capsys):
    """Only what the tool can prove it made: a marked scratch folder and temp files of
    its own names; the user's own entries (unmarked, hidden, old-style) stay."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", fake_run_cell([]))
    argv = ["compare", "--threads", "1", "--workloads", "mnist_mlp", "--no-probe"]
    argv += ["--pricing", "none"]
    assert main([*argv, "--out", "R"]) == 0
    run = tmp_path / "R"
    ours = run / ".scratch" / "mnist_mlp__local__t1__r0.a1b2c3d4"
    ours.mkdir(parents=True)
    cleanup.mark_scratch(ours)
    (ours / "result.json").write_text("{}")
    temps = [
        run / ".run.json.k3j4h5g6.tmp",
        run / "logs" / ".c__r0.abcd1234.log.tmp",
        run / "cells" / ".c__r0.json.x1y2z3w4.tmp",
    ]
    mine = [
        run / ".scratch" / "notes.abcdefgh",
        run / ".mnist_mlp__local__t1__r0.k3j4h5g6",
        run / "logs" / "my.tmp",
        run / ".run.json.bak",
    ]
    (run / "logs").mkdir(exist_ok=True)
    for p in temps:
        p.write_text("partial")
    for d in mine[:2]:
        d.mkdir(parents=True)
        (d / "t").write_text("mine")
    for p in mine[2:]:
        p.write_text("mine")
    capsys.readouterr()
    # a refused command removes nothing, not even the tool's own leftovers
    refused = ["compare", "--resume", "--out", "R", "--threads", "2", "--no-probe"]
    assert main([*refused, "--pricing", "none"]) == 2
    assert "different matrix" in capsys.readouterr().err
    assert ours.exists() and all(p.exists() for p in temps)
    assert main(["compare", "--resume", "--out", "R", "--no-probe", "--pricing", "none"]) == 0
    err = capsys.readouterr().err
    assert not ours.exists() and not any(p.exists() for p in temps)
    assert err.count("a scratch folder left by an interrupted run") == 1
    assert err.count("a temp file left by an interrupted run") == 3
    assert all(p.exists() for p in mine), "removed the user's own files"
    # a link where the private scratch folder goes is refused up front, and left
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(run / ".scratch")
    (run / ".scratch").symlink_to(elsewhere)
    assert main(["compare", "--resume", "--out", "R", "--no-probe", "--pricing", "none"]) == 2
    assert ".scratch is a symbolic link" in capsys.readouterr().err
    assert (run / ".scratch").is_symlink() and list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_sigterm_stops_the_worker_and_removes_scratch_and_lock(sig, tmp_path):
    wl = tmp_path / "sleepy.py"
    wl.write_text("import time\ntime.sleep(120)\n" + WORKLOAD_FILE % "sleepy")
    out = tmp_path / "o"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfvariants", "run", str(wl), "--threads", "1", "--out", str(out)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 180  # a loaded 2-core host starts Python slowly
    while not any((out / ".scratch").glob("*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert any((out / ".scratch").glob("*")), "the cell never started"
    time.sleep(1.0)  # let the worker start
    proc.send_signal(sig)  # SIGHUP (the terminal closed) is handled like SIGTERM
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert not (out / ".scratch").exists() and not (out / lock.LOCK_FILE).exists()
    for pid in filter(str.isdigit, os.listdir("/proc")):  # the worker's group went too
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        assert str(wl).encode() not in cmdline or b"tfvariants" in cmdline.split(b"\0")[1:3]


# ---- the lock ----

HOLD = (
    "import sys, time; from tfvariants.store import lock; lock.acquire(sys.argv[1], 'compare'); "
    "print('held', flush=True); time.sleep(120)"
)


def hold_lock(d: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(d)], stdout=subprocess.PIPE,
                            cwd=ROOT, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def finished_run(tmp_path: Path, monkeypatch) -> list[str]:
    monkeypatch.chdir(tmp_path)
    calls: list[str] = []
    monkeypatch.setattr(runner, "run_cell", fake_run_cell(calls))
    assert main(["compare", "--threads", "1", "--workloads", "mnist_mlp", "--repeats", "2",
                 "--no-probe", "--pricing", "none", "--out", "R"]) == 0  # fmt: skip
    assert not (tmp_path / "R" / lock.LOCK_FILE).exists()  # released when the command ended
    return calls


def test_a_second_run_on_a_locked_folder_is_refused_naming_the_holder(
    tmp_path, monkeypatch, capsys
):
    calls = finished_run(tmp_path, monkeypatch)
    d = tmp_path / "R"
    (d / "cells" / "mnist_mlp__local__t1__r1.json").unlink()  # something left to resume
    holder = hold_lock(d)
    try:
        capsys.readouterr()
        calls[:] = []
        assert main(["compare", "--resume", "--out", "R", "--no-probe"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"pid {holder.pid}" in err and "in use" in err
        assert calls == []
        # report reads without the lock, but writes nothing into the locked folder
        assert main(["report", "R", "-o", "elsewhere.html", "--pricing", "none"]) == 0
        assert main(["report", "R", "-o", "R/report/index.html", "--pricing", "none"]) == 2
        assert "being written by" in capsys.readouterr().err
        assert not (d / "report").exists()
    finally:
        holder.kill()
        holder.wait()
    # the holder died: its lock file is left, not held; the next run takes it over
    assert (d / lock.LOCK_FILE).exists()
    assert main(["compare", "--resume", "--out", "R", "--no-probe", "--pricing", "none"]) == 0
    err = capsys.readouterr().err
    assert f"took over the lock of pid {holder.pid}" in err and "no longer running" in err
    assert calls == ["mnist_mlp__local__t1__r1"]
    # the report slot of an unlocked folder is free
    assert main(["report", "R", "-o", "R/report/index.html", "--pricing", "none"]) == 0


def test_two_fresh_runs_into_one_out_are_not_both_accepted(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", fake_run_cell([]))
    (tmp_path / "R").mkdir()
    holder = hold_lock(tmp_path / "R")  # the first run, still starting
    try:
        assert main(["compare", "--threads", "1", "--workloads", "mnist_cnn", "--no-probe",
                     "--pricing", "none", "--out", "R"]) == 2  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert "in use by" in capsys.readouterr().err
    assert not (tmp_path / "R" / "run.json").exists()


# ---- the one SIGTERM -> SIGKILL escalation, and the Ray driver's writes ----


@pytest.mark.parametrize("ignores_term", [False, True])
def test_stop_groups_terminates_then_kills(ignores_term, monkeypatch):
    monkeypatch.setattr(runner, "KILL_GRACE_S", 0.5)
    trap = "trap '' TERM; " if ignores_term else ""
    proc = subprocess.Popen(["sh", "-c", f"{trap}sleep 60 & wait"], start_new_session=True)
    time.sleep(0.3)  # let the shell set its trap

    def ended(wait_s: float) -> bool:
        try:
            proc.wait(timeout=wait_s)
            return True
        except subprocess.TimeoutExpired:
            return False

    runner.stop_groups([proc.pid], ended)
    proc.wait(timeout=10)
    assert proc.returncode == (-signal.SIGKILL if ignores_term else -signal.SIGTERM)
    # The whole group is gone (the sleep too); a signalled process dies asynchronously,
    # which on a loaded host can take a moment after its leader was reaped.
    deadline = time.monotonic() + 5
    while group_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_members(proc.pid) == []


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, from /proc."""
    live = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(pid))
    return live


def test_the_ray_driver_stores_cells_and_logs_through_the_run_folder(tmp_path):
    from tfvariants.execute.ray_executor import RaySettings, RayWaves

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "R"
    cell = Cell("local", 1, "mnist_mlp", 0)
    (out / "logs").mkdir(parents=True)
    (out / "logs" / f"{cell.cell_id}.log").symlink_to(victim)
    m = RayWaves(out, RaySettings(), {}, {}, lambda c: None)  # type: ignore[arg-type,return-value]
    m._store(cell, rf.make_result("local", 1, "mnist_mlp", 0), "the node's log")
    assert victim.read_text() == "precious"
    assert (out / "logs" / f"{cell.cell_id}.log").read_text() == "the node's log"
    assert json.loads((out / "cells" / f"{cell.cell_id}.json").read_text())["status"] == "ok"
    assert json.loads((out / "cells" / f"{cell.cell_id}.json").read_text())["runner"][
        "log"
    ].endswith(".log")


# ---- workload files a resume would execute (issue 28) ----


def _file_run(tmp_path: Path, monkeypatch) -> list[str]:
    """A finished compare of the workload file wl/ok.py, started in tmp_path/a."""
    start = tmp_path / "a"
    (start / "wl").mkdir(parents=True)
    (start / "wl" / "ok.py").write_text(WORKLOAD_FILE % "ok")
    monkeypatch.chdir(start)
    calls: list[str] = []
    monkeypatch.setattr(runner, "run_cell", fake_run_cell(calls))
    argv = ["compare", "--threads", "1", "--workloads", "wl/ok.py", "--repeats", "1"]
    assert main([*argv, "--no-probe", "--pricing", "none", "--out", str(tmp_path / "R")]) == 0
    (tmp_path / "R" / "cells" / next(iter(os.listdir(tmp_path / "R" / "cells")))).unlink()
    calls.clear()
    return calls


RESUME_R = ["compare", "--resume", "--no-probe", "--pricing", "none", "--out"]


def test_a_resume_from_elsewhere_never_runs_another_file_under_the_same_ids(
    tmp_path, monkeypatch, capsys
):
    calls = _file_run(tmp_path, monkeypatch)
    other = tmp_path / "b"
    (other / "wl").mkdir(parents=True)
    (other / "wl" / "ok.py").write_text(WORKLOAD_FILE % "ok" + "# 52x the FLOPs\n")
    monkeypatch.chdir(other)
    capsys.readouterr()
    rc = main([*RESUME_R, str(tmp_path / "R"), "--trust-workloads"])
    err = capsys.readouterr().err
    assert rc == 2 and "not the file this run measured" in err and calls == []
    monkeypatch.chdir(tmp_path / "a")  # where it started: the same file
    assert main([*RESUME_R, str(tmp_path / "R"), "--trust-workloads"]) == 0 and len(calls) == 1


def test_a_resume_shows_workload_files_and_asks_before_running_them(tmp_path, monkeypatch, capsys):
    calls = _file_run(tmp_path, monkeypatch)
    capsys.readouterr()
    assert main([*RESUME_R, str(tmp_path / "R")]) == 2  # no terminal: refused, named
    err = capsys.readouterr().err
    assert "wl/ok.py -> " + str(tmp_path / "a" / "wl" / "ok.py") in err and "sha256" in err
    assert "--trust-workloads" in err and calls == []
    assert not (tmp_path / "R" / ".lock").exists()
    from tfvariants.store import workloadfiles

    stored = load_run(tmp_path / "R")
    with pytest.raises(UserError):
        workloadfiles.check_resume(stored, ask=lambda question: False)
    asked: list[str] = []
    workloadfiles.check_resume(stored, ask=lambda q: asked.append(q) or True)
    assert "wl/ok.py" in asked[0]
    # named on the command line: confirmed
    rc = main([*RESUME_R, str(tmp_path / "R"), "--workloads", "wl/ok.py"])
    assert rc == 0, capsys.readouterr().err
    assert len(calls) == 1


def test_a_failed_cells_reason_never_reaches_the_terminal_raw(tmp_path, monkeypatch, capsys):
    from tfvariants.store.result import host_result

    def failing(cell, variant, options, folder, at=None):
        result = host_result(cell.to_dict(), "failed", "\x1b[2Jboom\x1b]0;title\x07")
        result["runner"] = {"host_id": host_id()}
        path = folder.write_cell(cell.cell_id, result)
        return StoredCell.written(cell.cell_id, result, path)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", failing)
    argv = ["compare", "--threads", "1", "--workloads", "mnist_mlp", "--repeats", "1"]
    assert main([*argv, "--no-probe", "--pricing", "none", "--out", "R"]) == 1
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "\\x1b[2Jboom" in out + err


def test_a_serving_resume_refuses_another_model_file_under_the_same_ids(
    tmp_path, monkeypatch, capsys
):
    """serve --models m/net.keras records the file's SHA-256 (run.json keeps the name
    under `models`); resumed from another folder whose m/net.keras differs, it refuses
    before any cell runs; from where it started, it resumes."""
    from tfvariants.execute import runner
    from tfvariants.store import workloadfiles

    calls: list[str] = []

    def crashing_cell(cell, variant, options, folder):  # recorded as a failed cell
        calls.append(cell.cell_id)
        raise RuntimeError("no model loaded in this test")

    monkeypatch.setattr(runner, "run_cell", crashing_cell)
    for where, content in (("a", b"the measured model"), ("b", b"another model")):
        (tmp_path / where / "m").mkdir(parents=True)
        (tmp_path / where / "m" / "net.keras").write_bytes(content)
    argv = ["serve", "--models", "m/net.keras", "--scenarios", "concurrency"]
    argv += ["--concurrency", "1", "--path", "inprocess", "--threads", "1", "--repeats", "1"]
    argv += ["--budget", "off", "--pricing", "none", "--out", str(tmp_path / "R")]
    argv += ["--report", str(tmp_path / "rep" / "index.html")]
    monkeypatch.chdir(tmp_path / "a")
    main(argv)
    assert len(calls) == 1
    stored = load_run(tmp_path / "R")
    assert stored["models"] == ["m/net.keras"]
    assert workloadfiles.run_files(stored) == ["m/net.keras"]
    assert stored[workloadfiles.FIELD] == {"m/net.keras": workloadfiles.fingerprint("m/net.keras")}
    calls.clear()
    capsys.readouterr()
    monkeypatch.chdir(tmp_path / "b")
    assert main([*argv, "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "m/net.keras" in err and "not the file this run measured" in err
    assert calls == []
    monkeypatch.chdir(tmp_path / "a")  # where it started: the failed cell runs again
    main([*argv, "--resume"])
    assert "not the file this run measured" not in capsys.readouterr().err and len(calls) == 1
