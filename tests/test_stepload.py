"""Which steps others disturbed (workloads.stepload, issue 26): the sampler's interval
shares from fake /proc/stat readings, each step's share, the result's alignment with
``step_times_s`` under a stride, and the clean steps' projection."""

from __future__ import annotations

import os
import types

import pytest

from workloads import steady, stepload, worker

HZ = os.sysconf("SC_CLK_TCK")


class FakeMachine:
    """/proc/stat of CPU 0 and this process's CPU seconds, advanced by hand: over each
    ``run(seconds, ours, others)`` the CPU is busy ``ours + others`` of the time."""

    def __init__(self) -> None:
        self.busy = 0.0  # CPU-seconds
        self.idle = 0.0
        self.ours = 0.0

    def run(self, seconds: float, ours: float, others: float) -> None:
        self.busy += seconds * (ours + others)
        self.idle += seconds * (1 - ours - others)
        self.ours += seconds * ours

    def stat(self) -> dict[int, list[int]]:
        return {0: [round(self.busy * HZ), 0, 0, round(self.idle * HZ), 0, 0, 0, 0], 1: [0] * 8}

    def cpu_seconds(self) -> float:
        return self.ours


def sampler(machine: FakeMachine) -> stepload.Sampler:
    return stepload.Sampler([0], read_stat=machine.stat, cpu_seconds=machine.cpu_seconds)


def test_interval_shares_come_from_the_readings_and_ticks_wait_for_sample_s():
    m = FakeMachine()
    s = sampler(m)
    s.begin(0.0)
    m.run(1.0, ours=0.9, others=0.0)
    assert s.tick(0.1) is False  # too soon: no reading, no file read
    assert s.tick(1.0) is True
    m.run(1.0, ours=0.5, others=0.5)
    assert s.tick(2.0) is True
    m.run(1.0, ours=0.6, others=0.4)
    s.mark(3.0, stepload.GAP)
    ivs = s.intervals()
    assert [(iv.start, iv.end, iv.label) for iv in ivs] == [
        (0.0, 1.0, "steps"),
        (1.0, 2.0, "steps"),
        (2.0, 3.0, "gap"),
    ]
    assert [iv.share for iv in ivs] == pytest.approx([0.0, 0.5, 0.4], abs=0.02)
    assert stepload.gap_share(ivs) == pytest.approx(0.4, abs=0.02)


def test_a_short_interval_is_merged_into_the_next_and_a_short_last_into_the_one_before():
    m = FakeMachine()
    s = sampler(m)
    s.begin(0.0)
    m.run(1.0, ours=1.0, others=0.0)
    s.mark(1.0, stepload.STEPS)
    m.run(0.01, ours=0.1, others=0.0)  # 1 ms of ours in a 10 ms tick: rounding, not load
    s.mark(1.01, stepload.GAP)
    m.run(1.0, ours=0.8, others=0.2)
    s.mark(2.01, stepload.GAP)
    m.run(0.05, ours=1.0, others=0.0)
    s.mark(2.06, stepload.STEPS)
    ivs = s.intervals()
    assert [(iv.start, iv.end) for iv in ivs] == [(0.0, 1.0), (1.0, 2.06)]
    assert ivs[1].share == pytest.approx(0.19, abs=0.02)
    # the merged interval held steps (its last 50 ms): a steps interval, not a gap
    assert [iv.label for iv in ivs] == ["steps", "steps"]
    assert stepload.gap_share(ivs) is None


def test_a_merged_interval_is_a_gap_only_when_all_its_parts_were():
    m = FakeMachine()
    s = sampler(m)
    s.begin(0.0)
    for t, label in ((0.1, "gap"), (0.3, "gap"), (0.4, "steps"), (0.6, "gap"), (0.9, "gap")):
        m.run(0.1, ours=0.5, others=0.3)
        s.mark(t, label)
    assert [(iv.end, iv.label) for iv in s.intervals()] == [
        (0.3, "gap"),
        (0.6, "steps"),
        (0.9, "gap"),
    ]


def test_the_last_steps_before_validation_join_the_steps_and_validation_keeps_its_share():
    m = FakeMachine()
    s = sampler(m)
    s.begin(0.0)
    m.run(0.3, ours=1.0, others=0.0)
    s.tick(0.3)
    m.run(0.1, ours=1.0, others=0.0)
    s.mark(0.4, stepload.STEPS)  # validation begins 0.1 s after the last tick
    m.run(2.0, ours=0.5, others=0.5)
    s.mark(2.4, stepload.GAP)  # the epoch ends
    m.run(0.05, ours=0.5, others=0.5)
    s.mark(2.45, stepload.GAP)  # the next epoch's first step begins
    m.run(0.35, ours=1.0, others=0.0)
    s.tick(2.8)
    ivs = s.intervals()
    assert [(iv.start, iv.end, iv.label) for iv in ivs] == [
        (0.0, 0.4, "steps"),
        (0.4, 2.4, "gap"),
        (2.4, 2.8, "steps"),  # the start-up joins the next: the gap before is long
    ]
    assert ivs[0].share == pytest.approx(0.0, abs=0.03)  # the steps keep their own
    assert stepload.gap_share(ivs) == pytest.approx(0.5, abs=0.03)


def test_epochs_shorter_than_sample_s_do_not_make_one_long_interval():
    m = FakeMachine()
    s = sampler(m)
    s.begin(0.0)
    t = 0.0
    for _ in range(20):  # 0.2 s epochs: start-up, steps, validation
        for seconds, label in ((0.01, stepload.GAP), (0.15, stepload.STEPS), (0.04, "gap")):
            m.run(seconds, ours=1.0, others=0.0)
            t += seconds
            s.mark(t, label)
    lengths = [iv.end - iv.start for iv in s.intervals()]
    assert sum(lengths) == pytest.approx(4.0) and len(lengths) >= 5
    assert all(0.25 <= x < 0.75 for x in lengths)


