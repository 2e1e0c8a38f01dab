"""Typed results (store/cellresult.py) and the one comparison (analyze/statistics/verdicts.py) that
the report and the adaptive rounds share."""

from __future__ import annotations

import json

import pytest
import resultfactory as rf

from tfvariants.analyze.report.build import assemble
from tfvariants.analyze.statistics import adaptive
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.verdicts import round_values, workload_verdicts
from tfvariants.analyze.training.analysis import analyze
from tfvariants.analyze.training.part import training_part
from tfvariants.options.interference import DISTURBED_SHARE
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.spec import MatrixSpec
from tfvariants.render.csvout import csv_rows
from tfvariants.render.html import render_html
from tfvariants.render.labels import config_words
from tfvariants.rounds import training as rounds
from tfvariants.store.cellresult import parse_results
from tfvariants.store.record import EMPTY_RUN, run_record
from tfvariants.store.rundir import load_run_dir
from tfvariants.store.training import CellResult, ConfigKey, parse_training

RULE = adaptive.stopping_rule(5, 20)  # looks after 5, 7, 10, 15, 20 repeats


def _run(variants, threads, workloads, repeats, info=None, looks=RULE.looks) -> dict:
    return {
        "schema_version": 1, "kind": "tfvariants.run", "variants": list(variants),
        "threads": list(threads), "workloads": list(workloads), "repeats": repeats,
        "options": {"min_effect": 0.05, "confidence": 0.95},
        "variant_info": info or {v: {"kind": "local", "device": "cpu"} for v in variants},
        "adaptive": {"min_repeats": 5, "max_repeats": 20, "looks": list(looks)},
        "logical_cpus": 2,
    }  # fmt: skip


def _spec(run: dict) -> MatrixSpec:
    return MatrixSpec(tuple(run["variants"]), tuple(run["threads"]), tuple(run["workloads"]),
                      run["repeats"], TrainingOptions.from_record(run["options"]),
                      run["variant_info"])  # fmt: skip


def _cell(variant, threads, workload, repeat, epoch_s, *, noise=0.0, others=None, status="ok"):
    r = rf.make_result(variant, threads, workload, repeat, steady_epoch_s=epoch_s, noise=noise,
                       seed=threads, status=status)  # fmt: skip
    if others is not None:
        r["cpu"] = {"others_share": others, "steal_share": 0.0, "utilisation": 0.9}
    return r


def _agreement_folder(tmp_path, *, planned_threads=(1, 2, 4)) -> tuple:
    """A stored adaptive run after its look at 10 repeats: decided configurations stopped
    at 5, an undecided one and the baseline went on to 10, one cell is disturbed, one
    failed, and the most planned threads (4) have no successful result."""
    results = []
    for rep in range(10):
        results.append(_cell("a", 2, "mnist_cnn", rep, 2.0, noise=0.02))  # the baseline
        results.append(_cell("b", 2, "mnist_cnn", rep, 2.08, noise=0.12))  # undecided
        if rep < 5:
            results.append(_cell("a", 1, "mnist_cnn", rep, 3.0, noise=0.02))  # decided early
            results.append(_cell("b", 1, "mnist_cnn", rep, 2.0, noise=0.02))  # equivalent
            results.append(_cell("a", 4, "mnist_cnn", rep, 2.0, status="failed"))
            results.append(_cell("b", 4, "mnist_cnn", rep, 2.0, status="failed"))
        results.append(_cell("a", 1, "mnist_mlp", rep, 1.0, noise=0.02))
        results.append(_cell("a", 2, "mnist_mlp", rep, 0.7, noise=0.02))
    # Disturbed: a slow b@1 repeat while others used the CPUs (it would widen the interval)
    results.append(_cell("b", 1, "mnist_cnn", 5, 4.0, others=0.6))
    run = _run(("a", "b"), planned_threads, ("mnist_cnn", "mnist_mlp"), 5)
    return rf.write_results(tmp_path / "run", results, run), run


