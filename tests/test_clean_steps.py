"""Cells measured on their undisturbed steps (issue 26): a cell that others disturbed for
part of its time counts as undisturbed, at its clean steps' projection, when the worker's
``timing.clean`` record has enough clean steps; else, and for every result without the
record, the disturbed rule is the one it always was."""

import copy
import io
import statistics

import pytest
from resultfactory import make_result, write_results
from rich.console import Console

from tfvariants.analyze.statistics import interference
from tfvariants.analyze.statistics.verdicts import round_values
from tfvariants.commands import rounds
from tfvariants.store.disturbance import result_disturbance, undisturbed_steps
from tfvariants.store.training import parse_training

QUIET_STEP_S, BURST_STEP_S = 0.116, 0.2
WARMUP_STEPS, FULL_STEPS, FULL_EPOCHS, GAP_S = 5, 5625, 12, 0.9


def bursty_result(
    repeat: int = 0,
    *,
    threads: int = 1,
    disturbed_steps: int = 100,
    steady_steps: int = 200,
    others: float = 0.4,
    gap_others: float | None = 0.02,
    window: tuple[float, int] = (6.0, 50),
) -> dict:
    """A result in the worker's format whose first ``disturbed_steps`` steady steps ran
    under a burst (others at 0.6 of the interval, slower steps), the rest quiet."""
    r = make_result("local", threads, "mnist_cnn", repeat)
    r["cpu"] = {"others_share": others, "steal_share": 0.0}
    t = r["timing"]
    speed = (1 + 0.013 * repeat) / threads**0.8  # distinct measurements, not copies
    steady = [BURST_STEP_S * speed] * disturbed_steps + [QUIET_STEP_S * speed] * (
        steady_steps - disturbed_steps
    )
    shares = [0.6] * disturbed_steps + [0.02] * (steady_steps - disturbed_steps)
    warmup = [0.5] + [QUIET_STEP_S] * (WARMUP_STEPS - 1)
    t.update(
        step_times_s=warmup + steady,
        step_others_share=[0.0] * WARMUP_STEPS + shares,
        step_sample_stride=1,
        warmup_steps=WARMUP_STEPS,
        warmup_s=sum(warmup),
        steady_steps=steady_steps,
        steady_step_s=statistics.fmean(steady),
        window={"min_s": window[0], "min_steps": window[1], "met": True},
    )
    clean = [s for s, share in zip(steady, shares, strict=True) if share <= 0.10]
    mean = statistics.fmean(clean) if clean else None
    fixed = sum(warmup) + GAP_S * FULL_EPOCHS  # steady.project's formula
    t["clean"] = {
        "limit": 0.10,
        "sample_s": 0.25,
        "steady_steps": steady_steps,
        "clean_steps": len(clean),
        "step_mean_s": mean,
        "projected_full_s": fixed + mean * (FULL_STEPS - WARMUP_STEPS) if mean else None,
        "gap_others_share": gap_others,
    }
    r["schedule"]["projected_full_s"] = fixed + t["steady_step_s"] * (FULL_STEPS - WARMUP_STEPS)
    return r


def test_a_half_disturbed_steady_phase_is_measured_on_its_clean_steps():
    r = bursty_result()
    cell = parse_training(r)
    assert not cell.disturbed
    clean_full = r["timing"]["clean"]["projected_full_s"]
    assert cell.training_time_s == pytest.approx(clean_full)
    assert cell.training_time_s < r["schedule"]["projected_full_s"]  # the bursts left out
    assert cell.steady_step_s == pytest.approx(QUIET_STEP_S)
    # Its other per-step figures come from the same steps: rates up, times down alike.
    factor = r["timing"]["steady_step_s"] / QUIET_STEP_S  # all steady steps' mean / clean
    assert cell.samples_per_s == pytest.approx(r["timing"]["samples_per_s"] * factor)
    assert cell.gflops_per_s == pytest.approx(r["gflops_per_s"] * factor)
    assert cell.steady_epoch_s == pytest.approx(r["timing"]["steady_epoch_s"] / factor)
    assert cell.undisturbed_only == (
        "measured on its undisturbed steps only: 100 of 200 steady steps ran while others "
        "used at most 10% of its CPUs (over the whole cell 40%)"
    )
    # Its windows mix burst and quiet steps: the window plan, which reads within-process
    # variation from them, does not see them (the windows of a disturbed cell it skips).
    assert (
        cell.steady_windows_s == () and parse_training(bursty_result(others=0.05)).steady_windows_s
    )
    # The one rule says so to every caller: the retry does not run it again.
    assert interference.disturbance(r) is None and result_disturbance(r) is None


@pytest.mark.parametrize(
    "kw",
    [
        {"disturbed_steps": 101},  # under half of its steady steps clean
        # 50 clean: under half of the 130 steps the window asked for
        {"disturbed_steps": 10, "steady_steps": 60, "window": (3.0, 130)},
        {"disturbed_steps": 50, "steady_steps": 120, "window": (20.0, 50)},  # 8 s < half of 20
    ],
)
def test_too_few_clean_steps_leave_the_cell_disturbed_as_before(kw):
    r = bursty_result(**kw)
    cell = parse_training(r)
    assert cell.disturbed and cell.undisturbed_only is None
    assert cell.training_time_s == r["schedule"]["projected_full_s"]
    assert (cell.steady_step_s, cell.samples_per_s, cell.gflops_per_s) == (
        r["timing"]["steady_step_s"],
        r["timing"]["samples_per_s"],
        r["gflops_per_s"],
    )
    assert interference.disturbance(r) == "other processes used 40% of its pinned CPUs (limit 10%)"


