"""This run beside the runs named with --beside (analyze/report/otherruns.py): which
named runs are comparable (the option identity, the hosts) and why not, when two runs
disagree, what the report and the console say; no folder nobody named is read."""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path

import pytest
import resultfactory as rf

from tfvariants.analyze.report.build import build_report
from tfvariants.analyze.report.otherruns import MAX_BESIDE, Reading
from tfvariants.analyze.shared.settings import ReportSettings
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
    workload: str = "mnist_cnn",
    **options: object,
) -> Path:
    """A run folder: "compiled" at ``speed`` x "pip" (2 threads, mnist_cnn), decided by
    its own settings (min effect 5 %, band 5 %)."""
    options = {"data": "synthetic", "quick": quick, "seed": 0, "baseline": "pip@2", **options}
    if preset:  # as --preset compiled records it: "compiled" is the build, "pip" the stock
        options["preset"] = {"name": "compiled", "stock": "pip", "builds": ["compiled"]}
    return rf.pip_vs_compiled(
        parent / name,
        options=options,
        speed=speed,
        repeats=repeats,
        noise=noise,
        seed=zlib.crc32(name.encode()),
        workload=workload,
        host=host,
        started_at=started,
        schema_version=3,
    )


def _beside(here: Path, *others: Path):
    """The report of ``here`` set beside ``others`` (as --beside names them)."""
    return build_report(here, ReportSettings(beside=others))


def test_a_run_beside_one_that_measured_another_speed_says_they_disagree(tmp_path):
    here = _run(tmp_path, "quick-2", 1.0, started="2026-11-26T07:00:00+00:00")
    there = _run(tmp_path, "quick-1", 0.7, started="2026-11-26T06:00:00+00:00")
    report = _beside(here, there)
    other = report.other_runs
    assert other is not None and other.runs == ("quick-1",) and other.apart == ()
    (c,) = other.comparisons
    assert (c.workload, c.config, c.baseline) == ("mnist_cnn", "compiled@2", "pip@2")
    assert c.readings[0].this and c.readings[0].run == "quick-2"
    assert [r.run for r in c.disagreeing] == ["quick-1"]
    said = other.sentence()
    assert "1 comparison(s) disagree" in said and "quick-1" in said
    assert "named with --beside" in said
    assert re.search(r"1\.4\dx faster \(1\.\d+-1\.\d+x\) in quick-1", said)  # turned
    html = render_html(report)
    assert 'id="other-runs"' in html and "disagrees" in html


def test_runs_of_one_truth_agree_and_the_section_says_so(tmp_path):
    here = _run(tmp_path, "b", 0.7, started="2026-11-26T07:00:00+00:00")
    there = _run(tmp_path, "a", 0.7, started="2026-11-26T06:00:00+00:00", noise=0.03)
    other = _beside(here, there).other_runs
    assert other is not None and not other.disagreements
    assert "every interval overlaps this run's" in other.sentence()


def test_a_run_beside_no_named_run_reads_no_other_folder(tmp_path):
    """No silent scan: a run folder beside this one that nobody named is not read (here
    it would disagree), nor one whose run.json would hang a reader (a FIFO)."""
    here = _run(tmp_path, "here", 1.0, started="2026-11-26T07:00:00+00:00")
    _run(tmp_path, "sibling", 0.7, started="2026-11-26T06:00:00+00:00")
    (tmp_path / "pipe").mkdir()
    os.mkfifo(tmp_path / "pipe" / "run.json")
    report = build_report(here)
    assert report.other_runs is None and 'id="other-runs"' not in render_html(report)


@pytest.mark.parametrize(
    ("kw", "reason"),
    [
        ({"host": "another-host"}, "ran on host(s) another-host, this run on h1"),
        ({"quick": False}, "--quick false there, true here"),
        ({"seed": 7}, "--seed 7 there, 0 here"),
        ({"samples": 4000, "data": "real"}, "--samples 4000 there, unset here, --data real"),
    ],
    ids=["another host", "another scale", "another seed", "two options"],
)
def test_a_named_run_that_is_not_comparable_is_listed_with_the_option_that_differs(
    tmp_path, kw, reason
):
    here = _run(tmp_path, "b", 1.0, started="2026-11-26T07:00:00+00:00")
    there = _run(tmp_path, "a", 0.7, started="2026-11-26T06:00:00+00:00", **kw)
    report = _beside(here, there)
    other = report.other_runs
    assert other is not None and other.comparisons == () and other.runs == ()
    (apart,) = other.apart
    assert apart.run == "a" and reason in apart.reason, apart
    said = other.sentence()
    assert (
        said.startswith("None of the 1 run(s) named with --beside is comparable") and reason in said
    )
    html = render_html(report)
    assert 'id="other-runs"' in html and "Not comparable with this run" in html


