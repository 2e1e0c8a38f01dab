"""Interference: the wait for quiet, the one disturbed classification, re-runs as new
attempts, what the verdicts use, and each round's seeded order."""

import json

import pytest
from resultfactory import make_result, write_results

from tfvariants.analyze.statistics import interference
from tfvariants.analyze.statistics.verdicts import round_values
from tfvariants.execute.matrix import Matrix
from tfvariants.execute.policy import Policy
from tfvariants.execute.quiet import SUSTAINED_AFTER, QuietGate, QuietWait, wait_for_quiet
from tfvariants.execute.record import StoredCell
from tfvariants.options.interference import DISTURBED_SHARE
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.cell import Cell, cell_id, cell_id_of
from tfvariants.plan.spec import MatrixSpec, plan_cells
from tfvariants.store.disturbance import limits_of
from tfvariants.store.rundir import load_run_dir
from tfvariants.store.training import parse_training
from workloads import cpuload


def disturbed_result(repeat=0, others=0.4, attempt=0, **kw):
    r = make_result("local", 2, "mnist_cnn", repeat, **kw)
    r["cpu"] = {"others_share": others, "steal_share": 0.0}
    if attempt:
        r["cell"]["attempt"] = attempt
    return r


# ---- the classification ----


def test_disturbance_reads_others_and_steal_against_the_limit():
    assert interference.disturbance(disturbed_result(others=0.05)) is None
    why = interference.disturbance(disturbed_result(others=0.34))
    assert why == "other processes used 34% of its pinned CPUs (limit 10%)"
    stolen = disturbed_result(others=0.0)
    stolen["cpu"]["steal_share"] = 0.2
    assert "hypervisor stole 20%" in interference.disturbance(stolen)
    assert interference.disturbance(disturbed_result(others=0.34), limit=0.5) is None
    # No share recorded, or not a successful cell: nothing to call disturbed.
    assert interference.disturbance(make_result()) is None
    assert interference.disturbance(disturbed_result(others=0.9, status="failed")) is None


def parsed(results, limit=0.10):
    return [parse_training(r, disturbed_share=limit) for r in results]


def test_the_first_clean_attempt_of_each_round_counts():
    results = parsed([
        disturbed_result(0, others=0.5, steady_epoch_s=9.0),
        disturbed_result(0, others=0.02, attempt=1, steady_epoch_s=2.0),
        disturbed_result(0, others=0.01, attempt=2, steady_epoch_s=5.0),
        disturbed_result(1, others=0.01, steady_epoch_s=2.0),
        disturbed_result(2, others=0.6, steady_epoch_s=9.0),  # retries used up
    ])  # fmt: skip
    values = round_values(results)
    (per_round,) = values.values()
    assert sorted(per_round) == [0, 1]
    assert per_round[0] == results[1].training_time_s
    summary = interference.summarise(results, policy="exclude")
    assert [cid for cid, _ in summary.disturbed] == [
        "mnist_cnn__local__t2__r0",
        "mnist_cnn__local__t2__r2",
    ]
    assert summary.cells == 5 and not summary.included and summary.unclean_rounds == 1
    assert "2 of 5 cells were disturbed" in summary.sentence()
    assert "left out of the verdicts" in summary.sentence()
    included = round_values(results, include_disturbed=True)
    assert sorted(next(iter(included.values()))) == [0, 1, 2]
    assert next(iter(included.values()))[0] == results[1].training_time_s  # clean first


def test_auto_uses_disturbed_cells_when_most_rounds_had_no_clean_attempt():
    few = parsed([disturbed_result(r, others=0.5 if r == 0 else 0.0) for r in range(5)])
    assert not interference.summarise(few).included
    most = parsed([disturbed_result(r, others=0.5 if r < 3 else 0.0) for r in range(5)])
    summary = interference.summarise(most)
    assert summary.included and summary.unclean_rounds == 3
    assert "in 3 of 5 configuration-rounds every attempt was disturbed" in summary.sentence()
    assert "normal state" in summary.sentence()
    assert not interference.summarise(most, policy="exclude").included
    never = parsed([disturbed_result(r, others=0.5) for r in range(3)])
    summary = interference.summarise(never)
    assert summary.never_quiet and "never quiet" in summary.sentence()
    with pytest.raises(ValueError):
        interference.summarise(never, policy="sometimes")


