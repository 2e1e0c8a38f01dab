"""Waits that pay for themselves (tfvariants.execute.quiet.QuietGate): at most a share of
the run's time and budget, none once they stopped paying, and the report saying why a
cell started without one. A fake clock and load throughout."""

import pytest

from tfvariants.analyze.statistics import interference
from tfvariants.execute.quiet import QuietGate, QuietWait
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.spec import MatrixSpec


def matrix_spec(**options):
    return MatrixSpec(
        ("local",), (1, 2), ("mnist_cnn",), 2, TrainingOptions(timeout_s=60, **options)
    )


class FakeLoad:
    """A fake clock and load for the gate: each wait takes ``wait_s`` (capped by what the
    gate allows) and finds quiet; each cell takes ``cell_s`` of the clock."""

    def __init__(self, wait_s: float, cell_s: float = 0.0) -> None:
        self.wait_s, self.cell_s, self.asked, self.now = wait_s, cell_s, [], 0.0

    def clock(self) -> float:
        return self.now

    def wait(self, cpus, *, limit, max_wait_s):
        self.asked.append(max_wait_s)
        waited = max(1.0, min(self.wait_s, max_wait_s))  # at least one window
        self.now += waited
        return QuietWait(waited, 0.05, True, limit, max_wait_s)


def cell(others: float) -> dict:
    return {"status": "ok", "cpu": {"others_share": others, "steal_share": 0.0}}


def gate_for(load: FakeLoad, budget_s: float | None) -> QuietGate:
    return QuietGate(
        limit=0.1,
        max_wait_s=30.0,
        wait=load.wait,
        budget_s=budget_s,
        clock=load.clock,
        disturbed=lambda r: interference.disturbance(r, 0.1),
    )


def run_cells(gate: QuietGate, load: FakeLoad, shares: list[float]) -> list[QuietWait]:
    records = []
    for others in shares:
        records.append(gate([0]))
        load.now += load.cell_s
        gate.observe(cell(others))
    return records


def test_the_waits_take_at_most_their_share_of_the_run_so_far():
    load = FakeLoad(wait_s=25.0, cell_s=40.0)
    gate = gate_for(load, budget_s=600.0)
    waited = 0.0
    for _ in range(12):  # every cell clean: waiting pays, only the share bounds it
        waited += run_cells(gate, load, [0.0])[0].waited_s
        assert waited <= 0.1 * load.now + 1e-9  # at every moment, not only at the end
    records = run_cells(gate, load, [0.0])
    assert records[0].to_json()["allowance_s"] == 60.0
    assert load.asked[0] == pytest.approx(40 * 0.1 / 0.9)  # the first cell started at once
    waited += records[0].waited_s
    assert gate.spent_s == pytest.approx(waited) and 30.0 < waited <= 0.1 * load.now


def test_the_waits_take_at_most_their_share_of_the_budget():
    load = FakeLoad(wait_s=25.0, cell_s=200.0)  # a long run: the budget's share binds
    gate = gate_for(load, budget_s=600.0)
    records = run_cells(gate, load, [0.0] * 10)
    assert records[0].skipped == "share" and records[0].waited_s == 0.0
    # each wait: a tenth of the time so far, counting itself (20 s of 200 s -> 22.2 s),
    # until the 60 s of the budget's share are spent
    assert load.asked == pytest.approx([200 / 9, 200 / 9, 60 - 400 / 9])
    assert sum(r.waited_s for r in records) == pytest.approx(60.0)
    assert [r.skipped for r in records][4:] == ["share"] * 6


def test_waiting_stops_when_it_has_not_been_paying_off():
    """Bursts: each wait finds a quiet gap, each cell after it a burst."""
    load = FakeLoad(wait_s=8.0)
    gate = gate_for(load, budget_s=None)
    records = run_cells(gate, load, [0.5, 0.0, 0.5, 0.5, 0.5, 0.0, 0.0])
    # a clean cell after the second wait reset the count; three unpaid waits stop it
    assert len(load.asked) == 5 and [r.skipped for r in records][5:] == ["unpaid"] * 2
    assert load.now == 40.0 and gate.unpaid == 3
    with pytest.raises(ValueError):
        QuietGate(limit=0.1, max_wait_s=30.0, budget_s=60.0, budget_share=1.0)


def test_a_failed_or_unmeasured_cell_says_nothing_about_the_wait():
    load = FakeLoad(wait_s=2.0)
    gate = QuietGate(
        limit=0.1,
        max_wait_s=30.0,
        wait=load.wait,
        disturbed=lambda r: interference.disturbance(r, 0.1),
    )
    for _ in range(5):
        assert gate([0]).skipped is None
        gate.observe({"status": "failed"})
    assert gate.unpaid == 0 and gate.allowance_s is None  # no budget: per-cell bound only


