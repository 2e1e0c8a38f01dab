import dataclasses
import io
import json

import pytest
from rich.console import Console

from tfvariants.errors import UserError
from tfvariants.execute.eta import EtaModel
from tfvariants.execute.matrix import Matrix
from tfvariants.execute.policy import Policy
from tfvariants.execute.record import StoredCell
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.spec import MatrixSpec, plan_cells
from tfvariants.store.rundir import load_run_dir


def stored_results(path):
    return load_run_dir(path).results


def spec(**kw):
    base = dict(
        variants=("pip", "compiled"),
        threads=(1, 2),
        workloads=("mnist_mlp", "mnist_cnn"),
        repeats=3,
        options=TrainingOptions(epochs=2, samples=2000, data="synthetic", seed=0, timeout_s=60),
    )
    base.update(kw)
    return MatrixSpec(**base)


class FakeRunner:
    """Stands in for tfvariants.execute.runner.run_cell: writes the result file like the runner."""

    def __init__(self, fail=(), interrupt_at=None, raise_at=None):
        self.calls = []
        self.fail = set(fail)
        self.interrupt_at = interrupt_at
        self.raise_at = raise_at

    def __call__(self, cell, folder):
        self.calls.append(cell.cell_id)
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt
        if self.raise_at is not None and len(self.calls) == self.raise_at:
            raise RuntimeError("runner bug")
        status = "failed" if cell.cell_id in self.fail else "ok"
        result = {
            "schema_version": 1,
            "kind": "tfvariants.cell",
            "cell": {
                "variant": cell.variant,
                "threads": cell.threads,
                "workload": cell.workload,
                "repeat": cell.repeat,
            },
            "status": status,
            "reason": "boom" if status == "failed" else None,
            "timing": {"epoch_times_s": [1.0]},
        }
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.write_text(json.dumps(result))
        return StoredCell.written(cell.cell_id, result, path)


def test_plan_is_interleaved_rounds():
    cells = plan_cells(spec())
    assert len(cells) == 2 * 2 * 2 * 3
    per_round = 8
    for r in range(3):
        round_cells = cells[r * per_round : (r + 1) * per_round]
        assert {c.repeat for c in round_cells} == {r}
        assert len({(c.variant, c.threads, c.workload) for c in round_cells}) == per_round
    assert cells[0].cell_id == "mnist_mlp__pip__t1__r0"


def test_run_writes_run_json_and_every_cell(tmp_path):
    fake = FakeRunner()
    out = Matrix(spec(), tmp_path / "run").run(run_cell=fake)
    assert out.count("ok") == 24 and out.exit_code() == 0
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["variants"] == ["pip", "compiled"] and run["threads"] == [1, 2]
    assert run["repeats"] == 3 and run["options"]["samples"] == 2000 and run["started_at"]
    assert len(stored_results(tmp_path / "run")) == 24


def test_interrupt_then_resume_keeps_finished_cells_and_skips_them(tmp_path):
    out_dir = tmp_path / "run"
    first = FakeRunner(interrupt_at=5)
    outcome = Matrix(spec(), out_dir).run(run_cell=first)
    assert outcome.was_interrupted and outcome.exit_code() == 130
    assert outcome.interrupted.cell_id == first.calls[4]
    saved = stored_results(out_dir)
    assert set(saved) == set(first.calls[:4])  # the interrupted cell is not recorded
    mtimes = {p.name: p.stat().st_mtime_ns for p in (out_dir / "cells").glob("*.json")}

    second = FakeRunner()
    outcome = Matrix(spec(), out_dir).run(run_cell=second, resume=True)
    assert not set(first.calls[:4]) & set(second.calls)  # finished cells not re-run
    assert second.calls[0] == first.calls[4]  # the interrupted one runs first
    assert len(second.calls) == 24 - 4
    assert outcome.count("ok") == 24 and outcome.exit_code() == 0
    for name, mtime in mtimes.items():  # ... and not rewritten or lost
        assert (out_dir / "cells" / name).stat().st_mtime_ns == mtime


