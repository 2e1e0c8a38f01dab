"""This run beside the other runs of the same comparisons (analyze/report/otherruns.py):
which folders count, when two runs disagree, what the report and the console say."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import pytest
import resultfactory as rf

from tfvariants.analyze.report.build import build_report
from tfvariants.analyze.report.otherruns import MAX_READ, Reading
from tfvariants.analyze.statistics import stats
from tfvariants.cli import main
from tfvariants.render.html import render_html


def _run(
    parent: Path,
    name: str,
    speed: float,
    *,
    started: str,
    host: str = "h1",
    quick: bool = True,
    repeats: int = 8,
    noise: float = 0.02,
    preset: bool = False,
) -> Path:
    """A run folder: "compiled" at ``speed`` x "pip" (2 threads, mnist_cnn), decided by
    its own settings (min effect 5 %, band 5 %)."""
    options = {"data": "synthetic", "quick": quick, "seed": 0, "baseline": "pip@2"}
    if preset:  # as --preset compiled records it: "compiled" is the build, "pip" the stock
        options["preset"] = {"name": "compiled", "stock": "pip", "builds": ["compiled"]}
    return rf.pip_vs_compiled(
        parent / name,
        options=options,
        speed=speed,
        repeats=repeats,
        noise=noise,
        seed=zlib.crc32(name.encode()),
        host=host,
        started_at=started,
    )


def test_a_run_beside_one_that_measured_another_speed_says_they_disagree(tmp_path):
    here = _run(tmp_path, "quick-2", 1.0, started="2026-11-26T07:00:00+00:00")
    _run(tmp_path, "quick-1", 0.7, started="2026-11-26T06:00:00+00:00")
    report = build_report(here)
    other = report.other_runs
    assert other is not None and other.runs == ("quick-1",)
    (c,) = other.comparisons
    assert (c.workload, c.config, c.baseline) == ("mnist_cnn", "compiled@2", "pip@2")
    assert c.readings[0].this and c.readings[0].run == "quick-2"
    assert [r.run for r in c.disagreeing] == ["quick-1"]
    said = other.sentence()
    assert "1 comparison(s) disagree" in said and "quick-1" in said
    assert re.search(r"1\.4\dx faster \(1\.\d+-1\.\d+x\) in quick-1", said)  # turned
    html = render_html(report)
    assert 'id="other-runs"' in html and "disagrees" in html


def test_runs_of_one_truth_agree_and_the_section_says_so(tmp_path):
    here = _run(tmp_path, "b", 0.7, started="2026-11-26T07:00:00+00:00")
    _run(tmp_path, "a", 0.7, started="2026-11-26T06:00:00+00:00", noise=0.03)
    other = build_report(here).other_runs
    assert other is not None and not other.disagreements
    assert "every interval overlaps this run's" in other.sentence()


@pytest.mark.parametrize(
    "kw",
    [{"host": "another-host"}, {"quick": False}],
    ids=["another host", "another scale"],
)
def test_runs_on_another_host_or_scale_are_not_the_same_comparison(tmp_path, kw):
    here = _run(tmp_path, "b", 1.0, started="2026-11-26T07:00:00+00:00")
    _run(tmp_path, "a", 0.7, started="2026-11-26T06:00:00+00:00", **kw)
    assert build_report(here).other_runs is None


def test_folders_that_are_not_runs_are_passed_over_and_newest_come_first(tmp_path):
    here = _run(tmp_path, "z", 1.0, started="2026-11-26T09:00:00+00:00")
    _run(tmp_path, "old", 1.0, started="2026-11-26T05:00:00+00:00")
    _run(tmp_path, "new", 1.0, started="2026-11-26T08:00:00+00:00")
    (tmp_path / "notes").mkdir()  # no run.json
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text("{not json", encoding="utf-8")
    serve = tmp_path / "serve"
    serve.mkdir()
    (serve / "run.json").write_text(json.dumps({"kind": "tfvariants.serve"}), encoding="utf-8")
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    other = build_report(here).other_runs
    assert other is not None and other.runs == ("new", "old")


def test_at_most_max_read_other_runs_are_read(tmp_path):
    here = _run(tmp_path, "here", 1.0, started="2026-11-26T23:00:00+00:00", repeats=5)
    for i in range(MAX_READ + 2):
        _run(tmp_path, f"r{i:02d}", 1.0, started=f"2026-11-26T{i:02d}:00:00+00:00", repeats=5)
    other = build_report(here).other_runs
    assert other is not None and len(other.runs) == MAX_READ
    assert other.runs[0] == f"r{MAX_READ + 1:02d}"  # the newest


def test_a_run_alone_has_no_section(tmp_path):
    here = _run(tmp_path, "only", 1.0, started="2026-11-26T07:00:00+00:00")
    report = build_report(here)
    assert report.other_runs is None and 'id="other-runs"' not in render_html(report)


def _reading(verdict: str, value: float, lo: float, hi: float) -> Reading:
    iv = stats.Interval(value, lo, hi, "paired", 10, 0.98)
    return Reading("r", "2026-11-26T07:00:00+00:00", verdict, iv)


def test_a_reading_says_faster_with_its_interval_turned_and_the_rest_as_time_ratios():
    faster = _reading("different", 0.5, 0.4, 0.625)
    assert faster.word == "2.00x faster" and faster.span == "(1.60-2.50x)"
    assert faster.raw == "0.500 (0.400-0.625x)"
    slower = _reading("different", 1.05, 1.002, 1.19)
    assert slower.word == "1.05x slower" and slower.span == "(1.002-1.19x)"
    same = _reading("equivalent", 0.999, 0.921, 1.08)
    assert same.word == "equivalent" and same.span == "0.999 (0.921-1.08x)"
    # overlap is symmetric; touching ends overlap
    assert not slower.overlaps(faster) and not faster.overlaps(slower)
    assert same.overlaps(slower) and _reading("undecided", 1.1, 1.08, 1.2).overlaps(slower)


def test_report_prints_the_sentence(tmp_path, capsys):
    here = _run(tmp_path, "b", 1.0, started="2026-11-26T07:00:00+00:00")
    _run(tmp_path, "a", 0.7, started="2026-11-26T06:00:00+00:00")
    assert main(["report", str(here), "-o", str(tmp_path / "out" / "r.html"), "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "Beside 1 other run(s)" in out and "disagree" in out


def test_a_compiled_preset_answer_box_carries_the_other_runs_sentence(tmp_path):
    """The headline question's answer is one run's; beside other runs it says so there,
    before the study's note (which stays last)."""
    here = _run(tmp_path, "b", 1.0, started="2026-11-26T07:00:00+00:00", preset=True)
    _run(tmp_path, "a", 0.7, started="2026-11-26T06:00:00+00:00", preset=True)
    report = build_report(here)
    (box,) = [s for s in report.sections if s.template == "compiled.html"]
    assert report.other_runs is not None
    assert box.lines[-2] == report.other_runs.sentence()
    assert "2017 study" in box.lines[-1]
    alone = tmp_path / "alone"
    alone.mkdir()
    only = _run(alone, "c", 1.0, started="2026-11-26T07:00:00+00:00", preset=True)
    (box,) = [s for s in build_report(only).sections if s.template == "compiled.html"]
    assert not any(line.startswith("Beside") for line in box.lines)
