"""The report's shared facts are computed once and read by every output: the roofline
once per report, and one compiled answer that the terminal and the HTML both show."""

from __future__ import annotations

import html as htmllib
import re
import shutil
from pathlib import Path

import pytest

from tfvariants.analyze.training import roofline
from tfvariants.cli import main

RUNS = Path(__file__).resolve().parent / "golden" / "runs"


def _report(
    run: Path, out: Path, capsys: pytest.CaptureFixture[str], *more: str
) -> tuple[str, str]:
    html, csv = out / "index.html", out / "cells.csv"
    capsys.readouterr()
    assert main(["report", str(run), "-o", str(html), "--csv", str(csv), *more]) == 0
    return capsys.readouterr().out, html.read_text(encoding="utf-8")


def test_the_roofline_is_computed_once_per_report(tmp_path, capsys, monkeypatch):
    run = tmp_path / "results" / "quick"
    shutil.copytree(RUNS / "quick", run)  # a run that stored peaks
    calls: list[int] = []
    shares_of = roofline.shares_of

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return shares_of(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(roofline, "shares_of", counted)
    _, html = _report(run, tmp_path / "out", capsys)
    assert "How close to the hardware" in html  # the section, the CSV: one computation
    assert len(calls) == 1


def _html_answer(html: str) -> list[str]:
    box = html.split("<h2>Compiled vs stock on this CPU</h2>", 1)[1].split("</div>", 1)[0]
    texts = re.findall(r"<(?:strong|li|p class=\"small\")>\s*(.*?)\s*</", box, re.S)
    return [htmllib.unescape(t) for t in texts]


def test_the_console_shows_the_compiled_answer_of_the_html(tmp_path, capsys):
    # Beside another run of the same comparisons (named), whose sentence the answer carries.
    for name in ("compiled-1", "compiled-2"):
        shutil.copytree(RUNS / "compiled", tmp_path / "results" / name)
    run = tmp_path / "results" / "compiled-2"
    other = str(tmp_path / "results" / "compiled-1")
    out, html = _report(run, tmp_path / "out", capsys, "--verbose", "--beside", other)
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("On "))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("  "))
    console = [line.strip() for line in lines[start:end]]
    # The HTML's box below the answer table holds the answer's lines the table does not
    # say (analyze/report/answer.py notes_below); the console's --verbose, all of them.
    from tfvariants.analyze.report.answer import notes_below
    from tfvariants.store.runfile import read_run

    assert notes_below(console, read_run(run)) == _html_answer(html)
    assert len(console) > len(_html_answer(html))
    assert any("other run" in line for line in console)  # the sentence, in both
    assert sum("other run" in line for line in lines) == 1  # and said once