def _report_and_rounds(folder, run, baseline=None, requested=None):
    a = analyze(folder, baseline=baseline)
    stored = load_run_dir(folder).parsed
    look = rounds.look_verdicts(_spec(run), stored, RULE, baseline=requested,
                                settings=Settings(0.05, 0.95, RULE.k))  # fmt: skip
    return a, look


@pytest.mark.parametrize(
    ("baseline", "requested"), [(None, None), ("a", ("a", None)), ("b@2", ("b", 2))]
)
def test_report_and_rounds_give_the_same_baseline_and_verdicts(tmp_path, baseline, requested):
    folder, run = _agreement_folder(tmp_path)
    a, look = _report_and_rounds(folder, run, baseline, requested)
    assert look.look == 10 and a.settings.looks == RULE.looks
    by_workload = {wv.workload: wv for wv in look.verdicts}
    for w in a.workloads:
        wv = by_workload[w.name]
        # --baseline a: the most threads WITH results (a@2), not the most planned (a@4)
        if w.baseline is None:  # b@2 asked for, and mnist_mlp has no b: no ratios either side
            assert wv.baseline == (w.name, "b", 2) and not wv.verdicts
            continue
        assert w.baseline.key == wv.baseline
        report = {g.key: (g.time_cmp.verdict, round(g.time_cmp.ratio.value, 9), g.rounds_compared)
                  for g in w.groups if g.verdict is not None}  # fmt: skip
        rounds_side = {k: (v.comparison.verdict, round(v.comparison.ratio.value, 9), len(v.rounds))
                       for k, v in wv.verdicts.items() if v.comparison}  # fmt: skip
        assert report == rounds_side
        assert report or w.name == "mnist_mlp"
    cnn = by_workload["mnist_cnn"]
    assert cnn.baseline == ConfigKey("mnist_cnn", *(requested or ("a", 2))[:1], 2)
    # the configurations the rounds keep running are exactly the report's undecided ones
    undecided = {g.key for w in a.workloads for g in w.groups
                 if g.time_cmp is not None and g.time_cmp.verdict == "undecided"}  # fmt: skip
    assert {v.config for wv in look.verdicts for v in wv.open} == undecided


def test_default_baseline_agrees_when_the_most_planned_threads_have_no_results(tmp_path):
    folder, run = _agreement_folder(tmp_path, planned_threads=(1, 2, 4))
    a, look = _report_and_rounds(folder, run, "a", ("a", None))
    assert [w.baseline.label for w in a.workloads] == ["a@2", "a@2"]
    assert [wv.baseline.label for wv in look.verdicts] == ["a@2", "a@2"]
    assert config_words(a.baseline) == "a@2"


def test_verdicts_compare_common_rounds_only(tmp_path):
    folder, run = _agreement_folder(tmp_path)
    a = analyze(folder)
    groups = {g.key: g for w in a.workloads for g in w.groups}
    early = groups[ConfigKey("mnist_cnn", "a", 1)]
    assert early.rounds_compared == 5 and early.time_cmp.verdict == "different"
    assert groups[ConfigKey("mnist_cnn", "b", 2)].rounds_compared == 10
    # the disturbed round 5 of b@1 is shown, counted, and left out of its comparison
    b1 = groups[ConfigKey("mnist_cnn", "b", 1)]
    assert b1.disturbed == 1 and "1 disturbed" in b1.flags and len(b1.ok) == 6
    assert b1.rounds_compared == 5 and b1.time_cmp.verdict == "equivalent"
    html = render_html(assemble(training_part(a)))
    assert "on the rounds both ran" in html and "5-10 common round(s) per comparison" in html
    rows = {r["cell_id"]: r for r in csv_rows(assemble(training_part(a)))}
    assert rows["mnist_cnn__b__t1__r5"]["disturbed"] is True
    assert rows["mnist_cnn__b__t1__r0"]["time_rounds"] == 5


