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