def test_failed_cell_does_not_stop_the_matrix_and_resume_reruns_it(tmp_path):
    out_dir = tmp_path / "run"
    bad = "mnist_cnn__compiled__t2__r1"
    outcome = Matrix(spec(), out_dir).run(run_cell=FakeRunner(fail={bad}))
    assert outcome.count("ok") == 23 and outcome.problems == [bad]
    assert outcome.reasons[bad] == "boom" and outcome.exit_code() == 1
    again = FakeRunner()
    outcome = Matrix(spec(), out_dir).run(run_cell=again, resume=True)
    assert again.calls == [bad]
    assert outcome.exit_code() == 0


def test_skipped_cells_are_done(tmp_path):
    def skipper(cell, folder):
        r = {
            "schema_version": 1,
            "kind": "tfvariants.cell",
            "cell": {
                "variant": cell.variant,
                "threads": cell.threads,
                "workload": cell.workload,
                "repeat": cell.repeat,
            },
            "status": "skipped",
            "reason": "no GPU",
        }
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.write_text(json.dumps(r))
        return StoredCell.written(cell.cell_id, r, path)

    out_dir = tmp_path / "run"
    assert Matrix(spec(), out_dir).run(run_cell=skipper).exit_code() == 0
    again = FakeRunner()
    Matrix(spec(), out_dir).run(run_cell=again, resume=True)
    assert again.calls == []


def test_runner_exception_becomes_a_failed_cell(tmp_path):
    out_dir = tmp_path / "run"
    outcome = Matrix(spec(), out_dir).run(run_cell=FakeRunner(raise_at=2))
    assert outcome.count("failed") == 1 and outcome.count("ok") == 23
    failed = [r for r in stored_results(out_dir).values() if r["status"] == "failed"]
    assert "runner error: RuntimeError: runner bug" in failed[0]["reason"]
    assert failed[0]["runner"]["host_id"]  # the Matrix's addition is stored, not added after
    (cid,) = outcome.reasons
    assert outcome.reasons[cid].startswith("runner error: RuntimeError")


def test_resume_never_overwrites_a_file_it_cannot_read(tmp_path):
    out_dir = tmp_path / "run"
    Matrix(spec(), out_dir).run(run_cell=FakeRunner())
    bad = out_dir / "cells" / "mnist_mlp__pip__t1__r0.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match=r"cells/mnist_mlp__pip__t1__r0.json.*--quarantine"):
        Matrix(spec(), out_dir).run(run_cell=FakeRunner(), resume=True)
    assert bad.read_text() == "{not json"
    again = FakeRunner()  # --quarantine moves it aside (bytes kept), then reruns the cell
    matrix = Matrix(spec(), out_dir)
    matrix.prepare(resume=True, quarantine=True)
    outcome = matrix.run(run_cell=again)
    assert again.calls == ["mnist_mlp__pip__t1__r0"]
    assert (out_dir / "quarantine" / bad.name).read_text() == "{not json"
    assert "quarantine" in outcome.quarantined[0] and "corrupt JSON" in outcome.quarantined[0]


def test_resume_refuses_a_different_matrix(tmp_path):
    out_dir = tmp_path / "run"
    Matrix(spec(), out_dir).run(run_cell=FakeRunner(interrupt_at=2))
    with pytest.raises(UserError, match=r"different matrix.*threads \[1, 2\] vs \[1, 4\]"):
        Matrix(spec(threads=(1, 4)), out_dir).run(run_cell=FakeRunner(), resume=True)
    other = dataclasses.replace(spec().options, samples=5000)
    with pytest.raises(UserError, match=r"--samples 2000 vs 5000"):
        Matrix(spec(options=other), out_dir).run(run_cell=FakeRunner(), resume=True)
    # a longer timeout is fine: it does not change what a cell measures
    longer = dataclasses.replace(spec().options, timeout_s=600)
    assert (
        Matrix(spec(options=longer), out_dir).run(run_cell=FakeRunner(), resume=True).exit_code()
        == 0
    )


