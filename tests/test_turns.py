"""compare --turns: a round's cells of one workload at once on the same CPUs, taking
turns (execute/turns.py, workloads/turns.py). Real stub workers speak the protocol
over the real pipes: their turns never overlap, the first waits for every cell to be
ready, a cell that dies leaves the rotation, a waiting cell's threads are stopped, and a
Ctrl-C stops everything (stopped ones too) and stores nothing."""

from __future__ import annotations

import os
import signal
import threading
import time
import types

import pytest
from test_runner import TOPO, stub_variant
from test_stepload import HZ, FakeCallback, FakeMachine

from tfvariants.errors import UserError
from tfvariants.execute import process
from tfvariants.execute.runner import Conditions, RunOptions, run_cell
from tfvariants.execute.turns import Turns, partners
from tfvariants.plan.cell import Cell
from tfvariants.plan.pinning import plan_pinning
from tfvariants.store.runfolder import RunFolder
from workloads import stepload, worker
from workloads.protocol import RequestError, WorkerRequest
from workloads.turns import joined

# A worker that trains in turns: 20 ms "steps" of busy CPU until it has STUB_STEPS of
# them, a thread that spins all along (as an input pipeline's or a pool's would), each
# step's wall span and the spinner's count while it waited recorded in its result.
TURNER = """
import threading
from workloads.turns import Turns
steps = int(os.environ.get("STUB_STEPS", "20"))
if os.environ.get("STUB_DIE") == cell["variant"]:
    sys.exit(3)  # dies in its set-up: never ready
spins = [0]
def spin():
    while True:
        spins[0] += 1
threading.Thread(target=spin, daemon=True).start()
turns = Turns(request["turns"])
turns.begin()
spans, waits = [], []
for i in range(steps):
    t0 = time.time()
    while time.time() - t0 < 0.02:
        pass
    spans.append((t0, time.time()))
    if turns.due():
        w0 = time.time()
        turns.hand_over()
        waits.append((spins[0], time.time() - w0))
turns.end()
write_ok({"spans": spans, "waits": waits, "turns": turns.to_json()})
"""


def C(variant: str, workload: str = "mnist_mlp", repeat: int = 0, threads: int = 1) -> Cell:
    return Cell(variant, threads, workload, repeat)


def test_partners_are_the_rounds_cells_of_one_workload_and_thread_count():
    todo = [C("a"), C("b", "mnist_cnn"), C("b"), C("c", threads=2), C("c"), C("a", repeat=1)]
    assert partners(todo, 0) == [2, 4]
    assert partners(todo, 1) == []
    turns: Turns[Cell] = Turns(lambda c: plan_pinning(1, TOPO), lambda *a: None)  # type: ignore
    slot = turns.take(todo, 0)
    assert [c.variant for c in slot] == ["a", "b", "c"]
    assert [(c.variant, c.workload) for c in todo] == [
        ("a", "mnist_mlp"), ("b", "mnist_cnn"), ("c", "mnist_mlp"), ("a", "mnist_mlp")
    ]  # fmt: skip


def test_the_rotation_starts_one_further_each_round():
    turns: Turns[Cell] = Turns(lambda c: plan_pinning(1, TOPO), lambda *a: None)  # type: ignore
    cells = [C("b", repeat=1), C("a", repeat=1), C("c", repeat=1)]
    # cell-id order a, b, c (indexes 1, 0, 2), started at the second in round 1
    assert turns.order(cells) == [0, 2, 1]
    assert turns.order([C("b"), C("a"), C("c")]) == [1, 0, 2]


def _run_on(variant, timeout_s=30.0):
    def run_on(cell, folder, quiet, seat):
        at = Conditions(quiet=quiet, turns=seat)
        return run_cell(cell, variant, RunOptions(timeout_s=timeout_s), folder, TOPO, at)

    return run_on


def _turns(run_on, turn_s=0.1) -> Turns[Cell]:
    return Turns(lambda c: plan_pinning(c.threads, TOPO), run_on, turn_s=turn_s)


