"""Where the tool runs and what it is given, hostile: a working folder deleted under it,
a results folder whose name is not UTF-8, stdin closed while a resume would ask. One
line and exit 2, or the work done; never a traceback."""

from __future__ import annotations

import io
import os
import shutil

import pytest
from test_bad_input import make_run

from tfvariants.cli import main
from tfvariants.errors import UserError
from tfvariants.store import workloadfiles


@pytest.mark.parametrize(
    "argv",
    [["run", "mnist_mlp", "--threads", "1"], ["compare", "--threads", "1"], ["report", "R"]],
    ids=["run", "compare", "report"],
)
def test_a_deleted_working_folder_is_one_line(argv, tmp_path, monkeypatch, capsys):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the working folder is gone" in err, err


def test_a_report_of_a_folder_whose_name_is_not_utf8(tmp_path, monkeypatch, capsys):
    """The report is written; the name shows with a replacement character."""
    monkeypatch.chdir(tmp_path)
    make_run(tmp_path)
    name = os.fsdecode(b"R\xff")
    shutil.move(tmp_path / "R", tmp_path / name)
    assert main(["report", name, "-o", "out.html", "--csv", "out.csv"]) == 0, capsys.readouterr()
    assert "R?" in (tmp_path / "out.html").read_text(encoding="utf-8")
    assert (tmp_path / "out.csv").is_file()


@pytest.mark.parametrize("stdin", [None, "closed"])
def test_stdin_closed_when_a_resume_would_ask(stdin, tmp_path, monkeypatch):
    """A resume that would ask about a workload file, with stdin closed (``0<&-``):
    refused in one line, nothing run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w.py").write_text("def build(): pass\n")
    stored = {"workloads": ["w.py"], "workload_files": {}}
    if stdin == "closed":
        closed = io.StringIO()
        closed.close()
        monkeypatch.setattr("sys.stdin", closed)
    else:
        monkeypatch.setattr("sys.stdin", None)
    with pytest.raises(UserError, match="--trust-workloads"):
        workloadfiles.check_resume(stored)


@pytest.mark.parametrize("limit", [None, 100], ids=["read", "bounded"])
def test_prices_import_reads_a_pipe_within_the_bound(limit, tmp_path, monkeypatch, capsys):
    """``prices import /dev/stdin``: a pipe is a fair input, read to its end, bounded
    like a file."""
    from tfvariants.analyze.cost import catalog_import

    if limit is not None:
        monkeypatch.setattr(catalog_import, "CSV_BYTES", limit)
    monkeypatch.chdir(tmp_path)
    csv = "instance,vcpus,gpu,on_demand,spot,region,date\n" + "".join(
        f"c{i},1,,0.05,,r1,2026-01\n" for i in range(10)
    )
    r, w = os.pipe()
    os.write(w, csv.encode())
    os.close(w)
    try:
        rc = main(["prices", "import", f"/dev/fd/{r}", "-o", "o.toml"])
    finally:
        os.close(r)
    err = capsys.readouterr().err
    if limit is None:
        assert rc == 0 and 'name = "c9"' in (tmp_path / "o.toml").read_text(), err
    else:
        assert rc == 2 and "larger than 100 bytes" in err and err.count("\n") == 1, err
        assert not (tmp_path / "o.toml").exists()


@pytest.mark.parametrize("argv", [["variants"], ["prices"], ["prices", "--json"]])
def test_a_listing_with_stdout_closed_is_not_a_success(argv, monkeypatch, capsys):
    """``tfvariants variants >&-``: what it shows is lost, and the exit code says so."""
    monkeypatch.setattr("sys.stdout", None)
    assert main(argv) == 2
    assert "standard output is closed" in capsys.readouterr().err


def test_a_quarantine_rerun_keeps_the_quarantined_cells_log(tmp_path, monkeypatch, capsys):
    """``--resume --quarantine``: the unreadable cell's log goes to quarantine/ with it,
    not replaced by the re-run's."""
    import json

    import resultfactory as rf

    from tfvariants.execute import runner
    from tfvariants.execute.record import StoredCell
    from tfvariants.store.runfile import local_host

    monkeypatch.chdir(tmp_path)

    def fake_run_cell(cell, variant, options, folder, at=None):  # noqa: ANN001, ANN202
        result = rf.make_result(cell.variant, cell.threads, cell.workload, cell.repeat)
        result["runner"]["host_id"] = local_host()["host_id"]
        with folder.log_file(cell.cell_id) as log:
            log.write(b"the re-run's log")
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.write_text(json.dumps(result))
        return StoredCell.written(cell.cell_id, result, path)

    monkeypatch.setattr(runner, "run_cell", fake_run_cell)
    argv = ["compare", "--threads", "1", "--workloads", "mnist_mlp", "--repeats", "2"]
    argv += ["--no-probe", "--pricing", "none", "--out", "R"]
    assert main(argv) == 0, capsys.readouterr().err
    cid = "mnist_mlp__local__t1__r1"
    (tmp_path / "R" / "logs" / f"{cid}.log").write_text("the measured run's log")
    (tmp_path / "R" / "cells" / f"{cid}.json").write_text("{tampered")
    assert main([*argv, "--resume", "--quarantine"]) == 0, capsys.readouterr().err
    assert (tmp_path / "R" / "quarantine" / f"{cid}.log").read_text() == "the measured run's log"
    assert (tmp_path / "R" / "logs" / f"{cid}.log").read_text() == "the re-run's log"
