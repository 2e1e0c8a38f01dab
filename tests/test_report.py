import csv
import re

import pytest
import resultfactory as rf

from tfvariants.analyze.cost.catalog import load_catalog
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.report.build import assemble
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.analyze.training.analysis import analyze
from tfvariants.analyze.training.part import training_part
from tfvariants.commands.report import write_report
from tfvariants.errors import UserError
from tfvariants.options.decision import Override
from tfvariants.render.html import render_html
from tfvariants.render.labels import config_words
from tfvariants.render.svgchart import Bar, bar_chart

EVIL = "<script>alert(1)</script>"


@pytest.fixture
def study(tmp_path):
    results, run = rf.study_like_results()
    return rf.write_results(tmp_path / "res", results, run)


@pytest.fixture(scope="module")
def gce():
    return Pricing(load_catalog("gce-2017"))


def group(wr, label):
    return next(g for g in wr.groups if g.label == label)


def test_default_baseline_is_the_gpu_then_most_threads_never_empty(tmp_path, gce):
    results, run = rf.study_like_results(repeats=5)
    a = analyze(rf.write_results(tmp_path / "res", results, run), pricing=gce)
    assert config_words(a.baseline) == "gpu@16"  # a GPU ran: it is the reference
    mlp, cnn = a.workloads
    assert mlp.name == "mnist_mlp" and mlp.baseline.label == "gpu@16"
    assert [g.label for g in mlp.groups] == [
        "pip@8",
        "pip@16",
        "compiled@8",
        "compiled@16",
        "gpu@8",
        "gpu@16",
    ]
    # the GPU was skipped for mnist_cnn: its baseline is the most threads with results
    assert cnn.baseline.label == "pip@16" and cnn.baseline.times
    assert group(cnn, "compiled@16").time_cmp.verdict == "different"  # 2.4 vs 3.0 s/epoch
    assert group(cnn, "compiled@16").time_cmp.direction == "lower"
    assert group(cnn, "pip@8").time_cmp.ratio.value > 1
    assert group(mlp, "gpu@8").time_cmp.verdict in ("equivalent", "undecided")  # same speed
    # GPU against the fastest and the cheapest CPU configuration comes first, time and cost
    first = mlp.conclusions[0]
    assert first.startswith("GPU vs the fastest CPU configuration (compiled@16)")
    assert "faster than compiled@16" in first and "more expensive than compiled@16" in first
    assert any(c.startswith("GPU vs the cheapest CPU configuration") for c in mlp.conclusions)
    assert not any("no significant" in c for w in a.workloads for c in w.conclusions)


def test_statistics_costs_and_pareto(study, gce):
    a = analyze(study, pricing=gce, baseline="pip@16")
    mlp = a.workloads[0]
    g = group(mlp, "compiled@8")
    assert g.cost.instance == "n1-highcpu-8" and g.cost.per_hour == 0.0636
    assert g.cost.cost == pytest.approx(
        gce.catalog.billing.billed_seconds(g.time.value) * 0.0636 / 3600
    )
    assert group(mlp, "gpu@8").cost.instance == "n1-standard-1+K80"
    assert mlp.cheapest.label == "compiled@8"
    pareto = {p.label for p in mlp.pareto}
    assert "compiled@8" in pareto and mlp.fastest.label in pareto
    assert "pip@8" not in pareto  # slower and dearer than compiled@8
    # the projected full schedule is what is billed, not the quick run
    assert g.time.value > 60 * 5


def test_failed_skipped_and_oversubscribed_are_flagged(study, gce):
    a = analyze(study, pricing=gce)
    cnn = a.workloads[1]
    c8 = group(cnn, "compiled@8")
    assert c8.n("failed") == 1 and len(c8.times) == 2
    assert "1 failed" in c8.flags and any("oversubscribed" in f for f in c8.flags)
    gpu = group(cnn, "gpu@8")
    assert gpu.time is None and "3 skipped" in gpu.flags
    kinds = {w.kind for w in a.warnings}
    assert {"oversubscribed", "failed", "skipped", "few_repeats"} <= kinds
    assert any("emulates 16 vCPUs on 2 CPUs: not representative" in w.message for w in a.warnings)


