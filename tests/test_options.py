"""The run options: declared once (tfvariants.options), read the same way by the adaptive
rounds, the report and serving; and the three ways they had drifted apart."""

from __future__ import annotations

import json

import pytest
import resultfactory as rf
from test_compare import FakeRunCell, _no_onednn_probe  # noqa: F401 (autouse: no probe)

from tfvariants.cli import main
from tfvariants.execute import runner
from tfvariants.store.adaptiveplans import WindowPlan


def test_min_effect_zero_is_judged_with_zero_by_the_rounds_and_the_report(
    tmp_path, monkeypatch, capsys
):
    # Drift 1: the rounds judged with --min-effect 0, the report fell back to 5 % (`or`).
    from tfvariants.analyze.training.analysis import analyze
    from tfvariants.rounds import training as rounds

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", FakeRunCell(speedup=0.0, noise=0.02))
    seen = []
    real_hook = rounds.NextRoundHook.__init__

    def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        real_hook(self, *args, **kwargs)
        seen.append(self.settings)

    monkeypatch.setattr(rounds.NextRoundHook, "__init__", spy)
    argv = [
        "compare",
        "--threads",
        "1,2",
        "--workloads",
        "mnist_mlp",
        "--out",
        "res",
        "--min-effect",
        "0",
        "--budget",
        "1m",
        "--max-repeats",
        "5",
        "--quiet-wait",
        "0",
    ]
    assert main(argv) == 0
    assert json.loads((tmp_path / "res/run.json").read_text())["options"]["min_effect"] == 0
    report = analyze(tmp_path / "res")
    assert [s.min_effect for s in seen] == [0.0]
    assert report.settings.min_effect == 0.0
    assert report.settings.confidence == seen[0].confidence


def test_one_settings_reader_for_training_and_serving():
    from tfvariants.analyze.statistics.decide import run_settings
    from tfvariants.options.decision import Override
    from tfvariants.store.record import EMPTY_RUN, run_record

    run = run_record({"options": {"min_effect": 0.0, "confidence": 0.9999}})
    for read in (run_settings,):
        got = read(run)
        assert (got.min_effect, got.confidence) == (0.0, 0.9999)
        assert read(EMPTY_RUN).min_effect == 0.05 and read(EMPTY_RUN).confidence == 0.95
        assert read(run, Override(0.1, 0.9)).min_effect == 0.1


CONFIDENCES = ["0.5", "0.51", "0.999", "0.9995", "0.9999", "0.99995", "1", "95%", "99.99%"]


@pytest.mark.parametrize("text", CONFIDENCES)
def test_confidence_has_one_range_in_compare_report_and_serve(text, tmp_path, monkeypatch, capsys):
    # Drift 2: compare and report took up to 0.9999, serve only up to 0.999 (and took
    # anything in [0, 1) before checking), the report's reader anything below 1.
    from tfvariants.options import limits

    monkeypatch.chdir(tmp_path)
    value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    ok = limits.confidence_problem(value) is None
    common = ["--threads", "1", "--dry-run", "--pricing", "gce-2017", "--confidence", text]
    codes = {
        "compare": main(["compare", "--workloads", "mnist_mlp", *common]),
        "serve": main(["serve", *common]),
    }
    rf.write_results(tmp_path / "r", [rf.make_result("local", 1, "mnist_mlp", 0)])
    codes["report"] = main(["report", "r", "-o", "out.html", "--confidence", text])
    capsys.readouterr()
    assert codes == dict.fromkeys(codes, 0 if ok else 2), codes


def test_ray_cells_after_the_first_look_measure_the_planned_window(monkeypatch):
    # Drift 3: on Ray every cell got the first rounds' window (the repeat was dropped
    # where compare handed the cell options to the cluster), though run.json recorded
    # the plan.
    import argparse

    from tfvariants.commands import compare_cluster, matrix_args
    from tfvariants.execute import ray_executor
    from tfvariants.options.training import TrainingOptions
    from tfvariants.plan.cell import Cell
    from tfvariants.plan.spec import MatrixSpec

    spec = MatrixSpec(
        ("local",),
        (1,),
        ("mnist_mlp",),
        5,
        TrainingOptions(min_steady_s=10.0, min_steady_steps=50, plan_window=True),
        {"local": {"kind": "local", "device": "cpu"}},
    )
    plan = WindowPlan(3.0, 10.0, 5, "test")
    captured = {}

    class FakeRayWaves:
        def __init__(self, out, settings, placement, variants, options_for):  # type: ignore[no-untyped-def]
            captured["options_for"] = options_for

    monkeypatch.setattr(ray_executor, "RayWaves", FakeRayWaves)
    monkeypatch.setattr(compare_cluster, "placement", lambda spec, pricing: {})
    args = argparse.Namespace(node_wait=None, ray_address=None, preempt_retries=None)
    options_for = matrix_args.cell_options(spec, lambda: plan)
    compare_cluster.ray_waves(args, spec, {}, None, None, _Quiet(), options_for)
    given = captured["options_for"]
    assert given(Cell("local", 1, "mnist_mlp", 4)).min_steady_s == 10.0
    assert given(Cell("local", 1, "mnist_mlp", 5)).min_steady_s == 3.0