def test_drift_with_early_stopping_does_not_bias_the_ratio():
    # The baseline slows 3 % per round; "late" is 1.3x it in every round but stopped
    # after 5 rounds while the baseline ran 20. Unpaired, the ratio would be ~1.0.
    stored = {}
    for rep in range(20):
        drift = 1.03**rep
        base = _cell("a", 2, "w", rep, 2.0 * drift)
        stored[rf.cell_id(base)] = base
        if rep < 5:
            late = _cell("a", 1, "w", rep, 2.6 * drift)
            stored[rf.cell_id(late)] = late
    typed = parse_results(EMPTY_RUN, stored)
    values = round_values(r for r in typed.values() if isinstance(r, CellResult))
    keys = [ConfigKey("w", "a", 1), ConfigKey("w", "a", 2)]
    wv = workload_verdicts(keys, values, Settings(), devices={"a": "cpu"}, variant_order=["a"],
                           requested=("a", 2))  # fmt: skip
    v = wv.verdicts[keys[0]]
    assert v.rounds == (0, 1, 2, 3, 4)
    assert v.comparison is not None and v.comparison.ratio.value == pytest.approx(1.3, rel=0.01)


def test_cell_result_is_parsed_once_with_its_facts():
    r = _cell("pip", 8, "mnist_mlp", 3, 2.0, others=DISTURBED_SHARE + 0.01)
    cr = parse_training(r, device="cpu", run_cpus=2)
    assert cr.key == ("mnist_mlp", "pip", 8) and cr.round == 3 and cr.cell_id == rf.cell_id(r)
    assert cr.oversubscribed and cr.oversubscription_ratio == 4.0  # as the worker recorded it
    assert cr.training_time_s == pytest.approx(r["schedule"]["projected_full_s"])
    assert cr.disturbed and cr.others_share == pytest.approx(DISTURBED_SHARE + 0.01)
    with pytest.raises(AttributeError):
        cr.status = "failed"  # type: ignore[misc]
    quiet = parse_training(_cell("pip", 1, "mnist_mlp", 0, 2.0, others=DISTURBED_SHARE))
    assert not quiet.disturbed and not quiet.oversubscribed
    # an old result without the pinning record: threads against the machine's CPUs
    old = _cell("pip", 4, "mnist_mlp", 0, 2.0)
    del old["requested"]
    assert parse_training(old, run_cpus=2).oversubscription_ratio == 2.0
    failed = parse_training(_cell("pip", 1, "mnist_mlp", 0, 2.0, status="failed"))
    assert failed.training_time_s is None and failed.reason and not failed.disturbed


def test_device_comes_from_the_run_or_the_results_never_the_variant_name():
    stored = {}
    for variant, gpu in (("gpu", False), ("cuda-box", True), ("declared", False)):
        r = _cell(variant, 1, "mnist_mlp", 0, 2.0)
        r["environment"]["tensorflow"]["gpus"] = ["GPU:0"] if gpu else []
        stored[rf.cell_id(r)] = r
    skipped = rf.make_result("declared", 2, "mnist_mlp", 0, status="skipped")
    stored[rf.cell_id(skipped)] = skipped
    run = {"variant_info": {"declared": {"kind": "image", "device": "gpu"}}}
    devices = {r.variant: r.device for r in parse_results(run_record(run), stored).values()}
    assert devices == {"gpu": "cpu", "cuda-box": "gpu", "declared": "gpu"}


def test_a_serving_result_is_typed_too():
    from tfvariants.store.serving import ServeResult

    cell = {"task": "serve", "variant": "local", "threads": 2, "model": "noop",
            "scenario": "concurrency", "concurrency": 4, "path": "http", "repeat": 1,
            "workload": "noop/concurrency/c4/http"}  # fmt: skip
    raw = {"schema_version": 1, "kind": "tfvariants.serve_cell", "cell": cell, "status": "ok",
           "metrics": {"throughput_per_s": 120.0, "p99_ms": 8.5},
           "placement": {"shared": True, "server_cpus": [0, 1]}}  # fmt: skip
    sr = parse_results(EMPTY_RUN, {"x": json.loads(json.dumps(raw))})["x"]
    assert isinstance(sr, ServeResult)
    assert sr.config == ("local", 2, "noop", "http") and sr.round == 1
    assert sr.throughput_per_s == 120.0 and sr.percentiles_ms["p99_ms"] == 8.5
    assert sr.shared_cpus and sr.server_cpus == (0, 1)
    assert sr.cell_id.endswith("__local__t2__r1")