def test_comparable_and_not_comparable_runs_side_by_side(tmp_path):
    """Comparable runs newest first, whatever the order named; the others after the
    sentence with their reasons; this run itself and a run named twice read once."""
    here = _run(tmp_path, "z", 1.0, started="2026-11-26T09:00:00+00:00")
    old = _run(tmp_path, "old", 1.0, started="2026-11-26T05:00:00+00:00")
    new = _run(tmp_path, "new", 1.0, started="2026-11-26T08:00:00+00:00")
    seed = _run(tmp_path, "seed", 1.0, started="2026-11-26T08:30:00+00:00", seed=3)
    other = _beside(here, old, seed, here, new, tmp_path / "old").other_runs
    assert other is not None and other.runs == ("new", "old")
    assert [r.run for r in other.comparisons[0].readings] == ["z", "new", "old"]
    assert [(a.run, a.reason) for a in other.apart] == [("seed", "--seed 3 there, 0 here")]
    assert other.sentence().endswith("Not comparable: seed (--seed 3 there, 0 here).")


def test_a_named_run_with_no_comparison_in_common_says_so(tmp_path):
    here = _run(tmp_path, "b", 1.0, started="2026-11-26T07:00:00+00:00")
    there = _run(tmp_path, "a", 1.0, started="2026-11-26T06:00:00+00:00", workload="mnist_mlp")
    other = _beside(here, there).other_runs
    assert other is not None and [a.reason for a in other.apart] == [
        "no comparison in common with this run"
    ]


