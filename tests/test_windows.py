import math
import random

import pytest

from tfvariants.analyze.statistics import windows
from tfvariants.store.adaptiveplans import window_plan
from tfvariants.store.training import parse_training


def raw(threads, repeat, means, *, wall_s=20.0, steady_s=10.0, status="ok"):
    return {
        "status": status,
        "cell": {"workload": "w", "variant": "local", "threads": threads, "repeat": repeat},
        "timing": {"steady_windows_s": means, "steady_s": steady_s},
        "runner": {"wall_s": wall_s},
    }


def cell(*args, **kwargs):
    return parse_training(raw(*args, **kwargs))


def two_level(sd_between, sd_window, *, n=6, k=5, seed=0):
    """Cells whose log window means are a process effect plus a window effect."""
    rng = random.Random(seed)
    out = []
    for threads, base in ((1, 0.2), (2, 0.1)):
        for r in range(n):
            process = rng.gauss(0, sd_between)
            means = [base * math.exp(process + rng.gauss(0, sd_window)) for _ in range(k)]
            out.append(cell(threads, r, means))
    return out


def test_components_recover_which_level_varies():
    between = windows.components(two_level(0.10, 0.01, n=40))
    assert between is not None and between.configs == 2 and between.windows == 5
    assert math.sqrt(between.sigma2_between) == pytest.approx(0.10, rel=0.3)
    assert math.sqrt(between.sigma2_window) == pytest.approx(0.01, rel=0.3)
    within = windows.components(two_level(0.0, 0.10, n=40))
    assert within.sigma2_between < 0.1 * within.sigma2_window
    assert (between.fixed_s, between.window_s) == (10.0, 2.0)


def test_plan_prefers_processes_when_they_differ_and_windows_when_they_scatter():
    more_processes = windows.plan(windows.components(two_level(0.10, 0.01, n=20)), 10.0)
    assert more_processes.min_steady_s == windows.MIN_WINDOW_S
    assert more_processes.reason.startswith("shorter windows, more repeats: K* = ")
    longer = windows.plan(windows.components(two_level(0.005, 0.10, n=20, seed=3)), 10.0)
    assert longer.min_steady_s > 10.0 and "longer" in longer.reason
    # K* = sqrt(fixed * s2w / (window_s * s2b)): 10 s fixed, 2 s windows, equal variances
    comp = windows.Components(0.01, 0.01, 5, 10, 2, fixed_s=10.0, window_s=2.0)
    assert comp.optimal_windows() == pytest.approx(math.sqrt(5))
    assert windows.plan(comp, 10.0).min_steady_s == pytest.approx(2 * math.sqrt(5), abs=0.05)


def test_too_little_data_keeps_the_window():
    assert windows.components([cell(1, 0, [0.1, 0.1])]) is None  # no second process
    assert windows.components([cell(1, 0, [0.1]), cell(1, 1, [0.1])]) is None  # one window
    failed = [cell(1, r, [0.1, 0.2], status="failed") for r in range(3)]
    assert windows.components(failed) is None
    kept = windows.plan(None, 7.0)
    assert kept.min_steady_s == 7.0 and "kept" in kept.reason


def test_older_results_are_cut_from_their_step_times():
    r = raw(1, 0, None)
    del r["timing"]["steady_windows_s"]
    r["timing"].update(step_times_s=[1.0] + [0.1] * 10, warmup_steps=1, step_sample_stride=1)
    assert parse_training(r).steady_windows_s == pytest.approx((0.1,) * 5)
    r["timing"]["step_sample_stride"] = 2  # a sample of the steps: not cut
    assert parse_training(r).steady_windows_s == ()


def test_plan_sentence_reads_what_run_json_recorded():
    comp = windows.Components(0.0001, 0.01, 5, 10, 2, fixed_s=10.0, window_s=2.0)
    recorded = window_plan({**windows.plan(comp, 10.0).to_json(), "from_repeat": 5})
    text = windows.plan_sentence(recorded)
    assert text is not None
    assert text.startswith("Steady window: 10 s per cell up to the first look, then 3 s")
    assert windows.plan_sentence(None) is None and window_plan({}) is None


def test_a_plan_needs_enough_cells_and_never_more_than_doubles_the_window():
    # 3 configurations x 2 cells (under bursts, all the first look had with windows):
    # 3 degrees of freedom for the process variance, too few to plan on.
    few = [cell(t, r, [0.1 * (1 + 0.05 * r), 0.1, 0.11]) for t in (1, 2, 4) for r in range(2)]
    assert windows.components(few) is None
    assert "too few cells" in windows.plan(None, 6.0).reason
    assert windows.components(two_level(0.02, 0.05, n=5)) is not None  # 2 x 4 = 8
    # A process variance at the estimator's floor: K* infinite, the window doubles.
    comp = windows.Components(0.0063, 0.0, 5, 20, 3, fixed_s=4.5, window_s=1.2)
    assert comp.optimal_windows() == math.inf
    assert windows.plan(comp, 6.0).min_steady_s == 12.0  # not MAX_WINDOW_S (60 s)
    assert windows.plan(comp, 40.0).min_steady_s == windows.MAX_WINDOW_S
