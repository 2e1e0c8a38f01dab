"""What a reader of the report and of `tfvariants report`'s summary sees: every sentence
can be tied to its workload, numbers keep three significant digits, and intervals say
what they are."""

from __future__ import annotations

import re

import pytest
import resultfactory as rf

from tfvariants.analyze.cost.catalog import load_catalog
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.serving.part import ServingPart
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.cli import main
from tfvariants.commands.report import write_report


@pytest.fixture(scope="module")
def gce():
    return Pricing(load_catalog("gce-2017"))


@pytest.fixture
def study(tmp_path):
    results, run = rf.study_like_results(repeats=5)
    return rf.write_results(tmp_path / "res", results, run)


def _summary(html: str) -> str:
    return html[html.index("<h2>Summary</h2>") : html.index("<h2>This machine")]


def test_summary_names_the_workload_of_every_sentence(study, tmp_path, gce):
    out = tmp_path / "r.html"
    a = write_report(study, out, ReportSettings(pricing=gce)).frame
    summary = _summary(out.read_text())
    # "GPU vs the fastest CPU configuration" is said once per workload, under its name
    heads = [m.start() for m in re.finditer(r'<h3 class="summary-workload">', summary)]
    assert len(heads) == len(a.workloads) == 2
    for w, start, end in zip(a.workloads, heads, [*heads[1:], len(summary)], strict=True):
        block = summary[start:end]
        assert f">{w.name}</h3>" in block
        assert block.count("<li>") == len(w.conclusions)


def test_cli_summary_heads_each_workload(study, tmp_path, capsys):
    assert main(["report", str(study), "-o", str(tmp_path / "r.html"), "--verbose"]) == 0
    out = capsys.readouterr().out.splitlines()
    heads = [i for i, line in enumerate(out) if line in ("mnist_mlp:", "mnist_cnn:")]
    assert len(heads) == 2
    # the GPU sentences come right under their workload's name
    assert all(out[i + 1].startswith("  GPU vs the fastest CPU") for i in heads[:1])


def _serving(out):
    from test_serving_analysis import _store

    from tfvariants.plan.serve import ServeCell
    from tfvariants.store.result import write_json_atomic

    rows = []
    for r, j in enumerate((0.9, 1.0, 1.1)):
        for v, f in (("pip", 1.0), ("compiled", 1.2)):
            rows += [
                (ServeCell(v, 2, "m", "concurrency", "inprocess", c, r), thr * f * j, p99)
                for c, thr, p99 in ((1, 20.0, 40.0), (4, 45.0, 90.0))
            ]
    _store(out, rows)
    bad = ServeCell("pip", 2, "m", "server", "inprocess", 1, 0)
    write_json_atomic(
        out / "cells" / f"{bad.cell_id}.json",
        {
            "kind": "tfvariants.serve_cell",
            "schema_version": 1,
            "cell": bad.to_dict(),
            "status": "failed",
            "reason": "server did not start",
        },
    )
    return out