def test_a_named_folder_gone_bad_after_the_check_is_said_in_the_section(tmp_path):
    """The command refuses a bad folder before it starts; one that goes bad during a
    long compare is said in the section, not a traceback that loses the report (one
    with no cell left: said too)."""
    here = _run(tmp_path, "b", 1.0, started="2026-11-26T07:00:00+00:00")
    there = _run(tmp_path, "a", 0.7, started="2026-11-26T06:00:00+00:00")
    (there / "run.json").unlink()
    os.mkfifo(there / "run.json")
    other = _beside(here, there).other_runs
    assert other is not None
    (apart,) = other.apart
    assert apart.reason.startswith("cannot be read") and "FIFO" in apart.reason
    empty = _run(tmp_path, "c", 0.7, started="2026-11-26T05:00:00+00:00")
    for cell in (empty / "cells").iterdir():
        cell.unlink()
    other = _beside(here, empty).other_runs
    assert other is not None
    (apart,) = other.apart
    assert apart.reason.startswith("cannot be analysed") and "no result files" in apart.reason


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: None, "no such run folder"),
        (lambda p: p.mkdir(), "not a tfvariants run folder"),
        (lambda p: p.write_text("x"), "not a folder"),
        (lambda p: (p.mkdir(), os.mkfifo(p / "run.json")), "a FIFO, not a regular file"),
        (lambda p: (p.mkdir(), (p / "run.json").symlink_to("/dev/zero")), "not a regular file"),
        (lambda p: (p.mkdir(), (p / "run.json").write_text("[" * 100_000)), "nested too deeply"),
        (
            lambda p: (p.mkdir(), (p / "run.json").write_text('{"kind": "tfvariants.serve"}')),
            "not a tfvariants run definition",
        ),
    ],
    ids=["missing", "not a run", "a file", "fifo", "dev-zero", "nested", "another kind"],
)
def test_report_refuses_a_bad_named_folder_in_one_line_writing_nothing(
    tmp_path, capsys, make, fragment
):
    here = _run(tmp_path, "b", 1.0, started="2026-11-26T07:00:00+00:00")
    bad = tmp_path / "bad"
    make(bad)
    out = tmp_path / "out" / "r.html"
    capsys.readouterr()
    assert main(["report", str(here), "-o", str(out), "--beside", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--beside {bad}" in err[0] and fragment in err[0], err
    assert not out.exists() and not out.parent.exists()


def test_report_says_when_only_the_run_itself_was_named(tmp_path, capsys):
    here = _run(tmp_path, "b", 1.0, started="2026-11-26T07:00:00+00:00")
    out = str(tmp_path / "r.html")
    assert main(["report", str(here), "-o", out, "--beside", str(here)]) == 0
    assert "warning: --beside: no run set beside this one" in capsys.readouterr().err


def test_report_refuses_more_named_folders_than_it_reads(tmp_path, capsys):
    here = _run(tmp_path, "b", 1.0, started="2026-11-26T07:00:00+00:00")
    names = [str(here)] * (MAX_BESIDE + 1)
    assert main(["report", str(here), "-o", str(tmp_path / "r.html"), "--beside", *names]) == 2
    assert f"at most {MAX_BESIDE}" in capsys.readouterr().err


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
    there = _run(tmp_path, "a", 0.7, started="2026-11-26T06:00:00+00:00")
    out_html = str(tmp_path / "out" / "r.html")
    assert main(["report", str(here), "-o", out_html, "--verbose", "--beside", str(there)]) == 0
    out = capsys.readouterr().out
    assert "Beside 1 other run(s)" in out and "disagree" in out


def test_a_compiled_preset_answer_box_carries_the_other_runs_sentence(tmp_path):
    """The headline question's answer is one run's; beside other runs it says so there,
    before the study's note (which stays last)."""
    here = _run(tmp_path, "b", 1.0, started="2026-11-26T07:00:00+00:00", preset=True)
    there = _run(tmp_path, "a", 0.7, started="2026-11-26T06:00:00+00:00", preset=True)
    report = _beside(here, there)
    (box,) = [s for s in report.sections if s.template == "compiled.html"]
    assert report.other_runs is not None
    assert box.lines[-2] == report.other_runs.sentence()
    assert "2017 study" in box.lines[-1]
    (box,) = [s for s in build_report(here).sections if s.template == "compiled.html"]
    assert not any(line.startswith("Beside") for line in box.lines)


def test_compare_sets_its_run_beside_the_named_runs_and_refuses_a_bad_one_first(
    tmp_path, monkeypatch, capsys
):
    """compare --beside: checked before any cell runs; its end-of-run report (and the
    --verbose console) sets the new run beside the named one."""
    from test_runfolder import fake_run_cell

    from tfvariants.execute import runner

    monkeypatch.chdir(tmp_path)
    (tmp_path / "v.toml").write_text('[variants.a]\nbase = "local"\n[variants.b]\nbase = "local"\n')
    calls: list[str] = []
    monkeypatch.setattr(runner, "run_cell", fake_run_cell(calls))
    argv = ["compare", "--variants-file", "v.toml", "--variants", "a,b", "--threads", "1",
            "--workloads", "mnist_mlp", "--repeats", "3", "--no-probe", "--pricing", "none",
            "--baseline", "a@1"]  # fmt: skip
    assert main([*argv, "--out", "R2", "--beside", "nowhere"]) == 2
    assert "--beside nowhere: nowhere: no such run folder" in capsys.readouterr().err
    assert calls == [] and not (tmp_path / "R2").exists()
    assert main([*argv, "--out", "R1"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main([*argv, "--out", "R2", "--beside", "R1", "--verbose"]) == 0
    err = capsys.readouterr().err
    assert "Beside 1 other run(s) named with --beside" in err, err
    html = (tmp_path / "reports" / "R2" / "index.html").read_text()
    assert 'id="other-runs"' in html and "R1" in html


def test_stored_runs_of_another_task_or_scale_are_named_with_the_reason(tmp_path):
    """The golden run folders (real stored runs): beside the quick run, the serving run
    is another task, the full-scale runs differ in the options named, and the compiled
    preset run shares no comparison with it."""
    import shutil

    golden = Path(__file__).resolve().parent / "golden" / "runs"
    for name in ("quick", "serve", "compiled", "multi"):
        shutil.copytree(golden / name, tmp_path / name)
    named = tuple(tmp_path / n for n in ("serve", "compiled", "multi"))
    other = _beside(tmp_path / "quick", *named).other_runs
    assert other is not None and other.runs == ()
    reasons = {a.run: a.reason for a in other.apart}
    assert reasons["serve"] == "another task: a serving run"
    assert reasons["compiled"] == "no comparison in common with this run"
    assert "--quick false there, true here" in reasons["multi"]
    assert "--min-steady-s 10.0 there, 6.0 here" in reasons["multi"]
