"""`compare --duet` end to end with a fake runner: refused in one line where it does
not fit (nothing written), run two cells at a time where it does, said in the report,
kept by a resume and never switched on by one."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
import resultfactory as rf

from tfvariants.cli import main
from tfvariants.execute import runner
from tfvariants.execute.record import StoredCell
from tfvariants.plan.topology import LogicalCpu, Topology

TWO_CORES = Topology((LogicalCpu(0, 0, 0, 0), LogicalCpu(1, 1, 0, 0)))


class DuetFake:
    """runner.run_cell for a duet: records each call's CPUs and overlap; a filler (``stop``
    given) runs until stopped, a cell takes a little while."""

    def __init__(self, slower: str = "onednn-off", ratio: float = 1.3) -> None:
        self.lock = threading.Lock()
        self.cells: list[tuple[str, tuple[int, ...], float, float]] = []
        self.fillers = 0
        self.slower, self.ratio = slower, ratio

    def __call__(self, cell, variant, options, folder, at=None, *, plan=None):
        stop = at.stop if at is not None else None
        if stop is not None:
            with self.lock:
                self.fillers += 1
            stop.wait(2.0)
            return StoredCell.written(cell.cell_id, {"status": "failed"}, folder.cells_dir / "f")
        start = time.monotonic()
        time.sleep(0.03)
        epoch = 2.0 * (self.ratio if cell.variant == self.slower else 1.0)
        r = rf.make_result(cell.variant, cell.threads, cell.workload, cell.repeat,
                           steady_epoch_s=epoch, noise=0.01)  # fmt: skip
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r))
        with self.lock:
            cpus = tuple(plan.cpus) if plan is not None else ()
            self.cells.append((cell.cell_id, cpus, start, time.monotonic()))
        return StoredCell.written(cell.cell_id, r, path)


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr("tfvariants.plan.spec.logical_cpus", lambda: 2)
    monkeypatch.setattr("tfvariants.plan.topology.read_topology", lambda *a, **k: TWO_CORES)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([], "--duet: needs one thread count (the plan has 1, 2)"),
        (["--threads", "2", "--variants", "local,onednn-off"], "need 4 CPUs on separate cores"),
        (["--threads", "1"], "needs at least two configurations"),
    ],
)
def test_a_duet_that_does_not_fit_is_refused_before_anything(
    argv, words, tmp_path, monkeypatch, capsys, two_cores
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", lambda *a, **k: pytest.fail("must not run"))
    assert main(["compare", "--quick", "--duet", "--workloads", "mnist_mlp", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
    assert os.listdir(tmp_path) == []


def test_duet_compare_runs_pairs_at_once_and_says_so(tmp_path, monkeypatch, capsys, two_cores):
    monkeypatch.chdir(tmp_path)
    fake = DuetFake()
    monkeypatch.setattr(runner, "run_cell", fake)
    argv = ["compare", "--quick", "--duet", "--threads", "1", "--variants", "local,onednn-off",
            "--workloads", "mnist_mlp", "--out", "results/d", "--no-probe",
            "--verbose"]  # fmt: skip
    assert main(argv) == 0
    by_id = {cid: (cpus, s, e) for cid, cpus, s, e in fake.cells}
    assert len(by_id) == 10  # 2 configurations x 5 repeats, decided at the first look
    for r in range(5):
        a = by_id[f"mnist_mlp__local__t1__r{r}"]
        b = by_id[f"mnist_mlp__onednn-off__t1__r{r}"]
        assert {a[0], b[0]} == {(0,), (1,)}  # one CPU each
        assert a[1] < b[2] and b[1] < a[2]  # they overlapped in time
        assert a[0] == ((0,) if r % 2 == 0 else (1,))  # the sides swap every other round
    run = json.loads((tmp_path / "results/d/run.json").read_text())
    assert run["options"]["duet"] is True
    err = capsys.readouterr().err
    assert "duet: two cells of a round at once, on CPUs 0 and 1" in err
    assert "Measured as a duet (--duet)" in err  # the console summary says what it means
    html = (tmp_path / "reports/d/index.html").read_text()
    assert "Measured as a duet (--duet)" in html
    assert "Two cells ran at a time (--duet)" in html  # what a repeat costs, said so
    assert "onednn-off@1" in html
    assert "local@1 was 1.30x faster than onednn-off@1" in err  # the pairs' ratio, decided


def test_a_resume_keeps_duet_and_cannot_switch_it_on(tmp_path, monkeypatch, capsys, two_cores):
    monkeypatch.chdir(tmp_path)
    fake = DuetFake()
    monkeypatch.setattr(runner, "run_cell", fake)
    base = ["compare", "--quick", "--threads", "1", "--variants", "local,onednn-off",
            "--workloads", "mnist_mlp", "--no-probe"]  # fmt: skip
    assert main([*base, "--out", "results/plain", "--repeats", "5"]) in (0, 1)
    capsys.readouterr()
    assert main(["compare", "--resume", "--out", "results/plain", "--duet"]) == 2
    assert "a resume cannot change that" in capsys.readouterr().err
    assert main([*base, "--duet", "--out", "results/d"]) == 0
    run = json.loads((tmp_path / "results/d/run.json").read_text())
    assert run["options"]["duet"] is True


def test_an_odd_round_leaves_one_cell_beside_fillers(tmp_path, monkeypatch, capsys, two_cores):
    monkeypatch.chdir(tmp_path)
    fake = DuetFake()
    monkeypatch.setattr(runner, "run_cell", fake)
    argv = ["compare", "--quick", "--duet", "--threads", "1", "--variants",
            "local,onednn-off,onednn-on", "--workloads", "mnist_mlp", "--out", "results/d",
            "--no-probe", "--repeats", "5"]  # fmt: skip
    assert main(argv) in (0, 1)
    ran = [cid for cid, *_ in fake.cells]
    assert len(ran) == len(set(ran)) >= 15  # every cell once (3 configurations x 5)
    # Per round two cells overlapped and one ran alone beside fillers: 5 rounds, 5 lone.
    assert fake.fillers >= 5
    for r in range(5):
        spans = [(s, e) for cid, _, s, e in fake.cells if cid.endswith(f"__r{r}")]
        overlapping = sum(
            1 for i, a in enumerate(spans) for b in spans[i + 1 :] if a[0] < b[1] and b[0] < a[1]
        )
        assert overlapping == 1  # one pair per round; the third cell had fillers