def test_serving_costs_keep_their_interval_and_sentences_their_label(tmp_path, capsys):
    d = _serving(tmp_path / "res")
    out = tmp_path / "r.html"
    assert main(["report", str(d), "-o", str(out), "--verbose"]) == 0
    a = write_report(d, out, ReportSettings(pricing=Pricing(load_catalog("gce-2017"))))
    part = a.part(ServingPart)
    assert part is not None
    (m,) = part.analysis.models
    by = {c.label: c for c in m.configs}
    pip, comp = by["pip@2 inprocess"], by["compiled@2 inprocess"]
    # the cost per million keeps the throughput's coverage: an interval, not a point
    assert pip.cost_per_million.has_interval and pip.cost_per_million.coverage == 0.75
    # the ratio to the baseline is the training statistic's: 3 vs 3 repeats are too few
    # for its interval, so it says so (never a zero-width "0.833-0.833")
    other = pip if comp.is_baseline else comp
    assert other.cost_cmp.verdict == "undecided" and not other.cost_ratio.has_interval
    assert "too few" in other.cost_cmp.reasons[0]
    first = m.conclusions[0]
    # three significant digits and the interval's name, then the runner-up's verdict
    assert re.search(
        r"\$\d\.\d{3} per million predictions \(\$\d\.\d{3}-\$\d\.\d{3}: median of 3; range",
        first,
    )
    assert "not decided against the next cheapest" in first
    assert "against the next cheapest: compiled@2 inprocess vs pip@2 inprocess: undecided" in first
    html = out.read_text()
    assert not re.search(r"(\d\.\d+)-\1<", html)  # no zero-width interval anywhere
    assert "95% interval over repeats" not in html  # 3 repeats give a 75% range
    assert "range of the repeats = 75.0% interval" in html
    # the failed cell has no LoadGen record: its row claims nothing about LoadGen's rules
    row = html[html.index('data-cell="serve__m__server__inprocess__pip__t2__r0"') :]
    row = row[: row.index("</tr>")]
    assert "not met" not in row and "no / no" not in row
    # the CLI prints the serving sentences too
    printed = capsys.readouterr().out
    assert "serving m:" in printed and "had the lowest median cost with p99 within" in printed


def test_chart_values_have_three_significant_digits():
    from tfvariants.render.svgchart import Bar, bar_chart

    svg = bar_chart("t", [Bar("a", 0.77, 0.7, 0.8), Bar("b", 1.0, note="baseline")])
    # the value beside the bar; the interval in its tooltip (the label is drawn already)
    assert ">0.770<" in svg and "<title>0.700-0.800</title>" in svg


def _two_configs(tmp_path, slow_s, noise):
    from tfvariants.analyze.training.analysis import analyze

    results = []
    for r in range(5):
        results.append(
            rf.make_result("local", 1, "mnist_mlp", r, steady_epoch_s=slow_s, noise=noise, seed=1)
        )
        results.append(
            rf.make_result("local", 2, "mnist_mlp", r, steady_epoch_s=2.0, noise=noise, seed=2)
        )
    return analyze(
        rf.write_results(tmp_path / "q", results), pricing=Pricing(load_catalog("gce-2017"))
    )


def test_fastest_and_cheapest_only_when_decided(tmp_path):
    (w,) = _two_configs(tmp_path / "a", 2.0, 0.2).workloads  # same mean, noisy: undecided
    text = " ".join(w.conclusions)
    assert "was the fastest" not in text and "local@2 had the shortest estimated time" in text
    # the baseline is also the cheapest: it is compared with the next cheapest, not just named
    cheapest = next(c for c in w.conclusions if c.startswith("Cheapest:"))
    assert "against the next cheapest: local@2 vs local@1: undecided (cost ratio" in cheapest
    (w,) = _two_configs(tmp_path / "b", 6.0, 0.02).workloads  # 3x apart: decided
    assert "the baseline local@2 was the fastest for mnist_mlp" in w.conclusions[0]
    assert "x cheaper than local@1" in next(c for c in w.conclusions if c.startswith("Cheapest:"))


def test_the_baseline_is_called_the_fastest_by_the_family_rule_not_the_runner_up_alone(
    tmp_path, monkeypatch
):
    """ "X was the fastest" rests on X against every other at the family's level
    (family.lead), the baseline as any other: its comparison with the runner-up, decided at
    the pair's level, is not enough when the family's comparisons are not all decided."""
    from tfvariants.analyze.statistics import family

    def undecided(best, rivals, settings):
        return family.Lead(False, {}, settings, settings.confidence)

    monkeypatch.setattr(family, "lead", undecided)
    (w,) = _two_configs(tmp_path / "b", 6.0, 0.02).workloads  # 3x apart: the pair decided
    assert "was the fastest" not in w.conclusions[0]
    assert "the baseline local@2 had the shortest estimated time" in w.conclusions[0]
    assert "Against the next best: " in " ".join(w.conclusions)  # the pair, as decided


