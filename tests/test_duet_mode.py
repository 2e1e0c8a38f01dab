"""compare --duet: where it fits (plan/duet.py), how slots are formed and run
(execute/duet.py), and two real workers at once under one host process: neither
cell's clean-up takes the other's worker, fillers keep a side busy until the other's
cell ends, and a Ctrl-C stops both and stores nothing."""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_runner import TOPO, stub_variant

from tfvariants.errors import UserError
from tfvariants.execute import process
from tfvariants.execute.duet import Duet, partner
from tfvariants.execute.quiet import QuietWait
from tfvariants.execute.record import StoredCell
from tfvariants.execute.runner import Conditions, RunOptions, run_cell
from tfvariants.plan.cell import Cell
from tfvariants.plan.duet import DuetPlans, duet_fit, duet_plans
from tfvariants.plan.pinning import plan_pinning
from tfvariants.plan.topology import LogicalCpu, Topology
from tfvariants.store.runfolder import RunFolder


def topo(cores: int, smt: int = 1) -> Topology:
    """``cores`` cores of ``smt`` siblings each (CPU ids sibling-major, as Linux numbers)."""
    return Topology(
        tuple(LogicalCpu(s * cores + c, c, 0, 0) for c in range(cores) for s in range(smt))
    )


# ---- where it fits ----


def test_two_single_cpu_cores_fit_one_thread_a_side_only():
    plans = duet_plans(1, topo(2))
    assert isinstance(plans, DuetPlans)
    assert plans.first.cpus == (0,) and plans.second.cpus == (1,)
    assert plans.cpus() == (0, 1)
    why = duet_plans(2, topo(2))
    assert isinstance(why, str) and "need 4 CPUs on separate cores" in why


def test_the_second_side_never_takes_a_sibling_of_the_first():
    # 2 cores x 2 siblings: a 2-thread side takes a whole core, the other the other core.
    plans = duet_plans(2, topo(2, smt=2))
    assert isinstance(plans, DuetPlans)
    first, second = set(plans.first.cpus), set(plans.second.cpus)
    assert first == {0, 2} and second == {1, 3}
    # 1 thread: the other side goes to the other core, not to CPU 0's sibling (2).
    one = duet_plans(1, topo(2, smt=2))
    assert isinstance(one, DuetPlans) and one.second.cpus == (1,)
    # One core with two siblings: no second core, no duet.
    assert isinstance(duet_plans(1, topo(1, smt=2)), str)


def test_the_first_side_is_the_plan_a_lone_cell_gets():
    t = topo(4, smt=2)
    plans = duet_plans(2, t)
    assert isinstance(plans, DuetPlans) and plans.first == plan_pinning(2, t)


@pytest.mark.parametrize(
    ("threads", "configs", "pinned", "executor", "words"),
    [
        ([1, 2], 4, {"local": True}, "local", "needs one thread count (the plan has 1, 2)"),
        ([1], 1, {"local": True}, "local", "at least two configurations"),
        ([1, 1], 2, {"local": True, "pip": False}, "local", "pip run(s) in a container"),
        ([1, 1], 2, {"local": True}, "ray", "this host's executor only"),
        ([2, 2], 2, {"local": True}, "local", "need 4 CPUs on separate cores"),
    ],
)
def test_what_does_not_fit_is_said_in_one_line(threads, configs, pinned, executor, words):
    why = duet_fit(threads, configs, pinned, topo(2), executor=executor)
    assert isinstance(why, str) and why.startswith("--duet: ") and words in why
    assert "\n" not in why


def test_a_plan_that_fits_has_no_problem():
    fit = duet_fit([1, 1, 1], 3, {"a": True, "b": True}, topo(2))
    assert isinstance(fit, DuetPlans) and fit == duet_plans(1, topo(2))


# ---- slots ----


@dataclass(frozen=True)
class C:
    variant: str
    workload: str
    repeat: int

    @property
    def cell_id(self) -> str:
        return f"{self.workload}__{self.variant}__r{self.repeat}"