def test_fresh_run_into_an_existing_run_is_refused(tmp_path):
    out_dir = tmp_path / "run"
    Matrix(spec(), out_dir).run(run_cell=FakeRunner(interrupt_at=1))
    with pytest.raises(UserError, match="already holds a run: add --resume"):
        Matrix(spec(), out_dir).run(run_cell=FakeRunner())
    with pytest.raises(UserError, match="nothing to resume"):
        Matrix(spec(), tmp_path / "none").run(run_cell=FakeRunner(), resume=True)
    assert not (tmp_path / "none").exists()


def test_eta_learns_from_finished_cells():
    cells = plan_cells(spec())
    eta = EtaModel()
    assert eta.remaining(cells) is None
    eta.record(cells[0], 10.0)
    assert eta.estimate(cells[1]) == 10.0  # overall mean before more is known
    eta.record(cells[1], 20.0)
    assert eta.estimate(cells[1]) == 20.0  # same configuration
    assert eta.remaining(cells[8:10]) == 30.0  # next round: its own configs


def test_progress_display_prints_a_line_per_cell(tmp_path):
    buf = io.StringIO()
    console = Console(file=buf, width=120, force_terminal=False)
    Matrix(spec(repeats=1), tmp_path / "run").run(
        run_cell=FakeRunner(fail={"mnist_mlp__pip__t2__r0"}), console=console
    )
    text = buf.getvalue()
    assert "ok mnist_mlp__pip__t1__r0" in text
    assert "failed mnist_mlp__pip__t2__r0" in text and "boom" in text


def cells_taking(seconds):
    """A fake clock, a FakeRunner, and a run_cell on which every cell takes ``seconds``."""
    now = [0.0]

    def clock():
        return now[0]

    runner = FakeRunner()

    def run_cell(cell, folder):
        now[0] += seconds
        return runner(cell, folder)

    return clock, runner, run_cell


def test_adaptive_rounds_stop_before_the_budget_is_exceeded(tmp_path):
    from tfvariants.plan.cell import Cell

    clock, runner, run_cell = cells_taking(3.0)

    asked = []

    def next_round(stored):
        asked.append(len(stored))
        rep = max(r.round for r in stored.values()) + 1
        return [Cell("pip", 1, "mnist_mlp", rep), Cell("pip", 2, "mnist_mlp", rep)], "undecided"

    s = spec(variants=("pip",), workloads=("mnist_mlp",), repeats=2)
    out = Matrix(s, tmp_path / "run").run(
        run_cell=run_cell, policy=Policy(next_round, 20.0, clock=clock)
    )
    # 4 planned cells = 12 s; a round of 2 cells (6 s) fits once (18 s); the next would not
    assert len(runner.calls) == 6 and [r["repeat"] for r in out.rounds] == [2]
    assert out.stopped.startswith("budget: 18s spent") and out.spent_s == 18.0
    assert out.planned == 6 and out.exit_code() == 0


def test_a_budget_that_covers_the_plan_stops_planned_cells_too(tmp_path):
    clock, runner, run_cell = cells_taking(3.0)

    s = spec(variants=("pip",), workloads=("mnist_mlp",), repeats=3)  # 6 cells, 18 s
    out = Matrix(s, tmp_path / "run").run(
        run_cell=run_cell, policy=Policy(budget_s=10.0, budget_covers_plan=True, clock=clock)
    )
    # 3 cells = 9 s; the 4th would end at 12 s, past the 10 s budget: not started
    assert len(runner.calls) == 3 and out.missing == 3 and out.exit_code() == 1
    assert (
        out.stopped
        == "budget: the next cell would overrun the 10s budget (3 planned cell(s) not run)"
    )
    # without it, the planned cells all run whatever the budget (compare's rule)
    out = Matrix(s, tmp_path / "run2").run(
        run_cell=run_cell, policy=Policy(budget_s=10.0, clock=clock)
    )
    assert out.missing == 0