class _Quiet:
    def print(self, *args: object, **kwargs: object) -> None:
        pass


def test_the_identity_a_resume_compares_is_the_declared_one(tmp_path):
    from tfvariants.errors import UserError
    from tfvariants.execute.matrix import Matrix
    from tfvariants.options.training import TrainingOptions
    from tfvariants.plan.spec import MatrixSpec

    identity = {
        "quick",
        "epochs",
        "samples",
        "steps_per_epoch",
        "data",
        "seed",
        "min_steady_s",
        "min_steady_steps",
        "warmup_max_s",
    }
    assert set(TrainingOptions().identity()) == identity
    spec = MatrixSpec(("local",), (1,), ("mnist_mlp",), 1, TrainingOptions(seed=3))
    assert spec.identity()["options"] == TrainingOptions(seed=3).identity()
    Matrix(spec, tmp_path / "r").prepare()
    again = MatrixSpec(("local",), (1,), ("mnist_mlp",), 1, TrainingOptions(seed=3, budget_s=60))
    Matrix(again, tmp_path / "r").prepare(resume=True)  # a budget is not identity
    other = MatrixSpec(("local",), (1,), ("mnist_mlp",), 1, TrainingOptions(seed=4))
    with pytest.raises(UserError, match="--seed 3 vs 4"):
        Matrix(other, tmp_path / "r").prepare(resume=True)


def test_run_options_are_frozen_and_typed(tmp_path, monkeypatch):
    import dataclasses

    from tfvariants.commands import compare
    from tfvariants.options.training import TrainingOptions

    monkeypatch.chdir(tmp_path)
    parser = __import__("tfvariants.cli", fromlist=["build_parser"]).build_parser()
    args = parser.parse_args(
        ["compare", "--workloads", "mnist_mlp", "--min-effect", "0", "--quick", "--threads", "1"]
    )
    spec, _ = compare.build_spec(args)
    o = spec.options
    assert isinstance(o, TrainingOptions)
    assert (o.min_effect, o.quick, o.min_steady_s, o.budget_s) == (0.0, True, 6.0, 600.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.min_effect = 0.1  # type: ignore[misc]
    with pytest.raises(TypeError):
        o["window_plan"] = {}  # type: ignore[index]
    # the record run.json stores: what the options held before they were typed
    record = o.record()
    assert record["min_effect"] == 0.0 and "preset" not in record
    assert record["per_workload"]["mnist_mlp"]


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("epochs", 0, "a whole number 1..1000000000 or null"),
        ("seed", -1, "a whole number 0..4294967295"),
        ("data", "fake", "synthetic or real"),
        ("confidence", 0.99995, "a confidence above 0.5 and at most 0.9999"),
        ("min_effect", 1.5, "a fraction from 0 up to"),
        ("max_repeats", 0, "a whole number 1..10000"),
        ("timeout_s", 0, "seconds greater than 0"),
        ("min_steady_steps", 0, "a whole number 1..1000000000"),
    ],
)
def test_a_stored_option_out_of_its_declared_bounds_is_refused(field, value, words, tmp_path):
    from tfvariants.errors import UserError
    from tfvariants.store.runfile import validate_run

    run = {
        "kind": "tfvariants.run",
        "schema_version": 3,
        "variants": ["local"],
        "workloads": ["mnist_mlp"],
        "threads": [1],
        "repeats": 1,
        "hosts": [],
        "options": {field: value},
    }
    with pytest.raises(UserError, match=f"field 'options.{field}': expected {words}"):
        validate_run(run, "run.json")
    validate_run({**run, "options": {}}, "run.json")


