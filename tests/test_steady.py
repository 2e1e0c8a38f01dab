import itertools
import json
import random

import pytest

from workloads import steady
from workloads.protocol import RequestError, WorkerRequest


def series(rng, warm, n, step=0.1, noise=0.01):
    return [0.5 + 0.1 * (warm - i) for i in range(warm)] + [
        step + rng.gauss(0, noise) for _ in range(n)
    ]


def test_mser_cuts_the_slow_start_and_keeps_a_steady_series():
    rng = random.Random(1)
    steps = [2.0] + series(rng, 8, 300)
    assert 9 <= steady.warmup_steps(steps) <= 30
    flat = [0.1 + rng.gauss(0, 0.01) for _ in range(300)]
    assert steady.warmup_steps(flat) <= 50  # at least the trace step, never half of it
    assert steady.warmup_steps([0.3, 0.1]) == 1


def test_window_needs_both_seconds_and_steps_after_warmup():
    steps = [2.0] + [0.1] * 120
    assert steady.window_met(steps, 10.0, 100)
    assert not steady.window_met(steps, 13.0, 100)  # only 12 s of steady steps
    assert not steady.window_met(steps, 1.0, 130)


def test_t_quantile_is_computed_not_looked_up():
    assert steady.t_quantile(0.975, 9) == pytest.approx(2.262, abs=1e-3)
    assert steady.t_quantile(0.975, 2) == pytest.approx(4.303, abs=1e-3)
    assert steady.t_quantile(0.95, 1e6) == pytest.approx(1.645, abs=1e-3)


def test_projection_interval_is_honest():
    rng = random.Random(2)
    state = steady.analyse([2.0] + [0.1 + rng.gauss(0, 0.01) for _ in range(200)])
    p = steady.project(state, full_steps=1000, full_epochs=10, epoch_gap_s=0.5)
    lo, hi = p["projected_full_ci_s"]
    assert lo < p["projected_full_s"] < hi and lo > 0.5 * hi  # no 0.5 s - 30 min
    assert p["projected_full_s"] == pytest.approx(
        state.warmup_s + 5.0 + state.step_mean_s * (1000 - state.warmup_steps)
    )
    few = steady.analyse([2.0, 0.1, 0.1])
    assert few.step_ci_s is None  # too few steps: no interval rather than a made-up one


def test_request_validates_the_window():
    base = WorkerRequest("mnist_mlp", {"variant": "local"}, "r.json", intra_op=1)
    back = WorkerRequest.from_json(base.to_json())
    assert (back.min_steady_s, back.min_steady_steps) == (10.0, 100)
    for field, bad in (("min_steady_s", -1), ("min_steady_steps", 0), ("min_steady_s", "x")):
        text = base.to_json().replace(
            f'"{field}": {getattr(base, field)}', f'"{field}": {bad!r}'.replace("'", '"')
        )
        with pytest.raises(RequestError, match=field):
            WorkerRequest.from_json(text)


def test_cpu_usage_separates_this_process_from_other_load():
    from workloads import cpuload

    hz = cpuload.os.sysconf("SC_CLK_TCK")
    # two pinned CPUs over 10 s: busy 15 s in total, of which this process used 6 s
    before = {"wall": 0.0, "cpu_s": 0.0, "stat": {0: [0] * 8, 1: [0] * 8}}
    user, idle, steal = int(7.5 * hz), int(2.0 * hz), int(0.5 * hz)
    after_stat = {c: [user, 0, 0, idle, 0, 0, 0, steal] for c in (0, 1)}
    after = {"wall": 10.0, "cpu_s": 6.0, "stat": after_stat}
    u = cpuload.usage(before, after, [0, 1])
    assert u["utilisation"] == pytest.approx(0.3) and u["cpus_pinned"] == 2
    assert u["steal_share"] == pytest.approx(0.05)
    assert u["others_share"] == pytest.approx((15.0 - 6.0) / 20.0)
    # unreadable /proc/stat: the shares are simply left out
    assert "others_share" not in cpuload.usage({**before, "stat": {}}, after, [0, 1])


def test_window_means_cut_equal_step_counts_and_average_to_the_cell_mean():
    steady_steps = [0.1] * 7 + [0.3] * 3
    means = steady.window_means(steady_steps, 5)
    assert means == pytest.approx([0.1, 0.1, 0.1, 0.2, 0.3])
    assert sum(means) / len(means) == pytest.approx(sum(steady_steps) / len(steady_steps))
    assert steady.window_means([0.2, 0.4], 5) == pytest.approx([0.2, 0.4])  # fewer steps
    assert steady.window_means([], 5) == []
    state = steady.analyse([2.0] + [0.1] * 100)
    assert state.to_json()["steady_windows_s"] == pytest.approx([0.1] * steady.WINDOWS)