def test_a_window_that_stopped_at_its_minimum_needs_half_of_it_clean_not_all():
    # mnist_cnn t1: the window stops at its 50 steps; 30 clean steps of 50 are enough.
    r = bursty_result(disturbed_steps=20, steady_steps=50, window=(3.0, 50))
    assert not parse_training(r).disturbed
    r = bursty_result(disturbed_steps=26, steady_steps=50, window=(3.0, 50))  # 24 clean
    assert parse_training(r).disturbed


def test_results_without_the_record_or_not_disturbed_by_others_are_judged_as_before():
    old = bursty_result()
    del old["timing"]["clean"], old["timing"]["step_others_share"]
    assert parse_training(old).disturbed and parse_training(old).undisturbed_only is None
    # Undisturbed at the cell level: its clean record changes nothing.
    quiet = bursty_result(others=0.05)
    cell = parse_training(quiet)
    assert not cell.disturbed and cell.undisturbed_only is None
    assert cell.training_time_s == quiet["schedule"]["projected_full_s"]
    # Steal: the steps' shares do not see it.
    stolen = bursty_result()
    stolen["cpu"]["steal_share"] = 0.2
    assert parse_training(stolen).disturbed
    # A shielded worker is judged by its run-queue wait, not by its steps.
    shielded = bursty_result()
    shielded["cpu"]["runq_wait_share"] = 0.5
    shielded["runner"]["priority"] = {"requested": "raised", "shielded": True}
    assert parse_training(shielded).disturbed
    # A run limit stricter than the steps' limit: the steps are not clean enough for it.
    assert parse_training(bursty_result(others=0.4), disturbed_share=0.05).disturbed
    # No clean step at all, or a record that does not parse.
    broken = bursty_result()
    broken["timing"]["clean"].update(clean_steps=0, step_mean_s=None, projected_full_s=None)
    assert parse_training(broken).disturbed
    odd = bursty_result()
    odd["timing"]["clean"]["clean_steps"] = "many"
    assert parse_training(odd).disturbed and undisturbed_steps(odd) is None


def test_a_disturbed_epoch_gap_is_said_in_the_cells_flag_without_a_correction():
    r = bursty_result(gap_others=0.35)
    cell = parse_training(r)
    assert not cell.disturbed
    assert cell.training_time_s == pytest.approx(r["timing"]["clean"]["projected_full_s"])
    assert "epoch gaps (validation) ran while others used 35% of its CPUs" in (
        cell.undisturbed_only or ""
    )


def test_the_verdicts_use_the_clean_projection_and_the_summary_counts_the_cells():
    results = [bursty_result(0), bursty_result(1, disturbed_steps=150), bursty_result(2)]
    results[2] = copy.deepcopy(results[2])
    results[2]["timing"]["clean"]["gap_others_share"] = 0.5
    cells = [parse_training(r) for r in results]
    (values,) = round_values(cells).values()
    assert sorted(values) == [0, 2]  # round 1: too few clean steps, left out
    assert values[0] == pytest.approx(results[0]["timing"]["clean"]["projected_full_s"])
    summary = interference.summarise(cells)
    assert [cid for cid, _ in summary.clean] == [
        "mnist_cnn__local__t1__r0",
        "mnist_cnn__local__t1__r2",
    ]
    assert [cid for cid, _ in summary.disturbed] == ["mnist_cnn__local__t1__r1"]
    assert summary.clean_gaps == 1
    text = summary.sentence()
    assert (
        "1 of 3 cells were disturbed" in text
        and "2 of 3 cells were measured on their undisturbed steps only (others used their "
        "CPUs for part of the cell)"
        in text
        and "in 1 of them the epoch gaps (validation) ran while others used their CPUs" in text
    )
    # Old results: no word of it.
    assert (
        "undisturbed steps"
        not in interference.summarise(
            [parse_training(make_result("local", 1, "mnist_cnn", 0))]
        ).sentence()
    )


def test_the_report_lists_the_cells_measured_on_their_undisturbed_steps(tmp_path, capsys):
    from tfvariants.analyze.report.build import assemble
    from tfvariants.analyze.training.analysis import analyze
    from tfvariants.analyze.training.part import training_part
    from tfvariants.cli import main
    from tfvariants.render.html import render_html

    results = [bursty_result(r, threads=t) for t in (1, 2) for r in range(3)]
    for r in results[3:]:  # 2 threads: quiet throughout
        r["cpu"]["others_share"] = 0.01
    folder = write_results(tmp_path / "res", results)
    a = analyze(folder)
    assert len(a.interference.clean) == 3 and not a.interference.disturbed
    html = render_html(assemble(training_part(a)))
    assert "Cells measured on their undisturbed steps (3)" in html
    assert "is measured on those steps and not disturbed (this run: 3, see below)" in html
    assert "3 of 6 cells were measured on their undisturbed steps only" in html
    assert main(["report", str(folder), "-o", str(tmp_path / "r.html"), "--verbose"]) == 0
    assert "3 of 6 cells were measured on their undisturbed steps only" in capsys.readouterr().out
    # compare's closing lines
    out = io.StringIO()
    rounds.summary(a, folder, Console(file=out, width=400))
    assert "3 of 6 cells were measured on their undisturbed steps only" in out.getvalue()