def test_a_clear_difference_is_decided_at_the_first_look_of_five_rounds():
    # 2x at 2 % noise, 5 rounds, 4 looks: decided now (the reason ROUND_METHOD is not
    # "auto", whose paired interval needs 8 rounds at this level).
    from tfvariants.analyze.statistics import verdicts

    stored = {}
    for rep in range(5):
        for t, epoch_s in ((1, 4.0), (2, 2.0)):
            r = _cell("local", t, "mnist_cnn", rep, epoch_s, noise=0.02)
            stored[rf.cell_id(r)] = r
    values = round_values(
        r for r in parse_results(EMPTY_RUN, stored).values() if isinstance(r, CellResult)
    )
    keys = [ConfigKey("mnist_cnn", "local", 1), ConfigKey("mnist_cnn", "local", 2)]
    wv = workload_verdicts(keys, values, Settings(looks=4), devices={"local": "cpu"},
                           variant_order=["local"])  # fmt: skip
    assert wv.baseline == keys[1]
    cmp = wv.verdicts[keys[0]].comparison
    assert cmp is not None and cmp.verdict == "different", verdicts.ROUND_METHOD


def test_a_configuration_with_every_repeat_disturbed_stays_open_not_decided(tmp_path):
    # Every a@1 repeat ran while others used the CPUs: there is nothing to compare yet,
    # so the rounds must keep it running (not report "every comparison was decided"),
    # and the report says why it has no ratio.
    results = []
    for rep in range(5):
        results.append(_cell("a", 2, "mnist_cnn", rep, 2.0, noise=0.02))
        results.append(_cell("a", 1, "mnist_cnn", rep, 3.0, noise=0.02, others=0.7))
    run = _run(("a",), (1, 2), ("mnist_cnn",), 5)
    folder = rf.write_results(tmp_path / "run", results, run)
    a, look = _report_and_rounds(folder, run)
    (verdict,) = look.verdicts[0].verdicts.values()
    assert verdict.comparison is None and verdict.open and verdict.rounds == ()
    hook = rounds.NextRoundHook(_spec(run), RULE, baseline=None)
    cells, why = hook(load_run_dir(folder).parsed)
    assert {(c.threads, c.repeat) for c in cells} == {(1, 5), (2, 5)}
    assert why.startswith("1 comparison(s) undecided")
    g = next(g for g in a.workloads[0].groups if g.threads == 1)
    assert g.time_cmp is None and "no common undisturbed round with the baseline" in g.flags


def test_every_cell_disturbed_keeps_a_baseline_and_the_comparison_open(tmp_path):
    # A real quick compare on this busy machine: others used 84-89 % of every cell's CPUs.
    # Before: no baseline, so the rounds said "every comparison was decided" and the
    # report "the baseline has no successful runs". (With the default policy "auto"
    # such a run uses its disturbed cells; "exclude" keeps them out.)
    results = [_cell("a", t, "mnist_mlp", rep, 4.0 / t, noise=0.1, others=0.86)
               for rep in range(5) for t in (1, 2)]  # fmt: skip
    run = _run(("a",), (1, 2), ("mnist_mlp",), 5)
    run["options"]["disturbed_policy"] = "exclude"
    folder = rf.write_results(tmp_path / "run", results, run)
    a, look = _report_and_rounds(folder, run)
    assert look.verdicts[0].baseline == ("mnist_mlp", "a", 2) == a.workloads[0].baseline.key
    assert config_words(a.baseline) == "a@2"
    hook = rounds.NextRoundHook(_spec(run), RULE, baseline=None)
    cells, why = hook(load_run_dir(folder).parsed)
    assert len(cells) == 2 and "undecided" in why
    text = " ".join(a.workloads[0].conclusions)
    assert "no successful runs" not in text and "Not compared with a@2: a@1" in text