def test_a_single_configuration_is_not_called_the_fastest(tmp_path):
    from tfvariants.analyze.training.analysis import analyze

    results = [rf.make_result("local", 8, "mnist_mlp", r) for r in range(3)]
    a = analyze(rf.write_results(tmp_path / "one", results))
    (w,) = a.workloads
    assert "only the baseline local@8 ran successfully for mnist_mlp" in w.conclusions[0]
    assert "fastest" not in " ".join(w.conclusions)


def test_summary_table_flags_an_undecided_lead_and_the_baseline_bar_is_solid(tmp_path):
    from tfvariants.analyze.report.build import assemble
    from tfvariants.analyze.training.part import training_part
    from tfvariants.render.html import render_html

    a = _two_configs(tmp_path / "a", 2.0, 0.2)  # undecided
    (w,) = a.workloads
    assert not w.fastest_decided and not w.cheapest_decided
    html = render_html(assemble(training_part(a)))
    start = html.index('<table class="summary">')
    summary = html[start : html.index("</table>", start)]
    assert summary.count(">not decided</span>") == 2
    # the baseline is the reference, not an undecided bar: drawn solid
    assert re.search(r'font-weight="700">local@2</text><rect [^>]*fill-opacity="0.9">', html)
    (w,) = _two_configs(tmp_path / "b", 6.0, 0.02).workloads
    assert w.fastest_decided and w.cheapest_decided


def test_steady_step_of_seconds_reads_in_ms_without_exponent(tmp_path):
    from tfvariants.analyze.report.build import assemble
    from tfvariants.analyze.training.analysis import analyze
    from tfvariants.analyze.training.part import training_part
    from tfvariants.render.html import render_html

    results = []
    for r in range(3):
        res = rf.make_result("local", 2, "mnist_mlp", r)
        res["timing"]["steady_step_s"] = 1.234  # a slow model: 1,230 ms, not "1.23e+03 ms"
        results.append(res)
    html = render_html(assemble(training_part(analyze(rf.write_results(tmp_path / "s", results)))))
    assert "e+0" not in html and "1,230 ms" in html


def test_failed_hint_names_the_cell_file_and_footnote_explains_coverage(study, tmp_path, gce):
    out = tmp_path / "r.html"
    a = write_report(study, out, ReportSettings(pricing=gce)).frame
    (failed,) = [w for w in a.warnings if w.kind == "failed"]
    name = re.search(r"cells/(\S+\.json)", failed.hint).group(1)
    assert (study / "cells" / name).is_file() and "<run>" not in failed.hint
    html = out.read_text()
    assert "96.8% interval" in html and "achieved coverage" in html