def test_the_run_sets_the_limit():
    r = disturbed_result(0, others=0.3)
    assert parse_training(r).disturbed
    assert not parse_training(r, disturbed_share=0.5).disturbed
    assert limits_of(TrainingOptions(disturbed_share=0.5))[0] == 0.5
    assert limits_of(None)[0] == DISTURBED_SHARE


def test_summary_counts_waits_from_the_runner_record():
    results = [disturbed_result(r, others=0.0) for r in range(3)]
    results[0]["runner"]["quiet"] = {"waited_s": 12.0, "quiet": True}
    results[1]["runner"]["quiet"] = {"waited_s": 30.0, "quiet": False}
    results[2]["runner"]["quiet"] = {"waited_s": 1.0, "quiet": False, "sustained": True}
    summary = interference.summarise(parsed(results), options=TrainingOptions(quiet_wait_s=30))
    assert summary.waited_s == 43.0 and summary.not_quiet == 2 and summary.sustained == 1
    text = summary.sentence()
    assert "waited 43 s" in text and "2 started without it (the wait of 30 s ran out)" in text
    assert "sustained load" in text


def test_report_leaves_disturbed_cells_out_and_lists_them(tmp_path):
    from tfvariants.analyze.report.build import assemble
    from tfvariants.analyze.training.analysis import analyze
    from tfvariants.analyze.training.part import training_part
    from tfvariants.render.html import render_html

    results = [make_result("local", t, "mnist_cnn", r, steady_epoch_s=2.0 * (3 - t))
               for t in (1, 2) for r in range(5)]  # fmt: skip
    results[2]["cpu"] = {"others_share": 0.6}
    folder = write_results(tmp_path / "res", results)
    a = analyze(folder)
    assert a.interference.disturbed[0][0] == "mnist_cnn__local__t1__r2"
    one = next(g for g in a.workloads[0].groups if g.threads == 1)
    assert one.time_cmp is not None and one.rounds_compared == 4
    assert any(w.kind == "disturbed" for w in a.warnings)
    html = render_html(assemble(training_part(a)))
    assert "Disturbed cells (1)" in html and "mnist_cnn__local__t1__r2" in html
    assert next(g for g in analyze(folder, disturbed="include").workloads[0].groups
                if g.threads == 1).rounds_compared == 5  # fmt: skip


# ---- cell ids of attempts ----


def test_attempt_ids_do_not_collide_and_load_back(tmp_path):
    first = Cell("local", 2, "mnist_cnn", 3)
    again = Cell("local", 2, "mnist_cnn", 3, attempt=1)
    assert first.cell_id == "mnist_cnn__local__t2__r3"
    assert again.cell_id == "mnist_cnn__local__t2__r3__a1"
    assert "attempt" not in first.to_dict() and again.to_dict()["attempt"] == 1
    assert cell_id_of(again.to_dict()) == again.cell_id == cell_id("local", 2, "mnist_cnn", 3, 1)
    results = [disturbed_result(3), disturbed_result(3, others=0.0, attempt=1)]
    folder = write_results(tmp_path / "res", results)
    loaded = load_run_dir(folder)
    assert set(loaded.results) == {first.cell_id, again.cell_id}
    assert not loaded.duplicates and not loaded.problems
    bad = disturbed_result(4, attempt=1)
    bad["cell"]["attempt"] = -1
    (folder / "cells" / "x.json").write_text(json.dumps(bad))
    assert "cell.attempt" in load_run_dir(folder).problems[0].reason


# ---- the wait for quiet ----


class FakeStat:
    """/proc/stat readings whose busy share per window follows ``shares``."""

    def __init__(self, shares):
        self.shares = list(shares)
        self.jiffies = {0: [0] * 8, 1: [0] * 8}
        self.now = 0.0
        self.reads = 0

    def read(self):
        self.reads += 1
        return {c: list(v) for c, v in self.jiffies.items()}

    def sleep(self, s):
        share = self.shares.pop(0) if self.shares else 1.0
        for v in self.jiffies.values():
            busy = int(round(100 * s * share))
            v[0] += busy
            v[3] += int(round(100 * s)) - busy
        self.now += s

    def clock(self):
        return self.now


