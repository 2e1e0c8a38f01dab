import dataclasses
import json
import os
import re

import pytest
import resultfactory as rf

from tfvariants.cli import main
from tfvariants.commands import compare
from tfvariants.execute import runner
from tfvariants.execute.record import StoredCell
from tfvariants.options.training import TrainingOptions
from workloads import registry


@pytest.fixture(autouse=True)
def _no_onednn_probe(request, monkeypatch):
    """The per-variant oneDNN probe imports real TensorFlow: only the real-TF tests run it."""
    if "needs_tf" not in request.fixturenames:
        monkeypatch.setattr(compare, "probe_variants", _fake_probe)
        monkeypatch.setattr(compare, "measure_peaks", lambda *a: None)  # real TF too


def _fake_probe(info, objs, probe, count_isa=False):
    for name in objs:
        info.setdefault(name, {})["onednn"] = {"isa": "fake", "noop": [], "changes": []}


@pytest.mark.parametrize("bad", ["0", "-1", "abc", "", "8,,16", "1.5"])
def test_bad_thread_lists_are_one_line_errors_and_write_nothing(bad, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["compare", f"--threads={bad}", "--out", "r"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tfvariants compare: error: argument --threads: expected")
    assert err.count("\n") == 1
    assert os.listdir(tmp_path) == []


def test_parse_threads_keeps_order_and_drops_duplicates():
    assert compare.parse_threads("8,16, 32,8") == [8, 16, 32]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--repeats", "0"], "--repeats: expected a whole number from 1 to 10000, got 0"),
        (["--workloads", "nope"], "unknown workload 'nope'"),
        (["--variants", "nope"], "unknown variant 'nope'"),
        (["--baseline", "tpu"], "--baseline tpu: 'tpu' is not one of --variants"),
        (
            ["--threads", "1", "--baseline", "local@4"],
            "--baseline local@4: 4 is not one of --threads",
        ),
        (["--pricing", "nope.toml"], "no pricing catalog 'nope.toml'"),
        (["--timeout", "-3"], "--timeout"),
        (["--resume"], "--resume needs --out"),
    ],
)
def test_bad_arguments_fail_before_anything_runs(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", lambda *a, **k: pytest.fail("must not run"))
    assert main(["compare", *argv]) == 2
    assert message in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_default_threads():
    assert compare.default_threads(2) == [1, 2]
    assert compare.default_threads(16) == [1, 2, 4, 8, 16]
    assert compare.default_threads(12) == [1, 2, 4, 8, 12]


def test_quick_scale_reads_the_workload_spec_with_a_fallback():
    spec = registry.load("mnist_mlp").SPEC
    assert compare.quick_scale("mnist_mlp") == {"samples": spec["quick_samples"]}
    assert compare.quick_scale("no_such_workload") == {"samples": 2000}


class FakeRunCell:
    def __init__(self, fail=(), interrupt_at=None, speedup=0.5, noise=0.02):
        self.calls = []
        self.fail = set(fail)
        self.interrupt_at = interrupt_at
        self.speedup, self.noise = speedup, noise
        self.priorities = []

    def __call__(self, cell, variant, options, folder, at=None):
        self.calls.append((cell.cell_id, options))
        self.priorities.append(at.priority if at is not None else "normal")
        if self.interrupt_at and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt
        status = "failed" if cell.cell_id in self.fail else "ok"
        r = rf.make_result(
            cell.variant,
            cell.threads,
            cell.workload,
            cell.repeat,
            status=status,
            steady_epoch_s=2.0 / cell.threads**self.speedup,
            noise=self.noise,
        )
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.write_text(json.dumps(r))
        return StoredCell.written(cell.cell_id, r, path)


def test_quick_compare_end_to_end_with_a_fake_runner(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tfvariants.plan.spec.logical_cpus", lambda: 2)
    fake = FakeRunCell()
    monkeypatch.setattr(runner, "run_cell", fake)
    argv = ["compare", "--quick", "--workloads", "mnist_mlp", "--out", "results/q", "--verbose"]
    assert main(argv) == 0
    # local x threads 1,2 x mnist_mlp x 5 repeats; decided at the first look: no more rounds
    assert len(fake.calls) == 1 * 2 * 1 * 5
    options = fake.calls[0][1]
    spec = registry.load("mnist_mlp").SPEC  # the workload's quick scale, the quick window
    assert (options.epochs, options.samples) == (None, spec["quick_samples"])
    assert (options.min_steady_s, options.min_steady_steps) == (6.0, 50)
    run = json.loads((tmp_path / "results/q/run.json").read_text())
    assert run["variants"] == ["local"] and run["threads"] == [1, 2] and run["options"]["quick"]
    assert run["adaptive"]["budget_s"] == 600 and run["adaptive"]["looks"] == [5, 7, 10, 15, 20]
    assert run["adaptive"]["rounds"] == [] and "decided" in run["adaptive"]["stopped"]
    (look,) = run["adaptive"]["looks_made"]  # when it was decided, and what
    assert look["after_repeats"] == 5 and look["at_s"] >= 0
    (said,) = look["verdicts"].values()
    assert list(look["verdicts"]) == ["mnist_mlp local@1 vs local@2"]
    assert said["verdict"] == "different" and said["ratio"] > 1.3
    assert run["options"]["priority"] == "raised" and set(fake.priorities) == {"raised"}
    assert run["variant_info"]["local"]["onednn"]["isa"] == "fake"  # the probe is stored
    html = (tmp_path / "reports/q/index.html").read_text()
    assert "local@2" in html and html.count("<svg") == 2 and "5 looks" in html
    err = capsys.readouterr().err
    assert "10 ok, 0 failed" in err and "report: reports/q/index.html" in err
    assert "local@2 was 1.41x faster than local@1" in err


def test_adaptive_rounds_run_only_undecided_pairs_and_resume_continues(
    tmp_path, monkeypatch, capsys
):
    from tfvariants.analyze.statistics import adaptive

    monkeypatch.chdir(tmp_path)
    fake = FakeRunCell(speedup=0.0, noise=0.3)  # identical configurations: stays undecided
    monkeypatch.setattr(runner, "run_cell", fake)
    argv = ["compare", "--threads", "1,2", "--workloads", "mnist_mlp", "--out", "res",
            "--budget", "1h", "--max-repeats", "8", "--verbose"]  # fmt: skip
    assert main(argv) == 0
    run = json.loads((tmp_path / "res/run.json").read_text())
    assert run["adaptive"]["looks"] == [5, 6, 7, 8]
    assert [r["repeat"] for r in run["adaptive"]["rounds"]] == [5, 6, 7]
    assert "still undecided after the maximum of 8 repeats" in run["adaptive"]["stopped"]
    assert len(fake.calls) == 2 * 8
    assert [x["after_repeats"] for x in run["adaptive"]["looks_made"]] == [5, 6, 7, 8]
    err = capsys.readouterr().err
    assert "undecided against the baseline: mnist_mlp local@1" in err
    # At the last look the closing line says the answer's next step: here the comparison
    # sits at an edge for its noise, so both send it to a quieter machine, neither to a
    # larger --max-repeats (the figure case: test_serve_rounds).
    assert f"at the last look (8 repeats), next: {adaptive.QUIETER_NEXT}\n" in err
    assert "next, for what is undecided: a quieter machine: " in err
    assert "--max-repeats" not in err
    assert err.index("at the last look (8 repeats)") < err.index("see 'next' above")
    # a resume with a larger maximum continues from the stored rounds
    again = FakeRunCell(speedup=0.0, noise=0.3)
    monkeypatch.setattr(runner, "run_cell", again)
    assert main(["compare", "--resume", "--out", "res", "--max-repeats", "10"]) == 0
    assert sorted({c[0].rsplit("__r", 1)[1] for c in again.calls}) == ["8", "9"]
    run = json.loads((tmp_path / "res/run.json").read_text())
    assert [r["repeat"] for r in run["adaptive"]["rounds"]] == [5, 6, 7, 8, 9]


def test_bad_budget_and_effect_options_are_user_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for bad in (["--budget", "soon"], ["--min-effect", "150%"], ["--repeats", "6", "--budget",
                "1m", "--max-repeats", "4"], ["--confidence", "0.3"]):  # fmt: skip
        assert main(["compare", "--workloads", "mnist_mlp", "--out", "x", *bad]) == 2
        assert capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_compare_exit_code_counts_failures_and_resume_reruns_them(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    bad = "mnist_mlp__local__t1__r1"
    monkeypatch.setattr(runner, "run_cell", FakeRunCell(fail={bad}))
    argv = [
        "compare",
        "--threads",
        "1,2",
        "--workloads",
        "mnist_mlp",
        "--epochs",
        "1",
        "--out",
        "res",
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "1 failed" in err and bad in err and "--resume --out res" in err
    assert (tmp_path / "reports/res/index.html").exists()  # the report is still written
    again = FakeRunCell()
    monkeypatch.setattr(runner, "run_cell", again)
    assert main(["compare", "--resume", "--out", "res"]) == 0  # the stored matrix is reused
    assert [c[0] for c in again.calls] == [bad]
    assert main(["compare", "--resume", "--out", "res", "--threads", "1"]) == 2  # fits this host
    assert "different matrix" in capsys.readouterr().err


def test_interrupted_compare_says_how_to_resume(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", FakeRunCell(interrupt_at=3))
    assert main(["compare", "--threads", "1", "--workloads", "mnist_mlp", "--out", "res"]) == 130
    err = capsys.readouterr().err
    assert "interrupted during mnist_mlp__local__t1__r2" in err and "--resume --out res" in err
    assert len(list((tmp_path / "res/cells").glob("*.json"))) == 2
    assert not (tmp_path / "reports").exists()


def test_report_command_writes_html_and_csv(tmp_path, capsys):
    results, run = rf.study_like_results()
    d = rf.write_results(tmp_path / "res", results, run)
    out, csv_path = tmp_path / "r.html", tmp_path / "c.csv"
    assert (
        main(["report", str(d), "-o", str(out), "--csv", str(csv_path), "--baseline", "pip@8"]) == 0
    )
    assert out.exists() and len(csv_path.read_text().splitlines()) == 37
    assert "pip@8" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "missing")]) == 2


def test_prices_command_prints_the_catalog(capsys):
    assert main(["prices"]) == 0
    out = capsys.readouterr().out
    assert "n1-highcpu-64" in out and "0.5090" in out and "minimum 60 s" in out
    assert main(["prices", "--catalog", "nope"]) == 2


@pytest.mark.tf
def test_real_compare_on_this_host(tmp_path, monkeypatch, needs_tf, capsys):
    monkeypatch.chdir(tmp_path)
    argv = [
        "compare",
        "--threads",
        "1",
        "--workloads",
        "mnist_mlp",
        "--repeats",
        "2",
        "--epochs",
        "2",
        "--samples",
        "1024",
        "--out",
        "res",
    ]
    assert main(argv) == 0, capsys.readouterr().err
    cells = sorted((tmp_path / "res/cells").glob("*.json"))
    assert len(cells) == 2
    assert all(json.loads(c.read_text())["status"] == "ok" for c in cells)
    assert "<svg" in (tmp_path / "reports/res/index.html").read_text()


def test_variant_that_is_not_ready_stops_before_the_sweep(tmp_path, capsys):
    from tfvariants.cli import main as cli_main

    vfile = tmp_path / "v.toml"
    vfile.write_text('[variants.old]\nkind = "venv"\npython = "/nonexistent/bin/python"\n')
    out = tmp_path / "run"
    rc = cli_main(["compare", "--variants", "old", "--threads", "1", "--workloads", "mnist_mlp",
                   "--variants-file", str(vfile), "--out", str(out)])  # fmt: skip
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tfvariants: error: variant(s) not ready: old:")
    assert not out.exists()


def test_next_round_runs_only_the_undecided_workloads_configurations():
    from tfvariants.analyze.statistics import adaptive
    from tfvariants.plan.spec import MatrixSpec
    from tfvariants.rounds import training as rounds

    spec = MatrixSpec(("local",), (1, 2), ("mnist_cnn", "mnist_mlp"), 5, TrainingOptions(),
                      {"local": {"kind": "local", "device": "cpu"}})  # fmt: skip
    stored = {}
    for r in range(5):
        for t in (1, 2):
            clear = rf.make_result("local", t, "mnist_cnn", r, steady_epoch_s=4.0 / t, noise=0.02)
            noisy = rf.make_result("local", t, "mnist_mlp", r, steady_epoch_s=2.0, noise=0.3,
                                   seed=t)  # fmt: skip
            for res in (clear, noisy):
                c = res["cell"]
                stored[f"{c['workload']}__local__t{t}__r{r}"] = res
    hook = rounds.NextRoundHook(spec, adaptive.stopping_rule(5), baseline=None)
    cells, why = hook(rf.typed(stored))
    assert {(c.workload, c.threads, c.repeat) for c in cells} == {
        ("mnist_mlp", 1, 5),
        ("mnist_mlp", 2, 5),
    }
    assert "1 comparison(s) undecided at the look after 5 repeats" == why
    # between looks nothing is re-judged: round 6 keeps the same configurations
    del stored["mnist_mlp__local__t2__r4"]
    cells, _ = hook(rf.typed(stored))  # an interrupted round is completed first
    assert [(c.workload, c.threads, c.repeat) for c in cells] == [("mnist_mlp", 2, 4)]


def test_next_round_uses_the_reports_baseline_which_is_never_oversubscribed_by_choice():
    from tfvariants.analyze.statistics import adaptive
    from tfvariants.plan.spec import MatrixSpec
    from tfvariants.rounds import training as rounds

    spec = MatrixSpec(("local",), (1, 2, 8), ("mnist_cnn",), 5, TrainingOptions(),
                      {"local": {"kind": "local", "device": "cpu"}})  # fmt: skip
    stored = {}
    for r in range(5):
        for t, epoch_s, noise in ((1, 2.0, 0.3), (2, 2.0, 0.02), (8, 4.0, 0.02)):
            res = rf.make_result("local", t, "mnist_cnn", r, steady_epoch_s=epoch_s, noise=noise)
            assert res["requested"]["oversubscribed"] is (t == 8)  # 2 logical CPUs
            stored[f"mnist_cnn__local__t{t}__r{r}"] = res
    hook = rounds.NextRoundHook(spec, adaptive.stopping_rule(5), baseline=None)
    cells, why = hook(rf.typed(stored))
    # Baseline local@2 (fits the host): 1 vs 2 is noisy and stays open; 8 vs 2 is decided.
    # With the oversubscribed local@8 as baseline both pairs would be decided already.
    assert {(c.threads, c.repeat) for c in cells} == {(1, 5), (2, 5)}
    assert why.startswith("1 comparison(s) undecided")


class VariantSpeedRunCell(FakeRunCell):
    """Times that depend on the variant: the AVX-512 build 25 % faster, the rest equal."""

    def __call__(self, cell, variant, options, folder, at=None):
        self.calls.append((cell.cell_id, options))
        factor = 0.75 if cell.variant == "intel-avx512-2.14" else 1.0
        r = rf.make_result(cell.variant, cell.threads, cell.workload, cell.repeat,
                           steady_epoch_s=2.0 * factor, noise=0.01)  # fmt: skip
        path = folder.cells_dir / f"{cell.cell_id}.json"
        path.write_text(json.dumps(r))
        return StoredCell.written(cell.cell_id, r, path)


@pytest.mark.parametrize("host", ["avx2", "avx512"])
def test_compiled_preset_picks_what_this_cpu_can_run_and_opens_with_the_answer(
    host, tmp_path, monkeypatch, capsys
):
    import tfvariants.variants as variants_pkg

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tfvariants.plan.spec.logical_cpus", lambda: 2)
    built = []
    monkeypatch.setattr(variants_pkg, "ensure_built", lambda v, log: built.append(v.name))
    lacks = "its TensorFlow is compiled for AVX512, which this CPU lacks (fake census)"
    monkeypatch.setattr(
        variants_pkg, "skip_reason",
        lambda v: lacks if host == "avx2" and v.name == "intel-avx512-2.14" else None,
    )  # fmt: skip
    monkeypatch.setattr(compare, "ready_variants", lambda objs, engine: objs)
    fake = VariantSpeedRunCell()
    monkeypatch.setattr(runner, "run_cell", fake)
    code = main(["compare", "--preset", "compiled", "--repeats", "5", "--budget", "1h",
                 "--out", "results/c", "--verbose"])  # fmt: skip
    assert code == 0
    assert built == ["tf-2.14", "intel-2.14", "intel-avx512-2.14"]  # built before the gate
    run = json.loads((tmp_path / "results/c/run.json").read_text())
    compiled = ["intel-2.14"] + (["intel-avx512-2.14"] if host == "avx512" else [])
    assert run["variants"] == ["tf-2.14", *compiled, "local", "isa-sse41", "isa-avx2"]
    assert run["workloads"] == ["mnist_cnn", "cifar10_cnn"] and run["threads"] == [2]
    preset = run["options"]["preset"]
    assert preset["name"] == "compiled" and preset["stock"] == "tf-2.14"
    assert {c.split("__")[1] for c, _ in fake.calls} == set(run["variants"])
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    if host == "avx512":
        assert "a compiled build differed from the stock wheel tf-2.14 (decided)" in first
        # One line per build: each workload's answer in it. Not at the first look (98.4 %,
        # the old stop): "intel-avx512-2.14 was the fastest" rests on its comparisons with
        # both other builds at the family's split level, which 5 against 5 rounds cannot
        # decide, so its sides run on beside the explanatory ones' rounds.
        faster = (
            r"^ *intel-avx512-2.14: mnist_cnn faster by 1.3\dx "
            r"\(98.(?!4)\d% interval 1.3\d-1.3\dx\); cifar10_cnn faster by 1.3\dx"
        )
        assert re.search(faster, out, re.M), out
        assert re.search(r"^ *intel-2.14: mnist_cnn equivalent within \+/-10%", out, re.M)
    else:
        assert "no compiled build differed from the stock wheel tf-2.14 by more than 10%" in first
        assert f"intel-avx512-2.14 was not run: {lacks}." in out
    assert "'Equivalent' means within +/-10% of the stock wheel: the question is" in out
    assert "The 2017 study" in out and "30-40 % faster" in out
    html = (tmp_path / "reports/c/index.html").read_text()
    assert "Compiled vs stock on this CPU" in html
    assert html.index("Compiled vs stock on this CPU") < html.index("<h2>Summary</h2>")
    # A resume keeps the preset: its report still opens with the answer.
    assert main(["compare", "--resume", "--out", "results/c"]) == 0
    assert json.loads((tmp_path / "results/c/run.json").read_text())["options"]["preset"] == preset
    # its terminal ends with the preset's question and the answer table (--verbose: the study)
    assert "compiled for this CPU faster than the stock wheel tf-2.14?" in capsys.readouterr().err


def test_the_first_look_plans_the_steady_window_of_the_later_rounds():
    from tfvariants.analyze.statistics import adaptive
    from tfvariants.commands.matrix_args import run_options_for
    from tfvariants.plan.spec import MatrixSpec
    from tfvariants.rounds import training as rounds

    options = TrainingOptions(plan_window=True, min_steady_s=10.0, min_steady_steps=50)
    spec = MatrixSpec(("local",), (1, 2), ("mnist_cnn",), 5, options,
                      {"local": {"kind": "local", "device": "cpu"}})  # fmt: skip
    stored = {}
    for r in range(5):
        for t in (1, 2):
            res = rf.make_result("local", t, "mnist_cnn", r, steady_epoch_s=2.0, noise=0.3)
            # processes differ (noise 0.3 between cells), windows inside one agree
            step = res["timing"]["steady_epoch_s"] / 100
            res["timing"].update(steady_windows_s=[step] * 5, steady_s=1.0)
            stored[f"mnist_cnn__local__t{t}__r{r}"] = res
    hook = rounds.NextRoundHook(spec, adaptive.stopping_rule(5), baseline=None)
    hook(rf.typed(stored))
    plan = hook.window_plan  # the run's value: the frozen spec is not written to
    assert plan is not None and "window_plan" not in spec.options.record()
    assert plan.from_repeat == 5 and plan.min_steady_s == 3.0 and plan.components is not None
    assert "more repeats" in plan.reason and plan.components["cells"] == 10
    assert run_options_for(spec, "mnist_cnn", 4, plan).min_steady_s == 10.0  # the first rounds
    assert run_options_for(spec, "mnist_cnn", 5, plan).min_steady_s == 3.0
    for res in stored.values():  # disturbed cells, left out of verdicts, plan nothing
        res.setdefault("cpu", {})["others_share"] = 0.9
    hook(rf.typed(stored))
    assert hook.window_plan is not None and hook.window_plan.min_steady_s == 10.0
    assert "kept" in hook.window_plan.reason
    # --min-steady-s given: the user's window stays
    fixed = MatrixSpec(
        ("local",),
        (1, 2),
        ("mnist_cnn",),
        5,
        dataclasses.replace(options, plan_window=False),
        {"local": {"kind": "local", "device": "cpu"}},
    )
    hook = rounds.NextRoundHook(fixed, adaptive.stopping_rule(5), baseline=None)
    hook(rf.typed(stored))
    assert hook.window_plan is None


def test_order_seed_and_interference_settings_are_stored_and_kept_on_resume(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    fake = FakeRunCell()
    monkeypatch.setattr(runner, "run_cell", fake)
    argv = ["compare", "--threads", "1,2", "--variants", "local,xla", "--workloads", "mnist_mlp",
            "--repeats", "4", "--out", "res", "--order-seed", "11", "--quiet-wait", "0",
            "--disturbed-share", "20%", "--disturbed", "exclude"]  # fmt: skip
    assert main(argv) == 0
    opts = json.loads((tmp_path / "res/run.json").read_text())["options"]
    assert opts["order_seed"] == 11 and opts["quiet_wait_s"] == 0.0
    assert opts["disturbed_share"] == 0.2 and opts["disturbed_policy"] == "exclude"
    order = [c[0] for c in fake.calls]
    rounds = [order[i * 4 : (i + 1) * 4] for i in range(4)]
    assert len({tuple(x.rsplit("__r", 1)[0] for x in r) for r in rounds}) > 1  # own order each
    # A new run draws its own seed; a resume keeps the stored one.
    assert main(["compare", "--threads", "1", "--workloads", "mnist_mlp", "--repeats", "1",
                 "--out", "other"]) == 0  # fmt: skip
    drawn = json.loads((tmp_path / "other/run.json").read_text())["options"]["order_seed"]
    assert isinstance(drawn, int)
    assert main(["compare", "--resume", "--out", "res"]) == 0
    assert json.loads((tmp_path / "res/run.json").read_text())["options"]["order_seed"] == 11
    capsys.readouterr()
    for bad in (["--quiet-wait", "-1"], ["--disturbed-retries", "11"], ["--quiet-share", "2"],
                ["--disturbed", "sometimes"], ["--order-seed", "x"]):  # fmt: skip
        assert main(["compare", "--workloads", "mnist_mlp", "--out", "x", *bad]) == 2
        assert capsys.readouterr().err.strip().count("\n") == 0
    assert not (tmp_path / "x").exists()