# mnist_cnn, 1 thread, 60-step epochs: the step times (ms) of a real quick cell
# (2026-11-23, quiet host) whose uncapped MSER cut 70 steps.
MNIST_T1_MS = [
    913,
    78,
    76,
    73,
    75,
    75,
    77,
    75,
    76,
    76,
    91,
    76,
    75,
    77,
    81,
    75,
    76,
    74,
    75,
    75,
    77,
    75,
    77,
    77,
    75,
    76,
    75,
    79,
    77,
    76,
    75,
    75,
    77,
    76,
    77,
    78,
    76,
    76,
    75,
    71,
    76,
    78,
    77,
    76,
    78,
    77,
    77,
    76,
    75,
    74,
    76,
    74,
    76,
    75,
    73,
    74,
    75,
    76,
    75,
    75,
    96,
    80,
    94,
    103,
    101,
    113,
    78,
    77,
    97,
    90,
    78,
    76,
    74,
    74,
    74,
    76,
    74,
    76,
    76,
    75,
    77,
    76,
    76,
    77,
    76,
    76,
    76,
    76,
    75,
    77,
    80,
    79,
    76,
    78,
    79,
    77,
    80,
    76,
    77,
    77,
    78,
    77,
    78,
    77,
    77,
    74,
    74,
    77,
    76,
    78,
    76,
    76,
    77,
    76,
    75,
    78,
    78,
    78,
    75,
    76,
    77,
    75,
    77,
    79,
    77,
    75,
    76,
    78,
    83,
    78,
    74,
    76,
    76,
    77,
    77,
    77,
    76,
    76,
    76,
    74,
    77,
    77,
    77,
    74,
    76,
    77,
    77,
    78,
    76,
    76,
    74,
    78,
    77,
    78,
    74,
    77,
    76,
    78,
    77,
    77,
    75,
    75,
    76,
    75,
    78,
    77,
    76,
    74,
    78,
    77,
    75,
    77,
    76,
    85,
    85,
    88,
    88,
    83,
    74,
    74,
    80,
    78,
    93,
    86,
    75,
    71,
    76,
    75,
    76,
    77,
    76,
    73,
    77,
    74,
    74,
    77,
    76,
    73,
    74,
    75,
    71,
    72,
    75,
    74,
    75,
    75,
    76,
    74,
    73,
    74,
]


def test_the_first_epoch_caps_the_warmup_so_an_epoch_bump_is_not_taken_for_it():
    # mnist_cnn at 1 thread: 60-step epochs; uncapped MSER cut 70 of 210 steps (the
    # first epoch and the second one's start-up bump), 6.3 s of steady steps lost.
    steps = [v / 1000 for v in MNIST_T1_MS]
    assert steady.warmup_steps(steps) == 70  # the failure the cap prevents
    capped = steady.warmup_steps(steps, first_epoch=60)
    assert 1 <= capped <= 60
    state = steady.analyse(steps, first_epoch=60)
    assert state.warmup_steps == capped
    assert state.steady_steps == len(steps) - capped

    # The worker checks every 10 steps from the second epoch on, for 10 s of steady
    # steps: uncapped, the window was met only at step 210 (as in the real cell).
    def stop_at(cap):
        checks = range(70, len(steps) + 1, 10)
        return next(n for n in checks if steady.window_met(steps[:n], 10.0, 50, cap))

    assert stop_at(None) == 210
    assert stop_at(60) == 140


def test_a_real_slow_start_inside_the_first_epoch_is_still_cut():
    rng = random.Random(4)
    steps = [2.0] + series(rng, 12, 300)  # 13 slow steps, then steady
    assert 9 <= steady.warmup_steps(steps, first_epoch=100) <= 30


def test_a_first_epoch_too_short_to_hold_the_transient_does_not_cap():
    rng = random.Random(5)
    steps = [2.0] + series(rng, 25, 300)
    # 10-step epochs (fewer than 4 MSER batches): only the half-the-data bound applies.
    assert steady.warmup_steps(steps, first_epoch=10) == steady.warmup_steps(steps)
    assert steady.warmup_steps(steps, first_epoch=10) > 10


def test_warmup_max_caps_the_cut_at_the_steps_within_that_much_training_time():
    # A slow drift: MSER cuts up to half the steps, and the window waits for as many more.
    steps = [2.0] + [0.2 - 0.001 * i for i in range(100)] + [0.1] * 100
    uncapped = steady.warmup_steps(steps)
    assert uncapped > 50
    within_5s = next(i for i, t in enumerate(itertools.accumulate(steps)) if t > 5.0)
    capped = steady.warmup_steps(steps, max_s=5.0)
    assert 1 <= capped <= within_5s < uncapped
    assert steady.warmup_steps(steps, max_s=0.5) == 1  # the trace step stays warm-up
    assert steady.warmup_steps(steps, max_s=1e6) == uncapped  # a loose cap changes nothing
    window = steady.Window(min_steady_s=5.0, min_steady_steps=50, warmup_max_s=5.0)
    state = window.analyse(steps)
    assert state.warmup_steps == capped and state.warmup_max_s == 5.0
    assert state.to_json()["warmup_rule"] == "MSER-5, at most 5 s"
    assert window.to_json()["warmup_max_s"] == 5.0
    assert steady.Window(5.0, 50).to_json() == {"min_s": 5.0, "min_steps": 50}  # as before
    # the window is met sooner: fewer steps are thrown away as warm-up
    n_capped = next(n for n in range(60, len(steps) + 1) if window.met(steps[:n]))
    plain = steady.Window(min_steady_s=5.0, min_steady_steps=50)
    n_plain = next((n for n in range(60, len(steps) + 1) if plain.met(steps[:n])), None)
    assert n_plain is None or n_capped < n_plain


def test_the_window_comes_from_the_request_by_name():
    req = WorkerRequest("mnist_mlp", {}, "r.json", 1, min_steady_s=3.0, warmup_max_s=20.0)
    again = WorkerRequest.from_json(req.to_json())
    assert steady.Window.requested(again) == steady.Window(3.0, 100, 20.0)
    for bad in (0, -1, "10", True):
        text = req.to_json().replace('"warmup_max_s": 20.0', f'"warmup_max_s": {json.dumps(bad)}')
        with pytest.raises(RequestError, match="warmup_max_s"):
            WorkerRequest.from_json(text)