def wait(stat, **kw):
    return wait_for_quiet([0, 1], read=stat.read, sleep=stat.sleep, clock=stat.clock, **kw)


def test_wait_ends_at_the_first_quiet_second():
    stat = FakeStat([0.9, 0.5, 0.05])
    w = wait(stat, limit=0.1, max_wait_s=30)
    assert w.quiet is True and w.waited_s == 3.0 and w.others_share == pytest.approx(0.05)
    assert stat.reads == 4  # one reading per second slept, no busy polling


def test_wait_is_bounded_and_says_it_ran_out():
    stat = FakeStat([1.0] * 100)
    w = wait(stat, limit=0.1, max_wait_s=5)
    assert w.quiet is False and w.waited_s == 5.0 and w.others_share == 1.0
    assert wait(FakeStat([1.0]), limit=0.1, max_wait_s=0).waited_s == 1.0  # one window


def test_unreadable_proc_stat_does_not_wait():
    w = wait_for_quiet([0], limit=0.1, max_wait_s=30, read=dict, sleep=lambda s: None)
    assert w.quiet is None and w.others_share is None


def test_gate_stops_waiting_under_a_sustained_load_and_resumes_after_quiet():
    calls = []

    def fake_wait(cpus, *, limit, max_wait_s):
        calls.append(max_wait_s)
        quiet = len(calls) > SUSTAINED_AFTER + 1
        return QuietWait(max_wait_s, 0.0 if quiet else 1.0, quiet, limit, max_wait_s)

    gate = QuietGate(limit=0.1, max_wait_s=30.0, wait=fake_wait)
    records = [gate([0]) for _ in range(SUSTAINED_AFTER + 2)]
    assert calls == [30.0] * SUSTAINED_AFTER + [0.0, 0.0]
    assert [r.sustained for r in records] == [False] * SUSTAINED_AFTER + [True, True]
    assert not gate.sustained  # the last wait found quiet
    assert records[-1].to_json()["max_wait_s"] == 30.0


def test_busy_shares_separate_busy_and_steal():
    before = {0: [0, 0, 0, 0, 0, 0, 0, 0]}
    after = {0: [30, 10, 10, 40, 0, 0, 0, 10]}
    busy, steal, total_s = cpuload.busy_shares(before, after, [0])
    assert busy == pytest.approx(0.5) and steal == pytest.approx(0.1) and total_s > 0
    assert cpuload.busy_shares(before, after, [1]) is None


# ---- re-running disturbed cells ----


def matrix_spec(**options):
    return MatrixSpec(
        ("local",), (1, 2), ("mnist_cnn",), 2, TrainingOptions(timeout_s=60, **options)
    )


def fake_runner(disturbed_ids):
    calls = []

    def run(cell, folder):
        calls.append(cell.cell_id)
        r = make_result(cell.variant, cell.threads, cell.workload, cell.repeat)
        r["cell"] = cell.to_dict()
        r["cpu"] = {"others_share": 0.5 if cell.cell_id in disturbed_ids else 0.0}
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.write_text(json.dumps(r))
        return StoredCell.written(cell.cell_id, r, path)

    return run, calls


def test_a_disturbed_cell_runs_again_as_its_next_attempt_within_the_retries(tmp_path):
    run, calls = fake_runner(
        {
            "mnist_cnn__local__t1__r0",
            "mnist_cnn__local__t2__r1",
            "mnist_cnn__local__t2__r1__a1",
            "mnist_cnn__local__t2__r1__a2",
        }
    )
    outcome = Matrix(matrix_spec(), tmp_path / "run").run(
        run_cell=run, policy=Policy(disturbed=interference.disturbance, retries=2)
    )
    assert (
        calls.index("mnist_cnn__local__t1__r0__a1") == calls.index("mnist_cnn__local__t1__r0") + 1
    )
    assert "mnist_cnn__local__t2__r1__a2" in calls and "mnist_cnn__local__t2__r1__a3" not in calls
    assert outcome.retried == 3 and outcome.retries_left_out == 1
    assert len(outcome.disturbed) == 4 and outcome.exit_code() == 0
    stored = load_run_dir(tmp_path / "run").results
    assert len(stored) == 7  # every attempt kept on disk