def test_conclusions_only_claim_what_the_data_shows(tmp_path):
    results = []
    for r in range(5):
        results.append(rf.make_result("local", 1, "mnist_cnn", r, steady_epoch_s=4.0, noise=0.02))
        results.append(rf.make_result("local", 2, "mnist_cnn", r, steady_epoch_s=2.9, noise=0.02))
        results.append(
            rf.make_result("local", 1, "mnist_mlp", r, steady_epoch_s=2.0, noise=0.2, seed=1)
        )
        results.append(
            rf.make_result("local", 2, "mnist_mlp", r, steady_epoch_s=2.0, noise=0.2, seed=2)
        )
    d = rf.write_results(tmp_path / "q", results)
    a = analyze(d)
    assert config_words(a.baseline) == "local@2"
    by_name = {w.name: w for w in a.workloads}
    cnn_text = " ".join(by_name["mnist_cnn"].conclusions)
    assert "On 2 logical CPUs" in cnn_text
    assert re.search(
        r"local@2 was 1\.[34]\dx faster than local@1 \(96\.8% interval [\d.]+-[\d.]+x, decided",
        cnn_text,
    )
    mlp_text = " ".join(by_name["mnist_mlp"].conclusions)
    assert "faster than" not in mlp_text.replace("was the fastest", "")
    assert "undecided" in mlp_text and "more repeat" in mlp_text
    # a stricter min_effect or confidence is honoured in the verdicts and the sentences
    strict = analyze(d, ReportSettings(decision=Override(min_effect=0.5)))
    assert "decided" not in " ".join(strict.workloads[0].conclusions).replace("undecided", "")
    assert strict.settings.min_effect == 0.5 and "50%" in strict.settings.describe()


def test_the_workloads_default_baseline_is_not_an_oversubscribed_configuration(tmp_path):
    # 2 logical CPUs: local@8 is oversubscribed, so the default yardstick is local@2 for
    # the run and for each workload alike (a shadowed name once made them differ).
    results = [
        rf.make_result("local", t, "mnist_cnn", r, steady_epoch_s=2.0 + t / 10, noise=0.02)
        for r in range(3)
        for t in (1, 2, 8)
    ]
    a = analyze(rf.write_results(tmp_path / "res", results))
    assert config_words(a.baseline) == "local@2"
    assert a.workloads[0].baseline.label == "local@2"


def test_no_baseline_data_gives_no_ratios_and_says_so(study, gce):
    a = analyze(study, pricing=gce, baseline="gpu@8")
    cnn = a.workloads[1]
    assert all(g.time_cmp is None for g in cnn.groups)
    assert any(w.kind == "no_baseline" and "mnist_cnn" in w.message for w in a.warnings)
    assert "no comparison is claimed" in " ".join(cnn.conclusions)


def test_bad_inputs_are_one_line_user_errors(tmp_path, study):
    with pytest.raises(UserError, match="no result files"):
        analyze(tmp_path)
    with pytest.raises(UserError, match="no results for variant 'tpu'"):
        analyze(study, baseline="tpu")
    with pytest.raises(UserError, match="VARIANT@THREADS"):
        analyze(study, baseline="pip@x")


def test_html_is_one_self_contained_file(study, gce, tmp_path):
    out = tmp_path / "r" / "index.html"
    write_report(study, out, ReportSettings(pricing=gce))
    html = out.read_text()
    assert html.count("<svg") == 4  # time + cost chart per workload
    assert "stroke-dasharray" in html  # the dotted line at 1.0
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html and "<script" not in html and "<link" not in html
    assert "gce-2017" in html and "Woolf" in html
    assert "Instructions the binary lacks" in html and "AVX2, FMA" in html
    assert "Tesla K80" in html


def test_without_pricing_there_is_no_cost_chart(study, tmp_path):
    html = render_html(assemble(training_part(analyze(study))))
    assert html.count("<svg") == 2
    assert "cost per run" not in html


def test_strings_from_results_cannot_inject_markup(tmp_path):
    name = EVIL.replace("/", "")  # names are file names: no '/' (the store refuses it)
    results = []
    for r in range(2):
        ok = rf.make_result("local", 1, name, r)
        ok["environment"]["tensorflow"]["version"] = EVIL
        ok["environment"]["cpu"]["model"] = '"><img src=x onerror=alert(2)>'
        results.append(ok)
        results.append(rf.make_result(name, 2, name, r, status="failed", reason=EVIL))
    rf.write_results(tmp_path / "x", results)
    html = render_html(
        assemble(
            training_part(
                analyze(
                    tmp_path / "x", pricing=Pricing(load_catalog("gce-2017")), baseline="local@1"
                )
            )
        )
    )
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert (
        "&lt;script&gt;alert(1)&lt;script&gt;" in svg
    )  # titles and labels inside the chart are escaped too


def test_svg_chart_escapes_and_marks_missing_bars():
    svg = bar_chart(EVIL, [Bar(EVIL, 1.2, 1.1, 1.3, note=EVIL), Bar("x@1", None, note="skipped")])
    assert "<script>" not in svg and "skipped" in svg and 'stroke-dasharray="3,3"' in svg