def test_without_a_readable_proc_stat_there_are_no_intervals():
    s = stepload.Sampler([0], read_stat=dict, cpu_seconds=lambda: 0.0)
    s.begin(0.0)
    assert s.available is False and s.tick(5.0) is False
    s.mark(6.0, stepload.GAP)
    assert s.intervals() == [] and s.readings == []


def iv(start: float, end: float, share: float | None) -> stepload.Interval:
    return stepload.Interval(start, end, share, "steps", 0, 0.0, 1.0)


def test_each_step_gets_the_largest_share_of_the_intervals_it_overlaps():
    ivs = [iv(0.0, 1.0, 0.0), iv(1.0, 2.0, 0.6), iv(2.0, 3.0, 0.05), iv(3.0, 4.0, None)]
    spans = [(0.0, 0.5), (0.5, 1.0), (1.0, 1.5), (1.9, 2.2), (2.2, 2.9), (2.9, 3.5), (5.0, 6.0)]
    got = stepload.step_shares(spans, ivs)
    # a step ending at an interval's end belongs to it, not the next; one spanning two
    # gets the larger; an unreadable or missing interval leaves the step unknown
    assert got == [0.0, 0.0, 0.6, 0.6, 0.05, None, None]


def test_clean_projection_uses_the_clean_steady_steps_only():
    steps = [1.0, 0.2, 0.1, 0.1, 0.3, 0.3, 0.1, 0.1]
    shares: list[float | None] = [0.0, 0.0, 0.02, 0.05, 0.5, 0.5, None, 0.1]
    state = steady.analyse(steps)
    assert state.warmup_steps == 1
    clean = stepload.clean_timing(state, steps, shares, (100, 2, 0.5), None)
    # steady steps 0.2 0.1 0.1 0.3 0.3 0.1 0.1: clean at <= 0.10 are 0.2 0.1 0.1 and 0.1
    assert clean["steady_steps"] == 7 and clean["clean_steps"] == 4
    assert clean["step_mean_s"] == pytest.approx(0.125)
    assert clean["projected_full_s"] == pytest.approx(1.0 + 2 * 0.5 + 0.125 * 99)
    full = steady.project(state, 100, 2, 0.5)["projected_full_s"]
    assert clean["projected_full_s"] < full  # the burst's steps are left out
    assert clean["limit"] == 0.10 and clean["sample_s"] == 0.25
    none = stepload.clean_timing(state, steps, [0.9] * 8, (100, 2, 0.5), 0.3)
    assert none["clean_steps"] == 0 and none["step_mean_s"] is None
    assert none["projected_full_s"] is None and none["gap_others_share"] == 0.3


def test_the_result_aligns_step_shares_with_the_strided_step_times():
    m = FakeMachine()
    s = sampler(m)
    s.begin(0.0)
    spans, t = [], 0.0
    for i in range(12):  # 0.5 s steps; others take half the CPU during steps 6..8
        others = 0.5 if 6 <= i <= 8 else 0.0
        m.run(0.5, ours=1 - others, others=others)
        spans.append((t, t + 0.5))
        t += 0.5
        s.tick(t)
    steps = [b - a for a, b in spans]
    timer = types.SimpleNamespace(spans=spans, all_steps=steps)
    fit = types.SimpleNamespace(sampler=s, timer=timer)
    state = steady.analyse(steps)
    sample, stride = worker._sample(steps, 5)
    out = worker._step_load(fit, state, stride, (100, 1, 0.0))  # type: ignore[arg-type]
    assert stride == 3 and len(out["step_others_share"]) == len(sample) == 4
    assert out["step_others_share"] == pytest.approx([0.0, 0.0, 0.5, 0.0], abs=0.02)
    assert out["clean"]["clean_steps"] == state.steady_steps - 3
    unread = types.SimpleNamespace(sampler=stepload.Sampler([0], read_stat=dict), timer=timer)
    assert worker._step_load(unread, state, stride, (100, 1, 0.0)) == {}  # type: ignore[arg-type]


class FakeCallback:
    model: object = None


def test_the_timer_reads_at_phase_changes_and_keeps_readings_out_of_the_steps(monkeypatch):
    clock = iter(x * 0.1 for x in range(10_000))
    monkeypatch.setattr(worker.time, "perf_counter", lambda: next(clock))
    m = FakeMachine()
    s = stepload.Sampler([0], sample_s=0.25, read_stat=m.stat, cpu_seconds=m.cpu_seconds)
    keras = types.SimpleNamespace(callbacks=types.SimpleNamespace(Callback=FakeCallback))
    timer = worker.make_timer(keras, sampler=s)
    timer.on_train_begin()
    for epoch in range(2):
        timer.on_epoch_begin(epoch)
        for b in range(6):
            timer.on_train_batch_begin(b)
            timer.on_train_batch_end(b)
        timer.on_test_begin()
        timer.on_epoch_end(epoch)
    assert len(timer.spans) == len(timer.all_steps) == 12
    assert all(b > a for a, b in timer.spans)
    # each clock read is 0.1 s: a step is its begin's and its end's reads, the epoch's
    # first only its end's (its start is after the start-up reading); a reading after a
    # step would add 0.1 s to the next step if its cost were counted
    assert timer.all_steps == pytest.approx(([0.1] + [0.2] * 5) * 2)
    labels = [(r.label, r.epoch) for r in s.readings]
    assert labels[1] == ("gap", 0)  # the epoch's start-up, before its first step
    assert labels[-2:] == [("steps", 1), ("gap", 1)]  # steps before validation, then it
    assert sum(label == ("gap", 1) for label in labels) == 2
