"""A full disk at every write of a run (issue 28): each write the host makes (the lock's
record, run.json, a cell's log, its result, the fallback "runner error" result, the
report) fails in turn with ENOSPC. Each time: one line and exit 2, or the cell recorded
as failed; never a traceback; and nothing left that the next run cannot clean up (it
then finishes, and leaves no temp file and no lock)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_bad_input import make_run
from test_runner import TOPO, stub_variant

from tfvariants.cli import main
from tfvariants.commands import compare
from tfvariants.execute import runner

# The host's write calls: every write of a run folder or an output goes through these.
WRITES = ("replace", "fsync", "pwrite", "ftruncate", "mkdir")
ARGV = ["compare", "--threads", "1", "--workloads", "mnist_mlp", "--repeats", "2"]
ARGV += ["--no-probe", "--pricing", "none", "--out", "R", "-o", "rep.html"]


class Disk:
    """Counts the host's write calls; the ``fail_at``-th one (1-based) fails with ENOSPC,
    and every later one too unless ``once`` (space freed again: a small fallback result
    still fits after a large one did not)."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, fail_at: int | None, once: bool = False
    ) -> None:
        self.calls = 0
        self.fail_at = fail_at
        self.once = once
        for name in WRITES:
            monkeypatch.setattr(os, name, self._wrap(getattr(os, name)))

    def _wrap(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*a: Any, **k: Any) -> Any:
            self.calls += 1
            hit = self.calls == self.fail_at or (not self.once and self.calls > (self.fail_at or 0))
            if self.fail_at is not None and hit:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(*a, **k)

        return call


@pytest.fixture
def stub_cells(tmp_path, monkeypatch):
    """compare's cells run the real runner (scratch, log, result, fallback) with a
    stub worker that writes an ok result."""
    variant = stub_variant(tmp_path, "write_ok()\n")
    real = runner.run_cell

    def run(cell, _variant, options, cells_dir, at=None):
        return real(cell, variant, options, cells_dir, topology=TOPO)

    monkeypatch.setattr(runner, "run_cell", run)
    monkeypatch.setattr(compare, "probe_variants", lambda *a, **k: None)
    monkeypatch.chdir(tmp_path)


def leftovers(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.name.endswith(".tmp") or p.name == ".lock" or ".scratch" in p.parts
    )


def test_a_run_counts_its_writes(stub_cells, tmp_path, monkeypatch, capsys):
    disk = Disk(monkeypatch, None)
    assert main(ARGV) == 0, capsys.readouterr().err
    assert disk.calls >= 10 and (tmp_path / "rep.html").is_file()


@pytest.mark.parametrize("once", [False, True], ids=["stays-full", "fails-once"])
def test_a_full_disk_at_every_write_of_a_run(once, stub_cells, tmp_path, monkeypatch, capsys):
    with pytest.MonkeyPatch.context() as mp:
        counted = Disk(mp, None)
        assert main(ARGV) == 0
    total = counted.calls
    for k in range(1, total + 1):
        run = tmp_path / f"k{k}"
        run.mkdir()
        monkeypatch.chdir(run)
        capsys.readouterr()
        with pytest.MonkeyPatch.context() as mp:
            Disk(mp, k, once)
            rc = main(ARGV)  # a traceback fails the test here
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("tfvariants: error:")]
        assert rc in (0, 1, 2), (k, err)
        if rc == 2:
            assert len(errors) == 1 and "No space left on device" in errors[0], (k, err)
        # the next run (the disk has space again) cleans up and finishes
        again = [*ARGV, "--resume"] if (run / "R" / "run.json").exists() else ARGV
        assert main(again) in (0, 1), (k, capsys.readouterr().err)
        assert leftovers(run) == [], k
        assert (run / "rep.html").is_file(), k


def _fill(mnt: Path) -> None:
    """Fill the file system at ``mnt`` to the last byte."""
    with open(mnt / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"x" * 512)
        except OSError:
            pass


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_really_full_tmpfs(tmp_path):
    """Once for real, on a 256 KiB tmpfs filled to the last byte (skipped where mount is
    not permitted): a report into it, and a new run's lock, are one line each, and
    leave nothing behind."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)]
    if subprocess.run(mount, capture_output=True).returncode != 0:
        pytest.skip("mount is not permitted here")
    try:
        make_run(mnt)
        _fill(mnt)
        before = sorted(p.name for p in mnt.rglob("*"))
        root = Path(__file__).parents[1]
        for argv in (
            ["report", str(mnt / "R"), "-o", str(mnt / "rep.html")],
            ["compare", "--threads", "1", "--workloads", "mnist_mlp", "--out", str(mnt / "N")],
        ):
            command = [sys.executable, "-m", "tfvariants", *argv]
            proc = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
            assert proc.returncode == 2, proc.stderr
            assert proc.stderr.count("\n") == 1 and "No space left" in proc.stderr
            assert sorted(p.name for p in mnt.rglob("*")) == before
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_a_run_stopped_by_a_full_disk_still_reports_what_was_stored(
    stub_cells, tmp_path, monkeypatch, capsys
):
    """The second cell's result, and its fallback, do not fit: one line, exit 2, and
    the report of the first cell is still written (it fits)."""
    from tfvariants.store.runfolder import RunFolder, StoreError

    real = RunFolder.write_cell

    def full_after_the_first(self, cid, result):
        if cid.endswith("__r1"):
            raise StoreError(f"cannot write {cid}: No space left on device")
        return real(self, cid, result)

    monkeypatch.setattr(RunFolder, "write_cell", full_after_the_first)
    assert main(ARGV) == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "error:" in line] == [
        "tfvariants: error: cannot write mnist_mlp__local__t1__r1: No space left on device"
    ]
    assert "mnist_mlp" in (tmp_path / "rep.html").read_text()