def test_with_the_auto_policy_a_run_disturbed_throughout_is_judged_alike_by_both(tmp_path):
    results = [_cell("a", t, "mnist_mlp", rep, 4.0 / t, noise=0.1, others=0.86)
               for rep in range(5) for t in (1, 2)]  # fmt: skip
    run = _run(("a",), (1, 2), ("mnist_mlp",), 5)  # policy auto: most cells disturbed
    folder = rf.write_results(tmp_path / "run", results, run)
    a, look = _report_and_rounds(folder, run)
    (v,) = look.verdicts[0].verdicts.values()
    g = next(g for g in a.workloads[0].groups if g.threads == 1)
    assert v.comparison is not None and g.time_cmp is not None
    assert (v.comparison.verdict, len(v.rounds)) == (g.time_cmp.verdict, g.rounds_compared)
    assert g.rounds_compared == 5


def test_sentences_use_the_verdicts_values_when_disturbed_cells_are_included(tmp_path):
    """A machine under bursts: most rounds disturbed, so `auto` includes disturbed cells.
    The Threads and next-best sentences must compare the same values as the verdicts
    (they used only the undisturbed ones: 'one measurement on a side' beside a decided
    verdict, in a real bench-noise run)."""
    results = []
    for rep in range(5):
        quiet = rep == 0  # one undisturbed round; four disturbed ones
        others = 0.02 if quiet else 0.3
        results.append(_cell("a", 1, "mnist_cnn", rep, 3.0, noise=0.02, others=others))
        results.append(_cell("a", 2, "mnist_cnn", rep, 2.0, noise=0.02, others=others))
    run = _run(("a",), (1, 2), ("mnist_cnn",), 5)
    folder = rf.write_results(tmp_path / "run", results, run)
    auto = analyze(folder)
    assert auto.interference.included
    (w,) = auto.workloads
    slow = next(g for g in w.groups if g.threads == 1)
    assert slow.time_cmp.verdict == "different" and slow.rounds_compared == 5
    assert len(slow.round_times) == 5 and len(slow.round_costs or slow.round_times) == 5
    threads = [c for c in w.conclusions if c.startswith("Threads") or "next best" in c]
    assert threads and all("decided" in c and "one measurement" not in c for c in threads)
    # --disturbed exclude: one clean round each, and every sentence says so
    excluded = analyze(folder, disturbed="exclude")
    (w,) = excluded.workloads
    slow = next(g for g in w.groups if g.threads == 1)
    assert len(slow.round_times) == 1
    assert all("undecided" in c for c in w.conclusions if "next best" in c)


def test_an_interval_end_that_excludes_1_never_prints_as_1_00() -> None:
    """A "slower" verdict whose interval starts at 1.003 reads "1.003-1.11x", not
    "1.00-1.11x" (which would look as if it included 1)."""
    from tfvariants.analyze.statistics.stats import Interval
    from tfvariants.analyze.training.conclusions import interval_words

    def words(lo: float, hi: float, invert: bool = False) -> str:
        return interval_words(Interval(1.05, lo, hi, "paired", 20, 0.985, 5), invert)

    assert words(1.003, 1.11) == "98.5% interval 1.003-1.11x"
    assert words(0.9, 0.9996) == "98.5% interval 0.900-0.9996x"
    assert words(0.95, 1.05) == "98.5% interval 0.950-1.05x"  # three digits elsewhere
    assert words(1.0, 1.2) == "98.5% interval 1.00-1.20x"  # exactly 1 stays 1.00
    assert words(0.9, 0.997, invert=True) == "98.5% interval 1.003-1.11x"