def test_csv_has_one_row_per_cell(study, gce, tmp_path):
    out = tmp_path / "cells.csv"
    write_report(study, tmp_path / "r.html", ReportSettings(pricing=gce), csv_path=out)
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 36
    row = next(r for r in rows if r["cell_id"] == "mnist_mlp__pip__t8__r0")
    assert (
        row["status"] == "ok" and row["instance"] == "n1-highcpu-8" and row["projected"] == "True"
    )
    assert float(row["cost"]) == pytest.approx(
        float(row["billed_seconds"]) * 0.0636 / 3600, rel=1e-4
    )
    failed = next(r for r in rows if r["status"] == "failed")
    assert failed["reason"] == "worker exited with code 1: OOM" and failed["cost"] == ""


def test_cells_planned_but_missing_are_reported(tmp_path):
    from tfvariants.analyze.training.analysis import analyze

    results, run = rf.study_like_results()
    d = rf.write_results(tmp_path / "res", results, run)
    assert not [w for w in analyze(d).warnings if w.kind == "incomplete"]
    victim = sorted((d / "cells").glob("*.json"))[0]
    victim.unlink()
    (warning,) = [w for w in analyze(d).warnings if w.kind == "incomplete"]
    assert warning.message.startswith("1 of ")
    assert victim.stem in warning.message
    assert "--resume" in warning.hint


def test_csv_carries_ratios_intervals_and_verdicts(tmp_path, gce):
    results, run = rf.study_like_results(repeats=5)
    d = rf.write_results(tmp_path / "res", results, run)
    out = tmp_path / "cells.csv"
    a = write_report(d, tmp_path / "r.html", ReportSettings(pricing=gce), csv_path=out).frame
    rows = list(csv.DictReader(out.open()))
    row = next(r for r in rows if r["cell_id"] == "mnist_mlp__compiled__t16__r0")
    g = group(a.workloads[0], "compiled@16")
    assert float(row["time_ratio"]) == pytest.approx(g.time_cmp.ratio.value, rel=1e-5)
    lo, hi = float(row["time_ratio_lo"]), float(row["time_ratio_hi"])
    assert lo < float(row["time_ratio"]) < hi and row["time_verdict"] == "different"
    assert "Mann-Whitney" in row["ratio_interval"] and "median of 5" in row["config_time_interval"]
    assert row["cost_verdict"] == g.cost_cmp.verdict and row["cost_ratio_lo"]


def test_report_shows_the_machines_noise_and_labels_intervals(tmp_path):
    results = []
    for r in range(6):
        slow = 1.85 if r in (1, 4) else 1.0  # the same configuration at two speeds
        results.append(rf.make_result("local", 1, "mnist_cnn", r, steady_epoch_s=4.0 * slow))
        results.append(rf.make_result("local", 2, "mnist_cnn", r, steady_epoch_s=2.0, noise=0.1))
    d = rf.write_results(tmp_path / "q", results)
    a = analyze(d)
    assert a.noise is not None and a.noise.repeats == 6 and a.noise.resolvable > 1.05
    assert "resolve differences of about" in a.noise.sentence()
    assert any("local@1" in b and "two clusters" in b for b in a.noise.bimodal)
    assert any(w.kind == "bimodal" for w in a.warnings)
    html = render_html(assemble(training_part(a)))
    assert "This machine&#39;s noise" in html or "This machine's noise" in html
    assert 'title="median of 6; range of the repeats = 96.9% interval for the median"' in html
    assert "Bimodal timings: mnist_cnn local@1" in html
    # local@1's repeats sit at two exact speeds (spread 0 against local@2's 10 %), so
    # compare_rounds' auto pairs them by round: the label says which interval it is
    assert "Hodges-Lehmann ratio of 6 paired rounds; 96.9% Wilcoxon signed-rank interval" in html


def test_overhead_split_adds_up_to_the_cell():
    from tfvariants.store.celltimes import overhead_split

    r = {
        "timing": {
            "import_tf_s": 3.0,
            "build_s": 0.2,
            "data_s": 0.1,
            "warmup_s": 2.0,
            "steady_s": 10.0,
            "fit_s": 14.0,
        },
        "runner": {"wall_s": 20.0},
    }
    split = overhead_split(r)
    assert split["between epochs"] == pytest.approx(2.0)
    assert split["build"] == pytest.approx(0.3)
    assert sum(split.values()) == pytest.approx(20.0)
    assert overhead_split({}) == {} and overhead_split({"timing": {"build_s": 1.0}}) == {
        "build": 1.0
    }