def test_partner_is_the_same_rounds_same_workload_first():
    todo = [C("a", "w1", 0), C("a", "w2", 0), C("b", "w1", 0), C("b", "w2", 0), C("a", "w1", 1)]
    assert partner(todo, 0) == 2  # w1 with w1, skipping w2
    assert partner(todo, 1) == 3
    # No cell of the same workload left in the round: another workload's, same round.
    assert partner([C("a", "w1", 0), C("b", "w2", 0)], 0) == 1
    # Never a cell of another round: a lone cell runs beside fillers.
    assert partner([C("a", "w1", 0), C("b", "w1", 1)], 0) is None
    assert partner([C("a", "w1", 0)], 0) is None


class FakeRun:
    """run_on that records what ran where; a cell takes ``took[variant]`` seconds, a
    filler until it is stopped (or ``filler_s``)."""

    def __init__(self, took: dict[str, float], filler_s: float = 5.0, fail: str = "") -> None:
        self.took, self.filler_s, self.fail = took, filler_s, fail
        self.lock = threading.Lock()
        self.events: list[tuple[str, str, tuple[int, ...], float, float]] = []
        self.t0 = time.monotonic()

    def __call__(self, cell, folder, plan, quiet, stop):
        kind = "filler" if stop is not None else "cell"
        start = time.monotonic() - self.t0
        if quiet is not None:
            quiet(plan.cpus)
        if stop is not None:
            stop.wait(self.filler_s)
        else:
            time.sleep(self.took[cell.variant])
        end = time.monotonic() - self.t0
        with self.lock:
            self.events.append((kind, cell.variant, plan.cpus, start, end))
        status = "failed" if kind == "cell" and cell.variant == self.fail else "ok"
        raw = {"status": status, "reason": "x" if status != "ok" else None}
        if kind == "cell":
            path = folder.write_cell(cell.cell_id, raw)
            return StoredCell.written(cell.cell_id, raw, path)
        return StoredCell.written(cell.cell_id, raw, Path(folder.root) / "f.json")


def _plans() -> DuetPlans:
    plans = duet_plans(1, topo(2))
    assert isinstance(plans, DuetPlans)
    return plans


def test_a_pair_runs_at_once_and_the_faster_side_is_kept_busy(tmp_path):
    run = FakeRun({"a": 0.2, "b": 0.6})
    out = Duet(_plans(), run).run(C("b", "w", 0), C("a", "w", 0), RunFolder(tmp_path))
    assert set(out.stored) == {"w__a__r0", "w__b__r0"}
    cells = {e[1]: e for e in run.events if e[0] == "cell"}
    # Both started together (not one after the other).
    assert abs(cells["a"][3] - cells["b"][3]) < 0.15
    # a ended first: its side ran a filler of a on a's CPU until b's cell ended.
    fillers = [e for e in run.events if e[0] == "filler"]
    assert fillers and all(f[1] == "a" and f[2] == cells["a"][2] for f in fillers)
    assert fillers[-1][4] >= cells["b"][4] - 0.05
    assert out.fillers == len(fillers)
    # In cell-id order a, b: round 0 puts a on the first plan's CPU.
    assert cells["a"][2] == (0,) and cells["b"][2] == (1,)


def test_the_sides_swap_cpus_every_other_round(tmp_path):
    run = FakeRun({"a": 0.05, "b": 0.05})
    Duet(_plans(), run).run(C("a", "w", 1), C("b", "w", 1), RunFolder(tmp_path))
    cells = {e[1]: e[2] for e in run.events if e[0] == "cell"}
    assert cells == {"a": (1,), "b": (0,)}


def test_a_lone_cell_runs_beside_fillers_from_the_start(tmp_path):
    run = FakeRun({"a": 0.4})
    out = Duet(_plans(), run).run(C("a", "w", 0), None, RunFolder(tmp_path))
    assert list(out.stored) == ["w__a__r0"]
    cell = next(e for e in run.events if e[0] == "cell")
    fillers = [e for e in run.events if e[0] == "filler"]
    assert fillers and fillers[0][3] < 0.15 and fillers[0][2] != cell[2]
    assert fillers[-1][4] >= cell[4] - 0.05