def test_no_retry_beyond_the_budget_or_under_a_sustained_load(tmp_path):
    run, calls = fake_runner({"mnist_cnn__local__t1__r0"})
    ticks = iter(range(0, 10_000, 100))
    Matrix(matrix_spec(), tmp_path / "a").run(
        run_cell=run, policy=Policy(disturbed=interference.disturbance, retries=2, budget_s=150,
                                    clock=lambda: float(next(ticks))),
    )  # fmt: skip
    assert not [c for c in calls if "__a" in c]
    run, calls = fake_runner({"mnist_cnn__local__t1__r0"})
    Matrix(matrix_spec(), tmp_path / "b").run(
        run_cell=run,
        policy=Policy(disturbed=interference.disturbance, retries=2, retry_now=lambda: False),
    )
    assert not [c for c in calls if "__a" in c]


def test_retries_stop_while_they_keep_coming_out_disturbed_and_resume_after_a_quiet_cell(
    tmp_path,
):
    # Bursts: every cell and every retry is disturbed, except t2's cells in round 2.
    spec = MatrixSpec(("local",), (1, 2), ("mnist_cnn",), 4, TrainingOptions(timeout_s=60))
    quiet = {"mnist_cnn__local__t2__r2"}
    every = {c.cell_id for c in plan_cells(spec)}
    every |= {f"{c}__a{a}" for c in every for a in (1, 2)}
    run, calls = fake_runner(every - quiet)
    outcome = Matrix(spec, tmp_path / "run").run(
        run_cell=run, policy=Policy(disturbed=interference.disturbance, retries=2)
    )
    retried = [c for c in calls if "__a" in c]
    # The first disturbed cell's two retries were disturbed again: retries stop ...
    first = calls[0]
    assert retried[:2] == [f"{first}__a1", f"{first}__a2"]
    # ... until the undisturbed cell, after which a disturbed cell is retried again.
    after_quiet = calls[calls.index("mnist_cnn__local__t2__r2") + 1 :]
    assert any("__a1" in c for c in after_quiet)
    before_quiet = calls[3 : calls.index("mnist_cnn__local__t2__r2")]
    assert not [c for c in before_quiet if "__a" in c]
    assert outcome.retries_stopped >= len(before_quiet)
    assert outcome.retries_left_out >= outcome.retries_stopped


# ---- each round's order ----


def test_rounds_are_shuffled_by_the_seed_and_replayed_by_it():
    spec = MatrixSpec(("local", "twin"), (1, 2), ("mnist_cnn", "cifar10_cnn"), 6,
                      TrainingOptions(order_seed=7))  # fmt: skip
    cells = plan_cells(spec)
    assert cells == plan_cells(spec)
    rounds = [
        [(c.workload, c.variant, c.threads) for c in cells if c.repeat == r] for r in range(6)
    ]
    assert all(sorted(r) == sorted(rounds[0]) for r in rounds)  # every config once per round
    assert len({tuple(r) for r in rounds}) > 1  # not the same order every round
    firsts = {r[0] for r in rounds}
    assert len(firsts) > 1
    other = plan_cells(MatrixSpec(spec.variants, spec.threads, spec.workloads, 6,
                                  TrainingOptions(order_seed=8)))  # fmt: skip
    assert other != cells
    plain = plan_cells(MatrixSpec(spec.variants, spec.threads, spec.workloads, 1))
    assert plain[0].cell_id == "mnist_cnn__local__t1__r0"  # no seed: the declared order