def test_real_workers_take_turns_never_at_once_and_wait_stopped(tmp_path):
    variant = stub_variant(tmp_path, TURNER, env={"STUB_STEPS": "25"})
    cells = [C("a"), C("b"), C("c")]
    executor = _turns(_run_on(variant))
    out = executor.run(cells, RunFolder(tmp_path / "run"))
    raws = {c.variant: out[c.cell_id].raw for c in cells}
    assert all(r["status"] == "ok" for r in raws.values()), raws
    # Every step ran alone: no two cells' steps overlap in time.
    spans = sorted((a, b, v) for v, r in raws.items() for a, b in r["spans"])
    for (_, end, v), (start, _, w) in zip(spans, spans[1:], strict=False):
        assert v == w or start >= end - 0.002, (v, w, end - start)
    # They took turns (each cell's steps come in several runs, interleaved), about
    # turn_s of steps each: 25 steps of 20 ms in turns of 0.1 s is 4-5 turns a cell.
    switches = sum(1 for a, b in zip(spans, spans[1:], strict=False) if a[2] != b[2])
    assert switches >= 9
    assert all(4 <= r["turns"]["turns"] <= 7 for r in raws.values()), raws
    # Stopped while waiting: the spinning thread barely ran during the waits.
    for r in raws.values():
        waited = sum(w[1] for w in r["waits"])
        assert waited > 0.2
        assert r["turns"]["busy_waiting_s"] < 0.1 * waited, r["turns"]
    assert executor.turns_given >= 9
    assert process._LIVE == {}


def test_a_cell_that_dies_before_its_first_turn_leaves_the_others_to_take_turns(tmp_path):
    variant = stub_variant(tmp_path, TURNER, env={"STUB_STEPS": "15", "STUB_DIE": "b"})
    cells = [C("a"), C("b"), C("c")]
    started = time.monotonic()
    out = _turns(_run_on(variant)).run(cells, RunFolder(tmp_path / "run"))
    assert out[cells[1].cell_id].status == "failed"
    ok = [out[c.cell_id].raw for c in (cells[0], cells[2])]
    assert all(r["status"] == "ok" and r["turns"]["turns"] >= 2 for r in ok)
    assert time.monotonic() - started < 20  # nobody waited for the dead cell's turn


def test_the_last_cell_left_runs_alone_to_its_end(tmp_path):
    short = stub_variant(tmp_path, TURNER, env={"STUB_STEPS": "6"})
    long_dir = tmp_path / "long"
    long_dir.mkdir()
    long = stub_variant(long_dir, TURNER, env={"STUB_STEPS": "40"})
    variants = {"mnist_mlp": short, "mnist_cnn": long}

    def run_on(cell, folder, quiet, seat):
        at = Conditions(quiet=quiet, turns=seat)
        return run_cell(cell, variants[cell.workload], RunOptions(timeout_s=30), folder, TOPO, at)

    cells = [C("a", "mnist_mlp"), C("a", "mnist_cnn")]
    out = _turns(run_on).run(cells, RunFolder(tmp_path / "run"))
    raw = out[cells[1].cell_id].raw
    assert raw["status"] == "ok"
    # 40 steps of 20 ms in turns of 0.1 s would be 8 turns; alone after the short
    # cell's 6 steps (2 turns) it waits at most twice.
    assert len(raw["waits"]) <= 3


def test_ctrl_c_stops_every_worker_even_a_stopped_one_and_stores_nothing(tmp_path):
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        variant = stub_variant(tmp_path, TURNER, env={"STUB_STEPS": "100000"})
        cells = [C("a"), C("b")]
        folder = RunFolder(tmp_path / "run")
        timer = threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            _turns(_run_on(variant)).run(cells, folder)
        assert time.monotonic() - started < 20
        stored = tmp_path / "run" / "cells"
        assert not stored.exists() or list(stored.iterdir()) == []
        assert process._LIVE == {}
    finally:
        signal.signal(signal.SIGINT, previous)
        process.clear_interrupt()


def test_a_turns_request_is_checked():
    base = WorkerRequest("w", {}, "/r.json", 1)
    good = {"go": "/g", "done": "/d", "turn_s": 1.0}
    text = base.to_json().replace('"turns": null', '"turns": TURNS')
    import json

    assert WorkerRequest.from_json(text.replace("TURNS", json.dumps(good))).turns == good
    for bad in ({"go": "/g", "done": "/d"}, {**good, "turn_s": 0}, {**good, "go": ""}, [1]):
        with pytest.raises(RequestError, match="turns"):
            WorkerRequest.from_json(text.replace("TURNS", json.dumps(bad)))