def test_a_failed_cell_is_a_result_and_its_runner_error_is_handed_back(tmp_path):
    run = FakeRun({"a": 0.05, "b": 0.05}, fail="a")
    out = Duet(_plans(), run).run(C("a", "w", 0), C("b", "w", 0), RunFolder(tmp_path))
    assert out.stored["w__a__r0"].status == "failed"

    def broken(cell, folder, plan, quiet, stop):
        if cell.variant == "a" and stop is None:
            raise RuntimeError("runner bug")
        return run(cell, folder, plan, quiet, stop)

    out = Duet(_plans(), broken).run(C("a", "w", 1), C("b", "w", 1), RunFolder(tmp_path))
    assert isinstance(out.stored["w__a__r1"], RuntimeError)
    assert out.stored["w__b__r1"].status == "ok"


def test_a_side_whose_cell_cannot_run_keeps_the_other_company_with_its_cell(tmp_path):
    run = FakeRun({"a": 0.01, "b": 0.5}, fail="a")  # a fails at once (as a skipped cell)
    out = Duet(_plans(), run).run(C("a", "w", 0), C("b", "w", 0), RunFolder(tmp_path))
    assert out.stored["w__a__r0"].status == "failed"
    b = next(e for e in run.events if e[0] == "cell" and e[1] == "b")
    fillers = [e for e in run.events if e[0] == "filler"]
    # The failed side ran b's cell as its filler, on its own CPU, until b ended.
    assert fillers and all(f[1] == "b" and f[2] != b[2] for f in fillers)
    assert fillers[-1][4] >= b[4] - 0.05


class Gate:
    """A quiet gate that records its calls and what it observed."""

    limit = 0.05

    def __init__(self) -> None:
        self.calls: list[tuple[int, ...]] = []
        self.seen: list[str] = []

    def __call__(self, cpus):
        self.calls.append(tuple(cpus))
        return QuietWait(3.0, 0.01, True, 0.05, 30.0)

    def observe(self, result):
        self.seen.append(result["tag"])


def test_one_wait_per_slot_on_both_sets_and_the_disturbed_cell_alone_is_observed(tmp_path):
    gate = Gate()
    given: list[object] = []

    def run_on(cell, folder, plan, quiet, stop):
        if stop is not None:
            stop.wait(2)
            return StoredCell.written("f", {"status": "ok"}, tmp_path / "f")
        given.append(quiet(plan.cpus))
        raw = {"status": "ok", "tag": cell.variant}
        return StoredCell.written(cell.cell_id, raw, folder.write_cell(cell.cell_id, raw))

    duet = Duet(_plans(), run_on, gate, disturbed=lambda r: "busy" if r["tag"] == "b" else None)
    duet.run(C("a", "w", 0), C("b", "w", 0), RunFolder(tmp_path))
    assert gate.calls == [(0, 1)]  # once, on both CPU sets
    # Each cell records what the slot's wait found; its seconds are counted once.
    assert sorted(w.waited_s for w in given) == [0.0, 3.0]
    assert all(w.quiet and w.others_share == 0.01 for w in given)
    assert gate.seen == ["b"]  # the disturbed one: the wait did not pay


# ---- real workers, one host process ----

SLEEPER = """
t0 = time.time()
mark = os.environ.get("STUB_MARK")  # given: the first run sleeps STUB_SLEEP, later ones long
again = bool(mark) and os.path.exists(mark)
if mark and not again:
    open(mark, "w").close()
time.sleep(LONG_S if again else float(os.environ.get("STUB_SLEEP", "1")))
write_ok({"t0": t0, "t1": time.time()})
""".replace("LONG_S", "60")
LONG_S = 60.0  # a worker that would outlast any test: stopping it is what is checked


def _real_run_on(variant):
    def run_on(cell, folder, plan, quiet, stop):
        return run_cell(
            cell, variant, RunOptions(timeout_s=30), folder, TOPO, Conditions(stop=stop), plan=plan
        )

    return run_on


def _cpus() -> DuetPlans:
    plans = duet_plans(1, TOPO)
    if isinstance(plans, str):
        pytest.skip(plans)
    return plans