def test_run_queue_wait_sums_each_threads_growth_and_counts_new_threads_whole(tmp_path):
    def tasks(delays: dict[str, int]) -> str:
        for tid, ns in delays.items():
            (tmp_path / tid).mkdir(exist_ok=True)
            (tmp_path / tid / "schedstat").write_text(f"123 {ns} 7\n")
        return str(tmp_path)

    before = cpuload.run_delays(tasks({"10": 1_000_000_000, "11": 500_000_000}))
    after = cpuload.run_delays(tasks({"10": 1_300_000_000, "11": 600_000_000, "12": 50_000_000}))
    assert cpuload.runq_wait_s(before, after) == pytest.approx(0.45)
    assert cpuload.runq_wait_s(None, after) is None
    assert cpuload.run_delays(str(tmp_path / "missing")) is None
    # A real reading of this process: a spinning thread's wait only grows.
    first = cpuload.run_delays()
    assert first and all(v >= 0 for v in first.values())
    usage = cpuload.usage(cpuload.snapshot(), cpuload.snapshot(), [0])
    assert usage["runq_wait_share"] >= 0


def test_a_shielded_worker_is_judged_by_its_run_queue_wait_not_others_share():
    from tfvariants.options.interference import SHIELDED_SHARE

    def result(others: float, runq: float | None, shielded: bool) -> dict:
        cpu = {"others_share": others, "steal_share": 0.0}
        if runq is not None:
            cpu["runq_wait_share"] = runq
        return {"status": "ok", "cpu": cpu,
                "runner": {"priority": {"requested": "raised", "shielded": shielded}}}  # fmt: skip

    # Under a sustained hog others fill what a raised worker leaves idle: not harm.
    assert interference.disturbance(result(0.28, 0.22, True)) is None
    why = interference.disturbance(result(0.28, 0.55, True))  # an equal-priority rival
    assert why and "waited for a CPU 55%" in why and f"{SHIELDED_SHARE:.0%}" in why
    assert "other processes used 28%" in interference.disturbance(result(0.28, 0.22, False))
    # An older result without the wait: others' share at the normal limit.
    assert interference.disturbance(result(0.28, None, True))
    # Steal is the hypervisor's: no priority sheds it.
    stolen = {**result(0.0, 0.1, True), "cpu": {"steal_share": 0.2, "runq_wait_share": 0.1}}
    assert "hypervisor stole 20%" in interference.disturbance(stolen)
    # The parsed result agrees (the report and the rounds use it).
    raw = make_result(repeat=0)
    raw.update(result(0.28, 0.22, True))
    assert parse_training(raw).disturbed is False
    raw["cpu"]["runq_wait_share"] = 0.5
    assert parse_training(raw).disturbed is True


def test_report_warns_when_others_filled_shielded_multi_thread_cells(tmp_path):
    """Undisturbed 2-thread cells at raised priority with others at 25 % or more of their
    CPUs: measured slower, unflagged, so the report says so; 1-thread cells, quieter
    cells and cells at normal priority (judged disturbed instead) do not trigger it."""
    from tfvariants.analyze.training.analysis import analyze
    from tfvariants.analyze.training.noise import SHIELDED_BUSY_SHARE

    def cells(others: float, shielded: bool) -> list[dict]:
        out = []
        for t in (1, 2):
            for r in range(5):
                res = make_result("local", t, "mnist_cnn", r, steady_epoch_s=2.0 * (3 - t))
                res["cpu"] = {"others_share": others if t == 2 else 0.0, "steal_share": 0.0,
                              "runq_wait_share": 0.2}  # fmt: skip
                res["runner"] = {"priority": {"requested": "raised", "shielded": shielded}}
                out.append(res)
        return out

    def warning(others: float, shielded: bool, name: str):
        a = analyze(write_results(tmp_path / name, cells(others, shielded)))
        return next((w for w in a.warnings if w.kind == "shielded_busy"), None)

    w = warning(0.3, True, "busy")
    assert w is not None and "mnist_cnn local@2 (5 of 5 cells)" in w.message
    # compare's closing lines carry it too, beside the ratios it qualifies
    import io

    from rich.console import Console

    from tfvariants.commands import rounds

    out = io.StringIO()
    rounds.summary(analyze(tmp_path / "busy"), tmp_path / "busy", Console(file=out, width=400))
    assert "caution: Other processes filled 25% or more" in out.getvalue()
    assert "understated" in w.message and "local@1" not in w.message
    assert warning(SHIELDED_BUSY_SHARE - 0.01, True, "quieter") is None
    assert warning(0.3, False, "normal") is None  # disturbed: reported as such instead