def test_serve_help_agrees_with_compare_and_report(capsys):
    assert main(["serve", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "-o FILE.html, --output FILE.html, --report FILE.html" in text
    assert "(default gce-2017; 'none' for no costs)" in text  # the shared pricing options
    assert "(default mobilenet_v2;" in text and "(default http)" in text


def test_gpu_cost_sentence_says_when_price_tiers_differ(study, gce):
    from tfvariants.analyze.training.analysis import analyze

    mlp = analyze(study, pricing=gce).workloads[0]
    first = mlp.conclusions[0]
    assert first.startswith("GPU vs the fastest CPU configuration")
    # gce-2017 has only an on-demand K80 and preemptible CPUs: the sentence says so
    assert "(prices of different tiers: gpu@16 on-demand, compiled@16 preemptible)" in first
    cheapest = next(c for c in mlp.conclusions if c.startswith("Cheapest:"))
    assert "cheaper than gpu@16 (" in cheapest and "gpu@16 on-demand)" in cheapest


def test_every_configuration_sharing_cpus_is_named(tmp_path):
    from test_serving_analysis import _store

    from tfvariants.analyze.cost.pricing import parse_pricing_option
    from tfvariants.analyze.serving.analysis import analyze_serving
    from tfvariants.plan.serve import ServeCell

    rows = [
        (ServeCell(v, 2, "m", "concurrency", "http", 1, r), 20.0, 40.0)
        for v in ("pip", "compiled")
        for r in range(2)
    ]
    _store(tmp_path, rows)
    sa = analyze_serving(tmp_path, pricing=parse_pricing_option("gce-2017"))
    (m,) = sa.models
    (line,) = [c for c in m.conclusions if "share CPUs" in c]
    assert line.startswith("compiled@2 http, pip@2 http: server and load generator share CPUs 0,1")


def test_not_practical_names_noise_as_well_as_closeness():
    from types import SimpleNamespace

    from tfvariants.analyze.statistics import stats
    from tfvariants.analyze.training.conclusions import phrase

    iv = stats.Interval(0.915, 0.567, 1.37, "hodges-lehmann", 10, 0.989, 4)
    cmp = stats.Comparison(iv, "undecided", ("the interval includes both",), None)
    text = phrase(SimpleNamespace(label="a@2"), SimpleNamespace(label="a@1"), cmp)
    assert "too close to the 5% threshold for this much noise" in text


def test_serving_chart_marks_points_over_the_p99_bound(tmp_path):
    d = _serving(tmp_path / "res")  # 1 in flight p99 40 ms, 4 in flight p99 90 ms
    out = tmp_path / "r.html"
    write_report(d, out, ReportSettings(pricing=Pricing(load_catalog("gce-2017")), p99_bound_ms=50))
    html = out.read_text()
    hollow = re.findall(r'fill="#fff" stroke="[^"]+" stroke-width="1.5"><title>([^<]+)<', html)
    assert len(hollow) == 2 and all(
        "4 in flight" in t and "p99 over the bound" in t for t in hollow
    )
    assert "hollow ones did not" in html


def test_unstable_warning_names_the_farthest_repeat_and_its_interference(tmp_path):
    from resultfactory import make_result, write_results

    from tfvariants.analyze.training.analysis import analyze

    results = [make_result("local", 2, "mnist_cnn", r, steady_epoch_s=2.0) for r in range(5)]
    slow = results[3]
    slow["schedule"]["projected_full_s"] *= 1.5  # one disturbed repeat
    slow["cpu"] = {"others_share": 0.47}
    folder = write_results(tmp_path / "res", results)
    default = analyze(folder)
    # The disturbed repeat is named, left out of the verdicts, shown in the table.
    assert default.interference.disturbed[0][0] == "mnist_cnn__local__t2__r3"
    text = " ".join(w.message for w in default.warnings if w.kind == "unstable")
    assert "farthest repeat (r3)" in text
    assert "other processes used 47% of its pinned CPUs" in text


def test_fastest_and_its_ratio_come_from_one_estimator():
    """The baseline has the shorter median, but the ratio (Hodges-Lehmann) favours the
    other: the summary must not call the baseline fastest while quoting that ratio."""
    from statistics import median

    from tfvariants.analyze.statistics import stats
    from tfvariants.analyze.training.conclusions import conclude
    from tfvariants.analyze.training.groups import Group, WorkloadReport

    def group(variant: str, times: list[float], cmp: stats.Comparison) -> Group:
        m = median(times)
        iv = stats.Interval(m, m, m, "exact", len(times))
        return Group("mnist_cnn", variant, 2, time=iv, times=times, time_cmp=cmp)

    stock_times, intel_times = [1.0, 1.0, 1.0, 3.0, 3.0], [1.1, 1.1, 1.1, 0.5, 0.5]
    one = stats.Interval(1.0, 1.0, 1.0, "exact", 5)
    stock = group("tf-2.14", stock_times, stats.Comparison(one, "baseline", min_effect=0.05))
    intel = group(
        "intel-2.14", intel_times, stats.compare(intel_times, stock_times, min_effect=0.05)
    )
    assert stock.time.value < intel.time.value  # by median the baseline leads
    assert intel.time_cmp.ratio.value < 1  # ... by the ratio the other does
    wr = conclude(WorkloadReport("mnist_cnn", [stock, intel], baseline=stock), "tf-2.14@2", 2, None)
    assert wr.fastest is intel
    text = " ".join(wr.conclusions)
    assert "the baseline tf-2.14@2 had the shortest" not in text
    assert "intel-2.14@2" in wr.conclusions[0]
