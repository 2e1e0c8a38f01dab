"""The run store: duplicates, hosts, migrations, resume safety, and what the report and
CLI say about them."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from pathlib import Path

import pytest
import resultfactory as rf

from tfvariants.analyze.cost.catalog import load_catalog
from tfvariants.analyze.cost.pricing import Pricing, parse_pricing_option
from tfvariants.analyze.report.build import assemble
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.analyze.training.analysis import analyze
from tfvariants.analyze.training.part import CSV_COLUMNS, training_part
from tfvariants.cli import main
from tfvariants.commands.report import write_report
from tfvariants.errors import UserError
from tfvariants.execute import runner
from tfvariants.execute.matrix import Matrix
from tfvariants.execute.record import StoredCell
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.cell import cell_id
from tfvariants.plan.spec import MatrixSpec
from tfvariants.render.html import render_html
from tfvariants.store.rundir import load_run_dir
from tfvariants.store.runfile import RUN_SCHEMA_VERSION, load_run, local_host

HERE, OTHER = local_host()["host_id"], "0ther0host00"
CELL = "mnist_mlp__pip__t8__r0"
CELL_R0 = "mnist_mlp__local__t1__r0"


def on_host(result: dict, host: str) -> dict:
    result["runner"]["host_id"] = host
    return result


def study(tmp_path: Path, *, hosts: list | None = None) -> Path:
    results, run = rf.study_like_results()
    for r in results:
        on_host(r, HERE)
    run["schema_version"], run["hosts"] = 2, hosts if hosts is not None else [local_host()]
    return rf.write_results(tmp_path / "R", results, run)


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode() + (p.read_bytes() if p.is_file() else b"/"))
    return h.hexdigest()


def mlp_group(a, label):
    return next(g for g in a.workloads[0].groups if g.label == label)


def test_a_copy_of_a_cell_is_named_and_never_an_extra_repeat(tmp_path, capsys):
    d = study(tmp_path)
    clean = analyze(d)
    shutil.copy(d / "cells" / f"{CELL}.json", d / "cells" / f"{CELL} (copy).json")
    other = rf.make_result("pip", 8, "mnist_mlp", 9)  # holds r9, named like nothing
    (d / "cells" / "renamed.json").write_text(json.dumps(on_host(other, HERE)))
    a = analyze(d)
    assert mlp_group(a, "pip@8").time == mlp_group(clean, "pip@8").time  # same n, same median
    assert len(mlp_group(a, "pip@8").results) == 3
    dup = [w.message for w in a.warnings if w.kind == "duplicate"]
    assert any(f"{CELL} (copy).json: a copy of cell {CELL}" in m for m in dup)
    assert any("renamed.json: holds cell mnist_mlp__pip__t8__r9" in m for m in dup)
    assert f"{CELL} (copy).json" in render_html(assemble(training_part(a)))
    assert main(["report", str(d), "-o", str(tmp_path / "o.html"), "--pricing", "none"]) == 0
    assert f"warning: cells/{CELL} (copy).json: a copy of cell" in capsys.readouterr().err


def test_cells_from_an_undeclared_host_are_kept_apart_unless_allowed(tmp_path, capsys):
    d = study(tmp_path)
    path = d / "cells" / f"{CELL}.json"
    path.write_text(json.dumps(on_host(json.loads(path.read_text()), OTHER)))
    a = analyze(d)
    assert len(mlp_group(a, "pip@8").results) == 2  # kept apart
    (w,) = [w for w in a.warnings if w.kind == "foreign_host"]
    assert f"ran on host {OTHER}, which run.json does not declare (declared: {HERE})" in w.message
    assert CELL in w.message and "--allow-mixed-hosts" in w.hint
    assert a.counts["from another host"] == 1 and "1 from another host" in render_html(
        assemble(training_part(a))
    )
    assert OTHER in render_html(assemble(training_part(a)))
    assert not any(CELL in m for m in (x.message for x in a.warnings if x.kind == "incomplete"))
    mixed = analyze(d, ReportSettings(allow_mixed_hosts=True))
    assert len(mlp_group(mixed, "pip@8").results) == 3
    assert [w.kind for w in mixed.warnings if "host" in w.kind] == ["mixed_hosts"]
    out = str(tmp_path / "o.html")
    assert main(["report", str(d), "-o", out]) == 0
    assert f"warning: 1 cell(s) (e.g. {CELL}) ran on host {OTHER}" in capsys.readouterr().err
    assert main(["report", str(d), "-o", out, "--allow-mixed-hosts"]) == 0
    assert "included (--allow-mixed-hosts)" in capsys.readouterr().err


def test_without_declared_hosts_the_most_common_host_is_the_runs(tmp_path):
    d = study(tmp_path, hosts=[])
    path = d / "cells" / f"{CELL}.json"
    path.write_text(json.dumps(on_host(json.loads(path.read_text()), OTHER)))
    contents = load_run_dir(d)
    assert contents.run_hosts == [HERE] and contents.hosts_inferred
    assert list(contents.foreign) == [CELL]
    assert "declares no hosts" in contents.notices()[0].message


def test_a_container_cell_is_identified_by_the_runner_not_by_the_container(tmp_path):
    d = study(tmp_path)
    path = d / "cells" / f"{CELL}.json"
    r = json.loads(path.read_text())
    r["environment"].update(host_id="random0ctnr0", in_container=True)
    path.write_text(json.dumps(r))
    assert CELL in load_run_dir(d).results  # the runner's host_id wins
    del r["runner"]["host_id"]  # no runner record: a container's own id is not trusted
    path.write_text(json.dumps(r))
    assert CELL in load_run_dir(d).results and not load_run_dir(d).foreign


def test_version_1_run_json_is_migrated_and_resume_declares_the_host(tmp_path):
    d = tmp_path / "R"
    spec = MatrixSpec(("local",), (1,), ("mnist_mlp",), 1, TrainingOptions(seed=0))
    run = {"schema_version": 1, "kind": "tfvariants.run", **spec.to_json("2026-01-01")}
    rf.write_results(d, [on_host(rf.make_result("local", 1, "mnist_mlp", 0), HERE)], run)
    assert load_run(d)["hosts"] == [] and load_run(d)["schema_version"] == RUN_SCHEMA_VERSION
    Matrix(spec, d).run(run_cell=lambda *a: pytest.fail("nothing to run"), resume=True)
    stored = json.loads((d / "run.json").read_text())
    assert stored["schema_version"] == RUN_SCHEMA_VERSION and [
        h["host_id"] for h in stored["hosts"]
    ] == [HERE]


def test_resume_from_another_host_is_refused_unless_allowed(tmp_path):
    d = tmp_path / "R"
    spec = MatrixSpec(("local",), (1,), ("mnist_mlp",), 1, TrainingOptions(seed=0))
    Matrix(spec, d).prepare(hosts=[{"host_id": OTHER, "kind": "local", "label": "elsewhere"}])
    before = tree_hash(d)
    with pytest.raises(UserError, match=f"was run on host.*{OTHER}.*--allow-mixed-hosts"):
        Matrix(spec, d).prepare(resume=True)
    assert tree_hash(d) == before
    Matrix(spec, d).prepare(resume=True, allow_mixed_hosts=True)
    assert [h["host_id"] for h in load_run(d)["hosts"]] == [OTHER, HERE]


def test_a_fresh_run_into_a_folder_with_loose_results_is_refused(tmp_path):
    d = rf.write_results(tmp_path / "R", [rf.make_result("local", 1, "mnist_mlp", 0)])
    before = tree_hash(d)
    spec = MatrixSpec(("local",), (1,), ("mnist_mlp",), 1)
    with pytest.raises(UserError, match="holds results without a run.json"):
        Matrix(spec, d).prepare()
    assert tree_hash(d) == before


def test_compare_resume_leaves_an_unreadable_cell_intact_then_quarantines_it(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    calls = []

    def fake_run_cell(cell, variant, options, folder, at=None):
        calls.append(cell.cell_id)
        result = on_host(
            rf.make_result(cell.variant, cell.threads, cell.workload, cell.repeat), HERE
        )
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.write_text(json.dumps(result))
        return StoredCell.written(cell.cell_id, result, path)

    monkeypatch.setattr(runner, "run_cell", fake_run_cell)
    # --no-probe: the oneDNN probe would start real TensorFlow (refused in the fast suite)
    argv = ["compare", "--threads", "1", "--workloads", "mnist_mlp", "--repeats", "2", "--no-probe"]
    assert main([*argv, "--out", "R", "--pricing", "none"]) == 0
    bad = tmp_path / "R" / "cells" / "mnist_mlp__local__t1__r1.json"
    ok = json.loads(bad.read_text())
    bad.write_text(json.dumps({**ok, "schema_version": 2}))  # a newer tfvariants's result
    capsys.readouterr()
    before, calls[:] = tree_hash(tmp_path / "R"), []
    assert main(["compare", "--resume", "--out", "R"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cells/mnist_mlp__local__t1__r1.json" in err
    assert "newer than this tfvariants" in err and "--quarantine" in err
    assert tree_hash(tmp_path / "R") == before and calls == []  # not a byte changed
    # the report does not call it missing (and so does not send the user to --resume)
    a = analyze(tmp_path / "R")
    assert [w.kind for w in a.warnings][:1] == ["unreadable"]
    assert not [w for w in a.warnings if w.kind == "incomplete"]

    original = bad.read_bytes()
    assert (
        main(
            ["compare", "--resume", "--out", "R", "--quarantine", "--pricing", "none", "--no-probe"]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "quarantined cells/mnist_mlp__local__t1__r1.json ->" in err
    assert (tmp_path / "R" / "quarantine" / bad.name).read_bytes() == original
    assert calls == ["mnist_mlp__local__t1__r1"]


def test_gpu_billing_follows_what_the_results_say(tmp_path):
    results = [
        rf.make_result("cuda12", 8, "mnist_mlp", r, gpu=True, steady_epoch_s=1.0) for r in range(3)
    ] + [rf.make_result("pip", 8, "mnist_mlp", r, steady_epoch_s=4.0) for r in range(3)]
    for r in results[:3]:
        r["environment"]["tensorflow"]["cuda_build"] = True
    d = rf.write_results(tmp_path / "R", results)  # no run.json
    a = analyze(d, pricing=Pricing(load_catalog("gce-2017")))
    assert a.devices == {"cuda12": "gpu", "pip": "cpu"}
    assert mlp_group(a, "cuda12@8").cost.instance == "n1-standard-1+K80"
    assert mlp_group(a, "pip@8").cost.instance == "n1-highcpu-8"


def test_a_cell_without_a_price_is_a_warning_naming_it(tmp_path, capsys):
    d = study(tmp_path)
    a = analyze(d, pricing=parse_pricing_option("gce-2017@2010-01"))
    msgs = [w.message for w in a.warnings if w.kind == "no_price"]
    assert any(m.startswith("mnist_mlp pip@8: no cost: catalog gce-2017 has no price for "
                            "n1-highcpu-8 on or before 2010-01") for m in msgs)  # fmt: skip
    assert (
        main(["report", str(d), "-o", str(tmp_path / "o.html"), "--pricing", "gce-2017@2010-01"])
        == 0
    )
    assert (
        "warning: mnist_mlp pip@8: no cost: catalog gce-2017 has no price"
        in capsys.readouterr().err
    )
    results = [rf.make_result("pip", 128, "mnist_mlp", r) for r in range(2)]
    a = analyze(
        rf.write_results(tmp_path / "big", results), pricing=Pricing(load_catalog("gce-2017"))
    )
    assert any("no instance with at least 128 vCPUs" in w.message for w in a.warnings)


def test_csv_neutralises_formulas_and_uses_the_file_names_cell_id(tmp_path):
    user = str(tmp_path / "my_work.py")
    results = [rf.make_result("pip", 2, user, r) for r in range(2)]
    results.append(rf.make_result("pip", 2, user, 2, status="failed", reason="=HYPERLINK(1)"))
    d = tmp_path / "R"
    (d / "cells").mkdir(parents=True)
    ids = [cell_id("pip", 2, user, r) for r in range(3)]
    for r, cid in zip(results, ids, strict=True):
        (d / "cells" / f"{cid}.json").write_text(json.dumps(r))
    write_report(d, tmp_path / "o.html", csv_path=tmp_path / "o.csv")
    rows = list(csv.DictReader((tmp_path / "o.csv").open()))
    assert [r["cell_id"] for r in rows] == ids and ids[0].startswith("my_work@")
    assert rows[2]["reason"] == "'=HYPERLINK(1)"


def test_catalog_text_is_never_read_as_markup(tmp_path, capsys):
    cat = tmp_path / "c.toml"
    cat.write_text(
        'name = "t[/]"\nsource = "see [/] and [bold]x"\n[billing]\nrule = "per_second"\n'
        '[[instance]]\nname = "a[/b]"\nvcpus = 1\n'
        'prices = [{ as_of = "2017-07", on_demand = 0.05, note = "[red]" }]\n'
    )
    assert main(["prices", "--catalog", str(cat)]) == 0
    out = capsys.readouterr().out
    assert "source: see [/] and [bold]x" in out and "a[/b]" in out and "[red]" in out
    assert main(["prices", "--catalog", str(cat), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["instances"][0]["name"] == "a[/b]"


def test_listings_are_not_wrapped_when_piped(capsys):
    from tfvariants.commands.common import print_table

    long = "make build-compiled ISA=avx512 BASE_IMAGE=" + "x" * 150
    print_table("t", ["name", "status"], [["compiled", long]])
    out = capsys.readouterr().out
    assert long in out and all(len(line) < 400 for line in out.splitlines())


def test_run_json_written_by_the_store_validates_and_declares_this_host(tmp_path):
    spec = MatrixSpec(("local",), (1, 2), ("mnist_mlp",), 2, TrainingOptions(seed=0))
    Matrix(spec, tmp_path / "R").prepare()
    run = load_run(tmp_path / "R")
    assert run["kind"] == "tfvariants.run" and run["schema_version"] == RUN_SCHEMA_VERSION
    assert run["hosts"] == [local_host()] and run["hosts"][0]["kind"] == "local"


def test_compare_report_flag_is_a_deprecated_alias_of_output(tmp_path, monkeypatch, capsys):
    from tfvariants.cli import build_parser

    args = build_parser().parse_args(["compare", "--report", "x.html"])
    assert args.output == Path("x.html")
    assert "--report is deprecated, use -o/--output" in capsys.readouterr().err


# ---- the lock's record: anyone can write it (issue 28) ----


@pytest.mark.parametrize(
    "record",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"pid": ' + "9" * 400 + ', "host": "h"}',
        '{"pid": [1, 2], "host": "h"}',
        '{"pid": 99999999999999999999, "host": "h"}',
        '{"pid": true}',
        "\x00\xff binary",
    ],
    ids=["100k-deep", "400-digit-pid", "list-pid", "huge-pid", "bool-pid", "binary"],
)
def test_a_hostile_lock_record_is_no_record(record, tmp_path):
    from tfvariants.store import lock

    (tmp_path / lock.LOCK_FILE).write_bytes(record.encode("utf-8", "surrogateescape"))
    try:
        assert lock.acquire(tmp_path, "test") == []  # taken over, nothing said about it
        assert lock.holds(tmp_path)
    finally:
        lock.release(tmp_path)
    assert not (tmp_path / lock.LOCK_FILE).exists()


def test_a_stale_lock_naming_a_live_pid_is_not_called_left(tmp_path):
    import os
    import socket

    from tfvariants.store import lock

    record = {"pid": os.getppid(), "host": socket.gethostname(), "command": "compare"}
    (tmp_path / lock.LOCK_FILE).write_text(json.dumps(record))
    try:
        (warning,) = lock.acquire(tmp_path, "test")
    finally:
        lock.release(tmp_path)
    assert "left it" not in warning and "that pid is alive" in warning


# ---- outputs that are not regular files (issue 28): written into, never replaced ----


def test_report_into_dev_null_and_csv_to_dev_stdout(tmp_path):
    import stat
    import subprocess
    import sys

    from test_bad_input import make_run

    make_run(tmp_path)
    root = Path(__file__).parents[1]
    argv = ["report", str(tmp_path / "R"), "-o", "/dev/null", "--csv", "/dev/stdout"]
    command = [sys.executable, "-m", "tfvariants", *argv]
    proc = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(Path("/dev/null").stat().st_mode)
    header = ",".join(CSV_COLUMNS)
    assert header in proc.stdout.splitlines() and CELL_R0 in proc.stdout


@pytest.mark.skipif(not hasattr(__import__("os"), "mknod"), reason="no mknod")
def test_report_into_a_device_node_and_a_fifo(tmp_path, monkeypatch, capsys):
    import os
    import stat
    import threading

    from test_bad_input import make_run

    monkeypatch.chdir(tmp_path)
    make_run(tmp_path)
    try:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root")
    os.mkfifo(tmp_path / "pipe")
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append((tmp_path / "pipe").read_bytes()))
    reader.start()
    assert main(["report", "R", "-o", "null", "--csv", "pipe"]) == 0, capsys.readouterr().err
    reader.join(30)
    assert stat.S_ISCHR(os.lstat(tmp_path / "null").st_mode)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode)
    assert got and got[0].decode().splitlines()[0] == ",".join(CSV_COLUMNS)


def test_a_link_to_a_regular_file_outside_a_run_is_written_in_place(tmp_path, monkeypatch):
    from test_bad_input import make_run

    monkeypatch.chdir(tmp_path)
    make_run(tmp_path)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "r.html").write_text("old")
    (tmp_path / "r.html").symlink_to("shared/r.html")
    assert main(["report", "R", "-o", "r.html"]) == 0
    assert (tmp_path / "r.html").is_symlink()
    assert "<html" in (tmp_path / "shared" / "r.html").read_text().lower()


def test_run_json_is_typed_once_where_it_is_loaded():
    """One typed run record (issue 40): every stored run folder reads as a frozen
    RunRecord, the options as the class of its task; what an old folder lacks is None or
    empty, never a dict to read by string keys."""
    import dataclasses

    from tfvariants.options.serving import ServingOptions
    from tfvariants.options.training import TrainingOptions
    from tfvariants.store.record import EMPTY_RUN, run_record
    from tfvariants.store.runfile import read_run

    golden = Path(__file__).parent / "golden" / "runs"
    runs = {p.name: read_run(p) for p in sorted(golden.iterdir()) if p.is_dir()}
    assert isinstance(runs["serve"].options, ServingOptions)
    assert isinstance(runs["quick"].options, TrainingOptions)
    assert runs["serve"].adaptive is not None and runs["serve"].adaptive.window_plan is None
    assert runs["quick"].adaptive is not None and runs["quick"].adaptive.looks == (5, 7, 10, 15, 20)
    compiled = runs["compiled"].preset
    assert compiled is not None and (compiled.name, compiled.stock) == ("compiled", "tf-2.14")
    assert runs["multi"].adaptive is None and runs["multi"].hosts[0].kind == "local"
    with pytest.raises(dataclasses.FrozenInstanceError):
        runs["multi"].repeats = 3  # type: ignore[misc]
    old = run_record({"variants": ["a"], "threads": [1], "workloads": ["w"], "repeats": 2})
    assert old.options is None and old.adaptive is None and old.variant_info == {}
    assert old.options_as_stored() == {} and read_run(Path("/nonexistent")) == EMPTY_RUN
