"""The serving analysis on hand-made results: operating point under the p99 bound,
dollars per million predictions, the cheapest configuration, the baseline (GPU first),
and the serving matrix's resume identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfvariants.analyze.cost.pricing import parse_pricing_option
from tfvariants.analyze.serving.analysis import analyze_serving
from tfvariants.analyze.serving.part import ServingPart
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.options.serving import ServingOptions
from tfvariants.plan.serve import ServeCell, ServeSpec, plan_serve_cells
from tfvariants.render.labels import config_words
from tfvariants.store.result import write_json_atomic
from tfvariants.store.runfile import new_run, write_run


def _result(cell: ServeCell, thr: float, p99: float, status: str = "ok") -> dict:
    return {
        "schema_version": 1,
        "kind": "tfvariants.serve_cell",
        "cell": cell.to_dict(),
        "status": status,
        "reason": None if status == "ok" else "boom",
        "metrics": {
            "throughput_per_s": thr,
            "p50_ms": p99 / 2,
            "p90_ms": p99 * 0.8,
            "p95_ms": p99 * 0.9,
            "p99_ms": p99,
            "validity": None,
        },
        "placement": {"shared": cell.path == "http", "server_cpus": [0, 1]},
    }


def _store(out: Path, rows: list[tuple[ServeCell, float, float]]) -> None:
    for cell, thr, p99 in rows:
        write_json_atomic(out / "cells" / f"{cell.cell_id}.json", _result(cell, thr, p99))


def test_cost_per_million_and_cheapest_under_bound(tmp_path):
    rows = []
    for r, jitter in enumerate((0.9, 1.0, 1.1)):
        # 8 threads: 4 in flight is fastest but breaks the bound; 1 in flight meets it
        rows += [
            (ServeCell("pip", 8, "m", "concurrency", "inprocess", 1, r), 100 * jitter, 50),
            (ServeCell("pip", 8, "m", "concurrency", "inprocess", 4, r), 300 * jitter, 180),
            # 16 threads: twice the price, 2.5x the throughput within the bound
            (ServeCell("pip", 16, "m", "concurrency", "inprocess", 1, r), 250 * jitter, 40),
            # over HTTP nothing meets the bound
            (ServeCell("pip", 8, "m", "concurrency", "http", 1, r), 90 * jitter, 150),
        ]
    _store(tmp_path, rows)
    sa = analyze_serving(
        tmp_path, ReportSettings(parse_pricing_option("gce-2017"), p99_bound_ms=100)
    )
    (rep,) = sa.models
    by = {c.label: c for c in rep.configs}
    t8, t16, http = by["pip@8 inprocess"], by["pip@16 inprocess"], by["pip@8 http"]
    assert t8.throughput_under_bound.value == pytest.approx(100)  # not the 300 at p99 180
    assert "1 in flight" in t8.operating
    assert t8.cost_per_million.value == pytest.approx(0.0636 / (100 * 3600) * 1e6)
    # cost interval ends are the throughput interval's, swapped
    thr = t8.throughput_under_bound
    assert thr.n == 3 and thr.lo < 100 < thr.hi
    assert t8.cost_per_million.lo == pytest.approx(0.0636 / (thr.hi * 3600) * 1e6)
    assert t8.cost_per_million.hi == pytest.approx(0.0636 / (thr.lo * 3600) * 1e6)
    assert t16.cost_per_million.value == pytest.approx(0.127 / (250 * 3600) * 1e6)
    assert http.throughput_under_bound is None and http.cost_per_million is None
    assert rep.cheapest is t16
    assert rep.baseline is t16  # first variant at its most threads, in-process first
    assert t8.cost_ratio.value == pytest.approx(
        t8.cost_per_million.value / t16.cost_per_million.value
    )
    assert "pip@16 inprocess" in rep.conclusions[0] and "within 100 ms" in rep.conclusions[0]
    assert any("share CPUs 0,1" in c for c in rep.conclusions)
    curve = t8.curve()
    assert [r.concurrency for r in curve] == [1, 4] and curve[1].throughput.n == 3


def test_gpu_is_the_baseline_and_failed_cells_do_not_count(tmp_path):
    _store(
        tmp_path,
        [
            (ServeCell("pip", 8, "m", "concurrency", "inprocess", 1, 0), 100, 20),
            (ServeCell("gpu", 1, "m", "concurrency", "inprocess", 1, 0), 900, 10),
        ],
    )
    bad = ServeCell("pip", 8, "m", "concurrency", "inprocess", 2, 0)
    write_json_atomic(tmp_path / "cells" / f"{bad.cell_id}.json", _result(bad, 1e6, 1, "failed"))
    spec = ServeSpec(
        ("pip", "gpu"),
        (1, 8),
        ("m",),
        ("concurrency",),
        (1, 2),
        ("inprocess",),
        1,
        variant_info={
            "gpu": {"kind": "image", "device": "gpu"},
            "pip": {"kind": "image", "device": "cpu"},
        },
    )
    write_run(tmp_path, new_run(spec, []))
    sa = analyze_serving(
        tmp_path, ReportSettings(parse_pricing_option("gce-2017"), p99_bound_ms=100)
    )
    (rep,) = sa.models
    assert rep.baseline.variant == "gpu" and rep.baseline.device == "gpu"
    pip = next(c for c in rep.configs if c.variant == "pip")
    assert pip.throughput_under_bound.value == 100  # the failed cell's 1e6/s is not used
    assert sa.counts == {"ok": 2, "failed": 1}


def test_no_serving_cells_gives_none(tmp_path):
    (tmp_path / "cells").mkdir()
    assert analyze_serving(tmp_path) is None


def test_serve_plan_interleaves_and_ids_are_unique():
    spec = ServeSpec(
        ("a", "b"),
        (1, 2),
        ("m",),
        ("single_stream", "concurrency"),
        (1, 4),
        ("inprocess", "http"),
        2,
    )
    cells = plan_serve_cells(spec)
    assert len(cells) == 2 * 2 * (1 + 2) * 2 * 2
    assert len({c.cell_id for c in cells}) == len(cells)
    assert cells[0].repeat == 0 and cells[-1].repeat == 1
    assert {c.concurrency for c in cells if c.scenario == "single_stream"} == {1}
    assert spec.identity()["workloads"][0] == "m/single_stream/inprocess"


def _serving_run(tmp_path: Path) -> Path:
    rows = []
    for r in range(2):
        for path in ("inprocess", "http"):
            for c, thr, p99 in ((1, 50, 30), (4, 80, 120)):
                rows.append((ServeCell("pip", 2, "m", "concurrency", path, c, r), thr, p99))
    _store(tmp_path, rows)
    bad = ServeCell("pip", 2, "m", "concurrency", "http", 8, 0)
    res = _result(bad, 1.0, 1.0, "failed")
    res["reason"] = "<script>alert(1)</script>"
    write_json_atomic(tmp_path / "cells" / f"{bad.cell_id}.json", res)
    return tmp_path


def test_serving_only_report_renders_escaped(tmp_path):
    from tfvariants.commands.report import write_report

    d = _serving_run(tmp_path / "res")
    html_path = tmp_path / "rep" / "index.html"
    settings = ReportSettings(pricing=parse_pricing_option("gce-2017"))
    write_report(d, html_path, settings, csv_path=tmp_path / "s.csv")
    html = html_path.read_text()
    assert "<h1>Which configuration serves m cheapest within p99 100 ms?</h1>" in html
    assert "m: throughput vs requests in flight" in html and html.count("<svg") == 1
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "cheapest within bound" in html and "shared CPUs" in html
    assert len((tmp_path / "s.csv").read_text().splitlines()) == 1 + 9


@pytest.mark.browser
def test_serving_report_in_headless_chromium(tmp_path):
    import subprocess

    from test_report_browser import CHROMIUM, FLAGS, require_chromium

    from tfvariants.commands.report import write_report

    require_chromium()
    d = _serving_run(tmp_path / "res")
    html = tmp_path / "index.html"
    write_report(d, html, ReportSettings(pricing=parse_pricing_option("gce-2017")))
    common = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*common, "--dump-dom", html.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.stdout.count("<svg") == 1 and "<script" not in dom.stdout
    assert "Uncaught" not in dom.stderr


def _runs(cfgs: dict[tuple[str, int, str], list[tuple[float, float]]]) -> list:
    """(variant, threads, device) -> per repeat (throughput, p99) at 1 in flight."""
    rows = []
    for (v, t, _), reps in cfgs.items():
        for r, (thr, p99) in enumerate(reps):
            rows.append((ServeCell(v, t, "m", "concurrency", "inprocess", 1, r), thr, p99))
    return rows


def _with_devices(tmp_path: Path, cfgs: dict) -> None:
    _store(tmp_path, _runs(cfgs))
    variants = tuple(dict.fromkeys(k[0] for k in cfgs))
    info = {v: {"kind": "local", "device": d} for v, _, d in cfgs}
    spec = ServeSpec(
        variants,
        tuple(sorted({k[1] for k in cfgs})),
        ("m",),
        ("concurrency",),
        (1,),
        ("inprocess",),
        5,
        variant_info=info,
    )
    write_run(tmp_path, new_run(spec, []))


def test_cheapest_is_claimed_only_when_decided_against_the_next(tmp_path):
    from tfvariants.analyze.serving.configs import watched

    # 2 threads serve 1.8x more per second at less than 1.8x the price: decided cheaper
    steady = [1.0, 1.02, 0.98, 1.01, 0.99]
    _with_devices(
        tmp_path / "a",
        {
            ("local", 1, "cpu"): [(50 * j, 40) for j in steady],
            ("local", 2, "cpu"): [(90 * j, 30) for j in steady],
        },
    )
    sa = analyze_serving(tmp_path / "a", pricing=parse_pricing_option("gce-2017"))
    (rep,) = sa.models
    assert rep.cheapest.label == "local@2 inprocess" and rep.cheapest_decided
    assert rep.cheapest_cmp.verdict == "different" and rep.cheapest_cmp.ratio.has_interval
    assert rep.conclusions[0].startswith("m: local@2 inprocess serves it cheapest with p99 within")
    assert "gce-2017 prices" in rep.conclusions[0] and "decided" in rep.conclusions[0]
    t1 = rep.configs[0]
    assert t1.throughput_cmp.verdict == "different" and t1.throughput_cmp.ratio.value > 1.7
    assert t1.rows[0].p99_cmp.verdict == "different"  # 40 ms vs 30 ms
    assert any(c.startswith("Threads (p99 within") and "decided" in c for c in rep.conclusions)
    assert [(a.label, b.label) for a, b, _ in watched(rep)] == [
        ("local@1 inprocess", "local@2 inprocess"),
        ("local@2 inprocess", "local@1 inprocess"),
    ]

    # the same medians, but two repeats each and a lot of noise: not claimed
    _with_devices(
        tmp_path / "b",
        {("local", 1, "cpu"): [(50, 40), (100, 40)], ("local", 2, "cpu"): [(90, 30), (45, 30)]},
    )
    (rep,) = analyze_serving(tmp_path / "b", pricing=parse_pricing_option("gce-2017")).models
    assert not rep.cheapest_decided and rep.cheapest_cmp.verdict == "undecided"
    assert "not decided against the next cheapest" in rep.conclusions[0]

    # the same instance (gce-2017 bills both on its smallest) and 1 % apart: equivalent
    _with_devices(
        tmp_path / "c",
        {
            ("local", 1, "cpu"): [(50 * j, 40) for j in steady],
            ("local", 2, "cpu"): [(50.5 * j, 30) for j in steady],
        },
    )
    (rep,) = analyze_serving(tmp_path / "c", pricing=parse_pricing_option("gce-2017")).models
    assert rep.configs[0].instance == rep.configs[1].instance
    assert rep.cheapest_cmp.verdict == "equivalent" and not rep.cheapest_decided
    assert "serve it about equally cheaply" in rep.conclusions[0]


def test_gpu_sentence_comes_right_after_the_cheapest(tmp_path):
    steady = [1.0, 1.02, 0.98, 1.01, 0.99]
    _with_devices(
        tmp_path,
        {
            ("local", 2, "cpu"): [(50 * j, 40) for j in steady],
            ("gpu", 1, "gpu"): [(900 * j, 8) for j in steady],
        },
    )
    (rep,) = analyze_serving(tmp_path, pricing=parse_pricing_option("gce-2017")).models
    assert rep.baseline.variant == "gpu"
    assert rep.conclusions[1].startswith("GPU vs the fastest CPU configuration (local@2 inprocess)")
    assert "18.0x faster" in rep.conclusions[1] and "decided" in rep.conclusions[1]


def _spec(**kw) -> ServeSpec:
    options = ServingOptions(
        min_effect=0.05,
        confidence=0.95,
        p99_bound_ms=100.0,
        budget_s=600.0,
        max_repeats=20,
    )
    base = dict(
        variants=("local",),
        threads=(1, 2),
        models=("m",),
        scenarios=("concurrency",),
        concurrency=(1,),
        paths=("inprocess",),
        repeats=5,
        options=options,
        variant_info={"local": {"kind": "local", "device": "cpu"}},
    )
    return ServeSpec(**{**base, **kw})


def test_adaptive_rounds_run_the_undecided_configurations_only(tmp_path):
    from tfvariants.analyze.statistics import adaptive
    from tfvariants.rounds.serving import NextServeRound
    from tfvariants.store.rundir import load_run_dir

    spec = _spec()
    rule = adaptive.stopping_rule(5, 20)
    nxt = NextServeRound(spec, rule, pricing=parse_pricing_option("gce-2017"), baseline=None)
    # overlapping noisy repeats: undecided at the look after 5, both configurations rerun
    noisy = [0.7, 1.3, 1.0, 0.8, 1.2]
    _with_devices(
        tmp_path / "a",
        {
            ("local", 1, "cpu"): [(50 * j, 40) for j in noisy],
            ("local", 2, "cpu"): [(52 * j, 40) for j in noisy[::-1]],
        },
    )
    cells, why = nxt(load_run_dir(tmp_path / "a").parsed)
    assert "undecided at the look after 5" in why
    assert sorted((c.threads, c.repeat) for c in cells) == [(1, 5), (2, 5)]
    # an interrupted round is completed first: only the missing cell
    _store(tmp_path / "a", [(ServeCell("local", 1, "m", "concurrency", "inprocess", 1, 5), 50, 40)])
    cells, _ = nxt(load_run_dir(tmp_path / "a").parsed)
    assert [(c.threads, c.repeat) for c in cells] == [(2, 5)]
    # clearly apart: decided, no more rounds
    steady = [1.0, 1.02, 0.98, 1.01, 0.99]
    _with_devices(
        tmp_path / "b",
        {
            ("local", 1, "cpu"): [(50 * j, 40) for j in steady],
            ("local", 2, "cpu"): [(90 * j, 30) for j in steady],
        },
    )
    cells, why = nxt(load_run_dir(tmp_path / "b").parsed)
    assert cells == [] and "decided by the look after 5" in why
    # the report, with the run's 4 looks, decides the same way
    from tfvariants.store.rundir import update_run

    update_run(tmp_path / "b", adaptive=rule.to_json())
    sa = analyze_serving(tmp_path / "b", pricing=parse_pricing_option("gce-2017"))
    assert sa.settings.looks == (5, 7, 10, 15, 20) and sa.models[0].cheapest_decided


def test_batching_is_a_swept_axis_with_its_charts(tmp_path):
    from tfvariants.render.linechart import batching_charts

    spec = _spec(batching=((1, 2.0), (8, 2.0), (8, 5.0)), repeats=1)
    cells = plan_serve_cells(spec)
    assert len(cells) == 2 * 3 and len({c.cell_id for c in cells}) == len(cells)
    assert {c.batching for c in cells} == {"", "b8-w2", "b8-w5"}
    assert "serve__m__concurrency-c1-b8-w5__inprocess__local__t1__r0" in {c.cell_id for c in cells}
    rows = []
    for r in range(2):
        for c in cells:
            thr = 50 * (c.max_batch_size**0.5)
            rows.append(
                (
                    ServeCell(
                        c.variant,
                        c.threads,
                        c.model,
                        c.scenario,
                        c.path,
                        c.concurrency,
                        r,
                        c.max_batch_size,
                        c.batch_timeout_ms,
                    ),
                    thr,
                    30 + c.batch_timeout_ms * c.max_batch_size,
                )
            )
    _store(tmp_path, rows)
    sa = analyze_serving(tmp_path, pricing=parse_pricing_option("gce-2017"))
    (rep,) = sa.models
    assert rep.batch_sizes() == [1, 8]
    assert {c.label for c in rep.configs} >= {"local@1 inprocess", "local@1 inprocess batch 8/5 ms"}
    svg = str(batching_charts(rep, 100))
    assert svg.count("<svg") == 2 and "throughput vs maximum batch size" in svg
    assert "local@2 inprocess, 1 in flight, wait 5 ms" in svg
    _with_devices(tmp_path / "plain", {("local", 1, "cpu"): [(50, 40)]})
    assert str(batching_charts(analyze_serving(tmp_path / "plain").models[0])) == ""


def test_without_a_point_within_the_bound_threads_are_compared_at_saturation(tmp_path):
    from tfvariants.analyze.serving.configs import watched

    steady = [1.0, 1.02, 0.98, 1.01, 0.99]
    rows = []
    for r, j in enumerate(steady):
        for t, thr in ((1, 10.0), (2, 30.0)):
            rows += [
                (ServeCell("local", t, "m", "concurrency", "http", 1, r), thr * j, 150),
                (ServeCell("local", t, "m", "concurrency", "http", 4, r), thr * 1.5 * j, 400),
            ]
    _store(tmp_path, rows)
    (rep,) = analyze_serving(tmp_path, pricing=parse_pricing_option("gce-2017")).models
    assert rep.cheapest is None and "no configuration kept p99 within 100 ms" in rep.conclusions[0]
    (line,) = [c for c in rep.conclusions if c.startswith("Threads")]
    assert line.startswith("Threads (at 4 in flight; local@2 http and local@1 http kept no point")
    assert "3.00x faster" in line and "decided" in line
    ((a, b, cmp),) = watched(rep)  # the adaptive rounds watch the same comparison
    assert (a.threads, b.threads) == (1, 2) and cmp.verdict == "different"


def test_serving_costs_are_in_the_catalogs_currency(tmp_path):
    import re

    from tfvariants.analyze.cost.catalog import CATALOG_DIR
    from tfvariants.commands.report import write_report

    d = _serving_run(tmp_path / "res")
    eur = tmp_path / "gce-eur.toml"
    text = (CATALOG_DIR / "gce-2017.toml").read_text()
    eur.write_text(text.replace('currency = "USD"', 'currency = "EUR"'))
    html_path = tmp_path / "index.html"
    report = write_report(d, html_path, ReportSettings(pricing=parse_pricing_option(str(eur))))
    part = report.part(ServingPart)
    assert part is not None
    sa = part.analysis
    html = html_path.read_text()
    assert "EUR per million predictions" in html and not re.search(r"\$\s?\d", html)
    assert any(re.search(r"[\d.]+ EUR per million", c) for m in sa.models for c in m.conclusions)


def _all_disturbed(tmp_path):
    steady = [1.0, 1.02, 0.98, 1.01, 0.99]
    _with_devices(
        tmp_path,
        {
            ("local", 1, "cpu"): [(50 * j, 40) for j in steady],
            ("local", 2, "cpu"): [(90 * j, 30) for j in steady],
        },
    )
    for path in (tmp_path / "cells").glob("*.json"):  # a busy machine: others took 60 %
        r = json.loads(path.read_text())
        r["cpu"] = {"others_share": 0.6, "steal_share": 0.0}
        write_json_atomic(path, r)


def test_disturbed_cells_stay_in_the_tables_and_leave_the_verdicts_when_excluded(tmp_path):
    from tfvariants.analyze.shared.settings import ReportSettings

    _all_disturbed(tmp_path)
    report = ReportSettings(pricing=parse_pricing_option("gce-2017"), disturbed="exclude")
    (rep,) = analyze_serving(tmp_path, report).models
    assert rep.configs[0].throughput_under_bound.n == 5  # the tables keep them
    assert rep.cheapest_cmp is None and not rep.cheapest_decided  # no verdict from them
    assert not rep.under_load
    assert any(
        c.startswith("10 of 10 successful cells were disturbed (other processes used 60% of")
        and c.endswith("left out of every comparison, as in training.")
        for c in rep.conclusions
    )


def test_a_load_that_never_left_is_compared_under_load(tmp_path):
    """As training's "auto": when most configuration-rounds have no undisturbed repeat
    (a neighbour that stayed for the whole run), leaving them out would leave no answer
    at all; the comparisons use them and every one says it was measured under load."""
    _all_disturbed(tmp_path)
    (rep,) = analyze_serving(tmp_path, pricing=parse_pricing_option("gce-2017")).models
    assert rep.under_load and rep.cheapest_decided
    said = " ".join(rep.conclusions)
    assert "in 10 of 10 configuration-rounds every repeat was" in said
    assert "--disturbed exclude leaves them out" in said
    cheapest = next(c for c in rep.conclusions if "serves it cheapest" in c)
    assert "under load; on a quiet machine the ratio may differ" in cheapest


def test_a_few_disturbed_cells_still_leave_the_verdicts(tmp_path):
    """Under "auto", two disturbed repeats of ten are an exception: left out, no label."""
    steady = [1.0, 1.02, 0.98, 1.01, 0.99]
    _with_devices(
        tmp_path,
        {
            ("local", 1, "cpu"): [(50 * j, 40) for j in steady],
            ("local", 2, "cpu"): [(90 * j, 30) for j in steady],
        },
    )
    for path in sorted((tmp_path / "cells").glob("*.json"))[:2]:
        r = json.loads(path.read_text())
        r["cpu"] = {"others_share": 0.6, "steal_share": 0.0}
        write_json_atomic(path, r)
    (rep,) = analyze_serving(tmp_path, pricing=parse_pricing_option("gce-2017")).models
    assert not rep.under_load
    assert any(c.endswith("left out of every comparison, as in training.") for c in rep.conclusions)


def test_serving_and_training_share_one_baseline_rule(tmp_path):
    """One rule (analyze/baseline.py): with no GPU, the most threads within the host, then
    the most usable repeats, then the first variant, for training and serving alike (the
    serving rule used to take the first variant whatever its threads)."""
    import resultfactory as rf

    from tfvariants.analyze.report.build import build_report
    from tfvariants.analyze.training.part import TrainingPart

    train = [
        rf.make_result(v, t, "mnist_mlp", r, logical_cpus=8)
        for r in range(2)
        for v, t in (("compiled", 2), ("pip", 4))
    ]
    rf.write_results(tmp_path, train)
    _store(
        tmp_path,
        [
            (ServeCell(v, t, "m", "concurrency", "inprocess", 1, r), 50 * t, 20)
            for r in range(2)
            for v, t in (("compiled", 2), ("pip", 4))
        ],
    )
    report = build_report(tmp_path, ReportSettings(parse_pricing_option("gce-2017")))
    training, serving = report.part(TrainingPart), report.part(ServingPart)
    assert training is not None and serving is not None
    assert config_words(training.analysis.baseline) == "pip@4"
    assert training.analysis.workloads[0].baseline.label == "pip@4"
    (model,) = serving.analysis.models
    assert model.baseline is not None and model.baseline.label == "pip@4 inprocess"
    # --baseline VARIANT: its most threads with usable values, in both
    report = build_report(tmp_path, ReportSettings(baseline="compiled"))
    training, serving = report.part(TrainingPart), report.part(ServingPart)
    assert training is not None and serving is not None
    assert config_words(training.analysis.baseline) == "compiled@2"
    assert serving.analysis.models[0].baseline.label == "compiled@2 inprocess"


def test_the_answer_says_why_a_configuration_has_no_cost_verdict(tmp_path):
    """A configuration that kept no point within the p99 bound has no cost to compare:
    its row says so ("p99 over 100 ms"), not a bare "no verdict"."""
    from tfvariants.analyze.serving.part import ServingPart

    steady = [1.0, 1.02, 0.98, 1.01, 0.99]
    _with_devices(
        tmp_path,
        {
            ("local", 1, "cpu"): [(50 * j, 140) for j in steady],  # p99 140 ms: over
            ("local", 2, "cpu"): [(90 * j, 30) for j in steady],
        },
    )
    sa = analyze_serving(tmp_path, pricing=parse_pricing_option("gce-2017"))
    rows = {r.config: r.verdict for r in ServingPart(sa).answer("USD", None).rows}
    assert rows == {"local@1 inprocess": "p99 over 100 ms", "local@2 inprocess": "baseline"}


def test_the_answer_over_the_bound_says_so_and_shows_what_was_compared(tmp_path):
    """No configuration kept p99 within the bound: the heading says that (not "no
    verdict"), the baseline's row has no "1x" of a cost it does not have, and the one
    comparison made (throughput at the most requests in flight) is a line under the
    table, with the run's next step, not only in the collapsed sentences."""
    from tfvariants.analyze.report.answer import answer_of
    from tfvariants.analyze.serving.part import ServingPart

    steady = [1.0, 1.02, 0.98, 1.01, 0.99]
    _with_devices(
        tmp_path,
        {
            ("local", 1, "cpu"): [(50 * j, 140) for j in steady],  # both over 100 ms
            ("local", 2, "cpu"): [(90 * j, 130) for j in steady],
        },
    )
    sa = analyze_serving(tmp_path, pricing=parse_pricing_option("gce-2017"))
    part = ServingPart(sa)
    got = part.answer("USD", None)
    rows = {r.config: (r.verdict, r.ratio) for r in got.rows}
    assert rows == {
        "local@1 inprocess": ("p99 over 100 ms", ""),
        "local@2 inprocess": ("baseline", ""),
    }
    (line,) = got.beyond
    # 50 against 90 predictions a second, 5 repeats each: decided, in time per prediction
    assert line.startswith(
        "m, at 1 in flight (over the bound): local@1 inprocess was 1.80x slower than local@2"
    )
    answer = answer_of(part.frame, [part])
    assert answer is not None
    assert answer.heading == "No configuration kept p99 within 100 ms"
    assert answer.beyond == got.beyond
    # Within the bound on one side: the table's verdicts make the heading, no line
    _with_devices(
        tmp_path / "b",
        {
            ("local", 1, "cpu"): [(50 * j, 40) for j in steady],
            ("local", 2, "cpu"): [(90 * j, 30) for j in steady],
        },
    )
    part = ServingPart(analyze_serving(tmp_path / "b", pricing=parse_pricing_option("gce-2017")))
    got = part.answer("USD", None)
    assert got.heading is None and got.beyond == ()
    assert {r.config: r.ratio for r in got.rows}["local@2 inprocess"] == "1x"