def test_warmup_max_goes_from_the_command_line_to_the_worker_request_and_run_json(
    tmp_path, monkeypatch, capsys
):
    from tfvariants.execute.runner import worker_request
    from tfvariants.plan.cell import Cell
    from tfvariants.plan.pinning import plan_pinning
    from tfvariants.plan.spec import training_order
    from tfvariants.plan.topology import read_topology
    from tfvariants.variants import get_variant

    monkeypatch.chdir(tmp_path)
    fake = FakeRunCell()
    monkeypatch.setattr(runner, "run_cell", fake)
    argv = [
        "compare",
        "--threads",
        "1,2",
        "--workloads",
        "mnist_mlp",
        "--repeats",
        "4",
        "--out",
        "res",
        "--quiet-wait",
        "0",
        "--warmup-max",
        "30s",
    ]
    assert main(argv) == 0
    options = fake.calls[0][1]
    assert options.warmup_max_s == 30.0
    cell = Cell("local", 1, "mnist_mlp")
    plan = plan_pinning(1, read_topology())
    local = get_variant("local")
    order = training_order(cell, options, local.keras, local.backend)
    request = worker_request(cell, order, plan, tmp_path / "x")
    assert request.warmup_max_s == 30.0 and request.min_steady_s == options.min_steady_s
    assert json.loads((tmp_path / "res/run.json").read_text())["options"]["warmup_max_s"] == 30
    # part of what a cell measures: a resume may not change it, and keeps it when not given
    assert main(["compare", "--resume", "--out", "res", "--warmup-max", "10s"]) == 2
    assert "--warmup-max 30.0 vs 10.0" in capsys.readouterr().err
    fake.calls.clear()
    (tmp_path / "res/cells/mnist_mlp__local__t1__r0.json").unlink()
    assert main(["compare", "--resume", "--out", "res"]) == 0 and len(fake.calls) == 1
    assert {o.warmup_max_s for _, o in fake.calls} == {30.0}
    # without it: no cap, and run.json's options read as before
    assert main([*argv[:-2], "--out", "plain"]) == 0
    assert "warmup_max_s" not in json.loads((tmp_path / "plain/run.json").read_text())["options"]
    for bad in ("0", "soon", "-5s"):
        assert main(["run", "mnist_mlp", "--threads", "1", "--warmup-max", bad]) == 2
        assert "--warmup-max" in capsys.readouterr().err


def test_serving_options_are_typed_frozen_and_keep_run_json_as_it_was():
    import dataclasses

    from tfvariants.cli import build_parser
    from tfvariants.commands.serve_spec import build_serve_spec
    from tfvariants.options.serving import ServingOptions

    args = build_parser().parse_args(
        ["serve", "--threads", "1", "--confidence", "99.99%", "--min-effect", "0"]
    )
    spec, _ = build_serve_spec(args)
    o = spec.options
    assert isinstance(o, ServingOptions)
    assert (o.min_effect, o.budget_s, o.encoding) == (0.0, 600.0, "b64")
    assert o.confidence == pytest.approx(0.9999)
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.p99_bound_ms = 5.0  # type: ignore[misc]
    # the keys serve always stored (a resume compares all but the resumable ones)
    assert set(spec.to_json("t")["options"]) == {
        "min_duration_s",
        "max_duration_s",
        "min_queries",
        "max_queries",
        "server_qps",
        "p99_bound_ms",
        "search_steps",
        "encoding",
        "target_url",
        "target_model",
        "input_shape",
        "timeout_s",
        "budget_s",
        "max_repeats",
        "min_effect",
        "confidence",
        "disturbed_policy",  # serving judges disturbed cells by it too (a run older: auto)
        "preset",
    }
    seeded = dataclasses.replace(spec, options=dataclasses.replace(o, order_seed=7))
    assert seeded.identity()["options"]["order_seed"] == 7
    assert "timeout_s" not in seeded.identity()["options"]


def test_one_next_round_rule_for_every_task():
    from tfvariants.analyze.statistics.adaptive import stopping_rule
    from tfvariants.rounds.decide import Judged, next_round

    rule = stopping_rule(5, 7)  # looks after 5 and 7 repeats
    cells = lambda todo: list(todo)  # noqa: E731
    say = {"nothing_to_judge": "none"}
    early = Judged(3, None, 0, 0, [], {})
    assert next_round(early, rule, cells, None, **say) == (
        [],
        "only 3 round(s) stored, fewer than the first look",
    )
    assert next_round(Judged(5, 5, 0, 0, [], {}), rule, cells, None, **say) == ([], "none")
    done = Judged(5, 5, 2, 0, [], {})
    assert "every comparison was decided" in next_round(done, rule, cells, None, **say)[1]
    # an interrupted round is completed first: only the missing cells, in their round
    gap = Judged(6, 5, 2, 1, ["a", "b"], {"a": {0, 1, 2, 3, 4, 5}, "b": {0, 1, 2, 3, 4}})
    assert next_round(gap, rule, cells, None, **say)[0] == [("b", 5)]
    full = Judged(6, 5, 2, 1, ["a", "b"], {"a": set(range(6)), "b": set(range(6))})
    todo, why = next_round(full, rule, cells, 3, **say)
    assert sorted(todo) == [("a", 6), ("b", 6)] and "1 comparison(s) undecided" in why
    last = Judged(7, 7, 2, 1, ["a", "b"], {})
    assert "after the maximum of 7 repeats" in next_round(last, rule, cells, None, **say)[1]


