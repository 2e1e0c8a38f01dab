"""The noise decomposition (analyze/training/decomposition.py): synthetic cells whose
within-process, between-process and over-time variances are known, each recovered."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from tfvariants.analyze.training.decomposition import Cell, Decomposition, decompose


def synth(
    within: float,
    between: float,
    over_time: float,
    *,
    configs: int = 4,
    rounds: int = 10,
    windows: int = 5,
    seed: int = 0,
) -> list[Cell]:
    """Rounds of every configuration once, in a shuffled order; a round shares one time
    effect, each process has its own, each window its own (variances of a cell's log
    time: ``within`` from its windows' mean)."""
    rng = random.Random(seed)
    cells = []
    clock = 0
    for r in range(rounds):
        tau = rng.gauss(0, math.sqrt(over_time))
        order = list(range(configs))
        rng.shuffle(order)
        for c in order:
            proc = math.log(1 + c) + tau + rng.gauss(0, math.sqrt(between))
            w = [proc + rng.gauss(0, math.sqrt(within * windows)) for _ in range(windows)]
            cells.append(Cell(f"c{c}", r, f"2026-01-01T00:{clock // 60:02d}:{clock % 60:02d}",
                              statistics.fmean(w), tuple(w)))  # fmt: skip
            clock += 1
    return cells


def mean_of(parts: tuple[float, float, float], field: str, trials: int = 200, **kw: int) -> float:
    found = [decompose(synth(*parts, seed=s, **kw)) for s in range(trials)]
    return statistics.fmean(getattr(d, field) for d in found if d is not None)


@pytest.mark.parametrize(
    "parts",
    [
        (0.004, 0.0004, 0.0004),
        (0.0004, 0.004, 0.0004),
        (0.0004, 0.0004, 0.004),
        (0.001, 0.002, 0.003),
    ],
)
def test_each_component_is_recovered(parts: tuple[float, float, float]) -> None:
    within, between, over_time = parts
    assert mean_of(parts, "within") == pytest.approx(within, rel=0.1)
    assert mean_of(parts, "between") == pytest.approx(between, rel=0.2, abs=0.0003)
    assert mean_of(parts, "over_time") == pytest.approx(over_time, rel=0.15, abs=0.0003)


def test_few_rounds_are_corrected_for_the_configurations_own_means() -> None:
    # At 5 rounds a configuration's mean holds a fifth of a round's effect: the raw
    # products of deviations would give 0.8 of it.
    parts = (0.0002, 0.002, 0.004)
    assert mean_of(parts, "over_time", trials=400, rounds=5) == pytest.approx(0.004, rel=0.08)


def test_a_round_effect_is_not_taken_for_processes_and_vice_versa() -> None:
    time_only = decompose(synth(0.0, 0.0, 0.01, configs=6, rounds=20, seed=1))
    process_only = decompose(synth(0.0, 0.01, 0.0, configs=6, rounds=20, seed=1))
    assert time_only is not None and process_only is not None
    assert time_only.share(time_only.over_time) > 0.7
    assert process_only.share(process_only.between) > 0.7
    assert process_only.over_time < 2 * process_only.over_time_se


def test_one_configuration_or_one_repeat_each_decomposes_nothing() -> None:
    assert decompose(synth(0.001, 0.001, 0.001, configs=1)) is None
    assert decompose(synth(0.001, 0.001, 0.001, rounds=1)) is None


def test_without_windows_the_process_parts_are_not_told_apart() -> None:
    cells = [Cell(c.config, c.round, c.started, c.log_time) for c in synth(0.001, 0.002, 0.0)]
    d = decompose(cells)
    assert d is not None and not d.windowed and d.within == 0
    assert "within or between processes" in d.sentence()
    assert "within or between" not in decompose(synth(0.001, 0.002, 0.0)).sentence()


def test_repeats_for_ten_percent_from_a_cells_variance() -> None:
    # sigma 10 %: 2 * (1.96 * 0.1 / log 1.1)^2 = 8.46 -> 9 per side; half of it shared
    # by consecutive cells: 4.23 -> 5 side by side.
    d = Decomposition(0.01, 0.001, 0.004, 0.005, 0.001, cells=40, configs=4, pairs=30)
    assert d.repeats_for() == 9
    assert d.repeats_for(side_by_side=True) == 5
    line = d.sentence()
    assert line.startswith("noise: a cell varied by about 10.0% (10% within processes, ")
    assert "40% between, 50% over time +/-10%); " in line
    assert line.endswith("+/-10% needs about 9 repeats per side, 5 side by side")