def test_the_summary_says_why_cells_started_without_a_wait():
    from resultfactory import make_result

    from tfvariants.store.training import parse_training

    def one(r: int, skipped: str | None) -> object:
        raw = make_result(repeat=r)
        raw["runner"] = {"quiet": {"waited_s": 0.0 if skipped else 3.0, "skipped": skipped}}
        return parse_training(raw)

    text = interference.summarise(
        [one(0, None), one(1, "unpaid"), one(2, "share"), one(3, "share")]
    ).sentence()
    assert (
        "2 cell(s) started without a wait as the waits had used their share of the run's time"
        in text
    )
    assert "1 cell(s) without one as the last waits had been followed by disturbed cells" in text


def test_a_compare_with_a_budget_bounds_its_waits_by_their_share():
    from tfvariants.commands.rounds import quiet_gate
    from tfvariants.execute.quiet import BUDGET_SHARE

    options = {"quiet_wait_s": 30.0, "quiet_share": 0.1, "budget_s": 600.0}
    assert quiet_gate(matrix_spec(**options)).allowance_s == 600.0 * BUDGET_SHARE
    assert quiet_gate(matrix_spec(**{**options, "budget_s": None})).allowance_s is None


def stepped_cell(others: float, tail: list[float], *, step_s: float = 0.1, gap=None, stride=1):
    """A clean-looking result whose sampled steps end with ``tail`` (others' shares)."""
    shares = [0.0] * 20 + tail
    raw = cell(others)
    raw["timing"] = {
        "step_times_s": [step_s] * len(shares),
        "step_others_share": shares,
        "step_sample_stride": stride,
        "clean": {"gap_others_share": gap},
    }
    return raw


def test_a_cell_that_ended_quiet_starts_the_next_without_a_wait():
    load = FakeLoad(wait_s=1.0)
    gate = gate_for(load, budget_s=None)
    assert gate([0]).waited_s == 1.0 and len(load.asked) == 1  # nothing known yet: waits
    gate.observe(stepped_cell(0.02, [0.04] * 10))  # its last second: 4 %
    first = gate([0])
    assert first.ended_quiet and first.waited_s == 0.0 and first.quiet is True
    assert first.others_share == pytest.approx(0.04) and len(load.asked) == 1
    assert first.to_json()["ended_quiet"] is True
    for busy in (
        stepped_cell(0.05, [0.5] * 10),  # clean over the cell, busy at its end
        stepped_cell(0.30, [0.0] * 10),  # quiet at its end, disturbed over the cell
        stepped_cell(0.02, [0.0] * 10, gap=0.4),  # its epoch gaps (validation) were busy
        stepped_cell(0.02, [0.0] * 10, step_s=0.01),  # 0.3 s of steps: no last second
        cell(0.0),  # no per-step shares (serving, /proc/stat unreadable)
        {"status": "failed"},
    ):
        gate.observe(busy)
        assert not gate([0]).ended_quiet
    assert len(load.asked) == 7  # each of them waited
    gate.observe(stepped_cell(0.02, [0.0] * 10))
    load.now += 10.0  # a look's analysis, or a build, between the two cells
    assert not gate([0]).ended_quiet and len(load.asked) == 8  # too old: waits


def test_the_last_second_counts_each_sampled_step_for_its_stride():
    from tfvariants.execute.quiet import ended_quiet

    # 2 sampled steps of 0.1 s, each standing for 5: the last second is the last 2 samples
    raw = stepped_cell(0.0, [0.3, 0.0], stride=5)
    assert ended_quiet(raw, 0.2) == pytest.approx(0.15)
    assert ended_quiet(raw, 0.1) is None  # 15 % over the last second: busy
    for stride in ("5", 0, None, True):  # not a worker's stride: no evidence
        raw["timing"]["step_sample_stride"] = stride
        assert ended_quiet(raw, 0.5) is None
    raw["timing"]["step_sample_stride"] = 5
    raw["timing"]["step_others_share"][-1] = None  # a step the sampler missed
    assert ended_quiet(raw, 0.5) is None


def test_the_summary_counts_the_cells_started_after_a_quiet_end():
    from resultfactory import make_result

    from tfvariants.store.training import parse_training

    def one(r: int, ended: bool) -> object:
        raw = make_result(repeat=r)
        waited = 0.0 if ended else 1.0
        raw["runner"] = {"quiet": {"waited_s": waited, "quiet": True, "ended_quiet": ended}}
        return parse_training(raw)

    text = interference.summarise([one(0, False), one(1, True), one(2, True)]).sentence()
    assert "the cells waited 1 s for quiet in all; 2 cell(s) started without a wait, as the" in text
    assert "before them was undisturbed and its own last second quiet." in text