def test_the_report_states_the_equivalence_band_the_run_used(tmp_path, monkeypatch):
    # The method paragraph said "equivalent when entirely inside +/-5%" (the min effect)
    # while the run judged equivalence within its own band of +/-10%.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", FakeRunCell(speedup=0.0, noise=0.02))
    argv = ["compare", "--threads", "1,2", "--workloads", "mnist_mlp", "--repeats", "3"]
    argv += ["--equivalence-band", "10%", "--out", "res", "-o", "r.html", "--pricing", "none"]
    assert main([*argv, "--quiet-wait", "0"]) == 0
    html = (tmp_path / "r.html").read_text()
    # The method states both once (the settings' own words): "different" by the minimum
    # effect of 5 %, "equivalent" within the run's band of 10 %; one look (3 repeats, no
    # budget): the two one-sided tests' interval is a 90 % one.
    assert "&#39;different&#39; means by at least 5%, &#39;equivalent&#39; within +/-10%" in html
    assert "(two one-sided tests, each at 95%: a 90.0% interval)" in html


def test_serve_keeps_its_equivalence_band_for_the_rounds_and_the_report():
    # serve took --equivalence-band and dropped it: the run stored no band, so its
    # rounds and its report judged "equivalent" with the default 5 %.
    from tfvariants.analyze.statistics.decide import run_settings
    from tfvariants.cli import build_parser
    from tfvariants.commands.serve_spec import build_serve_spec

    args = build_parser().parse_args(["serve", "--threads", "1", "--equivalence-band", "10%"])
    spec, _ = build_serve_spec(args)
    assert spec.options.equivalence_band == pytest.approx(0.10)
    from tfvariants.store.record import run_record

    assert run_settings(run_record(spec.to_json("t"))).equivalence_band == pytest.approx(0.10)


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        ([], "min_duration_s", 3.0),
        (["--preset", "study"], "min_duration_s", 10.0),
        (["--preset", "study", "--min-duration", "2s"], "min_duration_s", 2.0),
        (["--min-queries", "auto"], "min_queries", None),
        (["--min-queries", "30"], "min_queries", 30),
        (["--p99", "0.25s"], "p99_bound_ms", 250.0),
        (["--server-qps", "12.5"], "server_qps", 12.5),
        (["--timeout", "60"], "timeout_s", 60.0),
        (["--encoding", "json"], "encoding", "json"),
        ([], "max_queries", 100_000),
    ],
)
def test_serve_options_given_else_the_presets_else_declared(argv, field, value):
    from tfvariants.cli import build_parser
    from tfvariants.commands.serve_spec import build_serve_spec

    args = build_parser().parse_args(["serve", "--threads", "1", *argv])
    spec, _ = build_serve_spec(args)
    assert getattr(spec.options, field) == value


def test_the_serving_request_defaults_are_the_serving_options():
    """The host is the source: it sends every serving option the worker's request
    declares, and the request's own defaults (a worker started by hand) agree with the
    options' declared ones and with `serve`'s quick-scale texts (issue 40: they had
    drifted to 10 s vs 3 s and json vs b64)."""
    import dataclasses

    from tfvariants.commands.serve_spec import DEFAULTS, PRESET_OPTIONS
    from tfvariants.options import declare
    from tfvariants.options.serving import ServingOptions
    from tfvariants.plan.serve import ServeCell, serve_request
    from workloads.serving.request import MIN_QUERIES, ServeRequest

    options = ServingOptions()
    request = {f.name: f.default for f in dataclasses.fields(ServeRequest)}
    shared = [name for name in declare.declared(ServingOptions) if name in request]
    assert {"min_duration_s", "encoding", "max_queries"} <= set(shared)
    for name in shared:
        mine = getattr(options, name)
        if name == "min_queries":  # None: the scenario's own; the closed loop's is the default
            assert mine is None and request[name] == MIN_QUERIES["concurrency"]
        else:
            assert request[name] == mine, name
    # `serve`'s quick-scale texts parse to the declared defaults.
    texts = {name: DEFAULTS[name] for name in PRESET_OPTIONS}
    assert declare.resolve(ServingOptions, texts, {}, {}) == declare.resolve(
        ServingOptions, {}, {}, {}
    )
    # Every shared value goes to the worker explicitly: none is left to its defaults.
    sent = ServingOptions(min_duration_s=7.0, encoding="json", min_queries=9, max_queries=99)
    req = serve_request(ServeCell("local", 1, "noop", "concurrency", "http"), sent)
    assert all(getattr(req, name) == getattr(sent, name) for name in shared)