def test_a_failed_cells_reason_reaches_the_terminal_without_escapes(tmp_path):
    """A workload's exception text is its own: an ANSI escape in it is shown escaped."""

    class Hostile(FakeRunner):
        def __call__(self, cell, folder):
            result = super().__call__(cell, folder)
            return dataclasses.replace(result, reason="boom \x1b[2J\x1b[31mred\nsecond line")

    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False)
    bad = "mnist_mlp__pip__t2__r0"
    outcome = Matrix(spec(repeats=1), tmp_path / "run").run(
        run_cell=Hostile(fail={bad}), console=console
    )
    assert (
        "\x1b" not in buf.getvalue() and "boom \\x1b[2J\\x1b[31mred\\nsecond line" in buf.getvalue()
    )
    assert outcome.reasons[bad] == "boom \\x1b[2J\\x1b[31mred\\nsecond line"


@pytest.mark.parametrize(("seconds", "said"), [(3.0, True), (1.0, False)])
def test_planned_rounds_that_will_overrun_the_budget_are_said_once_at_their_pace(
    tmp_path, seconds, said
):
    """5 planned rounds of 2 cells: at 3 s a cell they end at 30 s, past a 20 s budget,
    which the first two rounds' pace tells; at 1 s (10 s) nothing is said."""
    clock, runner, run_cell = cells_taking(seconds)
    buf = io.StringIO()
    console = Console(file=buf, width=400, force_terminal=False)
    s = spec(variants=("pip",), workloads=("mnist_mlp",), repeats=5)
    Matrix(s, tmp_path / "run").run(
        run_cell=run_cell,
        console=console,
        policy=Policy(lambda stored: ([], "decided"), 20.0, clock=clock),
    )
    notes = [ln for ln in buf.getvalue().splitlines() if ln.startswith("note: at this run's pace")]
    if said:
        assert len(notes) == 1
        # after two rounds (4 cells, 12 s): 12 s + 6 cells x 3 s = 30 s
        assert "the first look will end after about 30s, past the 20s budget" in notes[0]
    else:
        assert notes == []


class Waves:
    """An executor that takes the rest of a round at once (as RayWaves does), each cell
    timed where it ran; interrupted after ``interrupt_after`` cells of a wave."""

    width = 0
    round_fields = {"wave": "test"}
    all_hosts = True

    def __init__(self, runner, interrupt_after=None):
        self.runner, self.interrupt_after, self.waves = runner, interrupt_after, []
        self.entered = self.exited = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        self.exited += 1

    def take(self, todo, i):
        slot = todo[i:]
        del todo[i + 1 :]
        return slot

    def estimate(self, cells, eta):
        return 0.0

    def submit(self, cells, folder):
        from tfvariants.execute.executors import Finished

        self.waves.append([c.cell_id for c in cells])
        for n, cell in enumerate(cells):
            if n == self.interrupt_after:
                raise KeyboardInterrupt
            yield Finished(cell, self.runner(cell, folder), 2.5)


def test_the_one_loop_runs_a_wave_executor_its_rounds_recorded_as_its_own(tmp_path):
    from tfvariants.plan.cell import Cell

    runner = FakeRunner()
    asked = []

    def next_round(stored):
        asked.append(len(stored))
        if len(asked) > 1:
            return [], "decided"
        return [Cell("pip", 1, "mnist_mlp", 2), Cell("pip", 2, "mnist_mlp", 2)], "undecided"

    waves = Waves(runner)
    s = spec(variants=("pip",), workloads=("mnist_mlp",), repeats=2)
    out = Matrix(s, tmp_path / "run").run(executor=waves, policy=Policy(next_round, 100.0))
    assert [len(w) for w in waves.waves] == [4, 2] and (waves.entered, waves.exited) == (1, 1)
    assert asked == [4, 6] and out.stopped == "decided" and out.planned == 6
    assert [(r["repeat"], r["cells"], r["wave"]) for r in out.rounds] == [(2, 2, "test")]
    assert out.exit_code() == 0 and len(runner.calls) == 6


def test_an_interrupted_wave_names_its_first_cell_not_stored(tmp_path):
    runner = FakeRunner()
    s = spec(variants=("pip",), workloads=("mnist_mlp",), repeats=2)
    out = Matrix(s, tmp_path / "run").run(executor=Waves(runner, interrupt_after=1))
    assert out.was_interrupted and out.exit_code() == 130
    assert len(out.ran) == 1 and out.interrupted is not None
    assert out.interrupted.cell_id == plan_cells(s)[1].cell_id