def test_cpu_use_over_the_turns_leaves_the_waits_out():
    def snap(wall, cpu, busy, idle, delay):
        return {"wall": wall, "cpu_s": cpu, "stat": {0: [busy, 0, 0, idle, 0, 0, 0, 0]},
                "delays": {"1": delay}}  # fmt: skip

    # two turns of 1 s, ours all busy; 5 s between them in which others used the CPU
    spans = [(snap(0, 0, 0, 0, 0), snap(1, 1, HZ, 0, 10)), (snap(6, 1, 6 * HZ, 0, 10),
             snap(7, 2, 7 * HZ, 0, 30))]  # fmt: skip
    first, last = joined(spans)
    assert last["wall"] - first["wall"] == 2 and last["cpu_s"] - first["cpu_s"] == 2
    assert last["stat"][0][0] - first["stat"][0][0] == 2 * HZ  # the 5 s between: out
    assert last["delays"]["1"] - first["delays"]["1"] == 30


def test_another_cells_turn_is_no_interval_of_ours():
    m = FakeMachine()
    s = stepload.Sampler([0], read_stat=m.stat, cpu_seconds=m.cpu_seconds)
    s.begin(0.0)
    m.run(1.0, ours=1.0, others=0.0)
    s.mark(1.0, stepload.STEPS)
    m.run(0.1, ours=0.0, others=1.0)  # another cell's turn, shorter than sample_s
    s.mark(1.1, stepload.TURN)
    m.run(0.1, ours=1.0, others=0.0)  # a short part after it: not joined across the turn
    s.mark(1.2, stepload.STEPS)
    m.run(1.0, ours=1.0, others=0.0)
    s.mark(2.2, stepload.STEPS)
    got = s.intervals()
    assert [(iv.start, iv.end) for iv in got] == [(0.0, 1.0), (1.1, 2.2)]
    assert all(iv.share == pytest.approx(0.0, abs=0.02) for iv in got)


class PausingTurns:
    """workloads.turns.Turns as the timer sees it: every third step ends a turn, and
    the others' turn takes 5 s of the (fake) clock."""

    def __init__(self, clock) -> None:
        self.clock, self.steps, self.free = clock, 0, False

    def due(self, stopping=False):
        self.steps += 1
        return self.steps % 3 == 0

    def hand_over(self):
        self.clock.now += 5.0
        return 5.0

    def begin(self):
        pass

    def end(self):
        pass


def test_the_waits_are_in_no_step_and_no_epoch(monkeypatch):
    clock = types.SimpleNamespace(now=0.0)

    def tick():
        clock.now += 0.1
        return clock.now

    monkeypatch.setattr(worker.time, "perf_counter", tick)
    keras = types.SimpleNamespace(callbacks=types.SimpleNamespace(Callback=FakeCallback))
    timer = worker.make_timer(keras, turns=PausingTurns(clock))
    timer.model = types.SimpleNamespace(stop_training=False)
    timer.on_train_begin()
    for epoch in range(2):
        timer.on_epoch_begin(epoch)
        for b in range(6):
            timer.on_train_batch_begin(b)
            timer.on_train_batch_end(b)
        timer.on_epoch_end(epoch)
    assert max(timer.all_steps) < 1.0  # no 5 s wait in any step
    assert max(timer.epoch_times) < 3.0  # nor in an epoch (4 waits were made)
    assert timer.epoch_times[1] - timer.train_times[1] < 0.5


def test_turns_is_refused_in_one_line_where_it_cannot_run(monkeypatch, capsys):
    from tfvariants.cli import main

    assert main(["compare", "--quick", "--turns", "--duet", "--workloads", "mnist_mlp"]) == 2
    assert "--turns and --duet" in capsys.readouterr().err


def test_check_turns_refuses_ray_and_containers():
    from tfvariants.commands.compare_spec import check_turns

    spec = types.SimpleNamespace(options=types.SimpleNamespace(turns=True, duet=False))
    pinned = types.SimpleNamespace(pins_on_host=lambda: True)
    boxed = types.SimpleNamespace(pins_on_host=lambda: False)
    assert check_turns(spec, {"a": pinned}, "local") is True  # type: ignore[arg-type]
    with pytest.raises(UserError, match="this host's executor"):
        check_turns(spec, {"a": pinned}, "ray")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="b run"):
        check_turns(spec, {"a": pinned, "b": boxed}, "local")  # type: ignore[arg-type]