def test_two_real_workers_at_once_neither_sweep_kills_the_other(tmp_path):
    variant = stub_variant(tmp_path, SLEEPER, env={"STUB_SLEEP": "1.5"})
    a = Cell("stub", 1, "mnist_mlp", 0)
    b = Cell("stub", 1, "mnist_cnn", 0)  # another workload: another cell id
    out = Duet(_cpus(), _real_run_on(variant)).run(a, b, RunFolder(tmp_path / "run"))
    for cell in (a, b):
        got = out.stored[cell.cell_id]
        assert isinstance(got, StoredCell) and got.status == "ok", got
        assert not got.raw["runner"].get("killed")  # nothing of the other's was swept
    # Each worker pinned to its side's CPU.
    seen = {tuple(out.stored[c.cell_id].raw["applied"]["affinity"]) for c in (a, b)}
    assert seen == {(0,), (1,)}
    # At once, not one after the other: each worker started before the other ended.
    ra, rb = (out.stored[c.cell_id].raw for c in (a, b))
    assert ra["t0"] < rb["t1"] and rb["t0"] < ra["t1"]
    assert process._LIVE == {}  # nothing left registered


def test_a_filler_is_stopped_when_the_other_cell_ends(tmp_path):
    # The quick cell sleeps 0.2 s; its fillers would sleep LONG_S unless stopped.
    mark = str(tmp_path / "ran-once")
    quick = stub_variant(tmp_path, SLEEPER, env={"STUB_SLEEP": "0.2", "STUB_MARK": mark})
    slow_dir = tmp_path / "slow"
    slow_dir.mkdir()
    slow = stub_variant(slow_dir, SLEEPER, env={"STUB_SLEEP": "2.5"})
    variants = {"mnist_mlp": quick, "mnist_cnn": slow}

    def run_on(cell, folder, plan, quiet, stop):
        return run_cell(cell, variants[cell.workload], RunOptions(timeout_s=30), folder,
                        TOPO, Conditions(stop=stop), plan=plan)  # fmt: skip

    a, b = Cell("stub", 1, "mnist_mlp", 0), Cell("stub", 1, "mnist_cnn", 0)
    started = time.monotonic()
    out = Duet(_cpus(), run_on).run(a, b, RunFolder(tmp_path / "run"))
    wall = time.monotonic() - started
    assert out.fillers >= 1  # the quick side ran a filler of itself
    assert out.stored[a.cell_id].status == out.stored[b.cell_id].status == "ok"
    # The filler was stopped as b ended, not left to sleep out its LONG_S.
    assert wall < LONG_S / 2
    assert process._LIVE == {}


def test_ctrl_c_stops_both_workers_and_stores_nothing(tmp_path):
    # A shell starts background jobs with SIGINT ignored (a CI run started with `&`), and
    # Python keeps an inherited "ignore": the Ctrl-C this test sends must raise as it does
    # at a terminal.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_stops_both(tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_stops_both(tmp_path):
    variant = stub_variant(tmp_path, SLEEPER, env={"STUB_SLEEP": str(LONG_S)})
    a, b = Cell("stub", 1, "mnist_mlp", 0), Cell("stub", 1, "mnist_cnn", 0)
    folder = RunFolder(tmp_path / "run")
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        Duet(_cpus(), _real_run_on(variant)).run(a, b, folder)
    assert time.monotonic() - started < LONG_S / 2  # stopped, not waited out
    cells = tmp_path / "run" / "cells"
    assert not cells.exists() or list(cells.iterdir()) == []
    assert process._LIVE == {}
    process.clear_interrupt()


def test_resume_cannot_switch_duet_on(tmp_path):
    import argparse

    from tfvariants.commands import rounds
    from tfvariants.store.record import run_record

    args = argparse.Namespace(quick=True, budget_s=None, duet=True, min_steady_s=None,
                              data_dir=None)  # fmt: skip
    with pytest.raises(UserError, match="measured one at a time"):
        rounds.training_options(args, run_record({"options": {"quick": True}}), repeats=5)