def test_every_stored_option_has_a_bound_and_the_loader_checks_every_class():
    """One policy for every stored option (issue 40): each declared option kept in
    run.json has a bound, and the loader refuses a value out of it naming the field,
    for the options of the run's task (training: cell, decision and training options;
    serving: decision and serving options)."""
    from tfvariants.errors import UserError
    from tfvariants.options import declare
    from tfvariants.options.cell import CellOptions
    from tfvariants.options.decision import DecisionOptions
    from tfvariants.options.serving import ServingOptions
    from tfvariants.options.training import TrainingOptions
    from tfvariants.store.runfile import RUN_KIND, RUN_SCHEMA_VERSION, validate_run

    for cls in (CellOptions, DecisionOptions, TrainingOptions, ServingOptions):
        unbound = [n for n, o in declare.declared(cls).items() if o.stored and o.bound() is None]
        assert unbound == [], (cls.__name__, unbound)

    def run(task: str | None, **options: object) -> dict:
        return {
            "schema_version": RUN_SCHEMA_VERSION,
            "kind": RUN_KIND,
            **({"task": task} if task else {}),
            "variants": ["local"],
            "workloads": ["w"],
            "threads": [1],
            "repeats": 1,
            "options": options,
            "hosts": [],
        }

    assert validate_run(run("serve", **ServingOptions().record()), "run.json")
    assert validate_run(run(None, **TrainingOptions().record()), "run.json")
    for task, name, value in [
        ("serve", "min_duration_s", -1),
        ("serve", "encoding", "png"),
        ("serve", "search_steps", 0),
        ("serve", "confidence", 5),
        (None, "disturbed_share", 5),
        (None, "confidence", 5),
        (None, "duet", "yes"),
    ]:
        with pytest.raises(UserError, match=rf"run.json: field 'options\.{name}': expected "):
            validate_run(run(task, **{name: value}), "run.json")


def test_a_preset_is_a_layer_of_resolve_below_the_given_and_the_stored_values():
    """given > stored > preset > default (issue 40): a preset no longer rewrites the
    command line, so what was given stays told apart from what the preset chose."""
    from tfvariants.options import declare
    from tfvariants.options.decision import DecisionOptions

    layer = {"min_effect": 0.0, "equivalence_band": 0.1, "budget_s": 900.0}
    got = declare.resolve(
        DecisionOptions, {"min_effect": "3%"}, {"equivalence_band": 0.2}, {}, layer
    )
    assert (got["min_effect"], got["equivalence_band"], got["budget_s"]) == (0.03, 0.2, 900.0)
    assert got["confidence"] == DecisionOptions.confidence  # the declared default
    assert declare.resolve(DecisionOptions, {}, {}, {}, None)["min_effect"] == 0.05


def test_what_a_resume_does_with_an_option_is_said_in_its_declaration():
    """One way (issue 40): ``resume=`` in the declaration. A training resume checks the
    cell options declared SAME; a serving resume may change only those declared
    CHANGEABLE or THIS_COMMAND; a THIS_COMMAND value is never the stored run's."""
    from tfvariants.options import declare
    from tfvariants.options.cell import CellOptions
    from tfvariants.options.serving import RESUMABLE
    from tfvariants.options.training import TrainingOptions

    same = [n for n, o in declare.declared(CellOptions).items() if o.resume == declare.SAME]
    assert same == [
        "epochs", "samples", "steps_per_epoch", "data", "seed",
        "min_steady_s", "min_steady_steps", "warmup_max_s", "quick",
    ]  # fmt: skip
    assert set(RESUMABLE) == {"timeout_s", "budget_s", "max_repeats", "at_least_first_look"}
    stored = {"timeout_s": 60.0, "data_dir": "/elsewhere", "seed": 7, "budget_s": 300.0}
    got = declare.resolve(TrainingOptions, {}, stored, {})
    assert (got["timeout_s"], got["data_dir"]) == (1800.0, None)  # this command's
    assert (got["seed"], got["budget_s"]) == (7, 300.0)  # kept
