"""`compare --preset compiled`: a dry run that builds nothing, a first look planned to
fit the budget, the main comparisons first (tfvariants/commands/presets.py,
tfvariants/rounds/firstlook.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tfvariants.cli import main
from tfvariants.options.preset import PresetRecord
from tfvariants.options.training import TrainingOptions
from tfvariants.rounds import firstlook


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """A 2-CPU AVX-512 host on which nothing may be built: ``ensure_built`` records."""
    import tfvariants.variants as variants_pkg

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tfvariants.plan.spec.logical_cpus", lambda: 2)
    built: list[str] = []

    def ensure_built(variant: Any, log: Any) -> None:
        built.append(variant.name)

    monkeypatch.setattr(variants_pkg, "ensure_built", ensure_built)
    monkeypatch.setattr(variants_pkg, "skip_reason", lambda v: None)
    return built


def test_a_dry_run_builds_nothing_and_says_what_it_would_build(
    host: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfvariants.commands import compare
    from tfvariants.variants import envbuild

    # Nothing is built yet: every 2.14 environment is missing from the cache.
    monkeypatch.setattr(envbuild, "built_info", lambda variant: None)

    def no_ready(*a: Any, **k: Any) -> None:
        raise AssertionError("a dry run reached ready_variants")

    monkeypatch.setattr(compare, "ready_variants", no_ready)  # what compare calls
    assert main(["compare", "--preset", "compiled", "--dry-run"]) == 0
    assert host == []  # ensure_built never called
    captured = capsys.readouterr()
    for name in ("tf-2.14", "intel-2.14", "intel-avx512-2.14"):
        assert f"{name}: would build (not done in a dry run): pip install " in captured.err
    assert "intensorflow" not in captured.err
    assert "pip install intel-tensorflow-avx512==2.14.0" in captured.err
    assert "dry run" in captured.out
    assert not Path("results").exists()


def test_the_explanatory_configurations_give_way_to_fit_the_first_look(
    host: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The default estimate: 6.5 s + 6 s per quick cell. Three builds x 2 workloads x 5
    # rounds = 375 s fits half of 15 min; with local it would be 500 s: left out.
    assert main(["compare", "--preset", "compiled", "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert (
        "compiled: left out the explanatory configuration(s) local, isa-sse41, isa-avx2 so "
        "that the first look of the compiled-vs-stock comparisons fits half the budget (with "
        "them it would take about 12.5 min; they fit --budget 25m)"
    ) in err
    # A larger budget keeps as many as fit half of it.
    assert main(["compare", "--preset", "compiled", "--dry-run", "--budget", "20m"]) == 0
    err = capsys.readouterr().err
    assert "left out the explanatory configuration(s) isa-sse41, isa-avx2 so" in err


def test_a_first_look_that_cannot_fit_is_said_in_one_line(
    host: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", "--preset", "compiled", "--dry-run", "--budget", "5m"]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "first look (" in ln]
    assert lines == [
        "compare: the first look (after 5 more round(s), 30 cells) will take about 6.2 min "
        "of the 5.0 min budget, past the budget: the run stops at the budget before it, "
        "with the resume command that reaches it (--at-least-first-look runs on instead) "
        "(estimated from 6.5 s outside a 6 s steady window per cell)"
    ]


def test_the_preset_states_its_band_and_records_what_is_explanatory(
    host: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfvariants.commands import compare

    monkeypatch.setattr(compare, "_run_matrix", _stop)
    monkeypatch.setattr(compare, "ready_variants", lambda objs, engine: objs)
    with pytest.raises(_Stopped):
        main(["compare", "--preset", "compiled", "--budget", "1h", "--out", "results/c"])
    run = json.loads(Path("results/c/run.json").read_text())
    assert run["options"]["equivalence_band"] == 0.10
    assert run["options"]["budget_s"] == 3600
    preset = run["options"]["preset"]
    assert preset["explanatory"] == ["local", "isa-sse41", "isa-avx2"]
    assert preset["band"] == 0.10 and "left_out" not in preset
    # No minimum effect unless given: a truth between it and the band is never stranded.
    assert run["options"]["min_effect"] == 0 and preset["min_effect"] == 0


def test_a_given_min_effect_is_kept_by_the_preset(
    host: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfvariants.commands import compare

    monkeypatch.setattr(compare, "_run_matrix", _stop)
    monkeypatch.setattr(compare, "ready_variants", lambda objs, engine: objs)
    with pytest.raises(_Stopped):
        main(["compare", "--preset", "compiled", "--min-effect", "3%", "--out", "results/c"])
    run = json.loads(Path("results/c/run.json").read_text())
    assert run["options"]["min_effect"] == 0.03
    assert run["options"]["preset"]["min_effect"] == 0.03


def test_the_answer_box_names_the_explanatory_configurations_left_out() -> None:
    from tfvariants.analyze.training.compiled import answer
    from tfvariants.store.record import run_record

    note = "left out the explanatory configuration(s) local so that ... --budget 25m)"
    preset = {"name": "compiled", "stock": "tf-2.14", "left_out": note}
    lines = answer([], run_record({"options": {"preset": preset}}), 0.05)
    assert lines is not None and f"The run {note}." in lines


def _preset_run(folder: Path) -> Path:
    """A stored compiled-preset run as compare records it: no minimum effect, a 10 %
    band; "compiled" 1.4x faster than the stock "pip"."""
    import resultfactory as rf

    preset = {"name": "compiled", "stock": "pip", "builds": ["compiled"], "skipped": {}}
    options = {
        "quick": True,
        "min_effect": 0.0,
        "equivalence_band": 0.10,
        "preset": {**preset, "explanatory": [], "band": 0.10, "min_effect": 0.0},
    }
    return rf.pip_vs_compiled(folder, options=options, speed=0.7)


@pytest.mark.parametrize(("given", "no_minimum"), [([], True), (["--min-effect", "5%"], False)])
def test_the_answer_states_the_minimum_effect_its_verdicts_were_judged_at(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: list[str], no_minimum: bool
) -> None:
    """A report's --min-effect wins over the run's and the preset's: the answer's words
    ("no minimum effect") and its verdicts come from the same value (issue 40)."""
    run = _preset_run(tmp_path / "run")
    html = tmp_path / "r.html"
    assert main(["report", str(run), *given, "-o", str(html), "--verbose"]) == 0
    out = capsys.readouterr().out  # (--verbose: the answer's sentences too)
    assert "compiled: mnist_cnn faster by" in out
    assert ("excludes 1 (no minimum effect)" in out) == no_minimum
    assert ("excludes 1 (no minimum effect)" in html.read_text()) == no_minimum


class _Stopped(Exception):
    pass


def _stop(*args: Any, **kwargs: Any) -> None:
    from tfvariants.execute.matrix import Matrix

    spec, out = args[1], args[3]
    Matrix(spec, out).prepare()
    raise _Stopped


def test_stored_times_are_medians_per_workload_and_need_every_workload() -> None:
    walls = {"a": [10.0, 30.0, 12.0], "b": [4.0]}
    times = firstlook.stored_times(["a", "b"], walls)
    assert times is not None and dict(times.per_workload) == {"a": 12.0, "b": 4.0}
    assert times.round_s(["a", "b"], 3) == 48.0
    assert firstlook.stored_times(["a", "c"], walls) is None
    look = firstlook.first_look(times, ["a", "b"], 3, rounds=5, budget_s=480.0)
    assert (look.cells, look.seconds, look.fits) == (30, 240.0, True)
    assert not firstlook.first_look(times, ["a", "b"], 3, rounds=5, budget_s=479.0).fits


@pytest.mark.parametrize("intel_noise", [0.3, 0.01])
def test_explanatory_configurations_wait_while_a_main_comparison_is_open(
    intel_noise: float,
) -> None:
    import resultfactory as rf

    from tfvariants.analyze.baseline import parse_baseline
    from tfvariants.analyze.statistics import adaptive
    from tfvariants.plan.spec import MatrixSpec
    from tfvariants.rounds import training as rounds

    variants = ("tf-2.14", "intel-2.14", "isa-sse41")
    info = {v: {"kind": "requirements", "device": "cpu"} for v in variants}
    preset = PresetRecord(name="compiled", explanatory=("isa-sse41",))
    options = TrainingOptions(preset=preset, equivalence_band=0.10)
    spec = MatrixSpec(variants, (2,), ("mnist_cnn",), 5, options, info)
    stored = {}
    for r in range(5):
        for v, noise in (("tf-2.14", 0.01), ("intel-2.14", intel_noise), ("isa-sse41", 0.3)):
            res = rf.make_result(v, 2, "mnist_cnn", r, steady_epoch_s=2.0, noise=noise, seed=r)
            stored[f"mnist_cnn__{v}__t2__r{r}"] = res
    hook = rounds.NextRoundHook(
        spec,
        adaptive.stopping_rule(5),
        baseline=parse_baseline("tf-2.14"),
    )
    cells, why = hook(rf.typed(stored))
    ran = {c.variant for c in cells}
    if intel_noise > 0.1:  # intel-2.14 vs the stock wheel is open: only it runs again
        assert ran == {"tf-2.14", "intel-2.14"}
    else:  # settled: now the explanatory comparison gets its rounds
        assert ran == {"tf-2.14", "isa-sse41"}
    assert why == "1 comparison(s) undecided at the look after 5 repeats"


@pytest.mark.parametrize(("budget", "said"), [("2m", True), ("10m", False)])
def test_any_compare_with_a_budget_says_when_its_first_look_cannot_fit(
    budget: str,
    said: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = [
        "compare",
        "--variants",
        "local",
        "--threads",
        "1,2",
        "--quick",
        "--dry-run",
        "--workloads",
        "mnist_cnn,cifar10_cnn",
        "--budget",
        budget,
    ]
    assert main(argv) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "first look" in ln]
    # 2 configurations x 2 workloads x 5 rounds x 12.5 s = 250 s: over half of 2 min.
    expected = [
        "compare: the first look (after 5 more round(s), 20 cells) will take about 4.2 min of "
        "the 2.0 min budget, past the budget: the run stops at the budget before it, "
        "with the resume command that reaches it (--at-least-first-look runs on instead) "
        "(estimated from 6.5 s outside a 6 s steady window per cell)"
    ]
    assert lines == (expected if said else [])


def test_a_resume_times_the_rest_of_its_first_look_from_its_own_cells(tmp_path: Path) -> None:
    import resultfactory as rf

    from tfvariants.plan.spec import MatrixSpec

    cells = tmp_path / "run" / "cells"
    cells.mkdir(parents=True)
    for r in range(2):
        res = rf.make_result("local", 1, "mnist_cnn", r, steady_epoch_s=2.0)
        res.setdefault("runner", {})["wall_s"] = 40.0
        (cells / f"mnist_cnn__local__t1__r{r}.json").write_text(json.dumps(res))
    info = {"local": {"kind": "local", "device": "cpu"}}
    options = TrainingOptions(budget_s=300.0, min_steady_s=6.0)
    spec = MatrixSpec(("local",), (1, 2), ("mnist_cnn",), 5, options, info)
    said = firstlook.announce(spec, tmp_path / "run", None)
    # 3 rounds left x 2 configurations x 40 s (this run's own cells) = 240 s > 150 s.
    assert said == (
        "the first look (after 3 more round(s), 6 cells) will take about 4.0 min of the "
        "5.0 min budget, leaving less than half of it for the adaptive rounds (estimated from "
        "the median "
        "wall time of this run's earlier cells)"
    )
    assert firstlook.announce(spec, None, None) is None  # 12.5 s a cell: 125 s fits