def test_report_says_per_configuration_where_it_ran_real_or_simulated(tmp_path):
    import resultfactory as rf

    from tfvariants.commands.report import write_report as write

    results = []
    for rep in range(3):
        for variant, threads, real in (("pip", 8, True), ("pip", 16, False)):
            r = rf.make_result(variant, threads, "mnist_mlp", rep)
            r["node"] = {
                "executor": "ray",
                "instance": f"n2d-highcpu-{threads}",
                "node_id": f"node-{threads}",
                "cpu_model": "AMD EPYC",
                "real_instance": real,
                "simulated": not real,
            }
            results.append(r)
    d = rf.write_results(tmp_path / "res", results)
    html = tmp_path / "index.html"
    write(d, html)
    text = html.read_text()
    section = text[text.index('id="where-ran"') :]
    rows = section[: section.index("</table>")].split("<tr>")[2:]
    # in the matrix's order: 8 threads before 16
    assert "pip@8" in rows[0] and "n2d-highcpu-8" in rows[0] and "real instance" in rows[0]
    assert "pip@16" in rows[1] and "n2d-highcpu-16" in rows[1] and "simulated node" in rows[1]
    # a local run has no such section
    local = rf.write_results(
        tmp_path / "local", [rf.make_result("pip", 8, "mnist_mlp", i) for i in range(3)]
    )
    write(local, tmp_path / "local.html")
    assert 'id="where-ran"' not in (tmp_path / "local.html").read_text()


def test_a_variant_fixed_to_one_thread_count_is_planned_there_only():
    """`--variants local,twin@2`: twin's cells at 1 thread were never planned, so the
    report must not call them missing (it did, in every bench-noise run)."""
    from tfvariants.analyze.shared.coverage import planned_ids
    from tfvariants.store.record import run_record

    run = {
        "variants": ["local", "twin"],
        "threads": [1, 2],
        "workloads": ["mnist_cnn"],
        "repeats": 2,
        "fixed_threads": {"twin": 2},
    }
    ids = planned_ids(run_record(run))
    assert len(ids) == 6 and not [i for i in ids if "twin__t1" in i]
    assert "mnist_cnn__twin__t2__r1" in ids


def test_a_report_loads_the_run_folder_once(tmp_path, monkeypatch, capsys):
    """One load per report (analyze/report/build.py), training and serving cells alike:
    both analyses read the same loaded records (it was loaded once per analysis), and
    `report` no longer reads run.json again for a compiled preset's stock baseline."""
    from test_serving_analysis import _store

    from tfvariants.cli import main
    from tfvariants.plan.serve import ServeCell
    from tfvariants.store import rundir, runfile

    results, run = rf.study_like_results(repeats=2)
    run["options"]["preset"] = {"name": "compiled", "stock": "pip"}
    d = rf.write_results(tmp_path / "res", results, run)
    _store(
        d,
        [(ServeCell("pip", 8, "m", "concurrency", "inprocess", 1, r), 50.0, 20.0) for r in (0, 1)],
    )
    loads = []
    real = runfile.load_run

    def counting(results_dir):
        loads.append(results_dir)
        return real(results_dir)

    monkeypatch.setattr(rundir, "load_run", counting)
    monkeypatch.setattr(runfile, "load_run", counting)
    html, csv_path = tmp_path / "r.html", tmp_path / "c.csv"
    args = ["report", str(d), "-o", str(html), "--csv", str(csv_path), "--pricing", "gce-2017"]
    args.append("--verbose")  # the sentences
    assert main(args) == 0
    assert len(loads) == 1
    assert csv_path.is_file() and (tmp_path / "c-serving.csv").is_file()
    assert "baseline: <strong>pip@16</strong>" in html.read_text()  # the preset's stock wheel
    assert "serving m:" in capsys.readouterr().out


def test_sections_in_reading_order_and_only_those_with_something_to_say(study, gce):
    """The report is its list of sections (analyze/report/sections.py): the template
    loops over them, so what a report shows is decided here, not in the template."""
    from tfvariants.analyze.report import sections as sec
    from tfvariants.analyze.report.answer import Answer
    from tfvariants.analyze.report.build import build_report
    from tfvariants.analyze.training import part as tr

    report = build_report(study, ReportSettings(pricing=gce))
    kinds = [type(s) for s in report.sections]
    assert kinds == [
        Answer,
        tr.TrainingSummary,
        sec.Warnings,
        tr.Workload,
        tr.Workload,
        sec.Environments,
        sec.Prices,
    ]
    assert [s.index for s in report.sections if isinstance(s, tr.Workload)] == [1, 2]
    html = render_html(report)
    assert html.index("<h2>Summary</h2>") < html.index("<h2>Warnings</h2>")
    assert html.index('id="w-2"') < html.index("<h2>Environment per variant</h2>")
    unpriced = build_report(study)  # no prices: no Prices section, no cost columns
    assert not any(isinstance(s, sec.Prices) for s in unpriced.sections)
    assert "<h2>Prices</h2>" not in render_html(unpriced)
